// berth-e2e-bench: end-to-end benchmarks on a real local control plane (etcd + kube-apiserver),
// side by side with kube-scheduler v1.20 where the comparison makes sense. Each scenario prints a
// Markdown table; bench/*.sh wrap one scenario each.
//
//   berth-e2e-bench throughput [--nodes 500 --runs 2000] [--hollow 1]
//   berth-e2e-bench gangs [--nodes 1000 --runs 250] [--hollow 1]
//
// --hollow 1: the nodes are kubemark hollow nodes (the real kubelet with a fake runtime,
// hack/real-nodes.sh hollow), so every Pod also goes through real kubelet admission; the clock
// stops when every Pod is Running (admitted and started), and refused Pods are counted.
// Hollow nodes have 1 CPU and 3840Mi whatever is asked, so their fleets use 8 blocks a node.
//   berth-e2e-bench priority [--pending 10000 --patches 50]
//   berth-e2e-bench memory [--nodes 5000 --runs 10000]

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../tests/integration/harness.h"
#include "k8s/config.h"
#include "k8s/informer.h"
#include "k8s/objects.h"

using namespace berth;
using berth::testing::CommandResult;
using berth::testing::ControlPlane;
using berth::testing::ControllerProcess;
using berth::testing::Eventually;
namespace json = k8s::json;
using Clock = std::chrono::steady_clock;

namespace {

std::map<std::string, int> g_flags;
int Flag(const std::string& name, int def) {
  auto it = g_flags.find(name);
  return it == g_flags.end() ? def : it->second;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Runs `fn(i)` for i in [0, n) on `threads` threads.
void Parallel(int n, int threads, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& t : pool) t.join();
}

k8s::ClientPtr Client() { return ControlPlane::Get().client(); }

void MustCreate(const std::string& path, const std::string& body) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto r = Client()->Create(path, body);
    if (r.ok() || r.status().IsAlreadyExists()) return;
    std::fprintf(stderr, "create %s failed: %s\n", path.c_str(), r.status().ToString().c_str());
  }
  std::exit(1);
}

bool Hollow() { return Flag("hollow", 0) != 0; }

// Hollow nodes and kube-controller-manager first (by pid), then etcd and kube-apiserver.
void StopControlPlane() {
  if (Hollow()) berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "stop-all", ControlPlane::Get().dir()});
  ControlPlane::Get().Stop();
}

// Ready nodes with 64 CPUs, 512Gi and 8 GPUs, labelled pool=POOL (or hollow nodes with 8 GPUs).
void MakeNodes(const std::string& pool, int count) {
  if (Hollow()) {
    CommandResult r = berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "hollow",
                                                  ControlPlane::Get().dir(), pool + "-", std::to_string(count), "--gpus",
                                                  "8", "--labels", "pool=" + pool});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "hollow nodes failed: %s\n", r.err.c_str());
      std::exit(1);
    }
    // Wait until every node advertises its GPUs.
    Eventually([&] {
      auto l = Client()->List(k8s::resources::kNodes.Path());
      if (!l.ok()) return false;
      int n = 0;
      for (auto& item : l->items) {
        auto node = k8s::DecodeNode(item);
        n += node && node->meta.Label("pool") == pool && node->Allocatable("nvidia.com/gpu") == 8;
      }
      return n >= count;
    }, std::chrono::seconds(120));
    return;
  }
  Parallel(count, 16, [&](int i) {
    std::string name = pool + "-" + std::to_string(i);
    std::string res = R"({"cpu":"64","memory":"512Gi","pods":"110","nvidia.com/gpu":"8"})";
    MustCreate(k8s::resources::kNodes.Path(),
               R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{"pool":")" + pool +
                   R"("}},"status":{"capacity":)" + res + R"(,"allocatable":)" + res +
                   R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
    Client()->JsonPatch(k8s::resources::kNodes.Path("", name), R"([{"op":"remove","path":"/spec/taints"}])");
  });
}

void Kubectl(const std::vector<std::string>& args, const std::string& input = {}) {
  CommandResult r = ControlPlane::Get().Kubectl(args, input);
  if (r.exit_code != 0) {
    std::fprintf(stderr, "kubectl %s failed: %s\n", args.empty() ? "" : args[0].c_str(), r.err.c_str());
    std::exit(1);
  }
}

std::string RunBody(const std::string& name, const std::string& spec) {
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name + R"("},"spec":{)" + spec +
         R"("template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})";
}

