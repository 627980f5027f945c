#pragma once
// Preemption (issue 17): which placed runs a pending run may evict so that it fits now. Pure and
// deterministic like the rest of the core; the scheduling cycle asks it about a run that does not
// fit, and the engine carries the plan out.
//
// Rules (docs/scheduling.md, "Preemption"):
//  - Only instances of the run's candidate fleets whose preemption policy is LowerPriority, that
//    take new runs (Ready, not expired or retired) and, with maxDuration, live long enough.
//  - A victim is a placed run whose base priority (spec.priority) is strictly lower than the
//    preemptor's base priority: aging lifts a run's place in the queue, never its right to
//    preempt. So a victim's resubmission can never preempt its preemptor (no ping-pong). A run
//    placed for less than its instance's fleet's minRuntime is not a victim. A multi-node victim
//    is evicted whole.
//  - Single-node preemptor: one instance, and on it the cheapest set of victims that frees the
//    blocks it needs. Multi-node preemptor: `nodes` instances of one `placement: cluster` fleet
//    (in one topology domain when the fleet has a topologyKey; on a fleet with topology levels,
//    in one domain of the level the request's topology resolves to: required, only that level;
//    preferred, that level or the first one outward where some domain gives a plan), each
//    cleared completely; the cheapest instances of each domain first, the cheapest domain.
//    Never nodes scattered over domains the run could not use.
//  - Cost, compared in this order: fewest victims, then the lowest highest victim priority, then
//    the lowest sum of victim priorities, then the least work lost (the sum of the victims' time
//    since placement: the most recently started go first), then instance names.
//  - Never more than needed: no victim of a single-node plan can be spared, and a plan that needs
//    no victim is not a preemption (the run fits, or waits for another reason).

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/priority.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling {

// PlacedRunInfo (what the core knows about a placed run: base priority, placement time) lives in
// scheduling/snapshot.h, next to ClusterSnapshot::placed_runs.

struct PreemptionRequest {
  std::string id;
  int32_t priority = base::kDefaultPriority;   // base priority of the preemptor
  int32_t nodes = 1;
  Resources resources;                   // per node
  std::vector<std::string> fleets;       // candidate Fleet names; empty means any Fleet
  std::optional<Duration> max_duration;  // nullopt: off
  // Reclaim (issue 31, scheduling/teams.h): when set, the plan uses the fleets whose reclaim
  // policy is Borrowed (not LowerPriority ones) and its victims are the runs this accepts,
  // whatever their priority; minRuntime and the cost order are those of preemption.
  std::function<bool(std::string_view fleet, std::string_view run)> reclaimable;
  // A multi-node plan's topology (issue 48): on a fleet with levels, the nodes of one domain of
  // the level it resolves to (ResolveTopologyLevel, cluster_state.h); when preferred, the level
  // outward from it where some domain gives a plan first.
  TopologyRequest topology;
};

struct PreemptionPlan {
  std::string fleet;
  std::vector<std::string> instances;  // where the preemptor goes (rank order for multi-node)
  std::vector<std::string> victims;    // run ids, sorted
  // The cost as compared (exposed for tests and messages).
  int32_t max_victim_priority = -1;
  int64_t sum_victim_priority = 0;
  Duration work_lost{0};
};

// The cheapest plan, or nullopt when no allowed set of victims makes the run fit.
// O((I + R) log(I + R)) to index the snapshot, then O(instances of LowerPriority candidate
// fleets x their holders).
std::optional<PreemptionPlan> PlanPreemption(const ClusterSnapshot& snapshot,
                                             const std::vector<PlacedRunInfo>& placed,
                                             const PreemptionRequest& request, TimePoint now);

namespace internal {

// What PlanPreemption indexes, kept by the scheduling cycle across the runs of one cycle so that
// each plan costs a scan of the eligible instances, not a rebuild: the cycle reports its own
// placements, the instances a run may not use, and the victims already chosen.
// `snapshot` and `placed` must outlive it.
class PreemptionIndex {
 public:
  // `reclaim_fleets`: index the fleets with reclaim: Borrowed too (for reclaim requests).
  PreemptionIndex(const ClusterSnapshot& snapshot, const std::vector<PlacedRunInfo>& placed, TimePoint now,
                  bool reclaim_fleets = false);
  ~PreemptionIndex();
  PreemptionIndex(const PreemptionIndex&) = delete;
  PreemptionIndex& operator=(const PreemptionIndex&) = delete;

  std::optional<PreemptionPlan> Plan(const PreemptionRequest& request) const;

  // A run placed by the cycle: it holds `blocks` on `instance` (and counts as a run started
  // there); it is never a victim.
  void AddPlacement(std::string_view run, std::string_view instance, int32_t blocks);
  // An instance no plan may use (reserved, or kept for another run), or may again.
  void SetExcluded(std::string_view instance, bool excluded);
  // A run that is no victim any more (chosen already).
  void RemoveVictim(std::string_view run);

  struct State;  // opaque

 private:
  std::unique_ptr<State> state_;
};

}  // namespace internal

}  // namespace berth::scheduling
