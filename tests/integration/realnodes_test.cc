// berth on real nodes: real kubelets (v1.37 by default, v1.35 in the compatibility group) with
// containerd 2 + runc run every Pod berth binds,
// admit or refuse it, stop it with its grace period and report its real exit code
// (hack/real-nodes.sh; kube-controller-manager runs beside them for node lifecycle).
// Each test asserts what a user would check with kubectl.

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "engine_fixture.h"
#include "k8s/json.h"
#include "real_nodes.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;

// Two 8-GPU machines in one zone (2 CPUs each: what this machine has), started once per binary.
const char* kNode0 = "rn-gpu-0";
const char* kNode1 = "rn-gpu-1";

class RealNodesTest : public EngineTest {
 protected:
  RealNodesTest() {
    finish_deleted_pods_ = false;  // the kubelets do it
  }
  // kubectl berth dashboard with the control plane's admin kubeconfig (it may read runs, Pods
  // and their logs), started by the first DashboardGet.
  std::unique_ptr<ControllerProcess> dashboard_;
  int dashboard_port_ = 0;
  static void SetUpTestSuite() {
    RealNodes::Start({{kNode0, 8, "4Gi", {{"pool", "rn-gpu"}, {"zone", "z1"}}},
                      {kNode1, 8, "4Gi", {{"pool", "rn-gpu"}, {"zone", "z1"}}}});
  }

  void TearDown() override {
    if (HasFailure()) {
      for (const char* n : {kNode0, kNode1}) {
        std::printf("---- kubelet log of %s (tail) ----\n%s\n", n, RealNodes::KubeletLog(n).c_str());
      }
      std::printf("---- pods ----\n%s\n", Kubectl({"get", "pods", "-o", "wide"}).out.c_str());
    }
    EngineTest::TearDown();
    // The next test starts on empty nodes: the kubelets have stopped every container of this one.
    EXPECT_TRUE(Eventually([&] {
      auto l = client()->List(kPods.Path(ns_));
      return l.ok() && l->items.empty();
    }, std::chrono::seconds(90))) << "pods of " << ns_ << " were not gone 90 s after the test";
  }

  // A fleet over real nodes: `hostname` empty selects both machines, else that one alone.
  void RealFleet(const std::string& name, const std::string& extra_spec, const std::string& hostname = {}) {
    std::string selector = hostname.empty() ? "{pool: rn-gpu}" : "{kubernetes.io/hostname: " + hostname + "}";
    std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName(name) +
                       "}\nspec:\n  nodeSelector: " + selector + "\n" + extra_spec;
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    created_fleets_.push_back(FleetName(name));
    // A run the controller sees before its fleet fails Unschedulable ("no Fleet exists"), as a
    // user's would: the tests' runs come after the controller has the fleet.
    WaitForFleet(name, hostname.empty() ? 2 : 1);
  }

  // A run whose container runs `script` in busybox's sh on a real node.
  void ShellRun(const std::string& name, const std::string& extra_spec, const std::string& script,
                const std::string& pod_spec_extra = {}) {
    // `sleep` as the container's first process ignores SIGTERM: without a short grace period every
    // stopped Pod would take the default 30 s (tests about grace periods set their own).
    const std::string grace = pod_spec_extra.find("terminationGracePeriodSeconds") == std::string::npos
                                  ? "      terminationGracePeriodSeconds: 1\n"
                                  : "";
    std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n" + extra_spec +
                       "  template:\n    spec:\n" + grace + pod_spec_extra +
                       "      containers:\n      - name: main\n        image: " + RealNodes::kBusybox +
                       "\n        command: [sh, -c, " + json::Quote(script) + "]\n";
    Apply(yaml);
  }

  // Runs s0..s3 of 2 GPUs each whose Pod spec (after a 1 s grace period) is `pod_spec`.
  void FourRuns(const std::string& pod_spec) {
    for (int i = 0; i < 4; ++i) {
      Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: s" + std::to_string(i) +
            "}\nspec:\n  resources: {gpu: 2}\n  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n" + pod_spec);
    }
  }

  // Waits until the controller has seen Fleet FleetName(name) and written its `instances` instances:
  // a run applied before that may be judged against no fleet at all (Unschedulable).
  void WaitForFleet(const std::string& name, size_t instances) {
    ASSERT_TRUE(Eventually([&] {
      auto f = client()->Get(k8s::resources::kFleets.Path("", FleetName(name)));
      const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
      return list != nullptr && list->IsArray() && list->Size() == instances;
    }, std::chrono::seconds(60))) << "the controller never wrote the status of fleet " << FleetName(name);
  }

  // `kubectl-berth ARGS -n <test namespace>` (the plugin beside berth-controller in the build tree).
  CommandResult Berth(std::vector<std::string> args) {
    std::string bin = BERTH_CONTROLLER_BIN;
    const std::string suffix = "/src/controller/berth-controller";
    bin = bin.substr(0, bin.size() - suffix.size()) + "/src/cli/kubectl-berth";
    std::vector<std::string> argv = {"env", "KUBECONFIG=" + cp().kubeconfig(), bin};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"-n", ns_});
    return RunCommand(argv);
  }

  // GET of the dashboard's API at `path` (kubectl berth dashboard, the admin's kubeconfig: issue
  // 44); the parsed body, null when it is not JSON.
  json::Document DashboardGet(const std::string& path, int* code) {
    if (!dashboard_) {
      dashboard_port_ = FreePort();
      dashboard_ = ControllerProcess::LocalDashboard(cp().kubeconfig(), dashboard_port_, "dashboard-realnodes");
      EXPECT_TRUE(dashboard_->StartServing()) << dashboard_->Log();
    }
    CommandResult r = RunCommand({"curl", "-s", "-m", "30", "-w", "\n%{http_code}",
                                  ControllerProcess::LocalDashboardUrl(dashboard_port_) + path});
    auto nl = r.out.rfind('\n');
    *code = nl == std::string::npos ? 0 : std::atoi(r.out.c_str() + nl + 1);
    auto doc = json::Parse(r.out.substr(0, nl == std::string::npos ? 0 : nl));
    EXPECT_TRUE(doc.ok()) << path << ": " << r.out << r.err;
    return doc.ok() ? std::move(*doc) : json::Document();
  }
  // Each rank's lines in a dashboard logs answer, by rank ("error: ..." for a rank that could not be read).
  std::map<int64_t, std::vector<std::string>> RankLines(const json::Value& logs) {
    std::map<int64_t, std::vector<std::string>> out;
    const json::Value* ranks = json::Find(logs, {"ranks"});
    if (ranks == nullptr || !ranks->IsArray()) return out;
    for (const auto& r : ranks->GetArray()) {
      auto& lines = out[json::GetInt(r, "rank")];
      const json::Value* l = json::Find(r, {"lines"});
      if (l == nullptr || !l->IsArray()) {
        lines.push_back("error: " + json::GetString(r, "error"));
        continue;
      }
      for (const auto& line : l->GetArray()) lines.push_back(line.IsString() ? line.GetString() : "?");
    }
    return out;
  }

  std::string Logs(const std::string& pod) {
    CommandResult r = Kubectl({"logs", pod});
    return r.exit_code == 0 ? r.out : "";
  }

  // Pods of the namespace (`ns`, default the test's) the kubelet refused at admission (phase
  // Failed with an OutOf*/affinity reason).
  std::vector<std::string> RefusedPods(const std::string& ns = {}) {
    std::vector<std::string> out;
    auto l = client()->List(kPods.Path(ns.empty() ? ns_ : ns));
    if (!l.ok()) return out;
    for (auto& p : l->items) {
      std::string reason = json::GetString(json::Find(p, {"status", "reason"}));
      if (reason.rfind("OutOf", 0) == 0 || reason == "NodeAffinity" || reason == "UnexpectedAdmissionError") {
        out.push_back(json::GetString(json::Find(p, {"metadata", "name"})) + ": " + reason + " " +
                      json::GetString(json::Find(p, {"status", "message"})));
      }
    }
    return out;
  }

  std::string PodPhase(const std::string& pod) {
    auto d = client()->Get(kPods.Path(ns_, pod));
    return d.ok() ? json::GetString(json::Find(*d, {"status", "phase"})) : "";
  }
  bool PodExists(const std::string& pod) { return client()->Get(kPods.Path(ns_, pod)).ok(); }
  // The status of a Node's Ready condition ("True", "False", "Unknown"; "" when unreadable).
  std::string NodeReady(const std::string& node) {
    auto n = client()->Get(k8s::resources::kNodes.Path("", node));
    const json::Value* conds = n.ok() ? json::Find(*n, {"status", "conditions"}) : nullptr;
    if (conds == nullptr || !conds->IsArray()) return "";
    for (auto& c : conds->GetArray()) {
      if (json::GetString(c, "type") == "Ready") return json::GetString(c, "status");
    }
    return "";
  }
};