// Counts bound pods in a namespace through a watch (no polling load on the API server).
class BoundPods {
 public:
  explicit BoundPods(const std::string& ns)
      : informer_(Client(), k8s::resources::kPods.Path(ns), k8s::DecodePod,
                  [](const k8s::Pod& p) { return p.meta.name; }, "bench-pods") {
    informer_.AddHandler([this](const std::string&, const auto& old, const auto& cur) {
      bool was = old && !old->node_name.empty();
      bool is = cur && !cur->node_name.empty();
      if (is && !was) {
        ++bound_;
        last_bind_ = Clock::now();
      }
      if (was && !is) --bound_;
      bool ran = old && old->phase == "Running", runs = cur && cur->phase == "Running";
      if (runs && !ran) {
        ++running_;
        last_running_ = Clock::now();
      }
      bool refused = cur && cur->phase == "Failed" && cur->reason.rfind("OutOf", 0) == 0;
      if (refused && !(old && old->phase == "Failed")) ++refused_;
    });
    informer_.Start();
    Eventually([&] { return informer_.HasSynced(); }, std::chrono::seconds(60));
  }
  int bound() const { return bound_.load(); }
  int running() const { return running_.load(); }
  int refused() const { return refused_.load(); }
  Clock::time_point last_running() const { return last_running_.load(); }
  // Hollow nodes: every Pod admitted and Running; otherwise every Pod bound.
  bool Done(int pods) const { return Hollow() ? running() >= pods : bound() >= pods; }
  Clock::time_point DoneAt() const { return Hollow() ? last_running() : last_bind(); }
  Clock::time_point last_bind() const { return last_bind_.load(); }
  k8s::Informer<k8s::Pod>& informer() { return informer_; }

 private:
  k8s::Informer<k8s::Pod> informer_;
  std::atomic<int> bound_{0}, running_{0}, refused_{0};
  std::atomic<Clock::time_point> last_bind_{Clock::time_point{}}, last_running_{Clock::time_point{}};
};

std::map<std::string, double> ScrapeWrites(int port) {
  std::map<std::string, double> out;
  std::string text = berth::testing::HttpGet("http://127.0.0.1:" + std::to_string(port) + "/metrics");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("berth_events_total{outcome=\"posted\"}", 0) == 0) {
      out["events"] = std::stod(line.substr(line.rfind(' ') + 1));
      continue;
    }
    if (line.rfind("berth_api_requests_total{", 0) != 0) continue;
    auto verb_at = line.find("verb=\"");
    auto verb_end = line.find('"', verb_at + 6);
    auto code_at = line.find("code=\"");
    std::string verb = line.substr(verb_at + 6, verb_end - verb_at - 6);
    std::string code = line.substr(code_at + 6, line.find('"', code_at + 6) - code_at - 6);
    double v = std::stod(line.substr(line.rfind(' ') + 1));
    out[verb + " " + code] += v;
  }
  return out;
}

long RssKiB(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Serves berth's admission webhook from `controller_args` and registers it (certificates made
// with openssl); returns the extra controller flags.
std::vector<std::string> SetUpWebhook() {
  std::string dir = ControlPlane::Get().dir() + "/webhook";
  int port = berth::testing::FreePort();
  auto run = [](std::vector<std::string> args) {
    CommandResult r = berth::testing::RunCommand(args);
    if (r.exit_code != 0) {
      std::fprintf(stderr, "%s failed: %s\n", args[0].c_str(), r.err.c_str());
      std::exit(1);
    }
  };
  run({"mkdir", "-p", dir});
  run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/ca.key", "-out", dir + "/ca.crt",
       "-days", "1", "-subj", "/CN=berth-bench-ca"});
  run({"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/tls.key", "-out", dir + "/tls.csr", "-subj",
       "/CN=127.0.0.1"});
  std::ofstream(dir + "/san.ext") << "subjectAltName=IP:127.0.0.1\n";
  run({"openssl", "x509", "-req", "-in", dir + "/tls.csr", "-CA", dir + "/ca.crt", "-CAkey", dir + "/ca.key",
       "-CAcreateserial", "-out", dir + "/tls.crt", "-days", "1", "-extfile", dir + "/san.ext"});
  std::ifstream ca_in(dir + "/ca.crt");
  std::stringstream ca;
  ca << ca_in.rdbuf();
  Kubectl({"apply", "-f", "-"},
          "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: berth-runs}\n"
          "webhooks:\n- name: runs.berth.dev\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Ignore\n"
          "  clientConfig:\n    url: https://127.0.0.1:" + std::to_string(port) + "/mutate-runs\n    caBundle: " +
              k8s::Base64Encode(ca.str()) +
              "\n  rules:\n  - apiGroups: [berth.dev]\n    apiVersions: [v1alpha1]\n    operations: [CREATE]\n"
              "    resources: [runs]\n");
  return {"--webhook-bind-address=127.0.0.1:" + std::to_string(port), "--webhook-cert-dir=" + dir};
}

