// Issue 49: DRA fleets on real nodes. A real kubelet with the DRA example driver's kubelet plugin
// (sigs.k8s.io/dra-example-driver, hack/real-nodes.sh --dra-devices) publishes the node's example
// GPUs as a ResourceSlice; berth counts them as the fleet's GPUs, gives each Pod of a run a
// ResourceClaim for its GPUs, and kube-scheduler binds the Pod and allocates the claim; the
// plugin prepares it and the container sees its devices (GPU_DEVICE_* variables from CDI).
// Each test asserts what a user would check with kubectl.

#include <regex>
#include <set>
#include <sstream>

#include "engine_fixture.h"
#include "k8s/json.h"
#include "real_nodes.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kFleets;
using k8s::resources::kPods;

const char* kDraNode = "dra-0";
const char* kDraNode1 = "dra-1";  // only the gang's fleet selects it too (label dra-gang)
constexpr int kDevices = 4;

class DraTest : public EngineTest {
 protected:
  DraTest() { finish_deleted_pods_ = false; }  // the kubelet does it
  static void SetUpTestSuite() {
    RealNodeSpec node{kDraNode, 0, "4Gi", {{"pool", "dra-it"}, {"dra-gang", "yes"}}};
    node.dra_devices = kDevices;
    RealNodeSpec node1{kDraNode1, 0, "4Gi", {{"pool", "dra-it-1"}, {"dra-gang", "yes"}}};
    node1.dra_devices = kDevices;
    // With kube-scheduler (it binds a DRA run's Pods) and the ResourceClaim controller.
    RealNodes::Start({node, node1}, true);
  }
  void TearDown() override {
    if (HasFailure()) {
      std::printf("---- kubelet log of %s (tail) ----\n%s\n", kDraNode, RealNodes::KubeletLog(kDraNode).c_str());
      std::printf("---- pods ----\n%s\n", Kubectl({"get", "pods", "-o", "wide"}).out.c_str());
      std::printf("---- claims ----\n%s\n", Kubectl({"get", "resourceclaims", "-o", "yaml"}).out.c_str());
    }
    EngineTest::TearDown();
    EXPECT_TRUE(Eventually([&] {
      auto l = client()->List(kPods.Path(ns_));
      return l.ok() && l->items.empty();
    }, std::chrono::seconds(90))) << "pods of " << ns_ << " were not gone 90 s after the test";
  }

  // Fleet FleetName("dra") over the DRA node, counting devices of gpu.example.com; blocks: auto is one
  // block per GPU, at most one per whole CPU (this machine has 2).
  void DraFleet() {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName("dra") +
          "}\nspec:\n  nodeSelector: {pool: dra-it}\n  blocks: auto\n  devices: {deviceClassName: gpu.example.com}\n");
    created_fleets_.push_back(FleetName("dra"));
  }
  // The fleet's status.instances[0].totalBlocks (-1 when not written yet).
  int64_t FleetBlocks() {
    auto f = client()->Get(kFleets.Path("", FleetName("dra")));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    if (list == nullptr || !list->IsArray() || list->Size() != 1) return -1;
    return json::GetInt((*list)[0], "totalBlocks", -1);
  }
  // The fleet's status.instances[0].devices ("" when none).
  std::string Devices() {
    auto f = client()->Get(kFleets.Path("", FleetName("dra")));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    if (list == nullptr || !list->IsArray() || list->Size() != 1) return "";
    return json::GetString((*list)[0], "devices");
  }
  std::string FleetYaml() { return Kubectl({"get", "fleet", FleetName("dra"), "-o", "yaml"}).out; }
  // The fleet's status.instances[0].heldByOtherPods ("" when none).
  std::string HeldByOthers() {
    auto f = client()->Get(kFleets.Path("", FleetName("dra")));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    if (list == nullptr || !list->IsArray() || list->Size() != 1) return "";
    return json::GetString((*list)[0], "heldByOtherPods");
  }
};