// The API server and every node run the Kubernetes the project's scripts built for this run
// (hack/build-kube.sh: 1.37 by default, 1.35 with BERTH_KUBE_VERSION=1.35): what `kubectl version`
// and `kubectl get nodes` show a user.
TEST_F(RealNodesTest, ServerAndNodesRunTheKubernetesVersionOfThisRun) {
  CommandResult bin = RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/build-kube.sh", "--bin"});
  ASSERT_EQ(bin.exit_code, 0) << bin.err;
  // ~/.cache/berth/kubernetes-1.37.2/bin -> v1.37.2
  std::string dir = bin.out.substr(0, bin.out.find("/bin\n"));
  std::string want = "v" + dir.substr(dir.rfind("kubernetes-") + std::string("kubernetes-").size());
  const char* minor = std::getenv("BERTH_KUBE_VERSION");
  EXPECT_EQ(want.rfind("v" + std::string(minor != nullptr ? minor : "1.37") + ".", 0), 0u) << want;
  CommandResult version = cp().Kubectl({"version", "-o", "json"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  auto v = json::Parse(version.out);
  ASSERT_TRUE(v.ok()) << version.out;
  EXPECT_EQ(json::GetString(json::Find(*v, {"serverVersion", "gitVersion"})), want) << version.out;
  EXPECT_EQ(json::GetString(json::Find(*v, {"clientVersion", "gitVersion"})), want) << version.out;
  for (const char* n : {kNode0, kNode1}) {
    CommandResult kubelet = cp().Kubectl({"get", "node", n, "-o", "jsonpath={.status.nodeInfo.kubeletVersion}"});
    EXPECT_EQ(kubelet.out, want) << n << ": " << kubelet.err;
  }
  std::printf("Kubernetes of this run: server %s, nodes %s\n", want.c_str(), want.c_str());
}

// A single-node run's container runs on a real node; its exit code decides the run and its log is
// readable with kubectl logs.
TEST_F(RealNodesTest, ExitCodeDecidesTheRunAndLogsAreReadable) {
  RealFleet("gpu", "  blocks: auto\n");
  ShellRun("ok", "  resources: {gpu: 1}\n", "echo hello from rank $BERTH_NODE_RANK of $BERTH_NODES_NUM; exit 0");
  ShellRun("bad", "  resources: {gpu: 1}\n", "echo about to fail; exit 3");
  ShellRun("flaky", "  resources: {gpu: 1}\n  retry: {onEvents: [error], duration: 10m}\n", "echo attempt; exit 4");

  ASSERT_TRUE(WaitPhase("ok", "Succeeded", std::chrono::seconds(90))) << Phase("ok") << " " << Message("ok");
  EXPECT_NE(Logs("ok-0").find("hello from rank 0 of 1"), std::string::npos) << Logs("ok-0");

  ASSERT_TRUE(WaitPhase("bad", "Failed", std::chrono::seconds(90))) << Phase("bad");
  EXPECT_EQ(Reason("bad"), "PodFailed");
  EXPECT_NE(Logs("bad-0").find("about to fail"), std::string::npos);
  auto bad = client()->Get(kPods.Path(ns_, "bad-0"));
  ASSERT_TRUE(bad.ok());
  const json::Value* term = json::Find(*bad, {"status", "containerStatuses"});
  ASSERT_TRUE(term != nullptr && term->IsArray() && term->Size() == 1);
  const json::Value* terminated = json::Find((*term)[0], {"state", "terminated"});
  ASSERT_NE(terminated, nullptr);
  EXPECT_EQ(json::GetInt(*terminated, "exitCode"), 3);

  // Under retry on `error` a failing container sends the run back to the queue: a new attempt runs.
  EXPECT_TRUE(Eventually([&] { return StatusInt("flaky", "resubmissions") >= 1; }, std::chrono::seconds(90)))
      << Phase("flaky") << " " << Message("flaky");
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
}

// A 2-node run on a cluster fleet: each rank's container sees its rank and the master address, the
// ranks run on two different machines, each with the whole machine.
TEST_F(RealNodesTest, TwoNodeRunGetsTwoWholeMachines) {
  RealFleet("gpu", "  blocks: auto\n  placement: cluster\n  topologyKey: zone\n");
  ShellRun("gang", "  nodes: 2\n  resources: {gpu: 8}\n",
           "echo rank=$BERTH_NODE_RANK of $BERTH_NODES_NUM master=$BERTH_MASTER_NODE_ADDR gpus=$BERTH_GPUS_PER_NODE; sleep 2; "
           "echo; echo done $BERTH_NODE_RANK");
  std::string master = "gang-0.gang." + ns_ + ".svc";
  // kubectl berth logs -f while it runs: every rank's lines, prefixed, until both containers ended.
  ASSERT_TRUE(WaitPhase("gang", "Running", std::chrono::seconds(90))) << Phase("gang") << " " << Message("gang");
  CommandResult follow = Berth({"logs", "gang", "-f"});
  EXPECT_EQ(follow.exit_code, 0) << follow.err;
  for (const std::string rank : {"0", "1"}) {
    EXPECT_NE(follow.out.find("[rank " + rank + "] rank=" + rank + " of 2 master=" + master + " gpus=8\n"), std::string::npos)
        << follow.out;
    EXPECT_NE(follow.out.find("[rank " + rank + "] \n"), std::string::npos) << follow.out;  // the empty line
    EXPECT_NE(follow.out.find("[rank " + rank + "] done " + rank + "\n"), std::string::npos) << follow.out;
  }
  ASSERT_TRUE(WaitPhase("gang", "Succeeded", std::chrono::seconds(90))) << Phase("gang") << " " << Message("gang");
  // Without -f: rank 0's lines, then rank 1's; --rank 1: rank 1 alone.
  CommandResult all = Berth({"logs", "gang"});
  EXPECT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "[rank 0] rank=0 of 2 master=" + master + " gpus=8\n[rank 0] \n[rank 0] done 0\n" +
                         "[rank 1] rank=1 of 2 master=" + master + " gpus=8\n[rank 1] \n[rank 1] done 1\n");
  CommandResult one = Berth({"logs", "gang", "--rank", "1"});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "[rank 1] rank=1 of 2 master=" + master + " gpus=8\n[rank 1] \n[rank 1] done 1\n");
  CommandResult bad = Berth({"logs", "gang", "--rank", "2"});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "error: run \"gang\" has 2 ranks (0 to 1): --rank 2 is out of range\n");
  // The dashboard's logs of the run (read with its user's kubeconfig): each rank's real output, and
  // ?rank=1 rank 1's alone.
  auto rank_lines = [&](const std::string& rank) {
    return std::vector<std::string>{"rank=" + rank + " of 2 master=" + master + " gpus=8", "", "done " + rank};
  };
  int code = 0;
  json::Document logs = DashboardGet("api/runs/" + ns_ + "/gang/logs", &code);
  EXPECT_EQ(code, 200) << json::Serialize(logs);
  EXPECT_EQ(RankLines(logs), (std::map<int64_t, std::vector<std::string>>{{0, rank_lines("0")}, {1, rank_lines("1")}}))
      << json::Serialize(logs);
  json::Document rank1 = DashboardGet("api/runs/" + ns_ + "/gang/logs?rank=1", &code);
  EXPECT_EQ(code, 200) << json::Serialize(rank1);
  EXPECT_EQ(RankLines(rank1), (std::map<int64_t, std::vector<std::string>>{{1, rank_lines("1")}})) << json::Serialize(rank1);
  EXPECT_NE(Logs("gang-0").find("rank=0 of 2 master=" + master + " gpus=8"), std::string::npos) << Logs("gang-0");
  EXPECT_NE(Logs("gang-1").find("rank=1 of 2 master=" + master + " gpus=8"), std::string::npos) << Logs("gang-1");
  auto p0 = client()->Get(kPods.Path(ns_, "gang-0"));
  auto p1 = client()->Get(kPods.Path(ns_, "gang-1"));
  ASSERT_TRUE(p0.ok() && p1.ok());
  std::string n0 = json::GetString(json::Find(*p0, {"spec", "nodeName"}));
  std::string n1 = json::GetString(json::Find(*p1, {"spec", "nodeName"}));
  EXPECT_NE(n0, n1);
  EXPECT_TRUE((n0 == kNode0 || n0 == kNode1) && (n1 == kNode0 || n1 == kNode1)) << n0 << " " << n1;
  for (auto* p : {&*p0, &*p1}) {
    const json::Value* c = json::Find(*p, {"spec", "containers"});
    ASSERT_TRUE(c != nullptr && c->IsArray());
    const json::Value* requests = json::Find((*c)[0], {"resources", "requests"});
    ASSERT_NE(requests, nullptr);
    EXPECT_EQ(json::GetString(*requests, "nvidia.com/gpu"), "8");
  }
}

