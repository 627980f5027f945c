// A gang of slices (PendingRun::whole_instances false with nodes > 1; docs/scheduling.md "Gangs
// of slices"): `nodes` ranks, each on the blocks that cover the run's per-rank request, all in one
// fleet and all or nothing; several ranks may share an instance.
//
//  - Placement: in each candidate fleet the slices are picked one by one with the single-node best
//    fit (no GPU taken unasked, a partly used instance before an idle one, the fewest blocks left
//    over, lifetime, name) on the working state as the earlier slices left it, so slices pack
//    onto shared instances; the fleet whose gang takes no GPU unasked, then breaks into the fewest
//    idle instances, then comes first by name, wins. Only open instances: a gang never uses
//    instances reserved for an earlier run (no backfill) or kept for a preempting run.
//  - Whole slices (issue 45 item 3): in a `placement: cluster` fleet with a topologyKey, a gang
//    whose every slice takes all blocks of any instance that can hold it (a Job's Pods that each
//    ask for a whole instance's GPUs) goes on idle instances of one topology domain, like a
//    multi-node run: the domain with the fewest idle instances that holds it, instances as
//    FindMulti picks them (Capacity::WholeSlicesIn, place.h).
//  - maxRunsPerInstance: a gang counts as one run on each instance it uses, however many of its
//    ranks are there (runs_started grows by one per instance).
//  - Quota and team shares are charged the sum of its slices.
//  - Preemption and reclaim (preempt.h): a gang of whole slices preempts and reclaims on the
//    `placement: cluster` fleets where its slices are whole instances (with a topologyKey or not)
//    exactly as a multi-node run of its shape (Preempter::PlanFleets: `nodes` instances of one
//    domain, each cleared completely, PlanPreemption's cost order). Other gangs wait without
//    preempting or reclaiming.
//  - The first gang that waits for capacity without a plan may hold the reservation: the
//    instances whose room for its slices frees soonest.
#include <algorithm>
#include <utility>
#include <vector>

#include "scheduling/cycle.h"

namespace berth::scheduling::internal {

std::optional<Outcome> Cycle::ConsiderGang(const PendingRun& run, NamespaceQuota* quota, const LifetimeRule& rule,
                                           int64_t end, WaitReason& reason) {
  const QuotaAndShare room = RoomOf(quota);
  if (capacity_.FindGang(run, rule, room.limits() ? &room : nullptr, gang_best_)) {
    PlaceGang(run, quota, end);
    return Outcome::kPlaced;
  }
  if (const auto& skipped = capacity_.skipped().quota) {
    SetQuotaReason(*skipped, reason);
    return Wait(run, reason);
  }
  if (auto outcome = ShareWait(run, reason)) return outcome;
  DiagnoseGang(run, reason);
  return std::nullopt;
}

void Cycle::PlaceGang(const PendingRun& run, NamespaceQuota* quota, int64_t end) {
  const int32_t f = gang_best_.fleet;
  auto& picks = gang_best_.picks;
  // Ranks in instance-name order (ranks sharing an instance are neighbours).
  std::stable_sort(picks.begin(), picks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Placement placement;
  placement.run_id = run.id;
  placement.fleet = state_.fleets[f].spec->name;
  placement.takes_unasked_gpus = gang_best_.waste;
  placement.ranks.reserve(picks.size());
  QuotaUse use;
  for (size_t r = 0; r < picks.size(); ++r) {
    const Instance& in = state_.instances[picks[r].first];
    const Resources resources = state_.pools[in.pool].layout.ResourcesFor(picks[r].second);
    placement.ranks.push_back(RankPlacement{static_cast<int32_t>(r), in.spec->name, picks[r].second, resources});
    AddPod(use, resources);
  }
  if (quota != nullptr) ChargeQuota(*quota, use, GpuResource(f));
  if (run_team_ >= 0) teams_.Charge(run_team_, state_.fleets[f].spec->name, use.resources);
  // One run started on each instance it uses, with all of its blocks there.
  for (size_t r = 0; r < picks.size();) {
    const int32_t i = picks[r].first;
    int32_t blocks = 0;
    for (; r < picks.size() && picks[r].first == i; ++r) blocks += picks[r].second;
    capacity_.Take(i, blocks, end);
  }
  out_.placements.push_back(std::move(placement));
}

void Cycle::DiagnoseGang(const PendingRun& run, WaitReason& reason) {
  int64_t available = 0;
  CountUnavailable(false, reason, available);
  reason.needed = run.nodes;
  if (run.max_duration) {
    // Room now on instances that expire before the run would end.
    for (int32_t f : filter_.candidates) {
      if (!capacity_.TryGangIn(run, f, LifetimeRule{now_ + 1, true}, gang_try_)) continue;
      int64_t shortest = kNoExpiry;
      for (auto [i, blocks] : gang_try_.picks) shortest = std::min(shortest, state_.instances[i].expiry);
      reason.code = WaitCode::kLifetimeTooShort;
      reason.fleet = f;
      reason.slice_blocks = gang_try_.picks.front().second;
      reason.lifetime_left = Duration(std::max<int64_t>(0, shortest - now_));
      return;
    }
  }
  if (available == 0) {
    reason.code = WaitCode::kNoAvailableInstance;
    return;
  }
  reason.code = WaitCode::kNotEnoughSlices;
  reason.available = -1;
  for (int32_t f : filter_.candidates) {
    int64_t slots = 0;
    int64_t blocks = 0;
    for (int32_t p : state_.fleets[f].pools) {
      if (filter_.need[p] < 0) continue;
      slots += capacity_.open().Slots(p, filter_.need[p]);
      if (blocks == 0) blocks = filter_.need[p];
    }
    if (capacity_.WholeSlicesIn(f)) slots = capacity_.LargestIdle(f);  // whole slices: within one domain
    if (blocks > 0 && slots > reason.available) {
      reason.available = slots;
      reason.fleet = f;
      reason.slice_blocks = blocks;
      reason.slice_domain = capacity_.WholeSlicesIn(f);
    }
  }
  reason.available = std::max<int64_t>(reason.available, 0);
  if (reason.slice_domain) filter_.NameLevel(run, reason);
}

}  // namespace berth::scheduling::internal
