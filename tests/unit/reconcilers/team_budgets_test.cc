// Issue 47 (3, 7): a Team's budgets measured in the engine (reconcilers/objects/team_budgets.h):
// its usage history and its running runs since the fold, each fleet's hours times its costWeight,
// a parent's budget counting its sub-teams.

#include "reconcilers/objects/team_budgets.h"

#include <gtest/gtest.h>

#include "scheduling/usage.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using std::chrono::hours;
using std::chrono::minutes;

// 2026-11-30T10:00:00Z.
const sched::TimePoint kHour10 = sched::TimePoint(std::chrono::seconds(1796032800));

// A Team named `name` whose history holds `gpus` GPUs held over [from, to) on `fleet`, folded up to `to`.
std::shared_ptr<Team> TeamWith(const std::string& name, const std::string& fleet, int64_t gpus, sched::TimePoint from,
                               sched::TimePoint to) {
  auto t = std::make_shared<Team>();
  t->meta.name = name;
  t->meta.uid = name + "-uid";
  sched::FoldUsage(t->status.usage_history,
                   {{.ns = name, .fleet = fleet, .start = from, .end = to, .gpus = gpus, .cpu_milli = 0, .memory_bytes = 0}}, from, to,
                   {.hourly_since = from - hours(48), .max_bytes = sched::kMaxUsageBytes});
  t->status.usage_folded_until = api::Time(to);
  return t;
}

api::TeamBudget Gpu(double hours_allowed, sched::Duration period, std::string fleet = "") {
  return api::TeamBudget{"gpu", hours_allowed, "", period, std::move(fleet)};
}

TEST(MeasureTeamBudgets, HistoryTimesEachFleetsCostWeight) {
  auto t = TeamWith("vision", "h100", 20, kHour10 - hours(1), kHour10);
  t->spec.budgets = {Gpu(50, hours(2)), Gpu(50, hours(2), "t4")};
  const auto b = MeasureTeamBudgets(*t, {t}, {}, {{"h100", 3}}, kHour10 + minutes(30));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_DOUBLE_EQ(b[0].used, 60) << "20 GPU-hours on h100, weight 3";
  EXPECT_TRUE(b[0].Spent(kHour10 + minutes(30)));
  // The window [t - 2h, t] leaves hour 9 behind from 11:00 on, evenly: under 50 at 11:10.
  EXPECT_GE(b[0].refills_at, kHour10 + hours(1) + minutes(10));
  EXPECT_LE(b[0].refills_at, kHour10 + hours(1) + minutes(10) + std::chrono::seconds(1));
  EXPECT_DOUBLE_EQ(b[1].used, 0) << "a budget of fleet t4 counts only t4";
  EXPECT_FALSE(b[1].Spent(kHour10 + minutes(30)));
}

TEST(MeasureTeamBudgets, RunningRunsCountFromTheFoldAndKeepASpentBudgetSpent) {
  auto t = TeamWith("vision", "h100", 20, kHour10 - hours(1), kHour10);
  t->spec.budgets = {Gpu(30, hours(2))};
  HeldByFleet held;
  held["vision"]["h100"] = sched::Resources{0, 0, 4};  // 4 GPUs held since the fold (10:00)
  const auto b = MeasureTeamBudgets(*t, {t}, held, {}, kHour10 + minutes(30));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].used, 22);
  EXPECT_FALSE(b[0].Spent(kHour10 + minutes(30)));
  t->spec.budgets = {Gpu(10, hours(2))};
  held["vision"]["h100"] = sched::Resources{0, 0, 8};  // 8 an hour against 10 over 2h: spent for good
  const auto spent = MeasureTeamBudgets(*t, {t}, held, {}, kHour10 + minutes(30));
  EXPECT_DOUBLE_EQ(spent[0].used, 24);
  EXPECT_EQ(spent[0].refills_at, sched::TimePoint{}) << "its running runs alone keep it spent";
}

TEST(MeasureTeamBudgets, AParentsBudgetCountsItsSubTeams) {
  auto parent = TeamWith("research", "h100", 0, kHour10 - hours(1), kHour10);
  parent->spec.budgets = {Gpu(15, hours(2))};
  auto child = TeamWith("vision", "h100", 20, kHour10 - hours(1), kHour10);
  child->spec.parent = "research";
  auto other = TeamWith("audio", "h100", 5, kHour10 - hours(1), kHour10);
  const auto b = MeasureTeamBudgets(*parent, {parent, child, other}, {}, {}, kHour10 + minutes(30));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_DOUBLE_EQ(b[0].used, 20);
  EXPECT_TRUE(b[0].Spent(kHour10 + minutes(30)));
}

TEST(MeasureTeamBudgets, NoHistoryNoRunsNothingUsed) {
  Team t;
  t.meta.name = "idle";
  t.spec.budgets = {Gpu(1, hours(1))};
  const auto b = MeasureTeamBudgets(t, {}, {}, {}, kHour10);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].used, 0);
  EXPECT_EQ(b[0].hours, 1);
  EXPECT_EQ(b[0].period, hours(1));
}

}  // namespace
}  // namespace berth::reconcilers
