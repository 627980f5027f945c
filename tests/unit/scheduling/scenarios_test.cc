// The scenarios of issue 3, taken from real users' reports, played through the simulator.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "scheduling/instance_state.h"
#include "scheduling/scheduler.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)
using Names = std::vector<std::string>;

// 1. A 2-instance cluster fleet with blocks: auto (2 CPUs, 2 GiB each) and nodes: 2.
TEST(Scenario, TwoNodeRunOnAutoBlockClusterFleetTakesBothWholeInstances) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("pair", BlocksSetting::Auto(), PlacementPolicy::kCluster)};
  cluster.instances = {Instance("n1", "pair", Cpus(2, 2)), Instance("n2", "pair", Cpus(2, 2))};
  RunQueue queue(minutes(15));
  queue.Upsert(Pending("ml/dist", 50, kT0, 2));

  const CycleResult r = Schedule(cluster, queue, kT0);
  ASSERT_NE(FindPlacement(r, "ml/dist"), nullptr);
  const Placement& p = *FindPlacement(r, "ml/dist");
  EXPECT_EQ(p.fleet, "pair");
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].instance, "n1");
  EXPECT_EQ(p.ranks[1].instance, "n2");
  for (const RankPlacement& rank : p.ranks) {
    EXPECT_EQ(rank.blocks, 2);                   // every block of the instance
    EXPECT_EQ(rank.resources, Cpus(2, 2));       // the whole instance
  }
}

TEST(Scenario, TwoNodeRunWaitsWhileOneBlockIsBusyAndSaysWhy) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("pair", BlocksSetting::Auto(), PlacementPolicy::kCluster)};
  cluster.instances = {Instance("n1", "pair", Cpus(2, 2)), Instance("n2", "pair", Cpus(2, 2))};
  cluster.running = {Running("ml/small", {{"n2", 1}}, kT0 + minutes(20))};
  RunQueue queue(minutes(15));
  queue.Upsert(Pending("ml/dist", 50, kT0, 2));

  const CycleResult r = Schedule(cluster, queue, kT0);
  EXPECT_TRUE(r.placements.empty());
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_FALSE(r.waiting[0].unschedulable());
  EXPECT_EQ(r.Explain(r.waiting[0]),
            "needs 2 idle instances in a cluster fleet; fleet pair has 1 idle, 1 busy; holds 2 "
            "reserved instances, expected to start in 20m");
}

// 2. Priorities submitted in reverse order onto a fleet with room for one run at a time.
TEST(Scenario, HigherPriorityStartsFirstAndEqualPrioritiesAreFifo) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("one")};
  cluster.instances = {Instance("only", "one", Cpus(8, 32))};
  Simulator sim(cluster, minutes(15));
  sim.Submit(Pending("team/dev-test", 30, kT0), hours(1));
  sim.Submit(Pending("team/training", 50, kT0 + minutes(1)), hours(1));
  sim.Submit(Pending("team/ab-test", 70, kT0 + minutes(2)), hours(1));
  sim.Submit(Pending("team/hotfix", 90, kT0 + minutes(3)), hours(1));
  sim.Submit(Pending("team/c-first", 20, kT0 + minutes(4)), minutes(10));
  sim.Submit(Pending("team/b-second", 20, kT0 + minutes(5)), minutes(10));
  sim.Submit(Pending("team/a-third", 20, kT0 + minutes(6)), minutes(10));
  for (TimePoint t = kT0 + minutes(10); t <= kT0 + hours(6); t += minutes(5)) {
    sim.AdvanceTo(t);
    sim.Step();
  }
  EXPECT_EQ(sim.started(), (Names{"team/hotfix", "team/ab-test", "team/training",
                                  "team/dev-test", "team/c-first", "team/b-second",
                                  "team/a-third"}));
}

