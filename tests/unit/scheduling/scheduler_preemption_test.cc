// Preemption in the scheduling cycle (issue 17): Schedule() asks PlanPreemption about runs that
// wait for capacity, keeps the chosen instances for the preemptor, and honours nominations from
// earlier cycles. Scenario by scenario, as the rules in scheduler.h and docs/scheduling.md say.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "scheduling/scheduler.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)
using Names = std::vector<std::string>;

const TimePoint kNow = kT0 + hours(2);

// An 8-GPU machine.
InstanceSpec Gpu8(std::string name, std::string fleet, std::optional<std::string> domain = std::nullopt) {
  InstanceSpec i = Instance(std::move(name), std::move(fleet), Cpus(8, 64, 8));
  i.topology_domain = std::move(domain);
  return i;
}

PendingRun Gpus(std::string id, int32_t priority, int64_t gpus, int32_t nodes = 1) {
  return Pending(std::move(id), priority, kNow - minutes(1), nodes, Cpus(0, 0, gpus));
}

struct PreemptionCycleTest : ::testing::Test {
  CycleResult Cycle() { return Schedule(cluster, queue, now); }
  // A placed run that may be a victim: `blocks` blocks on each instance, placed `age` ago.
  void Place(const std::string& id, int32_t priority, std::vector<std::string> on, int32_t blocks,
             Duration age = hours(1)) {
    RunningRun r;
    r.id = id;
    for (std::string& i : on) r.placement.push_back(InstanceBlocks{std::move(i), blocks});
    cluster.running.push_back(std::move(r));
    cluster.placed_runs.push_back(PlacedRunInfo{id, priority, now - age});
  }
  static const PreemptionDecision* Decision(const CycleResult& r, const std::string& id) {
    for (const PreemptionDecision& d : r.preemptions) {
      if (d.run_id == id) return &d;
    }
    return nullptr;
  }
  static WaitCode Code(const CycleResult& r, const std::string& id) {
    const WaitingRun* w = FindWaiting(r, id);
    EXPECT_NE(w, nullptr) << id << " is not waiting";
    return w == nullptr ? WaitCode::kNoFleet : w->reason.code;
  }

  ClusterSnapshot cluster;
  RunQueue queue{minutes(15)};
  TimePoint now = kNow;
};

TEST_F(PreemptionCycleTest, AHighPriorityRunPreemptsTheSingleLowRunOnAFullFleet) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100")};
  Place("ml/low", 10, {"n1"}, 1);
  queue.Upsert(Gpus("ml/hot", 90, 8));
  const CycleResult r = Cycle();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].run_id, "ml/hot");
  EXPECT_EQ(r.preemptions[0].plan.victims, Names{"ml/low"});
  EXPECT_EQ(r.preemptions[0].plan.instances, Names{"n1"});
  EXPECT_EQ(r.preemptions[0].plan.fleet, "a100");
  EXPECT_EQ(Code(r, "ml/hot"), WaitCode::kPreempting);
  const WaitingRun& w = *FindWaiting(r, "ml/hot");
  EXPECT_FALSE(w.unschedulable());
  EXPECT_EQ(ApiReason(w.reason.code), "Preempting");
  EXPECT_EQ(w.reason.victims, Names{"ml/low"});
  EXPECT_EQ(w.reason.instances, Names{"n1"});
  EXPECT_EQ(r.Explain(w), "preempting 1 run (ml/low) on instance n1 (fleet a100); starts when their Pods have stopped");
  EXPECT_FALSE(r.reservation.has_value()) << "a run that preempts does not hold the reservation";
}

TEST_F(PreemptionCycleTest, NoPreemptionOnANeverFleet) {
  cluster.fleets = {Fleet("a100", BlocksSetting::Count(1))};  // policy Never (the default)
  cluster.instances = {Gpu8("n1", "a100")};
  Place("ml/low", 10, {"n1"}, 1);
  queue.Upsert(Gpus("ml/hot", 90, 8));
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(Code(r, "ml/hot"), WaitCode::kNotEnoughFreeBlocks);
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->run_id, "ml/hot");
}

