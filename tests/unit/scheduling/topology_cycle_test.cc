// Topology levels (issue 48) through the whole cycle (scheduler.h): reservation per domain of the
// run's level (reserve.cc), preemption per domain (preempt.cc), and the wait message naming the
// level and its largest free domain (cycle_result.cc), on a hand-made cluster of spines and racks.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fixtures.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(google-build-using-namespace)
using Names = std::vector<std::string>;


struct TopologyCycle : ::testing::Test {
  // Fleet "gpu" (one block per node, levels spine and rack) with `n` nodes <spine>-<rack>-<i>.
  void AddRack(const std::string& spine, const std::string& rack, int n) {
    if (cluster.fleets.empty()) {
      cluster.fleets.push_back(Fleet("gpu", BlocksSetting::Count(1), PlacementPolicy::kCluster));
      cluster.fleets.back().topology = {kSpine, kRack};
    }
    for (int i = 0; i < n; ++i) {
      cluster.instances.push_back(Instance(spine + "-" + rack + "-" + std::to_string(i), "gpu", Cpus(16)));
      cluster.instances.back().topology_path = {spine, rack};
    }
  }
  // The node is busy until `minutes` from now (nullopt: no known end).
  void BusyFor(const std::string& node, std::optional<int> mins) {
    std::optional<TimePoint> end;
    if (mins) end = now + minutes(*mins);
    cluster.running.push_back(Running("busy/" + node, {{node, 1}}, end));
  }
  void Submit(const std::string& id, int32_t nodes, Mode mode, const std::string& key, int32_t priority = 50) {
    PendingRun run = Pending(id, priority, kT0, nodes, Cpus(16));
    run.topology = TopologyRequest{mode, key};
    queue.Upsert(std::move(run));
  }
  CycleResult Cycle() { return Schedule(cluster, queue, now); }

  ClusterSnapshot cluster;
  RunQueue queue{Duration(0)};
  TimePoint now = kT0;
};

// Rack s1/a: 3 nodes freeing at 10, 20, 30 minutes; rack s1/b: 4 nodes at 5, 15, 40, 50.
struct ReservationPerDomain : TopologyCycle {
  void SetUp() override {
    AddRack("s1", "a", 3);
    AddRack("s1", "b", 4);
    const std::map<std::string, int> ends{{"s1-a-0", 10}, {"s1-a-1", 20}, {"s1-a-2", 30}, {"s1-b-0", 5},
                                          {"s1-b-1", 15}, {"s1-b-2", 40}, {"s1-b-3", 50}};
    for (const auto& [node, mins] : ends) BusyFor(node, mins);
  }
};

TEST_F(ReservationPerDomain, ARequiredGangReservesInOneDomainOfItsLevel) {
  Submit("ns/rack", 3, Mode::kRequired, kRack);
  CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"s1-a-0", "s1-a-1", "s1-a-2"}));  // a at 30m; b only at 40m
  EXPECT_EQ(r.reservation->earliest_start, now + minutes(30));
  // Required at the spine: the three that free first in the spine, across its racks.
  queue.Remove("ns/rack");
  Submit("ns/spine", 3, Mode::kRequired, kSpine);
  r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"s1-a-0", "s1-b-0", "s1-b-1"}));
  EXPECT_EQ(r.reservation->earliest_start, now + minutes(15));
}

TEST_F(ReservationPerDomain, APreferredGangReservesAtItsLevelAndClimbsOnlyWhenNoDomainCouldHoldIt) {
  Submit("ns/three", 3, Mode::kPreferred, kRack);
  CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"s1-a-0", "s1-a-1", "s1-a-2"}));
  queue.Remove("ns/three");
  Submit("ns/five", 5, Mode::kPreferred, kRack);  // no rack has 5 nodes: the spine
  r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"s1-a-0", "s1-a-1", "s1-a-2", "s1-b-0", "s1-b-1"}));
  EXPECT_EQ(r.reservation->earliest_start, now + minutes(30));
}