// ---------------------------------------------------------------------------------------------

int Throughput() {
  const int nodes = Flag("nodes", Hollow() ? 50 : 500), runs = Flag("runs", Hollow() ? nodes * 8 : 2000);
  ControlPlane::Get().Start();
  if (Hollow()) berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "controller-manager", ControlPlane::Get().dir()});
  // berth
  Kubectl({"create", "namespace", "berth-bench"});
  MakeNodes("berth", nodes);
  Kubectl({"apply", "-f", "-"}, std::string("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: gpu}\nspec:\n  nodeSelector: {pool: berth}\n  blocks: ") +
                                    (Hollow() ? "8" : "auto") + "\n");
  int metrics_port = berth::testing::FreePort();
  std::vector<std::string> controller_args = {"--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port)};
  const bool webhook = Flag("webhook", 0) != 0;
  if (webhook) {
    for (auto& a : SetUpWebhook()) controller_args.push_back(a);
  }
  ControllerProcess controller(controller_args, "bench-controller");
  controller.Start();
  Eventually([&] { return !berth::testing::HttpGet("http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics").empty(); });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto writes_before = ScrapeWrites(metrics_port);
  BoundPods berth_pods("berth-bench");
  auto t0 = Clock::now();
  Parallel(runs, 16, [&](int i) {
    MustCreate(k8s::resources::kRuns.Path("berth-bench"), RunBody("r" + std::to_string(i), R"("resources":{"gpu":1},)"));
  });
  auto created = Clock::now();
  if (!Eventually([&] { return berth_pods.Done(runs); }, std::chrono::seconds(600))) {
    std::fprintf(stderr, "berth bound %d and ran %d of %d pods; controller log: %s\n", berth_pods.bound(),
                 berth_pods.running(), runs, controller.log_path().c_str());
    return 1;
  }
  double berth_s = Seconds(berth_pods.DoneAt() - t0);
  auto writes_after = ScrapeWrites(metrics_port);
  controller.Stop();
  berth_pods.informer().Stop();
  double writes = 0, events = writes_after["events"] - writes_before["events"];
  std::string breakdown;
  for (auto& [k, v] : writes_after) {
    double d = v - writes_before[k];
    if (k == "events" || k.rfind("GET", 0) == 0 || k.rfind("WATCH", 0) == 0 || d <= 0) continue;
    writes += d;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s: %.0f", breakdown.empty() ? "" : ", ", k.c_str(), d);
    breakdown += buf;
  }
  auto print_cost = [&] {
    std::printf("\n## API cost (from berth_api_requests_total and berth_events_total)\n\n");
    std::printf("| writes | per admitted run | of which Events | object writes per run | by verb and code |\n|---|---|---|---|---|\n");
    std::printf("| %.0f | %.2f | %.0f | %.2f | %s |\n", writes, writes / runs, events, (writes - events) / runs, breakdown.c_str());
  };
  if (Flag("compare", 1) == 0) {
    std::printf("\n## berth alone: %d single-node 1-GPU runs on %d nodes x 8 GPUs%s\n\n", runs, nodes,
                webhook ? ", admission webhook on (finalizer added at creation)" : "");
    std::printf("| seconds | runs/s |\n|---|---|\n| %.2f | %.0f |\n", berth_s, runs / berth_s);
    print_cost();
    StopControlPlane();
    return 0;
  }

  // kube-scheduler on fresh nodes and a fresh namespace; berth's nodes are cordoned away.
  CommandResult built = berth::testing::RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/build-kube.sh", "kube-scheduler"});
  if (built.exit_code != 0) {
    std::fprintf(stderr, "kube-scheduler build failed: %s\n", built.err.c_str());
    return 1;
  }
  Parallel(nodes, 16, [&](int i) {
    Client()->MergePatch(k8s::resources::kNodes.Path("", "berth-" + std::to_string(i)), R"({"spec":{"unschedulable":true}})");
  });
  Kubectl({"create", "namespace", "ks-bench"});
  MakeNodes("ks", nodes);
  std::string home = std::getenv("HOME") ? std::getenv("HOME") : "/root";
  std::string ks_bin = home + "/.cache/berth/kubernetes-1.20.2/bin/kube-scheduler";
  std::string ks_log = ControlPlane::Get().dir() + "/kube-scheduler.log";
  pid_t ks = fork();
  if (ks == 0) {
    freopen(ks_log.c_str(), "w", stdout);
    freopen(ks_log.c_str(), "a", stderr);
    std::string kc = "--kubeconfig=" + ControlPlane::Get().kubeconfig();
    std::string auth = "--authentication-kubeconfig=" + ControlPlane::Get().kubeconfig();
    std::string authz = "--authorization-kubeconfig=" + ControlPlane::Get().kubeconfig();
    std::string port = "--secure-port=" + std::to_string(berth::testing::FreePort());
    // As its users run it at its best: the client rate limit (default 50 QPS, burst 100) raised.
    execl(ks_bin.c_str(), ks_bin.c_str(), kc.c_str(), auth.c_str(), authz.c_str(), "--leader-elect=false", "--port=0",
          port.c_str(), "--bind-address=127.0.0.1", "--kube-api-qps=5000", "--kube-api-burst=5000",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // let it sync before the clock starts
  BoundPods ks_pods("ks-bench");
  auto k0 = Clock::now();
  // The same share of a node as berth's one-block Pods: 1/8 of it.
  const std::string share = Hollow() ? R"("cpu":"125m","memory":"480Mi","nvidia.com/gpu":"1")"
                                     : R"("cpu":"8","memory":"64Gi","nvidia.com/gpu":"1")";
  Parallel(runs, 16, [&](int i) {
    MustCreate(k8s::resources::kPods.Path("ks-bench"),
               R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p)" + std::to_string(i) +
                   R"("},"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":{"requests":{)" +
                   share + R"(},"limits":{)" + share + R"(}}}]}})");
  });
  bool ks_done = Eventually([&] { return ks_pods.Done(runs); }, std::chrono::seconds(600));
  double ks_s = Seconds(ks_pods.DoneAt() - k0);
  kill(ks, SIGTERM);
  waitpid(ks, nullptr, 0);
  if (!ks_done) {
    std::fprintf(stderr, "kube-scheduler bound only %d of %d pods (log %s)\n", ks_pods.bound(), runs, ks_log.c_str());
    return 1;
  }
  ks_pods.informer().Stop();
  const char* until = Hollow() ? "every Pod admitted by its (hollow) kubelet and Running" : "every Pod bound";
  std::printf("\n## Throughput: %d single-node 1-GPU runs on %d %s x 8 GPUs\n\n", runs, nodes,
              Hollow() ? "kubemark hollow nodes (real kubelet admission)" : "bare Node objects");
  std::printf("| scheduler | flags | what is timed | seconds | per second | refused by a kubelet |\n|---|---|---|---|---|---|\n");
  std::printf("| berth | (defaults) | first Run created -> %s (berth creates the Pods, binds them, writes status) | %.2f | %.0f runs/s | %d |\n",
              until, berth_s, runs / berth_s, berth_pods.refused());
  std::printf("| kube-scheduler v1.20 | --kube-api-qps=5000 --kube-api-burst=5000 --leader-elect=false | first pre-made Pod created -> %s | %.2f | %.0f pods/s | %d |\n",
              until, ks_s, runs / ks_s, ks_pods.refused());
  std::printf("\n**ratio berth / kube-scheduler: %.2f** (goal >= 1.0). Creating the %d Runs took %.2f s of berth's time.\n",
              (runs / berth_s) / (runs / ks_s), runs, Seconds(created - t0));
  print_cost();
  StopControlPlane();
  return 0;
}

int Gangs() {
  const int nodes = Flag("nodes", Hollow() ? 48 : 1000), runs = Flag("runs", Hollow() ? nodes / 4 : 250), size = 4;
  ControlPlane::Get().Start();
  if (Hollow()) berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "controller-manager", ControlPlane::Get().dir()});
  Kubectl({"create", "namespace", "gang-bench"});
  MakeNodes("gang", nodes);
  Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: gang}\nspec:\n  nodeSelector: {pool: gang}\n  blocks: auto\n  placement: cluster\n");
  ControllerProcess controller({}, "bench-controller");
  controller.Start();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  BoundPods pods("gang-bench");
  // Sample the invariant while the gangs land: a gang's bound pods are only on its placement,
  // never more than its size, and no node holds two gangs.
  std::atomic<bool> sampling{true};
  std::atomic<int> samples{0}, violations{0};
  std::thread sampler([&] {
    while (sampling) {
      std::map<std::string, std::set<std::string>> nodes_of_run;
      std::map<std::string, int> runs_on_node;
      for (const auto& p : pods.informer().List()) {
        if (p->node_name.empty()) continue;
        std::string run = p->meta.Label("berth.dev/run");
        if (nodes_of_run[run].insert(p->node_name).second) ++runs_on_node[p->node_name];
      }
      for (auto& [run, ns] : nodes_of_run) violations += static_cast<int>(ns.size()) > size;
      for (auto& [node, n] : runs_on_node) violations += n > 1;
      ++samples;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto t0 = Clock::now();
  Parallel(runs, 16, [&](int i) {
    MustCreate(k8s::resources::kRuns.Path("gang-bench"), RunBody("g" + std::to_string(i), R"("nodes":4,"resources":{"gpu":8},)"));
  });
  bool done = Eventually([&] { return pods.Done(runs * size); }, std::chrono::seconds(600));
  double s = Seconds(pods.DoneAt() - t0);
  sampling = false;
  sampler.join();
  // Placement all-or-nothing, checked on the Runs themselves.
  auto list = Client()->List(k8s::resources::kRuns.Path("gang-bench"));
  int partial = 0;
  if (list.ok()) {
    for (auto& r : list->items) {
      const json::Value* p = json::Find(r, {"status", "placement"});
      size_t n = p != nullptr && p->IsArray() ? p->Size() : 0;
      partial += n != 0 && n != static_cast<size_t>(size);
    }
  }
  controller.Stop();
  pods.informer().Stop();
  std::printf("\n## Gangs: %d runs of nodes: %d on %d whole-node instances (%s)\n\n", runs, size, nodes,
              Hollow() ? "kubemark hollow nodes, timed until every Pod is admitted and Running" : "bare Node objects, timed until every Pod is bound");
  std::printf("| all done | seconds | gangs/s | pods/s | samples | invariant violations | partial placements | refused by a kubelet |\n|---|---|---|---|---|---|---|---|\n");
  std::printf("| %s | %.2f | %.1f | %.0f | %d | %d | %d | %d |\n", done ? "yes" : "NO", s, runs / s, runs * size / s, samples.load(),
              violations.load(), partial, pods.refused());
  StopControlPlane();
  return done && violations == 0 && partial == 0 && pods.refused() == 0 ? 0 : 1;
}

int Priority() {
  const int pending = Flag("pending", 10000), patches = Flag("patches", 50);
  ControlPlane::Get().Start();
  const std::string ns = "prio-bench";
  Kubectl({"create", "namespace", ns});
  MakeNodes("prio", 1);
  Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: prio}\nspec:\n  nodeSelector: {pool: prio}\n");
  int port = berth::testing::FreePort();
  ControllerProcess controller({"--metrics-bind-address=127.0.0.1:" + std::to_string(port)}, "bench-controller");
  controller.Start();
  auto phase = [&](const std::string& run) {
    auto r = Client()->Get(k8s::resources::kRuns.Path(ns, run));
    return r.ok() ? json::GetString(json::Find(*r, {"status", "phase"})) : std::string();
  };
  const std::string queued = R"("retry":{"onEvents":["no-capacity"],"duration":"off"},)";
  MustCreate(k8s::resources::kRuns.Path(ns), RunBody("blocker", queued));
  Eventually([&] { return phase("blocker") == "Scheduled"; });
  Parallel(pending, 16, [&](int i) { MustCreate(k8s::resources::kRuns.Path(ns), RunBody("q" + std::to_string(i), queued)); });
  std::string queue_url = "http://127.0.0.1:" + std::to_string(port) + "/queue?limit=1";
  auto first_in_queue = [&] {
    auto doc = json::Parse(berth::testing::HttpGet(queue_url));
    if (!doc.ok()) return std::string();
    const json::Value* items = json::Find(*doc, {"items"});
    if (items == nullptr || !items->IsArray() || items->Empty()) return std::string();
    return json::GetString((*items)[0], "name");
  };
  if (!Eventually([&] {
        auto doc = json::Parse(berth::testing::HttpGet(queue_url));
        return doc.ok() && json::GetInt(*doc, "total") == pending;
      }, std::chrono::seconds(300))) {
    std::fprintf(stderr, "the queue never held %d runs\n", pending);
    return 1;
  }
  // Steady state: every queued run has its first status written.
  Eventually([&] {
    auto l = Client()->List(k8s::resources::kRuns.Path(ns));
    if (!l.ok()) return false;
    int n = 0;
    for (auto& r : l->items) n += json::GetString(json::Find(r, {"status", "phase"})) == "Pending";
    if (n < pending) std::this_thread::sleep_for(std::chrono::seconds(1));
    return n >= pending;
  }, std::chrono::seconds(600));
  auto bind_and_run = [&](const std::string& run) {
    std::string pod = run + "-0";
    Eventually([&] {
      auto p = Client()->Get(k8s::resources::kPods.Path(ns, pod));
      return p.ok() && !json::GetString(json::Find(*p, {"spec", "nodeName"})).empty();
    });
    Client()->MergePatch(k8s::resources::kPods.Path(ns, pod, "status"), R"({"status":{"phase":"Running"}})");
    return pod;
  };
  std::string current_pod = bind_and_run("blocker");
  std::mt19937 rng(42);
  std::vector<double> to_first, to_admit;
  std::set<int> used;
  for (int k = 0; k < patches; ++k) {
    int idx;
    do idx = static_cast<int>(rng() % pending);
    while (!used.insert(idx).second);
    std::string target = "q" + std::to_string(idx);
    auto t0 = Clock::now();
    auto r = Client()->MergePatch(k8s::resources::kRuns.Path(ns, target), R"({"spec":{"priority":100}})");
    if (!r.ok()) return 1;
    if (!Eventually([&] { return first_in_queue() == target; }, std::chrono::seconds(30))) return 1;
    to_first.push_back(Seconds(Clock::now() - t0));
    auto t1 = Clock::now();
    Client()->MergePatch(k8s::resources::kPods.Path(ns, current_pod, "status"), R"({"status":{"phase":"Succeeded"}})");
    if (!Eventually([&] { return phase(target) == "Scheduled"; }, std::chrono::seconds(30))) return 1;
    to_admit.push_back(Seconds(Clock::now() - t1));
    if (Flag("verbose", 0)) std::fprintf(stderr, "%s: first after %.0f ms, admitted %.0f ms after its slot freed\n", target.c_str(), to_first.back() * 1000, to_admit.back() * 1000);
    current_pod = bind_and_run(target);
  }
  auto pct = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - 1)];
  };
  controller.Stop();
  std::printf("\n## Priority latency: %d pending runs, %d patches to priority 100\n\n", pending, patches);
  std::printf("| measured from the patch's answer | p50 | p99 | max | goal |\n|---|---|---|---|---|\n");
  std::printf("| until /queue shows the run first | %.0f ms | %.0f ms | %.0f ms | p99 < 1 s |\n", pct(to_first, 0.5) * 1000,
              pct(to_first, 0.99) * 1000, *std::max_element(to_first.begin(), to_first.end()) * 1000);
  std::printf("| one slot freed (pod Succeeded) until the run is admitted | %.0f ms | %.0f ms | %.0f ms | |\n",
              pct(to_admit, 0.5) * 1000, pct(to_admit, 0.99) * 1000, *std::max_element(to_admit.begin(), to_admit.end()) * 1000);
  StopControlPlane();
  return 0;
}