// 3. A priority change of a queued run moves it at once.
TEST(Scenario, PriorityChangeMovesQueuedRunImmediately) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("one")};
  cluster.instances = {Instance("only", "one", Cpus(8, 32))};
  Simulator sim(cluster, minutes(15));
  sim.AddRunning(Running("x/blocker", {{"only", 1}}), kT0 + minutes(30));
  for (int i = 0; i < 5; ++i) {
    sim.Submit(Pending("team/r" + std::to_string(i), 50, kT0 + minutes(i)), minutes(10));
  }
  sim.AdvanceTo(kT0 + minutes(5));
  sim.Step();
  EXPECT_EQ(sim.queue().Position("team/r4"), 5);
  ASSERT_TRUE(sim.queue().SetPriority("team/r4", 90));
  EXPECT_EQ(sim.queue().Position("team/r4"), 1);  // no cycle needed
  EXPECT_EQ(sim.queue().Position("team/r0"), 2);
  sim.AdvanceTo(kT0 + minutes(30));
  const CycleResult r = sim.Step();
  EXPECT_EQ(PlacedOn(r, "team/r4"), Names{"only"});
}

// 4a. Aging bounds the wait of a low-priority run facing an endless high-priority stream.
struct StarvationResult {
  std::optional<TimePoint> low_started;
  int high_started = 0;
};

StarvationResult PlayStream(Duration aging, Duration horizon) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("one")};
  cluster.instances = {Instance("only", "one", Cpus(8, 32))};
  Simulator sim(cluster, aging);
  sim.Submit(Pending("dev/low", 30, kT0), minutes(10));
  int n = 0;
  for (TimePoint t = kT0; t <= kT0 + horizon; t += minutes(5)) {
    sim.AdvanceTo(t);
    // One priority-90 run every 5 minutes, each running 10 minutes: the stream never dries up.
    sim.Submit(Pending("prod/hot-" + std::to_string(n++), 90, t + minutes(1)), minutes(10));
    sim.Step();
  }
  StarvationResult out;
  out.low_started = sim.StartedAt("dev/low");
  for (const std::string& id : sim.started()) out.high_started += id != "dev/low";
  return out;
}

TEST(Scenario, AgingPlacesStarvedRunWithinPredictableTime) {
  // 30 + floor(waited / 15m) reaches 100 after 70 intervals = 17h30m; then dev/low is first
  // (earliest submission among the runs at 100) and starts when the instance next frees (<10m).
  const StarvationResult r = PlayStream(minutes(15), hours(20));
  ASSERT_TRUE(r.low_started.has_value());
  EXPECT_GE(*r.low_started, kT0 + hours(17) + minutes(30));
  EXPECT_LE(*r.low_started, kT0 + hours(17) + minutes(40));
}

TEST(Scenario, WithoutAgingTheLowPriorityRunStarves) {
  const StarvationResult r = PlayStream(Duration(0), hours(20));
  EXPECT_FALSE(r.low_started.has_value());
  EXPECT_GT(r.high_started, 100);  // the instance was never idle for lack of work
}

// 4b. A 4-node run is not starved by a stream of 1-block runs: the reservation holds.
struct GangResult {
  std::optional<TimePoint> gang_started;
  int backfilled_before_gang = 0;
};

GangResult PlayGangAgainstStream(std::optional<Duration> stream_max_duration) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("gpu", BlocksSetting::Count(4), PlacementPolicy::kCluster)};
  const Names names = {"g0", "g1", "g2", "g3"};
  for (const std::string& name : names) {
    cluster.instances.push_back(Instance(name, "gpu", Cpus(16, 64, 4)));
  }
  Simulator sim(cluster, minutes(15));
  // Each instance runs one 1-block job, ending 15, 30, 45 and 60 minutes from now.
  for (size_t i = 0; i < names.size(); ++i) {
    const TimePoint end = kT0 + minutes(15 * (i + 1));
    sim.AddRunning(Running("old/" + names[i], {{names[i], 1}}, end), end);
  }
  sim.Submit(Pending("ml/gang", 50, kT0 - minutes(1), 4), hours(2));
  int n = 0;
  GangResult out;
  for (TimePoint t = kT0; t <= kT0 + hours(3); t += minutes(5)) {
    sim.AdvanceTo(t);
    PendingRun small = Pending("dev/s-" + std::to_string(n++), 50, t);
    small.max_duration = stream_max_duration;
    sim.Submit(small, stream_max_duration.value_or(hours(1)));
    const CycleResult r = sim.Step();
    if (!sim.StartedAt("ml/gang")) {
      EXPECT_TRUE(r.reservation.has_value());
      EXPECT_EQ(r.reservation->run_id, "ml/gang");
    }
    if (!out.gang_started) out.backfilled_before_gang += static_cast<int>(r.placements.size());
    out.gang_started = sim.StartedAt("ml/gang");
  }
  return out;
}

