#include "scheduling/scheduler.h"

#include <utility>

#include "scheduling/cycle.h"

namespace berth::scheduling {

CycleResult Schedule(const ClusterSnapshot& snapshot, RunQueue& queue, TimePoint now, bool reuse_equal_shapes,
                     CycleResult recycled) {
  queue.AdvanceTo(now);
  CycleResult result = std::move(recycled);
  result.placements.clear();
  result.waiting.clear();
  result.reservation.reset();
  result.preemptions.clear();
  result.fleets.clear();
  internal::Cycle cycle(snapshot, now, result);
  cycle.reuse_equal_shapes = reuse_equal_shapes;
  cycle.ApplyNominations(queue);
  result.waiting.reserve(queue.size());
  if (cycle.teams_active()) {
    internal::ConsiderWithTeams(cycle, queue, result);
    return result;
  }
  for (RunQueue::Item item : queue) {
    const size_t waiting = result.waiting.size();
    cycle.Consider(item.run);
    if (result.waiting.size() > waiting) {
      result.waiting.back().effective_priority = item.effective_priority;
      result.waiting.back().owner = item.run.owner;
    }
  }
  return result;
}

}  // namespace berth::scheduling
