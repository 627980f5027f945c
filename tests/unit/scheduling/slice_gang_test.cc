// Gangs of slices and whole single instances (Run spec.wholeInstances; scheduling/cycle_gang.cc,
// docs/scheduling.md "Gangs of slices"): exact answers for small hand-made cases, through
// Schedule and EstimateStarts.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "scheduling/estimate.h"
#include "scheduling/scheduler.h"
#include "scheduling/teams.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)
using Names = std::vector<std::string>;

// Instances of 32 CPUs, 256Gi and 8 GPUs in 8 blocks (4 CPUs, 32Gi, 1 GPU each).
InstanceSpec Node(std::string name, std::string fleet = "cpu") {
  return Instance(std::move(name), std::move(fleet), Cpus(32, 256, 8));
}

// `nodes` ranks of `cpus` CPUs each with spec.wholeInstances as given.
PendingRun Gang(std::string id, int32_t nodes, int64_t cpus, std::optional<bool> whole = false,
                TimePoint submitted = kT0) {
  PendingRun r = Pending(std::move(id), 50, submitted, nodes, Cpus(cpus));
  r.whole_instances = whole;
  return r;
}

struct SliceGangTest : ::testing::Test {
  SliceGangTest() { cluster.fleets = {Fleet("cpu", BlocksSetting::Count(8))}; }
  CycleResult Cycle() { return Schedule(cluster, queue, kT0); }
  void Busy(const std::string& instance, int32_t blocks, std::optional<TimePoint> end = std::nullopt) {
    cluster.running.push_back(Running("busy/" + std::to_string(cluster.running.size()), {{instance, blocks}}, end));
  }
  std::vector<int32_t> Blocks(const CycleResult& r, const std::string& id) {
    std::vector<int32_t> out;
    if (const Placement* p = FindPlacement(r, id)) {
      for (const RankPlacement& rank : p->ranks) out.push_back(rank.blocks);
    }
    return out;
  }

  ClusterSnapshot cluster;
  RunQueue queue{Duration(0)};
};

TEST_F(SliceGangTest, TwoSlicesShareOneInstanceWhenItFits) {
  cluster.instances = {Node("a"), Node("b")};
  queue.Upsert(Gang("ns/g", 2, 8));  // 2 blocks a rank
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/g"), (Names{"a", "a"}));
  EXPECT_EQ(Blocks(r, "ns/g"), (std::vector<int32_t>{2, 2}));
  const Placement* p = FindPlacement(r, "ns/g");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->ranks[1].rank, 1);
  EXPECT_EQ(p->ranks[0].resources, Resources({8000, 64 * kGi, 2}));
}

TEST_F(SliceGangTest, SlicesGoWhereSingleNodeRunsWouldBestFit) {
  cluster.instances = {Node("a"), Node("b"), Node("c")};
  Busy("b", 6);  // 2 free: one slice, left 0
  Busy("c", 4);  // 4 free: two slices
  queue.Upsert(Gang("ns/g", 3, 8));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/g"), (Names{"b", "c", "c"})) << "partly used instances first, idle a untouched";
}

TEST_F(SliceGangTest, TheAbsentFieldKeepsWholeInstancesAndFalseMakesSlices) {
  cluster.instances = {Node("a"), Node("b")};
  queue.Upsert(Gang("ns/whole", 2, 8, std::nullopt));
  CycleResult r = Cycle();
  EXPECT_EQ(FindWaiting(r, "ns/whole")->reason.code, WaitCode::kNeedsClusterPlacement)
      << "absent: a multi-node run takes whole instances of a cluster fleet, as before";
  queue.Upsert(Gang("ns/whole", 2, 8, false));
  r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/whole"), (Names{"a", "a"})) << "false: slices, on any placement";
}

