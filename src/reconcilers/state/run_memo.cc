#include "reconcilers/state/run_memo.h"

#include <algorithm>

namespace berth::reconcilers {


void RunMemo::Read() {
  // What was decided at the object held before (see "What is kept between passes").
  quiet = queueable = current = false;
  placed.Reset();
  has_preemption = run->status.preemption.has_value();
  shown_position = run->meta.deleting ? std::nullopt : run->status.queue_position;
  wait_since = run->meta.created;
  if (run->status.resubmissions > 0) {
    if (auto back = PointOf(run->status.retry_after)) wait_since = std::max(wait_since, *back);
  }
  const auto& retry = run->spec.retry;
  const bool retry_nc = retry && retry->on_no_capacity;
  gives_up_at.reset();
  if (retry_nc && retry->duration) gives_up_at = run->meta.created + *retry->duration;
  // When a waiting run fails instead (EndsWaiting): at once without retry on no-capacity, or when
  // its retry.duration has passed. A preempted run sent back to the queue waits for capacity
  // whatever its no-capacity retry says (its capacity was taken on purpose; a reclaimed one too), within its retry
  // duration.
  ends_waiting_at.reset();
  if ((run->status.phase == Phase::kPending) && (run->status.reason == Reason::kPreempted || run->status.reason == Reason::kReclaimed) && retry) {
    if (retry->duration) ends_waiting_at = run->meta.created + *retry->duration;
  } else if (!retry_nc) {
    ends_waiting_at = k8s::TimePoint::min();
  } else if (retry->duration) {
    ends_waiting_at = run->meta.created + *retry->duration;
  }
}

}  // namespace berth::reconcilers
