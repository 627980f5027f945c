#include "scheduling/scheduler.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "scheduling/instance_state.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)
using Names = std::vector<std::string>;

FleetSpec AnyFleet(std::string name, BlocksSetting blocks = BlocksSetting::Count(8)) {
  return Fleet(std::move(name), blocks);
}

FleetSpec ClusterFleet(std::string name, BlocksSetting blocks = BlocksSetting::Count(8),
                       std::string topology_key = "") {
  return Fleet(std::move(name), blocks, PlacementPolicy::kCluster, std::move(topology_key));
}

// Eight 4-CPU blocks per instance.
InstanceSpec Node(std::string name, std::string fleet) {
  return Instance(std::move(name), std::move(fleet), Cpus(32, 256, 8));
}

struct SchedulerTest : ::testing::Test {
  CycleResult Cycle() { return Schedule(cluster, queue, now); }
  void Busy(const std::string& instance, int32_t blocks,
            std::optional<TimePoint> end = std::nullopt) {
    cluster.running.push_back(
        Running("busy/" + std::to_string(cluster.running.size()), {{instance, blocks}}, end));
  }

  ClusterSnapshot cluster;
  RunQueue queue{Duration(0)};
  TimePoint now = kT0;
};

// ---- Single-node placement -------------------------------------------------------------------

TEST_F(SchedulerTest, SingleNodePrefersPartlyUsedInstanceOverWholeIdleOne) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("a", "cpu"), Node("b", "cpu")};
  Busy("b", 3);
  queue.Upsert(Pending("ns/r", 50, kT0, 1, Cpus(8)));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/r"), Names{"b"});
  EXPECT_EQ(FindPlacement(r, "ns/r")->ranks[0].blocks, 2);
}

TEST_F(SchedulerTest, SingleNodeLeavesTheFewestFreeBlocks) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("a", "cpu"), Node("b", "cpu"), Node("c", "cpu")};
  Busy("a", 3);  // 5 free
  Busy("b", 5);  // 3 free
  Busy("c", 7);  // 1 free: too small
  queue.Upsert(Pending("ns/r", 50, kT0, 1, Cpus(8)));
  EXPECT_EQ(PlacedOn(Cycle(), "ns/r"), Names{"b"});
}

TEST_F(SchedulerTest, SingleNodeTieBreaksByInstanceName) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("n2", "cpu"), Node("n10", "cpu"), Node("n1", "cpu")};
  queue.Upsert(Pending("ns/r"));
  EXPECT_EQ(PlacedOn(Cycle(), "ns/r"), Names{"n1"});
}

TEST_F(SchedulerTest, BestFitSpansAllCandidateFleets) {
  cluster.fleets = {AnyFleet("a"), AnyFleet("b")};
  cluster.instances = {Node("a1", "a"), Node("b1", "b")};
  Busy("b1", 6);
  queue.Upsert(Pending("ns/r", 50, kT0, 1, Cpus(8)));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/r"), Names{"b1"});
  EXPECT_EQ(FindPlacement(r, "ns/r")->fleet, "b");
}

// A run that asks for no GPU wastes none while any candidate fleet has room without GPUs, even
// where a GPU instance would be the tighter fit; only when nothing else fits does it take a GPU
// block, and the placement says so.
TEST_F(SchedulerTest, RunsWithoutGpusGoWhereTheyWasteNone) {
  cluster.fleets = {AnyFleet("gpu"), AnyFleet("cpu")};
  cluster.instances = {Node("g1", "gpu"), Instance("c1", "cpu", Cpus(32, 256, 0))};
  Busy("g1", 6);  // the tighter fit: 2 blocks free, 6 on c1
  queue.Upsert(Pending("ns/cpu-only", 50, kT0, 1, Cpus(8)));
  queue.Upsert(Pending("ns/wants-gpu", 50, kT0 + Duration(1), 1, Cpus(4, 0, 1)));
  CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/cpu-only"), Names{"c1"});
  EXPECT_FALSE(FindPlacement(r, "ns/cpu-only")->takes_unasked_gpus);
  EXPECT_EQ(PlacedOn(r, "ns/wants-gpu"), Names{"g1"}) << "a GPU run still goes where the GPUs are";

  // The CPU fleet full: the CPU-only run takes a GPU block rather than wait, and says so.
  queue.Remove("ns/wants-gpu");
  Busy("c1", 8);
  r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/cpu-only"), Names{"g1"});
  EXPECT_TRUE(FindPlacement(r, "ns/cpu-only")->takes_unasked_gpus);
  EXPECT_EQ(FindPlacement(r, "ns/cpu-only")->ranks[0].resources.gpus, 2);

  // A run that names only a GPU fleet goes there.
  queue.Remove("ns/cpu-only");
  cluster.running.clear();
  PendingRun named = Pending("ns/named", 50, kT0, 1, Cpus(4));
  named.fleets = {"gpu"};
  queue.Upsert(named);
  r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/named"), Names{"g1"});
  EXPECT_TRUE(FindPlacement(r, "ns/named")->takes_unasked_gpus);
}

