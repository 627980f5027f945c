#include "cli/fleet_view.h"

#include <gtest/gtest.h>

#include "k8s/timefmt.h"

namespace berth::cli {
namespace {

const char* kFleet = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"a100"},
 "spec":{"nodeSelector":{"pool":"a100"},"blocks":"auto","placement":"cluster","maxRunsPerInstance":10,"instanceLifetime":"5h"},
 "status":{"totalInstances":4,"readyInstances":3,"totalBlocks":24,"busyBlocks":12,"observedGeneration":1,
  "instances":[
   {"node":"gpu-0","uid":"u0","totalBlocks":8,"busyBlocks":4,"runsStarted":3,"expiresAt":"2026-11-21T23:12:00Z","state":"Busy",
     "heldByOtherPods":"1 CPU, 512Mi"},
   {"node":"gpu-1","uid":"u1","totalBlocks":8,"busyBlocks":8,"runsStarted":10,"expiresAt":"2026-11-21T19:00:00Z","state":"Retired","message":"started 10 runs"},
   {"node":"gpu-2","uid":"u2","totalBlocks":8,"busyBlocks":0,"runsStarted":0,"state":"Idle"},
   {"node":"gpu-3","uid":"u3","totalBlocks":0,"busyBlocks":0,"runsStarted":0,"state":"NotReady","message":"node is not Ready"}],
  "conditions":[{"type":"Ready","status":"True","reason":"InstancesReady"}]}})";

k8s::TimePoint Now() { return *k8s::ParseRfc3339("2026-11-21T20:00:00Z"); }

TEST(FleetViewTest, Decode) {
  auto doc = k8s::json::Parse(kFleet);
  ASSERT_TRUE(doc.ok());
  FleetSummary f = DecodeFleetSummary(*doc);
  EXPECT_EQ(f.name, "a100");
  EXPECT_EQ(f.placement, "cluster");
  EXPECT_EQ(f.blocks, "auto");
  ASSERT_TRUE(f.max_runs.has_value());
  EXPECT_EQ(*f.max_runs, 10);
  EXPECT_EQ(f.instance_lifetime, "5h");
  EXPECT_TRUE(f.has_status);
  EXPECT_EQ(f.total_instances, 4);
  EXPECT_EQ(f.ready_instances, 3);
  EXPECT_EQ(f.total_blocks, 24);
  EXPECT_EQ(f.busy_blocks, 12);
  ASSERT_EQ(f.instances.size(), 4u);
  EXPECT_EQ(f.instances[1].node, "gpu-1");
  EXPECT_EQ(f.instances[1].runs_started, 10);
  EXPECT_EQ(f.instances[1].state, "Retired");
  EXPECT_EQ(f.instances[1].message, "started 10 runs");
  ASSERT_EQ(f.conditions.size(), 1u);
  EXPECT_EQ(f.conditions[0].type, api::v1alpha1::ConditionType::kReady);
}

TEST(FleetViewTest, Format) {
  auto doc = k8s::json::Parse(kFleet);
  ASSERT_TRUE(doc.ok());
  auto cpu = k8s::json::Parse(R"({"metadata":{"name":"cpu"},"spec":{"nodeSelector":{"pool":"cpu"},"blocks":4},
    "status":{"totalInstances":1,"readyInstances":1,"totalBlocks":4,"busyBlocks":1,
     "instances":[{"node":"cpu-0","totalBlocks":4,"busyBlocks":1,"runsStarted":7,"state":"Busy"}],
     "conditions":[{"type":"Ready","status":"True"},{"type":"Conflict","status":"True","reason":"NodeClaimed","message":"node cpu-9 belongs to fleet a100"}]}})");
  ASSERT_TRUE(cpu.ok());
  auto fresh = k8s::json::Parse(R"({"metadata":{"name":"new"},"spec":{"nodeSelector":{"pool":"x"}}})");
  auto empty = k8s::json::Parse(R"({"metadata":{"name":"empty"},"spec":{"nodeSelector":{"pool":"y"}},
    "status":{"totalInstances":0,"readyInstances":0,"totalBlocks":0,"busyBlocks":0,"instances":[],
     "conditions":[{"type":"Ready","status":"False","reason":"NoInstances","message":"no Node matches"}]}})");
  std::vector<FleetSummary> fleets = {DecodeFleetSummary(*doc), DecodeFleetSummary(*cpu), DecodeFleetSummary(*empty),
                                      DecodeFleetSummary(*fresh)};
  EXPECT_EQ(FormatFleets(fleets, Now(), false),
            "a100   4 instances (3 ready), 12/24 blocks busy, placement cluster, max 10 runs per instance, lifetime 5h\n"
            "  INSTANCE   BLOCKS           RUNS    EXPIRES    STATE\n"
            "  gpu-0      [####....] 4/8   3/10    in 3h12m   Busy\n"
            "  gpu-1      [########] 8/8   10/10   expired    Retired\n"
            "  gpu-2      [........] 0/8   0/10    -          Idle\n"
            "  gpu-3      [] 0/0           0/10    -          NotReady\n"
            "\n"
            "cpu   1 instance (1 ready), 1/4 blocks busy\n"
            "  ! Conflict=True NodeClaimed: node cpu-9 belongs to fleet a100\n"
            "  INSTANCE   BLOCKS       RUNS   EXPIRES   STATE\n"
            "  cpu-0      [#...] 1/4   7      -         Busy\n"
            "\n"
            "empty   0 instances (0 ready), 0/0 blocks busy\n"
            "  ! Ready=False NoInstances: no Node matches\n"
            "  (no instances: no Node matches the fleet's nodeSelector)\n"
            "\n"
            "new   no status yet (is the berth controller running?)\n");
  const std::string wide = FormatFleets({DecodeFleetSummary(*doc)}, Now(), true);
  // Wide: what other Pods hold on each machine, and why an instance takes no runs.
  EXPECT_NE(wide.find("  INSTANCE   BLOCKS           RUNS    EXPIRES    STATE      OTHER PODS     MESSAGE\n"), std::string::npos) << wide;
  EXPECT_NE(wide.find("  gpu-1      [########] 8/8   10/10   expired    Retired    -              started 10 runs\n"), std::string::npos) << wide;
  EXPECT_NE(wide.find("  gpu-0      [####....] 4/8   3/10    in 3h12m   Busy       1 CPU, 512Mi   -\n"), std::string::npos) << wide;
}

