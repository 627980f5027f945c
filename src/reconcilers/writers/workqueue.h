#pragma once
// The controller workqueue, with client-go's semantics (workqueue.Type + DelayingQueue +
// RateLimitingQueue with an exponential per-key limiter) in one thread-safe class.
//
// Keys are object keys ("namespace/name"). The contract workers rely on:
//   - Dedup: a key added any number of times before a worker takes it is handed out once.
//   - Exclusivity: a key is never held by two workers. A key added while a worker holds it is
//     handed out again only after that worker calls Done(key).
//   - Every Add is followed by a Get that returns the key (unless the queue shuts down first), so
//     a level-based reconciler never misses a change.
//
// Typical worker:
//   while (std::optional<std::string> key = queue.Get()) {
//     Status s = Reconcile(*key);
//     if (s.ok()) queue.Forget(*key); else queue.AddRateLimited(*key);
//     queue.Done(*key);
//   }
//
// Delays (AddAfter, AddRateLimited) are measured on the injected Clock's monotonic time (a wall
// clock that jumps never shortens or stretches a backoff). Get() waits on the clock (Clock::WaitFor):
// with a real clock it wakes up on its own when a delayed key comes due; with a FakeClock, when the
// test advances the clock to the key's due time (never in real time). ProcessDue() hands due keys
// to blocked workers at once without waiting for that wake-up.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "k8s/clock.h"

namespace berth::reconcilers {

// Per-key exponential backoff for AddRateLimited. Defaults are client-go's
// (DefaultItemBasedRateLimiter: 5 ms doubling up to 1000 s).
struct BackoffPolicy {
  std::chrono::milliseconds base{5};
  std::chrono::milliseconds max{1'000'000};
};

// The delay for a key that has already been requeued `requeues` times: base * 2^requeues,
// never more than policy.max (and no overflow for any `requeues`). Negative counts as 0; a policy
// with base or max <= 0 means no delay.
std::chrono::milliseconds BackoffDelay(const BackoffPolicy& policy, int requeues);

class WorkQueue {
 public:
  // `clock` must outlive the queue.
  explicit WorkQueue(const k8s::Clock& clock, BackoffPolicy backoff = {});
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  // Must not run while another thread is inside a member function: shut down and join the
  // workers first.
  ~WorkQueue() = default;

  // Queues `key` unless it is already queued (dedup) or shutting down. A key being processed is
  // marked and queued again when its worker calls Done.
  void Add(const std::string& key);

  // Adds `key` once `delay` has passed on the clock; a delay <= 0 adds now. While a key waits, a
  // second AddAfter keeps whichever time is sooner. Waiting keys are dropped on shutdown.
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);

  // AddAfter with the key's backoff, BackoffDelay(policy, NumRequeues(key)), and counts one more
  // requeue for the key.
  void AddRateLimited(const std::string& key);

  // Resets the key's backoff (call when it was processed successfully). Does not cancel a
  // pending AddAfter.
  void Forget(const std::string& key);

  // How many times AddRateLimited was called for `key` since the last Forget.
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready and returns it; the caller holds the key until Done(key).
  // After ShutDown, keys still queued are handed out as usual, then Get returns std::nullopt
  // (at once, without blocking) to every caller.
  std::optional<std::string> Get();
  // Get without blocking: a ready key (delayed keys due on the clock included), else nullopt.
  // For a caller that drives the queue itself (KeyedWriter::RunQueued).
  std::optional<std::string> TryGet();

  // Ends processing of a key returned by Get. If the key was added meanwhile it is queued again
  // (even during shutdown). A key that is not being processed is ignored.
  void Done(const std::string& key);

  // Keys ready to be handed out by Get: queued keys plus delayed keys that have come due (and are
  // neither queued nor being processed). Keys being processed or still waiting do not count.
  size_t Len() const;

  // Moves every delayed key that has come due into the queue and wakes blocked Get callers.
  // Needed only to make a FakeClock's Advance visible at once.
  void ProcessDue();

  // Stops accepting keys (Add, AddAfter and AddRateLimited become no-ops), drops waiting delayed
  // keys and wakes every blocked Get. Does not wait for anything. Idempotent.
  void ShutDown();

  // ShutDown, then blocks until the queue is empty and no key is being processed, i.e. until the
  // workers have processed every key still queued and called Done. Needs running workers: with
  // keys queued or held and nobody calling Get/Done it never returns.
  void ShutDownWithDrain();

  bool ShuttingDown() const;

 private:
  using Waiting = std::multimap<base::MonoTime, std::string>;

  void AddLocked(const std::string& key);
  void AddAfterLocked(const std::string& key, std::chrono::milliseconds delay);
  void PromoteDueLocked();
  void ShutDownLocked();
  std::string TakeFrontLocked();

  const k8s::Clock& clock_;
  const BackoffPolicy backoff_;

  mutable std::mutex mu_;
  std::condition_variable ready_cv_;            // a key was queued, a delay changed, or shutdown
  std::condition_variable drained_cv_;          // queue_ and processing_ became empty
  std::deque<std::string> queue_;               // FIFO of keys to hand out; each key at most once
  std::unordered_set<std::string> dirty_;       // keys added and not yet handed out
  std::unordered_set<std::string> processing_;  // keys handed out and not yet Done
  Waiting waiting_;                             // delayed keys by due time (FIFO among equals)
  std::unordered_map<std::string, Waiting::iterator> waiting_index_;  // key -> its waiting_ entry
  std::unordered_map<std::string, int> requeues_;                     // AddRateLimited counts
  bool shutting_down_ = false;
};

}  // namespace berth::reconcilers
