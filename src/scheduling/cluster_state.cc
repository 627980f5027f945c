#include "scheduling/cluster_state.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

ClusterState::ClusterState(const ClusterSnapshot& snapshot, int64_t now_ms) : now(now_ms) {
  BuildFleets(snapshot);
  BuildInstances(snapshot);
  BuildDomains();
}

void ClusterState::BuildFleets(const ClusterSnapshot& snapshot) {
  const auto& specs = snapshot.fleets;
  std::vector<int32_t> order(specs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return specs[a].name < specs[b].name; });
  for (int32_t s : order) {
    const FleetSpec& spec = specs[s];
    if (!fleet_names.empty() && fleet_names.back() == spec.name) continue;  // duplicate
    Fleet f;
    f.spec = &spec;
    f.cluster = spec.placement == PlacementPolicy::kCluster;
    // The one place a topologyKey becomes a level (required for a run without topology).
    for (const std::string& key : spec.topology) f.levels.push_back(key);
    if (f.levels.empty() && !spec.topology_key.empty()) {
      f.levels.push_back(spec.topology_key);
      f.level_required = true;
    }
    f.topology = f.cluster && !f.levels.empty();
    if (spec.max_runs_per_instance) f.max_runs = std::max<int64_t>(*spec.max_runs_per_instance, 1);
    fleets.push_back(std::move(f));
    fleet_names.push_back(spec.name);
  }
}

int32_t ClusterState::FindFleet(std::string_view name) const {
  auto it = std::lower_bound(fleet_names.begin(), fleet_names.end(), name);
  if (it == fleet_names.end() || *it != name) return -1;
  return static_cast<int32_t>(it - fleet_names.begin());
}

int32_t ClusterState::FindInstance(std::string_view name) const {
  auto it = std::lower_bound(instance_names.begin(), instance_names.end(), name);
  if (it == instance_names.end() || *it != name) return -1;
  return static_cast<int32_t>(it - instance_names.begin());
}

void ClusterState::BuildInstances(const ClusterSnapshot& snapshot) {
  const auto& specs = snapshot.instances;
  std::vector<int32_t> order(specs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return specs[a].name < specs[b].name; });
  instances.reserve(specs.size());
  instance_names.reserve(specs.size());
  for (int32_t s : order) {
    const InstanceSpec& spec = specs[s];
    if (!instance_names.empty() && instance_names.back() == spec.name) continue;  // duplicate
    const int32_t f = FindFleet(spec.fleet);
    if (f < 0) continue;  // not part of any fleet: invisible to scheduling
    Fleet& fleet = fleets[f];
    Instance in;
    in.spec = &spec;
    in.fleet = f;
    BlockLayout layout = BlockLayout::Make(spec.allocatable, fleet.spec->blocks);
    if (!layout.valid()) {
      in.availability = Availability::kInvalid;
      ++fleet.invalid;
    } else {
      for (int32_t p : fleet.pools) {
        const BlockLayout& l = pools[p].layout;
        if (l.total_blocks() == layout.total_blocks() && l.per_block() == layout.per_block()) {
          in.pool = p;
          break;
        }
      }
      if (in.pool < 0) {
        in.pool = static_cast<int32_t>(pools.size());
        pools.push_back(Pool{layout, 0});
        fleet.pools.push_back(in.pool);
      }
      ++pools[in.pool].valid_instances;
      ++fleet.valid;
      in.total = in.free = layout.total_blocks();
      if (spec.expires_at) in.expiry = Ms(*spec.expires_at);
      in.runs_started = spec.runs_started;
      if (!spec.ready) {
        in.availability = Availability::kNotReady;
      } else if (in.expiry <= now) {
        in.availability = Availability::kExpired;
      } else if (in.runs_started >= fleet.max_runs) {
        in.availability = Availability::kRetired;
      }
    }
    fleet.instances.push_back(static_cast<int32_t>(instances.size()));
    instances.push_back(in);
    instance_names.push_back(spec.name);
  }
}

