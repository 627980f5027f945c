#pragma once
// The engine's writes to the API, keyed by the object they change, on a pool of threads.
//
// The loop decides; a KeyedWriter carries the decisions out. The contract the engine relies on:
//   - One write per key: at most one write per key is queued or in flight at any time. Dispatch
//     refuses a second one (returns false) and the loop decides again on its next pass, from a
//     cache that by then shows the first write. One exception: a decision for a key whose
//     background write (below) still waits for a worker replaces that write.
//   - Backoff from the workqueue alone: a write that fails (returns false) puts its key in
//     backoff with the WorkQueue's per-key exponential delay (BackoffPolicy, on the injected
//     clock). While a key backs off, Dispatch refuses writes for it. The delay resets after the
//     key's next successful write. There is no second timer: the key's delayed re-add in the
//     workqueue is what ends its backoff.
//   - Decisions first: background writes (refreshing a waiting run's message or queue position)
//     run on their own workers, so an admission or a failure never waits behind a burst of
//     refreshes.
//   - Notification: after every write (kWritten, kFailed) and when a key's backoff ends
//     (kBackoffOver), `on_done(key, outcome)` is called on the worker thread without any of the
//     writer's locks held. The engine wakes its loop there (a refused decision can be made again).
//   - Leadership and retries of single requests are not the writer's business: the client asks
//     the leadership guard before each request and retries what is safe to retry.
//   - Stop: writes already queued are carried out, keys backing off are dropped, the workers are
//     joined; Dispatch refuses everything from then on. Idempotent.
//
// Thread-safe. Keys are "namespace/name" of a run or any other string ("fleet:NAME").

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/clock.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/writers/workqueue.h"

namespace berth::reconcilers {

class KeyedWriter {
 public:
  // Carries out one write; returns false when it failed and the key should back off.
  using Write = std::function<bool()>;
  enum class Outcome { kWritten, kFailed, kBackoffOver };
  using OnDone = std::function<void(const std::string& key, Outcome outcome)>;

  struct Options {
    int decision_workers = 14;
    int background_workers = 2;
    BackoffPolicy backoff{std::chrono::milliseconds(100), std::chrono::milliseconds(30000)};
  };

  // `clock` must outlive the writer. `on_done` may be empty.
  KeyedWriter(const k8s::Clock& clock, Options options, OnDone on_done);
  KeyedWriter(const KeyedWriter&) = delete;
  KeyedWriter& operator=(const KeyedWriter&) = delete;
  ~KeyedWriter();  // Stop()

  // Starts the workers. Writes dispatched before Start wait for it.
  void Start();

  // Queues `write` for `key` under the contract above; returns whether it was queued.
  bool Dispatch(const std::string& key, Write write, bool background = false);

  // Whether `key` has a write queued or in flight (a key backing off has neither).
  bool Busy(const std::string& key) const;
  // Every key with a write queued or in flight.
  std::unordered_set<std::string> BusyKeys() const;
  // What Dispatch would refuse or replace now (the keys busy, backing off, with a background write
  // waiting): the gate of a pass' PassWrites.
  PassWrites::Gate TakeGate() const;
  size_t BusyCount() const;
  // Background writes queued and not yet taken by a worker (lock-free: a snapshot).
  size_t BackgroundQueued() const { return background_queued_.load(std::memory_order_relaxed); }
  // Whether `key` is backing off after a failed write.
  bool BackingOff(const std::string& key) const;

  // With a FakeClock: ends the backoffs that came due at once (WorkQueue::ProcessDue); otherwise
  // the workers notice within a second of real time.
  void ProcessDue();

  // Without workers (Start not called; a test that steps the engine): carries out, on the
  // caller's thread, every write queued now and those they queue, decisions first, and ends the
  // backoffs due on the clock, under the same contract as the workers (on_done included);
  // returns how many writes ran. With workers started it does nothing and returns 0. One caller
  // at a time.
  size_t RunQueued();

  // Carries out what is queued, then stops the workers (see the contract).
  void Stop();

 private:
  enum class State { kQueued, kRunning, kBackingOff };
  struct Entry {
    State state = State::kQueued;
    Write write;              // while kQueued
    bool background = false;  // while kQueued
    WorkQueue* backoff_in = nullptr;  // while kBackingOff: the queue whose delayed re-add ends it
  };

  void Worker(WorkQueue& queue);
  // One key taken from `queue`: its write carried out, or its backoff ended. True: a write ran.
  bool Process(WorkQueue& queue, const std::string& key);

  const Options options_;
  const OnDone on_done_;

  mutable std::mutex mu_;
  bool stopped_ = false;
  std::unordered_map<std::string, Entry> entries_;  // keys queued, running or backing off
  size_t busy_ = 0;                                 // entries queued or running
  std::atomic<size_t> background_queued_{0};        // entries kQueued with background set (under mu_)
  WorkQueue decisions_, background_;
  std::vector<std::thread> workers_;
};

}  // namespace berth::reconcilers
