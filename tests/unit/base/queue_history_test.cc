// Issue 47: the queue's last 24 hours in memory (base/queue_history.h), as the dashboard's Usage
// page draws them: per minute the queue's longest length and the starts with their median and longest
// wait; bounded (older minutes overwritten); a clock stepped back counts in the latest minute.

#include "base/queue_history.h"

#include <gtest/gtest.h>

#include <chrono>

namespace berth::base {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

// 2026-11-30T12:00:00Z, a minute's start.
const TimePoint kT0 = TimePoint(std::chrono::duration_cast<Duration>(seconds(1796040000)));

TEST(QueueHistory, NothingRecordedIsNoMinute) {
  QueueHistory h;
  EXPECT_TRUE(h.Minutes(kT0).empty());
  EXPECT_FALSE(h.RecordingSince().has_value());
}

TEST(QueueHistory, EachMinuteHasItsLastLengthAndItsStartsWaits) {
  QueueHistory h;
  h.SamplePending(kT0 + seconds(5), 7);
  h.NoteStart(kT0 + seconds(10), seconds(30));
  h.NoteStart(kT0 + seconds(20), seconds(90));
  h.NoteStart(kT0 + seconds(30), seconds(60));
  h.SamplePending(kT0 + seconds(50), 4);  // shorter later in the minute
  h.NoteStart(kT0 + minutes(2) + seconds(1), seconds(10));
  h.NoteStart(kT0 + minutes(2) + seconds(2), seconds(20));
  EXPECT_EQ(h.RecordingSince(), kT0 + seconds(5));

  const auto m = h.Minutes(kT0 + minutes(3));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].at, kT0);
  EXPECT_EQ(m[0].pending, 7) << "the minute's longest queue";
  EXPECT_EQ(m[0].starts, 3);
  EXPECT_DOUBLE_EQ(m[0].median_wait_seconds, 60);
  EXPECT_DOUBLE_EQ(m[0].max_wait_seconds, 90);
  // Minute 1 had nothing; minute 2 two starts and no sample (the median of an even count).
  EXPECT_EQ(m[1].at, kT0 + minutes(2));
  EXPECT_FALSE(m[1].pending.has_value());
  EXPECT_EQ(m[1].starts, 2);
  EXPECT_DOUBLE_EQ(m[1].median_wait_seconds, 15);
  EXPECT_DOUBLE_EQ(m[1].max_wait_seconds, 20);
}

TEST(QueueHistory, KeepsOnlyTheRingsLastMinutes) {
  QueueHistory h(3);
  for (int i = 0; i < 6; ++i) h.SamplePending(kT0 + minutes(i), i);
  auto m = h.Minutes(kT0 + minutes(5));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].at, kT0 + minutes(3));
  EXPECT_EQ(m[0].pending, 3);
  EXPECT_EQ(m[2].pending, 5);
  // An hour later nothing recorded is within the last 3 minutes.
  EXPECT_TRUE(h.Minutes(kT0 + minutes(65)).empty());
  // A minute reused by the ring holds only its own figures.
  h.NoteStart(kT0 + minutes(6), seconds(4));
  m = h.Minutes(kT0 + minutes(6));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[2].at, kT0 + minutes(6));
  EXPECT_FALSE(m[2].pending.has_value());  // not minute 3's 3
  EXPECT_EQ(m[2].starts, 1);
}

TEST(QueueHistory, ADayOfMinutesIsTheDefaultBound) {
  QueueHistory h;
  for (int i = 0; i < 2000; ++i) h.SamplePending(kT0 + minutes(i), i);
  const auto m = h.Minutes(kT0 + minutes(1999));
  ASSERT_EQ(m.size(), QueueHistory::kDefaultMinutes);
  EXPECT_EQ(m.front().pending, 2000 - 1440);
  EXPECT_EQ(m.back().pending, 1999);
}

TEST(QueueHistory, AClockSteppedBackCountsInTheLatestMinute) {
  QueueHistory h;
  h.NoteStart(kT0 + minutes(5), seconds(8));
  h.NoteStart(kT0 + minutes(4), seconds(2));  // the wall clock went back
  h.SamplePending(kT0 + minutes(4), 1);
  const auto m = h.Minutes(kT0 + minutes(4));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].at, kT0 + minutes(5));
  EXPECT_EQ(m[0].starts, 2);
  EXPECT_EQ(m[0].pending, 1);
  EXPECT_DOUBLE_EQ(m[0].median_wait_seconds, 5);
}

TEST(QueueHistory, MedianOfOddEvenAndNone) {
  EXPECT_DOUBLE_EQ(Median({}), 0);
  EXPECT_DOUBLE_EQ(Median({3}), 3);
  EXPECT_DOUBLE_EQ(Median({9, 1, 5}), 5);
  EXPECT_DOUBLE_EQ(Median({9, 1, 5, 3}), 4);
}

}  // namespace
}  // namespace berth::base