TEST_F(PreemptionCycleTest, MinRuntimeProtectsAFreshRun) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100")};
  Place("ml/low", 10, {"n1"}, 1, minutes(4));
  queue.Upsert(Gpus("ml/hot", 90, 8));
  CycleResult r = Cycle();
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(Code(r, "ml/hot"), WaitCode::kNotEnoughFreeBlocks);
  now += minutes(1);  // now it has run for its 5 minutes
  r = Cycle();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.victims, Names{"ml/low"});
}

TEST_F(PreemptionCycleTest, EqualPriorityNeverPreempts) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100")};
  Place("ml/peer", 50, {"n1"}, 1);
  queue.Upsert(Gpus("ml/hot", 50, 8));
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(Code(r, "ml/hot"), WaitCode::kNotEnoughFreeBlocks);
}

TEST_F(PreemptionCycleTest, AgingNeverGrantsPreemption) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100")};
  Place("ml/mid", 50, {"n1"}, 1);
  PendingRun old = Gpus("ml/old", 10, 8);
  old.submitted_at = now - hours(30);  // aged to 100 with a 15m interval
  queue.Upsert(old);
  const CycleResult r = Cycle();
  EXPECT_EQ(queue.EffectivePriority("ml/old"), 100);
  EXPECT_TRUE(r.preemptions.empty()) << "base priority 10 < 50";
  EXPECT_EQ(Code(r, "ml/old"), WaitCode::kNotEnoughFreeBlocks);
}

TEST_F(PreemptionCycleTest, AGangPreemptsWholeInstancesInOneDomain) {
  cluster.fleets = {Preempting("a100", 1, PlacementPolicy::kCluster, "zone")};
  cluster.instances = {Gpu8("a1", "a100", "za"), Gpu8("a2", "a100", "za"), Gpu8("b1", "a100", "zb"),
                       Gpu8("b2", "a100", "zb")};
  Place("ml/a1", 10, {"a1"}, 1);
  Place("ml/a2", 60, {"a2"}, 1);  // za would cost a priority-60 victim
  Place("ml/b1", 10, {"b1"}, 1);
  Place("ml/b2", 20, {"b2"}, 1);
  queue.Upsert(Gpus("ml/gang", 90, 8, 2));
  const CycleResult r = Cycle();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.instances, (Names{"b1", "b2"}));
  EXPECT_EQ(r.preemptions[0].plan.victims, (Names{"ml/b1", "ml/b2"}));
  EXPECT_EQ(Explain(r, "ml/gang"),
            "preempting 2 runs (ml/b1, ml/b2) on instances b1, b2 (fleet a100); starts when their Pods have stopped");

  // A multi-node victim is evicted whole, even for a single-node preemptor.
  cluster.running.clear();
  cluster.placed_runs.clear();
  queue.Remove("ml/gang");
  Place("ml/low-gang", 10, {"a1", "a2", "b1", "b2"}, 1);
  queue.Upsert(Gpus("ml/one", 90, 8));
  const CycleResult one = Cycle();
  ASSERT_EQ(one.preemptions.size(), 1u);
  EXPECT_EQ(one.preemptions[0].plan.victims, Names{"ml/low-gang"});
  EXPECT_EQ(one.preemptions[0].plan.instances, Names{"a1"});
}

TEST_F(PreemptionCycleTest, ANomineeWithVictimsStoppingWaitsAndNothingMoreIsEvicted) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100"), Gpu8("n2", "a100")};
  Place("ml/stopping", 10, {"n1"}, 1);  // still holds n1
  Place("ml/low", 10, {"n2"}, 1);
  cluster.nominations = {Nomination{"ml/hot", "a100", {"n1"}, {"ml/stopping"}, true}};
  queue.Upsert(Gpus("ml/hot", 90, 8));
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.preemptions.empty()) << "never more victims than needed";
  EXPECT_EQ(Code(r, "ml/hot"), WaitCode::kPreempting);
  const WaitingRun& w = *FindWaiting(r, "ml/hot");
  EXPECT_TRUE(w.reason.victims_stopping);
  EXPECT_EQ(r.Explain(w), "preempting 1 run (ml/stopping) on instance n1 (fleet a100); starts when their Pods have stopped");
  EXPECT_FALSE(r.reservation.has_value());

  // Its victims gone: the nominee starts on its instance.
  cluster.running.erase(cluster.running.begin());
  cluster.placed_runs.erase(cluster.placed_runs.begin());
  cluster.nominations[0].victims_stopping = false;
  const CycleResult next = Cycle();
  EXPECT_EQ(PlacedOn(next, "ml/hot"), Names{"n1"});
  EXPECT_TRUE(next.preemptions.empty());
}

