#include "reconcilers/state/cluster_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/timefmt.h"
#include "scheduling/quota.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using std::chrono::hours;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr int64_t kGi = 1024LL * 1024 * 1024;
const k8s::TimePoint kT0 = k8s::TimePoint(std::chrono::milliseconds(1'767'323'045'000));  // 2026-01-02T03:04:05Z
const k8s::TimePoint kNow = kT0 + hours(2);

using FleetPtr = std::shared_ptr<const Fleet>;
using NodePtr = std::shared_ptr<const k8s::Node>;

struct FleetBuilder {
  Fleet f;
  explicit FleetBuilder(const std::string& name, const std::string& pool, k8s::TimePoint created = kT0) {
    f.meta.name = name;
    f.meta.uid = name + "-uid";
    f.meta.created = created;
    f.spec.node_selector = {{"pool", pool}};
  }
  FleetBuilder& Gpu(const std::string& r) { f.spec.gpu_resource = r; return *this; }
  FleetBuilder& Blocks(int64_t n) { f.spec.blocks = n; return *this; }
  FleetBuilder& AutoBlocks() { f.spec.blocks_auto = true; return *this; }
  FleetBuilder& Cluster(const std::string& topology_key = {}) {
    f.spec.cluster_placement = true;
    f.spec.topology_key = topology_key;
    return *this;
  }
  FleetBuilder& MaxRuns(int64_t n) { f.spec.max_runs_per_instance = n; return *this; }
  FleetBuilder& Lifetime(std::chrono::milliseconds d) { f.spec.instance_lifetime = d; return *this; }
  FleetBuilder& Invalid(const std::string& why) { f.invalid_message = why; return *this; }
  FleetBuilder& Record(const std::string& node, const std::string& uid, int64_t runs, std::vector<std::string> counted) {
    InstanceRecord r;
    r.node = node;
    r.uid = uid;
    r.runs_started = runs;
    r.counted_runs = std::move(counted);
    f.status.instances.push_back(std::move(r));
    return *this;
  }
  FleetPtr Build() const { return std::make_shared<const Fleet>(f); }
};

struct NodeBuilder {
  k8s::Node n;
  explicit NodeBuilder(const std::string& name, const std::string& pool) {
    n.meta.name = name;
    n.meta.uid = name + "-uid";
    n.meta.created = kT0;
    if (!pool.empty()) n.meta.labels["pool"] = pool;
    n.cpu_milli = 32000;
    n.memory_bytes = 256 * kGi;
    n.extended["nvidia.com/gpu"] = 8;
    n.ready = true;
  }
  NodeBuilder& Uid(const std::string& uid) { n.meta.uid = uid; return *this; }
  NodeBuilder& Created(k8s::TimePoint t) { n.meta.created = t; return *this; }
  NodeBuilder& Resources(int64_t cpu, int64_t mem) { n.cpu_milli = cpu; n.memory_bytes = mem; return *this; }
  NodeBuilder& Extended(const std::string& name, int64_t v) { n.extended[name] = v; return *this; }
  NodeBuilder& Label(const std::string& k, const std::string& v) { n.meta.labels[k] = v; return *this; }
  NodeBuilder& Annotation(const std::string& k, const std::string& v) { n.meta.annotations[k] = v; return *this; }
  NodeBuilder& State(bool ready, bool unschedulable, bool deleting) {
    n.ready = ready;
    n.unschedulable = unschedulable;
    n.meta.deleting = deleting;
    return *this;
  }
  NodePtr Build() const { return std::make_shared<const k8s::Node>(n); }
};

PlacedRun Placed(const std::string& key, const std::string& uid, const std::string& fleet,
                 std::vector<std::pair<std::string, int>> nodes_blocks,
                 std::optional<sched::TimePoint> expected_end = std::nullopt) {
  PlacedRun r;
  r.key = key;
  r.uid = uid;
  r.fleet = fleet;
  int rank = 0;
  for (const auto& [node, blocks] : nodes_blocks) {
    r.placement.push_back(PlacementEntry{rank, node, blocks, key.substr(key.find('/') + 1) + "-" + std::to_string(rank)});
    ++rank;
  }
  r.expected_end = expected_end;
  return r;
}

const sched::InstanceSpec* FindInstance(const ClusterView& v, const std::string& name) {
  for (const auto& i : v.snapshot.instances) {
    if (i.name == name) return &i;
  }
  return nullptr;
}

std::vector<std::string> InstanceNames(const ClusterView& v) {
  std::vector<std::string> out;
  for (const auto& i : v.snapshot.instances) out.push_back(i.name);
  return out;
}

