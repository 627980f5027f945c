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
using Mode = TopologyRequest::Mode;
using Names = std::vector<std::string>;

constexpr const char* kSpine = "example.com/spine";
constexpr const char* kRack = "example.com/rack";

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

}  // namespace
}  // namespace berth::scheduling
