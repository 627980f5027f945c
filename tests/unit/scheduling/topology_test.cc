// Topology levels (issue 48): the place stage's multi-node search by required / preferred level
// (scheduling/place_topology.cc), domains as paths (cluster_state.h) and the filter stage's
// resolution of a run's level (filter.h), on a hand-made cluster of spines and racks.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "scheduling/place.h"

namespace berth::scheduling::internal {
namespace {

namespace t = berth::scheduling::testing;
using t::kRack;
using t::kSpine;
using t::Mode;

constexpr int64_t kNow = 1'000'000;
const LifetimeRule kForever{kNow + 1, true};
using Names = std::vector<std::string_view>;

// Nodes of one cluster fleet "gpu" with levels {spine, rack}: (name, spine, rack); "" for a
// missing label (a missing spine drops the rack too).
ClusterSnapshot Racks(const std::vector<std::tuple<std::string, std::string, std::string>>& nodes) {
  ClusterSnapshot s;
  s.fleets.push_back(t::Fleet("gpu", BlocksSetting::Count(1), PlacementPolicy::kCluster));
  s.fleets.back().topology = {"example.com/spine", "example.com/rack"};
  for (const auto& [name, spine, rack] : nodes) {
    s.instances.push_back(t::Instance(name, "gpu", t::Cpus(16)));
    if (!spine.empty()) s.instances.back().topology_path.push_back(spine);
    if (!spine.empty() && !rack.empty()) s.instances.back().topology_path.push_back(rack);
  }
  return s;
}

// `n` nodes named <spine>-<rack>-<i> in rack `rack` of spine `spine`.
void AddRack(std::vector<std::tuple<std::string, std::string, std::string>>& nodes, const std::string& spine,
             const std::string& rack, int n) {
  for (int i = 0; i < n; ++i) nodes.emplace_back(spine + "-" + rack + "-" + std::to_string(i), spine, rack);
}

struct Cluster {
  ClusterSnapshot snapshot;
  ClusterState state;
  FleetFilter filter;
  Capacity capacity;
  std::vector<CapacityIndex::Key> chosen;
  int32_t fleet = -1;
  WaitReason reason;

