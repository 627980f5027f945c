// Issue 47: usage accounting's arithmetic (scheduling/usage.h).

#include "scheduling/usage.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace berth::scheduling {
namespace {

using base::TimePoint;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// 2026-11-28T00:00:00Z.
const TimePoint kDay0 = TimePoint(std::chrono::duration_cast<milliseconds>(seconds(1795824000)));
constexpr int64_t kGiB = int64_t{1} << 30;

UsageSpan Span(const std::string& ns, const std::string& fleet, TimePoint start, std::optional<TimePoint> end, int64_t gpus,
               int64_t cpu_milli = 0, int64_t memory = 0) {
  return UsageSpan{
      .ns = ns, .fleet = fleet, .start = start, .end = end, .gpus = gpus, .cpu_milli = cpu_milli, .memory_bytes = memory};
}

// Resource-seconds of `h` hours (comparisons to the second).
double Secs(double h) { return h * 3600.0; }

TEST(UsageTest, DaysAreUtcDates) {
  EXPECT_EQ(UtcDay(kDay0), "2026-11-28");
  EXPECT_EQ(UtcDay(kDay0 - milliseconds(1)), "2026-11-27");
  EXPECT_EQ(UtcDay(kDay0 + hours(24 * 4)), "2026-12-02");
  EXPECT_EQ(UtcDay(TimePoint(milliseconds(0))), "1970-01-01");
  EXPECT_EQ(UtcDay(kDay0 + hours(24 * 93)), "2027-03-01");
}

// A span's GPU-, CPU- and memory-hours over the folded interval only, split at UTC days and
// hours; a running span counts up to the fold's end.
TEST(UsageTest, FoldsTheOverlapOfEachSpanPerDayFleetAndNamespace) {
  UsageHistory h;
  const TimePoint start = kDay0 + hours(23) + minutes(30);
  std::vector<UsageSpan> spans = {Span("vision", "a100", start, start + hours(1), 8, 16000, 64 * kGiB),
                                  Span("nlp", "a100", start + minutes(10), std::nullopt, 2)};
  FoldUsage(h, spans, kDay0, kDay0 + hours(25), FoldOptions{.hourly_since = kDay0, .max_bytes = kMaxUsageBytes});
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h[0].day, "2026-11-28");
  // (To 10 µs: figures are kept to the nanohour, 3.6 µs.)
  EXPECT_EQ(h[1].day, "2026-11-29");
  EXPECT_NEAR(Secs(h[0].by_namespace["vision"].gpu), 8 * 1800, 1e-5);
  EXPECT_NEAR(Secs(h[0].by_namespace["vision"].cpu), 16 * 1800, 1e-5);
  EXPECT_NEAR(Secs(h[0].by_namespace["vision"].memory_gib), 64 * 1800, 1e-5);
  EXPECT_NEAR(Secs(h[0].by_namespace["nlp"].gpu), 2 * 1200, 1e-5);
  EXPECT_NEAR(Secs(h[1].by_namespace["nlp"].gpu), 2 * 3600, 1e-5);
  EXPECT_NEAR(Secs(h[1].total.gpu), 8 * 1800 + 2 * 3600, 1e-5);
  EXPECT_NEAR(Secs(h[1].hourly[0].gpu), 8 * 1800 + 2 * 3600, 1e-5);
  EXPECT_EQ(h[1].hourly.size(), 1u);
}

// Folding [a, b) then [b, c) is folding [a, c): what a watermark (usageFoldedUntil) relies on.
TEST(UsageTest, FoldingInPiecesCountsEachSecondOnce) {
  std::vector<UsageSpan> spans = {Span("a", "f", kDay0 + seconds(7), kDay0 + hours(30) + seconds(3), 3, 1500, 5 * kGiB),
                                  Span("b", "g", kDay0 + hours(2), std::nullopt, 1, 250, kGiB)};
  UsageHistory whole, pieces;
  const TimePoint end = kDay0 + hours(50) + seconds(11);
  FoldUsage(whole, spans, kDay0, end, FoldOptions{.hourly_since = std::nullopt, .max_bytes = kMaxUsageBytes});
  for (TimePoint t = kDay0; t < end;) {
    const TimePoint next = std::min(end, t + seconds(997));
    FoldUsage(pieces, spans, t, next, FoldOptions{.hourly_since = std::nullopt, .max_bytes = kMaxUsageBytes});
    t = next;
  }
  ASSERT_EQ(whole.size(), pieces.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_EQ(whole[i].day, pieces[i].day);
    EXPECT_NEAR(Secs(whole[i].total.gpu), Secs(pieces[i].total.gpu), 1e-3);
    EXPECT_NEAR(Secs(whole[i].total.cpu), Secs(pieces[i].total.cpu), 1e-3);
    EXPECT_NEAR(Secs(whole[i].total.memory_gib), Secs(pieces[i].total.memory_gib), 1e-3);
  }
  EXPECT_NEAR(Secs(UsageIn(pieces, "f", kDay0, end, end).gpu), 3.0 * (30 * 3600 + 3 - 7), 1e-3);
  EXPECT_NEAR(Secs(UsageIn(pieces, "", kDay0, end, end).gpu), 3.0 * (30 * 3600 - 4) + (48 * 3600 + 11), 1e-3);
}

