#pragma once
// The clock of in-process engine tests: two timelines that move only when the test moves them.
// Wall time (status timestamps, maxDuration, retryAfter, start timeouts, TTLs, aging: everything a
// user sees) moves with Advance; monotonic time (how long the engine's writer backs off after a
// failed write, "Pods just asked for") moves with Advance too, and alone with AdvanceMonotonic.
// Every wait on the clock (Clock::WaitFor) is on monotonic time, as base::FakeClock's: it ends when
// the test moves the clock past its deadline, never in real time.
//
// Why two timelines: a transient write failure (e.g. a 409 when the engine writes a Fleet's status
// from a cache a lagging watch has not updated) backs the write off on monotonic time. A stepping
// test lets that backoff end by moving monotonic time alone, so it can still say "the wall clock
// has not moved, so the run is still backing off its retryAfter".

#include <chrono>

#include "base/time.h"

namespace berth::testing {

class FakeWallClock final : public base::Clock {
 public:
  base::TimePoint Now() const override { return wall_.Now(); }
  base::MonoTime Monotonic() const override { return mono_.Monotonic(); }
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, base::Duration d,
               const std::function<bool()>& wake) const override {
    return mono_.WaitFor(lock, cv, d, wake);
  }
  // Time passes: both timelines move.
  void Advance(base::Duration d) {
    wall_.Advance(d);
    mono_.Advance(d);
  }
  // Only the engine's own waiting: monotonic time moves, the wall clock stands.
  void AdvanceMonotonic(base::Duration d) { mono_.Advance(d); }

 private:
  base::FakeClock wall_, mono_;
};

}  // namespace berth::testing
