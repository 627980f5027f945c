#pragma once
// Stage "order" of the cycle (scheduler.h): the sequence in which queued runs are considered.
// Queue order is the RunQueue's (effective priority with aging, then submission); with Teams
// (issue 31) one band of effective priority is considered twice: first every run that stays
// within its team's share, then the runs that would borrow, in fair-share order of their teams.
// Waiting runs are reported in queue order whatever order they were considered in.
//
// The stage decides only the order: what becomes of a run is the next stage's (Considerer), which
// the cycle implements (cycle.h). Like kube-scheduler's QueueSort plugin, it neither filters nor
// places.

#include <cstdint>

#include "scheduling/cycle_result.h"
#include "scheduling/run_queue.h"
#include "scheduling/teams.h"
#include "scheduling/types.h"

namespace berth::scheduling::internal {

// What the order stage hands each run to.
class Considerer {
 public:
  // Considers the run: places it or appends one entry to the result's waiting runs, or, when
  // `allow_borrow` is false and placing it would borrow from another team's share, does neither
  // and returns true (deferred: the order stage offers it again after its band).
  virtual bool Consider(const PendingRun& run, bool allow_borrow) = 0;

 protected:
  ~Considerer() = default;
};

// Offers every run of `queue` to `next` in the order above, and gives each waiting entry its
// effective priority and owner. `teams` inactive: plain queue order, borrowing always allowed.
void ConsiderInOrder(const RunQueue& queue, const TeamBook& teams, Considerer& next, CycleResult& result);

// The run (of team `team`) waits while a borrower of team `ahead`, earlier in the fair-share
// order, was placed: the reason names the two sibling teams that decide and their usage.
void NoteBehind(const TeamBook& teams, WaitReason& reason, int32_t team, int32_t ahead);

}  // namespace berth::scheduling::internal