TEST_F(SchedulerTest, PodGetsItsBlocksWorthOfResources) {
  cluster.fleets = {AnyFleet("gpu", BlocksSetting::Auto())};
  cluster.instances = {Instance("g", "gpu", Cpus(32, 256, 8))};  // 4 CPUs, 32Gi, 1 GPU a block
  queue.Upsert(Pending("ns/r", 50, kT0, 1, Resources{5000, 10 * kGi, 1}));
  const CycleResult r = Cycle();
  ASSERT_NE(FindPlacement(r, "ns/r"), nullptr);
  const RankPlacement& rank = FindPlacement(r, "ns/r")->ranks[0];
  EXPECT_EQ(rank.blocks, 2);
  EXPECT_EQ(rank.resources, Cpus(8, 64, 2));
}

TEST_F(SchedulerTest, RunUsesOnlyTheFleetsItNames) {
  cluster.fleets = {AnyFleet("a"), AnyFleet("b")};
  cluster.instances = {Node("a1", "a"), Node("b1", "b")};
  Busy("b1", 8);
  PendingRun run = Pending("ns/r");
  run.fleets = {"b"};
  queue.Upsert(run);
  const CycleResult r = Cycle();
  EXPECT_EQ(FindPlacement(r, "ns/r"), nullptr);
  EXPECT_EQ(Explain(r, "ns/r"),
            "needs 1 block on one instance; largest free is 0 (fleet b); holds 1 reserved "
            "instance until capacity frees up");
}

TEST_F(SchedulerTest, PlacementsInOneCycleDoNotOvercommit) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("a", "cpu")};
  for (int i = 0; i < 5; ++i) {
    queue.Upsert(Pending("ns/r" + std::to_string(i), 50, kT0 + minutes(i), 1, Cpus(8)));
  }
  const CycleResult r = Cycle();
  EXPECT_EQ(r.placements.size(), 4u);
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_EQ(r.waiting[0].run_id, "ns/r4");
  EXPECT_EQ(r.Explain(r.waiting[0]),
            "needs 2 blocks on one instance; largest free is 0 (fleet cpu); holds 1 reserved "
            "instance until capacity frees up");
}

TEST_F(SchedulerTest, RunThatDoesNotFitDoesNotBlockRunsBehind) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("a", "cpu"), Node("b", "cpu")};
  Busy("a", 4);                  // no known end
  Busy("b", 6, now + hours(1));  // frees first: ns/big reserves b
  queue.Upsert(Pending("ns/big", 90, kT0, 1, Cpus(32)));
  queue.Upsert(Pending("ns/small", 10, kT0, 1, Cpus(4)));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/small"), Names{"a"});
  EXPECT_EQ(Explain(r, "ns/big"),
            "needs 8 blocks on one instance; largest free is 4 (fleet cpu); holds 1 reserved "
            "instance, expected to start in 1h");
}