TEST_F(SliceGangTest, NeverAPartialGangAndTheRunsBehindItStillStart) {
  cluster.instances = {Node("a"), Node("b"), Node("c")};
  Busy("a", 6);  // 2 free
  Busy("b", 6);  // 2 free: room for two slices of 2 blocks, not three
  Busy("c", 7);  // 1 free
  queue.Upsert(Gang("ns/g", 3, 8));
  queue.Upsert(Pending("ns/small", 50, kT0 + Duration(1), 1, Cpus(4)));
  const CycleResult r = Cycle();
  EXPECT_EQ(FindPlacement(r, "ns/g"), nullptr);
  EXPECT_EQ(PlacedOn(r, "ns/small"), Names{"c"});
  const WaitingRun* w = FindWaiting(r, "ns/g");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kNotEnoughSlices);
  EXPECT_EQ(ApiReason(w->reason.code), "NoCapacity");
  // It holds the room it has (a and b) until the rest frees up: no run without a known end takes it.
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"a", "b"}));
  EXPECT_EQ(Explain(r, "ns/g"),
            "needs 3 slices of 2 blocks each (one per Pod with 8 CPUs) in one fleet; fleet cpu has room for 2 now; "
            "holds 2 reserved instances until capacity frees up");
}

TEST_F(SliceGangTest, AGangStaysInOneFleet) {
  cluster.fleets = {Fleet("x", BlocksSetting::Count(8)), Fleet("y", BlocksSetting::Count(8))};
  cluster.instances = {Node("x1", "x"), Node("y1", "y")};
  Busy("x1", 4);
  Busy("y1", 4);  // each fleet has room for 2 slices of 2 blocks
  queue.Upsert(Gang("ns/three", 3, 8));
  queue.Upsert(Gang("ns/two", 2, 8, false, kT0 + Duration(1)));
  const CycleResult r = Cycle();
  EXPECT_EQ(FindPlacement(r, "ns/three"), nullptr) << "3 slices exist, but not in one fleet";
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, Names{"x1"}) << "ns/three waits for x (first by name)";
  EXPECT_EQ(PlacedOn(r, "ns/two"), (Names{"y1", "y1"}));
}

TEST_F(SliceGangTest, AGangLargerThanAnyFleetIsUnschedulableWithTheNumbers) {
  cluster.instances = {Node("a"), Node("b")};
  queue.Upsert(Gang("ns/huge", 5, 16));  // 4 blocks a rank: the fleet holds 4 at most
  const CycleResult r = Cycle();
  const WaitingRun* w = FindWaiting(r, "ns/huge");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kTooManySlices);
  EXPECT_TRUE(w->unschedulable());
  EXPECT_EQ(Explain(r, "ns/huge"),
            "needs 5 slices of 4 blocks each (one per Pod) in one fleet; fleet cpu, the largest, holds at most 4 "
            "even when all its instances are idle");
  EXPECT_FALSE(r.reservation.has_value());
}

TEST_F(SliceGangTest, ARankLargerThanAnyInstanceIsTooLarge) {
  cluster.instances = {Node("a")};
  queue.Upsert(Gang("ns/fat", 2, 64));
  const CycleResult r = Cycle();
  EXPECT_EQ(Explain(r, "ns/fat"), "requests 64 CPUs per node, more than any instance of its fleets holds");
}

TEST_F(SliceGangTest, AGangCountsAsOneRunOnEachInstanceItUses) {
  cluster.fleets = {Fleet("cpu", BlocksSetting::Count(8), PlacementPolicy::kAny, "", /*max_runs=*/2)};
  cluster.instances = {Node("a"), Node("b")};
  cluster.instances[0].runs_started = 1;  // a has one run left
  queue.Upsert(Gang("ns/g", 2, 8));
  queue.Upsert(Pending("ns/next", 50, kT0 + Duration(1), 1, Cpus(4)));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/g"), (Names{"a", "a"})) << "two ranks on a are one run there";
  EXPECT_EQ(PlacedOn(r, "ns/next"), Names{"b"}) << "a retired after the gang";
}

