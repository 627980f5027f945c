// berth installed by Helm runs in the cluster (issue 34): the chart's Deployment with the image
// hack/build-image.sh builds from the Dockerfile's content, on real nodes (kubelet + containerd),
// with in-cluster service account credentials, reached through its Service by the API server (the
// webhook; the service proxy for `kubectl berth queue`), failing over between its two replicas,
// upgraded, rolled back and uninstalled by real Helm.
//
// The control plane has a pod network (BERTH_POD_NETWORK=1, hack/control-plane.sh): the API
// server listens on this machine's address and advertises it behind the `kubernetes` Service,
// kube-proxy (iptables) routes Service IPs, kube-scheduler places the Deployment's Pods and
// kube-controller-manager runs the Deployment, ReplicaSet, EndpointSlice, ServiceAccount,
// root-CA and garbage-collector controllers. kube-proxy's rules are machine-wide: ctest runs this
// binary under RESOURCE_LOCK pod-network.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "invariants.h"
#include "k8s/json.h"
#include "real_nodes.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using Clock = std::chrono::steady_clock;

// Before the control plane starts (on first use, after static initialization).
const bool kPodNetwork = [] { return setenv("BERTH_POD_NETWORK", "1", 1) == 0; }();

constexpr char kNs[] = "berth-system";
constexpr char kRelease[] = "berth";
constexpr char kFull[] = "berth-controller";  // the chart's name for release "berth"
const std::string kChart = std::string(BERTH_SOURCE_DIR) + "/deploy/helm/berth";
// The chart's leader election defaults (values.yaml leaderElection).
constexpr auto kLeaseDuration = std::chrono::seconds(15);
constexpr auto kRetryPeriod = std::chrono::seconds(2);
const std::vector<std::string> kSystemNodes = {"ic-sys-0", "ic-sys-1"};
constexpr char kWorkNode[] = "ic-work-0";

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<std::string> Words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

CommandResult Helm(std::vector<std::string> args) {
  args.insert(args.begin(), {"helm", "--kubeconfig", ControlPlane::Get().kubeconfig()});
  return RunCommand(args);
}

