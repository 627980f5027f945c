#include "reconcilers/writers/waiting_status.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/api_fixture.h"
#include "k8s/informer.h"
#include "k8s/timefmt.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using k8s::resources::kRuns;
using testing::FakeApi;

class WaitingStatusTest : public ApiFixture {
 protected:
  WaitingStatusTest()
      : admissions_(client_, clock_, events_, [](reconcilers::PassWrite w) { return w.write(); }),
        writes_(
            client_, clock_, events_, admissions_, options_,
            [this](reconcilers::PassWrite w) {
              keys_.push_back(w.key + (w.background ? " (background)" : ""));
              return w.write();  // a writer thread's work, done at once
            },
            [](const reconcilers::Run&) { return std::vector<std::shared_ptr<const k8s::Pod>>{}; }),
        positions_(
            client_, options_, admissions_, writes_, [](reconcilers::PassWrite) { return false; }, [] { return false; }),
        waiting_(snapshot_, writes_, events_, options_, [] { return size_t{0}; }, &forecaster_) {
    forecaster_.SetStepped();
  }

  // A run in the API, read into a working set's memo as a pass does; waiting for `code`.
  RunMemo& Submit(const std::string& name, const std::string& retry) {
    CreateRun(name, retry);
    return Pass(name);
  }
  // A pass that reads `name` from the API again.
  RunMemo& Pass(const std::string& name) {
    working_.BeginPass();
    working_.Touch("ns/" + name);
    const Keyed& keyed = working_.Make(
        clock_.Now(),
        [this](const std::string& key) { return GetRun(key.substr(3)); },
        [] {}, 1000);
    return *keyed.back().memo;
  }
  void Waits(RunMemo& memo, const std::string& key, sched::WaitCode code) {
    sched::WaitReason reason;
    reason.code = code;
    result_.waiting = {sched::WaitingRun{key, reason, 5, &memo}};
    working_.MarkWaiting(result_);
  }
  std::shared_ptr<const reconcilers::Run> Fetch(const std::string& name) { return GetRun(name); }

  // A forecast at `now` in which "ns/a" waits for the one instance, held by a run ending at
  // `ahead_end` (nullopt: no known end), taken as the loop takes it.
  // `spread`: the run ahead's learned end is one of these (a sampled forecast: estimates get ranges).
  void Forecast(std::optional<k8s::TimePoint> ahead_end, std::vector<k8s::TimePoint> spread = {}) {
    const sched::Resources node{8000, 0, 1};
    sched::EstimateInput in;
    sched::FleetSpec fleet;
    fleet.name = "gpu";
    in.snapshot.fleets.push_back(fleet);
    sched::InstanceSpec instance;
    instance.name = "i0";
    instance.fleet = "gpu";
    instance.allocatable = node;
    in.snapshot.instances.push_back(instance);
    sched::RunningRun ahead;
    ahead.id = "ns/ahead";
    ahead.placement = {{"i0", 1}};
    ahead.expected_end = ahead_end;
    in.snapshot.running.push_back(ahead);
    sched::PendingRun a;
    a.id = "ns/a";
    a.resources = node;
    a.submitted_at = clock_.Now();
    in.queued.push_back(a);
    in.runtime["ns/a"] = std::chrono::hours(1);
    if (!spread.empty()) {
      in.running_end["ns/ahead"] = spread[spread.size() / 2];
      in.running_end_spread["ns/ahead"] = spread;
    }
    in.now = clock_.Now();
    forecaster_.Hand(std::move(in));
    ASSERT_TRUE(forecaster_.RunQueued());
    ASSERT_TRUE(forecaster_.Take());
  }
  std::string Shown(const std::string& name) {
    auto run = Fetch(name);
    return run->status.estimated_start_at ? k8s::FormatRfc3339(run->status.estimated_start_at->point()) : "absent";
  }

  EngineOptions options_;
  Forecaster forecaster_{std::chrono::seconds(30), nullptr};
  PassSnapshot snapshot_;  // empty: the runs a test hands in are all it reads
  Admissions admissions_;
  RunWrites writes_;
  PositionWriter positions_;
  WaitingStatusWriter waiting_;
  WorkingSet working_;
  sched::CycleResult result_;
  std::vector<std::string> keys_;
};

TEST_F(WaitingStatusTest, ARunWithoutRetryOnNoCapacityFailsInsteadOfWaiting) {
  RunMemo& memo = Submit("a", "");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  const auto out = waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  EXPECT_EQ(out.oldest, memo.wait_since);
  ASSERT_EQ(keys_, (std::vector<std::string>{"ns/a"})) << "a failure is a decision, not a background write";
  EXPECT_EQ(Fetch("a")->status.phase, Phase::kFailed);
  EXPECT_EQ(Fetch("a")->status.reason.api(), "NoCapacity");
}

