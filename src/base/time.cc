#include "base/time.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace berth::base {

std::string FormatDuration(Duration d) {
  const int64_t count = d.count();
  if (count == 0) return "0s";
  std::string out;
  // Magnitude in unsigned arithmetic so that the most negative value works too.
  uint64_t rest = static_cast<uint64_t>(count);
  if (count < 0) {
    out += '-';
    rest = ~rest + 1;
  }
  static constexpr std::array<std::pair<uint64_t, std::string_view>, 5> kParts = {{
      {86'400'000, "d"},
      {3'600'000, "h"},
      {60'000, "m"},
      {1'000, "s"},
      {1, "ms"},
  }};
  for (const auto& [millis, name] : kParts) {
    if (rest >= millis) {
      out += std::to_string(rest / millis);
      out += name;
      rest %= millis;
    }
  }
  return out;
}

void Clock::SleepFor(Duration d) const {
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  WaitFor(lock, cv, d, [] { return false; });
}

const Clock& RealClock() {
  static const SystemClock clock;
  return clock;
}

bool FakeClock::WaitFor(std::unique_lock<std::mutex>& lock, std::condition_variable& cv, Duration d,
                        const std::function<bool()>& wake) const {
  const long long deadline = now_ms_.load() + d.count();
  {
    std::lock_guard g(waiters_mu_);
    waiters_.push_back(&cv);
  }
  // Lock order: the caller's mutex, then waiters_mu_; WakeAll takes only waiters_mu_.
  while (!wake() && now_ms_.load() < deadline) cv.wait_for(lock, kRecheck);
  {
    std::lock_guard g(waiters_mu_);
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &cv));
  }
  return wake();
}

void FakeClock::Advance(Duration d) {
  now_ms_ += d.count();
  WakeAll();
}

void FakeClock::Set(TimePoint t) {
  now_ms_ = t.time_since_epoch().count();
  WakeAll();
}

int FakeClock::Waiters() const {
  std::lock_guard g(waiters_mu_);
  return static_cast<int>(waiters_.size());
}

void FakeClock::WakeAll() const {
  std::lock_guard g(waiters_mu_);
  for (std::condition_variable* cv : waiters_) cv->notify_all();
}

}  // namespace berth::base