std::vector<std::string> FleetNames(const ClusterView& v) {
  std::vector<std::string> out;
  for (const auto& f : v.snapshot.fleets) out.push_back(f.name);
  return out;
}

// ---------------------------------------------------------------------------------------------

TEST(BuildClusterViewTest, EmptyCluster) {
  ClusterView v = BuildClusterView({}, {}, {}, kNow);
  EXPECT_THAT(v.snapshot.fleets, IsEmpty());
  EXPECT_THAT(v.snapshot.instances, IsEmpty());
  EXPECT_THAT(v.snapshot.running, IsEmpty());
  EXPECT_THAT(v.instances, IsEmpty());
  EXPECT_THAT(v.conflicts, IsEmpty());
  EXPECT_THAT(v.invalid_fleets, IsEmpty());
}

// The view's Fleet pointers stay valid after the caller's list of Fleets is gone (the informer may
// replace a Fleet while a pass still reads it): a pass that let its list go read freed Fleets and
// the controller died (bad_alloc copying their conditions, seen under load 2026-11-25). Under
// the sanitizer stage a dangling pointer here is a heap-use-after-free.
TEST(BuildClusterViewTest, TheViewKeepsItsFleetsAlive) {
  ClusterView v;
  {
    std::vector<FleetPtr> fleets = {FleetBuilder("a100", "a").Blocks(4).Build(), FleetBuilder("bad", "b").Invalid("why").Build()};
    v = BuildClusterView(fleets, {}, {}, kNow);
  }
  ASSERT_EQ(v.fleets.count("a100"), 1u);
  ASSERT_EQ(v.fleets.count("bad"), 1u);
  EXPECT_EQ(v.fleets.at("a100")->meta.name, "a100");
  EXPECT_EQ(v.fleets.at("a100")->spec.blocks, 4);
  EXPECT_EQ(v.fleets.at("bad")->invalid_message, "why");
}

TEST(BuildClusterViewTest, FleetSpecsAreTranslated) {
  auto a = FleetBuilder("a100", "a").Blocks(4).Cluster("zone").MaxRuns(10).Build();
  auto b = FleetBuilder("cpu", "c", kT0 - hours(1)).AutoBlocks().Build();
  ClusterView v = BuildClusterView({a, b}, {}, {}, kNow);
  ASSERT_EQ(v.snapshot.fleets.size(), 2u);
  // Oldest first.
  EXPECT_EQ(FleetNames(v), (std::vector<std::string>{"cpu", "a100"}));
  const auto& cpu = v.snapshot.fleets[0];
  EXPECT_TRUE(cpu.blocks.is_auto());
  EXPECT_EQ(cpu.placement, sched::PlacementPolicy::kAny);
  EXPECT_EQ(cpu.topology_key, "");
  EXPECT_EQ(cpu.max_runs_per_instance, std::nullopt);
  const auto& gpu = v.snapshot.fleets[1];
  EXPECT_EQ(gpu.blocks, sched::BlocksSetting::Count(4));
  EXPECT_EQ(gpu.placement, sched::PlacementPolicy::kCluster);
  EXPECT_EQ(gpu.topology_key, "zone");
  EXPECT_EQ(gpu.max_runs_per_instance, std::optional<int64_t>(10));
  EXPECT_EQ(v.fleets.size(), 2u);
  EXPECT_EQ(v.fleets.at("a100"), a.get());
}

TEST(BuildClusterViewTest, SelectedNodesBecomeInstancesWithTheFleetsGpuResource) {
  auto nv = FleetBuilder("a100", "a").Build();
  auto amd = FleetBuilder("mi300", "m").Gpu("amd.com/gpu").Build();
  std::vector<NodePtr> nodes = {
      NodeBuilder("n2", "a").Resources(64000, 512 * kGi).Extended("nvidia.com/gpu", 4).Build(),
      NodeBuilder("n1", "a").Resources(1500, 16 * kGi).Build(),
      NodeBuilder("m1", "m").Extended("nvidia.com/gpu", 0).Extended("amd.com/gpu", 8).Build(),
      NodeBuilder("m2", "m").Extended("amd.com/gpu", 0).Build(),  // no AMD GPUs: 0, not the NVIDIA count
      NodeBuilder("other", "x").Build(),
      NodeBuilder("unlabelled", "").Build(),
  };
  ClusterView v = BuildClusterView({nv, amd}, nodes, {}, kNow);
  EXPECT_EQ(InstanceNames(v), (std::vector<std::string>{"m1", "m2", "n1", "n2"}));  // by name
  struct Want {
    std::string name, fleet;
    sched::Resources alloc;
  };
  const std::vector<Want> wants = {
      {"n1", "a100", {1500, 16 * kGi, 8}},
      {"n2", "a100", {64000, 512 * kGi, 4}},
      {"m1", "mi300", {32000, 256 * kGi, 8}},
      {"m2", "mi300", {32000, 256 * kGi, 0}},
  };
  for (const auto& w : wants) {
    SCOPED_TRACE(w.name);
    const sched::InstanceSpec* inst = FindInstance(v, w.name);
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->fleet, w.fleet);
    EXPECT_EQ(inst->allocatable, w.alloc);
    EXPECT_TRUE(inst->ready);
    EXPECT_EQ(inst->expires_at, std::nullopt);
    EXPECT_EQ(inst->runs_started, 0);
    EXPECT_EQ(inst->topology_domain, std::nullopt);
    ASSERT_EQ(v.instances.count(w.name), 1u);
    const InstanceInfo& info = v.instances.at(w.name);
    EXPECT_EQ(info.node, w.name);
    EXPECT_EQ(info.uid, w.name + "-uid");
    EXPECT_EQ(info.fleet, w.fleet);
    EXPECT_EQ(info.node_problem, "");
    EXPECT_THAT(info.placed_run_uids, IsEmpty());
    EXPECT_TRUE(info.all_counted);
  }
  EXPECT_EQ(v.instances.count("other"), 0u);
  EXPECT_EQ(v.instances.count("unlabelled"), 0u);
  EXPECT_THAT(v.conflicts, IsEmpty());
}

