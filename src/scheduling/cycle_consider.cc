#include "scheduling/cycle.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

void Cycle::Consider(const PendingRun& run) {
  // A nominee may use the instances kept for it (and any others); when it does not start they
  // stay kept for it.
  const int32_t nominee = preempt_.NomineeOf(run.id);
  const bool reusable = reuse_equal_shapes && nominee < 0 && !preempt_.enabled() && !teams_.active();
  if (reusable && last_wait_.run != nullptr && last_wait_.version == capacity_.version() &&
      SameShape(*last_wait_.run, run)) {
    WaitReason reason = out_.waiting[last_wait_.waiting].reason;
    out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
    return;
  }
  last_wait_.run = nullptr;
  const uint64_t version = capacity_.version();
  const size_t waiting = out_.waiting.size();
  if (nominee >= 0) preempt_.Open(nominee);
  // Its own Pods that exist already are in the quota's usage: out of it while it is considered,
  // and for good once it is placed (its placement is charged instead).
  NamespaceQuota* counted = run.quota_counted.empty() ? nullptr : QuotaOf(run.id);
  if (counted != nullptr) AddCounted(*counted, run.quota_counted, -1);
  const Outcome outcome = ConsiderRun(run, nominee);
  if (counted != nullptr && outcome != Outcome::kPlaced) AddCounted(*counted, run.quota_counted, 1);
  if (nominee >= 0 && outcome != Outcome::kPlaced) preempt_.Keep(nominee);
  deferred_ = outcome == Outcome::kDeferred;
  if (outcome == Outcome::kWaitsMayReserve && !has_reservation_) TryReserve(run);
  if (reusable && outcome != Outcome::kPlaced && capacity_.version() == version && out_.waiting.size() == waiting + 1) {
    last_wait_ = LastWait{&run, waiting, version};
  }
}

bool Cycle::Consider(const PendingRun& run, bool allow_borrow) {
  allow_borrow_ = allow_borrow;
  Consider(run);
  allow_borrow_ = true;
  return deferred_;
}

Outcome Cycle::ConsiderRun(const PendingRun& run, int32_t nominee) {
  filter_.Resolve(run);
  run_team_ = teams_.active() ? teams_.TeamOf(run.id) : -1;
  WaitReason reason;
  if (run_team_ >= 0) reason.team = teams_.Name(run_team_);
  reason.nodes = run.nodes;
  reason.slice_gang = IsSliceGang(run);
  reason.request = run.resources;
  reason.max_duration = run.max_duration;
  if (!filter_.Fits(run, reason)) return Wait(run, reason);
  const int64_t duration =
      run.max_duration ? std::max<int64_t>(run.max_duration->count(), 0) : 0;
  const int64_t end = run.max_duration ? SaturatingAdd(now_, duration) : kUnknownTime;
  const LifetimeRule rule{run.max_duration ? end : now_ + 1, !run.max_duration};
  const bool backfill = has_reservation_ && reservation_start_ != kUnknownTime &&
                        run.max_duration && end <= reservation_start_;

  // A run that waits for its own namespace's quota is skipped like one that does not fit, and
  // never holds the reservation: capacity kept for it could not be used by it.
  NamespaceQuota* quota = QuotaOf(run.id);
  if (auto shortfall = RequestShortfall(run, quota, state_, filter_.candidates)) {
    SetQuotaReason(*shortfall, reason);
    return Wait(run, reason);
  }
  if (DropSpentFleets(run, reason)) return Wait(run, reason);
  const std::optional<Outcome> outcome = IsSliceGang(run) ? ConsiderGang(run, quota, rule, end, reason)
                                         : run.nodes <= 1   ? ConsiderSingle(run, rule, backfill, end, reason)
                                                            : ConsiderMulti(run, quota, rule, backfill, end, reason);
  if (outcome) return *outcome;
  return WaitForCapacity(run, nominee, quota, reason);
}

