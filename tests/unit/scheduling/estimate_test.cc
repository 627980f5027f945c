// Start-time estimates (issue 33): exact answers for small hand-made cases.

#include "scheduling/estimate.h"

#include <gtest/gtest.h>

#include "fixtures.h"

namespace berth::scheduling {
namespace {

using namespace testing;  // NOLINT: the fixtures' builders
using std::chrono::hours;
using std::chrono::minutes;

const Resources kWholeNode = Cpus(64, 512, 8);

// One fleet of `n` instances of 8 GPUs, one block each (a run takes a whole instance).
ClusterSnapshot Machines(int n, PlacementPolicy placement = PlacementPolicy::kAny) {
  ClusterSnapshot s;
  s.fleets.push_back(Fleet("gpu", BlocksSetting::Count(1), placement));
  for (int i = 0; i < n; ++i) s.instances.push_back(Instance("i" + std::to_string(i), "gpu", kWholeNode));
  return s;
}

PendingRun Queued(const std::string& id, int minutes_late, int32_t nodes = 1, std::optional<Duration> max = std::nullopt) {
  PendingRun r = Pending(id, 50, kT0 + std::chrono::minutes(minutes_late), nodes, kWholeNode);
  r.max_duration = max;
  return r;
}

const StartEstimate& Of(const std::vector<StartEstimate>& all, const std::string& id) {
  for (const StartEstimate& e : all) {
    if (e.run_id == id) return e;
  }
  static const StartEstimate none{.run_id = "<none>", .start = std::nullopt, .start_now_bound = std::nullopt};
  ADD_FAILURE() << "no estimate for " << id;
  return none;
}

TEST(EstimateStarts, AQueueBehindARunWithThirtyMinutesLeftStartsOneAfterAnother) {
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running.push_back(Running("ns/a", {{"i0", 1}}, kT0 + minutes(30)));
  in.queued = {Queued("ns/c", 2), Queued("ns/b", 1)};
  in.runtime = {{"ns/b", hours(1)}, {"ns/c", hours(1)}};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].run_id, "ns/b") << "queue order";
  EXPECT_EQ(Of(e, "ns/b").start, kT0 + minutes(30));
  EXPECT_EQ(Of(e, "ns/c").start, kT0 + minutes(90));
}

TEST(EstimateStarts, AGangWaitsForTwoIdleInstancesAtOnce) {
  EstimateInput in;
  in.snapshot = Machines(3, PlacementPolicy::kCluster);
  in.snapshot.running = {Running("ns/x", {{"i0", 1}}, kT0 + minutes(10)), Running("ns/y", {{"i1", 1}}, kT0 + minutes(40)),
                         Running("ns/z", {{"i2", 1}})};  // z: no known end
  in.queued = {Queued("ns/gang", 0, 2)};
  in.runtime = {{"ns/gang", hours(2)}};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/gang").start, kT0 + minutes(40)) << "i0 alone (at 10m) is not enough; i0 and i1 are at 40m";
}

TEST(EstimateStarts, ARunThatBackfillsStartsNowAndALongerOneSaysTheBound) {
  EstimateInput in;
  in.snapshot = Machines(4, PlacementPolicy::kCluster);
  in.snapshot.running = {Running("ns/r1", {{"i1", 1}}, kT0 + hours(1)), Running("ns/r2", {{"i2", 1}}, kT0 + hours(2))};
  // The gang needs all four: it holds the reservation (earliest start 2h); i0 and i3 are idle now.
  in.queued = {Queued("ns/gang", 0, 4, hours(1)), Queued("ns/short", 1, 1, minutes(30)), Queued("ns/long", 2, 1, hours(3))};
  in.runtime = {{"ns/gang", hours(1)}, {"ns/short", minutes(30)}, {"ns/long", hours(3)}};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/short").start, kT0) << "backfills at once: it ends before the gang's start";
  EXPECT_EQ(Of(e, "ns/gang").start, kT0 + hours(2));
  EXPECT_EQ(Of(e, "ns/long").start, kT0 + hours(3)) << "after the gang, which takes every instance for 1h";
  EXPECT_EQ(Of(e, "ns/long").start_now_bound, hours(2)) << "would start now with maxDuration <= 2h";
  EXPECT_EQ(Of(e, "ns/gang").start_now_bound, std::nullopt);
}

