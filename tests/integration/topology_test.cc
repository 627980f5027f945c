// Topology levels (issue 48) end to end on real nodes (real kubelets, hack/real-nodes.sh): three
// 8-GPU machines labelled as racks under one spine, a Fleet with `topology` levels, Runs with
// `topology: {required|preferred}`. What a user checks with kubectl: where the Pods run, and the
// waiting runs' messages naming the level and its largest free domain.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "engine_fixture.h"
#include "k8s/json.h"
#include "real_nodes.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;

// Spine s1: rack b holds rt-0, rack a holds rt-1 and rt-2 (so a choice by name alone would split
// a two-node run over both racks).
const char* kRackB = "rt-0";
const char* kRackA0 = "rt-1";
const char* kRackA1 = "rt-2";
const char* kRetry = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";

class TopologyRealNodes : public EngineTest {
 protected:
  TopologyRealNodes() { finish_deleted_pods_ = false; }  // the kubelets do it
  static void SetUpTestSuite() {
    auto node = [](const char* name, const char* rack) {
      return RealNodeSpec{name, 8, "4Gi", {{"pool", "rt-gpu"}, {"example.com/spine", "s1"}, {"example.com/rack", rack}}};
    };
    RealNodes::Start({node(kRackB, "b"), node(kRackA0, "a"), node(kRackA1, "a")});
  }
  void TearDown() override {
    if (HasFailure()) std::printf("---- pods ----\n%s\n", Kubectl({"get", "pods", "-o", "wide"}).out.c_str());
    EngineTest::TearDown();
    EXPECT_TRUE(Eventually([&] {
      auto l = client()->List(kPods.Path(ns_));
      return l.ok() && l->items.empty();
    }, std::chrono::seconds(90))) << "pods of " << ns_ << " were not gone 90 s after the test";
  }

  // A run of `nodes` whole 8-GPU machines with `topology` whose containers sleep.
  void Gang(const std::string& name, int nodes, const std::string& topology, const std::string& extra = {}) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n  nodes: " +
          std::to_string(nodes) + "\n  resources: {gpu: 8}\n  topology: " + topology + "\n" + extra +
          "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
          "        image: " + RealNodes::kBusybox + "\n        command: [sleep, \"3600\"]\n");
  }
  // The machines the run's Pods are bound to.
  std::set<std::string> NodesOf(const std::string& run) {
    std::set<std::string> nodes;
    for (auto& [name, pod] : PodsOf(run)) nodes.insert(json::GetString(json::Find(pod, {"spec", "nodeName"})));
    return nodes;
  }
};

TEST_F(TopologyRealNodes, GangsStayInTheirRequiredRackWaitNamingItAndPreferredOnesClimb) {
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName("racks") +
        "}\nspec:\n  nodeSelector: {pool: rt-gpu}\n  blocks: auto\n  placement: cluster\n"
        "  topology: [{key: example.com/spine}, {key: example.com/rack}]\n");
  created_fleets_.push_back(FleetName("racks"));
  ASSERT_TRUE(Eventually([&] {
    auto f = client()->Get(k8s::resources::kFleets.Path("", FleetName("racks")));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    return list != nullptr && list->IsArray() && list->Size() == 3;
  }, std::chrono::seconds(60))) << "the controller never wrote the status of the fleet";

  // Two machines in one rack: rack a, the only one with two.
  Gang("pair", 2, "{required: example.com/rack}");
  ASSERT_TRUE(WaitPhase("pair", "Running", std::chrono::seconds(90))) << Phase("pair") << " " << Message("pair");
  EXPECT_EQ(NodesOf("pair"), (std::set<std::string>{kRackA0, kRackA1}));

  // Another two in one rack wait: the largest free rack (b) has one machine.
  Gang("second", 2, "{required: example.com/rack}", kRetry);
  const std::string fleet = FleetName("racks");
  const std::string waits = "needs 2 idle instances with 8 GPUs in one example.com/rack; the largest free one has 1 (fleet " +
                            fleet + ", 2 busy)";
  EXPECT_TRUE(Eventually([&] { return Message("second").rfind(waits, 0) == 0; })) << Message("second");
  EXPECT_EQ(Phase("second"), "Pending");
  EXPECT_EQ(Reason("second"), "NoCapacity");
  // Three in one rack: no rack has three machines at all.
  Gang("big", 3, "{required: example.com/rack}", kRetry);
  const std::string never = "needs 3 instances in one example.com/rack; the largest has 2 (fleet " + fleet + ")";
  EXPECT_TRUE(Eventually([&] { return Reason("big") == "Unschedulable"; })) << Reason("big") << " " << Message("big");
  EXPECT_EQ(Message("big").rfind(never, 0), 0u) << Message("big");
  EXPECT_TRUE(NodesOf("second").empty()) << "a waiting run has no Pod bound";
  for (const std::string name : {"second", "big", "pair"}) {
    ASSERT_EQ(Kubectl({"delete", "run", name, "--wait=false"}).exit_code, 0);
  }

  // Preferred in one rack, three machines: no rack holds them, so the spine (every machine).
  Gang("spread", 3, "{preferred: example.com/rack}", kRetry);
  ASSERT_TRUE(WaitPhase("spread", "Running", std::chrono::seconds(120))) << Phase("spread") << " " << Message("spread");
  EXPECT_EQ(NodesOf("spread"), (std::set<std::string>{kRackB, kRackA0, kRackA1}));
}