// A single-node run on a DRA fleet: berth counts the node's 4 example GPUs (a run asking 4 fits),
// the run's Pod gets a claim for its 4 GPUs, kube-scheduler binds it on its booked node, and its
// container sees the 4 devices through the driver's environment variables.
TEST_F(DraTest, ARunsContainerSeesTheDevicesOfItsClaim) {
  DraFleet();
  ASSERT_TRUE(Eventually([&] { return FleetBlocks() > 0; }, std::chrono::seconds(60))) << FleetYaml();
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: gpus}\nspec:\n  resources: {gpu: 4}\n"
        "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
        "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, 'env | grep ^GPU_DEVICE_ | sort']\n");
  ASSERT_TRUE(WaitPhase("gpus", "Succeeded", std::chrono::seconds(120))) << Phase("gpus") << " " << Message("gpus");
  const CommandResult logs = Kubectl({"logs", "gpus-0"});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  std::set<std::string> devices;  // GPU_DEVICE_<i>=gpu-<n>
  const std::regex device("^GPU_DEVICE_[0-9]+=(gpu-[0-9]+)$");
  std::istringstream lines(logs.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, device)) devices.insert(m[1]);
  }
  EXPECT_EQ(devices.size(), static_cast<size_t>(kDevices)) << logs.out;
  // Bound by kube-scheduler (berth made it unbound, pinned to its node), its claim berth's.
  auto pod = client()->Get(kPods.Path(ns_, "gpus-0"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(json::GetString(json::Find(*pod, {"spec", "nodeName"})), kDraNode);
  EXPECT_EQ(json::GetString(json::Find(*pod, {"spec", "schedulerName"})), "default-scheduler");
  const CommandResult claim = Kubectl({"get", "resourceclaim", "gpus-0-gpus", "-o", "jsonpath={.metadata.labels.berth\\.dev/run}"});
  EXPECT_EQ(claim.out, "gpus") << claim.err;
}

// Devices allocated to someone else's claim come off the node: a Pod kube-scheduler placed with a
// claim for 3 devices leaves the fleet 1 GPU (1 block; heldByOtherPods says 3 GPUs), and all 4
// once it is gone.
TEST_F(DraTest, OthersClaimsTakeDevicesOffTheNode) {
  DraFleet();
  ASSERT_TRUE(Eventually([&] { return FleetBlocks() == 2 && HeldByOthers().empty(); }, std::chrono::seconds(60)))
      << FleetYaml();
  Apply("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: three}\nspec:\n  devices:\n    requests:\n"
        "    - name: gpu\n      exactly: {deviceClassName: gpu.example.com, allocationMode: ExactCount, count: 3}\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: other}\nspec:\n  terminationGracePeriodSeconds: 0\n"
        "  nodeSelector: {pool: dra-it}\n  resourceClaims: [{name: gpu, resourceClaimName: three}]\n  containers:\n"
        "  - name: main\n    image: " + std::string(RealNodes::kBusybox) + "\n    command: [sleep, '3600']\n"
        "    resources: {claims: [{name: gpu}]}\n");
  ASSERT_TRUE(Eventually([&] { return FleetBlocks() == 1 && HeldByOthers() == "3 GPUs"; }, std::chrono::seconds(90)))
      << FleetYaml();
  ASSERT_EQ(Kubectl({"delete", "pod", "other", "--wait=false"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return FleetBlocks() == 2 && HeldByOthers().empty(); }, std::chrono::seconds(90)))
      << FleetYaml();
  Kubectl({"delete", "resourceclaim", "three", "--wait=false"});
}

// A DeviceClass berth cannot read (a CEL selector other than the driver's equality: berth has no
// CEL evaluator) refuses the fleet with a sentence on its Ready condition, instead of a guess.
TEST_F(DraTest, AClassBerthCannotReadRefusesTheFleet) {
  const std::string cls = "big-" + ns_;
  Kubectl({"delete", "deviceclass", cls, "--ignore-not-found"});
  Apply("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: " + cls + "}\nspec:\n  selectors:\n"
        "  - cel: {expression: \"device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0\"}\n");
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName("big") +
        "}\nspec:\n  nodeSelector: {pool: dra-it}\n  devices: {deviceClassName: " + cls + "}\n");
  created_fleets_.push_back(FleetName("big"));
  const std::string jsonpath = "jsonpath={.status.conditions[?(@.type==\"Ready\")].reason}: "
                               "{.status.conditions[?(@.type==\"Ready\")].message}";
  std::string got;
  EXPECT_TRUE(Eventually([&] {
    got = Kubectl({"get", "fleet", FleetName("big"), "-o", jsonpath}).out;
    return got.rfind("InvalidSpec: DeviceClass " + cls + ": berth evaluates no CEL", 0) == 0;
  }, std::chrono::seconds(60))) << got;
  Kubectl({"delete", "deviceclass", cls});
}

