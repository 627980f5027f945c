// Budgets that queue (issue 47, item 3): one test per rule of TeamBudget (snapshot.h),
// TeamBook::Spent (teams.h) and Cycle::DropSpentFleets (cycle.h), through Schedule and the forecast.

#include <gtest/gtest.h>

#include "fixtures.h"
#include "scheduling/budgets.h"
#include "scheduling/estimate.h"
#include "scheduling/scheduler.h"
#include "scheduling/teams.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)
using std::chrono::hours;
using std::chrono::minutes;

// Fleets a100 and h100: 2 instances of 4 GPUs each, 1 GPU per block.
ClusterSnapshot TwoFleets() {
  ClusterSnapshot c;
  for (const char* f : {"a100", "h100"}) {
    c.fleets.push_back(Fleet(f, BlocksSetting::Count(4)));
    for (int i = 0; i < 2; ++i) c.instances.push_back(Instance(std::string(f) + "-" + std::to_string(i), f, Cpus(16, 64, 4)));
  }
  return c;
}

TeamBudget Budget(double hours_, double used, std::string fleet = "", TimePoint refills = kT0 + hours(3),
                  BudgetResource resource = BudgetResource::kGpu) {
  return TeamBudget{resource, std::move(fleet), hours_, std::chrono::duration_cast<Duration>(hours(24 * 30)), used, refills};
}

TeamSpec Team(std::string name, std::vector<TeamBudget> budgets, std::string parent = "") {
  TeamSpec t;
  t.name = name;
  t.namespaces = {name};
  t.parent = std::move(parent);
  t.budgets = std::move(budgets);
  return t;
}

PendingRun Gpus(std::string id, int64_t gpus, int32_t priority = 50) {
  return Pending(std::move(id), priority, kT0, 1, Resources{1000, 0, gpus});
}

CycleResult Cycle(const ClusterSnapshot& c, const std::vector<PendingRun>& runs, TimePoint now = kT0) {
  RunQueue queue(Duration(0));
  for (const PendingRun& r : runs) queue.Upsert(r);
  return Schedule(c, queue, now);
}

TEST(BudgetsTest, ARunOfATeamPastItsBudgetWaitsWithTheNumbersAndTheRefill) {
  ClusterSnapshot c = TwoFleets();
  c.teams = {Team("vision", {Budget(5000, 5012.46)}), Team("audio", {Budget(5000, 10)})};
  const CycleResult r = Cycle(c, {Gpus("vision/a", 1), Gpus("audio/a", 1)});
  const WaitingRun* w = FindWaiting(r, "vision/a");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kBudgetExhausted);
  EXPECT_EQ(ApiReason(w->reason.code), "BudgetExhausted");
  EXPECT_FALSE(IsUnschedulable(w->reason.code)) << "it waits, never fails";
  EXPECT_EQ(r.Explain(*w),
            "team vision has used 5012.5 of its 5000 gpu-hours over 30d on all fleets; the budget refills at "
            "2023-11-15T01:13:20Z");
  EXPECT_NE(FindPlacement(r, "audio/a"), nullptr) << "another team within its budget starts";
  EXPECT_FALSE(r.reservation.has_value()) << "a run held by its budget reserves nothing";
}

TEST(BudgetsTest, ASmallBudgetsNumbersReadAsWritten) {
  ClusterSnapshot c = TwoFleets();
  c.teams = {Team("vision", {Budget(0.05, 0.448)})};
  const CycleResult r = Cycle(c, {Gpus("vision/a", 1)});
  const WaitingRun* w = FindWaiting(r, "vision/a");
  ASSERT_NE(w, nullptr);
  const std::string said = "team vision has used 0.45 of its 0.05 gpu-hours over 30d on all fleets;";
  EXPECT_EQ(r.Explain(*w).substr(0, said.size()), said);
}

TEST(BudgetsTest, UsedJustUnderTheBudgetStartsAndMayOvershoot) {
  ClusterSnapshot c = TwoFleets();
  c.teams = {Team("vision", {Budget(100, 99.9)})};
  const CycleResult r = Cycle(c, {Gpus("vision/a", 4)});
  EXPECT_NE(FindPlacement(r, "vision/a"), nullptr) << "checked at start: a run that would start now does";
}

