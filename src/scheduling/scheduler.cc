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
  cycle.NoteQueued(queue);
  result.waiting.reserve(queue.size());
  internal::ConsiderInOrder(queue, cycle.teams(), cycle, result);
  return result;
}

}  // namespace berth::scheduling