// A 2-node gang on a DRA fleet of two real nodes: each rank's Pod gets its own claim, allocated on
// its own booked node, and each container sees the devices of its rank: a multi-node run takes
// whole instances (spec.wholeInstances absent), all 4 GPUs of its node.
TEST_F(DraTest, AGangsRanksEachGetDevicesOnTheirOwnNode) {
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName("gang") +
        "}\nspec:\n  nodeSelector: {dra-gang: \"yes\"}\n  placement: cluster\n  devices: {deviceClassName: gpu.example.com}\n");
  created_fleets_.push_back(FleetName("gang"));
  ASSERT_TRUE(Eventually([&] {
    auto f = client()->Get(kFleets.Path("", FleetName("gang")));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    return list != nullptr && list->IsArray() && list->Size() == 2;
  }, std::chrono::seconds(60)));
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: gang}\nspec:\n  nodes: 2\n  resources: {gpu: 2}\n"
        "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
        "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, 'env | grep -c ^GPU_DEVICE_[0-9]*=']\n");
  ASSERT_TRUE(WaitPhase("gang", "Succeeded", std::chrono::seconds(120))) << Phase("gang") << " " << Message("gang");
  std::set<std::string> nodes;
  for (const char* pod : {"gang-0", "gang-1"}) {
    const CommandResult logs = Kubectl({"logs", pod});
    EXPECT_EQ(logs.out, std::to_string(kDevices) + "\n") << pod << ": " << logs.err;
    auto p = client()->Get(kPods.Path(ns_, pod));
    ASSERT_TRUE(p.ok());
    nodes.insert(json::GetString(json::Find(*p, {"spec", "nodeName"})));
  }
  EXPECT_EQ(nodes, (std::set<std::string>{kDraNode, kDraNode1}));
}

// Issue 49: a DRA fleet over a real DRA node (dra-1, the example plugin's devices) and an
// extended-resource node (a Node that advertises nvidia.com/gpu and publishes no device of the
// class) is refused with a sentence naming that node, instead of silently counting it 0 GPUs; once
// the extended-resource node leaves the fleet, the fleet takes runs on its DRA node.
TEST_F(DraTest, AFleetMixingExtendedResourceAndDraNodesIsRefused) {
  ASSERT_EQ(Kubectl({"label", "node", kDraNode1, "dra-mix=" + ns_, "--overwrite"}).exit_code, 0);
  const std::string ext = Nodes("ext", 1, "2", "4Gi", 8, {{"dra-mix", ns_}})[0];
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName("mix") +
        "}\nspec:\n  nodeSelector: {dra-mix: " + ns_ + "}\n  devices: {deviceClassName: gpu.example.com}\n");
  created_fleets_.push_back(FleetName("mix"));
  // The fleet's Ready condition, as "reason: message".
  auto ready = [&] {
    auto f = client()->Get(kFleets.Path("", FleetName("mix")));
    const json::Value* conds = f.ok() ? json::Find(*f, {"status", "conditions"}) : nullptr;
    if (conds == nullptr || !conds->IsArray()) return std::string();
    for (const json::Value& c : conds->GetArray()) {
      if (json::GetString(c, "type") == "Ready") return json::GetString(c, "reason") + ": " + json::GetString(c, "message");
    }
    return std::string();
  };
  EXPECT_TRUE(Eventually([&] {
    return ready() == "InvalidSpec: a DRA fleet does not mix extended-resource and DRA nodes: node " + ext +
                          " publishes no device of DeviceClass gpu.example.com but advertises the extended resource "
                          "nvidia.com/gpu: 8, which this fleet does not count; narrow spec.nodeSelector to the DRA "
                          "nodes (a Fleet with gpuResource nvidia.com/gpu for the others)";
  }, std::chrono::seconds(60))) << ready();
  ASSERT_EQ(Kubectl({"delete", "node", ext}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return ready() == "InstancesReady: 1 of 1 instances take new runs"; },
                         std::chrono::seconds(60))) << ready();
  Kubectl({"label", "node", kDraNode1, "dra-mix-"});
}

