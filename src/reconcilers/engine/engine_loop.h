#pragma once
// The engine's loop: the thread around the thread-free pass, what wakes it, and what changed
// since the last pass.
//
// Threads. The informers' handlers (Watch) and the writers note changes and wake the loop from
// their own threads (Touch, NoteNodeChanged, NoteFleetsChanged, NoteNamespacesChanged, Wake,
// Nudge: under the loop's lock). The loop thread (Start) waits for the caches, then for work, paces
// passes and calls `pass(now)`; every wait is on the injected clock (Clock::WaitFor: a FakeClock
// moved past a deadline ends it). Stepped engines start no thread: the caller's thread takes the
// changes (TakeChanges) and notes deadlines as the pass would. The deadlines (NoteDeadline,
// ResetDeadline, deadline) are the pass' own: loop thread only, no lock.
// Owns: the loop thread, the changes noted since the last pass, the next deadline.
// Cost: a change is a set insert under the lock; only the first since the last look wakes the
// thread (a burst of thousands costs no context switch each).
//
// When a pass comes: on a change (dirty), at the earliest deadline the last pass noted, and
// otherwise one status_refresh after the loop began to wait (what no deadline covers: a waiting
// run's sentence, an instance's end of life, a stale Pod creation). Never sooner than kCoalesce
// after the last pass ended, or as long after as the last one took (at most kMaxGap): in a burst
// passes take at most about half of the thread's time and each decides for more runs. Between
// passes the loop shows the queue view's news and makes a view asked for (the hooks).

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>

#include "k8s/clock.h"

namespace berth::reconcilers {

class EngineCaches;

class EngineLoop {
 public:
  static constexpr std::chrono::milliseconds kCoalesce{5};          // between two passes at least
  static constexpr std::chrono::milliseconds kMaxGap{25};            // and as long as the last took, up to this
  static constexpr std::chrono::milliseconds kMinDeadlineDelay{50};  // after a pass, for deadlines
  static constexpr std::chrono::milliseconds kMaxSleep{1000};        // per wait slice (the wall clock is read again)

  // What the loop thread calls. The predicates (synced, news, view_wanted) are called with the
  // loop's lock held: they must not call back into the loop (Wake, Nudge, Touch...).
  struct Hooks {
    std::function<bool()> synced;             // the caches have their first lists
    std::function<void()> started;            // once synced, before the first pass
    std::function<void(k8s::TimePoint)> pass;  // one pass at `now`
    std::function<bool()> news;               // something to show between passes (priority news)
    std::function<void()> show_news;
    std::function<bool()> view_wanted;        // a queue view asked for between passes
    std::function<void()> make_view;
  };
  EngineLoop(const k8s::Clock& clock, std::chrono::milliseconds status_refresh, Hooks hooks)
      : clock_(clock), status_refresh_(status_refresh), hooks_(std::move(hooks)) {}
  ~EngineLoop() { Stop(); }
  EngineLoop(const EngineLoop&) = delete;
  EngineLoop& operator=(const EngineLoop&) = delete;

  // The caches' handlers note what changed and wake the loop: a run's object or Pods (Touch),
  // a Node, a Fleet's spec, a Namespace, a Team's spec, everything else the view reads (Wake).
  // `priority_changed` sees a run's priority patch first (the queue view shows it at once);
  // `synced` runs after each informer's complete list, after the loop was nudged. Before Start.
  void Watch(EngineCaches& caches, std::function<void(const std::string& key)> priority_changed,
             std::function<void()> synced);

  void Start();
  // Stops the loop: a wait ends at once, a pass in progress is finished; idempotent. RequestStop
  // only tells it (Stopping answers true from then on); Stop then joins the thread.
  void RequestStop();
  void Stop();
  bool Stopping() const;

  // A pass is wanted now (a change, a finished write): the first since the last look wakes the thread.
  void Wake();
  // Wakes the loop thread without making a pass due (a view wanted, priority news, synced).
  void Nudge();
  // A run's object or Pods changed: the next pass visits it (and is due).
  void Touch(const std::string& run_key);
  void NoteNodeChanged(const std::string& name);
  void NoteFleetsChanged();      // a Fleet added, deleted or its spec changed
  void NoteNamespacesChanged();  // a Namespace added, deleted or changed (a priority cap)
  // Whether a change came since the last pass took the changes: the loop would pass at once.
  bool PassDue() const;

  // What changed since the last TakeChanges; the pass takes every change noted so far (no
  // longer due). The first call reports Fleets and Namespaces changed (nothing seen yet).
  struct Changes {
    std::unordered_set<std::string> runs;   // touched
    std::unordered_set<std::string> nodes;  // changed
    bool fleets = false;
    bool namespaces = false;
  };
  Changes TakeChanges();

  // ---- the pass' deadlines (loop thread only) ----
  // The next pass is due by `at` at the latest (reset by each pass: ResetDeadline).
  void NoteDeadline(k8s::TimePoint at) {
    if (!deadline_ || at < *deadline_) deadline_ = at;
  }
  void ResetDeadline() { deadline_.reset(); }
  const std::optional<k8s::TimePoint>& deadline() const { return deadline_; }
  // When a pass comes at the latest after `from` with nothing changing and no deadline: one
  // status_refresh (never less than kMinDeadlineDelay).
  k8s::TimePoint ResyncAt(k8s::TimePoint from) const {
    return from + std::max<std::chrono::milliseconds>(status_refresh_, kMinDeadlineDelay);
  }

 private:
  void Run();
  bool WaitForSync();  // false when the loop stops first
  // Blocks until the next pass is due; false when the loop stops.
  bool WaitForWork();
  // Blocks until `gap` has passed on the clock's monotonic time since `last_end`, showing news and
  // making a wanted view meanwhile; false when the loop stops.
  bool Coalesce(base::MonoTime last_end, std::chrono::milliseconds gap);

  const k8s::Clock& clock_;
  const std::chrono::milliseconds status_refresh_;
  const Hooks hooks_;
  std::optional<k8s::TimePoint> deadline_;  // loop thread only
  std::thread thread_;

  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  bool dirty_ = true;
  bool stopping_ = false;
  Changes changes_{{}, {}, true, true};
};

}  // namespace berth::reconcilers
