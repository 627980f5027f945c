// Stage "place" (scheduling/place.h) on its own: what is free and the searches on it, on a
// hand-made cluster state, with a scripted room filter in place of the quota and team share.

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fixtures.h"
#include "scheduling/place.h"

namespace berth::scheduling::internal {
namespace {

namespace t = berth::scheduling::testing;

constexpr int64_t kNow = 1'000'000;

// A cluster state (instances of 4 blocks of 4 CPUs), the filter stage and the place stage on it.
struct Cluster {
  ClusterSnapshot snapshot;  // the state points into it
  ClusterState state;
  FleetFilter filter;
  Capacity capacity;

  explicit Cluster(ClusterSnapshot s) : snapshot(std::move(s)), state(snapshot, kNow), filter(state), capacity(state, filter) {}
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Blocks held by runs (before Build, as the cycle applies the running runs).
  void Busy(std::string_view instance, int32_t blocks) {
    Instance& in = state.instances[state.FindInstance(instance)];
    in.busy += blocks;
    in.free -= blocks;
  }
  // The filter stage's candidates and need for `run`.
  void Resolve(const PendingRun& run) {
    filter.Resolve(run);
    WaitReason reason;
    ASSERT_TRUE(filter.Fits(run, reason));
  }
  std::string_view Name(int32_t i) const { return i < 0 ? std::string_view("none") : state.instance_names[i]; }
  std::vector<std::string_view> Names(const std::vector<CapacityIndex::Key>& keys) const {
    std::vector<std::string_view> names;
    for (const auto& key : keys) names.push_back(Name(key.second));
    return names;
  }
  int32_t FleetIndex(std::string_view name) const { return state.FindFleet(name); }
  // A multi-node run of `nodes` whole instances into chosen and fleet.
  bool FindMulti(int32_t nodes, const RoomFilter* room = nullptr) {
    const PendingRun run = t::Pending("ns/r", 50, t::kT0, nodes, t::Cpus(16));
    Resolve(run);
    return capacity.FindMulti(nodes, LifetimeRule{kNow + 1, true}, false, room, chosen, fleet);
  }
  std::vector<CapacityIndex::Key> chosen;
  int32_t fleet = -1;
};

ClusterSnapshot Fleets(const std::vector<std::pair<std::string, std::vector<std::string>>>& fleets,
                       PlacementPolicy placement = PlacementPolicy::kAny) {
  ClusterSnapshot s;
  for (const auto& [fleet, names] : fleets) {
    s.fleets.push_back(t::Fleet(fleet, BlocksSetting::Count(4), placement, placement == PlacementPolicy::kCluster ? "zone" : ""));
    for (const std::string& n : names) s.instances.push_back(t::Instance(n, fleet, t::Cpus(16)));
  }
  return s;
}

PendingRun Asking(int64_t cpus, int32_t nodes = 1) { return t::Pending("ns/r", 50, t::kT0, nodes, t::Cpus(cpus)); }

const LifetimeRule kForever{kNow + 1, true};

// Refuses the rooms of the fleets it names, by quota or by share; records what it was asked.
class ScriptedRoom final : public RoomFilter {
 public:
  std::vector<int32_t> quota_refuses;
  std::vector<int32_t> share_refuses;
  mutable std::vector<std::pair<int32_t, QuotaUse>> asked;

  RoomVerdict Check(int32_t fleet, const QuotaUse& use) const override {
    asked.emplace_back(fleet, use);
    RoomVerdict verdict;
    if (Has(quota_refuses, fleet)) verdict.quota = QuotaShortfall{"requests.cpu", "cpu", use.resources.cpu_millis, 0, 0};
    if (!verdict.quota && Has(share_refuses, fleet)) verdict.share = ShareCheck{ShareCheck::kBorrowingLimit, ShareResource::kCpu, use.resources.cpu_millis, 0, 0, 0};
    return verdict;
  }