TEST(EstimateStarts, UnknownWhenNoKnownEndFreesTheRoomOrNoFleetCanHoldTheRun) {
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running = {Running("ns/forever", {{"i0", 1}})};
  PendingRun lost = Queued("ns/lost", 1);
  lost.fleets = {"h100"};  // no such fleet
  in.queued = {Queued("ns/next", 0), lost};
  in.runtime = {{"ns/next", hours(1)}};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/next").start, std::nullopt);
  EXPECT_EQ(Of(e, "ns/next").unknown, EstimateUnknown::kNoKnownEnd);
  EXPECT_EQ(Of(e, "ns/lost").unknown, EstimateUnknown::kUnschedulable);
  EXPECT_NE(ExplainUnknown(EstimateUnknown::kNoKnownEnd).find("without a known end"), std::string_view::npos);
}

TEST(EstimateStarts, AnUnknownEstimateNamesTheRunningRunWithoutAnEndOnItsFleets) {
  // Issue 47 (6): train-llm holds gpu's only instance for good; other/forever holds t4's.
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.fleets.push_back(Fleet("t4", BlocksSetting::Count(1)));
  in.snapshot.instances.push_back(Instance("j0", "t4", kWholeNode));
  in.snapshot.running = {Running("other/forever", {{"j0", 1}}), Running("ns/train-llm", {{"i0", 1}})};
  PendingRun on_gpu = Queued("ns/next", 0), on_t4 = Queued("ns/t4-run", 1);
  on_gpu.fleets = {"gpu"};
  on_t4.fleets = {"t4"};
  in.queued = {on_gpu, on_t4};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/next").unknown, EstimateUnknown::kNoKnownEnd);
  EXPECT_EQ(Of(e, "ns/next").no_end_run, "ns/train-llm");
  EXPECT_EQ(ExplainEstimate(Of(e, "ns/next")), "train-llm has no maxDuration and no finished runs like it");
  EXPECT_EQ(Of(e, "ns/t4-run").no_end_run, "other/forever");
  EXPECT_EQ(ExplainEstimate(Of(e, "ns/t4-run")),
            "a run of another namespace ahead of it has no maxDuration and no finished runs like it")
      << "a status names no run of another namespace";
}

TEST(EstimateStarts, AnUnknownEstimateNamesTheRunAheadThatTheForecastStartsWithoutAnEnd) {
  // a ends in 30m; train-llm (no maxDuration, nothing learned) starts then and never ends.
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running = {Running("ns/a", {{"i0", 1}}, kT0 + minutes(30))};
  in.queued = {Queued("ns/train-llm", 0), Queued("ns/next", 1)};
  in.runtime = {{"ns/next", hours(1)}};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/train-llm").start, kT0 + minutes(30));
  EXPECT_EQ(Of(e, "ns/next").unknown, EstimateUnknown::kNoKnownEnd);
  EXPECT_EQ(ExplainEstimate(Of(e, "ns/next")), "train-llm has no maxDuration and no finished runs like it");
  // Without a run to name (the instance is gone for good): the general sentence.
  StartEstimate general{.run_id = "ns/x", .start = std::nullopt, .unknown = EstimateUnknown::kNoKnownEnd,
                        .start_now_bound = std::nullopt};
  EXPECT_EQ(ExplainEstimate(general), ExplainUnknown(EstimateUnknown::kNoKnownEnd));
}

TEST(EstimateStarts, ALearnedEndOfARunningRunCountsLikeAMaxDuration) {
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running = {Running("ns/a", {{"i0", 1}})};
  in.running_end = {{"ns/a", kT0 + minutes(25)}};
  in.queued = {Queued("ns/b", 0)};
  in.now = kT0;
  EXPECT_EQ(Of(EstimateStarts(in), "ns/b").start, kT0 + minutes(25));
}

TEST(EstimateStarts, ALearnedEarlyEndDoesNotMoveTheReservationTheSchedulerHolds) {
  // The gang holds the reservation from r1's maxDuration end (2h). The scheduler decides on that
  // end, whatever the forecast expects: "short" (maxDuration 90m) may not backfill now, though r1
  // is expected to end at 30m, so its estimate is not "now" (the cycle at now did not place it).
  EstimateInput in;
  in.snapshot = Machines(2, PlacementPolicy::kCluster);
  in.snapshot.running = {Running("ns/r1", {{"i1", 1}}, kT0 + hours(2))};
  in.running_end = {{"ns/r1", kT0 + minutes(30)}};
  in.queued = {Queued("ns/gang", 0, 2, hours(1)), Queued("ns/short", 1, 1, minutes(150))};
  in.runtime = {{"ns/gang", hours(1)}, {"ns/short", minutes(20)}};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/gang").start, kT0 + minutes(30)) << "r1 is expected to end at 30m: both instances free";
  EXPECT_EQ(Of(e, "ns/short").start, kT0 + minutes(90)) << "after the gang (1h), not now";
  EXPECT_EQ(Of(e, "ns/short").start_now_bound, hours(2)) << "backfill bound from the reservation the scheduler holds";
}