TEST_F(WaitingStatusTest, AWaitingRunIsWrittenInTheBackgroundOnceThenLeftAloneUntilItsRefresh) {
  options_.status_refresh = std::chrono::seconds(5);
  RunMemo& memo = Submit("a", R"("retry":{"onNoCapacity":true},)");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  auto out = waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  ASSERT_EQ(keys_, (std::vector<std::string>{"ns/a (background)"}));
  EXPECT_FALSE(out.refresh_left);
  auto run = Fetch("a");
  EXPECT_EQ(run->status.phase, Phase::kPending);
  EXPECT_EQ(run->status.reason.api(), "NoCapacity");
  EXPECT_EQ(run->status.effective_priority, 5);
  // The next passes read the written version: found current, nothing written.
  ASSERT_EQ(&Pass("a"), &memo);
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  EXPECT_EQ(keys_.size(), 1u);
  EXPECT_TRUE(memo.current);
}

// Issue 47: a sampled forecast's range is written with the estimate (status.estimatedStartRange),
// and goes when the forecast has none.
TEST_F(WaitingStatusTest, AWaitingRunShowsItsEstimatesRangeAndLosesItWithoutOne) {
  using std::chrono::minutes;
  const k8s::TimePoint t0 = clock_.Now();
  RunMemo& memo = Submit("a", R"("retry":{"onNoCapacity":true},)");
  Forecast(t0 + std::chrono::hours(1), {t0 + minutes(10), t0 + minutes(30), t0 + minutes(50)});
  Pass("a");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  auto run = Fetch("a");
  ASSERT_TRUE(run->status.estimated_start_at);
  ASSERT_TRUE(run->status.estimated_start_range) << "a sampled forecast gives a range";
  EXPECT_LE(run->status.estimated_start_range->earliest.point(), run->status.estimated_start_at->point());
  EXPECT_GE(run->status.estimated_start_range->latest.point(), run->status.estimated_start_at->point());
  EXPECT_LT(run->status.estimated_start_range->earliest.point(), run->status.estimated_start_range->latest.point());
  // The same cluster without learned spreads: one forecast, no range; the status loses it.
  clock_.Advance(options_.status_refresh + std::chrono::seconds(1));
  Forecast(t0 + minutes(30));
  Pass("a");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  run = Fetch("a");
  EXPECT_TRUE(run->status.estimated_start_at);
  EXPECT_FALSE(run->status.estimated_start_range);
}

TEST_F(WaitingStatusTest, AWaitingRunShowsItsEstimateRewrittenOnlyWhenItMovedMaterially) {
  options_.status_refresh = std::chrono::seconds(5);
  using std::chrono::minutes;
  using std::chrono::seconds;
  const k8s::TimePoint t0 = clock_.Now();
  RunMemo& memo = Submit("a", R"("retry":{"onNoCapacity":true},)");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  EXPECT_EQ(Shown("a"), "absent") << "no forecast yet";
  Forecast(t0 + minutes(30));
  Pass("a");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  EXPECT_EQ(Shown("a"), k8s::FormatRfc3339(t0 + minutes(30))) << "behind a run with 30 minutes left";
  const size_t writes = keys_.size();
  // 40 s later than shown: within a minute, not rewritten (also when its refresh comes).
  clock_.Advance(seconds(6));
  Forecast(t0 + minutes(30) + seconds(40));
  Pass("a");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  EXPECT_EQ(keys_.size(), writes);
  EXPECT_EQ(Shown("a"), k8s::FormatRfc3339(t0 + minutes(30)));
  // The run ahead ends earlier: 20 minutes earlier is material.
  clock_.Advance(seconds(6));
  Forecast(t0 + minutes(10));
  Pass("a");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  EXPECT_EQ(keys_.size(), writes + 1);
  EXPECT_EQ(Shown("a"), k8s::FormatRfc3339(t0 + minutes(10)));
  // Unknown (the run ahead has no known end): absent, and the message says why.
  clock_.Advance(seconds(6));
  Forecast(std::nullopt);
  Pass("a");
  Waits(memo, "ns/a", sched::WaitCode::kNotEnoughFreeBlocks);
  waiting_.CarryOut(result_, working_, positions_, clock_.Now(), [] {}, 256);
  EXPECT_EQ(Shown("a"), "absent");
  // Issue 47 (6): naming the run ahead that has no known end.
  EXPECT_NE(Fetch("a")->status.message.find("estimated start unknown: ahead has no maxDuration and no finished runs like it"),
            std::string::npos)
      << Fetch("a")->status.message;
}

TEST_F(WaitingStatusTest, APreemptingRunsStatusCarriesItsRecord) {
  RunMemo& memo = Submit("a", R"("retry":{"onNoCapacity":true},)");
  sched::CycleResult result;
  sched::PreemptionDecision d;
  d.run_id = "ns/a";
  d.plan.fleet = "gpu";
  d.plan.instances = {"n0"};
  d.plan.victims = {"ml/secret", "ns/low", "zz/other"};
  result.preemptions.push_back(d);
  waiting_.NotePreempting({}, result, working_);
  const RunStatus st = waiting_.Status(*memo.run, Reason::kPreempting, 5, std::nullopt, "m", clock_.Now());
  ASSERT_TRUE(st.preemption.has_value());
  // Issue 44: the status is ns's to read: its own victim by name, the others only counted.
  EXPECT_EQ(st.preemption->victims, (std::vector<std::string>{"ns/low"}));
  EXPECT_EQ(st.preemption->other_victims, 2);
  EXPECT_EQ(st.phase, Phase::kPending);
  EXPECT_TRUE(st.submitted_at.has_value());
}

}  // namespace
}  // namespace berth::reconcilers
