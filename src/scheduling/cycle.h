#pragma once
// The working state of one scheduling cycle (scheduler.h) and the class that runs it. Internal to
// src/scheduling: only scheduler.cc and the cycle_*.cc files include it. Its methods live in files
// by concern:
//   cycle.cc              the running runs, quotas and indexes on the cluster state
//   cycle_consider.cc     one run: structure check, quota, single- or multi-node placement, wait
//   cycle_placement.cc    single- and multi-node placements: recording them, charging quota and share
//   cycle_diagnosis.cc    why a run that did not fit waits (the WaitCode and its numbers)
//   cycle_reservation.cc  the EASY-backfill reservation: taking the one reserve.h chose
//   cycle_teams.cc        teams: a wait for the team's share
//   cycle_gang.cc         gangs of slices: placing, diagnosis
// The stages apart from it, each with its own interface and tests:
//   cluster_state.h       fleets, pools, topology domains and instances, from the snapshot
//   filter.h              the run's candidate fleets, and whether it could ever fit them
//   reserve.h             when the instances a waiting run needs free up (the reservation's choice)
//   place.h               what is free (the capacity indexes) and the searches on it
//   room_filter.h         the quota and team share each room a search would take is checked against
//   preempt.h             nominations, kept instances, reclaim and preemption plans
//   order.h               the order in which runs are considered (queue, then teams' bands)

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduling/block_layout.h"
#include "scheduling/cluster_state.h"
#include "scheduling/cycle_result.h"
#include "scheduling/filter.h"
#include "scheduling/order.h"
#include "scheduling/place.h"
#include "scheduling/preempt.h"
#include "scheduling/quota.h"
#include "scheduling/reserve.h"
#include "scheduling/room_filter.h"
#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/teams.h"
#include "scheduling/types.h"

namespace berth::scheduling::internal {

// What Consider left to do: nothing, or possibly the reservation; kDeferred: it would borrow
// from other teams, which it may only after its band of effective priority (teams.h).
enum class Outcome : uint8_t { kPlaced, kWaits, kWaitsMayReserve, kDeferred };

// One cycle's working state. Instances and fleets live in name order, so comparing indices is
// comparing names.
class Cycle final : public Considerer {
 public:
  Cycle(const ClusterSnapshot& snapshot, TimePoint now, CycleResult& out);
  // Keeps the instances of the nominations whose nominee is queued for it.
  void ApplyNominations(const RunQueue& queue) { preempt_.ApplyNominations(queue); }
  // Issue 47 (5): which teams compete for the fleets no share names (TeamBook::NoteQueued).
  void NoteQueued(const RunQueue& queue) { teams_.NoteQueued(queue); }
  bool reuse_equal_shapes = true;

  // What the order stage (order.h) offers each run to. Teams (issue 31): returns true when the
  // run was deferred (it would borrow, and borrowing was not allowed yet: it is considered again
  // after its band, in fair-share order).
  bool Consider(const PendingRun& run, bool allow_borrow) override;
  const TeamBook& teams() const { return teams_; }

 private:
  void Consider(const PendingRun& run);
  Outcome ConsiderRun(const PendingRun& run, int32_t nominee);
  // The run waits for `reason` (moved into out_.waiting).
  // Issue 47 (3): takes the fleets where the run's team (or its parent) has spent a budget for a
  // resource the run asks for out of its candidates; true when none is left (`reason`:
  // kBudgetExhausted, the first spent budget). Such a run neither reserves, preempts nor reclaims.
  bool DropSpentFleets(const PendingRun& run, WaitReason& reason);
  Outcome Wait(const PendingRun& run, WaitReason& reason);
  // Placement of a run that passed the structure and quota checks; nullopt when it waits for
  // capacity (`reason` says why, not yet pushed).
  std::optional<Outcome> ConsiderSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill, int64_t end,
                                        WaitReason& reason);
  // A gang of slices (IsSliceGang, cycle_gang.cc): `nodes` slices in one fleet, best fit.
  std::optional<Outcome> ConsiderGang(const PendingRun& run, NamespaceQuota* quota, const LifetimeRule& rule,
                                      int64_t end, WaitReason& reason);
  void PlaceGang(const PendingRun& run, NamespaceQuota* quota, int64_t end);
  void DiagnoseGang(const PendingRun& run, WaitReason& reason);
  std::optional<Outcome> ConsiderMulti(const PendingRun& run, NamespaceQuota* quota, const LifetimeRule& rule,
                                       bool backfill, int64_t end, WaitReason& reason);
  // A run that waits for capacity: it waits for its victims, reclaims, preempts or may reserve.
  Outcome WaitForCapacity(const PendingRun& run, int32_t nominee, const NamespaceQuota* quota, WaitReason& reason);
  // When the team's share skipped room the run had: kDeferred (it would borrow) or it waits
  // kTeamShare (the reason is pushed); nullopt when the share skipped nothing.
  std::optional<Outcome> ShareWait(const PendingRun& run, WaitReason& reason);
  bool FindKept(int32_t nodes, const LifetimeRule& rule, bool backfill, int32_t& fleet,
                std::string_view& preemptor);

