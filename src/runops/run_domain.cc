#include "runops/run_domain.h"

#include <algorithm>
#include <optional>

#include "api/v1alpha1/codec.h"

namespace berth::runops {

namespace api = api::v1alpha1;

std::string RunDomain(const std::vector<api::PlacementEntry>& placement, const api::Fleet& fleet) {
  std::vector<std::string> levels = fleet.spec.topology;
  if (levels.empty() && !fleet.spec.topology_key.empty()) levels.push_back(fleet.spec.topology_key);
  if (levels.empty() || placement.empty()) return "";
  std::optional<std::vector<std::string>> common;  // the path shared by every node so far
  for (const api::PlacementEntry& p : placement) {
    auto it = std::find_if(fleet.status.instances.begin(), fleet.status.instances.end(),
                           [&](const api::FleetInstance& i) { return i.node == p.node; });
    if (it == fleet.status.instances.end() || it->domain.empty()) return "";
    std::vector<std::string> path;
    for (size_t start = 0;;) {
      const size_t slash = it->domain.find('/', start);
      path.push_back(it->domain.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
      if (slash == std::string::npos) break;
      start = slash + 1;
    }
    if (!common) {
      common = std::move(path);
      continue;
    }
    size_t n = 0;
    while (n < common->size() && n < path.size() && (*common)[n] == path[n]) ++n;
    common->resize(n);
  }
  if (common->empty()) return "";
  std::string out, spanned;
  for (size_t i = 0; i < common->size(); ++i) out += (i ? "/" : "") + (*common)[i];
  for (size_t i = 0; i < std::min(common->size(), levels.size()); ++i) spanned += (i ? " > " : "") + levels[i];
  return out + " (" + spanned + ")";
}

std::string PlacementDomain(k8s::Client& client, const api::Run& run, std::vector<std::string>& notes) {
  if (run.status.placement.empty() || run.status.fleet.empty()) return "";
  auto fleet = client.Get(k8s::resources::kFleets.Path("", run.status.fleet));
  if (!fleet.ok()) {
    notes.push_back("cannot read fleet " + run.status.fleet + ": " + fleet.status().message());
    return "";
  }
  auto decoded = api::DecodeFleet(*fleet);
  return decoded.ok() ? RunDomain(run.status.placement, *decoded) : "";
}

}  // namespace berth::runops