TEST_F(PreemptionCycleTest, ANomineeMayStartAnywhereItFits) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100"), Gpu8("n2", "a100")};
  Place("ml/stopping", 10, {"n1"}, 1);
  cluster.nominations = {Nomination{"ml/hot", "a100", {"n1"}, {"ml/stopping"}, true}};
  queue.Upsert(Gpus("ml/hot", 90, 8));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ml/hot"), Names{"n2"});
}

TEST_F(PreemptionCycleTest, NominatedInstancesAreNotGivenToALowerRun) {
  cluster.fleets = {Preempting("a100", 2)};
  cluster.instances = {Gpu8("n1", "a100")};
  Place("ml/stopping", 10, {"n1"}, 1);  // one of two blocks: the other is free
  cluster.nominations = {Nomination{"ml/hot", "a100", {"n1"}, {"ml/stopping"}, true}};
  queue.Upsert(Gpus("ml/hot", 90, 8));
  queue.Upsert(Gpus("ml/small", 20, 4));
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.placements.empty());
  EXPECT_EQ(Code(r, "ml/hot"), WaitCode::kPreempting);
  EXPECT_EQ(Code(r, "ml/small"), WaitCode::kKeptForPreemptor);
  EXPECT_EQ(Explain(r, "ml/small"), "fits only on instances kept for ml/hot, which preempts runs there");
  EXPECT_EQ(ApiReason(WaitCode::kKeptForPreemptor), "NoCapacity");
  EXPECT_TRUE(r.preemptions.empty()) << "a lower run neither preempts the stopping victim again";

  // Without the nominee in the queue, the nomination keeps nothing.
  queue.Remove("ml/hot");
  EXPECT_EQ(PlacedOn(Cycle(), "ml/small"), Names{"n1"});
}

TEST_F(PreemptionCycleTest, TwoPreemptorsInOneCycleNeverShareVictimsOrInstances) {
  cluster.fleets = {Preempting("a100", 2)};
  cluster.instances = {Gpu8("n1", "a100"), Gpu8("n2", "a100")};
  Place("ml/low1", 10, {"n1"}, 2);
  Place("ml/low2", 20, {"n2"}, 2);
  queue.Upsert(Gpus("ml/hot1", 90, 4));
  queue.Upsert(Gpus("ml/hot2", 80, 4));
  queue.Upsert(Gpus("ml/hot3", 70, 4));
  const CycleResult r = Cycle();
  ASSERT_EQ(r.preemptions.size(), 2u);
  EXPECT_EQ(r.preemptions[0].run_id, "ml/hot1");
  EXPECT_EQ(r.preemptions[0].plan.victims, Names{"ml/low1"});
  EXPECT_EQ(r.preemptions[0].plan.instances, Names{"n1"});
  EXPECT_EQ(r.preemptions[1].run_id, "ml/hot2");
  EXPECT_EQ(r.preemptions[1].plan.victims, Names{"ml/low2"});
  EXPECT_EQ(r.preemptions[1].plan.instances, Names{"n2"});
  // Nothing left for the third: it waits; instances kept for preemptors are never reserved.
  EXPECT_EQ(Code(r, "ml/hot3"), WaitCode::kNotEnoughFreeBlocks);
  EXPECT_FALSE(r.reservation.has_value());
}

TEST_F(PreemptionCycleTest, AVictimsResubmissionCannotPreemptItsPreemptor) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100")};
  Place("ml/hot", 90, {"n1"}, 1);  // the preemptor, started
  PendingRun again = Gpus("ml/low", 10, 8);
  again.submitted_at = now - hours(30);  // even aged to the top of the queue
  queue.Upsert(again);
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(Code(r, "ml/low"), WaitCode::kNotEnoughFreeBlocks);
}