  explicit Cluster(ClusterSnapshot s) : snapshot(std::move(s)), state(snapshot, kNow), filter(state), capacity(state, filter) {
    capacity.Build();
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Whether the filter passes a multi-node run of `nodes` whole instances with `topology`, and
  // the place stage finds room for it (into chosen).
  bool Find(int32_t nodes, Mode mode = Mode::kNone, std::string key = "") {
    return Filter(nodes, mode, std::move(key)) && capacity.FindMulti(nodes, kForever, false, nullptr, chosen, fleet);
  }
  // Whether the filter stage passes it (reason: why not).
  bool Filter(int32_t nodes, Mode mode = Mode::kNone, std::string key = "") {
    PendingRun run = t::Pending("ns/r", 50, t::kT0, nodes, t::Cpus(16));
    run.topology = TopologyRequest{mode, std::move(key)};
    filter.Resolve(run);
    reason = WaitReason{};
    return filter.Fits(run, reason);
  }
  Names Chosen() const {
    Names names;
    for (const auto& key : chosen) names.push_back(state.instance_names[key.second]);
    std::sort(names.begin(), names.end());
    return names;
  }
  // The distinct path prefixes of `levels` levels the chosen nodes are in.
  size_t DomainsUsed(size_t levels) const {
    std::vector<std::vector<std::string>> paths;
    for (const auto& key : chosen) {
      const auto& path = state.instances[key.second].spec->topology_path;
      paths.emplace_back(path.begin(), path.begin() + std::min(levels, path.size()));
    }
    std::sort(paths.begin(), paths.end());
    return static_cast<size_t>(std::unique(paths.begin(), paths.end()) - paths.begin());
  }
  void Take(std::string_view name) { capacity.Take(state.FindInstance(name), 1, kUnknownTime); }
};


TEST(Topology, DomainsArePathsInPreorder) {
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;
  AddRack(nodes, "s2", "r1", 2);
  AddRack(nodes, "s1", "r1", 2);
  nodes.emplace_back("lone", "s1", "");  // spine only: in s1, in no rack
  nodes.emplace_back("bare", "", "");    // no label: in no domain
  Cluster c(Racks(nodes));
  // s1, s1/r1, s2, s2/r1: rack r1 under s1 is not rack r1 under s2.
  ASSERT_EQ(c.state.domains.size(), 4u);
  EXPECT_EQ(c.state.domains[0].level, 0);
  EXPECT_EQ(c.state.domains[0].end, 2);
  EXPECT_EQ(c.state.domains[1].level, 1);
  EXPECT_EQ(c.state.domains[1].parent, 0);
  EXPECT_EQ(c.state.domains[3].parent, 2);
  EXPECT_EQ(c.state.instances[c.state.FindInstance("lone")].domain, 0);
  EXPECT_EQ(c.state.instances[c.state.FindInstance("bare")].domain, -1);
  EXPECT_EQ(c.state.instances[c.state.FindInstance("s2-r1-0")].domain, 3);
  // Three nodes in one rack: neither r1 holds them although "r1" has four.
  EXPECT_FALSE(c.Find(3, Mode::kRequired, kRack));
  EXPECT_EQ(c.reason.code, WaitCode::kTooManyNodes);
  EXPECT_EQ(c.reason.available, 2);
  // Three in one spine: s1 (its rack and the node without a rack), never the unlabelled node.
  ASSERT_TRUE(c.Find(3, Mode::kRequired, kSpine));
  EXPECT_EQ(c.Chosen(), (Names{"lone", "s1-r1-0", "s1-r1-1"}));
}

// docs/scheduling.md's example, "Topology levels": spine s1 with racks a (6 nodes) and b (3), spine
// s2 with racks c (3) and d (4).
std::vector<std::tuple<std::string, std::string, std::string>> DocsRacks() {
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;
  AddRack(nodes, "s1", "a", 6);
  AddRack(nodes, "s1", "b", 3);
  AddRack(nodes, "s2", "c", 3);
  AddRack(nodes, "s2", "d", 4);
  return nodes;
}

TEST(Topology, RequiredTakesTheBestFittingDomainOfItsLevelTiesToTheFullerParent) {
  const auto nodes = DocsRacks();
  Cluster c(Racks(nodes));
  // Racks b and c hold 3 with none left over; c's spine has fewer idle (7 < 9).
  ASSERT_TRUE(c.Find(3, Mode::kRequired, kRack));
  EXPECT_EQ(c.Chosen(), (Names{"s2-c-0", "s2-c-1", "s2-c-2"}));
  ASSERT_TRUE(c.Find(5, Mode::kRequired, kRack));
  EXPECT_EQ(c.DomainsUsed(2), 1u);
  EXPECT_EQ(c.Chosen().front(), "s1-a-0");
  // No rack holds 7: it waits (never split), naming the largest rack.
  EXPECT_FALSE(c.Find(7, Mode::kRequired, kRack));
  EXPECT_EQ(c.reason.available, 6);
  c.Take("s1-a-0");
  c.Take("s1-a-1");  // a has 4 idle left
  EXPECT_TRUE(c.Filter(5, Mode::kRequired, kRack));
  EXPECT_FALSE(c.capacity.FindMulti(5, kForever, false, nullptr, c.chosen, c.fleet));
}

// docs/scheduling.md's example, "Topology levels".
TEST(Topology, TheDocsExample) {
  // Its required cases (3, 5, 7 nodes in one rack) are the test above's.
  const auto nodes = DocsRacks();
  Cluster c(Racks(nodes));
  ASSERT_TRUE(c.Find(7, Mode::kPreferred, kRack));
  EXPECT_EQ(c.Chosen().front(), "s2-c-0");
  EXPECT_EQ(c.DomainsUsed(1), 1u);
  ASSERT_TRUE(c.Find(12, Mode::kPreferred, kRack));
  Names want;
  for (const auto& node : nodes) {
    if (std::get<1>(node) == "s1" || std::get<2>(node) == "c") want.push_back(std::get<0>(node));
  }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(c.Chosen(), want);
}

TEST(Topology, BestFitKeepsTheLargerDomainWhole) {
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;
  AddRack(nodes, "s1", "big", 8);
  AddRack(nodes, "s1", "small", 4);
  Cluster c(Racks(nodes));
  // Required at the spine level: inside the spine, the rack that fits best too.
  ASSERT_TRUE(c.Find(4, Mode::kRequired, kSpine));
  EXPECT_EQ(c.Chosen().front(), "s1-small-0");
  EXPECT_EQ(c.DomainsUsed(2), 1u);
  ASSERT_TRUE(c.Find(4, Mode::kPreferred, kRack));
  EXPECT_EQ(c.Chosen().front(), "s1-small-0");
  for (const auto& key : c.chosen) c.capacity.Take(key.second, 1, kUnknownTime);
  ASSERT_TRUE(c.Find(8, Mode::kRequired, kRack));  // the big rack is still whole
  EXPECT_EQ(c.DomainsUsed(2), 1u);
}

TEST(Topology, PreferredClimbsOnlyWhenItMustThenSpreadsCompactly) {
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;
  AddRack(nodes, "s1", "a", 4);
  AddRack(nodes, "s1", "b", 3);
  AddRack(nodes, "s2", "c", 3);
  AddRack(nodes, "s2", "d", 3);
  Cluster c(Racks(nodes));
  ASSERT_TRUE(c.Find(4, Mode::kPreferred, kRack));  // a rack holds it: rack a
  EXPECT_EQ(c.DomainsUsed(2), 1u);
  // No rack holds 5: the best-fitting spine (s2: 6 idle, s1: 7), two racks of it.
  ASSERT_TRUE(c.Find(5, Mode::kPreferred, kRack));
  EXPECT_EQ(c.DomainsUsed(1), 1u);
  EXPECT_EQ(c.Chosen().front(), "s2-c-0");
  // Inside s1 (7 for 7): both its racks.
  ASSERT_TRUE(c.Find(7, Mode::kPreferred, kRack));
  EXPECT_EQ(c.Chosen().front(), "s1-a-0");
  EXPECT_EQ(c.DomainsUsed(1), 1u);
  // No spine holds 9: across spines, the largest first (all of s1, then one rack of s2).
  ASSERT_TRUE(c.Find(9, Mode::kPreferred, kRack));
  EXPECT_EQ(c.DomainsUsed(1), 2u);
  EXPECT_EQ(c.DomainsUsed(2), 3u);
  // Required at the spine level: it waits.
  EXPECT_FALSE(c.Find(9, Mode::kRequired, kSpine));
  EXPECT_EQ(c.reason.code, WaitCode::kTooManyNodes);
  EXPECT_EQ(c.reason.available, 7);
  EXPECT_FALSE(c.Find(14, Mode::kPreferred, kRack));  // more than the fleet has
}

// A spread takes the largest domains first, and the rest from the smallest that holds it (as
// Kueue's TAS does), so that a larger domain stays whole for the next run.
TEST(Topology, ASpreadPutsItsRestInTheSmallestDomainThatHoldsIt) {
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;
  AddRack(nodes, "s1", "a", 6);
  AddRack(nodes, "s1", "b", 4);
  AddRack(nodes, "s1", "c", 3);
  Cluster c(Racks(nodes));
  // No rack holds 8: spine s1, all of rack a, then 2 of rack c (3 idle), not of rack b (4).
  ASSERT_TRUE(c.Find(8, Mode::kPreferred, kRack));
  EXPECT_EQ(c.DomainsUsed(2), 2u);
  for (std::string_view name : c.Chosen()) EXPECT_EQ(name.find("s1-b-"), std::string_view::npos) << name;
  // 11: all of a, and the rest (5) in no single rack: b's 4 (the largest left), then 1 of c.
  ASSERT_TRUE(c.Find(11, Mode::kPreferred, kRack));
  EXPECT_EQ(c.DomainsUsed(2), 3u);
  size_t from_c = 0;
  for (std::string_view name : c.Chosen()) from_c += name.find("s1-c-") == 0 ? 1 : 0;
  EXPECT_EQ(from_c, 1u);
}

TEST(Topology, ARunWithoutTopologyOnAFleetWithLevelsIsPlacedAsCompactlyAsItFits) {
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;
  AddRack(nodes, "s1", "a", 4);
  AddRack(nodes, "s1", "b", 2);
  AddRack(nodes, "s2", "c", 3);
  Cluster c(Racks(nodes));
  ASSERT_TRUE(c.Find(2));
  EXPECT_EQ(c.Chosen(), (Names{"s1-b-0", "s1-b-1"}));
  ASSERT_TRUE(c.Find(6));  // spine s1
  EXPECT_EQ(c.DomainsUsed(1), 1u);
  ASSERT_TRUE(c.Find(9));  // the whole fleet
  // An unknown level: the fleet takes no multi-node run of it.
  EXPECT_FALSE(c.Find(2, Mode::kRequired, "example.com/block"));
  EXPECT_EQ(c.reason.code, WaitCode::kTooManyNodes);
  EXPECT_EQ(c.reason.available, 0);
}

TEST(Topology, ATopologyKeyIsOneRequiredLevelAndOneLevelOfTopologyIsPreferredByDefault) {
  for (bool key : {true, false}) {
    SCOPED_TRACE(key ? "topologyKey" : "topology");
    ClusterSnapshot s;
    s.fleets.push_back(t::Fleet("gpu", BlocksSetting::Count(1), PlacementPolicy::kCluster, key ? "zone" : ""));
    if (!key) s.fleets.back().topology = {"zone"};
    for (std::string name : {"e0", "e1", "w0", "w1", "w2"}) {
      s.instances.push_back(t::Instance(name, "gpu", t::Cpus(16)));
      const std::string zone = name[0] == 'e' ? "east" : "west";
      if (key) {
        s.instances.back().topology_domain = zone;
      } else {
        s.instances.back().topology_path = {zone};
      }
    }
    Cluster c(std::move(s));
    EXPECT_EQ(c.state.domains.size(), 2u);
    ASSERT_TRUE(c.Find(2));
    EXPECT_EQ(c.Chosen(), (Names{"e0", "e1"}));
    EXPECT_EQ(c.Find(4), !key);  // a topologyKey bounds it to one zone
    EXPECT_EQ(c.Find(4, Mode::kPreferred, "zone"), true);
    EXPECT_FALSE(c.Find(4, Mode::kRequired, "zone"));
  }
}

TEST(Topology, AGangOfWholeSlicesStaysInItsRequiredDomain) {
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;
  AddRack(nodes, "s1", "a", 4);
  AddRack(nodes, "s1", "b", 2);
  Cluster c(Racks(nodes));
  PendingRun gang = t::Pending("ns/g", 50, t::kT0, 2, t::Cpus(16));
  gang.whole_instances = false;
  gang.topology = TopologyRequest{Mode::kRequired, kRack};
  c.filter.Resolve(gang);
  ASSERT_TRUE(c.filter.Fits(gang, c.reason));
  ASSERT_TRUE(c.capacity.WholeSlicesIn(0));
  GangPlan plan;
  ASSERT_TRUE(c.capacity.TryGangIn(gang, 0, kForever, plan));
  ASSERT_EQ(plan.picks.size(), 2u);
  EXPECT_EQ(c.state.instance_names[plan.picks[0].first], "s1-b-0");
  EXPECT_EQ(c.state.instance_names[plan.picks[1].first], "s1-b-1");
  gang.nodes = 5;
  c.filter.Resolve(gang);
  EXPECT_FALSE(c.filter.Fits(gang, c.reason));
  EXPECT_EQ(c.reason.code, WaitCode::kTooManySlices);
}

// Against a brute force over the nodes' labels: random spines and racks (some nodes without a
// rack or any label), random busy nodes, random runs: required finds one domain of its level iff
// one holds the run, and the best-fitting one; preferred climbs to the innermost level that holds
// it and spreads only when no spine does; never a node twice, never a busy or unlabelled node.
TEST(Topology, MatchesABruteForceOverTheLabels) {
  std::mt19937 rng(48);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  for (int round = 0; round < 200; ++round) {
    std::vector<std::tuple<std::string, std::string, std::string>> nodes;
    const int spines = 1 + pick(3);
    for (int sp = 0; sp < spines; ++sp) {
      const int racks = 1 + pick(3);
      for (int r = 0; r < racks; ++r) AddRack(nodes, "s" + std::to_string(sp), "r" + std::to_string(r), pick(6));
      if (pick(3) == 0) nodes.emplace_back("s" + std::to_string(sp) + "-norack", "s" + std::to_string(sp), "");
    }
    if (pick(3) == 0) nodes.emplace_back("bare", "", "");
    Cluster c(Racks(nodes));
    std::map<std::string, bool> busy;
    for (const auto& node : nodes) {
      if (pick(4) == 0) {
        busy[std::get<0>(node)] = true;
        c.Take(std::get<0>(node));
      }
    }
    // Idle nodes per domain path ("s0", "s0/r1").
    std::map<std::string, int> idle;
    int labelled = 0;
    for (const auto& [name, spine, rack] : nodes) {
      if (busy[name] || spine.empty()) continue;
      ++labelled;
      ++idle[spine];
      if (!rack.empty()) ++idle[spine + "/" + rack];
    }
    auto best = [&](bool racks, int n) {  // the fewest idle of the domains of a level that hold n
      int fewest = 0;
      for (const auto& [path, count] : idle) {
        if ((path.find('/') != std::string::npos) == racks && count >= n && (fewest == 0 || count < fewest)) fewest = count;
      }
      return fewest;
    };
    auto domain_of = [&](size_t levels) {  // the chosen nodes' one domain of `levels` levels, "" if several
      std::string path;
      for (const auto& key : c.chosen) {
        const auto& p = c.state.instances[key.second].spec->topology_path;
        std::string mine = levels == 1 || p.size() < 2 ? p[0] : p[0] + "/" + p[1];
        if (levels == 2 && p.size() < 2) return std::string();
        if (!path.empty() && path != mine) return std::string();
        path = mine;
      }
      return path;
    };
    const int n = 2 + pick(8);
    SCOPED_TRACE("round " + std::to_string(round) + ", nodes " + std::to_string(n));
    for (Mode mode : {Mode::kRequired, Mode::kPreferred}) {
      for (bool rack_level : {true, false}) {
        const bool found = c.Find(n, mode, rack_level ? kRack : kSpine);
        const int rack_fit = rack_level ? best(true, n) : 0;
        const int spine_fit = best(false, n);
        bool want = rack_fit > 0 || spine_fit > 0;
        if (mode == Mode::kRequired) want = rack_level ? rack_fit > 0 : spine_fit > 0;
        if (mode == Mode::kPreferred) want = labelled >= n;
        ASSERT_EQ(found, want) << (mode == Mode::kRequired ? "required " : "preferred ") << (rack_level ? "rack" : "spine");
        if (!found) continue;
        ASSERT_EQ(c.Chosen().size(), static_cast<size_t>(n));
        Names names = c.Chosen();
        EXPECT_EQ(std::unique(names.begin(), names.end()), names.end());
        for (std::string_view name : names) {
          EXPECT_FALSE(busy[std::string(name)]) << name;
          EXPECT_NE(name, "bare");
        }
        if (rack_fit > 0) {
          ASSERT_NE(domain_of(2), "");
          EXPECT_EQ(idle[domain_of(2)], rack_fit);
        } else if (spine_fit > 0) {
          ASSERT_NE(domain_of(1), "");
          EXPECT_EQ(idle[domain_of(1)], spine_fit);
        }
      }
    }
  }
}

}  // namespace
}  // namespace berth::scheduling::internal