// Issue 49: a user's own ResourceClaim under the name berth gives a rank's claim (<pod>-gpus) is
// never taken as the run's: the run fails with a sentence naming it, no Pod of the run is made,
// and the user's claim is left as it was.
TEST_F(DraTest, AUsersClaimUnderTheRunsClaimNameIsNotTaken) {
  DraFleet();
  ASSERT_TRUE(Eventually([&] { return FleetBlocks() > 0; }, std::chrono::seconds(60))) << FleetYaml();
  Apply("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: taken-0-gpus}\nspec:\n  devices:\n"
        "    requests:\n    - name: gpu\n      exactly: {deviceClassName: gpu.example.com, allocationMode: ExactCount, count: 1}\n");
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: taken}\nspec:\n  resources: {gpu: 2}\n"
        "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
        "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sleep, '3600']\n");
  ASSERT_TRUE(WaitPhase("taken", "Failed", std::chrono::seconds(60))) << Phase("taken") << " " << Message("taken");
  EXPECT_EQ(Reason("taken"), "InvalidSpec");
  EXPECT_EQ(Message("taken"), "a ResourceClaim named taken-0-gpus already exists in namespace " + ns_ +
                                  " and is not this run's (berth does not take over or change it): rank 0's Pod "
                                  "needs that name for its GPUs; rename the run or delete that ResourceClaim");
  EXPECT_TRUE(PodsOf("taken").empty());
  const CommandResult claim = Kubectl({"get", "resourceclaim", "taken-0-gpus", "-o",
                                       "jsonpath={.metadata.labels}|{.metadata.ownerReferences}|"
                                       "{.spec.devices.requests[0].exactly.count}"});
  EXPECT_EQ(claim.out, "||1") << claim.err;
  Kubectl({"delete", "resourceclaim", "taken-0-gpus", "--wait=false"});
}

