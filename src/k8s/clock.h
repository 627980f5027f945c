#pragma once
// Time is injected: everything that needs "now" takes a Clock, so tests drive time by hand.

#include <atomic>
#include <chrono>

namespace berth::k8s {

using TimePoint = std::chrono::time_point<std::chrono::system_clock, std::chrono::milliseconds>;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time (what goes into status timestamps).
  virtual TimePoint Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimePoint Now() const override {
    return std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  }
};

// A clock that moves only when told to; for tests.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(TimePoint start = TimePoint(std::chrono::milliseconds(1'700'000'000'000)))
      : now_ms_(start.time_since_epoch().count()) {}
  TimePoint Now() const override { return TimePoint(std::chrono::milliseconds(now_ms_.load())); }
  void Advance(std::chrono::milliseconds d) { now_ms_ += d.count(); }
  void Set(TimePoint t) { now_ms_ = t.time_since_epoch().count(); }

 private:
  std::atomic<long long> now_ms_;
};

}  // namespace berth::k8s
