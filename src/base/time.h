#pragma once
// Time for every layer (k8s/, scheduling/, reconcilers/, controller/): one TimePoint, one Duration,
// one way to print a duration, and the injected wall clock. Pure: no I/O beyond reading the
// system clock in SystemClock, no third-party dependencies (the scheduling core links it).

#include <atomic>
#include <chrono>
#include <string>

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

// Everything that needs "now" takes a Clock, so tests drive time by hand.
class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time (what goes into status timestamps).
  virtual TimePoint Now() const = 0;
  // Monotonic time (backoff delays, "asked for this a moment ago").
  virtual MonoTime Monotonic() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
  MonoTime Monotonic() const override { return std::chrono::steady_clock::now(); }
};

// A clock that moves only when told to; for tests.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint(Duration(1'700'000'000'000))) : now_ms_(start.time_since_epoch().count()) {}
  TimePoint Now() const override { return TimePoint(Duration(now_ms_.load())); }
  // Moves with Advance and Set, from an arbitrary origin.
  MonoTime Monotonic() const override { return MonoTime(Duration(now_ms_.load())); }
  void Advance(Duration d) { now_ms_ += d.count(); }
  void Set(TimePoint t) { now_ms_ = t.time_since_epoch().count(); }

 private:
  std::atomic<long long> now_ms_;
};

}  // namespace berth::base