TEST_F(TopologyCycle, AReservationTiesToTheSmallestDomainAndIsBackfilledOnlyByRunsEndingBeforeIt) {
  AddRack("s1", "a", 4);
  AddRack("s2", "b", 3);
  AddRack("s2", "c", 5);
  for (const std::string node : {"s1-a-0", "s1-a-1", "s1-a-2", "s1-a-3", "s2-b-2"}) BusyFor(node, 30);
  for (int i = 0; i < 5; ++i) BusyFor("s2-c-" + std::to_string(i), 30);
  // Every rack holds 3 nodes at 30m: b, the smallest, is reserved (a and c stay whole).
  Submit("ns/gang", 3, Mode::kRequired, kRack, 90);
  PendingRun fits = Pending("ns/short", 50, kT0, 1, Cpus(16));
  fits.max_duration = minutes(30);
  PendingRun too_long = Pending("ns/long", 40, kT0, 1, Cpus(16));
  too_long.max_duration = minutes(31);
  queue.Upsert(fits);
  queue.Upsert(too_long);
  const CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"s2-b-0", "s2-b-1", "s2-b-2"}));
  EXPECT_EQ(PlacedOn(r, "ns/short"), Names{"s2-b-0"});
  ASSERT_NE(FindWaiting(r, "ns/long"), nullptr);
  EXPECT_EQ(FindWaiting(r, "ns/long")->reason.code, WaitCode::kReserved);
}

// Racks s1/a (3 nodes) and s1/b (4): a-0, b-0 and b-1 busy (no known end), 4 idle in the spine.
struct WaitMessages : TopologyCycle {
  void SetUp() override {
    AddRack("s1", "a", 3);
    AddRack("s1", "b", 4);
    for (const std::string node : {"s1-a-0", "s1-b-0", "s1-b-1"}) BusyFor(node, std::nullopt);
  }
  std::string Wait(int32_t nodes, Mode mode, const std::string& key) {
    Submit("ns/r", nodes, mode, key);
    const CycleResult r = Cycle();
    queue.Remove("ns/r");
    return Explain(r, "ns/r");
  }
};

TEST_F(WaitMessages, AWaitingGangNamesItsLevelAndTheLargestFreeDomainOfIt) {
  EXPECT_EQ(Wait(5, Mode::kRequired, kSpine),
            "needs 5 idle instances with 16 CPUs in one example.com/spine; the largest free one has 4 (fleet gpu, 3 "
            "busy); holds 5 reserved instances until capacity frees up");
  EXPECT_EQ(Wait(3, Mode::kRequired, kRack),
            "needs 3 idle instances with 16 CPUs in one example.com/rack; the largest free one has 2 (fleet gpu, 3 "
            "busy); holds 3 reserved instances until capacity frees up");
  // Preferred: any labelled nodes of the fleet would do.
  EXPECT_EQ(Wait(5, Mode::kPreferred, kRack),
            "needs 5 idle instances with 16 CPUs in a cluster fleet; fleet gpu has 4 idle, 3 busy; holds 5 reserved "
            "instances until capacity frees up");
}

TEST_F(WaitMessages, AGangNoDomainOfItsLevelCouldHoldNamesTheLevelAndTheLargestDomain) {
  EXPECT_EQ(Wait(5, Mode::kRequired, kRack), "needs 5 instances in one example.com/rack; the largest has 4 (fleet gpu)");
  EXPECT_EQ(Wait(8, Mode::kPreferred, kRack), "needs 8 instances in one cluster fleet; the largest has 7 (fleet gpu)");
  EXPECT_EQ(Wait(2, Mode::kRequired, "example.com/block"),
            "needs 2 instances in one example.com/block; fleet gpu has no such topology level");
  // A gang of whole slices (one per Pod) likewise.
  PendingRun gang = Pending("ns/g", 50, kT0, 5, Cpus(16));
  gang.whole_instances = false;
  gang.topology = TopologyRequest{Mode::kRequired, kRack};
  queue.Upsert(gang);
  EXPECT_EQ(Explain(Cycle(), "ns/g"),
            "needs 5 slices of 1 block each (one per Pod) in one fleet and one example.com/rack; fleet gpu, the "
            "largest, holds at most 4 in one example.com/rack even when all its instances are idle");
}

}  // namespace
}  // namespace berth::scheduling