TEST(Scenario, GangIsNotStarvedByStreamOfSmallRuns) {
  const GangResult r = PlayGangAgainstStream(std::nullopt);
  ASSERT_TRUE(r.gang_started.has_value());
  EXPECT_EQ(*r.gang_started, kT0 + minutes(60));  // when the last old job ends
  EXPECT_EQ(r.backfilled_before_gang, 1);         // only the gang itself (counted at its start)
}

TEST(Scenario, ShortRunsBackfillWithoutDelayingTheGang) {
  const GangResult r = PlayGangAgainstStream(minutes(20));
  ASSERT_TRUE(r.gang_started.has_value());
  EXPECT_EQ(*r.gang_started, kT0 + minutes(60));
  // 20-minute runs submitted at 0, 5, ... 40 minutes end by 60 minutes: 9 backfilled + the gang.
  EXPECT_EQ(r.backfilled_before_gang, 10);
}

// 5. Wall time: instances expire 5h after they start; runs have maxDuration 4h.
TEST(Scenario, InstanceWithOneHourLeftGetsNoSecondFourHourRun) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("hpc")};
  InstanceSpec x = Instance("x", "hpc", Cpus(64, 256, 8));
  x.expires_at = kT0 + hours(5);
  cluster.instances = {x};
  Simulator sim(cluster, minutes(15));
  PendingRun first = Pending("sim/first", 50, kT0);
  first.max_duration = hours(4);
  PendingRun second = Pending("sim/second", 50, kT0 + minutes(1));
  second.max_duration = hours(4);
  sim.Submit(first, hours(4));
  sim.Submit(second, hours(4));
  sim.Step();
  EXPECT_EQ(sim.started(), Names{"sim/first"});

  sim.AdvanceTo(kT0 + hours(4));  // first is done; x has 1h left
  CycleResult r = sim.Step();
  EXPECT_TRUE(r.placements.empty());
  EXPECT_EQ(Explain(r, "sim/second"),
            "needs 1 block on an instance with at least 4h of lifetime left; instances with room "
            "have at most 1h left (fleet hpc)");

  InstanceSpec fresh = Instance("y", "hpc", Cpus(64, 256, 8));
  fresh.expires_at = kT0 + hours(9);
  sim.cluster().instances.push_back(fresh);
  r = sim.Step();
  EXPECT_EQ(PlacedOn(r, "sim/second"), Names{"y"});
}

TEST(Scenario, MaxRunsPerInstanceOneRetiresAfterTheFirstRun) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("once", BlocksSetting::Count(4), PlacementPolicy::kAny, "", 1)};
  cluster.instances = {Instance("x", "once", Cpus(16, 64))};
  Simulator sim(cluster, minutes(15));
  sim.Submit(Pending("ci/a", 50, kT0), minutes(30));
  sim.Submit(Pending("ci/b", 50, kT0 + minutes(1)), minutes(30));
  CycleResult r = sim.Step();
  EXPECT_EQ(PlacedOn(r, "ci/a"), Names{"x"});
  EXPECT_EQ(Explain(r, "ci/b"), "no instance of its fleets can take a new run (1 retired)");

  sim.AdvanceTo(kT0 + hours(1));  // a is done: x is idle but retired
  r = sim.Step();
  EXPECT_TRUE(r.placements.empty());
  const std::vector<InstanceStatus> status = DescribeInstances(sim.cluster(), sim.now());
  ASSERT_EQ(status.size(), 1u);
  EXPECT_EQ(status[0].state, InstanceState::kRetired);
  EXPECT_EQ(status[0].runs_started, 1);
  EXPECT_EQ(status[0].busy_blocks, 0);
}

}  // namespace
}  // namespace berth::scheduling