// A waiting run's expected start is an estimate: said in whole seconds, rounded up.
TEST_F(SchedulerTest, AnExpectedStartIsSaidInWholeSeconds) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("a", "cpu")};
  Busy("a", 6, now + minutes(59) + std::chrono::milliseconds(20'722));
  queue.Upsert(Pending("ns/big", 90, kT0, 1, Cpus(32)));
  const CycleResult r = Cycle();
  EXPECT_EQ(Explain(r, "ns/big"),
            "needs 8 blocks on one instance; largest free is 2 (fleet cpu); holds 1 reserved "
            "instance, expected to start in 59m21s");
}

// A cycle that reuses an earlier result's buffers (the engine lends it the last pass') decides
// exactly what a fresh one does: nothing of the earlier content is left in it.
TEST_F(SchedulerTest, ACycleWithRecycledBuffersDecidesAsAFreshOne) {
  cluster.fleets = {AnyFleet("cpu"), ClusterFleet("gpu")};
  cluster.instances = {Node("a", "cpu"), Node("g1", "gpu"), Node("g2", "gpu")};
  Busy("a", 6, now + minutes(30));
  Busy("g2", 1);
  queue.Upsert(Pending("ns/fits", 90, kT0, 1, Cpus(8)));
  queue.Upsert(Pending("ns/big", 80, kT0, 1, Cpus(32)));
  queue.Upsert(Pending("ns/gang", 70, kT0, 2, Cpus(0, 0, 8)));
  queue.Upsert(Pending("ns/small", 60, kT0, 1, Cpus(4)));
  const CycleResult fresh = Cycle();
  ASSERT_FALSE(fresh.placements.empty());
  ASSERT_FALSE(fresh.waiting.empty());
  ASSERT_TRUE(fresh.reservation.has_value());

  // An earlier result with other content: other runs placed and waiting, another reservation.
  ClusterSnapshot other;
  other.fleets = {AnyFleet("old")};
  other.instances = {Node("o1", "old")};
  RunQueue other_queue{Duration(0)};
  for (int i = 0; i < 20; ++i) other_queue.Upsert(Pending("old/r" + std::to_string(i), 50, kT0, 1, Cpus(12)));
  CycleResult earlier = Schedule(other, other_queue, now);
  ASSERT_GT(earlier.waiting.size(), fresh.waiting.size());

  const CycleResult recycled = Schedule(cluster, queue, now, true, std::move(earlier));
  ASSERT_EQ(recycled.placements.size(), fresh.placements.size());
  for (size_t i = 0; i < fresh.placements.size(); ++i) {
    EXPECT_EQ(recycled.placements[i].run_id, fresh.placements[i].run_id);
    EXPECT_EQ(PlacedOn(recycled, fresh.placements[i].run_id), PlacedOn(fresh, fresh.placements[i].run_id));
  }
  ASSERT_EQ(recycled.waiting.size(), fresh.waiting.size());
  for (size_t i = 0; i < fresh.waiting.size(); ++i) {
    EXPECT_EQ(recycled.waiting[i].run_id, fresh.waiting[i].run_id);
    EXPECT_EQ(recycled.waiting[i].reason, fresh.waiting[i].reason);
    EXPECT_EQ(recycled.Explain(recycled.waiting[i]), fresh.Explain(fresh.waiting[i]));
  }
  ASSERT_TRUE(recycled.reservation.has_value());
  EXPECT_EQ(recycled.reservation->run_id, fresh.reservation->run_id);
  EXPECT_EQ(recycled.reservation->instances, fresh.reservation->instances);
  ASSERT_EQ(recycled.fleets.size(), fresh.fleets.size());
  EXPECT_EQ(recycled.fleets[0].name, "cpu");
  EXPECT_EQ(recycled.preemptions.size(), fresh.preemptions.size());
}

// What berth_pending_runs shows: waiting runs by the fleet their reason is about and the API
// reason, also when runs of one kind are not neighbours in the queue.
TEST(CycleResultTest, CountWaitingCountsByFleetAndReasonWhereverTheRunsAre) {
  CycleResult r;
  r.fleets = {FleetRef{"a100", ""}, FleetRef{"h100", ""}};
  auto wait = [&](const std::string& id, WaitCode code, int32_t fleet) {
    WaitingRun w;
    w.run_id = id;
    w.reason.code = code;
    w.reason.fleet = fleet;
    r.waiting.push_back(w);
  };
  wait("ns/1", WaitCode::kNotEnoughFreeBlocks, 0);
  wait("ns/2", WaitCode::kNotEnoughFreeBlocks, 0);
  wait("ns/3", WaitCode::kNotEnoughFreeBlocks, 1);
  wait("ns/4", WaitCode::kLifetimeTooShort, 0);  // NoCapacity too: counted with 1 and 2
  wait("ns/5", WaitCode::kFleetNotFound, -1);
  wait("ns/6", WaitCode::kNotEnoughFreeBlocks, 1);
  wait("ns/7", WaitCode::kQuotaExceeded, 0);
  wait("ns/8", WaitCode::kNotEnoughFreeBlocks, 7);  // out of range: "none"
  const auto counts = r.CountWaiting();
  const std::map<std::pair<std::string, std::string>, int64_t> want{
      {{"a100", "NoCapacity"}, 3}, {{"h100", "NoCapacity"}, 2},   {{"none", "Unschedulable"}, 1},
      {{"a100", "QuotaExceeded"}, 1}, {{"none", "NoCapacity"}, 1}};
  EXPECT_EQ(counts, want);
  EXPECT_TRUE(CycleResult{}.CountWaiting().empty());
}

// ---- Multi-node placement --------------------------------------------------------------------

TEST_F(SchedulerTest, MultiNodeTakesWholeIdleInstancesRanksByName) {
  cluster.fleets = {ClusterFleet("gpu")};
  cluster.instances = {Node("c", "gpu"), Node("a", "gpu"), Node("b", "gpu"), Node("d", "gpu")};
  Busy("b", 1);
  queue.Upsert(Pending("ns/gang", 50, kT0, 3, Cpus(0, 0, 8)));
  const CycleResult r = Cycle();
  ASSERT_NE(FindPlacement(r, "ns/gang"), nullptr);
  const Placement& p = *FindPlacement(r, "ns/gang");
  EXPECT_EQ(PlacedOn(r, "ns/gang"), (Names{"a", "c", "d"}));
  for (size_t i = 0; i < p.ranks.size(); ++i) {
    EXPECT_EQ(p.ranks[i].rank, static_cast<int32_t>(i));
    EXPECT_EQ(p.ranks[i].blocks, 8);
    EXPECT_EQ(p.ranks[i].resources, Cpus(32, 256, 8));
  }
}

TEST_F(SchedulerTest, MultiNodeIsAllOrNothing) {
  cluster.fleets = {ClusterFleet("a100")};
  cluster.instances = {Node("a", "a100"), Node("b", "a100"), Node("c", "a100"), Node("d", "a100")};
  Busy("b", 2);
  Busy("c", 8);
  Busy("d", 1);
  queue.Upsert(Pending("ns/gang", 50, kT0, 2, Cpus(0, 0, 8)));
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.placements.empty());
  EXPECT_EQ(Explain(r, "ns/gang"),
            "needs 2 idle instances with 8 GPUs in a cluster fleet; fleet a100 has 1 idle, 3 busy"
            "; holds 2 reserved instances until capacity frees up");
}

TEST_F(SchedulerTest, MultiNodeStaysInOneTopologyDomain) {
  cluster.fleets = {ClusterFleet("gpu", BlocksSetting::Count(8), "zone")};
  auto in_zone = [](std::string name, std::optional<std::string> zone) {
    InstanceSpec i = Node(std::move(name), "gpu");
    i.topology_domain = std::move(zone);
    return i;
  };
  cluster.instances = {in_zone("a1", "z1"), in_zone("a2", "z1"), in_zone("b1", "z2"),
                       in_zone("b2", "z2"), in_zone("b3", "z2"), in_zone("x", std::nullopt)};
  Busy("a2", 1);
  queue.Upsert(Pending("ns/gang", 50, kT0, 3));
  queue.Upsert(Pending("ns/pair", 40, kT0, 2));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/gang"), (Names{"b1", "b2", "b3"}));
  // z1 has one idle instance left; x has no zone label, so it takes no multi-node run.
  EXPECT_EQ(Explain(r, "ns/pair"),
            "needs 2 idle instances in one zone domain of a cluster fleet; fleet gpu has at most "
            "1 idle in one domain, 4 busy; holds 2 reserved instances until capacity frees up");
}

