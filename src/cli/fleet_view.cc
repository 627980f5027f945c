#include "cli/fleet_view.h"

#include <algorithm>
#include <map>

#include "api/v1alpha1/codec.h"
#include "cli/format.h"

namespace berth::cli {

namespace api = api::v1alpha1;

FleetSummary SummarizeFleet(const api::Fleet& fleet) {
  FleetSummary f;
  f.name = fleet.meta.name;
  const api::FleetSpelling written = fleet.spelling.value_or(api::FleetSpelling{});
  f.placement = written.placement;
  f.blocks = written.blocks;
  f.max_runs = fleet.spec.max_runs_per_instance;
  f.instance_lifetime = written.instance_lifetime;
  f.topology = fleet.spec.topology;
  if (f.topology.empty() && !fleet.spec.topology_key.empty()) f.topology.push_back(fleet.spec.topology_key);
  if (!fleet.has_status) return f;
  f.has_status = true;
  const api::FleetStatus& status = fleet.status;
  f.total_instances = status.total_instances;
  f.ready_instances = status.ready_instances;
  f.total_blocks = status.total_blocks;
  f.busy_blocks = status.busy_blocks;
  for (const auto& r : status.instances) {
    FleetInstance i;
    i.node = r.node;
    i.total_blocks = r.total_blocks;
    i.busy_blocks = r.busy_blocks;
    i.runs_started = r.runs_started;
    i.expires_at = api::FormatTime(r.expires_at);
    i.state = r.state ? std::string(api::ToApi(*r.state)) : "";
    i.message = r.message;
    i.held_by_others = r.held_by_other_pods;
    i.devices = r.devices;
    i.domain = r.domain;
    f.instances.push_back(std::move(i));
  }
  f.conditions = status.conditions;
  return f;
}

FleetSummary DecodeFleetSummary(const k8s::json::Value& fleet) {
  api::FleetDecodeOptions options;
  options.keep_spelling = true;
  auto decoded = api::DecodeFleet(fleet, options);
  return decoded.ok() ? SummarizeFleet(*decoded) : FleetSummary{};
}

namespace {

std::string Plural(int64_t n, const std::string& word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

std::string Title(const FleetSummary& f) {
  std::string t = f.name + "   ";
  if (!f.has_status) return t + "no status yet (is the berth controller running?)";
  t += Plural(f.total_instances, "instance") + " (" + std::to_string(f.ready_instances) + " ready), " +
       std::to_string(f.busy_blocks) + "/" + std::to_string(f.total_blocks) + " blocks busy";
  if (!f.placement.empty()) t += ", placement " + f.placement;
  if (f.max_runs) t += ", max " + Plural(*f.max_runs, "run") + " per instance";
  if (!f.instance_lifetime.empty()) t += ", lifetime " + f.instance_lifetime;
  for (size_t n = 0; n < f.topology.size(); ++n) t += (n == 0 ? ", topology " : " > ") + f.topology[n];
  return t;
}

// Issue 48: the fleet's domains as a tree (each path in preorder, indented by its level), each with
// its idle instances of all: an idle instance is what a gang of whole instances takes.
std::string DomainTree(const FleetSummary& f) {
  struct Count {
    int64_t idle = 0, all = 0;
  };
  std::map<std::vector<std::string>, Count> domains;  // ordered by path: preorder
  for (const FleetInstance& i : f.instances) {
    std::vector<std::string> path = Split(i.domain, '/');
    for (size_t n = 1; n <= path.size(); ++n) {
      Count& c = domains[std::vector<std::string>(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(n))];
      ++c.all;
      if (i.state == "Idle") ++c.idle;
    }
  }
  if (domains.empty()) return "";
  Table t({"DOMAIN", "IDLE"});
  for (const auto& [path, c] : domains) {
    t.AddRow({std::string(2 * (path.size() - 1), ' ') + path.back(), std::to_string(c.idle) + "/" + std::to_string(c.all)});
  }
  return t.Render("  ");
}

bool Troubled(const api::Condition& c) {
  if (c.type == api::ConditionType::kReady) return c.status != api::ConditionStatus::kTrue;
  if (c.type == api::ConditionType::kConflict) return c.status == api::ConditionStatus::kTrue;
  return false;
}

}  // namespace

std::string FormatFleets(const std::vector<FleetSummary>& fleets, k8s::TimePoint now, bool wide) {
  std::string out;
  for (size_t n = 0; n < fleets.size(); ++n) {
    const FleetSummary& f = fleets[n];
    if (n > 0) out += "\n";
    out += Title(f) + "\n";
    for (const auto& c : f.conditions) {
      if (!Troubled(c)) continue;
      out += "  ! " + c.type.str() + "=" + std::string(api::ToApi(c.status)) + (c.reason.empty() ? "" : " " + c.reason.str()) +
             (c.message.empty() ? "" : ": " + c.message) + "\n";
    }
    if (!f.has_status) continue;
    if (f.instances.empty()) {
      out += "  (no instances: no Node matches the fleet's nodeSelector)\n";
      continue;
    }
    const bool levels = !f.topology.empty();
    if (levels) out += DomainTree(f);
    std::vector<std::string> header = {"INSTANCE", "BLOCKS", "RUNS", "EXPIRES", "STATE"};
    if (levels) header.insert(header.begin() + 1, "DOMAIN");
    // A DRA fleet's instances (issue 49): their devices and the runs whose claims hold them.
    const bool devices = std::any_of(f.instances.begin(), f.instances.end(),
                                     [](const FleetInstance& i) { return !i.devices.empty(); });
    if (devices) header.push_back("DEVICES");
    if (wide) header.insert(header.end(), {"OTHER PODS", "MESSAGE"});
    Table t(std::move(header));
    for (const auto& i : f.instances) {
      std::string runs = std::to_string(i.runs_started);
      if (f.max_runs) runs += "/" + std::to_string(*f.max_runs);
      std::vector<std::string> row = {i.node, BlockBar(i.busy_blocks, i.total_blocks), runs,
                                      RelativeExpiry(i.expires_at, now), i.state.empty() ? "-" : i.state};
      if (levels) row.insert(row.begin() + 1, i.domain.empty() ? "-" : i.domain);
      if (devices) row.push_back(i.devices.empty() ? "-" : i.devices);
      if (wide) {
        row.push_back(i.held_by_others.empty() ? "-" : i.held_by_others);
        row.push_back(i.message.empty() ? "-" : i.message);
      }
      t.AddRow(std::move(row));
    }
    out += t.Render("  ");
  }
  return Printable(out, TextLines::kMany);  // the titles and conditions are API text too
}

}  // namespace berth::cli
