// The forecaster (issue 33): its hand-off to its own thread, the runtimes it learns, the input it
// makes from a pass', and the write budget of an estimate (MovedMaterially).

#include "reconcilers/engine/forecaster.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "unit/reconcilers/api_fixture.h"
#include "k8s/timefmt.h"
#include "unit/scheduling/fixtures.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

const sched::Resources kNode = sched::testing::Cpus(8, 64, 1);

// One fleet with one instance, held by run "ns/ahead" until `now + ahead_left` (nullopt: no
// known end); "ns/a" waits for it with a maxDuration of 1h.
sched::EstimateInput OneFullInstance(k8s::TimePoint now, std::optional<sched::Duration> ahead_left) {
  sched::EstimateInput in;
  in.snapshot.fleets.push_back(sched::testing::Fleet("gpu", sched::BlocksSetting::Count(1)));
  in.snapshot.instances.push_back(sched::testing::Instance("i0", "gpu", kNode));
  std::optional<k8s::TimePoint> end;
  if (ahead_left) end = now + *ahead_left;
  in.snapshot.running.push_back(sched::testing::Running("ns/ahead", {{"i0", 1}}, end));
  sched::PendingRun a = sched::testing::Pending("ns/a", 50, now, 1, kNode);
  a.max_duration = hours(1);
  in.queued.push_back(a);
  in.runtime["ns/a"] = hours(1);
  in.now = now;
  return in;
}

TEST(MovedMaterially, AbsentAndPresentAlwaysAndOtherwiseAMinuteOrATenthOfTheWait) {
  const k8s::TimePoint now = sched::testing::kT0;
  EXPECT_TRUE(MovedMaterially(std::nullopt, now + minutes(5), now)) << "absent -> present";
  EXPECT_TRUE(MovedMaterially(now + minutes(5), std::nullopt, now)) << "present -> absent";
  EXPECT_FALSE(MovedMaterially(std::nullopt, std::nullopt, now));
  // Near estimates: by more than a minute.
  EXPECT_FALSE(MovedMaterially(now + minutes(5), now + minutes(5) + seconds(60), now));
  EXPECT_TRUE(MovedMaterially(now + minutes(5), now + minutes(5) + seconds(61), now));
  EXPECT_TRUE(MovedMaterially(now + minutes(5), now + minutes(3), now)) << "earlier counts the same";
  // Far estimates: by more than 10 % of the time from now to the new estimate.
  EXPECT_FALSE(MovedMaterially(now + hours(10), now + hours(10) + minutes(50), now)) << "50m of 10h50m";
  EXPECT_TRUE(MovedMaterially(now + hours(10), now + hours(10) + minutes(70), now)) << "70m of 11h10m";
  EXPECT_FALSE(MovedMaterially(now - minutes(3), now - minutes(3) + seconds(30), now)) << "in the past: a minute";
}

TEST(EstimateNote, SaysWhyItIsUnknownOrTheBoundThatWouldStartItNow) {
  sched::StartEstimate e;
  e.start = sched::testing::kT0;
  EXPECT_EQ(EstimateNote(e), "");
  e.start_now_bound = minutes(25);
  EXPECT_EQ(EstimateNote(e), "would start now with maxDuration ≤ 25m");
  e.start.reset();
  e.start_now_bound.reset();
  e.unknown = sched::EstimateUnknown::kNoKnownEnd;
  EXPECT_EQ(EstimateNote(e), "estimated start unknown: " + std::string(sched::ExplainUnknown(e.unknown)));
}