TEST(EstimateStarts, HigherPriorityFirstAndAgingAsTheQueueHasIt) {
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running = {Running("ns/a", {{"i0", 1}}, kT0 + minutes(10))};
  PendingRun low = Queued("ns/low", 0);
  low.priority = 10;
  PendingRun high = Queued("ns/high", 5);
  high.priority = 90;
  in.queued = {low, high};
  in.runtime = {{"ns/low", minutes(10)}, {"ns/high", minutes(10)}};
  in.now = kT0 + minutes(5);
  const auto e = EstimateStarts(in, EstimateOptions{.aging_interval = Duration::zero()});
  EXPECT_EQ(Of(e, "ns/high").start, kT0 + minutes(10));
  EXPECT_EQ(Of(e, "ns/low").start, kT0 + minutes(20));
  // Aging a step every 3 seconds: by 10m both are at 100, and the low run was submitted first.
  const auto aged = EstimateStarts(in, EstimateOptions{.aging_interval = std::chrono::seconds(3)});
  EXPECT_EQ(Of(aged, "ns/low").start, kT0 + minutes(10));
  EXPECT_EQ(Of(aged, "ns/high").start, kT0 + minutes(20));
}

TEST(EstimateStarts, TheBudgetAndTheHorizonBoundTheForecast) {
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running = {Running("ns/a", {{"i0", 1}}, kT0 + minutes(10))};
  for (int i = 0; i < 5; ++i) {
    in.queued.push_back(Queued("ns/q" + std::to_string(i), i));
    in.runtime["ns/q" + std::to_string(i)] = hours(1);
  }
  in.now = kT0;
  const auto budget = EstimateStarts(in, EstimateOptions{.max_cycles = 3});
  EXPECT_EQ(Of(budget, "ns/q1").start, kT0 + minutes(70));
  EXPECT_EQ(Of(budget, "ns/q2").unknown, EstimateUnknown::kBudget);
  const auto horizon = EstimateStarts(in, EstimateOptions{.horizon = hours(2)});
  EXPECT_EQ(Of(horizon, "ns/q1").start, kT0 + minutes(70));
  EXPECT_EQ(Of(horizon, "ns/q2").unknown, EstimateUnknown::kBeyondHorizon);
}

// Far from now the cycles are further apart (5 % of the time from now): a run behind another that
// ends 1 minute after a start 10 hours out is estimated within 5 % of its wait, in one cycle less.
TEST(EstimateStarts, CyclesFarFromNowAreFurtherApart) {
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running = {Running("ns/a", {{"i0", 1}}, kT0 + hours(10))};
  for (int i = 0; i < 2; ++i) {
    in.queued.push_back(Queued("ns/q" + std::to_string(i), i));
    in.runtime["ns/q" + std::to_string(i)] = minutes(1);
  }
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/q0").start, kT0 + hours(10));
  EXPECT_EQ(Of(e, "ns/q1").start, kT0 + hours(10) + minutes(30)) << "the next cycle 5 % of 10h later";
  const auto fine = EstimateStarts(in, EstimateOptions{.step_fraction = 0});
  EXPECT_EQ(Of(fine, "ns/q1").start, kT0 + hours(10) + minutes(1)) << "a fixed 1-minute step";
}

