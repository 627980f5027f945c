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
//    FindMulti picks them (WholeSlicesIn).
//  - maxRunsPerInstance: a gang counts as one run on each instance it uses, however many of its
//    ranks are there (runs_started grows by one per instance).
//  - Quota and team shares are charged the sum of its slices.
//  - Preemption and reclaim (cycle_consider.cc WaitForCapacity): a gang of whole slices preempts
//    and reclaims on the `placement: cluster` fleets where its slices are whole instances (with a
//    topologyKey or not) exactly as a multi-node run of its shape (PreemptionFleets: `nodes`
//    instances of one domain, each cleared completely, PlanPreemption's cost order). Other gangs
//    wait without preempting or reclaiming.
//  - The first gang that waits for capacity without a plan may hold the reservation: the
//    instances whose room for its slices frees soonest.
#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "scheduling/cycle.h"

namespace berth::scheduling::internal {

namespace {

Resources Sum(const Resources& a, const Resources& b) {
  return Resources{a.cpu_millis + b.cpu_millis, a.memory_bytes + b.memory_bytes, a.gpus + b.gpus};
}

}  // namespace

std::optional<Outcome> Cycle::ConsiderGang(const PendingRun& run, NamespaceQuota* quota, const LifetimeRule& rule,
                                           int64_t end, WaitReason& reason) {
  quota_skip_.reset();
  if (FindGang(run, quota, rule, true)) {
    PlaceGang(run, quota, end);
    return Outcome::kPlaced;
  }
  if (quota_skip_) {
    SetQuotaReason(*quota_skip_, reason);
    return Wait(run, reason);
  }
  if (auto outcome = ShareWait(run, reason)) return outcome;
  DiagnoseGang(run, reason);
  return std::nullopt;
}

bool Cycle::WholeSlicesIn(int32_t f) const { return state_.fleets[f].topology && SlicesAreWholeIn(f); }

bool Cycle::SlicesAreWholeIn(int32_t f) const {
  const Fleet& fleet = state_.fleets[f];
  bool any = false;
  for (int32_t p : fleet.pools) {
    const int32_t need = filter_.need[p];
    if (need < 0) continue;
    if (need != state_.pools[p].layout.total_blocks()) return false;
    any = true;
  }
  return any;
}

bool Cycle::AnyWholeSlices() const {
  return std::any_of(filter_.candidates.begin(), filter_.candidates.end(),
                     [this](int32_t f) { return state_.fleets[f].cluster && SlicesAreWholeIn(f); });
}

void Cycle::PreemptionFleets(const PendingRun& run, std::vector<int32_t>& out) const {
  out.clear();
  for (int32_t f : filter_.candidates) {
    if (!IsSliceGang(run) || (state_.fleets[f].cluster && SlicesAreWholeIn(f))) out.push_back(f);
  }
}

bool Cycle::TryGangIn(const PendingRun& run, int32_t f, const LifetimeRule& rule, GangPlan& plan) {
  plan.fleet = f;
  plan.picks.clear();
  plan.waste = false;
  plan.whole = 0;
  if (WholeSlicesIn(f)) {
    // Idle instances of one domain: the one with the fewest that holds the gang (ties by value).
    if (open_.MaxIdleInDomain(f) < run.nodes) return false;
    const auto& domains = open_.DomainsByIdle(f);
    for (auto it = domains.lower_bound({run.nodes, std::numeric_limits<int32_t>::min()}); it != domains.end(); ++it) {
      if (!CollectInDomain(it->second, run.nodes, rule, false, scratch_)) continue;
      for (const CapacityIndex::Key& key : scratch_) {
        const int32_t i = key.second;
        const BlockLayout& layout = state_.pools[state_.instances[i].pool].layout;
        plan.waste |= run.resources.gpus <= 0 && layout.ResourcesFor(layout.total_blocks()).gpus > 0;
        plan.picks.emplace_back(i, layout.total_blocks());
      }
      plan.whole = run.nodes;
      return true;
    }
    return false;
  }
  bool complete = true;
  for (int32_t k = 0; k < run.nodes; ++k) {
    SingleFit best;
    for (int32_t p : state_.fleets[f].pools) {
      const int32_t need = filter_.need[p];
      if (need < 0 || open_.LargestFree(p) < need) continue;
      const CapacityIndex::Fit fit = open_.BestFit(p, need, rule);
      if (fit.instance < 0) continue;
      SingleFit candidate;
      candidate.fit = fit;
      candidate.need = need;
      candidate.left = fit.free - need;
      candidate.whole = fit.free == state_.pools[p].layout.total_blocks();
      candidate.waste = run.resources.gpus <= 0 && state_.pools[p].layout.ResourcesFor(need).gpus > 0;
      if (best.fit.instance < 0 || candidate.Beats(best, rule)) best = candidate;
    }
    if (best.fit.instance < 0) {
      complete = false;
      break;
    }
    const int32_t i = best.fit.instance;
    plan.waste |= best.waste;
    if (best.whole) ++plan.whole;
    plan.picks.emplace_back(i, best.need);
    Unindex(i);
    state_.instances[i].free -= best.need;
    Index(i);
  }
  // Put the working state back (newest first: each step sees the values its Index saw).
  for (auto it = plan.picks.rbegin(); it != plan.picks.rend(); ++it) {
    Unindex(it->first);
    state_.instances[it->first].free += it->second;
    Index(it->first);
  }
  return complete;
}

bool Cycle::FindGang(const PendingRun& run, NamespaceQuota* quota, const LifetimeRule& rule, bool check_room) {
  gang_best_.fleet = -1;
  for (int32_t f : filter_.candidates) {
    if (!TryGangIn(run, f, rule, gang_try_)) continue;
    if (gang_best_.fleet >= 0 && std::pair(gang_try_.waste, gang_try_.whole) >= std::pair(gang_best_.waste, gang_best_.whole)) {
      continue;
    }
    if (check_room) {
      QuotaUse use;
      for (auto [i, blocks] : gang_try_.picks) {
        use.resources = Sum(use.resources, state_.pools[state_.instances[i].pool].layout.ResourcesFor(blocks));
        ++use.pods;
      }
      if (quota != nullptr) {
        if (auto s = CheckQuota(quota, use, GpuResource(f))) {
          if (!quota_skip_) quota_skip_ = std::move(s);
          continue;
        }
      }
      if (run_team_ >= 0) {
        const ShareCheck share = teams_.Check(run_team_, state_.fleets[f].spec->name, use.resources, allow_borrow_);
        if (!share.fits()) {
          if (!share_skip_) {
            share_skip_ = share;
            share_fleet_ = f;
          }
          continue;
        }
      }
    }
    std::swap(gang_best_, gang_try_);
  }
  return gang_best_.fleet >= 0;
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
    use.resources = Sum(use.resources, resources);
    ++use.pods;
  }
  if (quota != nullptr) ChargeQuota(*quota, use, GpuResource(f));
  if (run_team_ >= 0) teams_.Charge(run_team_, state_.fleets[f].spec->name, use.resources);
  // One run started on each instance it uses, with all of its blocks there.
  for (size_t r = 0; r < picks.size();) {
    const int32_t i = picks[r].first;
    int32_t blocks = 0;
    for (; r < picks.size() && picks[r].first == i; ++r) blocks += picks[r].second;
    Take(i, blocks, end);
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
      if (!TryGangIn(run, f, LifetimeRule{now_ + 1, true}, gang_try_)) continue;
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
      slots += open_.Slots(p, filter_.need[p]);
      if (blocks == 0) blocks = filter_.need[p];
    }
    if (WholeSlicesIn(f)) slots = open_.MaxIdleInDomain(f);  // whole slices: within one domain
    if (blocks > 0 && slots > reason.available) {
      reason.available = slots;
      reason.fleet = f;
      reason.slice_blocks = blocks;
      reason.slice_domain = WholeSlicesIn(f);
    }
  }
  reason.available = std::max<int64_t>(reason.available, 0);
}

}  // namespace berth::scheduling::internal
