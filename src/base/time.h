#pragma once
// Time for every layer (k8s/, scheduling/, reconcilers/, controller/): one TimePoint, one Duration,
// one way to print a duration, and the injected wall clock. Pure: no I/O beyond reading the
// system clock in SystemClock, no third-party dependencies (the scheduling core links it).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace berth::base {

using Duration = std::chrono::milliseconds;
// Wall-clock time at millisecond resolution (what status timestamps and deadlines use).
using TimePoint = std::chrono::time_point<std::chrono::system_clock, Duration>;

// Exact and compact, largest units first, zero parts left out: "2d", "1d12h", "1h30m", "45s",
// "1s500ms", "250ms", "0s"; negative values with a leading "-". The text parses back to the same
// value with k8s::ParseDuration (every message shows one spelling for one value).
std::string FormatDuration(Duration d);

// Monotonic time (never jumps; for delays and deadlines that must not move with the wall clock).
using MonoTime = std::chrono::steady_clock::time_point;

// Everything that needs "now" or waits for a while takes a Clock, so tests drive time by hand:
// every timed wait outside the scheduling core (client retry backoff, informer relist, workqueue
// delays, leader election) goes through WaitFor or SleepFor.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time (what goes into status timestamps).
  virtual TimePoint Now() const = 0;
  // Monotonic time (backoff delays, "asked for this a moment ago").
  virtual MonoTime Monotonic() const = 0;
  // Blocks (`lock` held on entry and on return, released while blocked) until `wake()` is true or
  // `d` has passed on this clock; returns wake(). `wake` is checked under `lock` whenever `cv` is
  // notified and when this clock moves. Thread: any; `cv` and the mutex must outlive the call.
  virtual bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Duration d,
                       const std::function<bool()>& wake) const = 0;
  // Sleeps `d` on this clock (nothing can cut it short).
  void SleepFor(Duration d) const;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Duration d,
               const std::function<bool()>& wake) const override {
    return cv.wait_for(lock, d, wake);
  }
};

// The process' real clock, for code that is given none (the CLI, a Client nobody set a clock on).
const Clock& RealClock();

// A clock that moves only when told to; for tests. A WaitFor on it ends when Advance or Set moves
// the time to or past its deadline (or `wake()` turns true), never because real time passed:
// a test steps every timed wait of the code it drives. (Between checking the time and blocking,
// a waiter re-checks at least every kRecheck of real time, so a move that lands in that gap is
// seen late by at most that much; it is never missed.)
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint(Duration(1'700'000'000'000))) : now_ms_(start.time_since_epoch().count()) {}
  TimePoint Now() const override { return TimePoint(Duration(now_ms_.load())); }
  // Moves with Advance and Set, from an arbitrary origin.
  MonoTime Monotonic() const override { return MonoTime(Duration(now_ms_.load())); }
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Duration d,
               const std::function<bool()>& wake) const override;
  void Advance(Duration d);
  void Set(TimePoint t);
  // How many WaitFor calls are blocked now (a test waits for its subject to be asleep).
  int Waiters() const;

  static constexpr Duration kRecheck{10};

 private:
  void WakeAll() const;

  std::atomic<long long> now_ms_;
  mutable std::mutex waiters_mu_;
  mutable std::vector<std::condition_variable*> waiters_;  // one entry per blocked WaitFor
};

}  // namespace berth::base