TEST_F(SliceGangTest, QuotaIsChargedTheSumOfTheSlices) {
  cluster.quotas = {NamespaceQuota{"ns", {{kQuotaCpu, QuotaLimit{0, 20'000, "cpu"}}}}};
  cluster.instances = {Node("a"), Node("b")};
  queue.Upsert(Gang("ns/g", 2, 8));                                   // 16 CPUs
  queue.Upsert(Pending("ns/r", 50, kT0 + Duration(1), 1, Cpus(8)));  // 8 more: 24 of 20
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/g"), (Names{"a", "a"}));
  EXPECT_EQ(FindWaiting(r, "ns/r")->reason.code, WaitCode::kQuotaExceeded);
  EXPECT_EQ(Explain(r, "ns/r"), "needs 8 CPUs; namespace ns uses 16 of 20 CPUs (requests.cpu, ResourceQuota cpu)");
}

TEST_F(SliceGangTest, TeamShareIsChargedTheSumOfTheSlices) {
  TeamSpec team;
  team.name = "vision";
  team.namespaces = {"ns"};
  TeamShare share;
  share.fleet = "cpu";
  share.nominal.gpus = 4;
  share.borrowing_limit.gpus = 0;
  team.shares = {share};
  cluster.teams = {team};
  cluster.instances = {Node("a"), Node("b")};
  PendingRun g = Gang("ns/g", 3, 0);
  g.resources.gpus = 2;  // 3 x 2 GPUs: 6 of a 4-GPU share
  queue.Upsert(g);
  CycleResult r = Cycle();
  const WaitingRun* w = FindWaiting(r, "ns/g");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason.code, WaitCode::kTeamShare);
  EXPECT_EQ(Explain(r, "ns/g"), "team vision uses 0 of its 4 GPUs on cpu and may borrow 0 more; it needs 6 GPUs");
  g.nodes = 2;  // 4 GPUs: within it
  queue.Upsert(g);
  r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/g"), (Names{"a", "a"}));
}

TEST_F(SliceGangTest, AWaitingGangHoldsTheReservationOfTheSoonestRoom) {
  cluster.instances = {Node("a"), Node("b")};
  Busy("a", 8, kT0 + minutes(30));
  Busy("b", 8, kT0 + minutes(60));
  queue.Upsert(Gang("ns/g", 2, 16));  // two slices of 4 blocks: both fit on a once it frees
  const CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->run_id, "ns/g");
  EXPECT_EQ(r.reservation->instances, Names{"a"});
  EXPECT_EQ(r.reservation->earliest_start, kT0 + minutes(30));
}

TEST_F(SliceGangTest, AWholeSingleInstanceTakesEveryBlockOfAnIdleInstance) {
  cluster.instances = {Node("a"), Node("b")};
  Busy("a", 1);
  queue.Upsert(Gang("ns/w", 1, 4, true));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/w"), Names{"b"}) << "a is partly used";
  EXPECT_EQ(Blocks(r, "ns/w"), std::vector<int32_t>{8});
  queue.Remove("ns/w");
  Busy("b", 1);
  queue.Upsert(Gang("ns/w2", 1, 4, true));
  EXPECT_EQ(Explain(Cycle(), "ns/w2"),
            "needs 8 blocks on one instance; largest free is 7 (fleet cpu); holds 1 reserved instance until capacity "
            "frees up");
}

TEST_F(SliceGangTest, AGangOfSlicesWaitsRatherThanPreempts) {
  // The same request as one whole-instance gang would preempt the low-priority runs; as slices
  // that could share an instance (2 blocks of 8) it waits for them (docs/scheduling.md: only a
  // gang of whole slices preempts).
  cluster.fleets = {Preempting("cpu", 8, PlacementPolicy::kCluster)};
  cluster.instances = {Node("a"), Node("b")};
  cluster.running = {Running("ml/low-a", {{"a", 8}}), Running("ml/low-b", {{"b", 8}})};
  cluster.placed_runs = {PlacedRunInfo{"ml/low-a", 10, kT0 - hours(1)}, PlacedRunInfo{"ml/low-b", 10, kT0 - hours(1)}};
  PendingRun slices = Gang("ns/slices", 2, 8);
  slices.priority = 90;
  queue.Upsert(slices);
  CycleResult r = Cycle();
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(FindWaiting(r, "ns/slices")->reason.code, WaitCode::kNotEnoughSlices);
  slices.whole_instances = std::nullopt;  // whole instances: preempts as before
  queue.Upsert(slices);
  r = Cycle();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].run_id, "ns/slices");
}

// Issue 45 item 3 (the behaviour benchmark's "a gang of two whole nodes in one zone"): a Job's
// ticket whose Pods each ask for a whole instance's GPUs takes whole instances of one topology
// domain, like the 2-node whole-instance Run; slices that share instances may still span domains.
TEST_F(SliceGangTest, WholeInstanceSlicesStayInOneTopologyDomainLikeAMultiNodeRun) {
  cluster.fleets = {Fleet("gpu", BlocksSetting::Count(8), PlacementPolicy::kCluster, "zone")};
  for (const char* name : {"a-0", "a-1", "b-0", "b-1"}) {
    InstanceSpec in = Node(name, "gpu");
    in.topology_domain = std::string(1, name[0]);
    cluster.instances.push_back(in);
  }
  Busy("a-0", 1);  // a 1-GPU job: zone a has one idle instance left, zone b two
  PendingRun run = Pending("ns/run", 50, kT0, 2, Resources{1000, kGi, 8});
  queue.Upsert(run);
  EXPECT_EQ(PlacedOn(Cycle(), "ns/run"), (Names{"b-0", "b-1"})) << "the 2-node whole-instance Run";
  queue.Remove("ns/run");
  PendingRun ticket = run;
  ticket.id = "ns/job-gang";
  ticket.whole_instances = false;  // a Job's ticket: each Pod 8 GPUs, cpu 1, memory 1Gi
  queue.Upsert(ticket);
  CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/job-gang"), (Names{"b-0", "b-1"})) << "one zone, not a-1 and b-0";
  EXPECT_EQ(Blocks(r, "ns/job-gang"), (std::vector<int32_t>{8, 8}));
  // No zone with two idle instances: it waits (never split across zones) and says so.
  Busy("b-0", 1);
  r = Cycle();
  EXPECT_EQ(FindPlacement(r, "ns/job-gang"), nullptr);
  EXPECT_EQ(FindWaiting(r, "ns/job-gang")->reason.code, WaitCode::kNotEnoughSlices);
  EXPECT_EQ(FindWaiting(r, "ns/job-gang")->reason.available, 1) << "a-1 and b-1 are idle, one per zone";
  EXPECT_EQ(Explain(r, "ns/job-gang"),
            "needs 2 slices of 8 blocks each (one per Pod with 8 GPUs) in one fleet and topology domain; fleet gpu has "
            "room for 1 in one domain now; holds 2 reserved instances until capacity frees up");
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->instances, (Names{"a-0", "a-1"})) << "the reservation too is one zone's";
  // Slices of 1 GPU share instances and may still span zones (they are not whole instances).
  queue.Remove("ns/job-gang");
  queue.Upsert(Gang("ns/small", 2, 28));  // 7 blocks each
  r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ns/small"), (Names{"a-0", "b-0"})) << "partly used instances of both zones";
}