 private:
  static bool Has(const std::vector<int32_t>& v, int32_t f) { return std::find(v.begin(), v.end(), f) != v.end(); }
};

TEST(PlaceStage, SingleNodeBestFitTakesAPartlyUsedInstanceWithTheFewestBlocksLeft) {
  Cluster c(Fleets({{"f", {"a", "b", "c", "d"}}}));
  c.Busy("b", 2);
  c.Busy("c", 1);
  c.capacity.Build();
  c.Resolve(Asking(4));  // one block
  SingleFit fit = c.capacity.BestSingle(Asking(4), kForever, false, nullptr);
  EXPECT_EQ(c.Name(fit.fit.instance), "b");
  EXPECT_EQ(fit.left, 1);
  EXPECT_FALSE(fit.whole);
  c.Resolve(Asking(12));  // three blocks: only c (3 free) and the idle ones hold it
  fit = c.capacity.BestSingle(Asking(12), kForever, false, nullptr);
  EXPECT_EQ(c.Name(fit.fit.instance), "c");
  EXPECT_EQ(fit.left, 0);
  c.Resolve(Asking(16));  // a whole instance: the idle ones, first by name
  EXPECT_EQ(c.Name(c.capacity.BestSingle(Asking(16), kForever, false, nullptr).fit.instance), "a");
}

TEST(PlaceStage, AcrossFleetsTheCandidateWithTheFewestBlocksLeftWins) {
  Cluster c(Fleets({{"a", {"a0"}}, {"b", {"b0"}}, {"c", {"c0"}}}));
  c.Busy("a0", 1);  // 3 free
  c.Busy("b0", 2);  // 2 free
  c.capacity.Build();
  c.Resolve(Asking(4));
  EXPECT_EQ(c.Name(c.capacity.BestSingle(Asking(4), kForever, false, nullptr).fit.instance), "b0");
  c.Resolve(Asking(12));  // three blocks: a0 (none left) before the idle c0
  EXPECT_EQ(c.Name(c.capacity.BestSingle(Asking(12), kForever, false, nullptr).fit.instance), "a0");
}

TEST(PlaceStage, ARoomTheFilterRefusesIsSkippedAndTheFirstRefusalIsRemembered) {
  Cluster c(Fleets({{"a", {"a0"}}, {"b", {"b0"}}, {"c", {"c0"}}}));
  c.Busy("a0", 3);  // the best fit, were it allowed
  c.capacity.Build();
  const PendingRun run = Asking(3);  // asks 3 CPUs, takes one block of 4
  c.Resolve(run);
  ScriptedRoom room;
  room.quota_refuses = {c.FleetIndex("a")};
  SingleFit fit = c.capacity.BestSingle(run, kForever, false, &room);
  EXPECT_EQ(c.Name(fit.fit.instance), "b0");
  ASSERT_TRUE(c.capacity.skipped().quota.has_value());
  EXPECT_EQ(c.capacity.skipped().quota->needed, 4000);  // the block's CPUs, for one Pod
  EXPECT_FALSE(c.capacity.skipped().share.has_value());
  ASSERT_FALSE(room.asked.empty());
  EXPECT_EQ(room.asked.front().second.pods, 1);

  room.share_refuses = {c.FleetIndex("b"), c.FleetIndex("c")};
  fit = c.capacity.BestSingle(run, kForever, false, &room);
  EXPECT_LT(fit.fit.instance, 0);
  EXPECT_TRUE(c.capacity.skipped().quota.has_value());
  ASSERT_TRUE(c.capacity.skipped().share.has_value());
  EXPECT_EQ(c.capacity.skipped().share_fleet, c.FleetIndex("b"));  // the first one refused

  room.quota_refuses.clear();  // a new search forgets what the last one skipped
  room.share_refuses.clear();
  EXPECT_EQ(c.Name(c.capacity.BestSingle(run, kForever, false, &room).fit.instance), "a0");
  EXPECT_FALSE(c.capacity.skipped().quota.has_value());
  EXPECT_FALSE(c.capacity.skipped().share.has_value());
}

TEST(PlaceStage, TakeKeepAndReserveChangeWhatIsFreeAndBumpTheVersion) {
  ClusterSnapshot s = Fleets({{"f", {"a", "b"}}});
  s.fleets[0].max_runs_per_instance = 2;
  Cluster c(std::move(s));
  c.capacity.Build();
  const PendingRun run = Asking(4);
  c.Resolve(run);
  const int32_t a = c.state.FindInstance("a");
  const int32_t b = c.state.FindInstance("b");
  uint64_t version = c.capacity.version();
  c.capacity.Take(a, 2, 5'000'000);
  EXPECT_GT(c.capacity.version(), version);
  EXPECT_EQ(c.state.instances[a].free, 2);
  EXPECT_EQ(c.state.fleets[0].busy, 1);
  ASSERT_EQ(c.capacity.placed().size(), 1u);
  EXPECT_EQ(c.capacity.placed()[0].blocks, 2);
  EXPECT_EQ(c.Name(c.capacity.BestSingle(run, kForever, false, nullptr).fit.instance), "a");
  c.capacity.Take(a, 1, 5'000'000);  // its second run: maxRunsPerInstance 2 retires it
  EXPECT_EQ(c.state.instances[a].availability, Availability::kRetired);
  EXPECT_EQ(c.state.fleets[0].retired, 1);
  EXPECT_EQ(c.Name(c.capacity.BestSingle(run, kForever, false, nullptr).fit.instance), "b");

  version = c.capacity.version();
  c.capacity.Keep(b, 0);  // kept for a preempting run: no other run gets it
  EXPECT_GT(c.capacity.version(), version);
  EXPECT_LT(c.capacity.BestSingle(run, kForever, false, nullptr).fit.instance, 0);
  EXPECT_FALSE(c.capacity.held().empty());
  c.capacity.Keep(b, -1);
  EXPECT_TRUE(c.capacity.held().empty());
  c.capacity.Reserve({b});  // reserved: only a backfill run may use it
  EXPECT_LT(c.capacity.BestSingle(run, kForever, false, nullptr).fit.instance, 0);
  const SingleFit backfill = c.capacity.BestSingle(run, kForever, true, nullptr);
  EXPECT_EQ(c.Name(backfill.fit.instance), "b");
  EXPECT_TRUE(backfill.reserved);
}

// Cluster fleets "near" (zones east: 2 idle, west: 3) and "far" (zone x: 3 idle).
ClusterSnapshot Zoned() {
  ClusterSnapshot s = Fleets({{"far", {"x0", "x1", "x2"}}, {"near", {"e0", "e1", "w0", "w1", "w2"}}},
                             PlacementPolicy::kCluster);
  for (InstanceSpec& in : s.instances) in.topology_domain = in.name[0] == 'e' ? "east" : in.name[0] == 'w' ? "west" : "x";
  return s;
}

TEST(PlaceStage, AMultiNodeRunTakesTheDomainWithTheFewestIdleInstancesThatHoldsIt) {
  Cluster c(Zoned());
  c.capacity.Build();
  ASSERT_TRUE(c.FindMulti(2));
  EXPECT_EQ(c.fleet, c.FleetIndex("near"));
  EXPECT_EQ(c.Names(c.chosen), (std::vector<std::string_view>{"e0", "e1"}));
  ASSERT_TRUE(c.FindMulti(3));  // three: zone x of "far" and west of "near" hold 3; "far" is first by name
  EXPECT_EQ(c.fleet, c.FleetIndex("far"));
  c.capacity.Take(c.state.FindInstance("x1"), 1, kUnknownTime);  // zone x has 2 idle left
  ASSERT_TRUE(c.FindMulti(3));
  EXPECT_EQ(c.fleet, c.FleetIndex("near"));
  EXPECT_EQ(c.Names(c.chosen), (std::vector<std::string_view>{"w0", "w1", "w2"}));
  c.capacity.Take(c.state.FindInstance("w0"), 4, kUnknownTime);
  EXPECT_FALSE(c.FindMulti(3));
}

TEST(PlaceStage, AMultiNodeRunWhoseBestFleetTheFilterRefusesTakesTheNextBest) {
  Cluster c(Zoned());
  c.capacity.Build();
  ScriptedRoom room;
  room.share_refuses = {c.FleetIndex("near")};
  ASSERT_TRUE(c.FindMulti(2, &room));
  EXPECT_EQ(c.fleet, c.FleetIndex("far"));
  EXPECT_EQ(c.Names(c.chosen), (std::vector<std::string_view>{"x0", "x1"}));
  ASSERT_FALSE(room.asked.empty());
  EXPECT_EQ(room.asked.front().second.pods, 2);  // whole instances: 2 Pods of 16 CPUs
  EXPECT_EQ(room.asked.front().second.resources.cpu_millis, 32'000);
  EXPECT_EQ(c.capacity.skipped().share_fleet, c.FleetIndex("near"));
  room.share_refuses.push_back(c.FleetIndex("far"));
  EXPECT_FALSE(c.FindMulti(2, &room));
}

PendingRun Gang(int64_t cpus, int32_t slices) {
  PendingRun run = Asking(cpus, slices);
  run.whole_instances = false;
  return run;
}

TEST(PlaceStage, AGangsSlicesPackOntoPartlyUsedInstancesAndTheStateIsPutBack) {
  Cluster c(Fleets({{"f", {"a", "b", "c"}}}));
  c.Busy("a", 2);
  c.capacity.Build();
  const PendingRun gang = Gang(4, 3);  // three slices of one block
  c.Resolve(gang);
  GangPlan plan;
  ASSERT_TRUE(c.capacity.TryGangIn(gang, 0, kForever, plan));
  std::vector<std::pair<std::string_view, int32_t>> picks;
  for (auto [i, blocks] : plan.picks) picks.emplace_back(c.Name(i), blocks);
  EXPECT_EQ(picks, (std::vector<std::pair<std::string_view, int32_t>>{{"a", 1}, {"a", 1}, {"b", 1}}));
  EXPECT_EQ(plan.whole, 1);  // it breaks into one idle instance
  EXPECT_EQ(c.state.instances[c.state.FindInstance("a")].free, 2);  // put back
  EXPECT_EQ(c.state.instances[c.state.FindInstance("b")].free, 4);
  const PendingRun big = Gang(12, 3);  // three slices of three blocks: b and c only
  c.Resolve(big);
  EXPECT_FALSE(c.capacity.TryGangIn(big, 0, kForever, plan));
}

TEST(PlaceStage, AGangGoesToTheFleetItBreaksFewestIdleInstancesOfUnlessTheFilterRefusesIt) {
  Cluster c(Fleets({{"f", {"f0", "f1"}}, {"g", {"g0", "g1"}}}));
  c.Busy("g0", 2);
  c.Busy("g1", 2);
  c.capacity.Build();
  const PendingRun gang = Gang(8, 2);  // two slices of two blocks: in g, no idle instance broken into
  c.Resolve(gang);
  GangPlan best;
  ASSERT_TRUE(c.capacity.FindGang(gang, kForever, nullptr, best));
  EXPECT_EQ(best.fleet, c.FleetIndex("g"));
  ScriptedRoom room;
  room.quota_refuses = {c.FleetIndex("g")};
  ASSERT_TRUE(c.capacity.FindGang(gang, kForever, &room, best));
  EXPECT_EQ(best.fleet, c.FleetIndex("f"));
  ASSERT_TRUE(c.capacity.skipped().quota.has_value());
  EXPECT_EQ(c.capacity.skipped().quota->needed, 16'000);  // the gang's sum: 2 slices of 8 CPUs
}

}  // namespace
}  // namespace berth::scheduling::internal