int Memory() {
  const int nodes = Flag("nodes", 5000), runs = Flag("runs", 10000);
  ControlPlane::Get().Start();
  const std::string ns = "mem-bench";
  Kubectl({"create", "namespace", ns});
  MakeNodes("mem", nodes);
  Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: mem}\nspec:\n  nodeSelector: {pool: mem}\n  blocks: auto\n");
  auto controller = std::make_unique<ControllerProcess>(std::vector<std::string>{}, "bench-controller");
  controller->Start();
  BoundPods pods(ns);
  Parallel(runs, 16, [&](int i) {
    MustCreate(k8s::resources::kRuns.Path(ns), RunBody("m" + std::to_string(i), R"("resources":{"gpu":1},)"));
  });
  if (!Eventually([&] { return pods.bound() >= runs; }, std::chrono::seconds(900))) {
    std::fprintf(stderr, "only %d of %d pods bound\n", pods.bound(), runs);
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));
  long rss = RssKiB(controller->pid());
  controller->Stop();
  // Start-up: one more run waits (capacity exists); time from start to synced and to its admission.
  MustCreate(k8s::resources::kRuns.Path(ns), RunBody("late", R"("resources":{"gpu":1},)"));
  int probe = berth::testing::FreePort();
  controller = std::make_unique<ControllerProcess>(
      std::vector<std::string>{"--health-probe-bind-address=127.0.0.1:" + std::to_string(probe)}, "bench-controller-2");
  auto t0 = Clock::now();
  controller->Start();
  int code = 0;
  Eventually([&] {
    berth::testing::HttpGet("http://127.0.0.1:" + std::to_string(probe) + "/readyz", &code);
    return code == 200;
  }, std::chrono::seconds(120));
  double synced = Seconds(Clock::now() - t0);
  Eventually([&] {
    auto r = Client()->Get(k8s::resources::kRuns.Path(ns, "late"));
    return r.ok() && json::GetString(json::Find(*r, {"status", "phase"})) == "Scheduled";
  }, std::chrono::seconds(120));
  double admitted = Seconds(Clock::now() - t0);
  controller->Stop();
  pods.informer().Stop();
  std::printf("\n## Memory and start-up: %d runs, %d nodes, %d pods in the caches\n\n", runs, nodes, runs);
  std::printf("| controller RSS | goal | start -> caches synced | start -> first admission | goal |\n|---|---|---|---|---|\n");
  std::printf("| %.0f MB | < 200 MB | %.2f s | %.2f s | < 5 s |\n", rss / 1024.0, synced, admitted);
  StopControlPlane();
  return 0;
}