TEST_F(SliceGangTest, WholeInstanceSlicesLargerThanAnyDomainAreUnschedulable) {
  cluster.fleets = {Fleet("gpu", BlocksSetting::Count(8), PlacementPolicy::kCluster, "zone")};
  for (const char* name : {"a-0", "b-0"}) {
    InstanceSpec in = Node(name, "gpu");
    in.topology_domain = std::string(1, name[0]);
    cluster.instances.push_back(in);
  }
  queue.Upsert(Gang("ns/job-gang", 2, 32));  // 8 blocks each: whole instances, one per zone
  const CycleResult r = Cycle();
  EXPECT_EQ(FindPlacement(r, "ns/job-gang"), nullptr);
  ASSERT_NE(FindWaiting(r, "ns/job-gang"), nullptr);
  EXPECT_EQ(FindWaiting(r, "ns/job-gang")->reason.code, WaitCode::kTooManySlices);
  EXPECT_EQ(Explain(r, "ns/job-gang"),
            "needs 2 slices of 8 blocks each (one per Pod) in one fleet and topology domain; fleet gpu, the largest, "
            "holds at most 1 in one domain even when all its instances are idle");
}

// A fleet "gpu" (cluster, topologyKey zone, preemption LowerPriority) of 8-GPU machines a-0, a-1
// (zone a) and b-0, b-1 (zone b), each held whole by a placed run of the given base priority.
struct WholeSliceGangPreemptionTest : SliceGangTest {
  void Machines(const std::vector<std::pair<std::string, int32_t>>& holders) {
    cluster.fleets = {Preempting("gpu", 8, PlacementPolicy::kCluster, "zone")};
    for (const auto& [name, priority] : holders) {
      InstanceSpec in = Node(name, "gpu");
      in.topology_domain = name.substr(0, 1);
      cluster.instances.push_back(in);
      cluster.running.push_back(Running("ns/on-" + name, {{name, 8}}));
      cluster.placed_runs.push_back(PlacedRunInfo{"ns/on-" + name, priority, kT0 - hours(1)});
    }
  }
  // A Job's ticket: 2 Pods of 8 GPUs (a whole machine each), cpu 1, memory 1Gi, priority 90; with
  // `whole` unset, the 2-node whole-instance Run of the same shape.
  static PendingRun Ticket(std::string id, std::optional<bool> whole = false) {
    PendingRun run = Pending(std::move(id), 90, kT0, 2, Resources{1000, kGi, 8});
    run.whole_instances = whole;
    return run;
  }
  CycleResult Alone(const PendingRun& run) {
    RunQueue alone{Duration(0)};
    alone.Upsert(run);
    return Schedule(cluster, alone, kT0);
  }
};