TEST_F(SchedulerTest, MultiNodePrefersTheSmallestDomainThatHoldsIt) {
  cluster.fleets = {ClusterFleet("gpu", BlocksSetting::Count(8), "rack")};
  for (std::string name : {"a1", "a2", "a3", "a4", "b1", "b2"}) {
    InstanceSpec i = Node(name, "gpu");
    i.topology_domain = name.substr(0, 1);
    cluster.instances.push_back(i);
  }
  queue.Upsert(Pending("ns/pair", 50, kT0, 2));
  EXPECT_EQ(PlacedOn(Cycle(), "ns/pair"), (Names{"b1", "b2"}));
}

TEST_F(SchedulerTest, MultiNodeUsesOnlyClusterFleets) {
  cluster.fleets = {AnyFleet("any"), ClusterFleet("cl")};
  cluster.instances = {Node("a1", "any"), Node("a2", "any"), Node("c1", "cl"), Node("c2", "cl")};
  queue.Upsert(Pending("ns/gang", 50, kT0, 2));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/gang"), (Names{"c1", "c2"}));
  EXPECT_EQ(FindPlacement(r, "ns/gang")->fleet, "cl");
}

// ---- Unschedulable ---------------------------------------------------------------------------

struct UnschedulableCase {
  std::string name;
  PendingRun run;
  WaitCode code;
  std::string sentence;
};

class Unschedulable : public ::testing::TestWithParam<UnschedulableCase> {};

TEST_P(Unschedulable, ReasonNamesTheCause) {
  const UnschedulableCase& c = GetParam();
  ClusterSnapshot cluster;
  cluster.fleets = {AnyFleet("cpu"), ClusterFleet("gpu", BlocksSetting::Auto(), "zone"),
                    AnyFleet("bad", BlocksSetting::Count(3))};
  cluster.instances = {Node("c1", "cpu"), Node("c2", "cpu"), Node("bad1", "bad")};
  for (std::string name : {"g1", "g2", "g3"}) {
    InstanceSpec i = Node(name, "gpu");
    i.topology_domain = name == "g3" ? "z2" : "z1";
    cluster.instances.push_back(i);
  }
  RunQueue queue(Duration(0));
  queue.Upsert(c.run);
  const CycleResult r = Schedule(cluster, queue, kT0);
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_TRUE(r.waiting[0].unschedulable());
  EXPECT_EQ(r.waiting[0].reason.code, c.code);
  EXPECT_EQ(r.Explain(r.waiting[0]), c.sentence);
  EXPECT_EQ(ApiReason(r.waiting[0].reason.code), "Unschedulable");
}

// Issue 44/45: a workload whose Pods' own grace period is longer than a fleet's maxGracePeriod
// is placed on another fleet, even a busier one; with none, it waits GracePeriodTooLong, saying
// what to change.
TEST_F(SchedulerTest, AWorkloadGoesOnlyToFleetsWhoseMaxGracePeriodCoversItsPods) {
  cluster.fleets = {AnyFleet("short"), AnyFleet("long")};
  cluster.fleets[0].max_grace_seconds = 600;
  cluster.fleets[1].max_grace_seconds = 7200;
  cluster.instances = {Node("s1", "short"), Node("l1", "long")};
  Busy("l1", 3);  // the idle "short" would be chosen for anything else
  PendingRun job = Pending("ns/job-a", 50, kT0, 1, Cpus(4));
  job.grace_seconds = 3600;
  queue.Upsert(job);
  PendingRun year = Pending("ns/job-year", 50, kT0 + Duration(1), 1, Cpus(4));
  year.grace_seconds = 31536000;
  queue.Upsert(year);
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/job-a"), Names{"l1"});
  const WaitingRun* w = FindWaiting(r, "ns/job-year");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kGracePeriodTooLong);
  EXPECT_EQ(ApiReason(w->reason.code), "GracePeriodTooLong");
  EXPECT_EQ(r.Explain(*w),
            "its Pods' terminationGracePeriodSeconds is 31536000, more than the maxGracePeriod of every fleet it may "
            "use (the longest: 2h, fleet long), so berth could not stop them within it; lower "
            "terminationGracePeriodSeconds in its Pod template to at most 7200, or raise the fleet's spec.maxGracePeriod");
}

