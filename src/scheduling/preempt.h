#pragma once
// Stage "preempt" of the cycle (scheduler.h): what a run that waits for capacity does about it.
//   - A nominee (a run that preempted in an earlier cycle, ClusterSnapshot::nominations) has its
//     instances kept for it; while its victims are still stopping it waits for them (no new plan:
//     never more victims than needed).
//   - Reclaim (issue 31): a run within its team's unused nominal share on a fleet with reclaim
//     Borrowed stops other teams' borrowing runs there.
//   - Preemption (issue 17): a run of higher priority stops lower-priority runs on LowerPriority
//     fleets (preemption.h's PlanPreemption chooses the victims).
// A plan's instances are kept for its run in the place stage's capacity (Capacity::Keep), so no
// other run of the cycle takes them; its victims are victims of no later plan. A gang of whole
// slices plans as a multi-node run of its shape on the `placement: cluster` fleets where its
// slices are whole instances; other gangs of slices and a whole single instance never plan.
// What kube-scheduler's PostFilter (DefaultPreemption) does, with the nominated node's room kept.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduling/cluster_state.h"
#include "scheduling/cycle_result.h"
#include "scheduling/filter.h"
#include "scheduling/place.h"
#include "scheduling/preemption.h"
#include "scheduling/room_filter.h"
#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/teams.h"

namespace berth::scheduling::internal {

// A run that instances are kept for: a nominee (its nomination from an earlier cycle) or a run
// that got a preemption plan in this cycle.
struct Holder {
  std::string_view run_id;
  const Nomination* nomination = nullptr;  // nullptr: a plan of this cycle
  std::vector<int32_t> instances;
};

class Preempter {
 public:
  // Plans see the snapshot's placed runs at `now_ms`, this cycle's placements (`out`) and what
  // `capacity` keeps and reserves; `filter` is the run being considered, `teams` its shares.
  Preempter(const ClusterSnapshot& snapshot, int64_t now_ms, const ClusterState& state, Capacity& capacity,
            const FleetFilter& filter, const TeamBook& teams, CycleResult& out);

  // Keeps the instances of the nominations whose nominee is queued for it.
  void ApplyNominations(const RunQueue& queue);
  // The holder of run `id`'s nomination; -1 when it has none.
  int32_t NomineeOf(std::string_view id) const {
    if (nominees_.empty()) return -1;
    auto it = nominees_.find(id);
    return it == nominees_.end() ? -1 : it->second;
  }
  // While nominee h is considered, the instances kept for it are open to it (Open); when it was
  // not placed they are kept for it again (Keep).
  void Open(int32_t h);
  void Keep(int32_t h);

  // What the run (of team `team`, -1: none) does about waiting for capacity: waits for its
  // nomination's victims, reclaims or preempts; false when none applies. `quota`: the run's
  // namespace quota, which must allow it on the plan's instances (nullptr: none). A new plan is
  // appended to the result's preemptions; `reason` says what the run waits for.
  bool Try(const PendingRun& run, int32_t nominee, int32_t team, const RoomFilter* quota, WaitReason& reason);

  // Whether some run may be preempted in this cycle (a LowerPriority fleet, a placed run).
  bool enabled() const { return preemption_enabled_; }
  // The run instance i is kept for.
  std::string_view HolderOf(int32_t i) const { return holders_[state_.instances[i].held_for].run_id; }
  // Instance i was reserved (or kept): plans no longer use it.
  void Refresh(int32_t i);

 private:
  void WaitForVictims(const Nomination& nomination, WaitReason& reason) const;
  bool TryReclaim(const PendingRun& run, int32_t team, const RoomFilter* quota, WaitReason& reason);
  bool TryPreempt(const PendingRun& run, bool nominee, const RoomFilter* quota, WaitReason& reason);
  // Keeps a plan's instances for the run and records the decision; false when the run's
  // namespace quota would refuse it there.
  bool Adopt(const PendingRun& run, PreemptionPlan plan, bool reclaim, const RoomFilter* quota, WaitReason& reason);
  // The candidate fleets a plan of the current run may use: all of them, or for a gang of slices
  // the `placement: cluster` ones that hold it as whole slices (there it preempts and reclaims as
  // a multi-node run of its shape: `nodes` instances of one domain, each cleared completely).
  void PlanFleets(const PendingRun& run, std::vector<int32_t>& out) const;
  // What a placement of the current run takes on one instance of pool p (whole instances for a
  // multi-node run), per instance.
  Resources UseOf(const PendingRun& run, int32_t pool) const;
  void Hold(int32_t i, int32_t holder);
  void SyncWork();

  const ClusterSnapshot& snapshot_;
  const int64_t now_;
  const ClusterState& state_;
  Capacity& capacity_;
  const FleetFilter& filter_;
  const TeamBook& teams_;
  CycleResult& out_;

  bool preemption_enabled_ = false;  // some fleet is LowerPriority and some run may be a victim
  bool reclaim_enabled_ = false;     // teams, a reclaim: Borrowed fleet and possible victims
  int32_t lowest_victim_priority_ = std::numeric_limits<int32_t>::max();
  std::vector<Holder> holders_;
  std::map<std::string_view, int32_t, std::less<>> nominees_;  // run id -> holder
  std::set<std::string, std::less<>> excluded_victims_;        // chosen already: never again
  // The cycle's working state as PlanPreemption sees it, built at its first use and kept
  // current: this cycle's placements hold blocks, reserved and kept instances are excluded,
  // victims chosen already are no victims.
  struct Work {
    std::unique_ptr<PreemptionIndex> index;
    size_t synced_placements = 0;
    // Request shape -> (capacity version, highest base priority that found no plan then). A
    // lower priority finds no plan either (fewer runs are victims).
    std::map<std::string, std::pair<uint64_t, int32_t>, std::less<>> failed;
  } work_;
  std::vector<int32_t> plan_fleets_;  // scratch: PlanFleets
};

}  // namespace berth::scheduling::internal