TEST(BuildClusterViewTest, ANodeMatchedByTwoFleetsBelongsToTheOlder) {
  struct Case {
    std::string name;
    k8s::TimePoint created_x, created_y;
    std::string want_owner, want_loser;
  };
  const std::vector<Case> cases = {
      {"x older", kT0, kT0 + minutes(1), "x", "y"},
      {"y older", kT0 + minutes(1), kT0, "y", "x"},
      {"same time: name decides", kT0, kT0, "x", "y"},
  };
  for (const auto& c : cases) {
    for (bool reversed : {false, true}) {
      SCOPED_TRACE(c.name + (reversed ? " (input reversed)" : ""));
      Fleet x = FleetBuilder("x", "shared", c.created_x).f;
      Fleet y = FleetBuilder("y", "shared", c.created_y).f;
      y.spec.node_selector = {{"gpu", "true"}};  // a different selector matching the same node
      std::vector<FleetPtr> fleets = {std::make_shared<const Fleet>(x), std::make_shared<const Fleet>(y)};
      if (reversed) std::swap(fleets[0], fleets[1]);
      std::vector<NodePtr> nodes = {NodeBuilder("n1", "shared").Label("gpu", "true").Build(),
                                    NodeBuilder("n2", "shared").Label("gpu", "true").Build(),
                                    NodeBuilder("only-y", "none").Label("gpu", "true").Build()};
      ClusterView v = BuildClusterView(fleets, nodes, {}, kNow);
      EXPECT_EQ(v.instances.at("n1").fleet, c.want_owner);
      EXPECT_EQ(v.instances.at("n2").fleet, c.want_owner);
      EXPECT_EQ(FindInstance(v, "n1")->fleet, c.want_owner);
      EXPECT_EQ(v.instances.at("only-y").fleet, "y");  // uncontested
      EXPECT_EQ(v.conflicts.size(), 1u);
      EXPECT_THAT(v.conflicts[c.want_loser], ElementsAre("n1", "n2"));
      EXPECT_EQ(v.snapshot.instances.size(), 3u) << "a contested node is one instance, not two";
    }
  }
}

TEST(BuildClusterViewTest, InvalidFleetsAreExcludedAndListed) {
  auto bad = FleetBuilder("bad", "a", kT0 - hours(5)).Invalid("spec.blocks must be at least 1").Build();
  auto good = FleetBuilder("good", "a").Build();
  auto bad_only = FleetBuilder("lonely", "l").Invalid("spec.nodeSelector is empty").Build();
  std::vector<NodePtr> nodes = {NodeBuilder("n1", "a").Build(), NodeBuilder("l1", "l").Build()};
  ClusterView v = BuildClusterView({bad, good, bad_only}, nodes, {}, kNow);
  EXPECT_EQ(FleetNames(v), (std::vector<std::string>{"good"}));
  EXPECT_EQ(v.invalid_fleets, (std::map<std::string, std::string>{{"bad", "spec.blocks must be at least 1"},
                                                                   {"lonely", "spec.nodeSelector is empty"}}));
  // An invalid (older) fleet takes no node away from a valid one and is not a conflict.
  EXPECT_EQ(v.instances.at("n1").fleet, "good");
  EXPECT_THAT(v.conflicts, IsEmpty());
  EXPECT_EQ(v.instances.count("l1"), 0u);
  // Still known by name (for status writes).
  EXPECT_EQ(v.fleets.size(), 3u);
  EXPECT_EQ(v.fleets.at("bad"), bad.get());
}

