// Victim choice for preemption (scheduling/preemption.h): the rules one by one, then a property
// test against a brute-force reference that tries every subset of victims.

#include "scheduling/preemption.h"

#include <random>
#include <set>

#include "fixtures.h"

namespace berth::scheduling::testing {
namespace {

// An 8-GPU machine cut into `blocks`.
InstanceSpec Gpu8(std::string name, std::string fleet) { return Instance(std::move(name), std::move(fleet), Cpus(8, 64, 8)); }

PlacedRunInfo Placed(std::string id, int32_t priority, TimePoint at = kT0) { return PlacedRunInfo{std::move(id), priority, at}; }

PreemptionRequest Request(int32_t priority, int64_t gpus, int32_t nodes = 1) {
  PreemptionRequest r;
  r.id = "ns/hotfix";
  r.priority = priority;
  r.nodes = nodes;
  r.resources = Cpus(0, 0, gpus);
  return r;
}

const TimePoint kNow = kT0 + hours(1);

TEST(Preemption, EvictsTheSingleLowerPriorityRunOnAFullFleet) {
  ClusterSnapshot s;
  s.fleets = {Preempting("gpu", 1)};
  s.instances = {Gpu8("n0", "gpu")};
  s.running = {Running("ns/low", {{"n0", 1}})};
  auto plan = PlanPreemption(s, {Placed("ns/low", 10)}, Request(90, 8), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/low"});
  EXPECT_EQ(plan->instances, std::vector<std::string>{"n0"});
  EXPECT_EQ(plan->fleet, "gpu");
}

TEST(Preemption, NeverOnANeverFleetNorForEqualOrHigherPriority) {
  ClusterSnapshot s;
  s.fleets = {Fleet("gpu", BlocksSetting::Count(1))};  // policy Never (the default)
  s.instances = {Gpu8("n0", "gpu")};
  s.running = {Running("ns/low", {{"n0", 1}})};
  EXPECT_FALSE(PlanPreemption(s, {Placed("ns/low", 10)}, Request(90, 8), kNow).has_value());
  s.fleets = {Preempting("gpu", 1)};
  EXPECT_FALSE(PlanPreemption(s, {Placed("ns/low", 90)}, Request(90, 8), kNow).has_value()) << "equal priority";
  EXPECT_FALSE(PlanPreemption(s, {Placed("ns/low", 95)}, Request(90, 8), kNow).has_value()) << "higher priority";
}

TEST(Preemption, MinRuntimeProtectsAFreshRun) {
  ClusterSnapshot s;
  s.fleets = {Preempting("gpu", 1)};
  s.instances = {Gpu8("n0", "gpu")};
  s.running = {Running("ns/low", {{"n0", 1}})};
  EXPECT_FALSE(PlanPreemption(s, {Placed("ns/low", 10, kNow - minutes(4))}, Request(90, 8), kNow).has_value());
  EXPECT_TRUE(PlanPreemption(s, {Placed("ns/low", 10, kNow - minutes(5))}, Request(90, 8), kNow).has_value());
}

TEST(Preemption, NotAPreemptionWhenTheRunFitsOrNothingCanBeEvicted) {
  ClusterSnapshot s;
  s.fleets = {Preempting("gpu", 4)};
  s.instances = {Gpu8("n0", "gpu")};
  s.running = {Running("ns/low", {{"n0", 2}})};
  EXPECT_FALSE(PlanPreemption(s, {Placed("ns/low", 10)}, Request(90, 4), kNow).has_value()) << "2 blocks are free";
  // A Pod that outlived its run holds blocks but is no run: never a victim.
  s.running = {Running("ns/lingering-pod", {{"n0", 4}})};
  EXPECT_FALSE(PlanPreemption(s, {}, Request(90, 2), kNow).has_value());
}

TEST(Preemption, FewestVictimsThenLowestPriorityThenMostRecentlyStarted) {
  ClusterSnapshot s;
  s.fleets = {Preempting("gpu", 4)};
  s.instances = {Gpu8("n0", "gpu"), Gpu8("n1", "gpu")};
  // n0: two 2-block runs; n1: one 4-block run. A 4-block preemptor: one victim beats two.
  s.running = {Running("ns/a", {{"n0", 2}}), Running("ns/b", {{"n0", 2}}), Running("ns/big", {{"n1", 4}})};
  std::vector<PlacedRunInfo> placed = {Placed("ns/a", 10), Placed("ns/b", 10), Placed("ns/big", 40)};
  auto plan = PlanPreemption(s, placed, Request(90, 8), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/big"});
  // Same count: the lower priority goes.
  s.running = {Running("ns/x", {{"n0", 4}}), Running("ns/y", {{"n1", 4}})};
  plan = PlanPreemption(s, {Placed("ns/x", 30), Placed("ns/y", 20)}, Request(90, 8), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/y"});
  // Same priority: the most recently started (least work lost) goes.
  plan = PlanPreemption(s, {Placed("ns/x", 20, kNow - minutes(10)), Placed("ns/y", 20, kNow - minutes(50))},
                        Request(90, 8), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/x"});
  EXPECT_EQ(plan->work_lost, minutes(10));
}

TEST(Preemption, NeverMoreThanNeeded) {
  ClusterSnapshot s;
  s.fleets = {Preempting("gpu", 4)};
  s.instances = {Gpu8("n0", "gpu")};
  s.running = {Running("ns/a", {{"n0", 1}}), Running("ns/b", {{"n0", 1}}), Running("ns/c", {{"n0", 2}})};
  // 1 block free; 2 needed: one 1-block victim is enough, the lowest priority one.
  auto plan = PlanPreemption(s, {Placed("ns/a", 20), Placed("ns/b", 10), Placed("ns/c", 5)}, Request(90, 4), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims.size(), 1u);
  // c (2 blocks, priority 5) or b (1 block, priority 10): both free enough; c has the lower priority.
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/c"});
}

TEST(Preemption, AGangClearsWholeInstancesInOneDomain) {
  ClusterSnapshot s;
  s.fleets = {Preempting("gpu", 1, PlacementPolicy::kCluster, "zone")};
  for (int i = 0; i < 4; ++i) {
    InstanceSpec inst = Gpu8("n" + std::to_string(i), "gpu");
    inst.topology_domain = i < 2 ? "z1" : "z2";
    s.instances.push_back(inst);
  }
  // z1: n0 idle, n1 holds a priority-10 run; z2: both hold priority-5 runs.
  s.running = {Running("ns/z1", {{"n1", 1}}), Running("ns/z2a", {{"n2", 1}}), Running("ns/z2b", {{"n3", 1}})};
  std::vector<PlacedRunInfo> placed = {Placed("ns/z1", 10), Placed("ns/z2a", 5), Placed("ns/z2b", 5)};
  auto plan = PlanPreemption(s, placed, Request(90, 8, 2), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/z1"});  // one victim beats two
  EXPECT_EQ(plan->instances, (std::vector<std::string>{"n0", "n1"}));
  // A victim that is not evictable (higher priority) rules its instance out.
  placed[0].priority = 95;
  plan = PlanPreemption(s, placed, Request(90, 8, 2), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, (std::vector<std::string>{"ns/z2a", "ns/z2b"}));
  EXPECT_EQ(plan->instances, (std::vector<std::string>{"n2", "n3"}));
}

TEST(Preemption, AGangVictimIsEvictedWhole) {
  ClusterSnapshot s;
  s.fleets = {Preempting("gpu", 1)};
  s.instances = {Gpu8("n0", "gpu"), Gpu8("n1", "gpu")};
  s.running = {Running("ns/gang", {{"n0", 1}, {"n1", 1}})};
  auto plan = PlanPreemption(s, {Placed("ns/gang", 10)}, Request(90, 8), kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/gang"});
  EXPECT_EQ(plan->instances, std::vector<std::string>{"n0"});  // names break the tie
}

TEST(Preemption, OnlyCandidateFleetsAndInstancesThatLiveLongEnough) {
  ClusterSnapshot s;
  s.fleets = {Preempting("a", 1), Preempting("b", 1)};
  s.instances = {Gpu8("n0", "a"), Gpu8("n1", "b")};
  s.instances[1].expires_at = kNow + minutes(30);
  s.running = {Running("ns/x", {{"n0", 1}}), Running("ns/y", {{"n1", 1}})};
  std::vector<PlacedRunInfo> placed = {Placed("ns/x", 40), Placed("ns/y", 10)};
  PreemptionRequest r = Request(90, 8);
  r.fleets = {"a"};
  auto plan = PlanPreemption(s, placed, r, kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/x"});
  r.fleets = {};
  r.max_duration = hours(1);  // n1 expires in 30 minutes
  plan = PlanPreemption(s, placed, r, kNow);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->victims, std::vector<std::string>{"ns/x"});
}

// The reference: every subset of the evictable runs on every allowed instance, the cheapest
// that frees enough, compared exactly as the rules say.
std::optional<std::tuple<size_t, int32_t, int64_t, Duration, std::string>> ReferenceSingleNode(
    const ClusterSnapshot& s, const std::vector<PlacedRunInfo>& placed, const PreemptionRequest& r, TimePoint now) {
  std::optional<std::tuple<size_t, int32_t, int64_t, Duration, std::string>> best;
  for (const InstanceSpec& inst : s.instances) {
    const FleetSpec& f = s.fleets.front();
    BlockLayout layout = BlockLayout::Make(inst.allocatable, f.blocks);
    auto need = layout.BlocksFor(r.resources);
    if (!need) continue;
    int32_t busy = 0;
    std::vector<std::pair<const PlacedRunInfo*, int32_t>> cands;
    for (const RunningRun& run : s.running) {
      for (const InstanceBlocks& b : run.placement) {
        if (b.instance != inst.name) continue;
        busy += b.blocks;
        for (const PlacedRunInfo& p : placed) {
          if (p.id == run.id && p.priority < r.priority && now - p.placed_at >= f.min_runtime) cands.push_back({&p, b.blocks});
        }
      }
    }
    int32_t free = layout.total_blocks() - std::min(busy, layout.total_blocks());
    if (free >= *need) continue;
    for (uint32_t mask = 1; mask < (1u << cands.size()); ++mask) {
      int32_t freed = 0;
      size_t count = 0;
      int32_t maxp = -1;
      int64_t sump = 0;
      Duration lost{0};
      for (size_t j = 0; j < cands.size(); ++j) {
        if (!(mask & (1u << j))) continue;
        freed += cands[j].second;
        ++count;
        maxp = std::max(maxp, cands[j].first->priority);
        sump += cands[j].first->priority;
        lost += now - cands[j].first->placed_at;
      }
      if (free + freed < *need) continue;
      auto key = std::make_tuple(count, maxp, sump, lost, inst.name);
      if (!best || key < *best) best = key;
    }
  }
  return best;
}

TEST(PreemptionProperty, SingleNodeChoiceMatchesTheBruteForceReference) {
  std::mt19937 rng(17);
  int compared = 0, planned = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    ClusterSnapshot s;
    const int64_t blocks = 1 + rng() % 8;
    s.fleets = {Preempting("gpu", blocks)};
    const int instances = 1 + rng() % 3;
    std::vector<PlacedRunInfo> placed;
    for (int i = 0; i < instances; ++i) {
      s.instances.push_back(Gpu8("n" + std::to_string(i), "gpu"));
      int32_t used = 0;
      while (used < blocks && rng() % 4 != 0) {
        int32_t b = 1 + rng() % (blocks - used);
        std::string id = "ns/r" + std::to_string(i) + "-" + std::to_string(used);
        s.running.push_back(Running(id, {{s.instances.back().name, b}}));
        // Coarse priorities and start times make ties common: the tie-breaks are exercised.
        placed.push_back(Placed(id, 10 * static_cast<int32_t>(rng() % 10), kNow - minutes(1 + rng() % 4 * 5)));
        used += b;
      }
    }
    PreemptionRequest r = Request(10 * static_cast<int32_t>(rng() % 11), 8 / blocks * (1 + rng() % blocks));
    auto got = PlanPreemption(s, placed, r, kNow);
    auto want = ReferenceSingleNode(s, placed, r, kNow);
    ++compared;
    ASSERT_EQ(got.has_value(), want.has_value()) << "trial " << trial;
    if (!got) continue;
    ++planned;
    EXPECT_EQ(got->victims.size(), std::get<0>(*want)) << "trial " << trial;
    EXPECT_EQ(got->max_victim_priority, std::get<1>(*want)) << "trial " << trial;
    EXPECT_EQ(got->sum_victim_priority, std::get<2>(*want)) << "trial " << trial;
    EXPECT_EQ(got->work_lost, std::get<3>(*want)) << "trial " << trial;
    EXPECT_EQ(got->instances.front(), std::get<4>(*want)) << "trial " << trial;
    // Never more than needed: the count equals the reference's minimum (checked above).
    // And the victims only ever have a lower base priority and ran at least minRuntime.
    for (const std::string& v : got->victims) {
      for (auto& p : placed) {
        if (p.id != v) continue;
        EXPECT_LT(p.priority, r.priority);
        EXPECT_GE(kNow - p.placed_at, minutes(5));
      }
    }
  }
  EXPECT_GT(planned, 300) << "the random cases must produce many plans (" << compared << " compared)";
}

}  // namespace
}  // namespace berth::scheduling::testing
