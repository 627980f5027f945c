#pragma once
// One scheduling cycle (api.md, "Placement and capacity"): given the cluster and the queue at
// `now`, decide which runs start where, which run holds the reservation, and why every other run
// waits. Pure and deterministic: the same snapshot (in any input order), queue and `now` give the
// same result.
//
// Rules, in short (docs/scheduling.md has the full list and the reasons):
//  - Runs are considered in queue order. A run that fits is placed; one that does not fit does
//    not block the runs behind it, except through the reservation.
//  - Single-node: a run that asks for no GPU takes a block without GPUs whenever one fits (and
//    the placement says when it could not); then best fit over the eligible instances of all
//    candidate fleets: a partly used
//    instance before a whole idle one, then the fewest blocks left over, then lifetime (with
//    maxDuration the soonest-expiring instance that still covers it, without the longest-lived),
//    then instance name.
//  - Multi-node: `nodes` whole idle instances of one `placement: cluster` fleet, within one
//    topology domain when the fleet has a topologyKey (instances without the label take no
//    multi-node run); the fleet/domain with the fewest idle instances that can hold it wins
//    (ties by name); all or nothing; ranks in instance-name order.
//  - Gang of slices (PendingRun::whole_instances false, nodes > 1; cycle_gang.cc): `nodes` slices
//    of the single-node size, all or nothing in one fleet (any placement), several may share an
//    instance; picked one by one with the single-node best fit on open instances; the fleet that
//    takes no GPU unasked, then breaks into the fewest idle instances, then by name; ranks in
//    instance-name order; one run started per instance used (maxRunsPerInstance). Slices that are
//    whole instances of a cluster fleet with a topologyKey stay in one domain (as multi-node);
//    slices that are whole instances of any cluster fleet preempt and reclaim there as a
//    multi-node run of their shape; other gangs never preempt or reclaim. No gang backfills onto reserved instances; one without a plan may hold the reservation.
//  - whole_instances true with nodes 1: one whole idle instance (any fleet), like a single-node
//    run that needs every block; it never preempts or reclaims.
//  - Lifetime: with maxDuration only instances with expires_at >= now + maxDuration. NotReady,
//    Expired, Retired and Invalid instances take nothing new. Placements update the working state
//    (busy blocks and runs started) for the rest of the cycle.
//  - Reservation (EASY backfill): the first run that does not fit, is not Unschedulable and has
//    some instance that will ever free up for it, reserves the instances that free soonest
//    (from running runs' expected ends). Later runs may use reserved instances only when
//    now + their maxDuration <= the reservation's earliest start (never without maxDuration,
//    never when that start is unknown); such runs prefer reserved room to open room.
//  - Preemption (issue 17; docs/scheduling.md, "Preemption in the cycle"):
//     * Nominations: the instances of a nomination whose nominee is queued are kept for the
//       nominee: no other run is placed there (it waits kKeptForPreemptor when only they would
//       do), plans for preemption and the reservation never include them, and the nomination's
//       victims are never chosen again. The nominee may be placed on them or anywhere else it
//       fits; once placed, what is left of them is open to the runs behind it.
//     * A run that waits for capacity (any code but the Unschedulable ones and kQuotaExceeded)
//       and is a nominee with victims_stopping waits kPreempting: no new plan, no new victims.
//       Any other such run with a LowerPriority candidate fleet asks PlanPreemption (base
//       priority, not the aged one) on the cycle's working state: placements of this cycle count
//       as busy and are never victims; instances reserved for an earlier run or kept for another
//       run, and runs already chosen as victims, are left out. A plan whose placement its
//       namespace's quota would refuse is dropped (no eviction for a run that could not start).
//       With a plan, the run waits kPreempting, CycleResult::preemptions gets the decision, and
//       its instances are kept for it for the rest of the cycle.
//     * A run that preempts (or waits for its victims) never holds the reservation: it goes to
//       the first blocked run without a plan.
//  - Teams (issue 31; scheduling/teams.h, docs/scheduling.md "Teams"), only when the snapshot has
//    Teams: room is taken only where the run's team's share allows it (else kTeamShare); per
//    effective priority, runs that need not borrow go first in queue order, then the borrowers by
//    their teams' fair-share order; a run within its team's unused nominal share that waits for
//    capacity first reclaims other teams' borrowing runs (PreemptionDecision::reclaim), then
//    preempts by priority. Without Teams the cycle is exactly as described above.
//
// Performance: O(F + I log I + R) to build the working state, then per run O(pools * (levels/64
// + log I)) for single-node and O(domains + nodes log I) for multi-node runs, with early
// cut-offs when a fleet's largest free slot or idle count is too small. Preemption costs nothing
// when no fleet is LowerPriority or no placed run may be a victim (ClusterSnapshot::placed_runs
// empty). Otherwise the victim index (internal::PreemptionIndex) is built once per cycle,
// O((I + R) log(I + R)), and kept current; each waiting run with a LowerPriority candidate fleet
// and a base priority above the lowest victim's then costs a scan of the eligible instances and
// their holders, unless a request of the same shape and at least its priority already found no
// plan in the same working state. Measured on the bench world (10,000 pending runs, 5,000
// instances, ~7,000 running runs, 6,600 runs waiting): ~8 ms with no LowerPriority fleet (as
// before), ~0.13 s with 3 of 10 fleets LowerPriority (708 plans), ~0.65 s with all 10 (2,266
// plans, ~0.1 ms a plan).

#include "scheduling/cycle_result.h"
#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling {

// Runs one cycle. Calls queue.AdvanceTo(now) so aging is current and otherwise leaves the queue
// alone: the caller removes placed runs once their placement is written (and keeps them queued
// if the write fails).
//
// Runs of one shape in a row: a run that waits changed nothing in the cycle, so the next run in
// the queue with the same request (nodes, resources, fleets, maximum duration, namespace) waits
// for the same reason; it gets a copy of it without being considered again (100,000 runs waiting
// for one full fleet cost one consideration, not 100,000). Not with preemption on (the outcome
// reads the run's priority) nor for a nominee. `reuse_equal_shapes` = false considers every
// run (the tests compare both).
//
// `recycled`: an earlier result whose buffers this one reuses (its content is dropped): 100,000
// waiting runs are 30-40 MB, which the allocator would otherwise take fresh from the kernel (and
// fault in page by page) every cycle.
CycleResult Schedule(const ClusterSnapshot& snapshot, RunQueue& queue, TimePoint now, bool reuse_equal_shapes = true,
                     CycleResult recycled = {});

}  // namespace berth::scheduling
