#include "scheduling/cycle.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

bool Cycle::TryReclaim(const PendingRun& run, WaitReason& reason) {
  // The fleets where the run is within its team's unused nominal share, whatever instance of
  // the fleet it would get (a gang of whole slices: of its whole-slice fleets, PreemptionFleets).
  PreemptionRequest request;
  PreemptionFleets(run, plan_fleets_);
  for (int32_t f : plan_fleets_) {
    if (state_.fleets[f].spec->reclaim != ReclaimPolicy::kBorrowed) continue;
    bool any = false;
    bool within = true;
    for (int32_t p : state_.fleets[f].pools) {
      if (filter_.need[p] < 0) continue;
      any = true;
      within = within && teams_.WithinNominal(run_team_, state_.fleets[f].spec->name, UseOf(run, p));
    }
    if (any && within) request.fleets.push_back(state_.fleets[f].spec->name);
  }
  if (request.fleets.empty()) return false;
  request.id = run.id;
  request.priority = run.priority;
  request.nodes = std::max<int32_t>(run.nodes, 1);
  request.resources = run.resources;
  request.max_duration = run.max_duration;
  const int32_t team = run_team_;
  request.reclaimable = [this, team](std::string_view fleet, std::string_view victim) {
    const int32_t t = teams_.TeamOf(victim);
    return t != team && teams_.Borrowing(t, fleet);
  };
  SyncWork();
  std::optional<PreemptionPlan> plan = work_.index->Plan(request);
  return plan && Adopt(run, std::move(*plan), true, reason);
}

Resources Cycle::UseOf(const PendingRun& run, int32_t pool) const {
  const BlockLayout& layout = state_.pools[pool].layout;
  const Resources one = layout.ResourcesFor(run.nodes <= 1 ? filter_.need[pool] : layout.total_blocks());
  const int64_t n = std::max<int32_t>(run.nodes, 1);
  return Resources{one.cpu_millis * n, one.memory_bytes * n, one.gpus * n};
}

std::optional<Outcome> Cycle::ShareWait(const PendingRun& run, WaitReason& reason) {
  const RoomSkip& skipped = capacity_.skipped();
  if (!skipped.share) return std::nullopt;
  const ShareCheck& share = *skipped.share;
  if (share.verdict == ShareCheck::kBorrows) return Outcome::kDeferred;
  reason.code = WaitCode::kTeamShare;
  reason.fleet = skipped.share_fleet;
  reason.share_verdict = share.verdict;
  reason.share_resource = static_cast<uint8_t>(share.resource);
  reason.share_needed = share.needed;
  reason.share_used = share.used;
  reason.share_nominal = share.nominal;
  reason.share_may_borrow = share.may_borrow;
  out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
  return Outcome::kWaits;
}

}  // namespace berth::scheduling::internal