TEST(BudgetsTest, AFleetBudgetHoldsOnlyThatFleet) {
  ClusterSnapshot c = TwoFleets();
  c.teams = {Team("vision", {Budget(800, 800, "h100")})};
  PendingRun on_h100 = Gpus("vision/h", 1);
  on_h100.fleets = {"h100"};
  const CycleResult r = Cycle(c, {on_h100, Gpus("vision/any", 1)});
  const WaitingRun* w = FindWaiting(r, "vision/h");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kBudgetExhausted);
  EXPECT_NE(r.Explain(*w).find("on fleet h100"), std::string::npos) << r.Explain(*w);
  const Placement* p = FindPlacement(r, "vision/any");
  ASSERT_NE(p, nullptr) << "a run that may use a100 goes there";
  EXPECT_EQ(p->fleet, "a100");
}

TEST(BudgetsTest, ABudgetHoldsOnlyRunsThatAskForItsResource) {
  ClusterSnapshot c = TwoFleets();
  c.teams = {Team("vision", {Budget(10, 20)})};
  const CycleResult r = Cycle(c, {Pending("vision/cpu", 50, kT0, 1, Resources{1000, 0, 0})});
  EXPECT_NE(FindPlacement(r, "vision/cpu"), nullptr) << "a GPU budget does not hold a run without GPUs";
  c.teams = {Team("vision", {Budget(10, 20, "", kT0 + hours(3), BudgetResource::kCpu)})};
  const CycleResult cpu = Cycle(c, {Pending("vision/cpu", 50, kT0, 1, Resources{1000, 0, 0})});
  ASSERT_NE(FindWaiting(cpu, "vision/cpu"), nullptr);
  EXPECT_NE(cpu.Explain(*FindWaiting(cpu, "vision/cpu")).find("cpu-hours"), std::string::npos);
}

TEST(BudgetsTest, AParentsBudgetHoldsItsChildren) {
  ClusterSnapshot c = TwoFleets();
  c.teams = {Team("research", {Budget(1000, 1000)}), Team("vision", {}, "research")};
  const CycleResult r = Cycle(c, {Gpus("vision/a", 1)});
  const WaitingRun* w = FindWaiting(r, "vision/a");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kBudgetExhausted);
  ASSERT_TRUE(w->reason.budget);
  EXPECT_EQ(w->reason.budget->team, "research");
}

TEST(BudgetsTest, ARefilledBudgetHoldsNothing) {
  ClusterSnapshot c = TwoFleets();
  c.teams = {Team("vision", {Budget(5000, 6000, "", kT0 + hours(3))})};
  EXPECT_NE(FindWaiting(Cycle(c, {Gpus("vision/a", 1)}, kT0 + hours(2)), "vision/a"), nullptr);
  EXPECT_NE(FindPlacement(Cycle(c, {Gpus("vision/a", 1)}, kT0 + hours(3)), "vision/a"), nullptr);
}

TEST(BudgetsTest, ATeamPastItsBudgetDoesNotReclaimItsGuaranteedShare) {
  ClusterSnapshot c = TwoFleets();
  TeamSpec vision = Team("vision", {Budget(100, 150)});
  TeamShare share;
  share.fleet = "a100";
  share.nominal.gpus = 8;
  vision.shares.push_back(share);
  c.teams = {vision, Team("audio", {})};
  // audio borrows vision's whole share on a100.
  for (int i = 0; i < 2; ++i) {
    const std::string id = "audio/r" + std::to_string(i);
    c.running.push_back(Running(id, {{"a100-" + std::to_string(i), 4}}));
    c.placed_runs.push_back(PlacedRunInfo{id, 10, kT0 - hours(1)});
  }
  PendingRun run = Gpus("vision/a", 4, 100);
  run.fleets = {"a100"};
  const CycleResult r = Cycle(c, {run});
  EXPECT_TRUE(r.preemptions.empty()) << "the budget wins over the guaranteed share";
  const WaitingRun* w = FindWaiting(r, "vision/a");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kBudgetExhausted);
  // Within its budget the same run reclaims (the rule above is the budget's, not the setup's).
  c.teams[0].budgets.clear();
  EXPECT_EQ(Cycle(c, {run}).preemptions.size(), 1u);
}