PendingRun WithFleets(PendingRun r, std::vector<std::string> fleets) {
  r.fleets = std::move(fleets);
  return r;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Unschedulable,
    ::testing::Values(
        UnschedulableCase{"FleetNotFound", WithFleets(Pending("ns/r"), {"h100"}),
                          WaitCode::kFleetNotFound, "fleet h100 does not exist"},
        UnschedulableCase{"FleetsNotFound", WithFleets(Pending("ns/r"), {"x", "h100"}),
                          WaitCode::kFleetNotFound, "fleets h100, x do not exist"},
        UnschedulableCase{"MultiNodeWithoutClusterFleet",
                          WithFleets(Pending("ns/r", 50, kT0, 2), {"cpu"}),
                          WaitCode::kNeedsClusterPlacement,
                          "a multi-node run (2 nodes) needs a Fleet with placement: cluster; "
                          "none of its fleets has it"},
        UnschedulableCase{"TooLargeForAnyInstance", Pending("ns/r", 50, kT0, 1, Cpus(64)),
                          WaitCode::kTooLarge,
                          "requests 64 CPUs per node, more than any instance of its fleets "
                          "holds"},
        UnschedulableCase{"MoreNodesThanAnyDomain", Pending("ns/r", 50, kT0, 3),
                          WaitCode::kTooManyNodes,
                          "needs 3 instances in one zone domain; the largest has 2 (fleet gpu)"},
        UnschedulableCase{"OnlyInvalidInstances", WithFleets(Pending("ns/r"), {"bad"}),
                          WaitCode::kNoValidInstance,
                          "its fleets have no instance with a valid block layout (1 invalid)"}),
    [](const ::testing::TestParamInfo<UnschedulableCase>& info) { return info.param.name; });

TEST(SchedulerUnschedulable, NoFleetAtAll) {
  ClusterSnapshot cluster;
  RunQueue queue(Duration(0));
  queue.Upsert(Pending("ns/r"));
  const CycleResult r = Schedule(cluster, queue, kT0);
  ASSERT_EQ(r.waiting.size(), 1u);
  EXPECT_EQ(r.Explain(r.waiting[0]), "no Fleet exists");
}

TEST(SchedulerUnschedulable, TooManyNodesForAClusterFleet) {
  ClusterSnapshot cluster;
  cluster.fleets = {ClusterFleet("a100")};
  cluster.instances = {Node("a", "a100"), Node("b", "a100")};
  RunQueue queue(Duration(0));
  queue.Upsert(Pending("ns/r", 50, kT0, 16));
  const CycleResult r = Schedule(cluster, queue, kT0);
  EXPECT_EQ(r.Explain(r.waiting[0]),
            "needs 16 instances in one cluster fleet; the largest has 2 (fleet a100)");
  EXPECT_FALSE(r.reservation.has_value());  // an Unschedulable run reserves nothing
}

// ---- Lifetime and instance states ------------------------------------------------------------

TEST_F(SchedulerTest, MaxDurationNeedsEnoughLifetimeLeft) {
  cluster.fleets = {AnyFleet("hpc", BlocksSetting::Count(1))};
  InstanceSpec soon = Node("soon", "hpc");
  soon.expires_at = now + hours(1);
  cluster.instances = {soon};
  PendingRun bounded = Pending("ns/bounded", 90);
  bounded.max_duration = hours(4);
  queue.Upsert(bounded);
  queue.Upsert(Pending("ns/unbounded", 10));  // no maxDuration: the lifetime rule does not apply
  const CycleResult r = Cycle();
  EXPECT_EQ(FindPlacement(r, "ns/bounded"), nullptr);
  EXPECT_EQ(PlacedOn(r, "ns/unbounded"), Names{"soon"});
  EXPECT_EQ(Explain(r, "ns/bounded"),
            "needs 1 block on an instance with at least 4h of lifetime left; instances with room "
            "have at most 1h left (fleet hpc)");
}

TEST_F(SchedulerTest, LifetimeExactlyEnoughIsEnough) {
  cluster.fleets = {AnyFleet("hpc", BlocksSetting::Count(1))};
  InstanceSpec i = Node("i", "hpc");
  i.expires_at = now + hours(4);
  cluster.instances = {i};
  PendingRun run = Pending("ns/r");
  run.max_duration = hours(4);
  queue.Upsert(run);
  EXPECT_EQ(PlacedOn(Cycle(), "ns/r"), Names{"i"});
}

TEST_F(SchedulerTest, BoundedRunsTakeTheShortestSufficientLifetimeUnboundedTheLongest) {
  cluster.fleets = {AnyFleet("hpc", BlocksSetting::Count(1))};
  InstanceSpec a = Node("a", "hpc"), b = Node("b", "hpc"), c = Node("c", "hpc");
  a.expires_at = now + hours(10);
  b.expires_at = now + hours(3);
  c.expires_at = now + hours(5);
  cluster.instances = {a, b, c, Node("d", "hpc")};  // d never expires
  PendingRun bounded = Pending("ns/bounded", 90);
  bounded.max_duration = hours(4);
  queue.Upsert(bounded);
  queue.Upsert(Pending("ns/unbounded", 10));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/bounded"), Names{"c"});
  EXPECT_EQ(PlacedOn(r, "ns/unbounded"), Names{"d"});
}

TEST_F(SchedulerTest, UnavailableInstancesTakeNothingNew) {
  cluster.fleets = {Fleet("f", BlocksSetting::Count(8), PlacementPolicy::kAny, "", 3)};
  InstanceSpec not_ready = Node("not-ready", "f"), expired = Node("expired", "f"),
               retired = Node("retired", "f");
  not_ready.ready = false;
  expired.expires_at = now;
  retired.runs_started = 3;
  cluster.instances = {not_ready, expired, retired};
  queue.Upsert(Pending("ns/r"));
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.placements.empty());
  EXPECT_EQ(Explain(r, "ns/r"),
            "no instance of its fleets can take a new run (1 not ready, 1 expired, 1 retired)");
  EXPECT_FALSE(r.reservation.has_value());
}