  void ApplyRunning();
  void BuildQuotas();
  // The namespace quota of a run (nullptr: unlimited), and what a placement of it would use.
  NamespaceQuota* QuotaOf(std::string_view run_id);
  QuotaUse UseOn(const Instance& in, int32_t blocks) const;
  QuotaUse WholeInstancesUse(const std::vector<CapacityIndex::Key>& chosen) const;
  const std::string& GpuResource(int32_t fleet) const { return state_.fleets[fleet].spec->gpu_resource; }
  static void SetQuotaReason(const QuotaShortfall& s, WaitReason& reason);

  // The current run's quota and team share, as the place stage asks them (room_filter.h).
  QuotaAndShare RoomOf(const NamespaceQuota* quota) const {
    return QuotaAndShare(state_, quota, teams_, run_team_, allow_borrow_);
  }
  // Single-node best fit over the eligible instances of the candidate fleets (scheduler.h).
  bool PlaceSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill, int64_t end);
  void PlaceSingleOn(const PendingRun& run, const SingleFit& best, NamespaceQuota* quota, int64_t end);
  void PlaceMulti(const PendingRun& run, int32_t fleet, std::vector<CapacityIndex::Key>& chosen,
                  int64_t end);
  void DiagnoseSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                      WaitReason& reason);
  void DiagnoseMulti(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                     WaitReason& reason);
  // DiagnoseSingle's steps: each sets the reason and returns true when it applies.
  bool FitsReserved(const LifetimeRule& rule, WaitReason& reason) const;
  bool FitsKept(const LifetimeRule& rule, WaitReason& reason) const;
  bool LifetimeTooShort(WaitReason& reason) const;
  void SetNotEnoughFreeBlocks(WaitReason& reason) const;
  void CountUnavailable(bool cluster_only, WaitReason& reason, int64_t& available) const;

  // The reservation for a run that waits for capacity (scheduler.h), when some instances will
  // ever free up for it.
  void TryReserve(const PendingRun& run);
  void Reserve(const PendingRun& run, int32_t fleet, std::vector<int32_t> chosen, int64_t start);

  const ClusterSnapshot& snapshot_;
  const int64_t now_;
  CycleResult& out_;

  // Teams (issue 31): the shares, charged with this cycle's placements.
  TeamBook teams_;
  bool allow_borrow_ = true;
  int32_t run_team_ = -1;  // the current run's team
  bool deferred_ = false;  // the last Consider deferred its run

  // Fleets, pools, domains and instances (cluster_state.h); placements change what is free.
  ClusterState state_;
  std::vector<BusyEntry> running_entries_;  // from snapshot.running

  // Namespace quotas: their usage grows with this cycle's placements.
  std::map<std::string, NamespaceQuota, std::less<>> quotas_;

  bool has_reservation_ = false;
  int64_t reservation_start_ = kUnknownTime;

  // The last run considered, when it waited and changed nothing (the capacity's version as it
  // was): the next run of its shape waits for the same reason (see Schedule).
  struct LastWait {
    const PendingRun* run = nullptr;
    size_t waiting = 0;  // its entry in out_.waiting
    uint64_t version = 0;
  } last_wait_;
  static bool SameShape(const PendingRun& a, const PendingRun& b) {
    return a.nodes == b.nodes && a.whole_instances == b.whole_instances && a.resources == b.resources &&
           a.max_duration == b.max_duration && a.grace_seconds == b.grace_seconds &&
           a.fleets == b.fleets && NamespaceOf(a.id) == NamespaceOf(b.id) && a.quota_counted == b.quota_counted;
  }

  // The current run's candidate fleets and the blocks it needs per pool (filter.h).
  FleetFilter filter_;
  // What is free, and the placement searches (place.h).
  Capacity capacity_;
  // Nominations, kept instances, reclaim and preemption (preempt.h).
  Preempter preempt_;

  // Scratch, reused across runs.
  std::vector<CapacityIndex::Key> chosen_;
  std::vector<CapacityIndex::Key> probe_;
  GangPlan gang_try_, gang_best_;
};

}  // namespace berth::scheduling::internal
