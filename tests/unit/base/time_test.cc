#include "base/time.h"

#include <gtest/gtest.h>

#include <chrono>

namespace berth::base {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;

TEST(FormatDurationTest, OneSpellingForEveryLayer) {
  EXPECT_EQ(FormatDuration(hours(36)), "1d12h");
  EXPECT_EQ(FormatDuration(minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1s500ms");
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
  EXPECT_EQ(FormatDuration(milliseconds(-250)), "-250ms");
}

// A fake clock moves wall and monotonic time together, only when told to.
TEST(FakeClockTest, WallAndMonotonicTimeMoveTogether) {
  FakeClock clock;
  const TimePoint wall = clock.Now();
  const MonoTime mono = clock.Monotonic();
  EXPECT_EQ(clock.Now(), wall);
  EXPECT_EQ(clock.Monotonic(), mono);
  clock.Advance(minutes(5));
  EXPECT_EQ(clock.Now() - wall, minutes(5));
  EXPECT_EQ(clock.Monotonic() - mono, minutes(5));
}

TEST(SystemClockTest, MonotonicTimeNeverGoesBack) {
  SystemClock clock;
  MonoTime last = clock.Monotonic();
  for (int i = 0; i < 1000; ++i) {
    const MonoTime now = clock.Monotonic();
    EXPECT_GE(now, last);
    last = now;
  }
}

}  // namespace
}  // namespace berth::base