TEST_F(SchedulerTest, MaxRunsPerInstanceCountsPlacementsWithinTheCycle) {
  cluster.fleets = {Fleet("f", BlocksSetting::Count(8), PlacementPolicy::kAny, "", 1)};
  cluster.instances = {Node("a", "f"), Node("b", "f")};
  queue.Upsert(Pending("ns/r1", 50, kT0));
  queue.Upsert(Pending("ns/r2", 50, kT0 + minutes(1)));
  queue.Upsert(Pending("ns/r3", 50, kT0 + minutes(2)));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/r1"), Names{"a"});
  EXPECT_EQ(PlacedOn(r, "ns/r2"), Names{"b"});
  EXPECT_EQ(Explain(r, "ns/r3"), "no instance of its fleets can take a new run (2 retired)");
}

TEST(InstanceState, Classification) {
  const FleetSpec fleet = Fleet("f", BlocksSetting::Count(4), PlacementPolicy::kAny, "", 2);
  const InstanceSpec base = Node("i", "f");
  const BlockLayout layout = BlockLayout::Make(base.allocatable, fleet.blocks);
  const BlockLayout invalid = BlockLayout::Make(base.allocatable, BlocksSetting::Count(3));
  InstanceSpec not_ready = base, expired = base, retired = base;
  not_ready.ready = false;
  expired.expires_at = kT0;
  retired.runs_started = 2;
  EXPECT_EQ(ClassifyInstance(base, fleet, layout, 0, kT0), InstanceState::kIdle);
  EXPECT_EQ(ClassifyInstance(base, fleet, layout, 1, kT0), InstanceState::kBusy);
  EXPECT_EQ(ClassifyInstance(base, fleet, layout, 4, kT0), InstanceState::kFull);
  EXPECT_EQ(ClassifyInstance(base, fleet, layout, 9, kT0), InstanceState::kFull);
  EXPECT_EQ(ClassifyInstance(retired, fleet, layout, 1, kT0), InstanceState::kRetired);
  EXPECT_EQ(ClassifyInstance(expired, fleet, layout, 0, kT0), InstanceState::kExpired);
  EXPECT_EQ(ClassifyInstance(not_ready, fleet, layout, 0, kT0), InstanceState::kNotReady);
  EXPECT_EQ(ClassifyInstance(not_ready, fleet, invalid, 0, kT0), InstanceState::kInvalid);
  EXPECT_EQ(InstanceStateName(InstanceState::kNotReady), "NotReady");
  EXPECT_FALSE(TakesNewRuns(InstanceState::kRetired));
  EXPECT_TRUE(TakesNewRuns(InstanceState::kFull));
}

TEST(InstanceState, DescribeInstancesDerivesBusyBlocksFromRunningRuns) {
  ClusterSnapshot cluster;
  cluster.fleets = {Fleet("f", BlocksSetting::Count(4), PlacementPolicy::kAny, "", 5),
                    Fleet("g", BlocksSetting::Count(3))};
  InstanceSpec gone = Node("old", "f");
  gone.expires_at = kT0 - minutes(90);
  InstanceSpec tired = Node("tired", "f");
  tired.runs_started = 5;
  cluster.instances = {Node("a", "f"), gone, Node("bad", "g"), tired, Node("lost", "nope")};
  cluster.running = {Running("r1", {{"a", 1}}), Running("r2", {{"a", 2}, {"unknown", 4}})};
  const std::vector<InstanceStatus> s = DescribeInstances(cluster, kT0);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[0].busy_blocks, 3);
  EXPECT_EQ(s[0].total_blocks, 4);
  EXPECT_EQ(s[0].state, InstanceState::kBusy);
  EXPECT_EQ(s[1].state, InstanceState::kExpired);
  EXPECT_EQ(s[1].message, "expired 1h30m ago");
  EXPECT_EQ(s[2].state, InstanceState::kInvalid);
  EXPECT_EQ(s[2].message, "8 GPUs cannot be split into 3 blocks");
  EXPECT_EQ(s[3].state, InstanceState::kRetired);
  EXPECT_EQ(s[3].message, "retired after 5 runs (maxRunsPerInstance 5)");
  EXPECT_EQ(s[4].state, InstanceState::kInvalid);
  EXPECT_EQ(s[4].message, "fleet nope does not exist");
}

// ---- Reservation -----------------------------------------------------------------------------

struct ReservationTest : SchedulerTest {
  void SetUp() override {
    cluster.fleets = {AnyFleet("cpu")};
    cluster.instances = {Node("a", "cpu"), Node("b", "cpu")};
    Busy("a", 8, now + hours(3));  // a is full until 3h from now
    Busy("b", 6, now + hours(1));  // b has 2 free, fully free in 1h
    queue.Upsert(Pending("ns/big", 90, kT0, 1, Cpus(32)));
  }
};

TEST_F(ReservationTest, FirstBlockedRunReservesTheInstanceFreeingSoonest) {
  const CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->run_id, "ns/big");
  EXPECT_EQ(r.reservation->fleet, "cpu");
  EXPECT_EQ(r.reservation->instances, Names{"b"});
  EXPECT_EQ(r.reservation->earliest_start, now + hours(1));
  EXPECT_EQ(Explain(r, "ns/big"),
            "needs 8 blocks on one instance; largest free is 2 (fleet cpu); holds 1 reserved "
            "instance, expected to start in 1h");
}

