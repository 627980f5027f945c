// Preemption and reclaim per topology domain (issue 48): a preempting or reclaiming gang frees
// nodes of one domain of its level (preemption.h), the cheapest such domain, never scattered
// nodes it could not use; through the cycle (preempt.h) and against a brute force over the labels.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fixtures.h"
#include "scheduling/preemption.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(google-build-using-namespace)
using Names = std::vector<std::string>;


// Fleet "gpu" (cluster, one block per node, levels spine and rack; preemption LowerPriority,
// reclaim Borrowed): racks s1/a (2 nodes), s1/b (2), s2/c (3). Runs of priority 10 placed an hour
// ago hold s1-a-0, s1-b-0, s2-c-0 and s2-c-1 (the rest is idle), for namespace `ns`.
ClusterSnapshot ThreeRacks(const std::string& ns) {
  ClusterSnapshot c;
  c.fleets.push_back(Preempting("gpu", 1, PlacementPolicy::kCluster));
  c.fleets.back().topology = {kSpine, kRack};
  for (const auto& [spine, rack, n] : {std::tuple{"s1", "a", 2}, std::tuple{"s1", "b", 2}, std::tuple{"s2", "c", 3}}) {
    for (int i = 0; i < n; ++i) {
      c.instances.push_back(Instance(std::string(spine) + "-" + rack + "-" + std::to_string(i), "gpu", Cpus(16, 64, 4)));
      c.instances.back().topology_path = {spine, rack};
    }
  }
  for (const std::string node : {"s1-a-0", "s1-b-0", "s2-c-0", "s2-c-1"}) {
    const std::string id = ns + "/on-" + node;
    c.running.push_back(Running(id, {{node, 1}}));
    c.placed_runs.push_back(PlacedRunInfo{id, 10, kT0 - minutes(60)});
  }
  return c;
}

CycleResult Cycle(const ClusterSnapshot& c, const PendingRun& run) {
  RunQueue queue(Duration(0));
  queue.Upsert(run);
  return Schedule(c, queue, kT0);
}

PendingRun Gang(std::string id, int32_t nodes, Mode mode, std::string key, int32_t priority) {
  PendingRun run = Pending(std::move(id), priority, kT0, nodes, Cpus(16, 64, 4));
  run.topology = TopologyRequest{mode, std::move(key)};
  return run;
}

TEST(TopologyPreemption, AGangPreemptsInTheCheapestDomainOfItsRequiredLevel) {
  const ClusterSnapshot c = ThreeRacks("low");
  // Three nodes in one spine: s1 with one victim (its two idle nodes and one more), not s2 (two).
  CycleResult r = Cycle(c, Gang("ns/spine", 3, Mode::kRequired, kSpine, 90));
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.instances, (Names{"s1-a-0", "s1-a-1", "s1-b-1"}));
  EXPECT_EQ(r.preemptions[0].plan.victims, Names{"low/on-s1-a-0"});
  // Three nodes in one rack: only rack c has three, with two victims; never s1's cheaper nodes.
  r = Cycle(c, Gang("ns/rack", 3, Mode::kRequired, kRack, 90));
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.instances, (Names{"s2-c-0", "s2-c-1", "s2-c-2"}));
  EXPECT_EQ(r.preemptions[0].plan.victims, (Names{"low/on-s2-c-0", "low/on-s2-c-1"}));
  // Preferred: no rack has four nodes, so one spine (two victims), not the three idle nodes and
  // one victim scattered over both spines.
  r = Cycle(c, Gang("ns/pref4", 4, Mode::kPreferred, kRack, 90));
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].plan.instances, (Names{"s1-a-0", "s1-a-1", "s1-b-0", "s1-b-1"}));
  // A level the fleet does not have: no plan.
  r = Cycle(c, Gang("ns/block", 2, Mode::kRequired, "example.com/block", 90));
  EXPECT_TRUE(r.preemptions.empty());
}

TEST(TopologyPreemption, AGangReclaimsInTheCheapestDomainOfItsRequiredLevel) {
  ClusterSnapshot c = ThreeRacks("audio");
  c.fleets[0].preemption = PreemptionPolicy::kNever;
  c.fleets[0].reclaim = ReclaimPolicy::kBorrowed;
  for (const auto& [name, gpus] : {std::pair{"vision", 12}, std::pair{"audio", 0}}) {
    TeamSpec t;
    t.name = name;
    t.namespaces = {name};
    TeamShare share;
    share.fleet = "gpu";
    share.nominal.gpus = gpus;
    t.shares.push_back(share);
    c.teams.push_back(t);
  }
  const CycleResult r = Cycle(c, Gang("vision/spine", 3, Mode::kRequired, kSpine, 50));
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_TRUE(r.preemptions[0].reclaim);
  EXPECT_EQ(r.preemptions[0].plan.instances, (Names{"s1-a-0", "s1-a-1", "s1-b-1"}));
  EXPECT_EQ(r.preemptions[0].plan.victims, Names{"audio/on-s1-a-0"});
}

