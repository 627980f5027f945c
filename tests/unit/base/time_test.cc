#include "base/time.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace berth::base {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;

// Waits (in real time, for another thread to get there) until `n` WaitFor calls block on `clock`.
void AwaitWaiters(const FakeClock& clock, int n) {
  while (clock.Waiters() < n) std::this_thread::yield();
}

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

// Timed waits run on the clock: on a FakeClock a wait ends when the test moves the time to its
// deadline, never because real time passed.
TEST(FakeClockTest, AWaitEndsWhenTheClockReachesItsDeadline) {
  FakeClock clock;
  std::atomic<int> result{-1};
  std::thread waiter([&] {
    std::mutex mu;
    std::condition_variable cv;
    std::unique_lock lock(mu);
    result = clock.WaitFor(lock, cv, milliseconds(100), [] { return false; }) ? 1 : 0;
  });
  AwaitWaiters(clock, 1);
  clock.Advance(milliseconds(99));
  EXPECT_EQ(clock.Waiters(), 1) << "99 ms of 100 have passed on the clock";
  EXPECT_EQ(result.load(), -1);
  clock.Advance(milliseconds(1));
  waiter.join();
  EXPECT_EQ(result.load(), 0) << "the deadline, not the condition, ended the wait";
  EXPECT_EQ(clock.Waiters(), 0);
}

TEST(FakeClockTest, AWaitEndsEarlyWhenItsConditionTurnsTrue) {
  FakeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::atomic<int> result{-1};
  std::thread waiter([&] {
    std::unique_lock lock(mu);
    result = clock.WaitFor(lock, cv, hours(1), [&] { return go; }) ? 1 : 0;
  });
  AwaitWaiters(clock, 1);
  {
    std::lock_guard g(mu);
    go = true;
  }
  cv.notify_all();
  waiter.join();
  EXPECT_EQ(result.load(), 1);
  EXPECT_EQ(clock.Now(), FakeClock().Now()) << "no time passed";
}

TEST(FakeClockTest, SetAndSleepForWorkOnTheSameDeadlines) {
  FakeClock clock;
  std::atomic<bool> slept{false};
  std::thread sleeper([&] {
    clock.SleepFor(minutes(5));
    slept = true;
  });
  AwaitWaiters(clock, 1);
  clock.Set(clock.Now() + minutes(4));
  EXPECT_FALSE(slept.load());
  clock.Set(clock.Now() + minutes(1));
  sleeper.join();
  EXPECT_TRUE(slept.load());
}

TEST(SystemClockTest, WaitForEndsOnItsConditionOrInRealTime) {
  const Clock& clock = RealClock();
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_FALSE(clock.WaitFor(lock, cv, milliseconds(1), [] { return false; }));
  EXPECT_TRUE(clock.WaitFor(lock, cv, hours(1), [] { return true; }));
}

}  // namespace
}  // namespace berth::base
