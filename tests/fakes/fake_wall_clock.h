#pragma once
// The clock of in-process engine tests: wall time (status timestamps, maxDuration, retryAfter,
// start timeouts, TTLs, aging: everything a user sees) moves only when the test advances it, as
// with base::FakeClock; monotonic time (how long the engine waits before it tries a failed write
// again, "Pods just asked for") is the machine's, as in production.
//
// Why not base::FakeClock alone: with a frozen monotonic clock every transient write failure
// (e.g. a 409 when two passes write a Fleet's status before the watch has shown the first write,
// which happens on a loaded machine) stops that write until the test moves the clock, so a test
// would have to move time just to let the engine make progress, and could no longer say "the clock
// has not moved, so the run is still backing off".

#include <chrono>

#include "base/time.h"

namespace berth::testing {

class FakeWallClock final : public base::Clock {
 public:
  base::TimePoint Now() const override { return wall_.Now(); }
  base::MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
  bool WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, base::Duration d,
               const std::function<bool()>& wake) const override {
    return base::RealClock().WaitFor(lock, cv, d, wake);
  }
  void Advance(base::Duration d) { wall_.Advance(d); }

 private:
  base::FakeClock wall_;
};

}  // namespace berth::testing