LevelUse ResolveTopologyLevel(const FleetSpec& fleet, const TopologyRequest& topology) {
  LevelUse use;
  const bool from_key = fleet.topology.empty();
  const auto count = static_cast<int32_t>(from_key ? (fleet.topology_key.empty() ? 0 : 1) : fleet.topology.size());
  if (count == 0) return use;
  if (topology.mode == TopologyRequest::Mode::kNone) {
    use.level = from_key ? 0 : count - 1;
    use.required = from_key;
    return use;
  }
  use.level = count - 1;
  use.known = false;
  for (int32_t l = 0; l < count; ++l) {
    if (!use.known && (from_key ? fleet.topology_key : fleet.topology[l]) == topology.key) {
      use.level = l;
      use.known = true;
    }
  }
  use.required = topology.mode == TopologyRequest::Mode::kRequired;
  return use;
}

std::span<const std::string> TopologyPathOf(const FleetSpec& fleet, const InstanceSpec& spec) {
  if (fleet.topology.empty()) {
    return spec.topology_domain && !fleet.topology_key.empty() ? std::span<const std::string>(&*spec.topology_domain, 1)
                                                                 : std::span<const std::string>();
  }
  return std::span<const std::string>(spec.topology_path).first(std::min(spec.topology_path.size(), fleet.topology.size()));
}

void ClusterState::BuildDomains() {
  for (int32_t f = 0; f < static_cast<int32_t>(fleets.size()); ++f) {
    Fleet& fleet = fleets[f];
    fleet.domain_begin = fleet.domain_end = static_cast<int32_t>(domains.size());
    if (!fleet.cluster) continue;
    if (fleet.topology) {
      BuildPathDomains(f);
    } else {
      domains.push_back(Domain{f, -1, -1, fleet.domain_begin + 1, {}});
      for (int32_t i : fleet.instances) {
        if (instances[i].pool >= 0) instances[i].domain = fleet.domain_begin;
      }
    }
    fleet.domain_end = static_cast<int32_t>(domains.size());
    for (int32_t i : fleet.instances) {
      const Instance& in = instances[i];
      if (in.domain < 0) continue;
      auto& counts = domains[in.domain].pool_counts;
      auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& pc) { return pc.first == in.pool; });
      if (it == counts.end()) {
        counts.push_back({in.pool, 1});
      } else {
        ++it->second;
      }
    }
  }
}

void ClusterState::BuildPathDomains(int32_t f) {
  // Instances by path; a domain opens where a path first has it and closes where a path leaves it.
  const Fleet& fleet = fleets[f];
  std::vector<std::pair<std::span<const std::string>, int32_t>> paths;
  for (int32_t i : fleet.instances) {
    if (instances[i].pool < 0) continue;
    std::span<const std::string> path = TopologyPathOf(*fleet.spec, *instances[i].spec);
    if (!path.empty()) paths.emplace_back(path, i);
  }
  std::stable_sort(paths.begin(), paths.end(), [](const auto& a, const auto& b) {
    return std::lexicographical_compare(a.first.begin(), a.first.end(), b.first.begin(), b.first.end());
  });
  std::vector<int32_t> open;  // the open domain per level
  std::span<const std::string> last;
  for (const auto& [path, i] : paths) {
    size_t common = 0;
    while (common < open.size() && common < path.size() && path[common] == last[common]) ++common;
    for (size_t l = common; l < open.size(); ++l) domains[open[l]].end = static_cast<int32_t>(domains.size());
    open.resize(common);
    for (size_t l = common; l < path.size(); ++l) {
      open.push_back(static_cast<int32_t>(domains.size()));
      domains.push_back(Domain{f, static_cast<int32_t>(l), l == 0 ? -1 : open[l - 1], 0, {}});
    }
    last = path;
    instances[i].domain = open.back();
  }
  for (int32_t d : open) domains[d].end = static_cast<int32_t>(domains.size());
}

}  // namespace berth::scheduling::internal