// Queue positions at scale: PENDING runs wait behind one busy block while runs arrive, leave and
// change priority for SECONDS. A sampler lists every run every 2 s and checks the picture users
// read: no two runs at one position, and how many of positions 1..100 are missing. Reports the
// controller's status writes (berth_api_requests_total PATCH) per second and per queue change,
// and the time the positions take to settle (the list matches the queue endpoint's first 100)
// after the churn stops.
int Positions() {
  const int pending = Flag("pending", 10000), seconds = Flag("seconds", 60);
  const int arrivals = Flag("arrivals", 5), departures = Flag("departures", 5), patches = Flag("patches", 2);
  ControlPlane::Get().Start();
  const std::string ns = "pos-bench";
  Kubectl({"create", "namespace", ns});
  MakeNodes("pos", 1);
  Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: pos}\nspec:\n  nodeSelector: {pool: pos}\n");
  int port = berth::testing::FreePort();
  ControllerProcess controller({"--metrics-bind-address=127.0.0.1:" + std::to_string(port)}, "bench-controller");
  controller.Start();
  const std::string queued = R"("retry":{"onEvents":["no-capacity"],"duration":"off"},)";
  MustCreate(k8s::resources::kRuns.Path(ns), RunBody("blocker", queued));
  // The blocker holds the only block, its Pod "running" (no kubelet here), before the rest arrive.
  if (!Eventually([&] {
        auto p = Client()->Get(k8s::resources::kPods.Path(ns, "blocker-0"));
        return p.ok() && !json::GetString(json::Find(*p, {"spec", "nodeName"})).empty();
      }, std::chrono::seconds(60))) {
    std::fprintf(stderr, "the blocker was never placed; controller log: %s\n", controller.log_path().c_str());
    return 1;
  }
  Client()->MergePatch(k8s::resources::kPods.Path(ns, "blocker-0", "status"), R"({"status":{"phase":"Running"}})");
  std::mt19937 rng(7);
  std::vector<int> prio(pending);
  for (auto& p : prio) p = static_cast<int>(rng() % 101);
  Parallel(pending, 16, [&](int i) {
    MustCreate(k8s::resources::kRuns.Path(ns),
               RunBody("p" + std::to_string(i), queued + R"("priority":)" + std::to_string(prio[i]) + ","));
  });
  const std::string queue_url = "http://127.0.0.1:" + std::to_string(port) + "/queue?limit=100";
  auto top_names = [&] {
    std::vector<std::string> out;
    auto doc = json::Parse(berth::testing::HttpGet(queue_url));
    if (!doc.ok()) return out;
    const json::Value* items = json::Find(*doc, {"items"});
    if (items == nullptr || !items->IsArray()) return out;
    for (auto& e : items->GetArray()) out.push_back(json::GetString(e, "name"));
    return out;
  };
  // What users read: every run's status.queuePosition.
  struct Picture {
    bool ok = false;
    int duplicates = 0, missing_top100 = 0;
    std::vector<std::string> top;  // names at positions 1..100 (empty where none)
  };
  auto picture = [&] {
    Picture pic;
    auto l = Client()->List(k8s::resources::kRuns.Path(ns));
    if (!l.ok()) return pic;
    pic.ok = true;
    std::map<int64_t, int> at;
    pic.top.assign(100, "");
    for (auto& r : l->items) {
      const json::Value* pos = json::Find(r, {"status", "queuePosition"});
      if (pos == nullptr || !pos->IsInt64()) continue;
      int64_t p = pos->GetInt64();
      if (++at[p] == 2) ++pic.duplicates;
      if (p >= 1 && p <= 100) pic.top[p - 1] = json::GetString(json::Find(r, {"metadata", "name"}));
    }
    for (int p = 1; p <= 100; ++p) pic.missing_top100 += at.count(p) == 0;
    return pic;
  };
  auto settled = [&] {
    auto want = top_names();
    if (want.size() < 100) return false;
    Picture pic = picture();
    return pic.ok && pic.duplicates == 0 && pic.top == want;
  };
  auto t_setup = Clock::now();
  if (!Eventually(settled, std::chrono::seconds(900))) {
    std::fprintf(stderr, "positions never settled with %d pending; controller log: %s\n", pending, controller.log_path().c_str());
    return 1;
  }
  const double first_settle = Seconds(Clock::now() - t_setup);
  std::this_thread::sleep_for(std::chrono::seconds(5));  // let waiting messages quiet down
  auto writes_before = ScrapeWrites(port);

  // Churn: each second, `arrivals` new runs, `departures` deletions and `patches` priority changes.
  std::atomic<bool> churning{true};
  int samples = 0, dup_samples = 0, max_missing = 0;
  std::thread sampler([&] {
    while (churning) {
      Picture pic = picture();
      if (pic.ok) {
        ++samples;
        dup_samples += pic.duplicates > 0;
        max_missing = std::max(max_missing, pic.missing_top100);
      }
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
  });
  std::set<int> gone;
  int next_new = pending, changes = 0;
  auto t0 = Clock::now();
  for (int sec = 0; sec < seconds; ++sec) {
    auto tick = t0 + std::chrono::seconds(sec);
    std::this_thread::sleep_until(tick);
    for (int a = 0; a < arrivals; ++a, ++changes) {
      MustCreate(k8s::resources::kRuns.Path(ns), RunBody("p" + std::to_string(next_new++),
                                                         queued + R"("priority":)" + std::to_string(rng() % 101) + ","));
    }
    for (int d = 0; d < departures; ++d, ++changes) {
      int idx;
      do idx = static_cast<int>(rng() % pending);
      while (!gone.insert(idx).second);
      (void)Client()->Delete(k8s::resources::kRuns.Path(ns, "p" + std::to_string(idx)));
    }
    for (int k = 0; k < patches; ++k, ++changes) {
      int idx = static_cast<int>(rng() % pending);
      if (gone.count(idx)) continue;
      (void)Client()->MergePatch(k8s::resources::kRuns.Path(ns, "p" + std::to_string(idx)),
                                 R"({"spec":{"priority":)" + std::to_string(rng() % 101) + "}}");
    }
  }
  const double churn_s = Seconds(Clock::now() - t0);
  auto writes_after = ScrapeWrites(port);
  churning = false;
  sampler.join();
  auto t1 = Clock::now();
  bool ok = Eventually(settled, std::chrono::seconds(300));
  const double settle_s = Seconds(Clock::now() - t1);
  double patches_written = 0;
  for (auto& [k, v] : writes_after) {
    if (k.rfind("PATCH", 0) == 0) patches_written += v - writes_before[k];
  }
  controller.Stop();
  char settle[32];
  std::snprintf(settle, sizeof settle, ok ? "%.1f s" : "no (after %.0f s)", settle_s);
  std::printf("\n## Queue positions: %d pending runs, %ds of churn (%d arrivals, %d departures, %d priority patches per second)\n\n",
              pending, seconds, arrivals, departures, patches);
  std::printf("| first settle | status writes during churn | per second | per queue change | samples | samples with two runs at one position | most of positions 1..100 missing in a sample | settled after churn |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::printf("| %.1f s | %.0f | %.1f | %.2f | %d | %d | %d | %s |\n", first_settle, patches_written, patches_written / churn_s,
              patches_written / std::max(1, changes), samples, dup_samples, max_missing,
              settle);
  StopControlPlane();
  return ok && dup_samples == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: berth-e2e-bench throughput|gangs|priority|memory|positions [--flag N ...]\n");
    return 2;
  }
  std::string scenario = argv[1];
  // Leave without running static destructors: OpenSSL's atexit cleanup runs before them and the
  // harness' client (a static) would free TLS state twice.
  auto finish = [](int code) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
  };
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string f = argv[i];
    if (f.rfind("--", 0) == 0) g_flags[f.substr(2)] = std::atoi(argv[i + 1]);
  }
  if (scenario == "throughput") finish(Throughput());
  if (scenario == "gangs") finish(Gangs());
  if (scenario == "priority") finish(Priority());
  if (scenario == "memory") finish(Memory());
  if (scenario == "positions") finish(Positions());
  std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
  return 2;
}