// The gap left by issue 45 item 3: a gang of whole slices (a Job whose Pods each ask for a whole
// machine's GPUs) preempts as the multi-node Run of its shape does: the same victims on `nodes`
// instances of one domain, each cleared completely (never half: b-1 alone would not do, b-0's run
// has a higher priority), and starts there once they are gone.
TEST_F(WholeSliceGangPreemptionTest, PreemptsTwoLowerPriorityRunsOnTwoInstancesOfOneDomain) {
  Machines({{"a-0", 10}, {"a-1", 20}, {"b-0", 95}, {"b-1", 10}});
  const CycleResult r = Alone(Ticket("ns/job-gang"));
  ASSERT_EQ(r.preemptions.size(), 1u) << Explain(r, "ns/job-gang");
  const PreemptionDecision& d = r.preemptions[0];
  EXPECT_EQ(d.run_id, "ns/job-gang");
  EXPECT_FALSE(d.reclaim);
  EXPECT_EQ(d.plan.fleet, "gpu");
  EXPECT_EQ(d.plan.instances, (Names{"a-0", "a-1"}));
  EXPECT_EQ(d.plan.victims, (Names{"ns/on-a-0", "ns/on-a-1"}));
  EXPECT_EQ(FindWaiting(r, "ns/job-gang")->reason.code, WaitCode::kPreempting);
  EXPECT_EQ(Explain(r, "ns/job-gang"),
            "preempting 2 runs (ns/on-a-0, ns/on-a-1) on instances a-0, a-1 (fleet gpu); starts when their Pods have "
            "stopped");
  EXPECT_FALSE(r.reservation.has_value()) << "a preempting gang holds no reservation";
  // Exactly the plan of the 2-node whole-instance Run of that shape.
  const CycleResult run = Alone(Ticket("ns/run", std::nullopt));
  ASSERT_EQ(run.preemptions.size(), 1u);
  EXPECT_EQ(run.preemptions[0].plan.instances, d.plan.instances);
  EXPECT_EQ(run.preemptions[0].plan.victims, d.plan.victims);
  EXPECT_EQ(run.preemptions[0].plan.sum_victim_priority, d.plan.sum_victim_priority);

  // The engine stops the victims and reports the nomination: while they stop the gang waits for
  // them (no new plan), then starts on its instances.
  const PreemptionPlan plan = d.plan;
  cluster.nominations = {Nomination{"ns/job-gang", plan.fleet, plan.instances, plan.victims, true}};
  const CycleResult stopping = Alone(Ticket("ns/job-gang"));
  EXPECT_TRUE(stopping.preemptions.empty());
  ASSERT_NE(FindWaiting(stopping, "ns/job-gang"), nullptr);
  EXPECT_EQ(FindWaiting(stopping, "ns/job-gang")->reason.code, WaitCode::kPreempting) << Explain(stopping, "ns/job-gang");
  EXPECT_TRUE(FindWaiting(stopping, "ns/job-gang")->reason.victims_stopping);
  std::erase_if(cluster.running, [](const RunningRun& x) { return x.id == "ns/on-a-0" || x.id == "ns/on-a-1"; });
  std::erase_if(cluster.placed_runs, [](const PlacedRunInfo& x) { return x.id == "ns/on-a-0" || x.id == "ns/on-a-1"; });
  cluster.nominations = {Nomination{"ns/job-gang", plan.fleet, plan.instances, plan.victims, false}};
  const CycleResult next = Alone(Ticket("ns/job-gang"));
  EXPECT_TRUE(next.preemptions.empty());
  EXPECT_EQ(PlacedOn(next, "ns/job-gang"), (Names{"a-0", "a-1"}));
  EXPECT_EQ(Blocks(next, "ns/job-gang"), (std::vector<int32_t>{8, 8}));
}