// Issue 48, 5: what a user sees of the domains. `kubectl berth fleets` names the levels, draws the
// domains (spine -> racks) with their idle machines and each machine's domain; `kubectl berth
// describe` shows the domain a placed gang holds. From the Fleet's status the controller writes.
TEST_F(TopologyRealNodes, FleetsShowTheDomainsAndDescribeTheDomainARunHolds) {
  const std::string fleet = FleetName("shown");
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet +
        "}\nspec:\n  nodeSelector: {pool: rt-gpu}\n  blocks: auto\n  placement: cluster\n"
        "  topology: [{key: example.com/spine}, {key: example.com/rack}]\n");
  created_fleets_.push_back(fleet);
  auto domains = [&] {
    std::map<std::string, std::string> out;  // node -> status domain
    auto f = client()->Get(k8s::resources::kFleets.Path("", fleet));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    if (list == nullptr || !list->IsArray()) return out;
    for (const auto& i : list->GetArray()) out[json::GetString(json::Find(i, {"node"}))] = json::GetString(json::Find(i, {"domain"}));
    return out;
  };
  const std::map<std::string, std::string> want = {{kRackB, "s1/b"}, {kRackA0, "s1/a"}, {kRackA1, "s1/a"}};
  ASSERT_TRUE(Eventually([&] { return domains() == want; }, std::chrono::seconds(60)))
      << "the fleet's status never showed each machine's domain";

  Gang("pair", 2, "{required: example.com/rack}");
  ASSERT_TRUE(WaitPhase("pair", "Running", std::chrono::seconds(90))) << Phase("pair") << " " << Message("pair");
  CommandResult shown;
  // Rack a's two machines are busy: the spine has one idle machine of three, rack a none of two.
  const std::vector<std::string> tree = {"topology example.com/spine > example.com/rack", "  DOMAIN   IDLE\n",
                                         "  s1       1/3\n", "    a      0/2\n", "    b      1/1\n"};
  EXPECT_TRUE(Eventually([&] {
    shown = RunPlugin(cp().kubeconfig(), {"fleets"});
    for (const auto& part : tree) {
      if (shown.out.find(part) == std::string::npos) return false;
    }
    return shown.exit_code == 0;
  })) << shown.out << shown.err;
  for (const char* node : {kRackA0, kRackA1}) {
    EXPECT_NE(shown.out.find(std::string("  ") + node + "       s1/a     "), std::string::npos) << node << "\n" << shown.out;
  }
  const CommandResult described = RunPlugin(cp().kubeconfig(), {"describe", "pair", "-n", ns_});
  ASSERT_EQ(described.exit_code, 0) << described.err;
  EXPECT_NE(described.out.find("Domain:       s1/a (example.com/spine > example.com/rack)\n"), std::string::npos)
      << described.out;

  // A tenant who may read runs, Pods and Events in the namespace but not the cluster-scoped
  // Fleets: the run is described without its domain, and a note on stderr says why.
  Apply("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: viewer}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: viewer}\n"
        "rules: [{apiGroups: [berth.dev], resources: [runs], verbs: [get, list]},"
        " {apiGroups: [\"\"], resources: [pods, events], verbs: [get, list]}]\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: viewer}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: viewer}\n"
        "subjects: [{kind: ServiceAccount, name: viewer}]\n");
  const CommandResult token = Kubectl({"create", "token", "viewer"});
  ASSERT_EQ(token.exit_code, 0) << token.err;
  std::string bearer = token.out;
  while (!bearer.empty() && (bearer.back() == '\n' || bearer.back() == ' ')) bearer.pop_back();
  const std::string viewer = cp().KubeconfigOf("viewer-" + ns_, "    token: " + bearer + "\n");
  const CommandResult as_viewer = RunPlugin(viewer, {"describe", "pair", "-n", ns_});
  ASSERT_EQ(as_viewer.exit_code, 0) << as_viewer.err;
  EXPECT_NE(as_viewer.out.find("pair"), std::string::npos) << as_viewer.out;
  EXPECT_EQ(as_viewer.out.find("Domain:"), std::string::npos) << as_viewer.out;
  EXPECT_NE(as_viewer.err.find("note: cannot read fleet " + fleet + ": "), std::string::npos) << as_viewer.err;
}

}  // namespace
}  // namespace berth::testing
