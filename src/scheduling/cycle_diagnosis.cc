#include "scheduling/cycle.h"

#include <algorithm>
#include <limits>
#include <string_view>

namespace berth::scheduling::internal {

void Cycle::CountUnavailable(bool cluster_only, WaitReason& reason, int64_t& available) const {
  available = 0;
  for (int32_t f : filter_.candidates) {
    const Fleet& fleet = state_.fleets[f];
    if (cluster_only && !fleet.cluster) continue;
    reason.not_ready += fleet.not_ready;
    reason.expired += fleet.expired;
    reason.retired += fleet.retired;
    reason.invalid += fleet.invalid;
    available += fleet.available;
  }
}

void Cycle::DiagnoseSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                           WaitReason& reason) {
  int64_t available = 0;
  CountUnavailable(false, reason, available);
  if (!backfill && !capacity_.reserved().empty() && FitsReserved(rule, reason)) return;
  if (!capacity_.held().empty() && FitsKept(rule, reason)) return;
  if (run.max_duration && LifetimeTooShort(reason)) return;
  if (available == 0) {
    reason.code = WaitCode::kNoAvailableInstance;
    return;
  }
  SetNotEnoughFreeBlocks(reason);
}

bool Cycle::FitsReserved(const LifetimeRule& rule, WaitReason& reason) const {
  for (int32_t f : filter_.candidates) {
    for (int32_t p : state_.fleets[f].pools) {
      const int32_t need = filter_.need[p];
      if (need < 0 || capacity_.reserved().LargestFree(p) < need) continue;
      if (capacity_.reserved().BestFit(p, need, rule).instance >= 0) {
        reason.code = WaitCode::kReserved;
        reason.fleet = f;
        reason.needed = need;
        return true;
      }
    }
  }
  return false;
}

bool Cycle::FitsKept(const LifetimeRule& rule, WaitReason& reason) const {
  for (int32_t f : filter_.candidates) {
    for (int32_t p : state_.fleets[f].pools) {
      const int32_t need = filter_.need[p];
      if (need < 0 || capacity_.held().LargestFree(p) < need) continue;
      const CapacityIndex::Fit fit = capacity_.held().BestFit(p, need, rule);
      if (fit.instance >= 0) {
        reason.code = WaitCode::kKeptForPreemptor;
        reason.fleet = f;
        reason.needed = need;
        reason.preemptor = preempt_.HolderOf(fit.instance);
        return true;
      }
    }
  }
  return false;
}

bool Cycle::LifetimeTooShort(WaitReason& reason) const {
  int64_t latest = -1;
  for (int32_t f : filter_.candidates) {
    for (int32_t p : state_.fleets[f].pools) {
      const int32_t need = filter_.need[p];
      if (need < 0 || capacity_.open().LargestFree(p) < need) continue;
      const int64_t expiry = capacity_.open().LatestExpiryWithRoom(p, need);
      if (expiry > latest) {
        latest = expiry;
        reason.fleet = f;
        reason.needed = need;
      }
    }
  }
  if (latest < 0) return false;
  reason.code = WaitCode::kLifetimeTooShort;
  reason.lifetime_left = Duration(std::max<int64_t>(0, latest - now_));
  return true;
}

void Cycle::SetNotEnoughFreeBlocks(WaitReason& reason) const {
  reason.code = WaitCode::kNotEnoughFreeBlocks;
  int64_t best_margin = std::numeric_limits<int64_t>::min();
  for (int32_t f : filter_.candidates) {
    for (int32_t p : state_.fleets[f].pools) {
      const int32_t need = filter_.need[p];
      if (need < 0) continue;
      const int32_t largest = std::max(capacity_.open().LargestFree(p), capacity_.reserved().LargestFree(p));
      if (largest - need > best_margin) {
        best_margin = largest - need;
        reason.fleet = f;
        reason.needed = need;
        reason.available = largest;
      }
    }
  }
}

void Cycle::DiagnoseMulti(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                          WaitReason& reason) {
  int64_t available = 0;
  CountUnavailable(true, reason, available);
  reason.needed = run.nodes;
  int32_t fleet = -1;
  if (!backfill && !capacity_.reserved().empty() && capacity_.FindMulti(run.nodes, rule, true, nullptr, probe_, fleet)) {
    reason.code = WaitCode::kReserved;
    reason.fleet = fleet;
    return;
  }
  std::string_view preemptor;
  if (!capacity_.held().empty() && FindKept(run.nodes, rule, backfill, fleet, preemptor)) {
    reason.code = WaitCode::kKeptForPreemptor;
    reason.fleet = fleet;
    reason.preemptor = preemptor;
    return;
  }
  if (run.max_duration &&
      capacity_.FindMulti(run.nodes, LifetimeRule{now_ + 1, true}, false, nullptr, chosen_, fleet)) {
    int64_t shortest = kNoExpiry;
    for (const auto& key : chosen_) shortest = std::min(shortest, key.first);
    reason.code = WaitCode::kLifetimeTooShort;
    reason.fleet = fleet;
    reason.lifetime_left = Duration(std::max<int64_t>(0, shortest - now_));
    return;
  }
  if (available == 0) {
    reason.code = WaitCode::kNoAvailableInstance;
    return;
  }
  reason.code = WaitCode::kNotEnoughIdleInstances;
  reason.available = -1;
  for (int32_t f : filter_.candidates) {
    if (!state_.fleets[f].cluster) continue;
    const int32_t idle = capacity_.LargestIdle(f);
    if (idle > reason.available) {
      reason.available = idle;
      reason.fleet = f;
    }
  }
  reason.busy = state_.fleets[reason.fleet].busy;
  filter_.NameLevel(run, reason);
}

bool Cycle::FindKept(int32_t nodes, const LifetimeRule& rule, bool backfill, int32_t& fleet_out,
                     std::string_view& preemptor) {
  // Whether `nodes` idle instances of one domain would do if the kept ones were open (kept ones
  // first, then what the run may use anyway).
  const auto limit = static_cast<size_t>(nodes);
  for (int32_t f : filter_.candidates) {
    const Fleet& fleet = state_.fleets[f];
    if (!fleet.cluster) continue;
    for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
      if (capacity_.held().IdleIn(d) == 0) continue;
      const int32_t count = capacity_.held().IdleIn(d) + capacity_.open().IdleIn(d) + (backfill ? capacity_.reserved().IdleIn(d) : 0);
      if (count < nodes) continue;
      probe_.clear();
      auto collect = [&](const CapacityIndex::Key& key) {
        if (filter_.need[state_.instances[key.second].pool] >= 0) probe_.push_back(key);
        return probe_.size() < limit;
      };
      capacity_.held().ForEachIdle(d, rule, collect);
      if (probe_.empty()) continue;
      const int32_t first = probe_.front().second;
      if (probe_.size() < limit && backfill) capacity_.reserved().ForEachIdle(d, rule, collect);
      if (probe_.size() < limit) capacity_.open().ForEachIdle(d, rule, collect);
      if (probe_.size() == limit) {
        fleet_out = f;
        preemptor = preempt_.HolderOf(first);
        return true;
      }
    }
  }
  return false;
}

}  // namespace berth::scheduling::internal
