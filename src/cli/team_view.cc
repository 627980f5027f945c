#include "cli/team_view.h"

#include <algorithm>
#include <cstdio>

#include "cli/format.h"
#include "k8s/quantity.h"

namespace berth::cli {

namespace api = berth::api::v1alpha1;

std::string FormatAmounts(const api::ResourceAmounts& a) {
  std::vector<std::string> parts;
  if (a.gpus) parts.push_back(std::to_string(*a.gpus) + (*a.gpus == 1 ? " GPU" : " GPUs"));
  if (a.cpu_milli) parts.push_back(k8s::FormatMilli(*a.cpu_milli) + (*a.cpu_milli == 1000 ? " CPU" : " CPUs"));
  if (a.memory_bytes) parts.push_back(k8s::FormatBytes(*a.memory_bytes));
  if (parts.empty()) return "-";
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string FormatTeams(std::vector<api::Team> teams) {
  std::sort(teams.begin(), teams.end(), [](const api::Team& a, const api::Team& b) { return a.meta.name < b.meta.name; });
  Table table({"TEAM", "PARENT", "WEIGHT", "FLEET", "NOMINAL", "USED", "BORROWED", "LENT", "USAGE"});
  for (auto& t : teams) {
    // Issue 47 (7): the usage weighted by the fleets' costWeight beside the raw, where it differs.
    auto weighted = [](const std::optional<double>& w, double raw) {
      return w && Hours(*w) != Hours(raw) ? " (" + Hours(*w) + " weighted)" : std::string();
    };
    const std::string usage = Hours(t.status.gpu_hours) + " GPU-h" + weighted(t.status.weighted_gpu_hours, t.status.gpu_hours) +
                              ", " + Hours(t.status.cpu_hours) + " CPU-h" + weighted(t.status.weighted_cpu_hours, t.status.cpu_hours);
    const std::string parent = t.spec.parent.empty() ? "-" : t.spec.parent;
    if (t.status.fleets.empty()) {
      table.AddRow({t.meta.name, parent, std::to_string(t.spec.weight), "-", "-", "-", "-", "-", usage});
      continue;
    }
    std::sort(t.status.fleets.begin(), t.status.fleets.end(), [](const auto& a, const auto& b) { return a.fleet < b.fleet; });
    for (const auto& f : t.status.fleets) {
      table.AddRow({t.meta.name, parent, std::to_string(t.spec.weight), f.fleet, FormatAmounts(f.nominal), FormatAmounts(f.used),
                    FormatAmounts(f.borrowed), FormatAmounts(f.lent), usage});
    }
  }
  return table.Render();
}

}  // namespace berth::cli
