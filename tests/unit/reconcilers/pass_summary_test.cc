#include "reconcilers/engine/pass_summary.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using namespace std::chrono_literals;

const k8s::TimePoint kNow = k8s::TimePoint{} + std::chrono::hours(1000);

sched::WaitingRun Waiting(const std::string& id, sched::WaitCode code, int32_t fleet) {
  sched::WaitingRun w;
  w.run_id = id;
  w.reason.code = code;
  w.reason.fleet = fleet;
  return w;
}

sched::InstanceStatus Instance(const std::string& fleet, sched::InstanceState state, int32_t total, int32_t busy) {
  sched::InstanceStatus s;
  s.name = fleet + "-i";
  s.fleet = fleet;
  s.state = state;
  s.total_blocks = total;
  s.busy_blocks = busy;
  return s;
}

TEST(SummarizePass, CountsTheWaitingRunsByFleetAndReasonAndTheBlocksByWhetherTheyTakeNewRuns) {
  sched::CycleResult result;
  result.fleets = {sched::FleetRef{"gpu", ""}};
  result.waiting = {Waiting("ns/a", sched::WaitCode::kNotEnoughFreeBlocks, 0),
                    Waiting("ns/b", sched::WaitCode::kNotEnoughFreeBlocks, 0),
                    Waiting("ns/c", sched::WaitCode::kQuotaExceeded, -1),
                    Waiting("ns/d", sched::WaitCode::kFleetNotFound, -1)};
  const std::vector<sched::InstanceStatus> described = {
      Instance("gpu", sched::InstanceState::kBusy, 8, 3), Instance("gpu", sched::InstanceState::kIdle, 8, 0),
      Instance("gpu", sched::InstanceState::kNotReady, 8, 2), Instance("cpu", sched::InstanceState::kExpired, 4, 0)};
  const auto s = SummarizePass(1500us, result, /*decided=*/true, kNow, std::nullopt, described, {});
  EXPECT_EQ(s.duration, 1500us);
  EXPECT_TRUE(s.decided);
  EXPECT_EQ(s.pending.at({"gpu", "NoCapacity"}), 2);
  EXPECT_EQ(s.pending.at({"none", "QuotaExceeded"}), 1);
  EXPECT_EQ(s.pending.at({"none", "Unschedulable"}), 1);
  const auto& gpu = s.fleets.at("gpu");
  EXPECT_EQ(gpu.instances_by_state.at("Busy"), 1);
  EXPECT_EQ(gpu.instances_by_state.at("Idle"), 1);
  EXPECT_EQ(gpu.instances_by_state.at("NotReady"), 1);
  EXPECT_EQ(gpu.busy_blocks, 5);
  EXPECT_EQ(gpu.idle_blocks, 13) << "free blocks of instances that take new runs";
  EXPECT_EQ(gpu.unavailable_blocks, 6) << "free blocks of an instance that takes none";
  const auto& cpu = s.fleets.at("cpu");
  EXPECT_EQ(cpu.instances_by_state.at("Expired"), 1);
  EXPECT_EQ(cpu.idle_blocks, 0);
  EXPECT_EQ(cpu.unavailable_blocks, 4);
}

TEST(SummarizePass, TheOldestWaitCountsFromWhenTheLongestWaitingRunBeganToWait) {
  const sched::CycleResult empty;
  EXPECT_EQ(SummarizePass(0us, empty, false, kNow, std::nullopt, {}, {}).oldest_pending_wait, 0ms);
  EXPECT_EQ(SummarizePass(0us, empty, false, kNow, kNow - 90s, {}, {}).oldest_pending_wait, 90s);
  EXPECT_EQ(SummarizePass(0us, empty, false, kNow, kNow + 5s, {}, {}).oldest_pending_wait, 0ms)
      << "a clock behind the run's own time is no negative wait";
}

TEST(SummarizePass, TeamsAmountsAreInGpusCpuCoresAndBytesForTheAccountedResourcesOnly) {
  sched::TeamFleetReport row;
  row.team = "vision";
  row.fleet = "gpu";
  row.accounted = {true, true, false};
  row.nominal = {8, 64000, 0};
  row.used = {10, 16000, 0};
  row.borrowed = {2, 0, 0};
  row.lent = {0, 48000, 0};
  const auto s = SummarizePass(0us, sched::CycleResult{}, false, kNow, std::nullopt, {}, {row});
  ASSERT_EQ(s.teams.size(), 2u);
  const auto& gpu = s.teams.at({"vision", "gpu", "gpu"});
  EXPECT_DOUBLE_EQ(gpu.nominal, 8);
  EXPECT_DOUBLE_EQ(gpu.used, 10);
  EXPECT_DOUBLE_EQ(gpu.borrowed, 2);
  const auto& cpu = s.teams.at({"vision", "gpu", "cpu"});
  EXPECT_DOUBLE_EQ(cpu.nominal, 64);
  EXPECT_DOUBLE_EQ(cpu.used, 16);
  EXPECT_DOUBLE_EQ(cpu.lent, 48);
  EXPECT_EQ(s.teams.count({"vision", "gpu", "memory"}), 0u);
}

TEST(PassPhases, EachMarkNamesItsStepAndTheTotalCoversThemAll) {
  PassPhases phases;
  phases.Mark("view");
  phases.Mark("schedule");
  EXPECT_NE(phases.text.find(" view="), std::string::npos);
  EXPECT_NE(phases.text.find("ms schedule="), std::string::npos);
  EXPECT_GE(phases.Total(), std::chrono::duration_cast<std::chrono::microseconds>(phases.mark - phases.started));
}

}  // namespace
}  // namespace berth::reconcilers
