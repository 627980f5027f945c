#include "scheduling/cycle.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

Cycle::Cycle(const ClusterSnapshot& snapshot, TimePoint now, CycleResult& out)
    : snapshot_(snapshot), now_(Ms(now)), out_(out), teams_(snapshot) {
  out_.now = now;
  BuildFleets();
  BuildInstances();
  BuildDomains();
  BuildQuotas();
  ApplyRunning();
  BuildIndex();
  if (!snapshot_.placed_runs.empty()) {
    for (const Fleet& f : fleets_) {
      preemption_enabled_ |= f.spec->preemption == PreemptionPolicy::kLowerPriority;
    }
    for (const PlacedRunInfo& p : snapshot_.placed_runs) {
      lowest_victim_priority_ = std::min(lowest_victim_priority_, p.priority);
    }
    if (teams_.active()) {
      for (const Fleet& f : fleets_) reclaim_enabled_ |= f.spec->reclaim == ReclaimPolicy::kBorrowed;
    }
  }
}

void Cycle::BuildQuotas() {
  for (const NamespaceQuota& q : snapshot_.quotas) quotas_.emplace(q.ns, q);  // first one wins
}

void Cycle::BuildFleets() {
  const auto& specs = snapshot_.fleets;
  std::vector<int32_t> order(specs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return specs[a].name < specs[b].name; });
  for (int32_t s : order) {
    const FleetSpec& spec = specs[s];
    if (!fleet_names_.empty() && fleet_names_.back() == spec.name) continue;  // duplicate
    Fleet f;
    f.spec = &spec;
    f.cluster = spec.placement == PlacementPolicy::kCluster;
    f.topology = f.cluster && !spec.topology_key.empty();
    if (spec.max_runs_per_instance) f.max_runs = std::max<int64_t>(*spec.max_runs_per_instance, 1);
    fleets_.push_back(std::move(f));
    fleet_names_.push_back(spec.name);
    out_.fleets.push_back(FleetRef{spec.name, spec.topology_key});
  }
}

int32_t Cycle::FindFleet(std::string_view name) const {
  auto it = std::lower_bound(fleet_names_.begin(), fleet_names_.end(), name);
  if (it == fleet_names_.end() || *it != name) return -1;
  return static_cast<int32_t>(it - fleet_names_.begin());
}

int32_t Cycle::FindInstance(std::string_view name) const {
  auto it = std::lower_bound(instance_names_.begin(), instance_names_.end(), name);
  if (it == instance_names_.end() || *it != name) return -1;
  return static_cast<int32_t>(it - instance_names_.begin());
}

void Cycle::BuildInstances() {
  const auto& specs = snapshot_.instances;
  std::vector<int32_t> order(specs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return specs[a].name < specs[b].name; });
  instances_.reserve(specs.size());
  instance_names_.reserve(specs.size());
  for (int32_t s : order) {
    const InstanceSpec& spec = specs[s];
    if (!instance_names_.empty() && instance_names_.back() == spec.name) continue;  // duplicate
    const int32_t f = FindFleet(spec.fleet);
    if (f < 0) continue;  // not part of any fleet: invisible to scheduling
    Fleet& fleet = fleets_[f];
    Instance in;
    in.spec = &spec;
    in.fleet = f;
    BlockLayout layout = BlockLayout::Make(spec.allocatable, fleet.spec->blocks);
    if (!layout.valid()) {
      in.availability = Availability::kInvalid;
      ++fleet.invalid;
    } else {
      for (int32_t p : fleet.pools) {
        const BlockLayout& l = pools_[p].layout;
        if (l.total_blocks() == layout.total_blocks() && l.per_block() == layout.per_block()) {
          in.pool = p;
          break;
        }
      }
      if (in.pool < 0) {
        in.pool = static_cast<int32_t>(pools_.size());
        pools_.push_back(Pool{layout, 0});
        fleet.pools.push_back(in.pool);
      }
      ++pools_[in.pool].valid_instances;
      ++fleet.valid;
      in.total = in.free = layout.total_blocks();
      if (spec.expires_at) in.expiry = Ms(*spec.expires_at);
      in.runs_started = spec.runs_started;
      if (!spec.ready) {
        in.availability = Availability::kNotReady;
      } else if (in.expiry <= now_) {
        in.availability = Availability::kExpired;
      } else if (in.runs_started >= fleet.max_runs) {
        in.availability = Availability::kRetired;
      }
    }
    fleet.instances.push_back(static_cast<int32_t>(instances_.size()));
    instances_.push_back(in);
    instance_names_.push_back(spec.name);
  }
}

