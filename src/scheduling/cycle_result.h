#pragma once
// What one scheduling cycle decided: placements, the reservation, and why every other run waits.
//
// Reasons are structured (a code plus the numbers) so that a cycle over 10,000 waiting runs does
// not format 10,000 sentences; CycleResult::Explain turns one into a sentence on demand.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/boxed.h"
#include "scheduling/preemption.h"
#include "scheduling/quota.h"
#include "scheduling/types.h"

namespace berth::scheduling {

enum class WaitCode : uint8_t {
  // The run met no-capacity: it could fit once capacity frees up.
  kNotEnoughFreeBlocks,     // single-node: no instance has `needed` free blocks
  kNotEnoughIdleInstances,  // multi-node: no cluster fleet (domain) has `nodes` idle instances
  kLifetimeTooShort,        // room exists, but only on instances expiring before maxDuration ends
  kReserved,                // room exists, but only on instances reserved for an earlier run
  kNoAvailableInstance,     // every instance of its fleets is not ready, expired or retired
  // The run waits for its namespace's ResourceQuota (issue 17): its Pods would exceed it. It
  // neither fails nor holds the reservation, and does not block the runs behind it.
  kQuotaExceeded,
  // Preemption (issue 17). Capacity waits, not Unschedulable.
  // The run preempts: it waits for its victims (chosen this cycle, or in an earlier one and still
  // stopping) to stop; their instances are kept for it. API reason "Preempting".
  kPreempting,
  // Room exists, but only on instances kept for another (preempting) run: `preemptor`.
  kKeptForPreemptor,
  // Teams (issue 31): room exists, but the team's share does not allow it there: beyond its
  // borrowing limit, or more than the other teams lend. Like kQuotaExceeded it waits, never
  // fails and never holds the reservation. API reason "TeamShare".
  kTeamShare,
  // A gang of slices (PendingRun::whole_instances false): no fleet has room for `needed` slices
  // (of `slice_blocks` blocks) now; `available` is the most any candidate fleet has.
  kNotEnoughSlices,
  // Issue 47 (3): its team (or the team's parent) has spent a budget for a resource the run asks
  // for on every fleet it may use (TeamBudget): WaitReason::budget. Waits until the budget
  // refills, never fails, never holds the reservation, preempts and reclaims nothing (a budget wins
  // over the guaranteed share). API reason "BudgetExhausted".
  kBudgetExhausted,
  // The run is Unschedulable: no fleet as it is now could ever hold it.
  kNoFleet,                // no Fleet exists at all
  kFleetNotFound,          // none of the Fleets it names exists
  kNeedsClusterPlacement,  // multi-node, and none of its fleets has placement: cluster
  kNoValidInstance,        // its fleets have no instance with a valid block layout
  kTooLarge,               // no instance of its fleets covers the per-node request
  kTooManyNodes,           // more nodes than any (cluster fleet | topology domain) has instances
  kTooManySlices,          // a gang of slices larger than any of its fleets could hold if all idle
  // Its Pods' own grace period (PendingRun::grace_seconds, `needed`) is longer than the
  // maxGracePeriod of every fleet it may use (`available`: the largest, of `fleet`). API reason
  // "GracePeriodTooLong"; waits like the codes above until a fleet's cap is raised.
  kGracePeriodTooLong,
};

// True for the codes that make a run Unschedulable rather than merely waiting for capacity.
inline bool IsUnschedulable(WaitCode code) { return code >= WaitCode::kNoFleet; }

// The API reason for a waiting run: "Unschedulable", "QuotaExceeded", "TeamShare", "Preempting",
// "GracePeriodTooLong", "BudgetExhausted" or "NoCapacity".
inline std::string_view ApiReason(WaitCode code) {
  if (code == WaitCode::kQuotaExceeded) return "QuotaExceeded";
  if (code == WaitCode::kGracePeriodTooLong) return "GracePeriodTooLong";
  if (code == WaitCode::kTeamShare) return "TeamShare";
  if (code == WaitCode::kPreempting) return "Preempting";
  if (code == WaitCode::kBudgetExhausted) return "BudgetExhausted";
  return IsUnschedulable(code) ? "Unschedulable" : "NoCapacity";
}

// A code and the numbers behind it. Which fields matter depends on the code (see Explain).
// kTeamShare's numbers (WaitReason::share; teams.h, ShareCheck): verdict is ShareCheck::Verdict.
struct TeamShareWait {
  uint8_t verdict = 0;
  uint8_t resource = 0;
  int64_t needed = 0, used = 0, nominal = 0, may_borrow = 0;
  friend bool operator==(const TeamShareWait&, const TeamShareWait&) = default;
};

// A borrower's wait behind a team earlier in the fair-share order (WaitReason::behind): that team,
// its usage and weight, and the run's own team's.
struct BehindTeamWait {
  std::string team;
  double gpu_hours = 0;
  int32_t weight = 1;
  double own_gpu_hours = 0;
  int32_t own_weight = 1;
  friend bool operator==(const BehindTeamWait&, const BehindTeamWait&) = default;
};

// Why a run waits for its team's budget (WaitReason::budget).
struct BudgetWait {
  std::string team;
  TeamBudget budget;
  friend bool operator==(const BudgetWait&, const BudgetWait&) = default;
};

struct WaitReason {
  WaitCode code = WaitCode::kNotEnoughFreeBlocks;
  int32_t nodes = 1;
  Resources request;      // per node
  int32_t fleet = -1;     // index into CycleResult::fleets that the numbers are about, or -1
  int64_t needed = 0;     // blocks on one instance (single-node) or instances (multi-node)
  int64_t available = 0;  // largest free blocks | most idle instances | largest fleet or domain
  int64_t busy = 0;       // multi-node: busy instances of `fleet`
  // A gang of slices (PendingRun::whole_instances false, nodes > 1): `needed` counts slices, of
  // slice_blocks blocks each (on `fleet`'s instances).
  bool slice_gang = false;
  int64_t slice_blocks = 0;
  // Its slices are whole instances of `fleet`, kept in one topology domain: `available` counts
  // one domain's (Capacity::WholeSlicesIn, place.h).
  bool slice_domain = false;
  int64_t not_ready = 0;  // instances of its fleets that take no new run, by cause
  int64_t expired = 0;
  int64_t retired = 0;
  int64_t invalid = 0;
  std::optional<Duration> max_duration;
  Duration lifetime_left{0};  // kLifetimeTooShort: the most any instance with room has left
  std::string detail;         // kFleetNotFound only: the missing names, "a100, h100"
  // kQuotaExceeded only: which resource of the namespace's quota has no room, and the numbers.
  // This and the other rarely set parts below are boxed (base::Boxed, 8 bytes where not set):
  // every one of 100,000 waiting runs holds a WaitReason, and most wait for room, using none.
  base::Boxed<QuotaShortfall> quota;
  // kPreempting: the victims (run ids, sorted) and the instances kept for the run (`fleet` is
  // theirs); victims_stopping when they come from a nomination of an earlier cycle.
  std::vector<std::string> victims;
  std::vector<std::string> instances;
  bool victims_stopping = false;
  // kKeptForPreemptor: the run the room is kept for.
  std::string preemptor;
  // kPreempting: the victims are other teams' borrowing runs, reclaimed (issue 31): the engine
  // stops them with reason Reclaimed.
  bool reclaim = false;
  // Teams (issue 31): the run's team. kTeamShare: the resource without room and the numbers.
  std::string team;
  base::Boxed<TeamShareWait> share;
  // Any capacity wait of a borrower: a team earlier in the fair-share order took the room first
  // (its name and usage, against the run's team's).
  base::Boxed<BehindTeamWait> behind;
  // kBudgetExhausted (issue 47): the spent budget, whose team it is, and when it refills (the
  // epoch: not known). Boxed: set for few runs, held by every waiting one (8 bytes, not 104).
  base::Boxed<BudgetWait> budget;
  friend bool operator==(const WaitReason&, const WaitReason&) = default;
  // The numbers are about the domains of one topology level of `fleet` (issue 48: a run required
  // at a level of a fleet with `topology` levels): that level's key ("" otherwise: a topologyKey
  // names itself through FleetRef). level_missing: the fleet has no such level (kTooManyNodes).
  std::string level;
  bool level_missing = false;
};

struct RankPlacement {
  int32_t rank = 0;
  std::string instance;
  int32_t blocks = 0;
  Resources resources;  // what the Pod gets: blocks * the instance's per-block resources
};

struct Placement {
  std::string run_id;
  std::string fleet;
  std::vector<RankPlacement> ranks;  // rank order; one entry for a single-node run
  // The run asked for no GPU yet its block carries GPUs: none of its fleets had room without
  // GPUs now (or it names only GPU fleets). Its Scheduled message says so.
  bool takes_unasked_gpus = false;
};

// EASY backfill: the first run in queue order that did not fit holds these instances. Later runs
// use them only when their maxDuration ends at or before earliest_start.
struct Reservation {
  std::string run_id;
  std::string fleet;
  std::vector<std::string> instances;     // sorted by name
  std::optional<TimePoint> earliest_start;  // nullopt when some blocker has no known end
};

// A run that preempts (issue 17), decided this cycle: the engine stops plan.victims and records
// the nomination (ClusterSnapshot::nominations) so that later cycles keep plan.instances for it.
struct PreemptionDecision {
  std::string run_id;
  PreemptionPlan plan;
  // A reclaim (issue 31): the victims are other teams' borrowing runs; their reason is Reclaimed.
  bool reclaim = false;
};

struct WaitingRun {
  std::string run_id;
  WaitReason reason;
  int32_t effective_priority = 0;  // its priority in the queue this cycle (aging included)
  const void* owner = nullptr;     // PendingRun::owner, as queued
  bool unschedulable() const { return IsUnschedulable(reason.code); }
};

struct FleetRef {
  std::string name;
  std::string topology_key;
};

// How a status read in the namespace of run `reader` names the runs `others` ("namespace/name"
// ids), issue 44: whoever reads a run's status may see only its namespace, so a run of another
// namespace is not named. RunNameFor: the id when it is of the reader's namespace, else "a run of
// another namespace". RunNamesFor: "ns/a, ns/b" and, for the others, "a run of another namespace"
// or "3 runs of other namespaces" (at most 5 names, then "and N more").
std::string RunNameFor(std::string_view reader, std::string_view other);
std::string RunNamesFor(std::string_view reader, const std::vector<std::string>& others);

struct CycleResult {
  TimePoint now{};
  std::vector<Placement> placements;      // in queue order
  std::vector<WaitingRun> waiting;        // every queued run not placed, in queue order
  std::optional<Reservation> reservation;
  std::vector<PreemptionDecision> preemptions;  // in queue order; each run also waits kPreempting
  std::vector<FleetRef> fleets;           // the snapshot's fleets by name; WaitReason::fleet

  // One sentence with the numbers, e.g.
  //   "needs 3 blocks on one instance; largest free is 2 (fleet cpu)"
  //   "needs 2 idle instances with 8 GPUs in a cluster fleet; fleet a100 has 1 idle, 3 busy"
  //   "preempting 2 runs (ns/a, ns/b) on instance n1 (fleet a100); starts when their Pods have stopped"
  // The run holding the reservation gets what it holds and when it expects to start appended.
  // Other runs are named only when of the waiting run's namespace (RunNameFor).
  std::string Explain(const WaitingRun& waiting) const;

  // How many runs wait, by (fleet name the reason is about, or "none"; ApiReason): what the
  // berth_pending_runs metric shows. Counted by runs of equal neighbours (100,000 runs waiting for
  // one fleet make one map entry, not 100,000 lookups with two strings each).
  std::map<std::pair<std::string, std::string>, int64_t> CountWaiting() const;
};

}  // namespace berth::scheduling