TEST(BuildClusterViewTest, Readiness) {
  struct Case {
    bool ready, unschedulable, deleting;
    bool want;
  };
  const std::vector<Case> cases = {
      {true, false, false, true},  {false, false, false, false}, {true, true, false, false},
      {true, false, true, false},  {false, true, true, false},   {true, true, true, false},
  };
  auto f = FleetBuilder("a100", "a").Build();
  for (const auto& c : cases) {
    SCOPED_TRACE(testing::Message() << "ready=" << c.ready << " unschedulable=" << c.unschedulable
                                    << " deleting=" << c.deleting);
    ClusterView v = BuildClusterView({f}, {NodeBuilder("n1", "a").State(c.ready, c.unschedulable, c.deleting).Build()},
                                     {}, kNow);
    ASSERT_EQ(v.snapshot.instances.size(), 1u) << "a node that is not ready is still an instance";
    EXPECT_EQ(v.snapshot.instances[0].ready, c.want);
    // The Fleet status tells a cordoned node from one that is not ready or going away.
    const std::string& problem = v.instances.at("n1").node_problem;
    if (c.deleting) {
      EXPECT_EQ(problem, "node is being deleted");
    } else if (c.ready && c.unschedulable) {
      EXPECT_THAT(problem, HasSubstr("cordoned"));
    } else {
      EXPECT_EQ(problem, "") << "the instance says \"node is not ready\" itself";
    }
  }
}

