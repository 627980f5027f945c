// Issue 47: the waits of started runs as kubectl berth usage counts them (base/run_waits.h): each
// wait in one bucket of fixed bounds, histograms that add, and the median's bucket.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "base/run_waits.h"

namespace berth::base {
namespace {

using std::chrono::seconds;

// Each bucket holds the waits from its lower bound to the next one's, at most about twice as wide
// as its lower bound (the median's precision, docs/cli.md).
TEST(RunWaits, EachWaitFallsInTheBucketOfItsBounds) {
  EXPECT_EQ(WaitBucket(seconds(-5)), 0);
  EXPECT_EQ(WaitBucket(seconds(0)), 0);
  EXPECT_EQ(WaitBucket(seconds(9)), 0);
  EXPECT_EQ(WaitBucket(seconds(10)), 1);
  EXPECT_EQ(WaitBucket(seconds(299)), 6);
  EXPECT_EQ(WaitBucket(seconds(300)), 7);
  EXPECT_EQ(WaitBucket(seconds(int64_t{30} * 86400)), kWaitBuckets - 1);
  EXPECT_EQ(WaitBucket(seconds(int64_t{400} * 86400)), kWaitBuckets - 1);
  for (int i = 0; i < kWaitBuckets; ++i) {
    const auto b = static_cast<size_t>(i);
    EXPECT_EQ(WaitBucket(seconds(kWaitBucketFrom[b])), i);
    if (i + 1 < kWaitBuckets) {
      EXPECT_EQ(WaitBucket(seconds(kWaitBucketFrom[b + 1] - 1)), i);
      if (i > 0) {
        EXPECT_LE(kWaitBucketFrom[b + 1], kWaitBucketFrom[b] * 22 / 10) << "bucket " << i << " too wide";
      }
    }
  }
}

WaitHistogram Of(const std::vector<int64_t>& waits) {
  WaitHistogram h;
  for (int64_t w : waits) h.Add(seconds(w));
  return h;
}

TEST(RunWaits, TheMedianIsTheBucketOfTheMiddleRun) {
  EXPECT_EQ(MedianWait(WaitHistogram{}), std::nullopt) << "no runs: no median";
  EXPECT_EQ(MedianWait(Of({5, 400, 7200})), (WaitRange{.from = seconds(300), .under = seconds(600)}));
  // An even count: the lower of the two middle runs.
  EXPECT_EQ(MedianWait(Of({5, 400})), (WaitRange{.from = seconds(0), .under = seconds(10)}));
  EXPECT_EQ(MedianWait(Of({int64_t{40} * 86400})), (WaitRange{.from = seconds(int64_t{30} * 86400), .under = std::nullopt}));
  EXPECT_EQ(Of({5, 400, 7200}).Runs(), 3);
}

// Days, fleets and users merge by adding: the merged median is the median of all the runs, to
// its bucket's bounds, whatever the waits and however they are split.
TEST(RunWaits, MergedHistogramsGiveTheMedianOfAllTheRuns) {
  uint64_t seed = 47;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<int64_t> all;
    WaitHistogram merged;
    const int parts = 1 + static_cast<int>(next() % 5);
    for (int p = 0; p < parts; ++p) {
      std::vector<int64_t> part;
      const int n = static_cast<int>(next() % 7);
      for (int i = 0; i < n; ++i) part.push_back(static_cast<int64_t>(next() % (int64_t{40} * 86400)) >> (next() % 20));
      all.insert(all.end(), part.begin(), part.end());
      merged += Of(part);
    }
    EXPECT_EQ(merged, Of(all));
    const auto median = MedianWait(merged);
    if (all.empty()) {
      EXPECT_EQ(median, std::nullopt);
      continue;
    }
    std::sort(all.begin(), all.end());
    const int64_t middle = all[(all.size() + 1) / 2 - 1];
    ASSERT_TRUE(median.has_value());
    EXPECT_LE(median->from.count(), middle) << "round " << round;
    if (median->under) {
      EXPECT_LT(middle, median->under->count()) << "round " << round;
    }
  }
}

}  // namespace
}  // namespace berth::base