TEST_F(PreemptionCycleTest, ReservedInstancesAreNotPreemptedForALaterRun) {
  // ml/first (no preemption right: priority 5) reserves n1, which frees first; ml/hot must
  // preempt on n2 instead.
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100"), Gpu8("n2", "a100")};
  Place("ml/low1", 1, {"n1"}, 1);
  cluster.running.back().expected_end = now + minutes(10);
  Place("ml/low2", 1, {"n2"}, 1);
  PendingRun first = Gpus("ml/first", 1, 8);
  first.submitted_at = now - hours(30);  // first in the queue by aging
  queue.Upsert(first);
  queue.Upsert(Gpus("ml/hot", 90, 8));
  const CycleResult r = Cycle();
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->run_id, "ml/first");
  EXPECT_EQ(r.reservation->instances, Names{"n1"});
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.instances, Names{"n2"});
  EXPECT_EQ(r.preemptions[0].plan.victims, Names{"ml/low2"});
}

TEST_F(PreemptionCycleTest, ARunItsQuotaWouldStopDoesNotPreempt) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100")};
  Place("other/low", 10, {"n1"}, 1);
  cluster.quotas = {NamespaceQuota{"ml", {{"requests.nvidia.com/gpu", QuotaLimit{4, 8, "gpus"}}}}};
  queue.Upsert(Gpus("ml/hot", 90, 4));  // asks 4 GPUs, but its block is the whole 8-GPU node
  const CycleResult r = Cycle();
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_EQ(Code(r, "ml/hot"), WaitCode::kNotEnoughFreeBlocks);
  // A run waiting for its namespace's quota never preempts either.
  queue.Upsert(Gpus("ml/huge", 95, 8));
  const CycleResult q = Cycle();
  EXPECT_EQ(Code(q, "ml/huge"), WaitCode::kQuotaExceeded);
  EXPECT_TRUE(q.preemptions.empty());
}

TEST_F(PreemptionCycleTest, PlacementsOfTheCycleAreNeverVictims) {
  cluster.fleets = {Preempting("a100", 1)};
  cluster.instances = {Gpu8("n1", "a100")};
  queue.Upsert(Gpus("ml/first", 10, 8));  // takes n1 this cycle (higher in the queue by age)
  queue.Upsert(Pending("ml/hot", 90, now, 1, Cpus(0, 0, 8)));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ml/hot"), Names{"n1"}) << "the higher-priority run comes first in the queue";
  EXPECT_EQ(Code(r, "ml/first"), WaitCode::kNotEnoughFreeBlocks);
  EXPECT_TRUE(r.preemptions.empty());
}

TEST_F(PreemptionCycleTest, DeterministicWhateverTheInputOrder) {
  cluster.fleets = {Preempting("a", 2), Preempting("b", 2)};
  cluster.instances = {Gpu8("a1", "a"), Gpu8("a2", "a"), Gpu8("b1", "b")};
  Place("ml/x", 10, {"a1"}, 2);
  Place("ml/y", 10, {"a2"}, 2);
  Place("ml/z", 10, {"b1"}, 2);
  queue.Upsert(Gpus("ml/hot", 90, 8));
  const CycleResult r1 = Cycle();
  std::reverse(cluster.instances.begin(), cluster.instances.end());
  std::reverse(cluster.running.begin(), cluster.running.end());
  std::reverse(cluster.placed_runs.begin(), cluster.placed_runs.end());
  std::reverse(cluster.fleets.begin(), cluster.fleets.end());
  const CycleResult r2 = Cycle();
  ASSERT_EQ(r1.preemptions.size(), 1u);
  ASSERT_EQ(r2.preemptions.size(), 1u);
  EXPECT_EQ(r1.preemptions[0].plan.instances, Names{"a1"});  // ties by instance name
  EXPECT_EQ(r2.preemptions[0].plan.instances, r1.preemptions[0].plan.instances);
  EXPECT_EQ(r2.preemptions[0].plan.victims, r1.preemptions[0].plan.victims);
}

}  // namespace
}  // namespace berth::scheduling
