// Issue 47: a run's span as its status records it (usage_spans.h): what the fold takes of each run,
// and what admission writes; the codec's round trip of the span's fields.

#include <gtest/gtest.h>

#include <chrono>

#include "api/v1alpha1/codec.h"
#include "k8s/json.h"
#include "reconcilers/objects/usage_spans.h"

namespace berth::reconcilers {
namespace {

using RunObject = ::berth::reconcilers::Run;
namespace sched = scheduling;
using base::TimePoint;
using std::chrono::minutes;
using std::chrono::seconds;

const TimePoint kT0 = TimePoint(std::chrono::duration_cast<base::Duration>(seconds(1795824000)));

sched::Placement TwoRanks() {
  sched::Placement p;
  p.fleet = "a100";
  p.ranks.push_back(sched::RankPlacement{0, "n1", 2, sched::Resources{4000, int64_t{16} << 30, 2}});
  p.ranks.push_back(sched::RankPlacement{1, "n2", 1, sched::Resources{2000, int64_t{8} << 30, 1}});
  return p;
}

RunObject Admitted(TimePoint at) {
  RunObject r;
  r.meta.ns = "ml";
  r.meta.name = "train";
  BeginSpan(r.status, TwoRanks(), at);
  return r;
}

TEST(UsageSpans, AdmissionRecordsTheBlocksResourcesAndANewSpan) {
  const RunObject r = Admitted(kT0);
  ASSERT_TRUE(r.status.held_since.has_value());
  EXPECT_EQ(r.status.held_since->point(), kT0);
  ASSERT_TRUE(r.status.held.has_value());
  EXPECT_EQ(*r.status.held, (RunStatus::Held{"a100", 3, 6000, int64_t{24} << 30}));
  EXPECT_FALSE(SpanAccounted(r.status));
  // A run that never held blocks has nothing to account.
  EXPECT_TRUE(SpanAccounted(RunStatus{}));
}

TEST(UsageSpans, TheFoldTakesAHoldingSpanOpenAndAReleasedOneClosed) {
  RunObject r = Admitted(kT0);
  RunSpan open = SpanOfRun(r, /*holding=*/true);
  ASSERT_TRUE(open.span.has_value());
  EXPECT_EQ(open.close, RunSpan::Close::kNone);
  EXPECT_EQ(open.span->ns, "ml");
  EXPECT_EQ(open.span->fleet, "a100");
  EXPECT_EQ(open.span->start, kT0);
  EXPECT_FALSE(open.span->end.has_value());
  EXPECT_EQ(open.span->gpus, 3);
  // Not holding any more and no release recorded: folded up to now, then released there.
  RunSpan gone = SpanOfRun(r, /*holding=*/false);
  ASSERT_TRUE(gone.span.has_value());
  EXPECT_EQ(gone.close, RunSpan::Close::kRelease);
  EXPECT_FALSE(gone.span->end.has_value());
  // Released: closed at releasedAt, accounted by the write after its team's fold.
  r.status.released_at = api::Time(kT0 + minutes(5));
  RunSpan closed = SpanOfRun(r, /*holding=*/false);
  ASSERT_TRUE(closed.span.has_value());
  EXPECT_EQ(closed.close, RunSpan::Close::kAccount);
  EXPECT_EQ(closed.span->end, kT0 + minutes(5));
  // Accounted: nothing more to fold.
  r.status.accounted_until = r.status.released_at;
  EXPECT_TRUE(SpanAccounted(r.status));
  EXPECT_FALSE(SpanOfRun(r, false).span.has_value());
  // Accounted only part of the way (impossible from the fold, but read from any status): not accounted.
  r.status.accounted_until = api::Time(kT0 + minutes(4));
  EXPECT_FALSE(SpanAccounted(r.status));
}

TEST(UsageSpans, ARequeuedRunsNewSpanReplacesOnlyAnAccountedOne) {
  RunObject r = Admitted(kT0);
  r.status.released_at = api::Time(kT0 + minutes(5));
  r.status.accounted_until = api::Time(kT0 + minutes(5));
  BeginSpan(r.status, TwoRanks(), kT0 + minutes(10));
  EXPECT_EQ(r.status.held_since->point(), kT0 + minutes(10));
  EXPECT_FALSE(r.status.released_at.has_value());
  EXPECT_FALSE(r.status.accounted_until.has_value());
  // Admitted again before the last span was folded: that span goes on (its seconds are never
  // lost; the time between counts as held).
  r.status.released_at = api::Time(kT0 + minutes(15));
  BeginSpan(r.status, TwoRanks(), kT0 + minutes(16));
  EXPECT_EQ(r.status.held_since->point(), kT0 + minutes(10));
  EXPECT_FALSE(r.status.released_at.has_value());
}

TEST(UsageSpans, SecondsInAnIntervalAreTheOverlapTimesTheResources) {
  sched::UsageSpan s{.ns = "ml", .fleet = "a100", .start = kT0, .end = kT0 + minutes(10), .gpus = 2, .cpu_milli = 1500,
                     .memory_bytes = int64_t{4} << 30};
  const ResourceSeconds r = SecondsIn(s, kT0 + minutes(5), kT0 + minutes(20));
  EXPECT_DOUBLE_EQ(r.gpu, 2 * 300.0);
  EXPECT_DOUBLE_EQ(r.cpu, 1.5 * 300.0);
  EXPECT_DOUBLE_EQ(r.memory_gib, 4 * 300.0);
  EXPECT_DOUBLE_EQ(SecondsIn(s, kT0 + minutes(10), kT0 + minutes(20)).gpu, 0);
  s.end.reset();
  EXPECT_DOUBLE_EQ(SecondsIn(s, kT0, kT0 + minutes(20)).gpu, 2 * 1200.0);
}

TEST(UsageSpans, TheStatusKeepsTheSpanAndTheFoldsPatchWritesItsEnd) {
  RunObject r = Admitted(kT0);
  r.status.released_at = api::Time(kT0 + minutes(5));
  r.status.accounted_until = api::Time(kT0 + minutes(5));
  const std::string patch = api::RunStatusPatch(r.status, "7");
  auto doc = k8s::json::Parse(patch);
  ASSERT_TRUE(doc.ok());
  const k8s::json::Value* status = k8s::json::Find(*doc, {"status"});
  ASSERT_NE(status, nullptr);
  const RunStatus back = api::DecodeRunStatusLeniently(*status);
  EXPECT_EQ(back.held_since, r.status.held_since);
  EXPECT_EQ(back.released_at, r.status.released_at);
  EXPECT_EQ(back.accounted_until, r.status.accounted_until);
  EXPECT_EQ(back.held, r.status.held);
  // A new span clears the end of the last in the merge patch (null), so no old end stays.
  RunObject again = r;
  BeginSpan(again.status, TwoRanks(), kT0 + minutes(6));
  const std::string cleared = api::RunStatusPatch(again.status, "8");
  EXPECT_NE(cleared.find("\"releasedAt\":null"), std::string::npos) << cleared;
  EXPECT_NE(cleared.find("\"accountedUntil\":null"), std::string::npos) << cleared;
  // The fold's patch: the end and the watermark, guarded by the version it read.
  EXPECT_EQ(api::RunSpanPatch(api::Time(kT0 + minutes(5)), api::Time(kT0 + minutes(5)), "9"),
            R"({"metadata":{"resourceVersion":"9"},"status":{"releasedAt":"2026-11-28T00:05:00Z","accountedUntil":"2026-11-28T00:05:00Z"}})");
}

}  // namespace
}  // namespace berth::reconcilers