class InCluster : public IntegrationTest {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(kPodNetwork);
    std::vector<RealNodeSpec> nodes;
    for (const auto& n : kSystemNodes) nodes.push_back({n, 0, "2Gi", {{"pool", "ic-system"}}});
    nodes.push_back({kWorkNode, 0, "2Gi", {{"pool", "ic-work"}}});
    RealNodes::Start(nodes);
    ImportImage();
  }

  // The image, built from the Dockerfile's content (cached), into every node's containerd.
  static void ImportImage() {
    CommandResult image = RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/build-image.sh"});
    ASSERT_EQ(image.exit_code, 0) << image.err;
    CommandResult imported = RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "import",
                                         ControlPlane::Get().dir(), Trim(image.out)});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }

  static void TearDownTestSuite() { Helm({"uninstall", kRelease, "-n", kNs, "--ignore-not-found", "--wait"}); }

  // helm upgrade --install with the local image (never pulled) on the system nodes; --wait: both
  // Pods Ready. The webhook, not the admission policies, unless `args` say otherwise: these
  // tests are about what goes through Services.
  void Install(std::vector<std::string> args = {}) {
    std::vector<std::string> argv = {"upgrade",      "--install",   kRelease,  kChart, "-n", kNs, "--create-namespace",
                                     "--set",        "image.pullPolicy=Never", "--set", "nodeSelector.pool=ic-system",
                                     "--set",        "admissionPolicies=false", "--wait", "--timeout", "5m"};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = Helm(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out << Describe();
  }

  // Installs once for the tests that need a running release.
  void EnsureInstalled() {
    if (cp().Kubectl({"get", "deploy", kFull, "-n", kNs}).exit_code != 0) Install();
    ASSERT_TRUE(Eventually([&] { return ReadyPods().size() == 2; }, std::chrono::seconds(180))) << Describe();
  }

  // berth's Pods (not being deleted) that are Ready, by name.
  std::vector<std::string> ReadyPods() {
    // One line a Pod: NAME TYPE=STATUS,... [DELETION-TIMESTAMP]
    CommandResult r = cp().Kubectl({"get", "pods", "-n", kNs, "-l", "app.kubernetes.io/instance=berth", "-o",
                                    "jsonpath={range .items[*]}{.metadata.name} {range .status.conditions[*]}{.type}={.status},"
                                    "{end} {.metadata.deletionTimestamp}{\"\\n\"}{end}"});
    std::vector<std::string> out;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      auto w = Words(line);
      if (w.size() == 2 && ("," + w[1]).find(",Ready=True,") != std::string::npos) out.push_back(w[0]);
    }
    return out;
  }

  // The Pods labelled berth.dev/leader=true (the queue API's Service selects them).
  std::vector<std::string> LabelledLeaders() {
    return Words(cp().Kubectl({"get", "pods", "-n", kNs, "-l", "app.kubernetes.io/instance=berth,berth.dev/leader=true",
                               "-o", "jsonpath={.items[*].metadata.name}"}).out);
  }

  // kubectl berth queue as a user runs it (through the API server to the queue API's Service).
  CommandResult PluginQueue() {
    std::string plugin = BERTH_CONTROLLER_BIN;
    plugin = plugin.substr(0, plugin.rfind("/src/controller/")) + "/src/cli/kubectl-berth";
    return RunCommand({plugin, "--kubeconfig", cp().kubeconfig(), "-n", ns_, "queue"});
  }

  // The Pod holding the Lease ("" when none).
  std::string Leader() {
    std::string holder =
        Trim(cp().Kubectl({"get", "lease", kFull, "-n", kNs, "-o", "jsonpath={.spec.holderIdentity}"}).out);
    return holder.substr(0, holder.find('_'));
  }

  std::string NodeOf(const std::string& pod) {
    return Trim(cp().Kubectl({"get", "pod", pod, "-n", kNs, "-o", "jsonpath={.spec.nodeName}"}).out);
  }

  std::string Describe() {
    return "\n" + cp().Kubectl({"get", "pods,lease", "-n", kNs, "-o", "wide"}).out +
           cp().Kubectl({"get", "events", "-n", kNs, "--sort-by=.lastTimestamp"}).out;
  }

  std::string Phase(const std::string& run) {
    const json::Value* p = json::Find(GetRun(run), {"status", "phase"});
    return p != nullptr && p->IsString() ? p->GetString() : "";
  }

  // A fleet of the work node (2 blocks) for this test.
  std::string WorkFleet() {
    const std::string name = "ic-" + ns_;
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " +
                                                             name + "}\nspec:\n  nodeSelector: {pool: ic-work}\n  blocks: 2\n");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    fleets_.push_back(name);
    return name;
  }

  void TearDown() override {
    for (const auto& f : fleets_) cp().Kubectl({"delete", "fleet", f});
    IntegrationTest::TearDown();
  }

  std::string RunYaml(const std::string& name, const std::string& command = "sleep 1", int priority = 50) {
    return "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + ", labels: {ic: \"1\"}}\nspec:\n"
           "  priority: " + std::to_string(priority) + "\n  retry: {onEvents: [no-capacity], duration: 10m}\n"
           "  template:\n    spec:\n      containers: [{name: main, image: busybox:1.35, command: [sh, -c, \"" +
           command + "\"]}]\n";
  }

  // Waits for a new leader other than `old`; returns how long it took.
  std::chrono::milliseconds AwaitNewLeader(const std::string& old, Clock::time_point since) {
    std::string now;
    EXPECT_TRUE(Eventually([&] {
      now = Leader();
      return !now.empty() && now != old;
    }, std::chrono::seconds(90))) << "the Lease is still held by " << now << Describe();
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since);
  }

  std::vector<std::string> fleets_;
};