TEST(Forecaster, SteppedHandOffIsTakenOnceDoneAndTheNextIsDueAfterTheInterval) {
  base::FakeClock clock;
  int wakes = 0;
  Forecaster f(seconds(30), [&](size_t, std::chrono::microseconds) { ++wakes; });
  f.SetStepped();
  const k8s::TimePoint t0 = clock.Now();
  ASSERT_TRUE(f.Due(t0)) << "the first forecast is due at once";
  EXPECT_FALSE(f.Take()) << "nothing handed over yet";
  f.Hand(OneFullInstance(t0, minutes(30)), 1);
  EXPECT_FALSE(f.Due(t0 + minutes(5))) << "not while one is under way";
  EXPECT_FALSE(f.DueAt(2).has_value());
  EXPECT_FALSE(f.Take()) << "not done yet";
  EXPECT_EQ(f.Of("ns/a"), nullptr);
  ASSERT_TRUE(f.RunQueued());
  EXPECT_FALSE(f.RunQueued()) << "one forecast, run once";
  EXPECT_EQ(wakes, 1) << "the loop is woken for it";
  ASSERT_TRUE(f.Take());
  EXPECT_FALSE(f.Take()) << "taken once";
  EXPECT_EQ(f.taken(), 1u);
  ASSERT_NE(f.Of("ns/a"), nullptr);
  EXPECT_EQ(f.Of("ns/a")->start, t0 + minutes(30)) << "behind a run with 30 minutes left";
  EXPECT_EQ(f.Of("ns/unknown"), nullptr);
  clock.Advance(seconds(29));
  EXPECT_FALSE(f.Due(clock.Now()));
  EXPECT_EQ(f.DueAt(1), std::nullopt) << "the same input: the passes that come anyway hand the next over";
  EXPECT_EQ(f.DueAt(2), t0 + seconds(30)) << "a new input: due at the interval";
  clock.Advance(seconds(1));
  EXPECT_TRUE(f.Due(clock.Now()));
}

TEST(Forecaster, ZeroIntervalIsNeverDue) {
  Forecaster f(std::chrono::milliseconds(0), nullptr);
  EXPECT_FALSE(f.enabled());
  EXPECT_FALSE(f.Due(sched::testing::kT0));
}

TEST(Forecaster, ItsThreadPublishesAndWakesTheLoop) {
  std::mutex mu;
  std::condition_variable cv;
  bool woken = false;
  Forecaster f(seconds(30), [&](size_t, std::chrono::microseconds) {
    std::lock_guard<std::mutex> lock(mu);
    woken = true;
    cv.notify_all();
  });
  const k8s::TimePoint now = sched::testing::kT0;
  f.Hand(OneFullInstance(now, std::nullopt));
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return woken; });  // waits for the event, not for a time
  }
  ASSERT_TRUE(f.Take());
  ASSERT_NE(f.Of("ns/a"), nullptr);
  EXPECT_FALSE(f.Of("ns/a")->start.has_value());
  EXPECT_EQ(f.Of("ns/a")->unknown, sched::EstimateUnknown::kNoKnownEnd) << "the run ahead has no maxDuration";
  f.Stop();
}

// The forecast's depth: the input holds the first max_runs queued runs in queue order; a run the
// forecast left out shows "unknown" (kQueueDepth) when its place is behind them, and nothing yet
// when it has no place or one within them (it arrived after the forecast was handed over).
TEST(Forecaster, LooksAtTheFirstMaxRunsAndCallsTheRestFurtherBackThanItLooks) {
  const k8s::TimePoint t0 = sched::testing::kT0;
  sched::EstimateInput full = OneFullInstance(t0, minutes(30));
  sched::RunQueue queue(minutes(15));
  for (int i = 0; i < 3; ++i) {
    sched::PendingRun p = sched::testing::Pending("ns/q" + std::to_string(i), 50, t0 - seconds(3 - i), 1, kNode);
    p.max_duration = hours(1);
    queue.Upsert(p);
  }
  queue.AdvanceTo(t0);
  const auto none = [](const std::string&) { return std::shared_ptr<const reconcilers::Run>(); };
  const auto team = [](const std::string&) { return std::string(); };
  sched::EstimateInput in = ForecastInput(full.snapshot, queue, {}, none, team, t0, 2);
  ASSERT_EQ(in.queued.size(), 2u);
  EXPECT_EQ(in.queued[0].id, "ns/q0") << "queue order";
  EXPECT_EQ(in.queued[1].id, "ns/q1");
  EXPECT_EQ(in.left_out, 1u);
  EXPECT_EQ(ForecastInput(full.snapshot, queue, {}, none, team, t0, 3).left_out, 0u) << "all of them fit";

  Forecaster f(seconds(30), nullptr, sched::EstimateOptions{.max_runs = 2});
  f.SetStepped();
  f.Hand(std::move(in));
  ASSERT_TRUE(f.RunQueued());
  ASSERT_TRUE(f.Take());
  ASSERT_NE(f.Of("ns/q1", 2), nullptr);
  EXPECT_EQ(f.Of("ns/q1", 2)->start, t0 + minutes(30) + hours(1)) << "behind the running run, then q0's hour";
  ASSERT_NE(f.Of("ns/q2", 3), nullptr);
  EXPECT_EQ(f.Of("ns/q2", 3)->unknown, sched::EstimateUnknown::kQueueDepth);
  EXPECT_FALSE(f.Of("ns/q2", 3)->start.has_value());
  EXPECT_EQ(EstimateNote(*f.Of("ns/q2", 3)), "estimated start unknown: more runs wait ahead of it than the forecast looks at");
  EXPECT_EQ(f.Of("ns/new", 2), nullptr) << "a place the forecast looked at: not in it yet, nothing to say";
  EXPECT_EQ(f.Of("ns/new"), nullptr) << "no place: nothing to say";

  Forecaster g(seconds(30), nullptr);
  g.SetStepped();
  g.Hand(ForecastInput(full.snapshot, queue, {}, none, team, t0));
  ASSERT_TRUE(g.RunQueued());
  ASSERT_TRUE(g.Take());
  EXPECT_EQ(g.Of("ns/other", 7), nullptr) << "a forecast that left nothing out calls no run further back";
}