void Cycle::BuildDomains() {
  std::vector<std::string_view> values;
  for (int32_t f = 0; f < static_cast<int32_t>(fleets_.size()); ++f) {
    Fleet& fleet = fleets_[f];
    fleet.domain_begin = fleet.domain_end = static_cast<int32_t>(domains_.size());
    if (!fleet.cluster) continue;
    values.clear();
    if (fleet.topology) {
      for (int32_t i : fleet.instances) {
        const Instance& in = instances_[i];
        if (in.pool >= 0 && in.spec->topology_domain) values.push_back(*in.spec->topology_domain);
      }
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      for (size_t v = 0; v < values.size(); ++v) domains_.push_back(Domain{f, {}});
    } else {
      domains_.push_back(Domain{f, {}});
    }
    fleet.domain_end = static_cast<int32_t>(domains_.size());
    for (int32_t i : fleet.instances) {
      Instance& in = instances_[i];
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
      auto& counts = domains_[in.domain].pool_counts;
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

void Cycle::ApplyRunning() {
  const auto& running = snapshot_.running;
  std::vector<int32_t> order(running.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return running[a].id < running[b].id; });
  const std::string* previous = nullptr;
  for (int32_t r : order) {
    const RunningRun& run = running[r];
    if (previous != nullptr && *previous == run.id) continue;  // duplicate
    previous = &run.id;
    const int64_t end = run.expected_end ? Ms(*run.expected_end) : kUnknownTime;
    NamespaceQuota* quota = run.quota_pending ? QuotaOf(run.id) : nullptr;
    for (const InstanceBlocks& held : run.placement) {
      const int32_t i = FindInstance(held.instance);
      if (i < 0 || instances_[i].pool < 0 || held.blocks <= 0) continue;
      instances_[i].busy += held.blocks;
      running_entries_.push_back(BusyEntry{i, end, held.blocks});
      if (quota != nullptr) {
        const int32_t blocks = std::min<int32_t>(held.blocks, instances_[i].total);
        ChargeQuota(*quota, UseOn(instances_[i], blocks), GpuResource(instances_[i].fleet));
      }
    }
  }
  for (Instance& in : instances_) {
    in.free = in.total - static_cast<int32_t>(std::min<int64_t>(in.busy, in.total));
  }
}

void Cycle::BuildIndex() {
  std::vector<int32_t> pool_blocks(pools_.size());
  for (size_t p = 0; p < pools_.size(); ++p) pool_blocks[p] = pools_[p].layout.total_blocks();
  std::vector<int32_t> domain_fleet(domains_.size());
  for (size_t d = 0; d < domains_.size(); ++d) domain_fleet[d] = domains_[d].fleet;
  const auto fleet_count = static_cast<int32_t>(fleets_.size());
  open_.Reset(pool_blocks, domain_fleet, fleet_count);
  reserved_.Reset(pool_blocks, domain_fleet, fleet_count);
  held_.Reset(pool_blocks, domain_fleet, fleet_count);
  need_.assign(pools_.size(), -1);

  for (int32_t i = 0; i < static_cast<int32_t>(instances_.size()); ++i) {
    const Instance& in = instances_[i];
    Fleet& fleet = fleets_[in.fleet];
    switch (in.availability) {
      case Availability::kInvalid: break;  // counted while building
      case Availability::kNotReady: ++fleet.not_ready; break;
      case Availability::kExpired: ++fleet.expired; break;
      case Availability::kRetired: ++fleet.retired; break;
      case Availability::kAvailable:
        ++fleet.available;
        if (in.free < in.total) ++fleet.busy;
        Index(i);
        break;
    }
  }
}

void Cycle::ResolveCandidates(const PendingRun& run) {
  candidates_.clear();
  if (run.fleets.empty()) {
    for (int32_t f = 0; f < static_cast<int32_t>(fleets_.size()); ++f) candidates_.push_back(f);
    return;
  }
  for (const std::string& name : run.fleets) {
    const int32_t f = FindFleet(name);
    if (f >= 0) candidates_.push_back(f);
  }
  std::sort(candidates_.begin(), candidates_.end());
  candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
}

}  // namespace berth::scheduling::internal