// helm install: two Ready Pods on the system nodes, one holds the Lease, and the leader (in its
// Pod, with its service account's credentials) schedules a Run onto the work node; the API server
// calls the webhook through its Service; kubectl berth queue answers from the controller through
// the API server's service proxy.
TEST_F(InCluster, InstalledByHelmTheLeaderPodSchedulesAndTheServicesAnswer) {
  EnsureInstalled();
  std::vector<std::string> pods = ReadyPods();
  ASSERT_EQ(pods.size(), 2u) << Describe();
  for (const auto& p : pods) {
    std::string node = NodeOf(p);
    EXPECT_NE(std::find(kSystemNodes.begin(), kSystemNodes.end(), node), kSystemNodes.end()) << p << " is on " << node;
  }
  std::string leader;
  ASSERT_TRUE(Eventually([&] {
    leader = Leader();
    return std::find(pods.begin(), pods.end(), leader) != pods.end();
  }, std::chrono::seconds(60))) << "Lease holder: " << leader << Describe();
  // In-cluster credentials: the Pod talks to the `kubernetes` Service (10.0.0.1) with its token.
  CommandResult log = cp().Kubectl({"logs", leader, "-n", kNs});
  EXPECT_NE(log.out.find("server=https://10.0.0.1:443"), std::string::npos) << log.out;

  // A run, scheduled and run by the controller in the Pod (nothing else runs berth here).
  WorkFleet();
  Apply(RunYaml("hello", "echo hello-from-the-cluster"));
  ASSERT_TRUE(Eventually([&] { return Phase("hello") == "Succeeded"; }, std::chrono::seconds(90)))
      << Phase("hello") << Describe();
  EXPECT_EQ(Trim(Kubectl({"get", "pod", "hello-0", "-o", "jsonpath={.spec.nodeName}"}).out), kWorkNode);
  EXPECT_EQ(Trim(Kubectl({"logs", "hello-0"}).out), "hello-from-the-cluster");

  // The webhook through its Service: the finalizer at creation, a refusal above the cap.
  EXPECT_EQ(Trim(Kubectl({"get", "run", "hello", "-o", "jsonpath={.metadata.finalizers}"}).out),
            R"(["berth.dev/run-cleanup"])");
  ASSERT_EQ(cp().Kubectl({"label", "namespace", ns_, "berth.dev/max-priority=30"}).exit_code, 0);
  CommandResult refused;
  EXPECT_TRUE(Eventually([&] {
    refused = Kubectl({"apply", "-f", "-"}, RunYaml("high", "sleep 1", 90));
    if (refused.exit_code == 0) Kubectl({"delete", "run", "high", "--wait=false"});
    return refused.exit_code != 0;
  }, std::chrono::seconds(30)));
  EXPECT_NE(refused.err.find("admission webhook \"runs.berth.dev\" denied the request: spec.priority 90 is above 30"),
            std::string::npos)
      << refused.err;

  // kubectl berth queue, as a user runs it: through the API server's aggregation to the queue API's
  // Service, which selects the leader's Pod alone (labelled by the leader; the standby is not).
  std::vector<std::string> labelled;
  EXPECT_TRUE(Eventually([&] { return (labelled = LabelledLeaders()) == std::vector<std::string>{leader}; },
                         std::chrono::seconds(30)))
      << "labelled berth.dev/leader=true: " << ::testing::PrintToString(labelled) << ", leader " << leader;
  // What an admin checks after installing: the API server found the queue API's endpoint.
  std::string available;
  EXPECT_TRUE(Eventually([&] {
    available = Trim(cp().Kubectl({"get", "apiservice", "v1alpha1.queue.berth.dev", "-o",
                                   "jsonpath={.status.conditions[?(@.type==\"Available\")].status}"}).out);
    return available == "True";
  }, std::chrono::seconds(90))) << "APIService v1alpha1.queue.berth.dev Available=" << available << Describe();
  CommandResult queue = PluginQueue();
  EXPECT_EQ(queue.exit_code, 0) << queue.err;
  EXPECT_EQ(queue.err.find("note:"), std::string::npos) << "the queue came from the runs' status, not the controller:\n"
                                                          << queue.err;
}

