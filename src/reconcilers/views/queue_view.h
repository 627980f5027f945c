#pragma once
// The queue view: the queue as /queue, `kubectl berth queue` and the dashboard show it.
//
// Threads. Get: any thread (the HTTP handlers). NotePriorityChange: the Run informer's thread.
// Stop: any thread. Everything else: the engine's loop thread only.
// Owns: the last view made, whether a pass changed the queue since (stale), whether a reader
// waits for a fresh one (wanted), the priority news not shown yet, and the runs shown in a new
// place ahead of the queue (shown early). Reads the engine's queue (scheduling::RunQueue) only
// when the loop thread hands it in.
//
// Made on request, not by every pass (100,000 entries cost 35-45 ms a pass): a pass marks the
// view stale (MarkStale); Get finding it stale sets `wanted`, wakes the loop thread (`nudge`, which
// does not make a pass due) and waits (at most the given time, then answers the last view made)
// until a view is made after its request (MakeQueueEntries + Publish), between two passes or at
// the end of the pass under way, however soon a later pass marks it stale again. Asked for
// during a pass before it changed the queue, the view of the pass before is answered at once.
//
// Priority changes (issue 16): a pass costs O(pending), and a priority patch used to show in the
// view only after the pass under way and the next. The Run informer's handler notes a changed
// spec.priority (NotePriorityChange); at points through the pass (ShowNews) a queued run moves
// to the place its new priority gives it, with the priority and effective priority the queue will
// give it (RunQueue::EffectiveAt), and Publish keeps it there until the queue has that priority.
// Only the view: the queue, positions and statuses change in the next pass that visits the run,
// which decides everything as before and may take the run out of the queue.
//
// Cost: Get copies the view; Publish and each moved run O(entries); ShowNews without news is one
// atomic load (it is called every 256 runs of the pass' per-run loops).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/time.h"
#include "reconcilers/engine/engine_api.h"
#include "scheduling/cycle_result.h"
#include "scheduling/run_queue.h"

namespace berth::reconcilers {

class QueueView {
 public:
  // `nudge` wakes the loop thread so that it makes a wanted view or shows priority news; it must
  // not make a pass due. Get waits on `clock` (Clock::WaitFor), which must outlive the view.
  QueueView(const base::Clock& clock, std::function<void()> nudge) : clock_(clock), nudge_(std::move(nudge)) {}

  // Any thread: the view as of the last pass, in order (see above). Waits at most `wait` on the
  // clock (a FakeClock's wait ends only when the view is made, the view stops or the test moves
  // the clock), never when `wait` is zero.
  std::vector<QueueEntry> Get(std::chrono::milliseconds wait) const;
  // Whether a pass changed the queue since the view was last made (loop thread).
  bool Stale() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stale_;
  }
  // Informer thread: `key`'s spec.priority changed (shown by the next ShowNews).
  void NotePriorityChange(const std::string& key);
  // Any thread: Get waits no more; the loop no longer answers.
  void Stop();

  // Loop thread. The loop makes views from now on (the caches synced).
  void SetServing();
  // A pass changed the queue: the next Get waits for a view made from it.
  void MarkStale();
  // A reader waits for a fresh view; the loop's waits read these without a lock.
  bool Wanted() const { return wanted_.load(); }
  bool HasNews() const { return has_news_.load(); }

  // The queue's priority for a queued run as its object now says (its namespace's cap applied),
  // nullopt when the run is gone or being deleted.
  using PriorityOf = std::function<std::optional<int32_t>(const std::string& key)>;
  // Moves the queued runs whose priority changed in the view (loop thread; never the queue).
  void ShowNews(const scheduling::RunQueue& queue, const PriorityOf& priority_of);
  // Replaces the view with `entries` (made from the queue: MakeQueueEntries), keeping the runs
  // shown early in their new place until the queue has their priority, and wakes Get.
  void Publish(std::vector<QueueEntry> entries, const scheduling::RunQueue& queue, const PriorityOf& priority_of);

  // Moves the run `key` in `view` to the place its new priorities give it (the queue's order:
  // effective priority, submission, then id) and numbers the places again; false when absent.
  static bool MoveInView(std::vector<QueueEntry>& view, const std::string& key, int32_t priority, int32_t effective);

 private:
  const base::Clock& clock_;
  std::function<void()> nudge_;
  mutable std::mutex mu_;  // guards the fields below but the atomics
  mutable std::condition_variable fresh_cv_;  // a fresh view was made (or Stop)
  std::vector<QueueEntry> view_;
  bool stale_ = false;
  mutable uint64_t asks_ = 0;  // requests that found the view stale (Get)
  uint64_t answered_ = 0;      // asks_ when the last view was made (Publish)
  bool serving_ = false;
  bool stopping_ = false;
  mutable std::atomic<bool> wanted_{false};
  std::unordered_set<std::string> news_;  // queued runs whose spec.priority changed
  std::atomic<bool> has_news_{false};     // news_ is not empty
  // Loop thread: runs moved in the view ahead of the queue (key -> priority shown).
  std::unordered_map<std::string, int32_t> shown_early_;
};

// What the view shows of the queue: each queued run in order, with its entry in `result` when it
// waits (result.waiting is in queue order; `waiting_of` finds the others' from the pass' memos) and
// the sentence `explain` makes for it. Waiting runs mostly share one sentence (the same reason,
// namespace and fleets): it is made once for each stretch of equal neighbours, unless the run's
// namespace has a priority cap (`capped`), which the sentence may name.
std::vector<QueueEntry> MakeQueueEntries(
    const scheduling::RunQueue& queue, const scheduling::CycleResult& result,
    const std::function<const scheduling::WaitingRun*(const scheduling::PendingRun&)>& waiting_of,
    const std::function<std::string(const scheduling::WaitingRun&)>& explain,
    const std::function<bool(const std::string& ns)>& capped);

}  // namespace berth::reconcilers