// Blocks on a real machine: four 2-GPU runs share one 8-GPU node, the kubelet admits every Pod,
// and a fifth run waits.
TEST_F(RealNodesTest, FourRunsShareOneMachineAndTheKubeletAdmitsEveryPod) {
  RealFleet("one", "  blocks: 4\n", kNode0);  // 2 GPUs and 500m CPU a block (auto: min(CPUs, GPUs) = 2)
  for (int i = 0; i < 5; ++i) {
    ShellRun("r" + std::to_string(i), "  resources: {gpu: 2}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n",
             "sleep 3600");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // distinct creation times: FIFO order r0..r4
  }
  ASSERT_TRUE(Eventually([&] { return CountPhase("Running") == 4; }, std::chrono::seconds(90)))
      << "running: " << CountPhase("Running") << "\n" << Kubectl({"get", "runs"}).out;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(PodPhase("r" + std::to_string(i) + "-0"), "Running");
  EXPECT_EQ(Phase("r4"), "Pending");
  EXPECT_TRUE(PodsOf("r4").empty());
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
}

// Deleting a run stops its containers, and its blocks go to the next run only once the kubelet
// reports its container stopped: the container ignores SIGTERM and holds the machine for its
// grace period, and the waiting run's Pod is admitted, not refused.
TEST_F(RealNodesTest, DeletedRunFreesItsBlocksOnlyWhenItsContainerHasStopped) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  // The marker finds the container's shell among the machine's processes.
  const std::string marker = "stubborn-marker-" + ns_;
  ShellRun("stubborn", "  resources: {gpu: 8}\n",
           "trap '' TERM; echo started; while true; do sleep 1; done; : " + marker,
           "      terminationGracePeriodSeconds: 8\n");
  ASSERT_TRUE(WaitPhase("stubborn", "Running", std::chrono::seconds(90))) << Message("stubborn");
  auto container_runs = [&] { return RunCommand({"pgrep", "-f", marker}).exit_code == 0; };
  ASSERT_TRUE(Eventually(container_runs, std::chrono::seconds(30)));
  ShellRun("next", "  resources: {gpu: 8}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "echo next; sleep 3600");
  ASSERT_TRUE(Eventually([&] { return Phase("next") == "Pending" && !Message("next").empty(); }));

  ASSERT_EQ(Kubectl({"delete", "run", "stubborn", "--wait=false"}).exit_code, 0);
  // Until the old container has stopped, the waiting run has no Pod bound to the machine.
  bool old_stopped = false, overlap = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline) {
    auto next = PodsOf("next");
    bool next_bound = false;
    for (auto& [name, p] : next) next_bound |= !json::GetString(json::Find(p, {"spec", "nodeName"})).empty();
    bool old_active = container_runs();  // after reading `next`: a bound Pod seen here was bound while it ran
    if (old_active && next_bound) overlap = true;
    if (!old_active) old_stopped = true;
    if (old_stopped && Phase("next") == "Running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(old_stopped);
  EXPECT_FALSE(overlap) << "next was bound while stubborn-0's container still ran on the machine";
  EXPECT_EQ(Phase("next"), "Running") << Message("next");
  EXPECT_EQ(PodPhase("next-0"), "Running");
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
}

// What watching a one-slot machine saw: the old run's container stopped, and whether the next run
// was ever bound while it still ran.
struct OverlapWatch {
  bool old_stopped = false, overlap = false;
};

// Issue 44 item 9: a run without resources on a one-slot machine is deleted while its container
// takes 6 s to stop (it traps SIGTERM). Before, once the Run was gone (its finalizer removed by
// berth right after it asked the Pod to stop, or by the tenant) its Pod was an ordinary one whose
// requests left a block of nothing, and the next run was Running beside it 3 s later. Now a
// block is free only when the Pods that held it are gone, whatever became of their Run: with the
// finalizer kept (berth's deletion) and with the finalizer removed by the tenant before the delete
// (nothing in berth sees the Run go; the Pod is deleted as the garbage collector would).
TEST_F(RealNodesTest, ADeletedRunsStoppingPodKeepsItsBlockWhateverBecameOfTheRun) {
  RealFleet("slot", "  blocks: 1\n", kNode0);
  for (const bool tenant_removes_finalizer : {false, true}) {
    SCOPED_TRACE(tenant_removes_finalizer ? "finalizer removed by the tenant" : "finalizer kept");
    const std::string old = tenant_removes_finalizer ? "old-b" : "old-a";
    const std::string next = tenant_removes_finalizer ? "next-b" : "next-a";
    const std::string marker = old + "-marker-" + ns_;
    ShellRun(old, "", "trap 'sleep 6; exit 0' TERM; echo started; while true; do sleep 1; done; : " + marker,
             "      terminationGracePeriodSeconds: 30\n");
    ASSERT_TRUE(WaitPhase(old, "Running", std::chrono::seconds(90))) << Message(old);
    auto container_runs = [&] { return RunCommand({"pgrep", "-f", marker}).exit_code == 0; };
    ASSERT_TRUE(Eventually(container_runs, std::chrono::seconds(30)));
    ShellRun(next, "  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "echo next; sleep 3600");
    ASSERT_TRUE(Eventually([&] { return Phase(next) == "Pending" && !Message(next).empty(); })) << Phase(next);

    if (tenant_removes_finalizer) {
      CommandResult r = Kubectl({"patch", "run", old, "--type=json", "-p", R"([{"op":"remove","path":"/metadata/finalizers"}])"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ASSERT_EQ(Kubectl({"delete", "run", old, "--wait=true", "--timeout=30s"}).exit_code, 0);
      ASSERT_TRUE(container_runs()) << "the Pod of the vanished Run still runs";
      ASSERT_EQ(Kubectl({"delete", "pod", old + "-0", "--wait=false"}).exit_code, 0);
    } else {
      ASSERT_EQ(Kubectl({"delete", "run", old, "--wait=false"}).exit_code, 0);
    }
    OverlapWatch w;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (std::chrono::steady_clock::now() < deadline) {
      bool next_bound = false;
      for (auto& [name, p] : PodsOf(next)) next_bound |= !json::GetString(json::Find(p, {"spec", "nodeName"})).empty();
      const bool old_active = container_runs();  // after reading `next`: a bound Pod seen was bound while it ran
      if (old_active && next_bound) w.overlap = true;
      if (!old_active) w.old_stopped = true;
      if (w.old_stopped && Phase(next) == "Running") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(w.old_stopped);
    EXPECT_FALSE(w.overlap) << next << " was bound while " << old << "-0's container still ran on the machine";
    EXPECT_EQ(Phase(next), "Running") << Message(next);
    EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
    ASSERT_EQ(Kubectl({"delete", "run", next, "--wait=true", "--timeout=60s"}).exit_code, 0);
    ASSERT_TRUE(Eventually([&] { return !PodExists(next + "-0"); }, std::chrono::seconds(60)));
  }
}

// Issue 44 item 1: a container that ignores SIGTERM, with terminationGracePeriodSeconds of a year,
// on a fleet whose maxGracePeriod is 3s. Before, its Pod kept its year: after spec.stop the run's
// blocks stayed held and the next run waited for a year. Now the Pod is created with the fleet's
// 3 s, is deleted with at most that, and is gone within a bounded wait; the next run then runs.
TEST_F(RealNodesTest, AYearOfGracePeriodIsCappedByTheFleetsMaxGracePeriod) {
  RealFleet("grace", "  blocks: 1\n  maxGracePeriod: 3s\n", kNode0);
  const std::string marker = "year-marker-" + ns_;
  ShellRun("year", "  resources: {gpu: 8}\n", "trap '' TERM; echo started; while true; do sleep 1; done; : " + marker,
           "      terminationGracePeriodSeconds: 31536000\n");
  ASSERT_TRUE(WaitPhase("year", "Running", std::chrono::seconds(90))) << Message("year");
  auto pod = client()->Get(kPods.Path(ns_, "year-0"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  const json::Value* spec = json::Find(*pod, {"spec"});
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(json::GetInt(*spec, "terminationGracePeriodSeconds"), 3) << "the created Pod shows the fleet's cap";
  auto container_runs = [&] { return RunCommand({"pgrep", "-f", marker}).exit_code == 0; };
  ASSERT_TRUE(Eventually(container_runs, std::chrono::seconds(30)));
  ShellRun("after", "  resources: {gpu: 8}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "echo after; sleep 3600");
  ASSERT_TRUE(Eventually([&] { return Phase("after") == "Pending" && !Message("after").empty(); })) << Phase("after");

  CommandResult r = Kubectl({"patch", "run", "year", "--type=merge", "-p", R"({"spec":{"stop":true}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("year", "Failed", std::chrono::seconds(30))) << Phase("year");
  EXPECT_EQ(Reason("year"), "Stopped");
  // The kubelet kills what ignored SIGTERM once the capped grace period is over: the Pod is gone
  // and its blocks go to the next run (bounded waits: a busy machine takes longer, never a year).
  EXPECT_TRUE(Eventually([&] { return !container_runs() && !PodExists("year-0"); }, std::chrono::seconds(60)))
      << "year-0: " << PodPhase("year-0");
  EXPECT_TRUE(WaitPhase("after", "Running", std::chrono::seconds(60))) << Phase("after") << " " << Message("after");
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
}

// Issue 17: on a full machine of a fleet with preemption, a priority-90 run preempts the
// priority-10 run: the victim's container gets SIGTERM (its trap starts a process the test sees),
// the victim goes back to the queue keeping its place (its submission time; first in the queue),
// and the preemptor's Pod runs on the machine once the victim's container has stopped (the
// kubelet refuses nothing).
TEST_F(RealNodesTest, HigherPriorityRunPreemptsAndTheVictimsContainerGetsSigterm) {
  RealFleet("pre", "  blocks: 1\n  preemption: {policy: LowerPriority, minRuntime: 1s}\n", kNode0);
  // The trap's process carries "term-seen-<ns>", which the container's own command line does not
  // (it is put together by the shell only when the trap runs).
  const std::string seen = "term-seen-" + ns_;
  ShellRun("low", "  priority: 10\n  resources: {gpu: 8}\n  retry: {onEvents: [interruption], duration: \"off\"}\n",
           "m=term-; trap 'sh -c \"sleep 5; : ${m}seen-" + ns_ + "\"; exit 0' TERM; echo started; while true; do sleep 1; done",
           "      terminationGracePeriodSeconds: 10\n");
  ASSERT_TRUE(WaitPhase("low", "Running", std::chrono::seconds(90))) << Message("low");
  const std::string submitted = json::GetString(json::Find(RunDoc("low"), {"status", "submittedAt"}));
  ASSERT_FALSE(submitted.empty());
  auto got_term = [&] { return RunCommand({"pgrep", "-f", seen}).exit_code == 0; };
  ASSERT_FALSE(got_term());

  ShellRun("high", "  priority: 90\n  resources: {gpu: 8}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n",
           "echo high; sleep 3600");
  // While the victim's container stops (its trap takes 5 s), the preemptor says whom it preempts
  // and keeps the machine (status.preemption).
  ASSERT_TRUE(Eventually([&] { return Reason("high") == "Preempting"; })) << Phase("high") << ": " << Message("high");
  EXPECT_NE(Message("high").find(ns_ + "/low"), std::string::npos) << Message("high");
  json::Document doc = RunDoc("high");
  const json::Value* record = json::Find(doc, {"status", "preemption"});
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(json::GetString(*record, "fleet"), FleetName("pre"));
  ASSERT_TRUE(json::Find(*record, {"victims"}) != nullptr && (*record)["victims"].IsArray());
  ASSERT_EQ((*record)["victims"].Size(), 1u);
  EXPECT_EQ(std::string((*record)["victims"][0].GetString()), ns_ + "/low");
  EXPECT_TRUE(Eventually(got_term, std::chrono::seconds(30))) << "low's container never got SIGTERM; " << Message("high");
  ASSERT_TRUE(Eventually([&] { return Reason("low") == "Preempted"; })) << Phase("low") << ": " << Message("low");
  EXPECT_EQ(Phase("low"), "Pending");
  CommandResult events = Kubectl({"get", "events", "--field-selector", "involvedObject.name=low,reason=Retrying", "-o",
                                   "jsonpath={.items[*].message}"});
  EXPECT_NE(events.out.find("preempted by " + ns_ + "/high (priority 90)"), std::string::npos) << events.out << events.err;
  ASSERT_TRUE(WaitPhase("high", "Running", std::chrono::seconds(90))) << Message("high");
  EXPECT_EQ(PlacementNodes("high"), std::vector<std::string>{kNode0});
  EXPECT_EQ(PodPhase("high-0"), "Running");
  // Its place is kept: the same submission time, first in the queue; and it waits (a run of lower
  // priority never preempts back).
  EXPECT_EQ(json::GetString(json::Find(RunDoc("low"), {"status", "submittedAt"})), submitted);
  EXPECT_TRUE(Eventually([&] { return StatusInt("low", "queuePosition") == 1; })) << Message("low");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(Phase("low"), "Pending");
  EXPECT_EQ(Phase("high"), "Running");
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
}

// Issue 17: a gang of two preempts whole machines: every run on both (two on one machine, one
// on the other) is evicted, the gang's Pods run on both machines once the kubelets have stopped
// the victims' containers, and no kubelet refuses a Pod.
TEST_F(RealNodesTest, GangPreemptsWholeMachines) {
  RealFleet("gp", "  blocks: 2\n  placement: cluster\n  topologyKey: zone\n"
                  "  preemption: {policy: LowerPriority, minRuntime: 0s}\n");
  // Best fit: a on the first machine, b (a whole machine) on the second, c beside a.
  ShellRun("a", "  priority: 10\n  resources: {gpu: 4}\n", "echo a; while true; do sleep 1; done");
  ASSERT_TRUE(WaitPhase("a", "Running", std::chrono::seconds(90))) << Message("a");
  ShellRun("b", "  priority: 20\n  resources: {gpu: 8}\n", "echo b; while true; do sleep 1; done");
  ASSERT_TRUE(WaitPhase("b", "Running", std::chrono::seconds(90))) << Message("b");
  ShellRun("c", "  priority: 10\n  resources: {gpu: 4}\n", "echo c; while true; do sleep 1; done");
  ASSERT_TRUE(WaitPhase("c", "Running", std::chrono::seconds(90))) << Message("c");
  ASSERT_EQ(PlacementNodes("a"), PlacementNodes("c"));
  ASSERT_NE(PlacementNodes("a"), PlacementNodes("b"));

  ShellRun("hot", "  priority: 90\n  nodes: 2\n  resources: {gpu: 8}\n", "echo hot; sleep 3600");
  ASSERT_TRUE(WaitPhase("hot", "Running", std::chrono::seconds(90))) << Phase("hot") << ": " << Message("hot");
  auto nodes = PlacementNodes("hot");
  EXPECT_EQ(std::set<std::string>(nodes.begin(), nodes.end()), (std::set<std::string>{kNode0, kNode1}));
  for (const char* victim : {"a", "b", "c"}) {
    EXPECT_EQ(Phase(victim), "Failed") << victim;
    EXPECT_EQ(Reason(victim), "Preempted") << victim << ": " << Message(victim);
  }
  EXPECT_EQ(PodPhase("hot-0"), "Running");
  EXPECT_EQ(PodPhase("hot-1"), "Running");
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
}

// Issue 31 on real kubelets: team "owner" has both machines (16 GPUs) as its nominal share and
// runs nothing; team "borrower" (the test's namespace, no share) runs two whole-machine runs on
// that idle share. The owner's run (lower priority) takes one machine back: one borrower's run is
// Reclaimed and back in the queue, its Pod deleted and its container gone from the machine
// (no process of it left); the owner's Pod runs there, the kubelet refusing no Pod of either team.
TEST_F(RealNodesTest, ReclaimStopsTheBorrowersContainerAndTheOwnersPodIsAdmitted) {
  const std::string owner_ns = ns_ + "-owner";
  ASSERT_EQ(cp().Kubectl({"create", "namespace", owner_ns}).exit_code, 0);
  const std::string owner = "owner-" + ns_, borrower = "borrower-" + ns_;
  struct Cleanup {  // cluster-scoped Teams and the second namespace outlive the test otherwise
    std::string owner_ns, owner, borrower;
    ~Cleanup() {
      ControlPlane& cp = ControlPlane::Get();
      cp.Kubectl({"delete", "team", owner, borrower, "--ignore-not-found", "--wait=false"});
      cp.Kubectl({"-n", owner_ns, "delete", "runs", "--all", "--wait=false"});
      EXPECT_TRUE(Eventually([&] {
        auto l = cp.client()->List(kPods.Path(owner_ns));
        return l.ok() && l->items.empty();
      }, std::chrono::seconds(90))) << "pods of " << owner_ns << " were not gone 90 s after the test";
      cp.Kubectl({"delete", "namespace", owner_ns, "--wait=false"});
    }
  } cleanup{owner_ns, owner, borrower};
  RealFleet("rc", "  blocks: 1\n  preemption: {minRuntime: 0s}\n");
  CommandResult r = cp().Kubectl(
      {"apply", "-f", "-"},
      "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + owner + "}\nspec:\n  namespaces: [" + owner_ns +
          "]\n  shares:\n  - fleet: " + FleetName("rc") + "\n    nominal: {gpu: 16}\n---\n"
          "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + borrower + "}\nspec:\n  namespaces: [" + ns_ + "]\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each borrower's shell carries "<run>-<ns>" in its command line: pgrep finds its container.
  auto alive = [&](const std::string& run) { return RunCommand({"pgrep", "-f", run + "-" + ns_}).exit_code == 0; };
  for (const std::string name : {"b1", "b2"}) {
    ShellRun(name, "  priority: 80\n  resources: {gpu: 8}\n  retry: {onEvents: [interruption], duration: \"off\"}\n",
             ": " + name + "-" + ns_ + "; echo borrowing; while true; do sleep 1; done");
    ASSERT_TRUE(WaitPhase(name, "Running", std::chrono::seconds(90))) << name << ": " << Message(name);
    EXPECT_TRUE(Eventually([&] { return alive(name); })) << name << "'s container is not running";
  }

  r = cp().Kubectl({"apply", "-f", "-"},
                   "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: mine, namespace: " + owner_ns +
                       "}\nspec:\n  priority: 10\n  resources: {gpu: 8}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n"
                       "  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
                       "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, 'echo mine; sleep 3600']\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto mine = [&](const char* field) {
    auto d = client()->Get(k8s::resources::kRuns.Path(owner_ns, "mine"));
    return d.ok() ? json::GetString(json::Find(*d, {"status", field})) : "";
  };
  ASSERT_TRUE(Eventually([&] { return mine("phase") == "Running"; }, std::chrono::seconds(120)))
      << mine("phase") << ": " << mine("message");
  auto pod = client()->Get(kPods.Path(owner_ns, "mine-0"));
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(json::GetString(json::Find(*pod, {"status", "phase"})), "Running");
  const std::string owner_node = json::GetString(json::Find(*pod, {"spec", "nodeName"}));

  // Exactly one borrower's run was reclaimed: back in the queue, no Pod, no process; the other runs.
  std::vector<std::string> reclaimed;
  for (const std::string name : {"b1", "b2"}) {
    if (Reason(name) != "Reclaimed") {
      EXPECT_EQ(Phase(name), "Running") << name << ": " << Message(name);
      EXPECT_TRUE(alive(name)) << name;
      EXPECT_NE(PlacementNodes(name), std::vector<std::string>{owner_node}) << name;
      continue;
    }
    reclaimed.push_back(name);
    EXPECT_EQ(Phase(name), "Pending") << name;
    std::string events;
    EXPECT_TRUE(Eventually([&] {
      events = Kubectl({"get", "events", "--field-selector", "involvedObject.name=" + name + ",reason=Retrying", "-o",
                        "jsonpath={.items[*].message}"}).out;
      // The owners' run is of another namespace: not named (issue 44).
      return events.find("reclaimed by team " + owner + " for a run of another namespace") != std::string::npos;
    })) << events;
    EXPECT_TRUE(Eventually([&] { return !PodExists(name + "-0"); }, std::chrono::seconds(60))) << name << "'s Pod is still there";
    EXPECT_FALSE(alive(name)) << name << "'s container still runs";
  }
  EXPECT_EQ(reclaimed.size(), 1u);
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
  EXPECT_TRUE(RefusedPods(owner_ns).empty()) << RefusedPods(owner_ns).front();
  EXPECT_EQ(mine("phase"), "Running");
}

// A node whose kubelet stops goes NotReady (kube-controller-manager): its run is interrupted and,
// with retry on interruption, placed again once a machine is free.
TEST_F(RealNodesTest, StoppedKubeletInterruptsItsRuns) {
  RealFleet("gpu", "  blocks: auto\n");
  ShellRun("survivor", "  resources: {gpu: 8}\n  retry: {onEvents: [interruption, no-capacity], duration: 10m}\n", "sleep 3600");
  ShellRun("casualty", "  resources: {gpu: 8}\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("survivor", "Running", std::chrono::seconds(90)));
  ASSERT_TRUE(WaitPhase("casualty", "Running", std::chrono::seconds(90)));
  // Stop the kubelet of the machine that runs `survivor` (the other one runs `casualty`).
  const std::string victim = PlacementNodes("survivor").at(0);
  RealNodes::StopKubelet(victim);
  EXPECT_TRUE(Eventually([&] { return NodeReady(victim) == "False" || NodeReady(victim) == "Unknown"; },
                         std::chrono::seconds(90))) << "node " << victim << " still Ready";
  // Interrupted and resubmitted; it waits for a machine (the other one is taken by `casualty`).
  EXPECT_TRUE(Eventually([&] { return StatusInt("survivor", "resubmissions") >= 1; }, std::chrono::seconds(60)))
      << Phase("survivor") << " " << Message("survivor");
  RealNodes::StartKubelet(victim);
  // Back on its machine once the kubelet is back, Ready, and has stopped the old Pod.
  EXPECT_TRUE(WaitPhase("survivor", "Running", std::chrono::seconds(120))) << Phase("survivor") << " " << Message("survivor");
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
}

// A node whose kubelet stops fails a run that has no retry on interruption.
TEST_F(RealNodesTest, StoppedKubeletFailsARunWithoutRetry) {
  RealFleet("one", "  blocks: auto\n", kNode1);
  ShellRun("fragile", "  resources: {gpu: 2}\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("fragile", "Running", std::chrono::seconds(90)));
  RealNodes::StopKubelet(kNode1);
  EXPECT_TRUE(WaitPhase("fragile", "Failed", std::chrono::seconds(90))) << Phase("fragile");
  EXPECT_EQ(Reason("fragile"), "Interrupted");
  EXPECT_NE(Message("fragile").find(kNode1), std::string::npos) << Message("fragile");
  RealNodes::StartKubelet(kNode1);
  EXPECT_TRUE(Eventually([&] { return NodeReady(kNode1) == "True"; }, std::chrono::seconds(90)));
}

// maxDuration stops a real container that would run longer and fails the run.
TEST_F(RealNodesTest, MaxDurationStopsTheContainer) {
  RealFleet("gpu", "  blocks: auto\n");
  ShellRun("long", "  resources: {gpu: 1}\n  maxDuration: 5s\n", "echo working; sleep 3600");
  ASSERT_TRUE(WaitPhase("long", "Running", std::chrono::seconds(90)));
  ASSERT_TRUE(WaitPhase("long", "Failed", std::chrono::seconds(60))) << Phase("long");
  EXPECT_EQ(Reason("long"), "MaxDurationExceeded");
  // The kubelet stops the container and the Pod goes away.
  EXPECT_TRUE(Eventually([&] { return !PodExists("long-0") || PodPhase("long-0") == "Failed"; },
                         std::chrono::seconds(60)))
      << PodPhase("long-0");
}

// Another scheduler's Pod (a DaemonSet agent) holds 1 CPU on a machine: berth cuts the machine
// into blocks from what is left, and the kubelet admits every Pod berth binds there (it refused
// rank 0 of a 2-node run 33 times in 10 s when berth counted the whole machine).
TEST_F(RealNodesTest, OtherPodsOnTheMachineAreCounted) {
  Apply(std::string("apiVersion: v1\nkind: Pod\nmetadata: {name: agent}\nspec:\n  nodeName: ") + kNode0 +
        "\n  containers:\n  - name: agent\n    image: " + RealNodes::kBusybox +
        "\n    command: [sleep, '3600']\n    resources: {requests: {cpu: '1'}}\n");
  ASSERT_TRUE(Eventually([&] { return PodPhase("agent") == "Running"; }, std::chrono::seconds(60)));
  RealFleet("gpu", "  blocks: 4\n  placement: cluster\n  topologyKey: zone\n");
  // The Fleet's status says what the other Pod holds on that machine.
  EXPECT_TRUE(Eventually([&] {
    auto f = client()->Get(k8s::resources::kFleets.Path("", FleetName("gpu")));
    const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    if (list == nullptr || !list->IsArray()) return false;
    for (const auto& i : list->GetArray()) {
      if (json::GetString(i, "node") == kNode0) return json::GetString(i, "heldByOtherPods") == "1 CPU";
    }
    return false;
  }, std::chrono::seconds(60)));
  ShellRun("gang", "  nodes: 2\n  resources: {gpu: 8}\n  retry: {onEvents: [error], duration: 10m}\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("gang", "Running", std::chrono::seconds(90))) << Phase("gang") << " " << Message("gang");
  EXPECT_EQ(StatusInt("gang", "resubmissions"), 0);
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
  ASSERT_EQ(Kubectl({"delete", "run", "gang", "--wait=false"}).exit_code, 0);

  // A burst that fills both machines: 4 blocks each, 250m CPU a block on the agent's machine.
  for (int i = 0; i < 8; ++i) {
    ShellRun("b" + std::to_string(i), "  resources: {gpu: 2}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n",
             "sleep 3600");
  }
  EXPECT_TRUE(Eventually([&] { return CountPhase("Running") == 8; }, std::chrono::seconds(120)))
      << Kubectl({"get", "runs"}).out << Kubectl({"get", "pods", "-o", "wide"}).out;
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
  EXPECT_EQ(PodPhase("agent"), "Running");  // nothing of the other scheduler's was disturbed
  ASSERT_EQ(Kubectl({"delete", "pod", "agent", "--wait=false", "--grace-period=1"}).exit_code, 0);
}

// A Pod the kubelet refuses at admission is an interruption of the run, not the user's failure:
// the run says which node refused it and why, and retries back off instead of looping.
TEST_F(RealNodesTest, KubeletRefusalIsAnInterruptionAndRetriesBackOff) {
  RealFleet("gpu", "  blocks: 4\n");
  // More scratch space than any machine has (berth does not count ephemeral storage): the kubelet
  // refuses the Pod with OutOfephemeral-storage. (An extended resource no node has would be
  // ignored by the kubelet, not refused.)
  const std::string dongle = "      containers:\n      - name: main\n        image: " + std::string(RealNodes::kBusybox) +
                             "\n        command: [sleep, '60']\n        resources: {requests: {ephemeral-storage: 100Ti}, "
                             "limits: {ephemeral-storage: 100Ti}}\n";
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: once}\nspec:\n  resources: {gpu: 2}\n"
        "  template:\n    spec:\n" + dongle);
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: again}\nspec:\n  resources: {gpu: 2}\n"
        "  retry: {onEvents: [interruption], duration: 10m}\n  template:\n    spec:\n" + dongle);
  ASSERT_TRUE(WaitPhase("once", "Failed", std::chrono::seconds(90))) << Phase("once");
  EXPECT_EQ(Reason("once"), "Interrupted");
  EXPECT_NE(Message("once").find("refused pod once-0: OutOfephemeral-storage"), std::string::npos) << Message("once");
  ASSERT_TRUE(Eventually([&] { return StatusInt("again", "resubmissions") >= 1; }, std::chrono::seconds(90)));
  auto doc = RunDoc("again");
  EXPECT_FALSE(json::GetString(json::Find(doc, {"status", "retryAfter"})).empty());
  EXPECT_NE(Message("again").find("back in the queue at"), std::string::npos) << Message("again");
  // A hot loop is what this rules out, so this waits on purpose: 20 s later there have been at
  // most two more attempts (10 s, then 20 s apart), where there were dozens before the backoff.
  std::this_thread::sleep_for(std::chrono::seconds(20));
  EXPECT_LE(StatusInt("again", "resubmissions"), 3);
  EXPECT_LE(PodsOf("again").size(), 2u) << "pods of older attempts are deleted";
}

// After a refusal the instance takes no new run until its situation changes (here: a label is
// added to its Node), not for a fixed time: the pause lasts up to 10 minutes otherwise.
TEST_F(RealNodesTest, RefusedInstanceWaitsUntilItsSituationChanges) {
  RealFleet("one", "  blocks: 4\n", kNode0);
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: greedy}\nspec:\n  resources: {gpu: 2}\n"
        "  template:\n    spec:\n      containers:\n      - name: main\n        image: " + std::string(RealNodes::kBusybox) +
        "\n        command: [sleep, '60']\n        resources: {requests: {ephemeral-storage: 100Ti}, "
        "limits: {ephemeral-storage: 100Ti}}\n");
  ASSERT_TRUE(WaitPhase("greedy", "Failed", std::chrono::seconds(90))) << Phase("greedy");
  ASSERT_EQ(Reason("greedy"), "Interrupted");
  ShellRun("next", "  resources: {gpu: 2}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "sleep 3600");
  // The waiting run says why the machine takes nothing now.
  ASSERT_TRUE(Eventually([&] {
    return Phase("next") == "Pending" && Message("next").find("refused") != std::string::npos;
  }, std::chrono::seconds(60))) << Phase("next") << ": " << Message("next") << "\n"
                                 << Kubectl({"get", "fleets", "-o", "yaml"}).out;
  // It stays so while nothing changes (the controller said so above, so it is running its passes:
  // a pause that ended by itself would place `next` within this window).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    ASSERT_EQ(Phase("next"), "Pending") << Message("next");
    ASSERT_TRUE(PodsOf("next").empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  // The operator changes the machine (what a fixed node, a relabel or a drained agent looks like).
  const std::string label = "berth-test/touched-" + ns_.substr(ns_.size() - 6);
  ASSERT_EQ(Kubectl({"label", "node", kNode0, label + "=yes"}).exit_code, 0);
  EXPECT_TRUE(WaitPhase("next", "Running", std::chrono::seconds(90))) << Message("next");
  EXPECT_TRUE(PodsOf("next").size() == 1u);
  Kubectl({"label", "node", kNode0, label + "-"});
}

// A sidecar with its own request: the Pod as a whole fits its blocks (the main container gets the
// rest), so four such runs fill a machine and the kubelet admits all four.
TEST_F(RealNodesTest, SidecarsAreCountedInTheBlocks) {
  RealFleet("one", "  blocks: 4\n", kNode0);  // 500m CPU a block
  FourRuns("      containers:\n"
          "      - {name: main, image: " + std::string(RealNodes::kBusybox) + ", command: [sleep, '3600']}\n"
          "      - {name: proxy, image: " + RealNodes::kBusybox + ", command: [sleep, '3600'], "
          "resources: {requests: {cpu: 200m}}}\n");
  ASSERT_TRUE(Eventually([&] { return CountPhase("Running") == 4; }, std::chrono::seconds(90)))
      << Kubectl({"get", "runs"}).out << Kubectl({"get", "pods", "-o", "wide"}).out;
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
  auto pod = client()->Get(kPods.Path(ns_, "s0-0"));
  ASSERT_TRUE(pod.ok());
  const json::Value* main = json::Find(*pod, {"spec", "containers"});
  ASSERT_TRUE(main != nullptr && main->IsArray() && main->Size() == 2);
  const json::Value* req = json::Find((*main)[0], {"resources", "requests"});
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(json::GetString(*req, "cpu"), "300m");  // 500m of the block less the proxy's 200m
}

// A Kubernetes sidecar (an init container with restartPolicy: Always, on by default since 1.29)
// with its own CPU request runs beside the main container for the Pod's whole life, and kubelet
// 1.37 counts it so: the main container gets the block less the sidecar, and a regular init
// container after the sidecar runs beside it too (200m + 300m: the block exactly). Four such runs
// fill the machine and the kubelet admits every Pod (counted as a plain init container, the
// sidecar would leave the main container the whole block: 700m a Pod, and the kubelet would refuse
// the fourth with OutOfcpu).
TEST_F(RealNodesTest, RestartableInitContainersAreCountedAsTheKubeletCountsThem) {
  RealFleet("one", "  blocks: 4\n", kNode0);  // 500m CPU a block
  FourRuns("      initContainers:\n"
          "      - {name: proxy, image: " + std::string(RealNodes::kBusybox) + ", restartPolicy: Always, command: [sleep, '3600'], "
          "resources: {requests: {cpu: 200m}}}\n"
          "      - {name: setup, image: " + RealNodes::kBusybox + ", command: [sh, -c, 'true'], "
          "resources: {requests: {cpu: 300m}}}\n"
          "      containers:\n"
          "      - {name: main, image: " + RealNodes::kBusybox + ", command: [sleep, '3600']}\n");
  ASSERT_TRUE(Eventually([&] { return CountPhase("Running") == 4; }, std::chrono::seconds(90)))
      << Kubectl({"get", "runs"}).out << Kubectl({"get", "pods", "-o", "wide"}).out;
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
  for (int i = 0; i < 4; ++i) {
    const std::string name = "s" + std::to_string(i) + "-0";
    SCOPED_TRACE(name);
    auto pod = client()->Get(kPods.Path(ns_, name));
    ASSERT_TRUE(pod.ok());
    EXPECT_EQ(json::GetString(json::Find(*pod, {"spec", "nodeName"})), kNode0);
    const json::Value* main = json::Find(*pod, {"spec", "containers"});
    ASSERT_TRUE(main != nullptr && main->IsArray() && main->Size() == 1);
    EXPECT_EQ(json::GetString(json::Find((*main)[0], {"resources", "requests", "cpu"})), "300m");  // 500m less 200m
    EXPECT_EQ(json::GetString(json::Find((*main)[0], {"resources", "limits", "cpu"})), "300m");
    // The sidecar runs beside the main container; the regular init container ran and ended.
    const json::Value* init = json::Find(*pod, {"status", "initContainerStatuses"});
    ASSERT_TRUE(init != nullptr && init->IsArray() && init->Size() == 2) << json::Serialize(*pod);
    for (const auto& st : init->GetArray()) {
      const std::string c = json::GetString(st, "name");
      if (c == "proxy") {
        EXPECT_NE(json::Find(st, {"state", "running"}), nullptr) << json::Serialize(st);
        EXPECT_TRUE(json::GetBool(st, "started")) << json::Serialize(st);
      } else {
        EXPECT_EQ(c, "setup");
        const json::Value* ended = json::Find(st, {"state", "terminated"});
        ASSERT_NE(ended, nullptr) << json::Serialize(st);
        EXPECT_EQ(json::GetInt(*ended, "exitCode", -1), 0) << json::Serialize(st);
      }
    }
  }
}

// Pod-level resources (spec.resources of the Pod, beta and on by default since Kubernetes 1.34):
// a template that sets them keeps them when they fit its blocks (the Pod-level limit it leaves out
// is the block, so the Pod never uses more), the containers share them, and the kubelet admits
// four such Pods on a machine cut in four. A template asking more than its blocks is refused with
// a sentence before any Pod is made.
TEST_F(RealNodesTest, PodLevelResourcesAreHonouredWithinTheBlocks) {
  RealFleet("one", "  blocks: 4\n", kNode0);  // 500m CPU a block
  auto run = [&](const std::string& name, const std::string& cpu) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name +
          "}\nspec:\n  resources: {gpu: 2}\n  template:\n    spec:\n      terminationGracePeriodSeconds: 1\n"
          "      resources: {requests: {cpu: " + cpu + "}}\n"
          "      containers:\n"
          "      - {name: main, image: " + RealNodes::kBusybox + ", command: [sleep, '3600']}\n"
          "      - {name: proxy, image: " + RealNodes::kBusybox + ", command: [sleep, '3600'], "
          "resources: {requests: {cpu: 100m}}}\n");
  };
  run("big", "600m");
  ASSERT_TRUE(WaitPhase("big", "Failed", std::chrono::seconds(60))) << Phase("big") << ": " << Message("big");
  EXPECT_EQ(Reason("big"), "InvalidSpec");
  EXPECT_NE(Message("big").find("spec.template.spec.resources.requests.cpu is 600m, more than the run's blocks on " +
                                std::string(kNode0) + " hold (500m): set spec.resources.cpu to at least 600m"),
            std::string::npos)
      << Message("big");
  EXPECT_TRUE(PodsOf("big").empty());
  for (int i = 0; i < 4; ++i) run("p" + std::to_string(i), "400m");
  ASSERT_TRUE(Eventually([&] { return CountPhase("Running") == 4; }, std::chrono::seconds(90)))
      << Kubectl({"get", "runs"}).out << Kubectl({"get", "pods", "-o", "wide"}).out;
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
  auto pod = client()->Get(kPods.Path(ns_, "p0-0"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(json::GetString(json::Find(*pod, {"spec", "resources", "requests", "cpu"})), "400m");  // as the template says
  EXPECT_EQ(json::GetString(json::Find(*pod, {"spec", "resources", "limits", "cpu"})), "500m");    // the block
  const json::Value* cs = json::Find(*pod, {"spec", "containers"});
  ASSERT_TRUE(cs != nullptr && cs->IsArray() && cs->Size() == 2);
  EXPECT_EQ(json::Find((*cs)[0], {"resources", "requests", "cpu"}), nullptr) << "the main container shares the Pod's CPU";
  EXPECT_EQ(json::GetString(json::Find((*cs)[0], {"resources", "requests", "nvidia.com/gpu"})), "2");
}

// berth chooses the machine: a template that pins a node is refused with a sentence, not sent to
// a kubelet that would refuse it.
TEST_F(RealNodesTest, TemplateNodeSelectorIsRefusedWithAReason) {
  RealFleet("gpu", "  blocks: 4\n");
  ShellRun("pinned", "  resources: {gpu: 2}\n", "sleep 5", "      nodeSelector: {gpu-model: h100}\n");
  ASSERT_TRUE(WaitPhase("pinned", "Failed", std::chrono::seconds(60))) << Phase("pinned");
  EXPECT_EQ(Reason("pinned"), "InvalidSpec");
  EXPECT_NE(Message("pinned").find("spec.template.spec.nodeSelector is not supported"), std::string::npos)
      << Message("pinned");
  EXPECT_TRUE(PodsOf("pinned").empty());
}

// An image that cannot be pulled: the run says so at once, and after its startTimeout it fails
// with StartTimeout and gives its blocks back once the kubelet has removed its Pod. The registry is
// a closed local port, so the pull fails at once on any machine (a name that needs DNS can leave
// the kubelet's pod worker stuck in a pull for minutes where the resolver does not answer, and
// the Pod stays Terminating, holding its blocks, all that time).
TEST_F(RealNodesTest, ImageThatCannotBePulledTimesOut) {
  RealFleet("one", "  blocks: 1\n", kNode1);
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: nopull}\nspec:\n  resources: {gpu: 8}\n"
        "  startTimeout: 20s\n  template:\n    spec:\n      containers:\n"
        "      - {name: main, image: 127.0.0.1:1/berth/none:1, command: [sh]}\n");
  // The waiting run comes once nopull holds the machine: two runs created in the same second
  // are in the same place of the queue (creationTimestamp has whole seconds).
  ASSERT_TRUE(WaitPhase("nopull", "Scheduled", std::chrono::seconds(60))) << Phase("nopull") << ": " << Message("nopull");
  ShellRun("after", "  resources: {gpu: 8}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "sleep 3600");
  EXPECT_TRUE(Eventually([&] {
    std::string m = Message("nopull");
    return m.find("cannot start: ErrImagePull") != std::string::npos ||
           m.find("cannot start: ImagePullBackOff") != std::string::npos;
  }, std::chrono::seconds(60))) << Phase("nopull") << ": " << Message("nopull");
  EXPECT_EQ(Phase("nopull"), "Scheduled");
  ASSERT_TRUE(WaitPhase("nopull", "Failed", std::chrono::seconds(60))) << Message("nopull");
  EXPECT_EQ(Reason("nopull"), "StartTimeout");
  EXPECT_NE(Message("nopull").find("within startTimeout 20s"), std::string::npos) << Message("nopull");
  // Its blocks go to the waiting run.
  EXPECT_TRUE(WaitPhase("after", "Running", std::chrono::seconds(90))) << Message("after");
}

// Issue 44 (10): a fleet machine carries the taint berth.dev/fleet=<fleet>:NoExecute
// (docs/install.md#fleet-nodes). A Pod made with spec.nodeName on it (no scheduler: the kubelet
// alone decides) that does not tolerate the taint is refused by the real kubelet and never runs;
// berth's own Pod (its toleration has no effect, so it tolerates NoExecute too) runs there.
// (A Pod that tolerates the taint is refused at admission: tenant_admission_test.cc.)
TEST_F(RealNodesTest, ANoExecuteFleetTaintKeepsNodeNamePodsOffAndBerthsPodsOn) {
  ASSERT_EQ(cp().Kubectl({"taint", "node", kNode0, "berth.dev/fleet=" + FleetName("tainted") + ":NoExecute"}).exit_code, 0);
  struct Untaint {
    ~Untaint() { ControlPlane::Get().Kubectl({"taint", "node", kNode0, "berth.dev/fleet-"}); }
  } untaint;
  Apply(std::string("apiVersion: v1\nkind: Pod\nmetadata: {name: squatter}\nspec:\n  nodeName: ") + kNode0 +
        "\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: " + RealNodes::kBusybox +
        "\n    command: [sleep, '3600']\n");
  ASSERT_TRUE(Eventually([&] { return PodPhase("squatter") == "Failed" || !PodExists("squatter"); }, std::chrono::seconds(60)))
      << PodPhase("squatter") << "\n" << Kubectl({"get", "pod", "squatter", "-o", "yaml"}).out;
  // Failed, then possibly deleted (the taint-eviction controller deletes a Pod that does not
  // tolerate a NoExecute taint): gone between the two reads is as good as refused.
  auto p = client()->Get(kPods.Path(ns_, "squatter"));
  if (!p.ok()) {
    ASSERT_TRUE(p.status().IsNotFound()) << p.status().ToString();
  } else {
    const std::string why = json::GetString(json::Find(*p, {"status", "reason"})) + ": " +
                            json::GetString(json::Find(*p, {"status", "message"}));
    // The kubelet's words: "TaintToleration: Predicate TaintToleration failed: node(s) had taints
    // that the pod didn't tolerate".
    EXPECT_EQ(why.rfind("TaintToleration: ", 0), 0u) << why;
    const json::Value* started = json::Find(*p, {"status", "containerStatuses"});
    EXPECT_TRUE(started == nullptr || !started->IsArray() || started->Empty() ||
                json::Find((*started)[0], {"state", "running"}) == nullptr)
        << "the container ran";
    Kubectl({"delete", "pod", "squatter", "--wait=false", "--grace-period=0", "--force"});
  }
  RealFleet("tainted", "  blocks: 4\n", kNode0);
  ShellRun("berths", "  resources: {gpu: 2}\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("berths", "Running", std::chrono::seconds(90))) << Phase("berths") << " " << Message("berths");
  EXPECT_TRUE(RefusedPods().empty()) << RefusedPods().front();
  ASSERT_EQ(Kubectl({"delete", "run", "berths", "--wait=false"}).exit_code, 0);
}

}  // namespace
}  // namespace berth::testing