TEST_F(ReservationTest, RunsBehindUseReservedInstancesOnlyWhenTheyEndInTime) {
  PendingRun too_long = Pending("ns/long", 70, kT0, 1, Cpus(8));
  too_long.max_duration = minutes(61);
  PendingRun unbounded = Pending("ns/unbounded", 60, kT0, 1, Cpus(8));
  PendingRun fits = Pending("ns/short", 50, kT0, 1, Cpus(8));
  fits.max_duration = minutes(60);  // ends exactly when ns/big may start: allowed
  queue.Upsert(too_long);
  queue.Upsert(unbounded);
  queue.Upsert(fits);
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/short"), Names{"b"});
  EXPECT_EQ(Explain(r, "ns/long"),
            "fits only on instances reserved for ns/big, which expects to start in 1h; its "
            "maxDuration of 1h1m ends after that");
  EXPECT_EQ(Explain(r, "ns/unbounded"),
            "fits only on instances reserved for ns/big, which expects to start in 1h; a run "
            "without maxDuration may not use reserved instances");
  EXPECT_EQ(FindWaiting(r, "ns/unbounded")->reason.code, WaitCode::kReserved);
  EXPECT_EQ(ApiReason(WaitCode::kReserved), "NoCapacity");
}

// Issue 44, item 11: a waiting run's status may be read by whoever sees its namespace only, so
// the run holding the reservation is named only when it is of the same namespace.
TEST_F(ReservationTest, TheReservationsRunIsNamedOnlyToRunsOfItsNamespace) {
  PendingRun theirs = Pending("other/unbounded", 60, kT0, 1, Cpus(8));
  queue.Upsert(theirs);
  const CycleResult r = Cycle();
  ASSERT_EQ(r.reservation->run_id, "ns/big");
  EXPECT_EQ(Explain(r, "other/unbounded"),
            "fits only on instances reserved for a run of another namespace, which expects to start in 1h; a run "
            "without maxDuration may not use reserved instances");
  EXPECT_EQ(RunNameFor("ns/a", "ns/big"), "ns/big");
  EXPECT_EQ(RunNameFor("other/a", "ns/big"), "a run of another namespace");
  EXPECT_EQ(RunNamesFor("ns/a", {"ns/b1", "x/c", "ns/b2", "y/d"}), "ns/b1, ns/b2, 2 runs of other namespaces");
  EXPECT_EQ(RunNamesFor("z/a", {"x/c"}), "a run of another namespace");
}

TEST_F(ReservationTest, BackfillPrefersReservedRoomOverOpenRoom) {
  cluster.instances.push_back(Node("c", "cpu"));
  Busy("c", 6);  // c has the same 2 free blocks, unreserved
  PendingRun fits = Pending("ns/short", 50, kT0, 1, Cpus(8));
  fits.max_duration = minutes(30);
  queue.Upsert(fits);
  queue.Upsert(Pending("ns/unbounded", 40, kT0, 1, Cpus(8)));
  const CycleResult r = Cycle();
  EXPECT_EQ(r.reservation->instances, Names{"b"});
  EXPECT_EQ(PlacedOn(r, "ns/short"), Names{"b"});
  EXPECT_EQ(PlacedOn(r, "ns/unbounded"), Names{"c"});
}

TEST_F(ReservationTest, BackfillNeverTakesTheLastRunSlotOfAReservedInstance) {
  cluster.fleets = {Fleet("cpu", BlocksSetting::Count(8), PlacementPolicy::kAny, "", 5)};
  cluster.instances[1].runs_started = 4;  // b, the instance ns/big reserves, has one run left
  PendingRun fits = Pending("ns/short", 50, kT0, 1, Cpus(8));
  fits.max_duration = minutes(30);
  queue.Upsert(fits);
  const CycleResult r = Cycle();
  EXPECT_EQ(r.reservation->instances, Names{"b"});
  EXPECT_EQ(FindPlacement(r, "ns/short"), nullptr);  // would retire b before ns/big starts
}

TEST_F(ReservationTest, UnknownStartAllowsNoBackfill) {
  cluster.running = {Running("x", {{"a", 6}}), Running("y", {{"b", 6}})};  // no known ends
  PendingRun tiny = Pending("ns/tiny", 50, kT0, 1, Cpus(4));
  tiny.max_duration = minutes(1);
  queue.Upsert(tiny);
  const CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->earliest_start, std::nullopt);
  EXPECT_EQ(r.reservation->instances, Names{"a"});  // unknown everywhere: by name
  EXPECT_EQ(PlacedOn(r, "ns/tiny"), Names{"b"});
}

TEST_F(ReservationTest, OnlyTheFirstBlockedRunReserves) {
  queue.Upsert(Pending("ns/big2", 80, kT0, 1, Cpus(32)));
  const CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->run_id, "ns/big");
  EXPECT_EQ(Explain(r, "ns/big2"),
            "needs 8 blocks on one instance; largest free is 2 (fleet cpu)");
}

TEST_F(SchedulerTest, MultiNodeReservationTakesTheInstancesFreeingSoonest) {
  cluster.fleets = {ClusterFleet("gpu")};
  cluster.instances = {Node("a", "gpu"), Node("b", "gpu"), Node("c", "gpu"), Node("d", "gpu")};
  Busy("a", 1, now + hours(5));
  Busy("b", 1, now + hours(2));
  Busy("b", 1, now + hours(3));
  // c and d are idle
  queue.Upsert(Pending("ns/gang", 90, kT0, 3));
  PendingRun late = Pending("ns/late", 20, kT0, 2);
  late.max_duration = hours(3) + minutes(1);
  queue.Upsert(late);
  PendingRun backfill = Pending("ns/backfill", 10, kT0, 2);
  backfill.max_duration = hours(3);
  queue.Upsert(backfill);
  const CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"b", "c", "d"}));
  EXPECT_EQ(r.reservation->earliest_start, now + hours(3));
  EXPECT_EQ(PlacedOn(r, "ns/backfill"), (Names{"c", "d"}));
  EXPECT_EQ(FindWaiting(r, "ns/late")->reason.code, WaitCode::kReserved);
}