// Sampled forecasts: eight machines, each held by a run expected (its median) to end at 30m but
// that ends at 10, 30 or 50 minutes as often. One forecast on the medians says 30m for the run
// waiting for the first of them; the five sampled forecasts say 10m, since in each of them one of
// the eight is likely to end after 10 minutes (the soonest of many uncertain ends comes earlier
// than the soonest of their medians). A run without a spread waits as before.
TEST(EstimateStarts, SampledForecastsTakeTheSoonestOfUncertainEndsIntoAccount) {
  EstimateInput in;
  in.snapshot = Machines(8);
  for (int i = 0; i < 8; ++i) {
    const std::string id = "ns/r" + std::to_string(i);
    in.snapshot.running.push_back(Running(id, {{"i" + std::to_string(i), 1}}, kT0 + hours(1)));
    in.running_end[id] = kT0 + minutes(30);
    in.running_end_spread[id] = {kT0 + minutes(10), kT0 + minutes(30), kT0 + minutes(50)};
  }
  in.queued = {Queued("ns/q", 0)};
  in.runtime["ns/q"] = minutes(10);
  in.now = kT0;
  EXPECT_EQ(Of(EstimateStarts(in, EstimateOptions{.samples = 1}), "ns/q").start, kT0 + minutes(30));
  EXPECT_EQ(Of(EstimateStarts(in, EstimateOptions{.samples = 5}), "ns/q").start, kT0 + minutes(10));
  // Deterministic: the same input gives the same answer.
  EXPECT_EQ(Of(EstimateStarts(in), "ns/q").start, Of(EstimateStarts(in), "ns/q").start);
  // Without spreads the sampled forecasts are one forecast.
  in.running_end_spread.clear();
  EXPECT_EQ(Of(EstimateStarts(in, EstimateOptions{.samples = 5}), "ns/q").start, kT0 + minutes(30));
}

// A queued Pod's gated Pods are in its namespace's quota usage while it waits (quota_counted):
// the forecast places it on that quota, charges its placement instead of them, and frees the
// quota when it ends, so the Job behind it starts then.
TEST(EstimateStarts, AQueuedPodsOwnPodsInTheQuotaUsageAreCountedOnce) {
  EstimateInput in;
  in.snapshot = Machines(2);
  in.snapshot.quotas = {NamespaceQuota{"ns", {{"requests.nvidia.com/gpu", QuotaLimit{8, 8, "gpus"}}}}};
  PendingRun pod = Queued("ns/pod", 0);
  pod.quota_counted = {{"requests.nvidia.com/gpu", 8}, {kQuotaPods, 1}};
  in.queued = {pod, Queued("ns/job", 1)};
  in.runtime = {{"ns/pod", hours(1)}, {"ns/job", hours(1)}};
  in.now = kT0;
  const auto e = EstimateStarts(in);
  EXPECT_EQ(Of(e, "ns/pod").start, kT0);
  EXPECT_EQ(Of(e, "ns/job").start, kT0 + hours(1));
}

// Issue 47: a range from the sampled forecasts. The run waits for the one machine, whose run
// ends at 10, 30 or 50 minutes as often: its range spans those ends around its estimate; one
// forecast, a run without spread and a run that cannot start have no range.
TEST(EstimateRanges, SampledForecastsGiveTheTenthAndNinetiethPercentileOfTheStarts) {
  EstimateInput in;
  in.snapshot = Machines(1);
  in.snapshot.running.push_back(Running("ns/r", {{"i0", 1}}, kT0 + hours(1)));
  in.running_end["ns/r"] = kT0 + minutes(30);
  in.running_end_spread["ns/r"] = {kT0 + minutes(10), kT0 + minutes(30), kT0 + minutes(50)};
  in.queued = {Queued("ns/q", 0), Queued("ns/never", 1, 2)};  // ns/never: two machines, the fleet has one
  in.runtime["ns/q"] = minutes(10);
  in.now = kT0;
  const std::vector<StartEstimate> all = EstimateStarts(in, EstimateOptions{.samples = 5});
  const StartEstimate& e = Of(all, "ns/q");
  ASSERT_TRUE(e.start && e.range);
  EXPECT_LE(e.range->earliest, *e.start);
  EXPECT_GE(e.range->latest, *e.start);
  EXPECT_LT(e.range->earliest, e.range->latest) << "the ends differ, so the starts do";
  EXPECT_GE(e.range->earliest, kT0 + minutes(10));
  EXPECT_LE(e.range->latest, kT0 + minutes(50));
  EXPECT_FALSE(Of(EstimateStarts(in, EstimateOptions{.samples = 5}), "ns/never").range);
  EXPECT_FALSE(Of(EstimateStarts(in, EstimateOptions{.samples = 1}), "ns/q").range) << "one forecast spreads nothing";
  in.running_end_spread.clear();
  EXPECT_FALSE(Of(EstimateStarts(in, EstimateOptions{.samples = 5}), "ns/q").range) << "no spread in the input";
}