// Issue 49: the node's devices change under a running run (the plugin restarted with another
// count: its ResourceSlice changes, through an update of its pool). The running run keeps its
// claim and its Pod (kube-scheduler and the kubelet evict nothing when a slice changes, and berth
// interrupts nothing); the node's count changes for new placements: with 1 device the fleet has 1
// block (the run's) and a second run of 1 GPU waits, with 4 again it has 2 and the second run gets
// a device the first one's claim does not hold.
TEST_F(DraTest, TheNodesDevicesChangeUnderARunningRun) {
  struct Restore {  // the other tests count on 4 devices
    ~Restore() { RealNodes::SetDraDevices(kDraNode, kDevices); }
  } restore;
  DraFleet();
  ASSERT_TRUE(Eventually([&] { return FleetBlocks() == 2; }, std::chrono::seconds(60))) << FleetYaml();
  auto run = [&](const std::string& name, int gpus) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n  resources: {gpu: " +
          std::to_string(gpus) + "}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n"
          "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
          "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sleep, '3600']\n");
  };
  run("steady", 2);
  ASSERT_TRUE(WaitPhase("steady", "Running", std::chrono::seconds(120))) << Phase("steady") << " " << Message("steady");
  const std::string uid = Kubectl({"get", "pod", "steady-0", "-o", "jsonpath={.metadata.uid}"}).out;
  ASSERT_FALSE(uid.empty());
  // Seen: the instance's devices and the run whose claim holds them, in the Fleet's status and in
  // kubectl berth fleets.
  const std::string held = "4 devices of gpu.example.com; run " + ns_ + "/steady holds 2";
  EXPECT_TRUE(Eventually([&] { return Devices() == held; }, std::chrono::seconds(60))) << Devices();
  const CommandResult fleets = RunPlugin(cp().kubeconfig(), {"fleets"});
  EXPECT_EQ(fleets.exit_code, 0) << fleets.err;
  EXPECT_NE(fleets.out.find("STATE   DEVICES\n"), std::string::npos) << fleets.out;
  EXPECT_NE(fleets.out.find("Busy    " + held + "\n"), std::string::npos) << fleets.out;

  RealNodes::SetDraDevices(kDraNode, 1);
  ASSERT_TRUE(Eventually([&] { return FleetBlocks() == 1; }, std::chrono::seconds(60))) << FleetYaml();
  EXPECT_EQ(Devices().rfind("1 device of gpu.example.com", 0), 0u) << Devices();
  run("second", 1);
  ASSERT_TRUE(Eventually([&] { return Message("second").find("largest free is 0") != std::string::npos; },
                         std::chrono::seconds(60))) << Phase("second") << " " << Message("second");
  EXPECT_EQ(Phase("second"), "Pending");

  RealNodes::SetDraDevices(kDraNode, kDevices);
  EXPECT_TRUE(WaitPhase("second", "Running", std::chrono::seconds(120))) << Phase("second") << " " << Message("second");
  EXPECT_EQ(Phase("steady"), "Running") << Message("steady");
  const std::string after = Kubectl({"get", "pod", "steady-0", "-o",
                                     "jsonpath={.metadata.uid} {.status.containerStatuses[0].restartCount}"}).out;
  EXPECT_EQ(after, uid + " 0");
  EXPECT_EQ(StatusInt("steady", "resubmissions"), 0);
}

// Issue 49: berth does not read a namespace's ResourceQuota on devices; the API server enforces it
// when berth creates a rank's ResourceClaim, and its refusal fails the run with its message (a
// sentence on the run, never a silent retry of the create).
TEST_F(DraTest, AQuotaOnDevicesRefusingTheClaimFailsTheRunWithItsMessage) {
  DraFleet();
  ASSERT_TRUE(Eventually([&] { return FleetBlocks() > 0; }, std::chrono::seconds(60))) << FleetYaml();
  const std::string res = "gpu.example.com.deviceclass.resource.k8s.io/devices";
  Apply("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: devices}\nspec:\n  hard: {" + res + ": \"1\"}\n");
  // No quota controller runs here: the status the admission reads is written as it would.
  auto q = client()->MergePatch("/api/v1/namespaces/" + ns_ + "/resourcequotas/devices/status",
                                R"({"status":{"hard":{")" + res + R"(":"1"},"used":{")" + res + R"(":"0"}}})");
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: quota}\nspec:\n  resources: {gpu: 2}\n"
        "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
        "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sleep, '3600']\n");
  ASSERT_TRUE(WaitPhase("quota", "Failed", std::chrono::seconds(60))) << Phase("quota") << " " << Message("quota");
  EXPECT_EQ(Reason("quota"), "InvalidSpec");
  const std::string m = Message("quota");
  EXPECT_EQ(m.rfind("the API server refused the ResourceClaim quota-0-gpus for rank 0: ", 0), 0u) << m;
  EXPECT_NE(m.find("exceeded quota: devices"), std::string::npos) << m;
  EXPECT_NE(m.find("(berth does not queue a DRA fleet's runs for a ResourceQuota on devices)"), std::string::npos) << m;
  EXPECT_TRUE(PodsOf("quota").empty());
  Kubectl({"delete", "resourcequota", "devices"});
}

}  // namespace
}  // namespace berth::testing