TEST_F(SchedulerTest, RunThatCanReserveNothingLeavesTheReservationToTheNext) {
  cluster.fleets = {AnyFleet("hpc", BlocksSetting::Count(1))};
  InstanceSpec s = Node("s", "hpc"), n = Node("n", "hpc");
  s.expires_at = now + hours(1);
  n.expires_at = now + hours(5);
  cluster.instances = {s, n};
  Busy("n", 1, now + hours(2));
  PendingRun hopeless = Pending("ns/long", 90);  // 4h fits neither s (1h) nor n (free 2h..5h)
  hopeless.max_duration = hours(4);
  PendingRun quick = Pending("ns/quick", 80);
  quick.max_duration = minutes(30);
  PendingRun next = Pending("ns/next", 70);
  next.max_duration = hours(1);
  queue.Upsert(hopeless);
  queue.Upsert(quick);
  queue.Upsert(next);
  const CycleResult r = Cycle();
  EXPECT_EQ(Explain(r, "ns/long"),
            "needs 1 block on an instance with at least 4h of lifetime left; instances with room "
            "have at most 1h left (fleet hpc)");
  EXPECT_EQ(PlacedOn(r, "ns/quick"), Names{"s"});
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->run_id, "ns/next");
  EXPECT_EQ(r.reservation->instances, Names{"n"});
  EXPECT_EQ(r.reservation->earliest_start, now + hours(2));
}

// ---- Robustness and determinism --------------------------------------------------------------

TEST_F(SchedulerTest, IgnoresUnknownInstancesAndClampsOvercommit) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("a", "cpu"), Instance("orphan", "nope", Cpus(8))};
  cluster.running = {Running("x", {{"a", 12}, {"ghost", 3}, {"orphan", 1}})};
  queue.Upsert(Pending("ns/r"));
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.placements.empty());
  EXPECT_EQ(Explain(r, "ns/r"),
            "needs 1 block on one instance; largest free is 0 (fleet cpu); holds 1 reserved "
            "instance until capacity frees up");
}

TEST_F(SchedulerTest, DuplicateNamesFirstOneWins) {
  cluster.fleets = {AnyFleet("cpu"), AnyFleet("cpu", BlocksSetting::Count(3))};
  cluster.instances = {Node("a", "cpu"), Node("a", "cpu")};
  cluster.running = {Running("x", {{"a", 7}}), Running("x", {{"a", 7}})};
  queue.Upsert(Pending("ns/r"));
  EXPECT_EQ(PlacedOn(Cycle(), "ns/r"), Names{"a"});
}

TEST_F(SchedulerTest, InputOrderDoesNotMatter) {
  cluster.fleets = {AnyFleet("a"), ClusterFleet("b"), AnyFleet("c", BlocksSetting::Count(4))};
  for (int i = 0; i < 12; ++i) {
    cluster.instances.push_back(Node("n" + std::to_string(i), std::string(1, "abc"[i % 3])));
  }
  Busy("n0", 3, now + hours(1));
  Busy("n4", 8, now + hours(2));
  Busy("n5", 2);
  for (int i = 0; i < 20; ++i) {
    const int32_t nodes = i % 4 == 0 ? 3 : 1;
    queue.Upsert(Pending("ns/r" + std::to_string(i), 10 * (i % 5), kT0 + minutes(i), nodes,
                         Cpus(4 * (i % 7))));
  }
  const CycleResult first = Cycle();
  std::reverse(cluster.fleets.begin(), cluster.fleets.end());
  std::reverse(cluster.instances.begin(), cluster.instances.end());
  std::reverse(cluster.running.begin(), cluster.running.end());
  const CycleResult second = Cycle();
  ASSERT_EQ(first.placements.size(), second.placements.size());
  for (size_t i = 0; i < first.placements.size(); ++i) {
    EXPECT_EQ(first.placements[i].run_id, second.placements[i].run_id);
    EXPECT_EQ(PlacedOn(first, first.placements[i].run_id),
              PlacedOn(second, first.placements[i].run_id));
  }
  ASSERT_EQ(first.waiting.size(), second.waiting.size());
  for (size_t i = 0; i < first.waiting.size(); ++i) {
    EXPECT_EQ(first.Explain(first.waiting[i]), second.Explain(second.waiting[i]));
  }
}

TEST_F(SchedulerTest, CycleLeavesTheQueueToTheCaller) {
  cluster.fleets = {AnyFleet("cpu")};
  cluster.instances = {Node("a", "cpu")};
  queue.Upsert(Pending("ns/r"));
  const CycleResult r = Cycle();
  EXPECT_EQ(r.placements.size(), 1u);
  EXPECT_TRUE(queue.Contains("ns/r"));
  EXPECT_EQ(queue.now(), now);  // aging was brought up to date
}

}  // namespace
}  // namespace berth::scheduling