// Deleting the leader's Pod: it releases the Lease on SIGTERM and the other replica leads at once;
// runs submitted around the hand-over are all placed, none twice.
TEST_F(InCluster, DeletingTheLeaderPodHandsOverWithoutLosingOrDoublingRuns) {
  EnsureInstalled();
  std::string old;
  ASSERT_TRUE(Eventually([&] { return !(old = Leader()).empty(); }, std::chrono::seconds(60))) << Describe();
  const std::string fleet = WorkFleet();
  InvariantSampler sampler(client(), ns_, fleet, {{kWorkNode, 2}});
  sampler.Start();
  for (int i = 0; i < 3; ++i) Apply(RunYaml("before-" + std::to_string(i)));
  const auto t0 = Clock::now();
  ASSERT_EQ(cp().Kubectl({"delete", "pod", old, "-n", kNs, "--wait=false"}).exit_code, 0);
  for (int i = 0; i < 3; ++i) Apply(RunYaml("during-" + std::to_string(i)));
  auto took = AwaitNewLeader(old, t0);
  EXPECT_LE(took, kLeaseDuration) << "a released Lease is taken within a retry period";
  for (int i = 0; i < 3; ++i) Apply(RunYaml("after-" + std::to_string(i)));
  // The queue API follows the Lease: the new leader labels its Pod and kubectl berth queue is
  // answered by it, not by the runs' status.
  const std::string now_leading = Leader();
  std::vector<std::string> labelled;
  EXPECT_TRUE(Eventually([&] { return (labelled = LabelledLeaders()) == std::vector<std::string>{now_leading}; },
                         std::chrono::seconds(60)))
      << "labelled berth.dev/leader=true: " << ::testing::PrintToString(labelled) << ", leader " << now_leading;
  CommandResult queue;
  EXPECT_TRUE(Eventually([&] {
    queue = PluginQueue();
    return queue.exit_code == 0 && queue.err.find("note:") == std::string::npos;
  }, std::chrono::seconds(60))) << "after the hand-over the queue came from the runs' status:\n" << queue.err;
  for (const char* group : {"before-", "during-", "after-"}) {
    for (int i = 0; i < 3; ++i) {
      const std::string run = group + std::to_string(i);
      EXPECT_TRUE(Eventually([&] { return Phase(run) == "Succeeded"; }, std::chrono::seconds(180)))
          << run << ": " << Phase(run) << Describe();
    }
  }
  sampler.Stop();
  sampler.CheckSettled("Succeeded");
  EXPECT_EQ(sampler.violations(), std::vector<std::string>{});
  EXPECT_GT(sampler.placed_samples(), 0);
  std::printf("leader Pod deleted: the other replica led after %lld ms\n", static_cast<long long>(took.count()));
}

// The leader's node stops (its kubelet, containerd and containers: the machine is gone). Nothing
// releases the Lease: the other replica takes it once it has not been renewed for the lease
// duration, and goes on with the queue.
TEST_F(InCluster, WhenTheLeadersNodeStopsTheOtherReplicaLeadsAfterTheLeaseDuration) {
  EnsureInstalled();
  std::string old;
  ASSERT_TRUE(Eventually([&] { return !(old = Leader()).empty(); }, std::chrono::seconds(60))) << Describe();
  const std::string node = NodeOf(old);
  const std::string fleet = WorkFleet();
  InvariantSampler sampler(client(), ns_, fleet, {{kWorkNode, 2}});
  sampler.Start();
  const auto t0 = Clock::now();
  RealNodes::StopNode(node);
  for (int i = 0; i < 3; ++i) Apply(RunYaml("orphaned-" + std::to_string(i)));
  auto took = AwaitNewLeader(old, t0);
  // The Lease can only be taken once it has not been renewed for its duration, then at the next
  // try: at most lease duration + retry period after the last renewal (plus the time this
  // machine takes to notice, when it is loaded).
  EXPECT_LE(took, kLeaseDuration + kRetryPeriod + std::chrono::seconds(15));
  for (int i = 0; i < 3; ++i) {
    const std::string run = "orphaned-" + std::to_string(i);
    EXPECT_TRUE(Eventually([&] { return Phase(run) == "Succeeded"; }, std::chrono::seconds(180)))
        << run << ": " << Phase(run) << Describe();
  }
  sampler.Stop();
  sampler.CheckSettled("Succeeded");
  EXPECT_EQ(sampler.violations(), std::vector<std::string>{});
  std::printf("leader's node %s stopped: the other replica led after %lld ms\n", node.c_str(),
              static_cast<long long>(took.count()));
  RealNodes::Start({{node, 0, "2Gi", {{"pool", "ic-system"}}}});
  ImportImage();
  // The stopped node's Pod is replaced on a Ready node; the release is whole again.
  EXPECT_TRUE(Eventually([&] { return ReadyPods().size() == 2; }, std::chrono::seconds(240))) << Describe();
}