class ForecastInputTest : public ApiFixture {};

TEST_F(ForecastInputTest, LearnsEachFinishedRunOnceAndPredictsFromThreeOfThem) {
  Forecaster f(seconds(30), nullptr);
  const auto team = [](const std::string&) { return std::string(); };
  const k8s::TimePoint t = clock_.Now();
  auto finished = [&](const std::string& name, int minutes_run) {
    const std::string placed = k8s::FormatRfc3339(t - hours(2));
    const std::string end = k8s::FormatRfc3339(t - hours(2) + minutes(minutes_run));
    return CreateRun(name, R"("nodes":1,)",
                     R"({"phase":"Succeeded","scheduledAt":")" + placed + R"(","finishedAt":")" + end + R"("})");
  };
  auto never_placed = CreateRun("train-9", "", R"({"phase":"Failed","finishedAt":")" + k8s::FormatRfc3339(t) + R"("})");
  ASSERT_FALSE(FinishedRecord(*never_placed, "").has_value()) << "a run never placed held no room";
  auto r1 = finished("train-1", 10);
  ASSERT_TRUE(FinishedRecord(*r1, "").has_value());
  EXPECT_EQ(FinishedRecord(*r1, "")->runtime, minutes(10));
  f.Learn(*r1, team);
  f.Learn(*r1, team);
  f.Learn(*r1, team);
  EXPECT_FALSE(f.history().Predict("ns", "train-4", "", {}, std::nullopt).has_value())
      << "the same run three times is one sample";
  f.Learn(*finished("train-2", 20), team);
  f.Learn(*finished("train-3", 30), team);
  f.Learn(*never_placed, team);
  auto waiting = CreateRun("train-4", R"("maxDuration":"2h",)");
  auto no_history = CreateRun("eval", R"("nodes":2,"maxDuration":"45m",)");  // another shape too
  sched::RunQueue queue(minutes(15));
  for (const auto& r : {waiting, no_history}) {
    sched::PendingRun p = sched::testing::Pending("ns/" + r->meta.name, 50, t, 1, {});
    p.max_duration = r->spec.max_duration;
    queue.Upsert(p);
  }
  const sched::EstimateInput in = ForecastInput(
      sched::ClusterSnapshot{}, queue, f.history(),
      [this](const std::string& key) { return GetRun(key.substr(3)); }, team, t);
  EXPECT_EQ(in.queued.size(), 2u);
  EXPECT_EQ(in.runtime.at("ns/train-4"), minutes(20)) << "the median of train-1..3";
  EXPECT_EQ(in.runtime.at("ns/eval"), minutes(45)) << "no comparable run: its maxDuration";
  EXPECT_EQ(in.now, t);
}

}  // namespace
}  // namespace berth::reconcilers