// In a `placement: cluster` fleet without a topologyKey the whole fleet is the domain: the gang
// preempts there as the Run of its shape does; in a `placement: any` fleet (where no multi-node
// Run goes) it waits.
TEST_F(WholeSliceGangPreemptionTest, PreemptsInAClusterFleetWithoutTopologyNotInAnAnyFleet) {
  Machines({{"a-0", 10}, {"a-1", 95}, {"b-0", 10}, {"b-1", 95}});
  cluster.fleets[0].topology_key.clear();
  CycleResult r = Alone(Ticket("ns/job-gang"));
  ASSERT_EQ(r.preemptions.size(), 1u) << Explain(r, "ns/job-gang");
  EXPECT_EQ(r.preemptions[0].plan.instances, (Names{"a-0", "b-0"}));
  EXPECT_EQ(r.preemptions[0].plan.victims, (Names{"ns/on-a-0", "ns/on-b-0"}));
  const CycleResult run = Alone(Ticket("ns/run", std::nullopt));
  ASSERT_EQ(run.preemptions.size(), 1u);
  EXPECT_EQ(run.preemptions[0].plan.instances, r.preemptions[0].plan.instances);
  cluster.fleets[0].placement = PlacementPolicy::kAny;
  r = Alone(Ticket("ns/job-gang"));
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(FindWaiting(r, "ns/job-gang")->reason.code, WaitCode::kNotEnoughSlices);
}

// All in one domain: one evictable run in each zone is no plan, for the gang as for the Run.
TEST_F(WholeSliceGangPreemptionTest, DoesNotPreemptAcrossDomains) {
  Machines({{"a-0", 10}, {"a-1", 95}, {"b-0", 10}, {"b-1", 95}});
  CycleResult r = Alone(Ticket("ns/job-gang"));
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(FindWaiting(r, "ns/job-gang")->reason.code, WaitCode::kNotEnoughSlices);
  EXPECT_TRUE(Alone(Ticket("ns/run", std::nullopt)).preemptions.empty()) << "nor does the Run of that shape";
  // The runs on a-0 and b-0 are victims for a one-machine request.
  PendingRun one = Ticket("ns/one");
  one.nodes = 1;
  r = Alone(one);
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.instances, Names{"a-0"});
}

// Start-time estimates of gangs of slices: the forecast places them with the same rules.
TEST(SliceGangEstimate, SlicesStartWhenOneInstanceFreesWholeInstancesWhenTwoDo) {
  EstimateInput in;
  in.snapshot.fleets = {Fleet("cpu", BlocksSetting::Count(8), PlacementPolicy::kCluster)};
  in.snapshot.instances = {Node("a"), Node("b")};
  in.snapshot.running = {Running("ns/x", {{"a", 8}}, kT0 + minutes(30)), Running("ns/y", {{"b", 8}}, kT0 + minutes(60))};
  in.queued = {Gang("ns/slices", 2, 16, false), Gang("ns/whole", 2, 16, std::nullopt, kT0 + Duration(1))};
  in.runtime = {{"ns/slices", hours(1)}, {"ns/whole", hours(1)}};
  in.now = kT0;
  const std::vector<StartEstimate> e = EstimateStarts(in);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].run_id, "ns/slices");
  EXPECT_EQ(e[0].start, kT0 + minutes(30)) << "both slices on a when ns/x ends";
  EXPECT_EQ(e[1].run_id, "ns/whole");
  EXPECT_EQ(e[1].start, kT0 + minutes(90)) << "two idle instances: after ns/slices ends on a";
}

}  // namespace
}  // namespace berth::scheduling