TEST(EstimateRanges, PercentileInterpolatesBetweenRanksAndNeedsNoUnknownStart) {
  const std::vector<TimePoint> five = {kT0, kT0 + minutes(10), kT0 + minutes(20), kT0 + minutes(30), kT0 + minutes(40)};
  EXPECT_EQ(Percentile(five, 5, 0.0), kT0);
  EXPECT_EQ(Percentile(five, 5, 0.1), kT0 + minutes(4)) << "rank 0.4: 40 % of the way to the second";
  EXPECT_EQ(Percentile(five, 5, 0.5), kT0 + minutes(20));
  EXPECT_EQ(Percentile(five, 5, 0.9), kT0 + minutes(36));
  EXPECT_EQ(Percentile(five, 5, 1.0), kT0 + minutes(40));
  // Five forecasts of which one did not start the run: its 90th percentile needs the unknown one.
  const std::vector<TimePoint> four(five.begin(), five.begin() + 4);
  EXPECT_EQ(Percentile(four, 5, 0.1), kT0 + minutes(4));
  EXPECT_FALSE(Percentile(four, 5, 0.9));
  EXPECT_EQ(Percentile(four, 5, 0.75), kT0 + minutes(30)) << "exactly the last known rank";
  EXPECT_FALSE(Percentile({}, 5, 0.1));
  EXPECT_FALSE(Percentile(five, 0, 0.1));
}

// The calibration: until kMinObservations the sampled range is shown as it is; then each side is
// widened by the 80th percentile (finite-sample rank) of how far starts fell outside their ranges,
// relative to the estimated wait.
TEST(EstimateRanges, CalibrationWidensRangesByHowFarPastStartsFellOutsideTheirs) {
  EstimateCalibration c(100);
  const std::optional<StartRange> sampled = StartRange{kT0 + minutes(50), kT0 + minutes(70)};
  // Each run estimated at kT0 to start at 60m (range 50m-70m); run k started (k - 10) x 1.2 minutes
  // past its range's end: scores -0.2 (inside) up to +0.18 of the 60-minute wait.
  for (int k = 0; k < 20; ++k) {
    EXPECT_EQ(c.Range(kT0, kT0 + minutes(60), sampled), sampled) << "fewer than kMinObservations: the sampled range";
    c.Observe(kT0, kT0 + minutes(60), sampled, kT0 + minutes(70) + std::chrono::seconds(72 * (k - 10)));
  }
  ASSERT_TRUE(c.Margin());
  // n = 20: the ceil(21 x 0.8) = 17th smallest score: run 16, 6 x 72 s = 7.2 min past: 0.12.
  EXPECT_NEAR(*c.Margin(), 0.12, 1e-9);
  const auto r = c.Range(kT0, kT0 + minutes(100), StartRange{kT0 + minutes(90), kT0 + minutes(110)});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->earliest, kT0 + minutes(78)) << "90m less 0.12 x the 100-minute wait";
  EXPECT_EQ(r->latest, kT0 + minutes(122));
  const auto point = c.Range(kT0, kT0 + minutes(100), std::nullopt);
  ASSERT_TRUE(point) << "a run without a sampled range gets one around its point";
  EXPECT_EQ(point->earliest, kT0 + minutes(88));
  EXPECT_EQ(point->latest, kT0 + minutes(112));
  EXPECT_FALSE(c.Range(kT0, kT0, sampled)) << "a run that starts now shows no range";
  // Never before now: a large margin clips the earliest at now.
  for (int k = 0; k < 100; ++k) c.Observe(kT0, kT0 + minutes(60), sampled, kT0 + minutes(200));
  EXPECT_EQ(c.Range(kT0, kT0 + minutes(10), std::nullopt)->earliest, kT0);
  // The window keeps the last 100: starts inside their ranges bring the margin to 0.
  for (int k = 0; k < 100; ++k) c.Observe(kT0, kT0 + minutes(60), sampled, kT0 + minutes(60));
  EXPECT_EQ(*c.Margin(), 0.0);
  // An estimated wait under a minute is not kept.
  EstimateCalibration short_waits;
  for (int k = 0; k < 30; ++k) short_waits.Observe(kT0, kT0 + std::chrono::seconds(30), std::nullopt, kT0 + hours(1));
  EXPECT_EQ(short_waits.size(), 0u);
}

}  // namespace
}  // namespace berth::scheduling