// helm upgrade with a changed value rolls both Pods, keeps the webhook's certificate, and no Run
// create is refused meanwhile; helm rollback brings the old value back; helm uninstall leaves
// what docs/install.md says (the CRDs, the Runs, the namespace) and nothing else.
TEST_F(InCluster, UpgradeRollsWithoutRefusedCreatesRollbackAndUninstallLeaveOnlyTheDocumentedObjects) {
  EnsureInstalled();
  const std::string secret_before =
      cp().Kubectl({"get", "secret", std::string(kFull) + "-webhook-cert", "-n", kNs, "-o", "jsonpath={.data.tls\\.crt}"}).out;
  ASSERT_FALSE(secret_before.empty());
  const std::vector<std::string> pods_before = ReadyPods();
  // Creates from another thread for the whole roll.
  std::atomic<bool> creating{true};
  std::atomic<int> created{0}, refused{0};
  std::string last_refusal;
  std::thread creator([&] {
    for (int i = 0; creating; ++i) {
      CommandResult r = Kubectl({"apply", "-f", "-"}, RunYaml("roll-" + std::to_string(i), "true"));
      if (r.exit_code == 0) {
        ++created;
      } else {
        ++refused;
        last_refusal = r.err;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  Install({"--reuse-values", "--set", "logLevel=debug"});
  creating = false;
  creator.join();
  EXPECT_EQ(refused.load(), 0) << last_refusal;
  EXPECT_GT(created.load(), 0);
  std::vector<std::string> pods_after = ReadyPods();
  for (const auto& p : pods_after) {
    EXPECT_EQ(std::count(pods_before.begin(), pods_before.end(), p), 0) << p << " was not replaced by the upgrade";
  }
  EXPECT_EQ(cp().Kubectl({"get", "secret", std::string(kFull) + "-webhook-cert", "-n", kNs, "-o",
                          "jsonpath={.data.tls\\.crt}"}).out,
            secret_before)
      << "the upgrade changed the webhook's certificate";
  auto args = [&] {
    return cp().Kubectl({"get", "deploy", kFull, "-n", kNs, "-o", "jsonpath={.spec.template.spec.containers[0].args}"}).out;
  };
  EXPECT_NE(args().find("--log-level=debug"), std::string::npos);

  // helm rollback to the revision before: the old value, rolled out the same way.
  CommandResult history = Helm({"history", kRelease, "-n", kNs, "-o", "json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  auto revisions = json::Parse(history.out);
  ASSERT_TRUE(revisions.ok() && revisions->IsArray() && revisions->Size() >= 2) << history.out;
  const int previous = json::GetInt((*revisions)[revisions->Size() - 2], "revision");
  CommandResult rollback = Helm({"rollback", kRelease, std::to_string(previous), "-n", kNs, "--wait", "--timeout", "5m"});
  ASSERT_EQ(rollback.exit_code, 0) << rollback.err << rollback.out;
  EXPECT_EQ(args().find("--log-level=debug"), std::string::npos);
  EXPECT_TRUE(Eventually([&] { return ReadyPods().size() == 2; }, std::chrono::seconds(180))) << Describe();

  // helm uninstall: the release's objects go (the Pods with their ReplicaSet, by the garbage
  // collector); the CRDs, the Runs and the namespace stay.
  CommandResult uninstall = Helm({"uninstall", kRelease, "-n", kNs, "--wait", "--timeout", "5m"});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall.err;
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "all", "-n", kNs, "-o", "name"}).out.empty();
  }, std::chrono::seconds(120))) << cp().Kubectl({"get", "all", "-n", kNs}).out;
  for (const char* kind : {"secret", "serviceaccount", "role", "rolebinding", "networkpolicy"}) {
    EXPECT_EQ(cp().Kubectl({"get", kind, "-n", kNs, "-l", "app.kubernetes.io/instance=berth", "-o", "name"}).out, "")
        << kind << " left behind";
  }
  EXPECT_EQ(cp().Kubectl({"get", "mutatingwebhookconfiguration,clusterrole,clusterrolebinding", "-l",
                          "app.kubernetes.io/instance=berth", "-o", "name"}).out,
            "");
  EXPECT_EQ(cp().Kubectl({"get", "crd", "runs.berth.dev", "-o", "name"}).exit_code, 0);
  EXPECT_NE(Kubectl({"get", "runs", "-o", "name"}).out, "") << "the Runs went with the release";
  // Nothing runs berth now: the test's Runs keep their finalizer until it runs again.
  std::istringstream runs(Kubectl({"get", "runs", "-o", "name"}).out);
  for (std::string r; std::getline(runs, r);) {
    Kubectl({"patch", r, "--type", "merge", "-p", R"({"metadata":{"finalizers":null}})"});
  }
}

}  // namespace
}  // namespace berth::testing
