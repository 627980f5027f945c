// Issue 47: the queue's in-memory series as the queue API serves it (.../usage/queue,
// controller/queue_series.h), fed through the metrics as the engine feeds them: every pass' waiting
// runs and every admission's wait, on the injected clock.

#include "controller/queue_series.h"

#include <gtest/gtest.h>

#include <chrono>

#include "controller/metrics.h"
#include "k8s/json.h"

namespace berth::controller {
namespace {

namespace json = k8s::json;
using std::chrono::minutes;
using std::chrono::seconds;

// 2026-11-30T12:00:00Z
const k8s::TimePoint kT0 = k8s::TimePoint(std::chrono::duration_cast<base::Duration>(seconds(1796040000)));

TEST(QueueSeries, EmptyUntilTheFirstPass) {
  k8s::FakeClock clock(kT0);
  QueueSeries series(clock);
  auto parsed = json::Parse(series.Json(true));
  ASSERT_TRUE(parsed.ok());
  const json::Document& d = *parsed;
  EXPECT_EQ(json::GetString(d, "kind"), "QueueHistory");
  EXPECT_TRUE(json::Find(d, {"recordingSince"})->IsNull());
  EXPECT_EQ(json::Find(d, {"minutes"})->Size(), 0u);
  EXPECT_EQ(json::GetInt(d, "stepSeconds"), 60);
}

TEST(QueueSeries, ThePassesAndStartsTheMetricsSeePerMinute) {
  k8s::FakeClock clock(kT0 + seconds(10));
  QueueSeries series(clock);
  Metrics metrics;
  metrics.SetQueueSeries(&series);
  reconcilers::EngineObserver::PassSummary pass;
  pass.pending = {{{"a100", "NoCapacity"}, 3}, {{"none", "Unschedulable"}, 1}};
  metrics.OnPass(pass);
  metrics.OnAdmitted(std::chrono::milliseconds(90'000));
  metrics.OnAdmitted(std::chrono::milliseconds(30'000));
  clock.Advance(minutes(2));
  pass.pending = {{{"a100", "NoCapacity"}, 1}};
  metrics.OnPass(pass);

  auto parsed = json::Parse(series.Json(false));
  ASSERT_TRUE(parsed.ok());
  const json::Document& d = *parsed;
  EXPECT_FALSE(json::GetBool(d, "leader"));
  EXPECT_EQ(json::GetString(d, "recordingSince"), "2026-11-30T12:00:10Z");
  const json::Value* m = json::Find(d, {"minutes"});
  ASSERT_EQ(m->Size(), 2u);
  EXPECT_EQ(json::GetString((*m)[0], "at"), "2026-11-30T12:00:00Z");
  EXPECT_EQ(json::GetInt((*m)[0], "pending"), 4);
  EXPECT_EQ(json::GetInt((*m)[0], "starts"), 2);
  EXPECT_DOUBLE_EQ(json::Find((*m)[0], {"medianWaitSeconds"})->GetDouble(), 60);
  EXPECT_DOUBLE_EQ(json::Find((*m)[0], {"maxWaitSeconds"})->GetDouble(), 90);
  EXPECT_EQ(json::GetString((*m)[1], "at"), "2026-11-30T12:02:00Z");
  EXPECT_EQ(json::GetInt((*m)[1], "pending"), 1);
  EXPECT_EQ(json::GetInt((*m)[1], "starts"), 0);
}

}  // namespace
}  // namespace berth::controller