TEST(BuildClusterViewTest, Expiry) {
  const k8s::TimePoint created = kT0 - hours(1);
  struct Case {
    std::string name;
    std::optional<std::chrono::milliseconds> lifetime;
    std::optional<std::string> annotation;
    std::optional<k8s::TimePoint> want;
    bool want_problem;
  };
  const std::vector<Case> cases = {
      {"neither", std::nullopt, std::nullopt, std::nullopt, false},
      {"lifetime", hours(5), std::nullopt, created + hours(5), false},
      {"annotation", std::nullopt, "2026-01-02T10:00:00Z", kT0 + hours(7) - minutes(4) - std::chrono::seconds(5), false},
      {"annotation wins over lifetime", hours(5), "2026-01-02T10:00:00Z",
       kT0 + hours(7) - minutes(4) - std::chrono::seconds(5), false},
      {"annotation with offset", std::nullopt, "2026-01-02T12:00:00+02:00",
       kT0 + hours(7) - minutes(4) - std::chrono::seconds(5), false},
      {"bad annotation", std::nullopt, "tomorrow", std::nullopt, true},
      {"bad annotation with lifetime", hours(5), "2026-13-01T00:00:00Z", std::nullopt, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FleetBuilder fb("a100", "a");
    if (c.lifetime) fb.Lifetime(*c.lifetime);
    NodeBuilder nb("n1", "a");
    nb.Created(created);
    if (c.annotation) nb.Annotation("berth.dev/expires-at", *c.annotation);
    ClusterView v = BuildClusterView({fb.Build()}, {nb.Build()}, {}, kNow);
    const sched::InstanceSpec* inst = FindInstance(v, "n1");
    ASSERT_NE(inst, nullptr);
    EXPECT_EQ(inst->expires_at, c.want);
    EXPECT_EQ(v.instances.at("n1").expires_at, c.want);
    if (c.want_problem) {
      EXPECT_THAT(v.instances.at("n1").node_problem, HasSubstr("berth.dev/expires-at"));
      EXPECT_THAT(v.instances.at("n1").node_problem, HasSubstr(*c.annotation));
      EXPECT_FALSE(inst->ready) << "an instance with an unreadable expiry takes no runs";
    } else {
      EXPECT_EQ(v.instances.at("n1").node_problem, "");
      EXPECT_TRUE(inst->ready);
    }
  }
}

// A Node whose cpu, memory or fleet GPU quantity berth cannot read takes no runs and says why;
// an unreadable resource the fleet does not use changes nothing.
TEST(BuildClusterViewTest, UnreadableAllocatableMakesTheInstanceNotReadyWithAMessage) {
  struct Case {
    std::string resource;
    bool want_problem;
  };
  for (const Case& c : std::vector<Case>{{"cpu", true}, {"memory", true}, {"nvidia.com/gpu", true}, {"amd.com/gpu", false},
                                         {"ephemeral-storage", false}}) {
    SCOPED_TRACE(c.resource);
    NodeBuilder nb("n1", "a");
    nb.n.unreadable[c.resource] = "quantity \"1e100\" is too large";
    ClusterView v = BuildClusterView({FleetBuilder("a100", "a").Build()}, {nb.Build()}, {}, kNow);
    const sched::InstanceSpec* inst = FindInstance(v, "n1");
    ASSERT_NE(inst, nullptr);
    if (c.want_problem) {
      EXPECT_FALSE(inst->ready);
      EXPECT_EQ(v.instances.at("n1").node_problem, "allocatable " + c.resource + " cannot be used: quantity \"1e100\" is too large");
    } else {
      EXPECT_TRUE(inst->ready);
      EXPECT_EQ(v.instances.at("n1").node_problem, "");
    }
  }
}

TEST(BuildClusterViewTest, TopologyDomain) {
  struct Case {
    std::string name, topology_key;
    std::optional<std::string> node_label;  // value of "zone" on the node
    std::optional<std::string> want;
  };
  const std::vector<Case> cases = {
      {"no key, no label", "", std::nullopt, std::nullopt},
      {"no key, label", "", "z1", std::nullopt},
      {"key and label", "zone", "z1", "z1"},
      {"key, empty label value", "zone", "", ""},
      {"key, no label", "zone", std::nullopt, std::nullopt},
      {"other key", "rack", "z1", std::nullopt},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FleetBuilder fb("a100", "a");
    fb.Cluster(c.topology_key);
    NodeBuilder nb("n1", "a");
    if (c.node_label) nb.Label("zone", *c.node_label);
    ClusterView v = BuildClusterView({fb.Build()}, {nb.Build()}, {}, kNow);
    ASSERT_EQ(v.snapshot.instances.size(), 1u);
    EXPECT_EQ(v.snapshot.instances[0].topology_domain, c.want);
  }
}

TEST(BuildClusterViewTest, TopologyLevelsAndANodesPathOfLabelValues) {
  FleetBuilder fb("gpu", "a");
  fb.Cluster();
  fb.f.spec.topology = {"example.com/spine", "example.com/rack", "example.com/clique"};
  const std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::vector<std::string>>> cases = {
      {{{"example.com/spine", "s1"}, {"example.com/rack", "r1"}, {"example.com/clique", "c1"}}, {"s1", "r1", "c1"}},
      {{{"example.com/spine", "s1"}, {"example.com/clique", "c1"}}, {"s1"}},  // stops at the first missing
      {{{"example.com/rack", "r1"}}, {}},
      {{{"example.com/spine", ""}, {"example.com/rack", "r1"}}, {"", "r1"}},  // an empty value is a value
  };
  for (const auto& [labels, want] : cases) {
    NodeBuilder nb("n1", "a");
    for (const auto& [k, v] : labels) nb.Label(k, v);
    ClusterView v = BuildClusterView({fb.Build()}, {nb.Build()}, {}, kNow);
    ASSERT_EQ(v.snapshot.fleets.size(), 1u);
    EXPECT_EQ(v.snapshot.fleets[0].topology, fb.f.spec.topology);
    ASSERT_EQ(v.snapshot.instances.size(), 1u);
    EXPECT_EQ(v.snapshot.instances[0].topology_path, want);
  }
}

TEST(BuildClusterViewTest, RunsStartedIsTheDurableCountPlusUncountedPlacedRuns) {
  auto fleet = FleetBuilder("a100", "a")
                   .Record("n1", "n1-uid", 5, {"run-a"})
                   .Record("n2", "n2-old-uid", 9, {"run-b"})  // n2 was replaced by a new Node object
                   .Record("n3", "n3-uid", 2, {})
                   .Build();
  std::vector<NodePtr> nodes = {NodeBuilder("n1", "a").Build(), NodeBuilder("n2", "a").Uid("n2-new-uid").Build(),
                                NodeBuilder("n3", "a").Build(), NodeBuilder("n4", "a").Build()};
  std::vector<PlacedRun> placed = {
      Placed("ml/a", "run-a", "a100", {{"n1", 2}}),              // counted on n1
      Placed("ml/c", "run-c", "a100", {{"n1", 2}}),              // new on n1
      Placed("ml/b", "run-b", "a100", {{"n2", 8}}),              // counted on the old n2 only
      Placed("ml/m", "run-m", "a100", {{"n3", 8}, {"n4", 8}}),   // multi-node, new
  };
  ClusterView v = BuildClusterView({fleet}, nodes, placed, kNow);
  struct Want {
    std::string node;
    int64_t runs_started;
    std::vector<std::string> placed;
    bool all_counted;
  };
  const std::vector<Want> wants = {
      {"n1", 5 + 1, {"run-a", "run-c"}, false},
      {"n2", 0 + 1, {"run-b"}, false},  // a new Node with the same name starts from 0
      {"n3", 2 + 1, {"run-m"}, false},
      {"n4", 0 + 1, {"run-m"}, false},
  };
  for (const auto& w : wants) {
    SCOPED_TRACE(w.node);
    EXPECT_EQ(FindInstance(v, w.node)->runs_started, w.runs_started);
    EXPECT_EQ(v.instances.at(w.node).placed_run_uids, w.placed);
    EXPECT_EQ(v.instances.at(w.node).all_counted, w.all_counted);
    EXPECT_EQ(v.instances.at(w.node).uid, w.node == "n2" ? "n2-new-uid" : w.node + "-uid");
  }
}

TEST(BuildClusterViewTest, AGangOfSlicesWithTwoRanksOnOneNodeIsOneRunStartedThere) {
  auto fleet = FleetBuilder("a100", "a").Record("n1", "n1-uid", 1, {}).Build();
  std::vector<PlacedRun> placed = {Placed("ml/g", "run-g", "a100", {{"n1", 2}, {"n1", 2}, {"n2", 2}})};
  ClusterView v = BuildClusterView({fleet}, {NodeBuilder("n1", "a").Build(), NodeBuilder("n2", "a").Build()}, placed, kNow);
  EXPECT_EQ(FindInstance(v, "n1")->runs_started, 1 + 1);
  EXPECT_THAT(v.instances.at("n1").placed_run_uids, ElementsAre("run-g"));
  EXPECT_EQ(FindInstance(v, "n2")->runs_started, 1);
  // Its blocks on n1 are both ranks' blocks.
  int64_t on_n1 = 0;
  for (const auto& r : v.snapshot.running) {
    for (const auto& b : r.placement) on_n1 += b.instance == "n1" ? b.blocks : 0;
  }
  EXPECT_EQ(on_n1, 4);
}

TEST(BuildClusterViewTest, CountedRunsAreNotCountedTwice) {
  auto fleet = FleetBuilder("a100", "a").Record("n1", "n1-uid", 3, {"run-a", "run-b"}).Build();
  std::vector<PlacedRun> placed = {Placed("ml/a", "run-a", "a100", {{"n1", 1}}),
                                   Placed("ml/b", "run-b", "a100", {{"n1", 1}})};
  ClusterView v = BuildClusterView({fleet}, {NodeBuilder("n1", "a").Build()}, placed, kNow);
  EXPECT_EQ(FindInstance(v, "n1")->runs_started, 3);
  EXPECT_TRUE(v.instances.at("n1").all_counted);
  EXPECT_THAT(v.instances.at("n1").placed_run_uids, UnorderedElementsAre("run-a", "run-b"));
  // Without any placed run the durable count stands alone (finished runs stay counted).
  ClusterView idle = BuildClusterView({fleet}, {NodeBuilder("n1", "a").Build()}, {}, kNow);
  EXPECT_EQ(FindInstance(idle, "n1")->runs_started, 3);
  EXPECT_TRUE(idle.instances.at("n1").all_counted);
}

TEST(BuildClusterViewTest, AssumedAdmissionsHoldBlocksButAreNotWrittenIntoTheDurableCount) {
  // An admission in flight (status write not in the cache yet) counts for decisions, so
  // maxRunsPerInstance holds, but it must not reach the Fleet's durable count: if the controller
  // dies before the status write lands, the run never started there.
  auto fleet = FleetBuilder("a100", "a").Record("n1", "n1-uid", 2, {"run-a"}).Build();
  PlacedRun assumed = Placed("ml/x", "run-x", "a100", {{"n1", 1}});
  assumed.assumed = true;
  std::vector<PlacedRun> placed = {Placed("ml/a", "run-a", "a100", {{"n1", 1}}), assumed};
  ClusterView v = BuildClusterView({fleet}, {NodeBuilder("n1", "a").Build()}, placed, kNow);
  EXPECT_EQ(FindInstance(v, "n1")->runs_started, 3);  // decisions see it
  const InstanceInfo& info = v.instances.at("n1");
  EXPECT_THAT(info.placed_run_uids, UnorderedElementsAre("run-a"));  // the durable record does not
  EXPECT_EQ(info.assumed_uncounted, 1);
  EXPECT_TRUE(info.all_counted);
  ASSERT_EQ(v.snapshot.running.size(), 2u);  // and its blocks are held
}

TEST(ClusterViewCountedTest, EveryInstanceOfTheRunMustHaveItInItsDurableCount) {
  auto a = FleetBuilder("a100", "a")
               .Record("n1", "n1-uid", 1, {"run-m", "run-s"})
               .Record("n2", "n2-uid", 1, {"run-s"})
               .Record("n3", "n3-old-uid", 1, {"run-o"})
               .Build();
  std::vector<NodePtr> nodes = {NodeBuilder("n1", "a").Build(), NodeBuilder("n2", "a").Build(),
                                NodeBuilder("n3", "a").Uid("n3-new-uid").Build()};
  ClusterView v = BuildClusterView({a}, nodes, {}, kNow);
  struct Case {
    std::string name;
    PlacedRun run;
    bool want;
  };
  const std::vector<Case> cases = {
      {"single node, counted", Placed("ml/s", "run-s", "a100", {{"n1", 1}}), true},
      {"multi node, counted on both", Placed("ml/s", "run-s", "a100", {{"n1", 1}, {"n2", 1}}), true},
      {"multi node, counted on one only", Placed("ml/m", "run-m", "a100", {{"n1", 1}, {"n2", 1}}), false},
      {"not counted anywhere", Placed("ml/x", "run-x", "a100", {{"n1", 1}}), false},
      {"counted on a former node of the same name", Placed("ml/o", "run-o", "a100", {{"n3", 1}}), false},
      {"unknown node", Placed("ml/s", "run-s", "a100", {{"gone", 1}}), false},
  };
  for (const auto& c : cases) EXPECT_EQ(v.Counted(c.run), c.want) << c.name;
}

TEST(BuildClusterViewTest, PlacedRunsBecomeRunningRuns) {
  auto fleet = FleetBuilder("a100", "a").Build();
  const sched::TimePoint end = kNow + hours(3);
  std::vector<PlacedRun> placed = {
      Placed("ml/multi", "u1", "a100", {{"n1", 8}, {"n2", 8}}, end),
      Placed("dev/single", "u2", "a100", {{"n3", 2}}),
      Placed("ml/on-gone-node", "u3", "a100", {{"gone", 1}}),
  };
  std::vector<NodePtr> nodes = {NodeBuilder("n1", "a").Build(), NodeBuilder("n2", "a").Build(),
                                NodeBuilder("n3", "a").Build()};
  ClusterView v = BuildClusterView({fleet}, nodes, placed, kNow);
  ASSERT_EQ(v.snapshot.running.size(), 3u);
  const auto& m = v.snapshot.running[0];
  EXPECT_EQ(m.id, "ml/multi");
  ASSERT_EQ(m.placement.size(), 2u);
  EXPECT_EQ(m.placement[0].instance, "n1");
  EXPECT_EQ(m.placement[0].blocks, 8);
  EXPECT_EQ(m.placement[1].instance, "n2");
  EXPECT_EQ(m.placement[1].blocks, 8);
  EXPECT_EQ(m.expected_end, std::optional<sched::TimePoint>(end));
  const auto& s = v.snapshot.running[1];
  EXPECT_EQ(s.id, "dev/single");
  ASSERT_EQ(s.placement.size(), 1u);
  EXPECT_EQ(s.placement[0].instance, "n3");
  EXPECT_EQ(s.placement[0].blocks, 2);
  EXPECT_EQ(s.expected_end, std::nullopt);
  // A run on a node that is gone is still passed on: the core ignores blocks on unknown instances.
  EXPECT_EQ(v.snapshot.running[2].id, "ml/on-gone-node");
  EXPECT_EQ(v.instances.count("gone"), 0u);
}

// Pods berth's placements do not account for: other Pods' requests come off the node before it is
// cut into blocks; berth's own Pods that outlived their placement hold their blocks.
TEST(BuildClusterViewTest, OtherPodsComeOffTheNodeAndLingeringPodsHoldTheirBlocks) {
  auto fleet = FleetBuilder("a100", "a").Build();
  std::vector<NodePtr> nodes = {
      NodeBuilder("n1", "a").Resources(2000, 8 * kGi).Extended("nvidia.com/gpu", 8).Build(),
      NodeBuilder("n2", "a").Resources(2000, 8 * kGi).Extended("nvidia.com/gpu", 8).Build(),
  };
  k8s::PodRequests agent;  // a DaemonSet's Pod
  agent.cpu_milli = 500;
  agent.memory_bytes = kGi;
  agent.extended["nvidia.com/gpu"] = 1;
  k8s::PodRequests greedy;  // asks more than the node has: the node has nothing left, not less
  greedy.cpu_milli = 5000;
  std::vector<NodeHold> holds = {
      {"n1", "kube-system/agent-x", agent, std::nullopt},
      {"n2", "team/old-0", {}, 3},
      {"n2", "team/unknown-0", {}, std::nullopt},  // no annotation, no requests: nothing off the node
      {"elsewhere", "kube-system/agent-y", greedy, std::nullopt},
  };
  ClusterView v = BuildClusterView({fleet}, nodes, {}, kNow, holds);
  const sched::InstanceSpec* n1 = FindInstance(v, "n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1->allocatable, (sched::Resources{1500, 7 * kGi, 7}));
  EXPECT_EQ(v.instances.at("n1").held_by_others, (sched::Resources{500, kGi, 1}));
  const sched::InstanceSpec* n2 = FindInstance(v, "n2");
  ASSERT_NE(n2, nullptr);
  EXPECT_EQ(n2->allocatable, (sched::Resources{2000, 8 * kGi, 8}));
  EXPECT_EQ(v.instances.at("n2").lingering_pods, 1);
  std::map<std::string, int32_t> held;
  for (const auto& r : v.snapshot.running) {
    ASSERT_EQ(r.placement.size(), 1u);
    EXPECT_EQ(r.placement[0].instance, "n2");
    held[r.id] = r.placement[0].blocks;
  }
  EXPECT_EQ(held, (std::map<std::string, int32_t>{{"team/pod:old-0", 3}}));

  std::vector<NodeHold> too_much = {{"n1", "kube-system/greedy", greedy, std::nullopt}};
  ClusterView w = BuildClusterView({fleet}, nodes, {}, kNow, too_much);
  EXPECT_EQ(FindInstance(w, "n1")->allocatable, (sched::Resources{0, 8 * kGi, 8}));
}

// Issue 44: a labelled Pod that no placement accounts for counts as the kubelet counts it: with a
// berth.dev/blocks annotation, the larger of those blocks and the blocks its requests cover; without
// one (or "0", which EngineCaches::Holds passes as none), its requests come off the node like any
// other Pod's (no annotation is not "the whole machine", "0" is not "nothing"). Its blocks are
// charged to its namespace.
TEST(BuildClusterViewTest, ALabelledPodHoldsTheLargerOfItsAnnotationAndItsRequests) {
  auto fleet = FleetBuilder("a100", "a").Blocks(4).Build();  // blocks of 1 CPU, 2Gi, 2 GPUs
  std::vector<NodePtr> nodes = {NodeBuilder("n1", "a").Resources(4000, 8 * kGi).Extended("nvidia.com/gpu", 8).Build()};
  auto asks = [](int64_t cpu, int64_t gpus) {
    k8s::PodRequests r;
    r.cpu_milli = cpu;
    if (gpus > 0) r.extended["nvidia.com/gpu"] = gpus;
    return r;
  };
  struct Case {
    std::string name;
    k8s::PodRequests requests;
    std::optional<int32_t> annotation;
    int32_t want_blocks;       // 0: holds no blocks
    int64_t want_cpu_left;     // the instance's allocatable CPU once other Pods are off it
  };
  const std::vector<Case> cases = {
      {"no annotation, requests of 2.5 CPUs: off the node", asks(2500, 0), std::nullopt, 0, 1500},
      {"no annotation, 1m CPU: 1m, not the machine", asks(1, 0), std::nullopt, 0, 3999},
      {"annotation 2, no requests (a stopping berth Pod of a run without resources)", {}, 2, 2, 4000},
      {"annotation 1, requests of 2.5 CPUs", asks(2500, 0), 1, 3, 4000},
      {"annotation 1, requests 4 GPUs", asks(0, 4), 1, 2, 4000},
      {"annotation 1, requests more than the machine: all of it", asks(9000, 0), 1, 4, 4000},
      // Issue 45: a ticket's pinned Pod stopping after its ticket went back to the queue or ended.
      {"a ticket's stopping Pod (blocks 0), requests 4 GPUs: the blocks they cover", asks(0, 4), 0, 2, 4000},
      {"a ticket's stopping Pod asking for nothing holds nothing", {}, 0, 0, 4000},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ClusterView v = BuildClusterView({fleet}, nodes, {}, kNow, {NodeHold{"n1", "tenant/squat", c.requests, c.annotation}});
    EXPECT_EQ(FindInstance(v, "n1")->allocatable.cpu_millis, c.want_cpu_left);
    if (c.want_blocks == 0) {
      EXPECT_TRUE(v.snapshot.running.empty());
      continue;
    }
    ASSERT_EQ(v.snapshot.running.size(), 1u);
    const sched::RunningRun& r = v.snapshot.running[0];
    EXPECT_EQ(r.placement, (std::vector<sched::InstanceBlocks>{{"n1", c.want_blocks}}));
    EXPECT_TRUE(IsHoldId(r.id));
    // Quota and team usage read a running run's namespace from its id: the Pod's, not "pod:tenant".
    EXPECT_EQ(sched::NamespaceOf(r.id), "tenant");
  }
}

}  // namespace
}  // namespace berth::reconcilers
