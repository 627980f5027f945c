#include "scheduling/filter.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace berth::scheduling::internal {

FleetFilter::FleetFilter(const ClusterState& state)
    : need(state.pools.size(), -1), levels(state.fleets.size()), state_(state) {}

void FleetFilter::Resolve(const PendingRun& run) {
  candidates.clear();
  if (run.fleets.empty()) {
    for (int32_t f = 0; f < static_cast<int32_t>(state_.fleets.size()); ++f) candidates.push_back(f);
  } else {
    for (const std::string& name : run.fleets) {
      const int32_t f = state_.FindFleet(name);
      if (f >= 0) candidates.push_back(f);
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  }
  DropShortGrace(run);
  ResolveLevels(run);
}

void FleetFilter::ResolveLevels(const PendingRun& run) {
  for (int32_t f : candidates) {
    const Fleet& fleet = state_.fleets[f];
    levels[f] = fleet.topology ? ResolveTopologyLevel(*fleet.spec, run.topology) : LevelUse{};
  }
}

void FleetFilter::DropShortGrace(const PendingRun& run) {
  grace_fleet_ = -1;
  if (run.grace_seconds <= 0) return;
  auto cap = [this](int32_t f) { return state_.fleets[f].spec->max_grace_seconds; };
  for (int32_t f : candidates) {
    if (cap(f) < run.grace_seconds && (grace_fleet_ < 0 || cap(f) > cap(grace_fleet_))) grace_fleet_ = f;
  }
  if (grace_fleet_ < 0) return;
  std::erase_if(candidates, [&](int32_t f) { return cap(f) < run.grace_seconds; });
}

bool FleetFilter::Fits(const PendingRun& run, WaitReason& reason) {
  if (candidates.empty() && grace_fleet_ >= 0) {
    reason.code = WaitCode::kGracePeriodTooLong;
    reason.fleet = grace_fleet_;
    reason.needed = run.grace_seconds;
    reason.available = state_.fleets[grace_fleet_].spec->max_grace_seconds;
    return false;
  }
  if (candidates.empty()) {
    SetNoFleetReason(run, reason);
    return false;
  }
  const bool whole_single = IsWholeSingle(run);
  for (int32_t f : candidates) {
    for (int32_t p : state_.fleets[f].pools) {
      const BlockLayout& layout = state_.pools[p].layout;
      need[p] = layout.BlocksFor(run.resources).value_or(-1);
      // A whole single instance takes every block of an instance that covers its request.
      if (whole_single && need[p] >= 0) need[p] = layout.total_blocks();
    }
  }
  if (IsSliceGang(run)) return CheckGangStructure(run, reason);
  return run.nodes <= 1 ? CheckSingleStructure(reason) : CheckMultiStructure(run, reason);
}

void FleetFilter::SetNoFleetReason(const PendingRun& run, WaitReason& reason) {
  if (run.fleets.empty()) {
    reason.code = WaitCode::kNoFleet;
    return;
  }
  reason.code = WaitCode::kFleetNotFound;
  std::vector<std::string_view> names(run.fleets.begin(), run.fleets.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (std::string_view n : names) {
    if (!reason.detail.empty()) reason.detail += ", ";
    reason.detail += n;
  }
  reason.needed = static_cast<int64_t>(names.size());
}

bool FleetFilter::CheckSingleStructure(WaitReason& reason) const {
  int64_t valid = 0;
  int64_t invalid = 0;
  for (int32_t f : candidates) {
    valid += state_.fleets[f].valid;
    invalid += state_.fleets[f].invalid;
    for (int32_t p : state_.fleets[f].pools) {
      if (need[p] >= 0 && state_.pools[p].valid_instances > 0) return true;
    }
  }
  reason.code = valid == 0 ? WaitCode::kNoValidInstance : WaitCode::kTooLarge;
  reason.invalid = invalid;
  return false;
}

bool FleetFilter::CheckMultiStructure(const PendingRun& run, WaitReason& reason) const {
  StructureTally t;
  bool any_cluster = false;
  for (int32_t f : candidates) {
    const Fleet& fleet = state_.fleets[f];
    if (!fleet.cluster) continue;
    any_cluster = true;
    t.valid += fleet.valid;
    t.invalid += fleet.invalid;
    if (t.largest_fleet < 0) t.largest_fleet = f;
    for (int32_t p : fleet.pools) t.any_fit |= need[p] >= 0 && state_.pools[p].valid_instances > 0;
    const int64_t count = LargestBound(f);
    if (count > t.largest) {
      t.largest = count;
      t.largest_fleet = f;
    }
  }
  if (!any_cluster) {
    reason.code = WaitCode::kNeedsClusterPlacement;
    return false;
  }
  if (StructureVerdict(t, run, WaitCode::kTooManyNodes, reason)) return true;
  NameLevel(run, reason);
  return false;
}

void FleetFilter::NameLevel(const PendingRun& run, WaitReason& reason) const {
  if (reason.fleet < 0) return;
  const Fleet& fleet = state_.fleets[reason.fleet];
  const LevelUse& use = levels[reason.fleet];
  if (!fleet.topology || fleet.level_required) return;
  if (!use.known) {
    reason.level = run.topology.key;
    reason.level_missing = true;
  } else if (use.required) {
    reason.level = fleet.levels[use.level];
  }
}

bool FleetFilter::CheckGangStructure(const PendingRun& run, WaitReason& reason) const {
  StructureTally t;
  t.largest = -1;
  int64_t largest_blocks = 0;
  bool largest_whole = false;
  for (int32_t f : candidates) {
    const Fleet& fleet = state_.fleets[f];
    t.valid += fleet.valid;
    t.invalid += fleet.invalid;
    // The slices the fleet holds when all of its valid instances are idle.
    int64_t slots = 0;
    int64_t blocks = 0;
    for (int32_t p : fleet.pools) {
      const int32_t blocks_each = need[p];
      if (blocks_each < 0 || state_.pools[p].valid_instances == 0) continue;
      t.any_fit = true;
      slots += static_cast<int64_t>(state_.pools[p].valid_instances) *
               (state_.pools[p].layout.total_blocks() / std::max(blocks_each, 1));
      if (blocks == 0) blocks = blocks_each;
    }
    // Whole slices in a fleet with topology domains (Capacity::WholeSlicesIn): one domain's worth.
    bool whole = fleet.topology && blocks > 0;
    for (int32_t p : fleet.pools) whole &= need[p] < 0 || need[p] == state_.pools[p].layout.total_blocks();
    if (whole) slots = LargestBound(f);
    if (slots > t.largest) {
      t.largest = slots;
      t.largest_fleet = f;
      largest_blocks = blocks;
      largest_whole = whole;
    }
  }
  if (StructureVerdict(t, run, WaitCode::kTooManySlices, reason)) return true;
  if (reason.code == WaitCode::kTooManySlices) {
    reason.slice_blocks = largest_blocks;
    reason.slice_domain = largest_whole;
    if (largest_whole) NameLevel(run, reason);
  }
  return false;
}

bool FleetFilter::StructureVerdict(const StructureTally& t, const PendingRun& run, WaitCode too_many, WaitReason& reason) {
  if (t.valid == 0) {
    reason.code = WaitCode::kNoValidInstance;
    reason.invalid = t.invalid;
    return false;
  }
  if (!t.any_fit) {
    reason.code = WaitCode::kTooLarge;
    return false;
  }
  if (t.largest >= run.nodes) return true;
  reason.code = too_many;
  reason.fleet = t.largest_fleet;
  reason.needed = run.nodes;
  reason.available = t.largest;
  return false;
}

int64_t FleetFilter::FittingInstances(int32_t domain) const {
  int64_t count = 0;
  for (int32_t d = domain; d < state_.domains[domain].end; ++d) {
    for (auto [p, n] : state_.domains[d].pool_counts) {
      if (need[p] >= 0) count += n;
    }
  }
  return count;
}

int64_t FleetFilter::LargestBound(int32_t f) const {
  const Fleet& fleet = state_.fleets[f];
  const LevelUse& use = levels[f];
  if (!use.known) return 0;
  int64_t largest = 0;
  int64_t all = 0;
  for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
    const Domain& domain = state_.domains[d];
    if (domain.level == use.bound()) largest = std::max(largest, FittingInstances(d));
    if (domain.parent < 0 && use.bound() < 0) all += FittingInstances(d);
  }
  return std::max(largest, all);
}

}  // namespace berth::scheduling::internal