// Issue 49: a DRA fleet's instances show their devices and which runs' claims hold them.
TEST(FleetViewTest, ADraFleetShowsDevicesAndTheirRuns) {
  auto dra = k8s::json::Parse(R"({"metadata":{"name":"dra"},"spec":{"nodeSelector":{"pool":"dra"},"blocks":"auto",
    "devices":{"deviceClassName":"gpu.example.com"}},
    "status":{"totalInstances":2,"readyInstances":2,"totalBlocks":4,"busyBlocks":1,
     "instances":[{"node":"dra-0","totalBlocks":2,"busyBlocks":1,"runsStarted":1,"state":"Busy",
                   "devices":"4 devices of gpu.example.com; run team-a/train holds 2"},
                  {"node":"dra-1","totalBlocks":2,"busyBlocks":0,"runsStarted":0,"state":"Idle",
                   "devices":"4 devices of gpu.example.com"}],
     "conditions":[{"type":"Ready","status":"True"}]}})");
  ASSERT_TRUE(dra.ok());
  const FleetSummary f = DecodeFleetSummary(*dra);
  ASSERT_EQ(f.instances.size(), 2u);
  EXPECT_EQ(f.instances[0].devices, "4 devices of gpu.example.com; run team-a/train holds 2");
  EXPECT_EQ(FormatFleets({f}, Now(), false),
            "dra   2 instances (2 ready), 1/4 blocks busy\n"
            "  INSTANCE   BLOCKS     RUNS   EXPIRES   STATE   DEVICES\n"
            "  dra-0      [#.] 1/2   1      -         Busy    4 devices of gpu.example.com; run team-a/train holds 2\n"
            "  dra-1      [..] 0/2   0      -         Idle    4 devices of gpu.example.com\n");
}

// Issue 48: a fleet with topology levels names them, draws its domains as a tree with their idle
// instances (a node without the outermost label is in none), and each instance's domain.
TEST(FleetViewTest, AFleetWithLevelsShowsItsDomainsWithTheirIdleInstances) {
  auto doc = k8s::json::Parse(R"({"metadata":{"name":"racks"},"spec":{"nodeSelector":{"pool":"r"},"placement":"cluster",
    "topology":[{"key":"example.com/spine"},{"key":"example.com/rack"}]},
    "status":{"totalInstances":5,"readyInstances":5,"totalBlocks":5,"busyBlocks":2,"instances":[
     {"node":"n-b0","totalBlocks":1,"busyBlocks":0,"state":"Idle","domain":"s1/b"},
     {"node":"n-a0","totalBlocks":1,"busyBlocks":1,"state":"Full","domain":"s1/a"},
     {"node":"n-a1","totalBlocks":1,"busyBlocks":0,"state":"Idle","domain":"s1/a"},
     {"node":"n-c0","totalBlocks":1,"busyBlocks":1,"state":"Full","domain":"s2/c"},
     {"node":"loose","totalBlocks":1,"busyBlocks":0,"state":"Idle"}]}})");
  ASSERT_TRUE(doc.ok());
  const FleetSummary f = DecodeFleetSummary(*doc);
  EXPECT_EQ(f.topology, (std::vector<std::string>{"example.com/spine", "example.com/rack"}));
  EXPECT_EQ(FormatFleets({f}, Now(), false),
            "racks   5 instances (5 ready), 2/5 blocks busy, placement cluster, topology example.com/spine > example.com/rack\n"
            "  DOMAIN   IDLE\n"
            "  s1       2/3\n"
            "    a      1/2\n"
            "    b      1/1\n"
            "  s2       0/1\n"
            "    c      0/1\n"
            "  INSTANCE   DOMAIN   BLOCKS    RUNS   EXPIRES   STATE\n"
            "  n-b0       s1/b     [.] 0/1   0      -         Idle\n"
            "  n-a0       s1/a     [#] 1/1   0      -         Full\n"
            "  n-a1       s1/a     [.] 0/1   0      -         Idle\n"
            "  n-c0       s2/c     [#] 1/1   0      -         Full\n"
            "  loose      -        [.] 0/1   0      -         Idle\n");
}

}  // namespace
}  // namespace berth::cli
