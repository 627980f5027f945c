#pragma once
// Records core/v1 Events against objects, off the caller's thread: Record() only queues; a
// background thread posts. When the API is slow the queue is bounded and the oldest events are
// dropped (Events are best-effort in Kubernetes too).
//
// Normal Events are also rate limited (a token bucket: `normal_burst`, refilled at
// `normal_per_second`): under a burst they are dropped rather than posted. berth's Normal Events
// (Scheduled, Started, Succeeded, ...) repeat what the object's status and conditions already say,
// so under load they would only add API writes; one run at a time, every one is posted. Warnings
// are never rate limited.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "k8s/client.h"
#include "k8s/clock.h"

namespace berth::k8s {

struct ObjectReference {
  std::string api_version, kind, ns, name, uid;
};

class EventRecorder {
 public:
  EventRecorder(ClientPtr client, const Clock& clock, std::string component, size_t max_queued = 1000,
                double normal_per_second = 10, double normal_burst = 100);
  ~EventRecorder();

  // type is "Normal" or "Warning"; reason is CamelCase; message one sentence.
  void Record(const ObjectReference& obj, std::string_view type, std::string_view reason,
              const std::string& message);
  // Blocks until every queued event was posted (or dropped); for tests and shutdown.
  void Flush();
  uint64_t dropped() const;
  uint64_t posted() const;

 private:
  struct Pending {
    ObjectReference obj;
    std::string type, reason, message;
    TimePoint at;
  };
  void Loop();
  void Post(const Pending& e);

  ClientPtr client_;
  const Clock& clock_;
  std::string component_;
  size_t max_queued_;
  double normal_per_second_, normal_burst_;
  double normal_tokens_;               // guarded by mu_
  base::MonoTime normal_refilled_at_;  // guarded by mu_
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;
  bool stopped_ = false;
  uint64_t dropped_ = 0;
  uint64_t posted_ = 0;
  std::thread thread_;
};

}  // namespace berth::k8s
