#pragma once
// Issue 47: the queue's last 24 hours kept by the controller for the dashboard's Usage page
// (base/queue_history.h: per minute the queue's longest length and the starts with their median and
// longest wait), fed by the engine through the metrics (every pass' count of waiting runs, every
// admission's wait) and served by the queue API as GET .../usage/queue (queue_api.h). In memory
// only: a restart or a failover starts it empty (the answer's recordingSince says since when).
// Thread-safe.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

#include "base/queue_history.h"
#include "k8s/clock.h"

namespace berth::controller {

class QueueSeries {
 public:
  explicit QueueSeries(const k8s::Clock& clock) : clock_(clock) {}

  void SamplePending(int64_t pending);
  void NoteStart(std::chrono::milliseconds wait);

  // {"kind":"QueueHistory","apiVersion":"queue.berth.dev/v1alpha1","leader","generatedAt",
  //  "recordingSince" (null while nothing was recorded),"stepSeconds":60,
  //  "minutes":[{"at","pending" (absent: no sample in that minute),"starts","medianWaitSeconds",
  //              "maxWaitSeconds"}]}                        (the minutes with a sample or a start, oldest first)
  std::string Json(bool leader) const;

 private:
  const k8s::Clock& clock_;
  mutable std::mutex mu_;
  base::QueueHistory history_;
};

}  // namespace berth::controller