TEST(BudgetsTest, TheEstimateOfAHeldRunIsWhenTheBudgetRefills) {
  EstimateInput in;
  in.snapshot = TwoFleets();
  in.snapshot.teams = {Team("vision", {Budget(5000, 6000, "", kT0 + hours(3))})};
  in.queued = {Gpus("vision/a", 1)};
  in.runtime["vision/a"] = hours(1);
  in.now = kT0;
  const std::vector<StartEstimate> e = EstimateStarts(in);
  ASSERT_EQ(e.size(), 1u);
  ASSERT_TRUE(e[0].start.has_value()) << static_cast<int>(e[0].unknown);
  EXPECT_EQ(*e[0].start, kT0 + hours(3));
}

// MeasureBudget: the window's usage from hourly usage, and when a spent budget refills.
TeamBudget Window(double hours_, std::chrono::hours period) {
  return TeamBudget{BudgetResource::kGpu, "", hours_, std::chrono::duration_cast<Duration>(period), 0, TimePoint{}};
}

TEST(MeasureBudgetTest, UsedIsTheWindowsHoursWithItsOldestHourCountedForItsPartInside) {
  const TimePoint now = kT0 + minutes(30);  // half an hour into the current hour
  // 10 GPU-hours in each of the 30 hours before the current one, and 5 so far in the current one.
  std::vector<UsedHour> used;
  for (int h = 1; h <= 30; ++h) used.push_back(UsedHour{kT0 - hours(h), 10});
  used.push_back(UsedHour{kT0, 5});
  TeamBudget b = Window(1000, hours(24));
  MeasureBudget(b, used, 0, now);
  // [now - 24h, now]: 23 whole past hours (kT0-23h .. kT0-1h), half of kT0-24h, and the current 5.
  EXPECT_NEAR(b.used, 23 * 10 + 5 + 5, 1e-9);
  EXPECT_EQ(b.refills_at, TimePoint{}) << "not spent: no refill";
}

TEST(MeasureBudgetTest, ASpentBudgetRefillsWhenEnoughOfTheWindowLeavesIt) {
  const TimePoint now = kT0;
  // 100 GPU-hours used in the hour 20h ago, nothing since: a 24h budget of 50 is spent until that
  // hour has half left the window: from now + 4h (it starts leaving) + 30 min.
  TeamBudget b = Window(50, hours(24));
  MeasureBudget(b, {UsedHour{kT0 - hours(20), 100}}, 0, now);
  EXPECT_NEAR(b.used, 100, 1e-9);
  EXPECT_EQ(b.refills_at, kT0 + hours(4) + minutes(30) + std::chrono::seconds(1));
}

TEST(MeasureBudgetTest, RunningRunsPushTheRefillLaterOrKeepItSpent) {
  TeamBudget b = Window(50, hours(24));
  MeasureBudget(b, {UsedHour{kT0 - hours(20), 100}}, /*rate=*/4, kT0);
  // At now + 4h + x hours: 100 * (1 - x) + 4 * (4 + x) < 50 -> x > 66 / 96 h = 41m15s.
  ASSERT_NE(b.refills_at, TimePoint{});
  EXPECT_EQ(b.refills_at, kT0 + hours(4) + minutes(41) + std::chrono::seconds(16));
  // 30 an hour: 100 * (1 - x) + 30 * (4 + x) >= 50 while the old hour leaves, and after it the
  // running runs alone use 150 and more in the window: never under 50.
  MeasureBudget(b, {UsedHour{kT0 - hours(20), 100}}, /*rate=*/30, kT0);
  EXPECT_EQ(b.refills_at, TimePoint{});
}

}  // namespace
}  // namespace berth::scheduling