// Random spines and racks (some nodes without a rack or any label), random single-node runs of
// random priority on random nodes, random gangs required or preferred at the rack or the spine:
// the plan is `nodes` nodes of one domain of that level (preferred: of the first level outward
// where a domain gives a plan), its victims are exactly the runs on them, and it is the cheapest
// domain's plan by a brute force over the labels (none when no domain gives one).
TEST(TopologyPreemption, NeverScatteredAndTheCheapestDomainByABruteForce) {
  std::mt19937 rng(4848);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int plans = 0;
  for (int round = 0; round < 300; ++round) {
    ClusterSnapshot s;
    s.fleets.push_back(Preempting("gpu", 1, PlacementPolicy::kCluster));
    s.fleets.back().topology = {kSpine, kRack};
    std::map<std::string, std::vector<std::string>> path;  // node -> its labels
    for (int sp = 0; sp < 1 + pick(3); ++sp) {
      for (int rk = 0; rk < 1 + pick(3); ++rk) {
        for (int i = 0; i < pick(5); ++i) {
          const std::string node = "n" + std::to_string(sp) + std::to_string(rk) + std::to_string(i);
          path[node] = {"s" + std::to_string(sp), "r" + std::to_string(rk)};
          if (pick(8) == 0) path[node].pop_back();
        }
      }
    }
    if (pick(3) == 0) path["bare"] = {};
    std::vector<PlacedRunInfo> placed;
    std::map<std::string, std::vector<const PlacedRunInfo*>> on;  // node -> its runs
    placed.reserve(path.size());
    for (auto& [node, labels] : path) {
      s.instances.push_back(Instance(node, "gpu", Cpus(16)));
      s.instances.back().topology_path = labels;
      if (pick(4) == 0) continue;  // idle
      placed.push_back(PlacedRunInfo{"ns/" + node, 1 + pick(60), kT0 - minutes(10 + pick(100))});
      s.running.push_back(Running(placed.back().id, {{node, 1}}));
      on[node].push_back(&placed.back());
    }
    PreemptionRequest request;
    request.id = "ns/gang";
    request.priority = 40;
    request.nodes = 2 + pick(4);
    request.resources = Cpus(16);
    const bool racks = pick(2) == 0;
    const Mode mode = pick(2) == 0 ? Mode::kRequired : Mode::kPreferred;
    request.topology = TopologyRequest{mode, racks ? kRack : kSpine};
    SCOPED_TRACE("round " + std::to_string(round) + (mode == Mode::kRequired ? " required" : " preferred"));
    // Brute force at a depth (2: racks, 1: spines, 0: the fleet's labelled nodes): per domain,
    // the cheapest `nodes` clearable nodes (cost, then name); the cheapest such plan.
    using Key = std::tuple<size_t, int32_t, int64_t, int64_t, Names>;
    auto brute = [&](size_t depth) {
      std::map<Names, std::vector<std::pair<std::tuple<size_t, int32_t, int64_t, int64_t>, std::string>>> domains;
      for (const auto& [node, labels] : path) {
        if (labels.size() < std::max<size_t>(depth, 1)) continue;
        std::tuple<size_t, int32_t, int64_t, int64_t> cost{0, -1, 0, 0};
        bool clearable = true;
        for (const PlacedRunInfo* p : on[node]) {
          clearable = clearable && p->priority < request.priority;
          cost = {std::get<0>(cost) + 1, std::max(std::get<1>(cost), p->priority), std::get<2>(cost) + p->priority,
                  std::get<3>(cost) + (kT0 - p->placed_at).count()};
        }
        if (clearable) domains[Names(labels.begin(), labels.begin() + static_cast<ptrdiff_t>(depth))].emplace_back(cost, node);
      }
      std::optional<Key> best;
      for (auto& [domain, nodes] : domains) {
        if (nodes.size() < static_cast<size_t>(request.nodes)) continue;
        std::sort(nodes.begin(), nodes.end());
        Key key{0, -1, 0, 0, {}};
        for (int k = 0; k < request.nodes; ++k) {
          const auto& [cost, node] = nodes[k];
          key = {std::get<0>(key) + std::get<0>(cost), std::max(std::get<1>(key), std::get<1>(cost)),
                 std::get<2>(key) + std::get<2>(cost), std::get<3>(key) + std::get<3>(cost), std::get<4>(key)};
          std::get<4>(key).push_back(node);
        }
        std::sort(std::get<4>(key).begin(), std::get<4>(key).end());
        if (std::get<0>(key) > 0 && (!best || key < *best)) best = key;
      }
      return best;
    };
    size_t depth = racks ? 2 : 1;
    std::optional<Key> best = brute(depth);
    while (mode == Mode::kPreferred && !best && depth > 0) best = brute(--depth);
    const std::optional<PreemptionPlan> plan = PlanPreemption(s, placed, request, kT0);
    ASSERT_EQ(plan.has_value(), best.has_value());
    if (!plan) continue;
    ++plans;
    ASSERT_EQ(plan->instances.size(), static_cast<size_t>(request.nodes));
    std::set<Names> used;
    Names victims;
    for (const std::string& node : plan->instances) {
      ASSERT_GE(path[node].size(), std::max<size_t>(depth, 1)) << node << " has no label of the level";
      used.insert(Names(path[node].begin(), path[node].begin() + static_cast<ptrdiff_t>(depth)));
      for (const PlacedRunInfo* p : on[node]) victims.push_back(p->id);
    }
    EXPECT_EQ(used.size(), 1u) << "scattered over domains";
    std::sort(victims.begin(), victims.end());
    EXPECT_EQ(plan->victims, victims);
    EXPECT_EQ(plan->instances, std::get<4>(*best));
  }
  EXPECT_GT(plans, 50);  // the rounds do exercise plans
}

}  // namespace
}  // namespace berth::scheduling