bool Cycle::DropSpentFleets(const PendingRun& run, WaitReason& reason) {
  if (run_team_ < 0) return false;
  TeamBook::SpentBudget first;
  std::erase_if(filter_.candidates, [&](int32_t f) {
    const TeamBook::SpentBudget spent = teams_.Spent(run_team_, state_.fleets[f].spec->name, run.resources, TimePoint(Duration(now_)));
    if (spent.budget != nullptr && first.budget == nullptr) first = spent;
    return spent.budget != nullptr;
  });
  if (!filter_.candidates.empty() || first.budget == nullptr) return false;
  reason.code = WaitCode::kBudgetExhausted;
  reason.budget = BudgetWait{.team = std::string(first.team), .budget = *first.budget};
  return true;
}

Outcome Cycle::Wait(const PendingRun& run, WaitReason& reason) {
  out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
  return Outcome::kWaits;
}

std::optional<Outcome> Cycle::ConsiderSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                                             int64_t end, WaitReason& reason) {
  if (PlaceSingle(run, rule, backfill, end)) return Outcome::kPlaced;
  if (const auto& skipped = capacity_.skipped().quota) {
    SetQuotaReason(*skipped, reason);
    return Wait(run, reason);
  }
  if (auto outcome = ShareWait(run, reason)) return outcome;
  DiagnoseSingle(run, rule, backfill, reason);
  return std::nullopt;
}

std::optional<Outcome> Cycle::ConsiderMulti(const PendingRun& run, NamespaceQuota* quota, const LifetimeRule& rule,
                                            bool backfill, int64_t end, WaitReason& reason) {
  int32_t fleet = -1;
  // The team's share may send it to the next best fleet; the quota is checked on the chosen
  // instances only (it waits when it refuses them).
  const QuotaAndShare share = RoomOf(nullptr);
  if (capacity_.FindMulti(run.nodes, rule, backfill, share.limits() ? &share : nullptr, chosen_, fleet)) {
    if (quota != nullptr) {
      const QuotaUse use = WholeInstancesUse(chosen_);
      if (auto s = CheckQuota(quota, use, GpuResource(fleet))) {
        SetQuotaReason(*s, reason);
        return Wait(run, reason);
      }
      ChargeQuota(*quota, use, GpuResource(fleet));
    }
    PlaceMulti(run, fleet, chosen_, end);
    return Outcome::kPlaced;
  }
  if (auto outcome = ShareWait(run, reason)) return outcome;
  DiagnoseMulti(run, rule, backfill, reason);
  return std::nullopt;
}

Outcome Cycle::WaitForCapacity(const PendingRun& run, int32_t nominee, const NamespaceQuota* quota,
                               WaitReason& reason) {
  // A run that waits for its victims, reclaims or preempts (preempt.h) does not hold the
  // reservation. The plan's instances must be within the run's quota (not its team's share).
  const QuotaAndShare within_quota(state_, quota, teams_, -1, true);
  const bool preempting = preempt_.Try(run, nominee, run_team_, quota != nullptr ? &within_quota : nullptr, reason);
  out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
  return preempting ? Outcome::kWaits : Outcome::kWaitsMayReserve;
}

QuotaUse Cycle::WholeInstancesUse(const std::vector<CapacityIndex::Key>& chosen) const {
  QuotaUse use;
  for (const auto& key : chosen) {
    const Instance& in = state_.instances[key.second];
    const QuotaUse one = UseOn(in, in.total);
    use.resources.cpu_millis += one.resources.cpu_millis;
    use.resources.memory_bytes += one.resources.memory_bytes;
    use.resources.gpus += one.resources.gpus;
    ++use.pods;
  }
  return use;
}

NamespaceQuota* Cycle::QuotaOf(std::string_view run_id) {
  if (quotas_.empty()) return nullptr;
  auto it = quotas_.find(NamespaceOf(run_id));
  return it == quotas_.end() ? nullptr : &it->second;
}

QuotaUse Cycle::UseOn(const Instance& in, int32_t blocks) const {
  return QuotaUse{state_.pools[in.pool].layout.ResourcesFor(blocks), 1};
}

void Cycle::SetQuotaReason(const QuotaShortfall& s, WaitReason& reason) {
  reason.code = WaitCode::kQuotaExceeded;
  reason.quota = s;
}

}  // namespace berth::scheduling::internal