// A day names its largest namespaces (kNamedNamespaces) and sums the rest under "others": the
// day's total stays exact.
TEST(UsageTest, ADayNamesItsLargestNamespacesAndSumsTheRest) {
  UsageHistory h;
  std::vector<UsageSpan> spans;
  for (int i = 0; i < 30; ++i) spans.push_back(Span("ns-" + std::to_string(i), "f", kDay0, kDay0 + hours(1), i + 1));
  FoldUsage(h, spans, kDay0, kDay0 + hours(1), FoldOptions{.hourly_since = std::nullopt, .max_bytes = kMaxUsageBytes});
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h[0].by_namespace.size(), kNamedNamespaces + 1);
  EXPECT_NEAR(h[0].by_namespace[kOthers].gpu, 55.0, 1e-9);  // 1 + ... + 10
  EXPECT_EQ(h[0].by_namespace.count("ns-29"), 1u);
  EXPECT_EQ(h[0].by_namespace.count("ns-9"), 0u);
  EXPECT_NEAR(h[0].total.gpu, 465.0, 1e-9);
  // Later in the day a larger newcomer takes the smallest name's place.
  FoldUsage(h, {Span("big", "f", kDay0 + hours(1), kDay0 + hours(2), 100)}, kDay0 + hours(1), kDay0 + hours(2),
            FoldOptions{.hourly_since = std::nullopt, .max_bytes = kMaxUsageBytes});
  EXPECT_EQ(h[0].by_namespace.count("big"), 1u);
  EXPECT_EQ(h[0].by_namespace.count("ns-10"), 0u);
  EXPECT_NEAR(h[0].by_namespace[kOthers].gpu, 66.0, 1e-9);
  EXPECT_NEAR(h[0].total.gpu, 565.0, 1e-9);
}

// 90 days at most; hourly detail only for the days the caller keeps it.
TEST(UsageTest, KeepsNinetyDaysAndHourlyDetailWhereAsked) {
  UsageHistory h;
  const auto span = Span("a", "f", kDay0, std::nullopt, 1);
  for (int d = 0; d < 120; ++d) {
    const TimePoint t = kDay0 + hours(24 * d);
    FoldUsage(h, {span}, t, t + hours(24), FoldOptions{.hourly_since = t + hours(24) - hours(24 * 7), .max_bytes = kMaxUsageBytes});
  }
  ASSERT_EQ(h.size(), static_cast<size_t>(kHistoryDays));
  EXPECT_EQ(h.front().day, UtcDay(kDay0 + hours(24 * 30)));
  size_t with_hours = 0;
  for (const auto& d : h) with_hours += d.hourly.empty() ? 0 : 1;
  EXPECT_EQ(with_hours, 7u);  // from the horizon's day on
  // A 12h window with an hourly edge: exact; a window whose edges lack hours: pro rata.
  const TimePoint now = kDay0 + hours(24 * 120);
  EXPECT_NEAR(UsageIn(h, "f", now - hours(12) - minutes(30), now, now).gpu, 12.5, 1e-9);
  EXPECT_NEAR(UsageIn(h, "f", now - hours(24 * 30) - hours(6), now, now).gpu, 30 * 24 + 6, 1e-9);
  EXPECT_NEAR(UsageIn(h, "other", now - hours(24), now, now).gpu, 0, 1e-12);
  // A window past what was folded counts what was: the last day's hours up to the watermark.
  UsageHistory partial;
  FoldUsage(partial, {span}, now, now + minutes(90), FoldOptions{.hourly_since = std::nullopt, .max_bytes = kMaxUsageBytes});
  EXPECT_NEAR(UsageIn(partial, "f", now + minutes(30), now + hours(3), now + minutes(90)).gpu, 1.0, 1e-9);
  EXPECT_NEAR(UsageIn(partial, "f", now, now + hours(24), now + minutes(90)).gpu, 1.5, 1e-9);
}

}  // namespace
}  // namespace berth::scheduling
