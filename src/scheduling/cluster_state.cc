#include "scheduling/cluster_state.h"

#include <algorithm>
#include <numeric>
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
    f.topology = f.cluster && !spec.topology_key.empty();
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

void ClusterState::BuildDomains() {
  std::vector<std::string_view> values;
  for (int32_t f = 0; f < static_cast<int32_t>(fleets.size()); ++f) {
    Fleet& fleet = fleets[f];
    fleet.domain_begin = fleet.domain_end = static_cast<int32_t>(domains.size());
    if (!fleet.cluster) continue;
    values.clear();
    if (fleet.topology) {
      for (int32_t i : fleet.instances) {
        const Instance& in = instances[i];
        if (in.pool >= 0 && in.spec->topology_domain) values.push_back(*in.spec->topology_domain);
      }
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      for (size_t v = 0; v < values.size(); ++v) domains.push_back(Domain{f, {}});
    } else {
      domains.push_back(Domain{f, {}});
    }
    fleet.domain_end = static_cast<int32_t>(domains.size());
    for (int32_t i : fleet.instances) {
      Instance& in = instances[i];
      if (in.pool < 0) continue;
      if (fleet.topology) {
        if (!in.spec->topology_domain) continue;
        in.domain = fleet.domain_begin +
                    static_cast<int32_t>(std::lower_bound(values.begin(), values.end(),
                                                          *in.spec->topology_domain) -
                                         values.begin());
      } else {
        in.domain = fleet.domain_begin;
      }
      auto& counts = domains[in.domain].pool_counts;
      auto it = std::find_if(counts.begin(), counts.end(),
                             [&](const auto& pc) { return pc.first == in.pool; });
      if (it == counts.end()) {
        counts.push_back({in.pool, 1});
      } else {
        ++it->second;
      }
    }
  }
}

}  // namespace berth::scheduling::internal
