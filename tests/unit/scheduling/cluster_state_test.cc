// The cycle's cluster state (scheduling/cluster_state.h) on its own: fleets, pools, topology
// domains and instances as built from a snapshot.

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "fixtures.h"
#include "scheduling/cluster_state.h"

namespace berth::scheduling::internal {
namespace {

namespace t = berth::scheduling::testing;

int64_t MsOf(TimePoint p) { return p.time_since_epoch().count(); }

TEST(ClusterState, FleetsAndInstancesInNameOrderDuplicatesAndStrangersDropped) {
  ClusterSnapshot s;
  s.fleets = {t::Fleet("b"), t::Fleet("a"), t::Fleet("b")};
  s.instances = {t::Instance("n2", "a", t::Cpus(8)), t::Instance("n1", "b", t::Cpus(8)),
                 t::Instance("n1", "a", t::Cpus(8)), t::Instance("n0", "nowhere", t::Cpus(8))};
  const ClusterState state(s, MsOf(t::kT0));
  EXPECT_EQ(state.fleet_names, (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(state.instance_names, (std::vector<std::string_view>{"n1", "n2"}));  // n0: no fleet
  EXPECT_EQ(state.FindFleet("b"), 1);
  EXPECT_EQ(state.FindFleet("c"), -1);
  EXPECT_EQ(state.FindInstance("n2"), 1);
  EXPECT_EQ(state.instances[0].fleet, 1);  // the first n1 listed: fleet b
  EXPECT_EQ(state.fleets[1].instances, (std::vector<int32_t>{0}));
}

TEST(ClusterState, InstancesOfOneLayoutShareAPoolAndEachAvailabilityIsCounted) {
  ClusterSnapshot s;
  s.fleets = {t::Fleet("f", BlocksSetting::Count(4), PlacementPolicy::kAny, "", /*max_runs=*/2)};
  s.instances = {t::Instance("big-1", "f", t::Cpus(16)), t::Instance("big-2", "f", t::Cpus(16)),
                 t::Instance("small", "f", t::Cpus(4)),  t::Instance("expired", "f", t::Cpus(16)),
                 t::Instance("retired", "f", t::Cpus(16)), t::Instance("starting", "f", t::Cpus(16))};
  s.instances[3].expires_at = t::kT0;
  s.instances[4].runs_started = 2;
  s.instances[5].ready = false;
  const ClusterState state(s, MsOf(t::kT0));
  const auto at = [&](std::string_view name) { return state.instances[state.FindInstance(name)]; };
  EXPECT_EQ(state.pools.size(), 2u);
  EXPECT_EQ(at("big-1").pool, at("big-2").pool);
  EXPECT_NE(at("big-1").pool, at("small").pool);
  EXPECT_EQ(at("big-1").total, 4);
  EXPECT_EQ(at("big-1").free, 4);
  EXPECT_EQ(at("big-1").availability, Availability::kAvailable);
  EXPECT_EQ(at("expired").availability, Availability::kExpired);
  EXPECT_EQ(at("retired").availability, Availability::kRetired);
  EXPECT_EQ(at("starting").availability, Availability::kNotReady);
  EXPECT_EQ(state.fleets[0].valid, 6);
  EXPECT_EQ(state.fleets[0].max_runs, 2);
}

TEST(ClusterState, ATopologyFleetHasOneDomainPerValueAndUnlabelledInstancesNone) {
  ClusterSnapshot s;
  s.fleets = {t::Fleet("any"), t::Fleet("zoned", BlocksSetting::Count(2), PlacementPolicy::kCluster, "zone"),
              t::Fleet("whole", BlocksSetting::Count(2), PlacementPolicy::kCluster)};
  s.instances = {t::Instance("a", "any", t::Cpus(8)), t::Instance("z1", "zoned", t::Cpus(8)),
                 t::Instance("z2", "zoned", t::Cpus(8)), t::Instance("z3", "zoned", t::Cpus(8)),
                 t::Instance("z4", "zoned", t::Cpus(8)), t::Instance("w1", "whole", t::Cpus(8))};
  s.instances[1].topology_domain = "west";
  s.instances[2].topology_domain = "east";
  s.instances[3].topology_domain = "west";
  const ClusterState state(s, MsOf(t::kT0));
  const auto at = [&](std::string_view name) { return state.instances[state.FindInstance(name)]; };
  const Fleet& zoned = state.fleets[state.FindFleet("zoned")];
  EXPECT_TRUE(zoned.topology);
  EXPECT_EQ(zoned.domain_end - zoned.domain_begin, 2);  // east, west
  EXPECT_EQ(at("z2").domain, zoned.domain_begin);      // east
  EXPECT_EQ(at("z1").domain, zoned.domain_begin + 1);  // west
  EXPECT_EQ(at("z3").domain, at("z1").domain);
  EXPECT_EQ(at("z4").domain, -1);  // no label: no multi-node run
  EXPECT_EQ(at("a").domain, -1);   // not a cluster fleet
  EXPECT_EQ(state.domains[at("z1").domain].pool_counts, (std::vector<std::pair<int32_t, int32_t>>{{at("z1").pool, 2}}));
  const Fleet& whole = state.fleets[state.FindFleet("whole")];
  EXPECT_EQ(whole.domain_end - whole.domain_begin, 1);  // the whole fleet is one domain
  EXPECT_EQ(at("w1").domain, whole.domain_begin);
}

}  // namespace
}  // namespace berth::scheduling::internal
