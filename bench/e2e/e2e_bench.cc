// berth-e2e-bench: end-to-end benchmarks on a real local control plane (etcd + kube-apiserver of
// the Kubernetes version hack/build-kube.sh builds, 1.37 by default), side by side with that
// version's kube-scheduler and Job controller where the comparison makes sense. Each scenario
// prints a Markdown table; bench/*.sh wrap one scenario each.
//
//   berth-e2e-bench throughput [--nodes 500 --runs 2000] [--hollow 1 | --kwok 1] [--job-syncs 5]
//   berth-e2e-bench gangs [--nodes 1000 --runs 250] [--hollow 1 | --kwok 1]
//
// --hollow 1: the nodes are kubemark hollow nodes (the real kubelet with a fake runtime,
// hack/real-nodes.sh hollow), so every Pod also goes through real kubelet admission; the clock
// stops when every Pod is Running (admitted and started), and refused Pods are counted.
// Hollow nodes have 1 CPU and 3840Mi whatever is asked, so their fleets use 8 blocks a node.
// --kwok 1: the nodes are Node objects managed by a kwok controller (sigs.k8s.io/kwok, built by
// hack/build-kube.sh kwok; the tool the Kubernetes community simulates 1,000s of nodes with),
// started by the benchmark on its control plane with kwok's default stages (bench/e2e/kwok-stages.yaml):
// kwok makes each node Ready and every Pod bound to one Running; the clock stops when every Pod is
// Running. kwok is stopped with the control plane (and dies with the driver: PR_SET_PDEATHSIG).
// --kwok-lease N: kwok's --node-lease-duration-seconds (default 40, kwok's and the kubelet's:
// each node's Lease renewed every N/4 s; 0: no Leases).
//   berth-e2e-bench priority [--pending 10000 --patches 50] [--kueue 1 [--kueue-patches N]]
//
// --jobs 1 (throughput, gangs, priority): berth's Job path too (issue 45): the same batch/v1 Jobs
// Kueue gets, labelled berth.dev/queue "true" instead of kueue.x-k8s.io/queue-name, held by the
// chart's admission policies (rendered by Helm), their Pods made by kube-controller-manager's Job
// controller, pinned by berth and bound by kube-scheduler. --jobs 2: only the Job rows (throughput:
// with berth's Run path, the chart's policies, for its writes per run; with Kueue when --kueue 1).
//   berth-e2e-bench memory [--nodes 5000 --runs 10000] [--kwok 1]
//   berth-e2e-bench scale [--nodes 10000 --pending 100000 --seconds 60] [--kwok 1]
//   berth-e2e-bench run-size [--runs 2000 --bytes 1536 --placed 1]

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../tests/integration/harness.h"
#include "../../tests/integration/run_size.h"
#include "e2e_common.h"
#include "kueue.h"
#include "k8s/config.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "k8s/workload_objects.h"
#include "k8s/quantity.h"
#include "api/v1alpha1/codec.h"
#include "workloads/workload.h"

using namespace berth;
using berth::testing::CommandResult;
using berth::testing::ControlPlane;
using berth::testing::ControllerProcess;
using berth::testing::Eventually;
namespace json = k8s::json;
using Clock = std::chrono::steady_clock;

namespace berth::bench::e2e {

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
bool Kwok() { return Flag("kwok", 0) != 0; }
// A kubelet-like agent (hollow kubelets or kwok) runs the bound Pods: the clock stops at Running.
bool Agent() { return Hollow() || Kwok(); }

// A process of the benchmark (kube-scheduler, kube-controller-manager, kwok) started with `args`;
// its output goes to `log`. It is killed if the driver dies first. Returns its pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log) {
  const pid_t parent = getpid();
  // The child's freopen would flush a copy of what the driver has printed but not yet written.
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    if (!freopen(log.c_str(), "w", stdout) || !freopen(log.c_str(), "a", stderr)) _exit(126);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

double SumSamples(const std::string& page, const std::string& name, const std::string& label) {
  double total = 0;
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    if (!label.empty() && line.find(label) == std::string::npos) continue;
    total += std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return total;
}

void StopProcess(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
}

// The Kubernetes binaries of this run (hack/build-kube.sh: 1.37, or BERTH_KUBE_VERSION).
std::string KubeBinDir() {
  static const std::string dir = [] {
    CommandResult r = berth::testing::RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/build-kube.sh", "--bin"});
    return r.out.substr(0, r.out.find('\n'));
  }();
  return dir;
}
std::string KubeBin(const std::string& name) { return KubeBinDir() + "/" + name; }

// "v1.37.2", from the binaries' directory (CACHE/kubernetes-1.37.2/bin).
std::string KubeVersion() {
  std::string d = KubeBinDir();
  d = d.substr(0, d.rfind('/'));
  const std::string base = d.substr(d.rfind('/') + 1);
  const std::string prefix = "kubernetes-";
  return base.rfind(prefix, 0) == 0 ? "v" + base.substr(prefix.size()) : base;
}

// kwok (hack/build-kube.sh kwok) is in CACHE/tools/bin, beside CACHE/kubernetes-<version>/bin.
std::string KwokBin() {
  std::string d = KubeBinDir();
  d = d.substr(0, d.rfind('/'));
  d = d.substr(0, d.rfind('/'));
  return d + "/tools/bin/kwok";
}

// kwok's flags (printed in the tables as passed). Its client has no rate limit (kwok sets a
// fake-always rate limiter on its REST config), so there is no QPS flag to raise.
std::vector<std::string> KwokFlags() {
  return {"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
          "--node-lease-duration-seconds=" + std::to_string(Flag("kwok-lease", 40)), "--cidr=10.64.0.0/10",
          "--config=bench/e2e/kwok-stages.yaml"};
}

pid_t g_kwok = -1;

void StartKwok() {
  if (!Kwok()) return;
  const auto& cp = ControlPlane::Get();
  std::vector<std::string> args = {KwokBin(), "--kubeconfig=" + cp.kubeconfig()};
  for (std::string f : KwokFlags()) {
    if (f.rfind("--config=", 0) == 0) f = "--config=" + std::string(BERTH_SOURCE_DIR) + "/" + f.substr(9);
    args.push_back(f);
  }
  g_kwok = Spawn(args, cp.dir() + "/kwok.log");
  std::this_thread::sleep_for(std::chrono::seconds(1));
  if (waitpid(g_kwok, nullptr, WNOHANG) == g_kwok) {
    std::fprintf(stderr, "kwok exited at once; see %s/kwok.log\n", cp.dir().c_str());
    g_kwok = -1;
    ControlPlane::Get().Stop();
    std::exit(1);
  }
}

// kwok, hollow nodes and kube-controller-manager first (by pid), then etcd and kube-apiserver.
void StopControlPlane() {
  if (g_kwok > 0) StopProcess(g_kwok);
  g_kwok = -1;
  if (Hollow()) berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "stop-all", ControlPlane::Get().dir()});
  ControlPlane::Get().Stop();
}

// A fresh control plane, with kwok when --kwok 1.
void StartControlPlane() {
  ControlPlane::Get().Start();
  StartKwok();
}

// Ready nodes with 64 CPUs, 512Gi and 8 GPUs, labelled pool=POOL (or hollow nodes with 8 GPUs; or
// kwok-managed nodes that kwok makes Ready).
void MakeNodes(const std::string& pool, int count, const std::function<std::string(int)>& labels) {
  if (Hollow()) {
    CommandResult r = berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "hollow",
                                                  ControlPlane::Get().dir(), pool + "-", std::to_string(count), "--gpus",
                                                  "8", "--labels", "pool=" + pool});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "hollow nodes failed: %s\n", r.err.c_str());
      StopControlPlane();  // leave no API server, etcd or hollow node running behind us
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
    const std::string more = labels ? "," + labels(i) : std::string();
    if (Kwok()) {
      // Managed by kwok (its annotation); not Ready until kwok's node-initialize stage makes it so.
      MustCreate(k8s::resources::kNodes.Path(),
                 R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{"pool":")" + pool +
                     R"(","type":"kwok")" + more + R"(},"annotations":{"kwok.x-k8s.io/node":"fake"}},"status":{"capacity":)" + res +
                     R"(,"allocatable":)" + res + "}}");
    } else {
      MustCreate(k8s::resources::kNodes.Path(),
                 R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{"pool":")" + pool +
                     R"(")" + more + R"(}},"status":{"capacity":)" + res + R"(,"allocatable":)" + res +
                     R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
    }
    // The API server taints a new node not-ready; no node lifecycle controller runs to lift it.
    (void)Client()->JsonPatch(k8s::resources::kNodes.Path("", name), R"([{"op":"remove","path":"/spec/taints"}])");
  });
  if (Kwok()) {
    // Wait until kwok has made every node of the pool Ready.
    int ready = 0;
    bool ok = Eventually([&] {
      k8s::ListOptions opts;
      opts.label_selector = "pool=" + pool;
      auto l = Client()->List(k8s::resources::kNodes.Path(), opts);
      if (!l.ok()) return false;
      ready = 0;
      for (auto& item : l->items) {
        auto node = k8s::DecodeNode(item);
        ready += node && node->ready;
      }
      if (ready < count) std::this_thread::sleep_for(std::chrono::milliseconds(500));
      return ready >= count;
    }, std::chrono::seconds(900));
    if (!ok) {
      std::fprintf(stderr, "kwok made only %d of %d nodes Ready; see %s/kwok.log\n", ready, count, ControlPlane::Get().dir().c_str());
      StopControlPlane();
      std::exit(1);
    }
  }
}

void Kubectl(const std::vector<std::string>& args, const std::string& input) {
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
  // Hollow or kwok nodes: every Pod Running (admitted and started by its agent); otherwise every Pod bound.
  bool Done(int pods) const { return Agent() ? running() >= pods : bound() >= pods; }
  Clock::time_point DoneAt() const { return Agent() ? last_running() : last_bind(); }
  Clock::time_point last_bind() const { return last_bind_.load(); }
  k8s::Informer<k8s::Pod>& informer() { return informer_; }

 private:
  k8s::Informer<k8s::Pod> informer_;
  std::atomic<int> bound_{0}, running_{0}, refused_{0};
  std::atomic<Clock::time_point> last_bind_{Clock::time_point{}}, last_running_{Clock::time_point{}};
};

// The API server's own count of requests (apiserver_request_total), by verb, resource and code:
// every scheduler's writes are counted the same way, whoever makes them.
std::map<std::string, double> ScrapeApiserver() {
  std::map<std::string, double> out;
  const std::string dir = ControlPlane::Get().dir();
  std::ifstream port_in(dir + "/apiserver.port"), token_in(dir + "/admin.token");
  std::string port, token;
  port_in >> port;
  token_in >> token;
  CommandResult r = berth::testing::RunCommand({"curl", "-sS", "--cacert", dir + "/certs/apiserver.crt", "-H",
                                                "Authorization: Bearer " + token, "https://127.0.0.1:" + port + "/metrics"});
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    // Admission webhook calls (the API server's side: round trip to the webhook, included in the
    // request time of the create that called it).
    // Admission policies (evaluated inside the API server): their CEL checks, per policy kind.
    for (const char* part : {"sum", "count"}) {
      const std::pair<const char*, const char*> families[] = {
          {"apiserver_admission_webhook_admission_duration_seconds_", "(webhook call)"},
          {"apiserver_mutating_admission_policy_check_duration_seconds_", "(mutating policy check) runs"},
          {"apiserver_validating_admission_policy_check_duration_seconds_", "(validating policy check) runs"}};
      for (const auto& [family, key] : families) {
        const std::string name = std::string(family) + part + "{";
        if (line.rfind(name, 0) == 0) {
          // Webhook calls by the webhook's name (runs.berth.dev, mjob.kb.io, ...), policies as runs.
          std::string what = key;
          if (std::string(family).find("webhook") != std::string::npos) {
            const size_t at = line.find("name=\"");
            what += " " + (at == std::string::npos ? std::string("?") : line.substr(at + 6, line.find('"', at + 6) - at - 6));
          }
          out[std::string(part[0] == 's' ? "t:" : "n:") + what] += std::stod(line.substr(line.rfind(' ') + 1));
        }
      }
    }
    const bool count = line.rfind("apiserver_request_total{", 0) == 0;
    const bool time = line.rfind("apiserver_request_duration_seconds_sum{", 0) == 0;
    if (!count && !time) continue;
    auto label = [&](const std::string& name) {
      auto at = line.find("," + name + "=\"");
      if (at == std::string::npos) at = line.find("{" + name + "=\"");
      if (at == std::string::npos) return std::string();
      at += name.size() + 3;
      return line.substr(at, line.find('"', at) - at);
    };
    const std::string verb = label("verb");
    std::string resource = label("resource");
    if (!label("subresource").empty()) resource += "/" + label("subresource");
    const double v = std::stod(line.substr(line.rfind(' ') + 1));
    if (verb == "WATCH" || verb == "CONNECT") continue;  // long-lived: no time per request
    if (time) {
      out["t:" + verb + " " + resource] += v;  // seconds the API server spent on these requests
      continue;
    }
    out["n:" + verb + " " + resource] += v;
    // APPLY: a server-side apply (a PATCH of type apply, counted apart by the API server).
    if (verb != "POST" && verb != "PUT" && verb != "PATCH" && verb != "APPLY" && verb != "DELETE") continue;
    const std::string code = label("code");
    out[verb + " " + resource + (code.size() == 3 && code[0] == '2' ? "" : " " + code)] += v;
  }
  return out;
}

// Writes between two scrapes, without the nodes' own heartbeats (Node status, Leases: hollow
// kubelets write them all the time, whoever schedules) and the scheduler's leader lease.
struct Writes {
  double total = 0;
  std::string breakdown;
};
Writes WritesBetween(const std::map<std::string, double>& before, const std::map<std::string, double>& after) {
  Writes w;
  for (const auto& [k, v] : after) {
    auto b = before.find(k);
    double d = v - (b == before.end() ? 0 : b->second);
    if (d <= 0 || k.find(" leases") != std::string::npos || k.find(" nodes") != std::string::npos || k[1] == ':') continue;
    w.total += d;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s%s: %.0f", w.breakdown.empty() ? "" : ", ", k.c_str(), d);
    w.breakdown += buf;
  }
  return w;
}

// Where the API server's request time went between two scrapes (request durations summed, per
// verb and resource; reads included, watches left out), largest first.
std::string ApiserverTime(const std::map<std::string, double>& before, const std::map<std::string, double>& after) {
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : after) {
    if (k.rfind("t:", 0) != 0) continue;
    auto b = before.find(k);
    double d = v - (b == before.end() ? 0 : b->second);
    auto n_after = after.find("n:" + k.substr(2));
    auto n_before = before.find("n:" + k.substr(2));
    double n = (n_after == after.end() ? 0 : n_after->second) - (n_before == before.end() ? 0 : n_before->second);
    if (d < 0.05 || n <= 0 || k.find(" leases") != std::string::npos || k.find(" nodes") != std::string::npos) continue;
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s: %.0f x %.1f ms = %.1f s", k.substr(2).c_str(), n, 1000 * d / n, d);
    rows.emplace_back(d, buf);
  }
  std::sort(rows.rbegin(), rows.rend());
  std::string out;
  for (const auto& [d, s] : rows) out += (out.empty() ? "" : "; ") + s;
  return out;
}

// CPU seconds (user + system) a process has used so far; 0 if it is gone.
double CpuSeconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(text.substr(close + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) {
      stime = std::stod(f);
      break;
    }
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int PidFromFile(const std::string& path) {
  std::ifstream in(path);
  int pid = -1;
  in >> pid;
  return pid;
}

long RssKiB(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// A CA and a serving certificate for 127.0.0.1 (openssl) in `dir` (ca.crt, tls.crt, tls.key);
// returns the CA's PEM.
std::string MakeServingCert(const std::string& dir) {
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
  return ca.str();
}

// Serves berth's admission webhook from `controller_args` and registers it (certificates made
// with openssl); returns the extra controller flags.
std::vector<std::string> SetUpWebhook() {
  std::string dir = ControlPlane::Get().dir() + "/webhook";
  int port = berth::testing::FreePort();
  const std::string ca = MakeServingCert(dir);
  Kubectl({"apply", "-f", "-"},
          "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: berth-runs}\n"
          "webhooks:\n- name: runs.berth.dev\n  admissionReviewVersions: [v1]\n  sideEffects: None\n  failurePolicy: Ignore\n"
          "  clientConfig:\n    url: https://127.0.0.1:" + std::to_string(port) + "/mutate-runs\n    caBundle: " +
              k8s::Base64Encode(ca) +
              "\n  rules:\n  - apiGroups: [berth.dev]\n    apiVersions: [v1alpha1]\n    operations: [CREATE]\n"
              "    resources: [runs]\n");
  return {"--webhook-bind-address=127.0.0.1:" + std::to_string(port), "--webhook-cert-dir=" + dir};
}

// Applies the chart's admission policies (templates/admission-policies.yaml as Helm renders it for a
// cluster that serves them, Kubernetes 1.36+) and waits until the API server enforces them: a run
// above a probe namespace's cap is refused. berth-controller runs as the control plane's admin user
// in the benchmarks, not as the chart's ServiceAccount, so the policies name "admin" where the chart
// names the ServiceAccount (as tests/integration/jobs_test.cc does): otherwise the Pods policy of
// issue 44 refuses berth's own Pods (the fleet's toleration) and the Jobs policy of issue 45 its
// unsuspend. The driver, the Job controller and kube-scheduler run as admin too, so the policies
// that skip berth's writes (matchConditions not-berth) skip theirs as well. `jobs` (issue 45,
// berth's Job path): also waits until a labelled Job is held at creation (suspended, Pods gated).
void SetUpPolicies(bool jobs) {
  CommandResult r = berth::testing::RunCommand(
      {"helm", "template", "berth", std::string(BERTH_SOURCE_DIR) + "/deploy/helm/berth", "--namespace", "berth-system",
       "--set", "admissionPolicies=true", "--api-versions", "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
       "--api-versions", "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy", "--show-only",
       "templates/admission-policies.yaml"});
  if (r.exit_code != 0) {
    std::fprintf(stderr, "helm template failed: %s\n", r.err.c_str());
    std::exit(1);
  }
  std::string policies = r.out;
  const std::string sa = "system:serviceaccount:berth-system:berth-controller";
  for (size_t at = policies.find(sa); at != std::string::npos; at = policies.find(sa, at)) policies.replace(at, sa.size(), "admin");
  Kubectl({"apply", "-f", "-"}, policies);
  Kubectl({"apply", "-f", "-"}, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: policy-probe\n  labels: {berth.dev/max-priority: \"0\"}\n");
  int tries = 0;
  // A refusal for the cap (403), not the 503 the mutating policy answers until the API server has
  // loaded the Run schema (docs/install.md#admission).
  bool enforced = Eventually([&] {
    auto r = Client()->Create(k8s::resources::kRuns.Path("policy-probe"), RunBody("probe-" + std::to_string(tries++), R"("priority":1,)"));
    return !r.ok() && r.status().IsForbidden();
  }, std::chrono::seconds(90));
  if (!enforced) {
    std::fprintf(stderr, "the admission policies were not enforced within 90 s\n");
    std::exit(1);
  }
  // The probes let in before the policies took effect would take capacity once berth starts (the
  // priority scenario's one node): gone before it does (berth lifts their finalizer when it starts).
  Kubectl({"delete", "runs", "--all", "-n", "policy-probe", "--wait=false"});
  if (!jobs) return;
  // A labelled Job created unsuspended (dry run) comes back suspended with its Pods' gate.
  const std::string probe = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: probe, namespace: policy-probe, labels: "
                            "{berth.dev/queue: \"true\"}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n"
                            "      containers: [{name: main, image: busybox}]\n";
  const bool held = Eventually([&] {
    CommandResult c = ControlPlane::Get().Kubectl(
        {"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.suspend} {.spec.template.spec.schedulingGates[*].name}"}, probe);
    return c.exit_code == 0 && c.out == "true berth.dev/admission";
  }, std::chrono::seconds(90));
  if (!held) {
    std::fprintf(stderr, "the chart's MutatingAdmissionPolicy for Jobs was not in effect within 90 s\n");
    std::exit(1);
  }
}

// ---------------------------------------------------------------------------------------------

// The flags each Kubernetes anchor runs with (printed in the table as they are passed): every
// client unthrottled. --concurrent-job-syncs: the Job controller's workers (a flag since 1.21;
// 1.20 had 5, fixed), 5 by default as there (--job-syncs N sets it).
const std::vector<std::string> kSchedulerFlags = {"--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000"};
std::vector<std::string> JobControllerFlags() {
  return {"--controllers=job", "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000",
          "--concurrent-job-syncs=" + std::to_string(Flag("job-syncs", 5))};
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

pid_t StartKubeScheduler() {
  const auto& cp = ControlPlane::Get();
  std::vector<std::string> args = {KubeBin("kube-scheduler"), "--kubeconfig=" + cp.kubeconfig(),
                                   "--authentication-kubeconfig=" + cp.kubeconfig(),
                                   "--authorization-kubeconfig=" + cp.kubeconfig(),
                                   "--secure-port=" + std::to_string(berth::testing::FreePort()), "--bind-address=127.0.0.1"};
  args.insert(args.end(), kSchedulerFlags.begin(), kSchedulerFlags.end());
  return Spawn(args, cp.dir() + "/kube-scheduler.log");
}

pid_t StartJobController() {
  const auto& cp = ControlPlane::Get();
  std::vector<std::string> args = {KubeBin("kube-controller-manager"), "--kubeconfig=" + cp.kubeconfig(),
                                   "--secure-port=0", "--use-service-account-credentials=false"};
  const auto flags = JobControllerFlags();
  args.insert(args.end(), flags.begin(), flags.end());
  return Spawn(args, cp.dir() + "/kube-controller-manager-jobs.log");
}

// Kueue (hack/build-kube.sh kueue): its binary (CACHE/tools/bin) and the module its CRDs and
// webhooks come from (the Go module cache).
std::string KueueBin() {
  std::string d = KwokBin();
  return d.substr(0, d.rfind('/')) + "/kueue";
}
std::string KueueModuleDir() {
  static const std::string dir = [] {
    CommandResult r = berth::testing::RunCommand({"bash", std::string(BERTH_SOURCE_DIR) + "/hack/build-kube.sh", "--kueue-dir"});
    return r.out.substr(0, r.out.find('\n'));
  }();
  return dir;
}
std::string KueueVersion() { return KueueModuleDir().substr(KueueModuleDir().rfind('@') + 1); }

// The allocatable capacity of the nodes labelled pool=POOL: {cpu, memory in Gi, GPUs}.
std::array<long long, 3> PoolCapacity(const std::string& pool) {
  k8s::ListOptions opts;
  opts.label_selector = "pool=" + pool;
  std::array<long long, 3> sum{0, 0, 0};
  std::string rv;
  k8s::Status st = Client()->ListEach(k8s::resources::kNodes.Path(), opts, [&](const k8s::json::Value& node) {
    const k8s::json::Value* a = k8s::json::Find(node, {"status", "allocatable"});
    if (a == nullptr) return;
    auto cpu = k8s::ParseMilliValue(k8s::json::GetString(*a, "cpu"));
    auto mem = k8s::ParseValue(k8s::json::GetString(*a, "memory"));
    auto gpu = k8s::ParseValue(k8s::json::GetString(*a, "nvidia.com/gpu", "0"));
    if (cpu.ok()) sum[0] += *cpu / 1000;
    if (mem.ok()) sum[1] += *mem / (1LL << 30);
    if (gpu.ok()) sum[2] += *gpu;
  }, &rv);
  if (!st.ok()) {
    std::fprintf(stderr, "listing nodes failed: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  return sum;
}

// Waits until OBJECT (kind/name) has condition TYPE True (kubectl wait refuses an object that has
// no conditions yet); gives up after 120 s, stopping the control plane.
void AwaitCondition(const std::string& object, const std::string& type) {
  const std::vector<std::string> get = {"get", object, "-o", "jsonpath={.status.conditions[?(@.type==\"" + type + "\")].status}"};
  if (!Eventually([&] { return ControlPlane::Get().Kubectl(get).out == "True"; }, std::chrono::seconds(120))) {
    std::fprintf(stderr, "%s: no condition %s=True within 120 s (control plane %s)\n", object.c_str(), type.c_str(),
                 ControlPlane::Get().dir().c_str());
    StopControlPlane();
    std::exit(1);
  }
}

// Installs Kueue on the current control plane (its CRDs, its webhooks for Jobs and its own kinds
// by URL, bench/e2e/kueue.h says why), starts it and gives it one queue: a ResourceFlavor for the
// nodes labelled pool=POOL, a ClusterQueue with their whole capacity, a LocalQueue in `ns`.
KueueRun StartKueue(const std::string& pool, const std::string& ns, bool wait_for_pods_ready, const std::string& queues_yaml) {
  const auto& cp = ControlPlane::Get();
  const std::string mod = KueueModuleDir();
  Kubectl({"apply", "--server-side", "-f", mod + "/config/components/crd/bases"});
  for (const char* crd : {"workloads", "clusterqueues", "localqueues", "resourceflavors", "workloadpriorityclasses", "cohorts",
                          "admissionchecks", "topologies"}) {
    AwaitCondition(std::string("crd/") + crd + ".kueue.x-k8s.io", "Established");
  }
  Kubectl({"create", "namespace", "kueue-system"});
  bench::KueueProcessConfig c;
  c.webhook_port = berth::testing::FreePort();
  c.metrics_port = berth::testing::FreePort();
  c.health_port = berth::testing::FreePort();
  c.cert_dir = cp.dir() + "/kueue-certs";
  c.wait_for_pods_ready = wait_for_pods_ready;
  const std::string ca = MakeServingCert(c.cert_dir);
  // Without internal certificate management, Kueue 0.17 serves its metrics with the certificate
  // at the fixed path /etc/kueue/metrics/certs (a mounted Secret in its Deployment): the same
  // serving certificate goes there.
  const std::string metrics_certs = "/etc/kueue/metrics/certs";
  if (berth::testing::RunCommand({"mkdir", "-p", metrics_certs}).exit_code != 0 ||
      berth::testing::RunCommand({"cp", c.cert_dir + "/tls.crt", c.cert_dir + "/tls.key", metrics_certs + "/"}).exit_code != 0) {
    std::fprintf(stderr, "cannot write Kueue's metrics certificate to %s (Kueue reads it from there)\n", metrics_certs.c_str());
    StopControlPlane();
    std::exit(1);
  }
  const std::string config = cp.dir() + "/kueue-config.yaml";
  std::ofstream(config) << bench::KueueConfiguration(c);
  KueueRun k;
  k.args = {KueueBin(), "--config=" + config, "--kubeconfig=" + cp.kubeconfig()};
  // For reading what Kueue did (not for figures): BERTH_BENCH_KUEUE_LOG_LEVEL=N adds --zap-log-level=N.
  if (const char* level = std::getenv("BERTH_BENCH_KUEUE_LOG_LEVEL")) k.args.push_back(std::string("--zap-log-level=") + level);
  k.log = cp.dir() + "/kueue.log";
  k.pid = Spawn(k.args, k.log);
  k.flags = bench::KueueFlags(c);
  k.health = "http://127.0.0.1:" + std::to_string(c.health_port) + "/readyz";
  k.metrics = "https://127.0.0.1:" + std::to_string(c.metrics_port) + "/metrics";
  k.ca_file = c.cert_dir + "/ca.crt";
  if (!Eventually([&] { return KueueReady(k); }, std::chrono::seconds(120))) {
    std::fprintf(stderr, "kueue did not become ready; see %s/kueue.log\n", cp.dir().c_str());
    StopProcess(k.pid);
    ControlPlane::Get().Stop();
    std::exit(1);
  }
  std::ifstream manifests_in(mod + "/config/components/webhook/manifests.yaml");
  std::stringstream manifests;
  manifests << manifests_in.rdbuf();
  const std::string webhooks = bench::KueueWebhooks(manifests.str(), c.webhook_port, k8s::Base64Encode(ca));
  if (webhooks.empty()) {
    std::fprintf(stderr, "no webhook found in %s/config/components/webhook/manifests.yaml\n", mod.c_str());
    std::exit(1);
  }
  Kubectl({"apply", "-f", "-"}, webhooks);
  const auto cap = PoolCapacity(pool);
  const std::string queues = queues_yaml.empty() ? bench::KueueQueues(pool, ns, cap[0], cap[1], cap[2]) : queues_yaml;
  // Its own webhooks check the queues: retried until the API server reaches them.
  if (!Eventually([&] { return ControlPlane::Get().Kubectl({"apply", "-f", "-"}, queues).exit_code == 0; }, std::chrono::seconds(60))) {
    std::fprintf(stderr, "the Kueue queues could not be created; see %s/kueue.log\n", cp.dir().c_str());
    std::exit(1);
  }
  AwaitCondition("clusterqueue/" + std::string(bench::kKueueClusterQueue), "Active");
  return k;
}

bool KueueReady(const KueueRun& k) {
  int code = 0;
  berth::testing::HttpGet(k.health, &code);
  return code == 200;
}

void RestartKueue(KueueRun& k) {
  StopProcess(k.pid);
  k.pid = Spawn(k.args, k.log + ".restarted");
}

std::string KueueMetrics(const KueueRun& k) {
  return berth::testing::RunCommand({"curl", "-sS", "-m", "10", "--cacert", k.ca_file, "-H",
                                     "Authorization: Bearer " + ControlPlane::Get().AdminToken(), k.metrics}).out;
}

struct AnchorResult {
  std::string name, flags, timed, unit;
  double seconds = 0, creating = 0;  // timed; of which the benchmark spent creating the objects
  int refused = 0;
  Writes writes;
  std::string apiserver_time;
  std::string events;  // the namespace's Events at the end, by component and reason
  // CPU seconds during the timed window.
  double cpu_apiserver = 0, cpu_etcd = 0, cpu_scheduler = 0, cpu_driver = 0, cpu_kwok = 0;
  // berth only: its scheduling passes while timed (berth_scheduling_cycle_duration_seconds).
  double passes = 0, pass_seconds = 0;
};

// The count and sum of a histogram on a /metrics page (0, 0 when absent).
std::pair<double, double> HistogramCountSum(const std::string& page, const std::string& name) {
  double count = 0, sum = 0;
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "_count ", 0) == 0) count = std::atof(line.c_str() + name.size() + 7);
    if (line.rfind(name + "_sum ", 0) == 0) sum = std::atof(line.c_str() + name.size() + 5);
  }
  return {count, sum};
}

// The value of one sample (`name{labels}` exactly as the page spells it), 0 when absent.
double SampleValue(const std::string& page, const std::string& sample) {
  std::istringstream in(page);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(sample + " ", 0) == 0) return std::atof(line.c_str() + sample.size() + 1);
  }
  return 0;
}

// kBerthJobs (issue 45): the Jobs Kueue gets, labelled for berth's queue instead (berth.dev/queue),
// with the chart's policies holding them, the Job controller making their Pods and kube-scheduler
// binding the Pods berth pinned.
// kContractJobs: the writes the contract asks of any queue for a labelled Job (a ticket Run, its
// placement, the Job's release, each Pod's pin), with the chart's policies, deciding nothing.
enum class Anchor { kBerth, kBerthWebhook, kBerthPolicies, kKubeScheduler, kJobs, kKueue, kBerthJobs, kHeldJobs, kContractJobs };

// The Events in `ns` by who reported them and why ("kube-scheduler Scheduled: 2000, ..."), read
// after the writes are counted: which component wrote the `POST events` of a row.
std::string EventsByReason(const std::string& ns) {
  std::map<std::string, int> n;
  k8s::ListOptions opts;
  std::string rv;
  (void)Client()->ListEach(k8s::resources::kEvents.Path(ns), opts, [&](const json::Value& e) {
    std::string who = json::GetString(e, "reportingComponent");
    if (who.empty()) who = json::GetString(json::Find(e, {"source", "component"}));
    n[who + " " + json::GetString(e, "reason")] += 1;
  }, &rv);
  std::string out;
  for (const auto& [k, v] : n) out += (out.empty() ? "" : ", ") + k + ": " + std::to_string(v);
  return out;
}

// The queue that decides nothing (Anchor::kHeldJobs): every suspended Job of `ns` the informer
// shows is unsuspended once, by 16 threads. What holding and releasing a Job costs by itself: the
// floor of any queue that holds Jobs suspended until it admits them (issue 45).
// Tasks done once each by 16 threads (the releasers below): Add queues a task unless one of that
// key was queued before; Stop ends the threads (queued tasks are dropped).
template <typename Task>
class OnceEach {
 public:
  explicit OnceEach(std::function<void(Task&)> work) : work_(std::move(work)) {
    for (int i = 0; i < 16; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~OnceEach() { Stop(); }
  void Add(const std::string& key, Task t) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!seen_.insert(key).second) return;
    todo_.push_back(std::move(t));
    cv_.notify_one();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Loop() {
    for (;;) {
      Task t;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !todo_.empty(); });
        if (stop_) return;
        t = std::move(todo_.back());
        todo_.pop_back();
      }
      work_(t);
    }
  }
  std::function<void(Task&)> work_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> seen_;
  std::vector<Task> todo_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

class HeldJobReleaser {
 public:
  explicit HeldJobReleaser(const std::string& ns)
      : ns_(ns),
        jobs_(Client(), "/apis/batch/v1/namespaces/" + ns + "/jobs", [](const json::Value& o) { return k8s::DecodeJob(o); },
              [](const k8s::JobView& j) { return j.meta.name; }, "held-jobs"),
        work_([this](std::string& name) { Release(name); }) {
    jobs_.AddHandler([this](const std::string& name, const auto&, const auto& cur) {
      if (cur && cur->suspended) work_.Add(name, name);
    });
    jobs_.Start();
  }
  ~HeldJobReleaser() {
    jobs_.Stop();
    work_.Stop();
  }

 private:
  void Release(const std::string& name) {
    auto r = Client()->MergePatch("/apis/batch/v1/namespaces/" + ns_ + "/jobs/" + name, R"({"spec":{"suspend":false}})");
    if (!r.ok()) std::fprintf(stderr, "release of Job %s: %s\n", name.c_str(), r.status().ToString().c_str());
  }
  std::string ns_;
  k8s::Informer<k8s::JobView> jobs_;
  OnceEach<std::string> work_;
};

namespace api = berth::api::v1alpha1;

// A queue that makes exactly the writes berth's contract asks for a labelled Job and decides
// nothing (Anchor::kContractJobs, issue 45): for each suspended Job the informer shows, the
// ticket Run berth would create (api::EncodeTicket of workloads::TicketSpecOf), its placement
// status (one merge patch, as berth's admission writes it), the Job's release (the kind's
// ReleasePatch); for each of its gated Pods, the pin berth sends (k8s::PinPodPatch of its
// PinSource: node affinity to a node, the fleet's toleration, labels, the gate lifted). Nodes are
// taken in turn, one GPU each, with no check: what the contract's writes cost by themselves, the
// ceiling of any queue that keeps berth's contract for Jobs (its writes, its policies).
class ContractJobReleaser {
 public:
  ContractJobReleaser(const std::string& ns, int nodes)
      : ns_(ns),
        nodes_(nodes),
        jobs_(Client(), "/apis/batch/v1/namespaces/" + ns + "/jobs",
              [](const json::Value& o) { return workloads::KindOf("Job")->Decode(o); },
              [](const workloads::Workload& j) { return j.meta.name; }, "contract-jobs"),
        pods_(Client(), k8s::resources::kPods.Path(ns),
              [](const json::Value& o) {
                auto p = std::make_shared<PodSeen>();
                p->name = json::GetString(json::Find(o, {"metadata", "name"}));
                p->job = json::GetString(json::Find(o, {"metadata", "labels", "batch.kubernetes.io/job-name"}));
                p->source = k8s::PinSource(o, workloads::kAdmissionGate);
                return std::shared_ptr<const PodSeen>(p);
              },
              [](const PodSeen& p) { return p.name; }, "contract-pods"),
        work_([this](Task& t) {
          if (t.job) Admit(*t.job);
          if (t.pod) Pin(*t.pod);
        }) {
    jobs_.AddHandler([this](const std::string& name, const auto&, const auto& cur) {
      if (cur && cur->suspended) work_.Add("job/" + name, Task{cur, nullptr});
    });
    pods_.AddHandler([this](const std::string& name, const auto&, const auto& cur) {
      if (cur && !cur->source.empty() && !cur->job.empty()) work_.Add("pod/" + name, Task{nullptr, cur});
    });
    jobs_.Start();
    pods_.Start();
  }
  ~ContractJobReleaser() {
    jobs_.Stop();
    pods_.Stop();
    work_.Stop();
  }

 private:
  struct PodSeen {
    std::string name, job, source;
  };
  struct Task {
    std::shared_ptr<const workloads::Workload> job;
    std::shared_ptr<const PodSeen> pod;
  };
  std::string NodeOf(const std::string& job) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, added] = node_of_.emplace(job, "");
    if (added) it->second = "pool-" + std::to_string(next_node_++ % nodes_);
    return it->second;
  }
  void Admit(const workloads::Workload& job) {
    const workloads::WorkloadKind& kind = *workloads::KindOf("Job");
    const std::string ticket = workloads::TicketName(kind.TicketPrefix(), job.meta.name);
    k8s::ObjectMeta meta;
    meta.ns = ns_;
    meta.name = ticket;
    const k8s::OwnerRef owner{std::string(kind.ApiVersion()), std::string(kind.Kind()), job.meta.name, job.meta.uid, false};
    auto created = Client()->Create(k8s::resources::kRuns.Path(ns_),
                                    api::EncodeTicket(meta, owner, workloads::TicketSpecOf(kind, job, "nvidia.com/gpu").spec));
    if (!created.ok()) {
      std::fprintf(stderr, "ticket %s: %s\n", ticket.c_str(), created.status().ToString().c_str());
      return;
    }
    const std::string node = NodeOf(job.meta.name);
    api::RunStatus st;
    st.phase = api::Phase::kScheduled;
    st.reason = api::Reason::kScheduled;
    st.message = "placed on fleet gpu: " + node + " (1 block)";
    st.fleet = "gpu";
    st.placement = {api::PlacementEntry{0, node, 1, ""}};
    st.effective_priority = 50;
    const auto now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
    st.submitted_at = api::Time(now);
    st.scheduled_at = api::Time(now);
    api::SetCondition(st.conditions, api::ConditionType::kScheduled, api::ConditionStatus::kTrue, api::Reason::kScheduled,
                      st.message, 1, now);
    const std::string rv = json::GetString(json::Find(*created, {"metadata", "resourceVersion"}));
    auto placed = Client()->MergePatch(k8s::resources::kRuns.Path(ns_, ticket) + "/status", api::RunStatusPatch(st, rv));
    if (!placed.ok()) std::fprintf(stderr, "placement of %s: %s\n", ticket.c_str(), placed.status().ToString().c_str());
    auto released = Client()->MergePatch("/apis/batch/v1/namespaces/" + ns_ + "/jobs/" + job.meta.name, kind.ReleasePatch());
    if (!released.ok()) std::fprintf(stderr, "release of Job %s: %s\n", job.meta.name.c_str(), released.status().ToString().c_str());
  }
  void Pin(const PodSeen& pod) {
    const std::string ticket = workloads::TicketName("job", pod.job);
    const std::string patch = k8s::PinPodPatch(pod.source, workloads::PinOf(ticket, 0, NodeOf(pod.job), "gpu"));
    auto r = Client()->MergePatch(k8s::resources::kPods.Path(ns_, pod.name), patch);
    if (!r.ok()) std::fprintf(stderr, "pin of Pod %s: %s\n", pod.name.c_str(), r.status().ToString().c_str());
  }
  std::string ns_;
  int nodes_;
  k8s::Informer<workloads::Workload> jobs_;
  k8s::Informer<PodSeen> pods_;
  std::mutex mu_;  // node_of_, next_node_
  std::map<std::string, std::string> node_of_;
  int next_node_ = 0;
  OnceEach<Task> work_;  // last: its threads stop before the members above go
};

// One anchor on a fresh control plane with `nodes` fresh nodes: the clock runs from the first
// object created to every Pod bound (hollow nodes: admitted by its kubelet and Running).
std::optional<AnchorResult> RunAnchor(Anchor anchor, int nodes, int runs) {
  StartControlPlane();
  if (Hollow()) berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "controller-manager", ControlPlane::Get().dir()});
  const std::string ns = "bench";
  Kubectl({"create", "namespace", ns});
  MakeNodes("pool", nodes);
  AnchorResult out;
  std::unique_ptr<ControllerProcess> controller;
  std::vector<pid_t> kube;  // kube-scheduler, kube-controller-manager
  std::vector<int> scheduler_pids;
  int metrics_port = 0;  // berth's
  const std::string kPassMetric = "berth_scheduling_cycle_duration_seconds";
  auto passes = [&] {
    return metrics_port ? HistogramCountSum(berth::testing::HttpGet("http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics"),
                                            kPassMetric)
                        : std::pair<double, double>{0, 0};
  };
  const bool is_berth = anchor == Anchor::kBerth || anchor == Anchor::kBerthWebhook || anchor == Anchor::kBerthPolicies ||
                        anchor == Anchor::kBerthJobs;
  if (is_berth) {
    Kubectl({"apply", "-f", "-"}, std::string("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: gpu}\nspec:\n  nodeSelector: {pool: pool}\n  blocks: ") +
                                      (Hollow() ? "8" : "auto") + "\n");
    std::vector<std::string> args;
    if (anchor == Anchor::kBerthWebhook) args = SetUpWebhook();
    if (anchor == Anchor::kBerthPolicies || anchor == Anchor::kBerthJobs) SetUpPolicies(anchor == Anchor::kBerthJobs);
    metrics_port = berth::testing::FreePort();
    args.push_back("--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port));
    args.push_back("--queue-auth=false");  // /queue read by the bench on loopback
    controller = std::make_unique<ControllerProcess>(args, "bench-controller");
    controller->Start();
    scheduler_pids.push_back(controller->pid());
    out.name = anchor == Anchor::kBerthWebhook    ? "berth, admission webhook (chart default before 1.36)"
               : anchor == Anchor::kBerthPolicies ? "berth, admission policies (chart default on 1.36+)"
                                                  : "berth, no admission";
    out.flags = anchor == Anchor::kBerthWebhook    ? "(defaults) --webhook-bind-address=... (finalizer set at creation)"
                : anchor == Anchor::kBerthPolicies ? "(defaults); the chart's Mutating/ValidatingAdmissionPolicy (finalizer set at creation; berth's user: admin)"
                                                   : "(defaults)";
    out.timed = "first Run created -> every Pod";
    out.unit = "runs/s";
    if (anchor == Anchor::kBerthJobs) {
      kube.push_back(StartKubeScheduler());
      kube.push_back(StartJobController());
      for (pid_t p : kube) scheduler_pids.push_back(p);
      out.name = "berth, Jobs (label berth.dev/queue; the chart's policies; Job controller + kube-scheduler " + KubeVersion() + ")";
      out.flags = "(defaults); the chart's Mutating/ValidatingAdmissionPolicy (berth's user: admin); kube-scheduler " +
                  Join(kSchedulerFlags) + "; kube-controller-manager " + Join(JobControllerFlags());
      out.timed = "first Job created -> every Pod";
      out.unit = "jobs/s";
    }
  } else {
    kube.push_back(StartKubeScheduler());
    out.flags = "kube-scheduler " + Join(kSchedulerFlags);
    out.name = "kube-scheduler " + KubeVersion() + ", pre-made Pods";
    out.timed = "first Pod created -> every Pod";
    out.unit = "pods/s";
    if (anchor == Anchor::kJobs || anchor == Anchor::kKueue || anchor == Anchor::kHeldJobs || anchor == Anchor::kContractJobs) {
      kube.push_back(StartJobController());
      out.flags += "; kube-controller-manager " + Join(JobControllerFlags());
      out.name = "Jobs: kube-controller-manager's Job controller + kube-scheduler " + KubeVersion();
      out.timed = "first Job created -> every Pod";
      out.unit = "jobs/s";
    }
    if (anchor == Anchor::kHeldJobs) {
      out.name = "Jobs held and released, no queue: created suspended, unsuspended by a watch that decides nothing; "
                 "Job controller + kube-scheduler " + KubeVersion();
      out.flags += "; releaser: a Job informer, 16 threads, one merge patch spec.suspend=false per Job";
    }
    if (anchor == Anchor::kContractJobs) {
      SetUpPolicies(true);
      out.name = "Jobs with berth's contract and no decisions: labelled berth.dev/queue, the chart's policies; per Job the "
                 "ticket Run, its placement, the release, each Pod's pin, by a watch that decides nothing; "
                 "Job controller + kube-scheduler " + KubeVersion();
      out.flags += "; the chart's Mutating/ValidatingAdmissionPolicy (the releaser's user: admin); releaser: a Job and a "
                   "Pod informer, 16 threads, nodes in turn";
    }
    if (anchor == Anchor::kKueue) {
      const KueueRun k = StartKueue("pool", ns, false);
      kube.push_back(k.pid);
      out.flags = k.flags + "; " + out.flags;
      out.name = "Kueue " + KueueVersion() + " + Job controller + kube-scheduler " + KubeVersion();
    }
    for (pid_t p : kube) scheduler_pids.push_back(p);
  }
  out.timed += Hollow() ? " admitted by its (hollow) kubelet and Running" : Kwok() ? " Running (kwok)" : " bound";
  std::this_thread::sleep_for(std::chrono::seconds(3));  // let it sync before the clock starts
  BoundPods pods(ns);
  const std::string dir = ControlPlane::Get().dir();
  const int apiserver = PidFromFile(dir + "/apiserver.pid"), etcd = PidFromFile(dir + "/etcd.pid");
  auto cpu = [&] {
    double s = 0;
    for (int p : scheduler_pids) s += CpuSeconds(p);
    return std::array<double, 5>{CpuSeconds(apiserver), CpuSeconds(etcd), s, CpuSeconds(getpid()),
                                 g_kwok > 0 ? CpuSeconds(g_kwok) : 0.0};
  };
  auto before = ScrapeApiserver();
  // --perf 1: a CPU profile of the scheduler process(es) while timed (perf record; read it with
  // perf report -i DIR/perf-<anchor>.data).
  // --perf 2: of kube-apiserver instead, from its own profiler (/debug/pprof/profile, named Go
  // functions: the Kubernetes binaries are built stripped) over the first 10 s: read it with
  // go tool pprof -top DIR/apiserver-<anchor>.pprof.
  pid_t perf = -1;
  if (Flag("perf", 0) == 2) {
    std::ifstream port_in(dir + "/apiserver.port"), token_in(dir + "/admin.token");
    std::string port, token;
    port_in >> port;
    token_in >> token;
    perf = Spawn({"/usr/bin/curl", "-sS", "-o", dir + "/apiserver-" + std::to_string(static_cast<int>(anchor)) + ".pprof", "--cacert",
                  dir + "/certs/apiserver.crt", "-H", "Authorization: Bearer " + token,
                  "https://127.0.0.1:" + port + "/debug/pprof/profile?seconds=10"},
                 dir + "/pprof.log");
  } else if (Flag("perf", 0) != 0) {
    std::vector<std::string> args = {"/usr/bin/perf", "record", "-F", "499", "-g", "-o",
                                     dir + "/perf-" + std::to_string(static_cast<int>(anchor)) + ".data", "-p"};
    std::string list;
    for (int p : scheduler_pids) list += (list.empty() ? "" : ",") + std::to_string(p);
    args.push_back(list);
    perf = Spawn(args, dir + "/perf.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  const auto passes0 = passes();
  auto cpu0 = cpu();
  // The same share of a node as berth's one-block Pods: 1/8 of it.
  const std::string share = Hollow() ? R"("cpu":"125m","memory":"480Mi","nvidia.com/gpu":"1")"
                                     : R"("cpu":"8","memory":"64Gi","nvidia.com/gpu":"1")";
  const std::string pod_spec = R"({"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":{"requests":{)" +
                               share + R"(},"limits":{)" + share + R"(}}}]})";
  std::unique_ptr<HeldJobReleaser> releaser;
  if (anchor == Anchor::kHeldJobs) releaser = std::make_unique<HeldJobReleaser>(ns);
  std::unique_ptr<ContractJobReleaser> contract;
  if (anchor == Anchor::kContractJobs) contract = std::make_unique<ContractJobReleaser>(ns, nodes);
  auto t0 = Clock::now();
  Parallel(runs, 16, [&](int i) {
    const std::string n = std::to_string(i);
    switch (anchor) {
      case Anchor::kBerth:
      case Anchor::kBerthWebhook:
      case Anchor::kBerthPolicies:
        MustCreate(k8s::resources::kRuns.Path(ns), RunBody("r" + n, R"("resources":{"gpu":1},)"));
        break;
      case Anchor::kKubeScheduler:
        MustCreate(k8s::resources::kPods.Path(ns), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p)" + n +
                                                       R"("},"spec":)" + pod_spec + "}");
        break;
      case Anchor::kKueue:
        MustCreate("/apis/batch/v1/namespaces/" + ns + "/jobs", bench::KueueJob("j" + n, pod_spec));
        break;
      case Anchor::kBerthJobs:
      case Anchor::kContractJobs:
        MustCreate("/apis/batch/v1/namespaces/" + ns + "/jobs", bench::BerthJob("j" + n, pod_spec));
        break;
      case Anchor::kHeldJobs:
        MustCreate("/apis/batch/v1/namespaces/" + ns + "/jobs", bench::HeldJob("j" + n, pod_spec));
        break;
      case Anchor::kJobs:
        MustCreate("/apis/batch/v1/namespaces/" + ns + "/jobs",
                   R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j)" + n +
                       R"("},"spec":{"backoffLimit":0,"template":{"spec":)" + pod_spec + "}}}");
        break;
    }
  });
  out.creating = Seconds(Clock::now() - t0);
  bool done = Eventually([&] { return pods.Done(runs); }, std::chrono::seconds(600));
  out.seconds = Seconds(pods.DoneAt() - t0);
  auto cpu1 = cpu();
  const auto passes1 = passes();
  out.passes = passes1.first - passes0.first;
  out.pass_seconds = passes1.second - passes0.second;
  if (perf > 0 && Flag("perf", 0) == 2) {
    waitpid(perf, nullptr, 0);
    std::fprintf(stderr, "%s: profile in %s/apiserver-%d.pprof\n", out.name.c_str(), dir.c_str(), static_cast<int>(anchor));
  } else if (perf > 0) {
    kill(perf, SIGINT);
    waitpid(perf, nullptr, 0);
    std::fprintf(stderr, "%s: profile in %s/perf-%d.data\n", out.name.c_str(), dir.c_str(), static_cast<int>(anchor));
  }
  // Writes that trail the last binding (Events, status) are the job's too: count them after 2 s.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto after = ScrapeApiserver();
  out.writes = WritesBetween(before, after);
  out.apiserver_time = ApiserverTime(before, after);
  out.events = EventsByReason(ns);
  out.cpu_apiserver = cpu1[0] - cpu0[0];
  out.cpu_etcd = cpu1[1] - cpu0[1];
  out.cpu_scheduler = cpu1[2] - cpu0[2];
  out.cpu_driver = cpu1[3] - cpu0[3];
  out.cpu_kwok = cpu1[4] - cpu0[4];
  out.refused = pods.refused();
  pods.informer().Stop();
  releaser.reset();  // their watches end before the control plane does
  contract.reset();
  if (controller) controller->Stop();
  for (pid_t p : kube) StopProcess(p);
  if (!done) {
    std::fprintf(stderr, "%s: only %d of %d pods bound, %d running (control plane %s)\n", out.name.c_str(), pods.bound(),
                 runs, pods.running(), dir.c_str());
    StopControlPlane();
    return std::nullopt;
  }
  StopControlPlane();
  return out;
}

// berth's own writes among `w`'s (issue 45, the Job path): its tickets (runs, runs/status), its
// hold and release of the Jobs (PATCH jobs) and its pins of their Pods (PATCH pods). The rest are
// the user's Job, the Job controller's (Pods, Job status, Events) and kube-scheduler's (bindings,
// Events).
double BerthsJobWrites(const std::string& breakdown) {
  double n = 0;
  std::istringstream in(breakdown);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(' '));
    const size_t colon = item.rfind(": ");
    if (colon == std::string::npos) continue;
    const std::string what = item.substr(0, colon);
    auto is = [&](const std::string& verb_resource) {  // that resource, not a subresource of it
      return what == verb_resource || what.rfind(verb_resource + " ", 0) == 0;
    };
    const bool berths = what.find(" runs") != std::string::npos || is("PATCH jobs") || is("PATCH pods");
    if (berths) n += std::atof(item.c_str() + colon + 2);
  }
  return n;
}

// The goals of issue 45 for berth's Job path, from one throughput run.
void JobsGoals(std::map<Anchor, AnchorResult>& results, int runs) {
  const AnchorResult& jobs = results[Anchor::kBerthJobs];
  std::printf("\n| issue 45 goal | berth, Jobs | against | ratio |\n|---|---|---|---|\n");
  if (results.count(Anchor::kKueue) != 0) {
    const AnchorResult& k = results[Anchor::kKueue];
    std::printf("| throughput >= 3x Kueue's, Jobs | %.0f jobs/s | Kueue %.0f jobs/s | **%.2f** |\n", runs / jobs.seconds,
                runs / k.seconds, k.seconds / jobs.seconds);
    std::printf("| API server CPU per Job | %.1f ms | Kueue %.1f ms | %.2f |\n", 1000 * jobs.cpu_apiserver / runs,
                1000 * k.cpu_apiserver / runs, jobs.cpu_apiserver / k.cpu_apiserver);
    std::printf("| writes per Job | %.2f | Kueue %.2f | %.2f |\n", jobs.writes.total / runs, k.writes.total / runs,
                jobs.writes.total / k.writes.total);
  }
  if (results.count(Anchor::kJobs) != 0) {
    // The ceiling: the same Jobs with no queue at all. A queue that lets the Job controller make
    // the Pods adds to this row's work; it cannot go faster or write less.
    const AnchorResult& none = results[Anchor::kJobs];
    if (results.count(Anchor::kKueue) != 0) {
      std::printf("| ceiling: the same Jobs without any queue / Kueue | %.0f jobs/s | Kueue %.0f jobs/s | %.2f |\n",
                  runs / none.seconds, runs / results[Anchor::kKueue].seconds, results[Anchor::kKueue].seconds / none.seconds);
    }
    std::printf("| berth's Jobs / the same Jobs without any queue | %.0f jobs/s | %.0f jobs/s | %.2f |\n", runs / jobs.seconds,
                runs / none.seconds, none.seconds / jobs.seconds);
    if (results.count(Anchor::kHeldJobs) != 0 && results.count(Anchor::kKueue) != 0) {
      // Holding a Job suspended until admitted is the contract (issue 45, item 2): no queue that
      // does so can pass this row, whatever it decides.
      const AnchorResult& held = results[Anchor::kHeldJobs];
      std::printf("| ceiling of a queue that holds Jobs suspended: held and released by a watch deciding nothing / Kueue | %.0f jobs/s | Kueue %.0f jobs/s | %.2f |\n",
                  runs / held.seconds, runs / results[Anchor::kKueue].seconds, results[Anchor::kKueue].seconds / held.seconds);
      std::printf("| floor: writes per Job held and released / berth's Run path | %.2f | berth's Runs %.2f | %.2f |\n",
                  held.writes.total / runs, results.count(Anchor::kBerthPolicies) ? results[Anchor::kBerthPolicies].writes.total / runs : 0.0,
                  results.count(Anchor::kBerthPolicies) ? held.writes.total / results[Anchor::kBerthPolicies].writes.total : 0.0);
    }
    if (results.count(Anchor::kContractJobs) != 0 && results.count(Anchor::kKueue) != 0) {
      // berth's contract for a Job (the chart's policies, a ticket Run, its placement, the release,
      // each Pod's pin) written by a watch that decides nothing: no queue keeping that contract
      // can pass this row on this machine, however it decides.
      const AnchorResult& c = results[Anchor::kContractJobs];
      std::printf("| ceiling of a queue that keeps berth's contract: its writes by a watch deciding nothing / Kueue | %.0f jobs/s | Kueue %.0f jobs/s | %.2f |\n",
                  runs / c.seconds, runs / results[Anchor::kKueue].seconds, results[Anchor::kKueue].seconds / c.seconds);
      std::printf("| berth's Jobs / that ceiling | %.0f jobs/s | %.0f jobs/s | %.2f |\n", runs / jobs.seconds, runs / c.seconds,
                  c.seconds / jobs.seconds);
      std::printf("| API server CPU per Job, berth / that ceiling | %.1f ms | %.1f ms | %.2f |\n", 1000 * jobs.cpu_apiserver / runs,
                  1000 * c.cpu_apiserver / runs, jobs.cpu_apiserver / c.cpu_apiserver);
    }
    if (results.count(Anchor::kBerthPolicies) != 0) {
      const AnchorResult& r = results[Anchor::kBerthPolicies];
      std::printf("| floor: writes per Job without any queue / berth's Run path | %.2f | berth's Runs %.2f | %.2f |\n",
                  none.writes.total / runs, r.writes.total / runs, none.writes.total / r.writes.total);
    }
  }
  if (results.count(Anchor::kBerthPolicies) != 0) {
    const AnchorResult& r = results[Anchor::kBerthPolicies];
    const double own = BerthsJobWrites(jobs.writes.breakdown);
    std::printf("| writes per Job within 1.5x of berth's Run path: all writes | %.2f | berth's Runs %.2f | **%.2f** |\n",
                jobs.writes.total / runs, r.writes.total / runs, jobs.writes.total / r.writes.total);
    std::printf("| the same, berth's own writes (tickets, PATCH jobs, PATCH pods) | %.2f | berth's Runs %.2f (all berth's or the user's) | %.2f |\n",
                own / runs, r.writes.total / runs, own / r.writes.total);
    std::printf("| API server CPU per Job / per Run | %.1f ms | berth's Runs %.1f ms | %.2f |\n", 1000 * jobs.cpu_apiserver / runs,
                1000 * r.cpu_apiserver / runs, jobs.cpu_apiserver / r.cpu_apiserver);
  }
}

int Throughput() {
  const int nodes = Flag("nodes", Hollow() ? 50 : 500), runs = Flag("runs", Hollow() ? nodes * 8 : 2000);
  std::vector<Anchor> anchors;
  if (Flag("compare", 1) == 0) {
    const int admission = Flag("webhook", 0);  // 0: none, 1: the webhook, 2: the admission policies
    anchors = {admission == 2 ? Anchor::kBerthPolicies : admission == 1 ? Anchor::kBerthWebhook : Anchor::kBerth};
  } else {
    anchors = {Anchor::kKubeScheduler, Anchor::kJobs, Anchor::kBerth, Anchor::kBerthWebhook, Anchor::kBerthPolicies};
    if (Flag("jobs", 0) != 0) anchors.push_back(Anchor::kBerthJobs);  // issue 45: berth's Job path
    if (Flag("kueue", 0) != 0) anchors.push_back(Anchor::kKueue);
  }
  // --jobs 2: only the rows of berth's Job path beside Kueue (issue 45), with berth's Run path
  // (the chart's policies) for its writes per run.
  if (Flag("jobs", 0) == 2) {
    // The Jobs row (no queue: the Job controller and kube-scheduler alone) is the ceiling of any
    // queue that lets the real Job controller make the Pods: its throughput and writes bound the
    // goals of issue 45 (docs/performance.md, "Jobs beside Kueue").
    anchors = {Anchor::kJobs, Anchor::kHeldJobs, Anchor::kContractJobs, Anchor::kBerthPolicies, Anchor::kBerthJobs};
    if (Flag("kueue", 0) != 0) anchors.push_back(Anchor::kKueue);
  }
  if (Flag("kueue", 0) == 2) anchors = {Anchor::kKueue};  // Kueue alone (trying its set-up)
  if (Flag("jobs", 0) == 3) anchors = {Anchor::kBerthJobs};  // berth's Job path alone (profiling it)
  if (Flag("jobs", 0) == 4) anchors = {Anchor::kContractJobs, Anchor::kBerthJobs};  // berth beside its contract's ceiling
  std::map<Anchor, AnchorResult> results;
  for (Anchor a : anchors) {
    auto r = RunAnchor(a, nodes, runs);
    if (!r) return 1;
    results[a] = *r;
  }
  std::printf("\n## Throughput: %d single-node 1-GPU jobs on %d %s x 8 GPUs (Kubernetes %s)\n\n", runs, nodes,
              Hollow()  ? "kubemark hollow nodes (real kubelet admission)"
              : Kwok() ? "kwok-managed Node objects (kwok makes every bound Pod Running)"
                       : "bare Node objects",
              KubeVersion().c_str());
  if (Kwok()) std::printf("kwok %s\n\n", ("`" + Join(KwokFlags()) + "`").c_str());
  std::printf("Each row on a fresh control plane (etcd + kube-apiserver) with fresh nodes. Writes per job: POST, PUT, PATCH "
              "(server-side APPLY included) and DELETE counted by the API server (`apiserver_request_total`, before and after; the user's own create "
              "included; Node and Lease heartbeats left out). CPU: seconds of CPU each process used while timed.\n\n");
  std::printf("| anchor | flags | what is timed | seconds (of which creating the %d objects) | per second | writes per job | CPU s: apiserver / etcd / scheduler / bench driver%s | refused by a kubelet |\n|---|---|---|---|---|---|---|---|\n", runs,
              Kwok() ? " / kwok" : "");
  for (Anchor a : anchors) {
    const AnchorResult& r = results[a];
    char kwok_cpu[32] = "";
    if (Kwok()) std::snprintf(kwok_cpu, sizeof kwok_cpu, " / %.1f", r.cpu_kwok);
    std::printf("| %s | `%s` | %s | %.2f (%.2f) | %.0f %s | %.2f | %.1f / %.1f / %.1f / %.1f%s | %d |\n", r.name.c_str(), r.flags.c_str(),
                r.timed.c_str(), r.seconds, r.creating, runs / r.seconds, r.unit.c_str(), r.writes.total / runs, r.cpu_apiserver,
                r.cpu_etcd, r.cpu_scheduler, r.cpu_driver, kwok_cpu, r.refused);
  }
  std::printf("\n| anchor | writes | by verb and resource (non-2xx codes apart) |\n|---|---|---|\n");
  for (Anchor a : anchors) {
    const AnchorResult& r = results[a];
    std::printf("| %s | %.0f | %s |\n", r.name.c_str(), r.writes.total, r.writes.breakdown.c_str());
  }
  for (Anchor a : anchors) {
    const AnchorResult& r = results[a];
    if (r.passes > 0) {
      std::printf("\n%s: %.0f scheduling passes while timed, %.2f s in them (%.1f ms each on average; "
                  "berth_scheduling_cycle_duration_seconds)\n", r.name.c_str(), r.passes, r.pass_seconds,
                  1000 * r.pass_seconds / r.passes);
    }
  }
  std::printf("\n| anchor | Events in the namespace at the end, by component and reason |\n|---|---|\n");
  for (Anchor a : anchors) std::printf("| %s | %s |\n", results[a].name.c_str(), results[a].events.c_str());
  std::printf("\n| anchor | API server time by request (count x mean latency = sum of request durations; WATCH left out) |\n|---|---|\n");
  for (Anchor a : anchors) std::printf("| %s | %s |\n", results[a].name.c_str(), results[a].apiserver_time.c_str());
  if (results.count(Anchor::kKubeScheduler) != 0 && results.count(Anchor::kJobs) != 0) {
    const double ks = results[Anchor::kKubeScheduler].seconds, jobs = results[Anchor::kJobs].seconds;
    std::printf("\n| berth | / kube-scheduler (goal >= 1.0) | / Jobs (goal >= 2.0) |\n|---|---|---|\n");
    for (Anchor a : {Anchor::kBerthPolicies, Anchor::kBerthWebhook, Anchor::kBerth}) {
      const double s = results[a].seconds;
      std::printf("| %s | **%.2f** | **%.2f** |\n", results[a].name.c_str(), ks / s, jobs / s);
    }
  }
  if (results.count(Anchor::kKueue) != 0 && results.count(Anchor::kBerthPolicies) != 0 && results.count(Anchor::kBerth) != 0) {
    const double kueue = results[Anchor::kKueue].seconds;
    std::printf("\n| berth | / Kueue, end to end (goal >= 2.0) |\n|---|---|\n");
    for (Anchor a : {Anchor::kBerthPolicies, Anchor::kBerthWebhook, Anchor::kBerth}) {
      std::printf("| %s | **%.2f** |\n", results[a].name.c_str(), kueue / results[a].seconds);
    }
  }
  if (results.count(Anchor::kBerthJobs) != 0) JobsGoals(results, runs);
  return 0;
}

struct GangResult {
  std::string name, flags;
  bool done = false;
  double seconds = 0;
  int samples = 0, violations = 0, partial = 0, refused = 0;
};

// One gang anchor on a fresh control plane: berth's Runs of nodes: SIZE, or (kueue) Kueue's Jobs of
// parallelism = completions = SIZE whose Pods each take a whole node (8 GPUs), admitted by Kueue
// (waitForPodsReady when a kubelet-like agent makes Pods ready: kwok, hollow) and bound by
// kube-scheduler. The same sampler checks both while they land: a gang's bound Pods are never on
// more than SIZE nodes and no node holds two gangs; at the end, no gang is partly bound.
// berth_jobs (issue 45): the same Indexed Jobs as Kueue's, labelled for berth's queue, held by the
// chart's policies, their Pods made by the Job controller, pinned by berth to its booked nodes and
// bound by kube-scheduler. Kueue's and berth's Jobs are Indexed (completionMode Indexed).
GangResult RunGangs(bool kueue, int nodes, int runs, int size, bool berth_jobs = false) {
  StartControlPlane();
  if (Hollow()) berth::testing::RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "controller-manager", ControlPlane::Get().dir()});
  const std::string ns = "gang-bench";
  Kubectl({"create", "namespace", ns});
  MakeNodes("gang", nodes);
  GangResult out;
  std::unique_ptr<ControllerProcess> controller;
  std::vector<pid_t> kube;
  if (kueue) {
    kube.push_back(StartKubeScheduler());
    kube.push_back(StartJobController());
    const KueueRun k = StartKueue("gang", ns, Agent());
    kube.push_back(k.pid);
    out.name = "Kueue " + KueueVersion() + " + Job controller + kube-scheduler " + KubeVersion();
    out.flags = k.flags + "; kube-scheduler " + Join(kSchedulerFlags) + "; kube-controller-manager " + Join(JobControllerFlags());
  } else {
    Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: gang}\nspec:\n  nodeSelector: {pool: gang}\n  blocks: auto\n  placement: cluster\n");
    if (berth_jobs) SetUpPolicies(/*jobs=*/true);
    controller = std::make_unique<ControllerProcess>(std::vector<std::string>{}, "bench-controller");
    controller->Start();
    out.name = "berth";
    out.flags = "(defaults); Fleet placement: cluster";
    if (berth_jobs) {
      kube.push_back(StartKubeScheduler());
      kube.push_back(StartJobController());
      out.name = "berth, Indexed Jobs (label berth.dev/queue) + Job controller + kube-scheduler " + KubeVersion();
      out.flags += "; the chart's Mutating/ValidatingAdmissionPolicy (berth's user: admin); kube-scheduler " + Join(kSchedulerFlags) +
                   "; kube-controller-manager " + Join(JobControllerFlags());
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  BoundPods pods(ns);
  // Which gang a Pod is of: its Run (berth) or its Job (Kueue).
  auto gang_of = [&](const k8s::Pod& p) {
    return kueue || berth_jobs ? p.meta.Label("batch.kubernetes.io/job-name") : p.meta.Label("berth.dev/run");
  };
  std::atomic<bool> sampling{true};
  std::atomic<int> samples{0}, violations{0};
  std::thread sampler([&] {
    while (sampling) {
      std::map<std::string, std::set<std::string>> nodes_of_run;
      std::map<std::string, int> runs_on_node;
      for (const auto& p : pods.informer().List()) {
        if (p->node_name.empty()) continue;
        if (nodes_of_run[gang_of(*p)].insert(p->node_name).second) ++runs_on_node[p->node_name];
      }
      for (auto& [run, ns] : nodes_of_run) violations += static_cast<int>(ns.size()) > size;
      for (auto& [node, n] : runs_on_node) violations += n > 1;
      ++samples;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const std::string whole_node = R"({"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":)"
                                 R"({"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}]})";
  auto t0 = Clock::now();
  Parallel(runs, 16, [&](int i) {
    if (kueue) {
      MustCreate("/apis/batch/v1/namespaces/" + ns + "/jobs",
                 bench::KueueJob("g" + std::to_string(i), whole_node, size, "", "", bench::kKueueQueue, /*indexed=*/true));
    } else if (berth_jobs) {
      MustCreate("/apis/batch/v1/namespaces/" + ns + "/jobs", bench::BerthJob("g" + std::to_string(i), whole_node, size, -1, /*indexed=*/true));
    } else {
      MustCreate(k8s::resources::kRuns.Path(ns), RunBody("g" + std::to_string(i), R"("nodes":4,"resources":{"gpu":8},)"));
    }
  });
  out.done = Eventually([&] { return pods.Done(runs * size); }, std::chrono::seconds(600));
  out.seconds = Seconds(pods.DoneAt() - t0);
  sampling = false;
  sampler.join();
  // All or nothing at the end, on the Pods: a gang with some but not all of its Pods bound.
  std::map<std::string, int> bound_of;
  for (const auto& p : pods.informer().List()) bound_of[gang_of(*p)] += p->node_name.empty() ? 0 : 1;
  for (const auto& [gang, n] : bound_of) out.partial += n != 0 && n != size;
  out.samples = samples.load();
  out.violations = violations.load();
  out.refused = pods.refused();
  if (controller) controller->Stop();
  for (pid_t p : kube) StopProcess(p);
  pods.informer().Stop();
  StopControlPlane();
  return out;
}

int Gangs() {
  const int nodes = Flag("nodes", Hollow() ? 48 : 1000), runs = Flag("runs", Hollow() ? nodes / 4 : 250), size = 4;
  // --jobs 1: berth's Job path too (issue 45); --jobs 2: only it (and Kueue with --kueue 1).
  std::vector<GangResult> results;
  if (Flag("jobs", 0) != 2) results.push_back(RunGangs(false, nodes, runs, size));
  if (Flag("jobs", 0) != 0) results.push_back(RunGangs(false, nodes, runs, size, /*berth_jobs=*/true));
  if (Flag("kueue", 0) != 0) results.push_back(RunGangs(true, nodes, runs, size));
  std::printf("\n## Gangs: %d runs of nodes: %d on %d whole-node instances (%s; Kubernetes %s)\n\n", runs, size, nodes,
              Hollow()  ? "kubemark hollow nodes, timed until every Pod is admitted and Running"
              : Kwok() ? "kwok-managed Node objects, timed until kwok reports every Pod Running"
                       : "bare Node objects, timed until every Pod is bound",
              KubeVersion().c_str());
  if (Kwok()) std::printf("kwok %s\n\n", ("`" + Join(KwokFlags()) + "`").c_str());
  std::printf("| anchor | flags | all done | seconds | gangs/s | pods/s | samples | invariant violations | partial placements | refused by a kubelet |\n|---|---|---|---|---|---|---|---|---|---|\n");
  bool ok = true;
  for (const GangResult& r : results) {
    std::printf("| %s | `%s` | %s | %.2f | %.1f | %.0f | %d | %d | %d | %d |\n", r.name.c_str(), r.flags.c_str(), r.done ? "yes" : "NO",
                r.seconds, runs / r.seconds, runs * size / r.seconds, r.samples, r.violations, r.partial, r.refused);
    ok = ok && r.done && r.violations == 0 && r.partial == 0 && r.refused == 0;
  }
  return ok ? 0 : 1;
}

// The queue scenarios' set-up: namespace NAME-bench, one node in fleet NAME (one block), and
// berth-controller serving /metrics and /queue on `port` (read with the admin token).
struct OneBlockQueue {
  std::string ns;
  int port = 0;
  std::unique_ptr<ControllerProcess> controller;
};

OneBlockQueue StartOneBlockQueue(const std::string& name) {
  ControlPlane::Get().Start();
  OneBlockQueue q;
  q.ns = name + "-bench";
  Kubectl({"create", "namespace", q.ns});
  MakeNodes(name, 1);
  Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + name +
                                    "}\nspec:\n  nodeSelector: {pool: " + name + "}\n");
  q.port = berth::testing::FreePort();
  q.controller = std::make_unique<ControllerProcess>(
      std::vector<std::string>{"--metrics-bind-address=127.0.0.1:" + std::to_string(q.port), "--queue-auth=false"},
      "bench-controller");
  q.controller->Start();
  return q;
}

// Waits until `run`'s rank-0 Pod is on its node and reports it Running (no kubelet in these
// scenarios). Returns the Pod's name, or "" when it was never placed.
std::string BindAndRun(const std::string& ns, const std::string& run) {
  const std::string pod = run + "-0";
  if (!Eventually([&] {
        auto p = Client()->Get(k8s::resources::kPods.Path(ns, pod));
        return p.ok() && !json::GetString(json::Find(*p, {"spec", "nodeName"})).empty();
      })) {
    return "";
  }
  (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, pod, "status"), R"({"status":{"phase":"Running"}})");
  return pod;
}

// The priority scenario through Kueue (--kueue 1): one node of 8 GPUs, Jobs that each take all of
// it (priority class low), one running; PENDING more wait. K times: a random waiting Job's
// kueue.x-k8s.io/priority-class label goes from low to top (Kueue's documented way to change a
// Job's priority: the Workload follows the label), the running Job's Pod is marked Succeeded, and
// the clock runs until the Job is admitted (Kueue unsuspends it). Returns {p50, p99, max} in ms,
// or nothing when a step did not happen within 60 s.
std::optional<std::array<double, 3>> KueuePriority(int pending, int patches) {
  StartControlPlane();
  const std::string ns = "prio-bench";
  Kubectl({"create", "namespace", ns});
  MakeNodes("prio", 1);
  std::vector<pid_t> procs = {StartKubeScheduler(), StartJobController()};
  const KueueRun kueue = StartKueue("prio", ns, false);
  procs.push_back(kueue.pid);
  // Kueue's admission heap is empty: every pending Workload has been tried since the last event
  // that re-queued them and waits in the inadmissible list (kueue_pending_workloads, status
  // "active": the Workloads in the admission queue). Kueue's priority order holds among the
  // Workloads in the heap; one tried just before a slot frees waits for the next re-queue (batched,
  // 1 s) while the scheduler may still be going through the others: the raised Job then loses its
  // slot to one of them (seen at 300 and at 10,000 pending). Waiting for this before a slot frees
  // measures Kueue in its steady state, as berth's row is measured once the run is shown first.
  auto heap_empty = [&] {
    const std::string page = KueueMetrics(kueue);
    return page.find("kueue_pending_workloads{") != std::string::npos &&
           SumSamples(page, "kueue_pending_workloads", "status=\"active\"") == 0;
  };
  auto stop = [&] {
    for (pid_t p : procs) StopProcess(p);
    StopControlPlane();
  };
  const std::string jobs = "/apis/batch/v1/namespaces/" + ns + "/jobs";
  const std::string whole_node = R"({"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":)"
                                 R"({"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}]})";
  auto admitted = [&](const std::string& job) {
    auto j = Client()->Get(jobs + "/" + job);
    const k8s::json::Value* suspend = j.ok() ? k8s::json::Find(*j, {"spec", "suspend"}) : nullptr;
    return suspend != nullptr && suspend->IsBool() && !suspend->GetBool();
  };
  // The Job's Pod, once bound, is reported Running (no kubelet here); returns its name.
  auto bind_and_run = [&](const std::string& job) {
    std::string pod;
    Eventually([&] {
      k8s::ListOptions o;
      o.label_selector = "batch.kubernetes.io/job-name=" + job;
      auto l = Client()->List(k8s::resources::kPods.Path(ns), o);
      if (!l.ok() || l->items.empty()) return false;
      if (k8s::json::GetString(k8s::json::Find(l->items[0], {"spec", "nodeName"})).empty()) return false;
      pod = k8s::json::GetString(k8s::json::Find(l->items[0], {"metadata", "name"}));
      return true;
    }, std::chrono::seconds(60));
    if (!pod.empty()) (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, pod, "status"), R"({"status":{"phase":"Running"}})");
    return pod;
  };
  MustCreate(jobs, bench::KueueJob("blocker", whole_node, 1, "low"));
  if (!Eventually([&] { return admitted("blocker"); }, std::chrono::seconds(60))) {
    stop();
    return std::nullopt;
  }
  Parallel(pending, 16, [&](int i) { MustCreate(jobs, bench::KueueJob("q" + std::to_string(i), whole_node, 1, "low")); });
  // Steady state, as berth's row waits for every queued run's first status: every Job has its
  // Workload and Kueue's scheduler has tried each once (QuotaReserved=False, Pending: it sits in
  // the ClusterQueue's inadmissible list until capacity frees). Before that, a Workload still
  // waiting for its first try can be admitted ahead of a raised one: Kueue's order holds among
  // the Workloads it has already queued.
  Eventually([&] {
    auto l = Client()->List("/apis/kueue.x-k8s.io/v1beta2/namespaces/" + ns + "/workloads", k8s::ListOptions{"", "", 0, ""});
    int tried = 0;
    if (l.ok()) {
      for (const auto& item : l->items) {
        const k8s::json::Value* conditions = k8s::json::Find(item, {"status", "conditions"});
        if (conditions == nullptr || !conditions->IsArray()) continue;
        for (const auto& c : conditions->GetArray()) tried += k8s::json::GetString(c, "type") == "QuotaReserved";
      }
    }
    const bool all = tried >= pending + 1;
    if (!all) std::this_thread::sleep_for(std::chrono::seconds(1));
    return all;
  }, std::chrono::seconds(900));
  std::string current_pod = bind_and_run("blocker");
  std::mt19937 rng(42);
  std::vector<double> to_admit;
  std::set<int> used;
  for (int k = 0; k < patches; ++k) {
    int idx;
    do idx = static_cast<int>(rng() % pending);
    while (!used.insert(idx).second);
    const std::string target = "q" + std::to_string(idx);
    auto r = Client()->MergePatch(jobs + "/" + target, R"({"metadata":{"labels":{"kueue.x-k8s.io/priority-class":"top"}}})");
    if (!r.ok()) {
      std::fprintf(stderr, "patching %s's priority class failed: %s\n", target.c_str(), r.status().ToString().c_str());
      stop();
      return std::nullopt;
    }
    // As berth's row: the patch is in before the slot frees (berth: shown first in its queue;
    // Kueue has no such view without its visibility API: its Workload carries the new priority).
    int seen_priority = -1;
    const bool raised = Eventually([&] {
      auto w = Client()->List("/apis/kueue.x-k8s.io/v1beta2/namespaces/" + ns + "/workloads", k8s::ListOptions{"", "", 0, ""});
      if (!w.ok()) return false;
      for (auto& item : w->items) {
        const k8s::json::Value* owners = k8s::json::Find(item, {"metadata", "ownerReferences"});
        if (owners == nullptr || !owners->IsArray() || owners->Empty()) continue;
        if (k8s::json::GetString((*owners)[0], "name") != target) continue;
        seen_priority = static_cast<int>(k8s::json::GetInt(*k8s::json::Find(item, {"spec"}), "priority", -1));
        return seen_priority == 100;
      }
      return false;
    }, std::chrono::seconds(30));
    if (!raised) {
      std::fprintf(stderr, "%s's Workload did not take priority 100 within 30 s (it has %d)\n", target.c_str(), seen_priority);
      stop();
      return std::nullopt;
    }
    if (!Eventually(heap_empty, std::chrono::seconds(900))) {
      std::fprintf(stderr, "Kueue's admission heap did not empty within 900 s of %s's raise\n", target.c_str());
      stop();
      return std::nullopt;
    }
    auto t1 = Clock::now();
    (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, current_pod, "status"), R"({"status":{"phase":"Succeeded"}})");
    if (!Eventually([&] { return admitted(target); }, std::chrono::seconds(300))) {
      std::string others;
      for (int i = 0; i < pending; ++i) {
        if (admitted("q" + std::to_string(i))) others += " q" + std::to_string(i);
      }
      std::fprintf(stderr, "%s was not admitted within 300 s of its slot freeing (admitted instead:%s; blocker %s)\n",
                   target.c_str(), others.c_str(), admitted("blocker") ? "still admitted" : "done");
      stop();
      return std::nullopt;
    }
    to_admit.push_back(Seconds(Clock::now() - t1));
    if (Flag("verbose", 0)) std::fprintf(stderr, "Kueue: %s admitted %.0f ms after its slot freed\n", target.c_str(), to_admit.back() * 1000);
    current_pod = bind_and_run(target);
  }
  stop();
  std::sort(to_admit.begin(), to_admit.end());
  auto pct = [&](double q) { return 1000 * to_admit[std::min(to_admit.size() - 1, static_cast<size_t>(std::ceil(q * to_admit.size())) - 1)]; };
  return std::array<double, 3>{pct(0.5), pct(0.99), 1000 * to_admit.back()};
}

// The priority scenario through berth's Runs: rows of the table; `p99`: the slot-freed -> admitted p99 in ms.
int RunsPriority(int pending, int patches, double* p99) {
  OneBlockQueue q = StartOneBlockQueue("prio");
  const std::string& ns = q.ns;
  const int port = q.port;
  ControllerProcess& controller = *q.controller;
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
    auto doc = json::Parse(berth::testing::HttpGet(queue_url, nullptr, ControlPlane::Get().AdminToken()));
    if (!doc.ok()) return std::string();
    const json::Value* items = json::Find(*doc, {"items"});
    if (items == nullptr || !items->IsArray() || items->Empty()) return std::string();
    return json::GetString((*items)[0], "name");
  };
  if (!Eventually([&] {
        auto doc = json::Parse(berth::testing::HttpGet(queue_url, nullptr, ControlPlane::Get().AdminToken()));
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
  std::string current_pod = BindAndRun(ns, "blocker");
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
    (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, current_pod, "status"), R"({"status":{"phase":"Succeeded"}})");
    if (!Eventually([&] { return phase(target) == "Scheduled"; }, std::chrono::seconds(30))) return 1;
    to_admit.push_back(Seconds(Clock::now() - t1));
    if (Flag("verbose", 0)) std::fprintf(stderr, "%s: first after %.0f ms, admitted %.0f ms after its slot freed\n", target.c_str(), to_first.back() * 1000, to_admit.back() * 1000);
    current_pod = BindAndRun(ns, target);
  }
  auto pct = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - 1)];
  };
  controller.Stop();
  std::printf("| until /queue shows the run first | %.0f ms | %.0f ms | %.0f ms | p99 < 1 s |\n", pct(to_first, 0.5) * 1000,
              pct(to_first, 0.99) * 1000, *std::max_element(to_first.begin(), to_first.end()) * 1000);
  std::printf("| one slot freed (pod Succeeded) until the run is admitted | %.0f ms | %.0f ms | %.0f ms | |\n",
              pct(to_admit, 0.5) * 1000, pct(to_admit, 0.99) * 1000, *std::max_element(to_admit.begin(), to_admit.end()) * 1000);
  *p99 = pct(to_admit, 0.99) * 1000;
  StopControlPlane();
  return 0;
}

// The p-quantile (0..1) of `v` (not empty), as the priority tables report it.
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(std::ceil(q * v.size())) - 1)];
}

// The priority scenario through berth's Job path (issue 45; --jobs 1 or 2): one node of 8 GPUs,
// the same Jobs as Kueue's row (each takes all of it) labelled berth.dev/queue with
// berth.dev/priority 10, one running; PENDING more wait. K times: a random waiting Job's label
// berth.dev/priority goes to 100 (a merge patch of the Job, as `kubectl label` does), the clock
// runs until berth's /queue shows its ticket job-<name> first; then the running Job's Pod is
// marked Succeeded (the Job controller completes the Job, berth ends its ticket) and the clock runs
// until the raised Job is admitted (berth unsuspends it), as Kueue's row is timed. The chart's
// policies hold the Jobs; the Job controller makes their Pods and kube-scheduler binds them.
// Returns {to_first, to_admit} in seconds, or nothing when a step did not happen in time.
std::optional<std::array<std::vector<double>, 2>> BerthJobsPriority(int pending, int patches) {
  StartControlPlane();
  const std::string ns = "prio-bench";
  Kubectl({"create", "namespace", ns});
  MakeNodes("prio", 1);
  Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: prio}\nspec:\n  nodeSelector: {pool: prio}\n  blocks: auto\n");
  SetUpPolicies(/*jobs=*/true);
  const int port = berth::testing::FreePort();
  ControllerProcess controller({"--metrics-bind-address=127.0.0.1:" + std::to_string(port), "--queue-auth=false"}, "bench-controller");
  controller.Start();
  std::vector<pid_t> procs = {StartKubeScheduler(), StartJobController()};
  auto stop = [&] {
    controller.Stop();
    for (pid_t p : procs) StopProcess(p);
    StopControlPlane();
  };
  const std::string jobs = "/apis/batch/v1/namespaces/" + ns + "/jobs";
  const std::string whole_node = R"({"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":)"
                                 R"({"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}]})";
  auto admitted = [&](const std::string& job) {
    auto j = Client()->Get(jobs + "/" + job);
    const json::Value* suspend = j.ok() ? json::Find(*j, {"spec", "suspend"}) : nullptr;
    return suspend != nullptr && suspend->IsBool() && !suspend->GetBool();
  };
  // The Job's Pod, once bound (berth pinned it, kube-scheduler bound it), is reported Running.
  auto bind_and_run = [&](const std::string& job) {
    std::string pod;
    Eventually([&] {
      k8s::ListOptions o;
      o.label_selector = "batch.kubernetes.io/job-name=" + job;
      auto l = Client()->List(k8s::resources::kPods.Path(ns), o);
      if (!l.ok() || l->items.empty()) return false;
      if (json::GetString(json::Find(l->items[0], {"spec", "nodeName"})).empty()) return false;
      pod = json::GetString(json::Find(l->items[0], {"metadata", "name"}));
      return true;
    }, std::chrono::seconds(60));
    if (!pod.empty()) (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, pod, "status"), R"({"status":{"phase":"Running"}})");
    return pod;
  };
  MustCreate(jobs, bench::BerthJob("blocker", whole_node, 1, 10));
  if (!Eventually([&] { return admitted("blocker"); }, std::chrono::seconds(60))) {
    std::fprintf(stderr, "berth never admitted the blocker Job; controller log: %s\n", controller.log_path().c_str());
    stop();
    return std::nullopt;
  }
  Parallel(pending, 16, [&](int i) { MustCreate(jobs, bench::BerthJob("q" + std::to_string(i), whole_node, 1, 10)); });
  const std::string queue_url = "http://127.0.0.1:" + std::to_string(port) + "/queue?limit=1";
  auto queue_page = [&] { return json::Parse(berth::testing::HttpGet(queue_url, nullptr, ControlPlane::Get().AdminToken())); };
  auto first_in_queue = [&] {
    auto doc = queue_page();
    if (!doc.ok()) return std::string();
    const json::Value* items = json::Find(*doc, {"items"});
    if (items == nullptr || !items->IsArray() || items->Empty()) return std::string();
    return json::GetString((*items)[0], "name");
  };
  // Steady state, as the Runs' row: every Job has its ticket in the queue with its first status.
  if (!Eventually([&] {
        auto doc = queue_page();
        return doc.ok() && json::GetInt(*doc, "total") == pending;
      }, std::chrono::seconds(600))) {
    std::fprintf(stderr, "the queue never held %d tickets; controller log: %s\n", pending, controller.log_path().c_str());
    stop();
    return std::nullopt;
  }
  Eventually([&] {
    auto l = Client()->List(k8s::resources::kRuns.Path(ns));
    if (!l.ok()) return false;
    int n = 0;
    for (auto& r : l->items) n += json::GetString(json::Find(r, {"status", "phase"})) == "Pending";
    if (n < pending) std::this_thread::sleep_for(std::chrono::seconds(1));
    return n >= pending;
  }, std::chrono::seconds(600));
  std::string current_pod = bind_and_run("blocker");
  std::mt19937 rng(42);
  std::array<std::vector<double>, 2> out;
  std::set<int> used;
  for (int k = 0; k < patches; ++k) {
    int idx;
    do idx = static_cast<int>(rng() % pending);
    while (!used.insert(idx).second);
    const std::string target = "q" + std::to_string(idx);
    auto t0 = Clock::now();
    auto r = Client()->MergePatch(jobs + "/" + target, R"({"metadata":{"labels":{"berth.dev/priority":"100"}}})");
    if (!r.ok()) {
      std::fprintf(stderr, "labelling %s failed: %s\n", target.c_str(), r.status().ToString().c_str());
      stop();
      return std::nullopt;
    }
    if (!Eventually([&] { return first_in_queue() == "job-" + target; }, std::chrono::seconds(30))) {
      std::fprintf(stderr, "job-%s was not first in /queue within 30 s of its label (first: %s)\n", target.c_str(), first_in_queue().c_str());
      stop();
      return std::nullopt;
    }
    out[0].push_back(Seconds(Clock::now() - t0));
    auto t1 = Clock::now();
    (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, current_pod, "status"), R"({"status":{"phase":"Succeeded"}})");
    if (!Eventually([&] { return admitted(target); }, std::chrono::seconds(60))) {
      std::fprintf(stderr, "%s was not admitted within 60 s of its slot freeing; controller log: %s\n", target.c_str(),
                   controller.log_path().c_str());
      stop();
      return std::nullopt;
    }
    out[1].push_back(Seconds(Clock::now() - t1));
    if (Flag("verbose", 0)) {
      std::fprintf(stderr, "berth, Jobs: %s first after %.0f ms, admitted %.0f ms after its slot freed\n", target.c_str(),
                   out[0].back() * 1000, out[1].back() * 1000);
    }
    current_pod = bind_and_run(target);
    if (current_pod.empty()) {
      std::fprintf(stderr, "%s's Pod was never bound; controller log: %s\n", target.c_str(), controller.log_path().c_str());
      stop();
      return std::nullopt;
    }
  }
  stop();
  return out;
}

int Priority() {
  const int pending = Flag("pending", 10000), patches = Flag("patches", 50);
  // --jobs 1: berth's Job path too (issue 45); --jobs 2: only it (and Kueue with --kueue 1).
  const int jobs = Flag("jobs", 0);
  std::printf("\n## Priority latency: %d pending, %d patches to priority 100\n\n", pending, patches);
  std::printf("| measured from the patch's answer | p50 | p99 | max | goal |\n|---|---|---|---|---|\n");
  double berth_p99 = -1, jobs_p99 = -1;
  if (jobs != 2) {
    const int rc = RunsPriority(pending, patches, &berth_p99);
    if (rc != 0) return rc;
  }
  if (jobs != 0) {
    const auto j = BerthJobsPriority(pending, patches);
    if (!j) return 1;
    const auto& [to_first, to_admit] = *j;
    std::printf("| berth, Jobs (label berth.dev/priority 10 -> 100, merge patch of the Job): until /queue shows its ticket first "
                "| %.0f ms | %.0f ms | %.0f ms | |\n", Quantile(to_first, 0.5) * 1000, Quantile(to_first, 0.99) * 1000,
                *std::max_element(to_first.begin(), to_first.end()) * 1000);
    std::printf("| berth, Jobs: one slot freed (Pod Succeeded) until the raised Job is admitted (unsuspended) | %.0f ms | %.0f ms | "
                "%.0f ms | |\n", Quantile(to_admit, 0.5) * 1000, Quantile(to_admit, 0.99) * 1000,
                *std::max_element(to_admit.begin(), to_admit.end()) * 1000);
    jobs_p99 = Quantile(to_admit, 0.99) * 1000;
  }
  std::fflush(stdout);
  if (Flag("kueue", 0) == 0) return 0;
  // Kueue's row may take fewer patches (--kueue-patches): at 10,000 pending each of its admissions
  // waits minutes for its admission heap to empty (see KueuePriority).
  const int kueue_patches = Flag("kueue-patches", patches);
  const auto kueue = KueuePriority(pending, kueue_patches);
  if (!kueue) return 1;
  std::string goal;
  char buf[160];
  if (berth_p99 >= 0) {
    std::snprintf(buf, sizeof buf, "berth's p99 <= 1/5 of Kueue's: %.2f", berth_p99 / (*kueue)[1]);
    goal = buf;
  }
  if (jobs_p99 >= 0) {
    std::snprintf(buf, sizeof buf, "%sberth's Jobs' p99 <= 1/5 of Kueue's: %.2f", goal.empty() ? "" : "; ", jobs_p99 / (*kueue)[1]);
    goal += buf;
  }
  std::printf("| Kueue %s (Job controller, kube-scheduler; %s), %d patches: one slot freed until the Job whose priority-class label "
              "went low -> top is admitted (unsuspended) | %.0f ms | %.0f ms | %.0f ms | %s |\n",
              KueueVersion().c_str(), bench::KueueFlags(bench::KueueProcessConfig{}).c_str(), kueue_patches, (*kueue)[0], (*kueue)[1], (*kueue)[2],
              goal.c_str());
  return 0;
}

int Memory() {
  const int nodes = Flag("nodes", 5000), runs = Flag("runs", 10000);
  StartControlPlane();
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
  if (!Eventually([&] { return pods.Done(runs); }, std::chrono::seconds(900))) {
    std::fprintf(stderr, "only %d of %d pods bound, %d running\n", pods.bound(), runs, pods.running());
    StopControlPlane();
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
  std::printf("\n## Memory and start-up: %d runs, %d %s, %d pods in the caches (Kubernetes %s)\n\n", runs, nodes,
              Kwok() ? "kwok-managed nodes (every Pod Running)" : "bare nodes", runs, KubeVersion().c_str());
  if (Kwok()) std::printf("kwok %s\n\n", ("`" + Join(KwokFlags()) + "`").c_str());
  std::printf("| controller RSS | goal | start -> caches synced | start -> first admission | goal |\n|---|---|---|---|---|\n");
  std::printf("| %.0f MB | < 200 MB | %.2f s | %.2f s | < 5 s |\n", rss / 1024.0, synced, admitted);
  StopControlPlane();
  return 0;
}

// The controller's memory per run (issue 29): RUNS runs whose spec.template is BYTES bytes of JSON
// (tests/integration/run_size.h: a realistic template, padded with an env value), placed one
// GPU each on bare 8-GPU nodes with their Pods (--placed 0: pending, no fleet). RSS of a fresh
// controller before any run, after all are placed (and its peak), and after a restart that
// relists them all (and the restart's peak): per run = (RSS - RSS before) / RUNS.
// BERTH_CONTROLLER_BIN=... measures another build.
int RunSize() {
  const int runs = Flag("runs", 2000), bytes = Flag("bytes", 1536), placed = Flag("placed", 1);
  StartControlPlane();
  const std::string ns = "size-bench";
  Kubectl({"create", "namespace", ns});
  if (placed != 0) {
    MakeNodes("size", (runs + 7) / 8);
    Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: size}\nspec:\n  nodeSelector: {pool: size}\n  blocks: auto\n");
  }
  const int probe = berth::testing::FreePort();
  auto start = [&](const std::string& log) {
    auto c = std::make_unique<ControllerProcess>(
        std::vector<std::string>{"--health-probe-bind-address=127.0.0.1:" + std::to_string(probe)}, log);
    c->Start();
    int code = 0;
    Eventually([&] {
      berth::testing::HttpGet("http://127.0.0.1:" + std::to_string(probe) + "/readyz", &code);
      return code == 200;
    }, std::chrono::seconds(300));
    std::this_thread::sleep_for(std::chrono::seconds(3));
    return c;
  };
  auto controller = start("bench-controller");
  const long before = RssKiB(controller->pid());
  BoundPods pods(ns);
  const std::string spec = placed != 0 ? R"("resources":{"gpu":1},)" : R"("fleets":["none"],"retry":{"onEvents":["no-capacity"],"duration":"off"},)";
  Parallel(runs, 8, [&](int i) {
    MustCreate(k8s::resources::kRuns.Path(ns),
               R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"s)" + std::to_string(i) +
                   R"("},"spec":{)" + spec + R"("template":)" + berth::testing::SizedTemplate(bytes, i) + "}}");
  });
  auto settled = [&] {
    if (placed != 0) return pods.bound() >= runs;
    auto l = Client()->List(k8s::resources::kRuns.Path(ns));
    if (!l.ok()) return false;
    int waiting = 0;
    for (auto& r : l->items) waiting += !json::GetString(json::Find(r, {"status", "reason"})).empty();
    return waiting >= runs;
  };
  if (!Eventually(settled, std::chrono::seconds(1800))) {
    std::fprintf(stderr, "the runs did not settle (%d pods bound)\n", pods.bound());
    StopControlPlane();
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const long after = RssKiB(controller->pid()), peak = berth::testing::ProcStatusKiB(controller->pid(), "VmHWM");
  controller->Stop();
  controller = start("bench-controller-2");
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const long restarted = RssKiB(controller->pid()), restart_peak = berth::testing::ProcStatusKiB(controller->pid(), "VmHWM");
  controller->Stop();
  pods.informer().Stop();
  const char* bin = std::getenv("BERTH_CONTROLLER_BIN");
  std::printf("\n## Memory per run: %d runs, spec.template %d bytes as JSON, %s (Kubernetes %s%s%s)\n\n", runs, bytes,
              placed != 0 ? "each placed with its Pod" : "pending", KubeVersion().c_str(), bin != nullptr ? ", controller " : "",
              bin != nullptr ? bin : "");
  std::printf("| RSS before | after | peak | per run | after a restart | restart's peak | per run after the restart |\n"
              "|---|---|---|---|---|---|---|\n");
  std::printf("| %.1f MB | %.1f MB | %.1f MB | %.1f KiB | %.1f MB | %.1f MB | %.1f KiB |\n", before / 1024.0, after / 1024.0,
              peak / 1024.0, static_cast<double>(after - before) / runs, restarted / 1024.0, restart_peak / 1024.0,
              static_cast<double>(restarted - before) / runs);
  StopControlPlane();
  return 0;
}

// Queue positions at scale: PENDING runs wait behind one busy block while runs arrive, leave and
// change priority for SECONDS. A sampler lists every run every 2 s and checks the picture users
// read: no two runs at one position, and how many of positions 1..100 are missing. Reports the
// controller's status writes (the API server's apiserver_request_total, PATCH runs/status) per
// second and per queue change,
// and the time the positions take to settle (the list matches the queue endpoint's first 100)
// after the churn stops.
int Positions() {
  const int pending = Flag("pending", 10000), seconds = Flag("seconds", 60);
  const int arrivals = Flag("arrivals", 5), departures = Flag("departures", 5), patches = Flag("patches", 2);
  OneBlockQueue q = StartOneBlockQueue("pos");
  const std::string& ns = q.ns;
  const int port = q.port;
  ControllerProcess& controller = *q.controller;
  const std::string queued = R"("retry":{"onEvents":["no-capacity"],"duration":"off"},)";
  MustCreate(k8s::resources::kRuns.Path(ns), RunBody("blocker", queued));
  // The blocker holds the only block, its Pod "running", before the rest arrive.
  if (BindAndRun(ns, "blocker").empty()) {
    std::fprintf(stderr, "the blocker was never placed; controller log: %s\n", controller.log_path().c_str());
    return 1;
  }
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
    auto doc = json::Parse(berth::testing::HttpGet(queue_url, nullptr, ControlPlane::Get().AdminToken()));
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
  auto writes_before = ScrapeApiserver();

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
  auto writes_after = ScrapeApiserver();
  churning = false;
  sampler.join();
  auto t1 = Clock::now();
  bool ok = Eventually(settled, std::chrono::seconds(300));
  const double settle_s = Seconds(Clock::now() - t1);
  // Every runs/status PATCH is berth's (the benchmark patches spec.priority, not status).
  const double patches_written = writes_after["n:PATCH runs/status"] - writes_before["n:PATCH runs/status"];
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

// Issue 16's scale goals through the real API server, in one berth-controller: PENDING runs wait
// (retry on no-capacity) behind a fully busy one-node fleet `small` while fleet `big` has NODES
// free nodes. The runs are created with the controller stopped; then berth starts and one run
// that fits on `big` is created at once: start -> /readyz and start -> that run Scheduled. Then
// for SECONDS: the controller's RSS (VmRSS, sampled every second from its start), its passes
// (berth_scheduling_cycle_duration_seconds) and its "slow scheduling pass" log lines (> 200 ms).
// berth's scale figures beside Kueue's (--kueue 1), with the goal of issue 32.
int ScaleBesideKueue(int nodes, int pending, int seconds, const ScaleFigures& berth) {
  ScaleFigures kueue;
  if (KueueScale(nodes, pending, seconds, &kueue) != 0) return 1;
  if (berth.rss_max_mb < 0) return 0;
  std::printf("\n## Scale side by side: %d pending, %d nodes\n\n| measure | berth | Kueue %s | berth / Kueue | goal |\n"
              "|---|---|---|---|---|\n", pending, nodes, KueueVersion().c_str());
  std::printf("| RSS, max (Kueue: before and after its restart) | %.0f MB | %.0f MB | %.2f | <= 0.5 (issue 32) |\n", berth.rss_max_mb, kueue.rss_max_mb,
              berth.rss_max_mb / kueue.rss_max_mb);
  if (kueue.first_admission_s >= 0) {
    std::printf("| start -> first admission | %.2f s | %.2f s | %.2f | |\n", berth.first_admission_s, kueue.first_admission_s,
                berth.first_admission_s / kueue.first_admission_s);
  } else {
    std::printf("| start -> first admission | %.2f s | none within %d s | < %.3f | |\n", berth.first_admission_s,
                KueueRestartWindow(), berth.first_admission_s / KueueRestartWindow());
  }
  char kueue_decision[32] = "-";  // no attempt in the window
  if (kueue.decision_ms >= 0) std::snprintf(kueue_decision, sizeof kueue_decision, "%.1f ms", kueue.decision_ms);
  std::printf("| one scheduling decision (berth: a pass; Kueue: an admission attempt), mean in the window | %.1f ms | %s | | |\n",
              berth.decision_ms, kueue_decision);
  return 0;
}

int Scale() {
  const int nodes = Flag("nodes", 10000), pending = Flag("pending", 100000), seconds = Flag("seconds", 60);
  if (Flag("kueue", 0) == 2) return ScaleBesideKueue(nodes, pending, seconds, ScaleFigures{});  // Kueue alone
  StartControlPlane();
  const std::string ns = "scale-bench";
  Kubectl({"create", "namespace", ns});
  auto t_nodes = Clock::now();
  MakeNodes("big", nodes);
  MakeNodes("small", 1);
  const double nodes_s = Seconds(Clock::now() - t_nodes);
  const std::string blocks = Hollow() ? "8" : "auto";
  for (const std::string fleet : {"big", "small"}) {
    Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet +
                                      "}\nspec:\n  nodeSelector: {pool: " + fleet + "}\n  blocks: " + blocks + "\n");
  }
  auto phase = [&](const std::string& run) {
    auto r = Client()->Get(k8s::resources::kRuns.Path(ns, run));
    return r.ok() ? json::GetString(json::Find(*r, {"status", "phase"})) : std::string();
  };
  const std::string queued = R"("retry":{"onEvents":["no-capacity"],"duration":"off"},)";
  // The small node taken whole by one run, its Pod "running" (no kubelet), admitted by a first
  // controller that is stopped before the pending runs arrive.
  {
    ControllerProcess setup({}, "bench-controller-setup");
    setup.Start();
    MustCreate(k8s::resources::kRuns.Path(ns), RunBody("occupant", R"("resources":{"gpu":8},"fleets":["small"],)"));
    if (BindAndRun(ns, "occupant").empty() || !Eventually([&] { return phase("occupant") == "Scheduled"; })) {
      std::fprintf(stderr, "the occupant was never placed; controller log: %s\n", setup.log_path().c_str());
      StopControlPlane();
      return 1;
    }
    setup.Stop();
  }
  auto t_create = Clock::now();
  Parallel(pending, 16, [&](int i) {
    MustCreate(k8s::resources::kRuns.Path(ns),
               RunBody("s" + std::to_string(i), queued + R"("resources":{"gpu":1},"fleets":["small"],)"));
  });
  const double create_s = Seconds(Clock::now() - t_create);
  std::fprintf(stderr, "created %d pending runs in %.1f s (%.0f/s)\n", pending, create_s, pending / create_s);

  // berth at its default log level (info), as deployed; the harness' --log-level=debug is overridden.
  const int port = berth::testing::FreePort(), probe = berth::testing::FreePort();
  ControllerProcess controller({"--metrics-bind-address=127.0.0.1:" + std::to_string(port),
                                "--health-probe-bind-address=127.0.0.1:" + std::to_string(probe), "--log-level=info",
                                "--queue-auth=false"},
                               "bench-controller");
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  auto t0 = Clock::now();
  controller.Start();
  std::atomic<bool> sampling{true};
  std::atomic<long> max_rss{0};
  std::thread sampler([&] {
    while (sampling) {
      max_rss = std::max(max_rss.load(), RssKiB(controller.pid()));
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  auto stop = [&](int code) {
    sampling = false;
    sampler.join();
    controller.Stop();
    StopControlPlane();
    return code;
  };
  MustCreate(k8s::resources::kRuns.Path(ns), RunBody("first", R"("resources":{"gpu":1},"fleets":["big"],)"));
  double synced = -1, admitted = -1;
  const auto deadline = t0 + std::chrono::seconds(600);
  while ((synced < 0 || admitted < 0) && Clock::now() < deadline) {
    if (synced < 0) {
      int code = 0;
      berth::testing::HttpGet("http://127.0.0.1:" + std::to_string(probe) + "/readyz", &code);
      if (code == 200) synced = Seconds(Clock::now() - t0);
    }
    if (admitted < 0 && phase("first") == "Scheduled") admitted = Seconds(Clock::now() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (synced < 0 || admitted < 0) {
    std::fprintf(stderr, "after 600 s: caches %s, first run %s; controller log: %s\n", synced < 0 ? "not synced" : "synced",
                 admitted < 0 ? "not admitted" : "admitted", controller.log_path().c_str());
    return stop(1);
  }
  const double rss_at_admission = RssKiB(controller.pid()) / 1024.0;
  std::fprintf(stderr, "caches synced after %.2f s, first admission after %.2f s\n", synced, admitted);

  // The pass histogram's count, sum and cumulative buckets (le -> count).
  const std::string kPassMetric = "berth_scheduling_cycle_duration_seconds";
  struct Passes {
    double count = 0, sum = 0;
    double decided = 0;  // berth_scheduling_passes_total{core="decided"}: the core ran
    std::map<double, double> buckets;
  };
  auto passes = [&] {
    Passes p;
    const std::string page = berth::testing::HttpGet(base + "/metrics");
    const auto count_sum = HistogramCountSum(page, kPassMetric);
    p.count = count_sum.first;
    p.sum = count_sum.second;
    p.decided = SampleValue(page, "berth_scheduling_passes_total{core=\"decided\"}");
    std::istringstream in(page);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(kPassMetric + "_bucket{", 0) != 0) continue;
      auto at = line.find("le=\"");
      if (at == std::string::npos) continue;
      const std::string le = line.substr(at + 4, line.find('"', at + 4) - at - 4);
      p.buckets[le == "+Inf" ? INFINITY : std::atof(le.c_str())] = std::atof(line.c_str() + line.rfind(' ') + 1);
    }
    return p;
  };
  auto log_size = [&] {
    std::ifstream in(controller.log_path(), std::ios::ate | std::ios::binary);
    return static_cast<long>(in.tellg());
  };
  const Passes p0 = passes();
  const long log0 = log_size();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const Passes p1 = passes();
  const long log1 = log_size();
  const double rss_max = max_rss.load() / 1024.0;
  const long rss_end = RssKiB(controller.pid());
  // How many runs berth holds queued (the /queue endpoint's total).
  long queued_total = -1;
  if (auto doc = json::Parse(berth::testing::HttpGet(base + "/queue?limit=1", nullptr, ControlPlane::Get().AdminToken())); doc.ok()) queued_total = json::GetInt(*doc, "total", -1);

  // "slow scheduling pass: N ms ..." lines: those the window wrote, and all since the start.
  std::vector<double> slow_window, slow_all;
  std::string last_slow, last_slow_all;
  {
    std::ifstream in(controller.log_path(), std::ios::binary);
    std::string line;
    const std::string kSlow = "slow scheduling pass: ";
    long offset = 0;
    while (std::getline(in, line)) {
      const long at_line = offset;
      offset += static_cast<long>(line.size()) + 1;
      auto at = line.find(kSlow);
      if (at == std::string::npos) continue;
      const double ms = std::atof(line.c_str() + at + kSlow.size());
      slow_all.push_back(ms);
      last_slow_all = line;
      if (at_line >= log0 && at_line < log1) {
        slow_window.push_back(ms);
        last_slow = line;
      }
    }
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return std::string("none");
    std::sort(v.begin(), v.end());
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f ms", v[(v.size() - 1) / 2]);
    return std::string(buf);
  };
  auto max_of = [](const std::vector<double>& v) {
    if (v.empty()) return std::string("none");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f ms", *std::max_element(v.begin(), v.end()));
    return std::string(buf);
  };
  // The median pass from the buckets: the smallest bucket bound holding half of the passes.
  auto bucket_median = [](const Passes& a, const Passes& b) {
    const double n = b.count - a.count;
    if (n <= 0) return std::string("-");
    for (const auto& [le, c] : b.buckets) {
      auto before = a.buckets.find(le);
      if (c - (before == a.buckets.end() ? 0 : before->second) >= n / 2) {
        char buf[32];
        if (std::isinf(le)) return std::string("> 1000 ms");
        std::snprintf(buf, sizeof buf, "<= %g ms", le * 1000);
        return std::string(buf);
      }
    }
    return std::string("-");
  };
  const Passes zero;
  const double window_n = p1.count - p0.count, window_s = p1.sum - p0.sum;
  char mean_window[32] = "-", mean_all[32] = "-";
  if (window_n > 0) std::snprintf(mean_window, sizeof mean_window, "%.1f", 1000 * window_s / window_n);
  if (p1.count > 0) std::snprintf(mean_all, sizeof mean_all, "%.1f", 1000 * p1.sum / p1.count);
  const int code = stop(0);

  std::printf("\n## Scale: %d pending runs and %d nodes, one berth-controller, real API server (Kubernetes %s)\n\n", pending,
              nodes, KubeVersion().c_str());
  if (Kwok()) std::printf("kwok %s\n\n", ("`" + Join(KwokFlags()) + "`").c_str());
  std::printf("Fleet `big`: %d %s x 8 GPUs, free. Fleet `small`: one such node, taken whole by one run; "
              "the %d pending runs (1 GPU, `fleets: [small]`, retry on no-capacity) wait for it. They are created with "
              "berth stopped; berth then starts (log level info) and one 1-GPU run for `big` is created at once. "
              "The window: %d s after that run's admission.\n\n", nodes,
              Kwok() ? "kwok-managed Node objects" : "bare Node objects", pending, seconds);
  std::printf("| measure | measured | goal (issue 16) |\n|---|---|---|\n");
  std::printf("| nodes / pending runs | %d / %d | 10,000 / 100,000 |\n", nodes, pending);
  std::printf("| making the nodes (bench driver, 16 threads) | %.1f s | |\n", nodes_s);
  std::printf("| creating the pending runs (bench driver, 16 threads, berth stopped) | %.1f s (%.0f runs/s) | |\n", create_s,
              pending / create_s);
  std::printf("| start -> caches synced (/readyz 200) | %.2f s | |\n", synced);
  std::printf("| start -> first admission (run for `big` Scheduled, polled every 100 ms) | **%.2f s** | < 15 s |\n", admitted);
  std::printf("| runs queued at the end (/queue total) | %ld | %d |\n", queued_total, pending);
  std::printf("| passes in the window: count, mean | %.0f, %s ms | |\n", window_n, mean_window);
  std::printf("| passes in the window: median (histogram bucket) | %s | |\n", bucket_median(p0, p1).c_str());
  std::printf("| passes in the window in which the scheduling core decided (the others kept its last result) | %.0f of %.0f | |\n",
              p1.decided - p0.decided, window_n);
  std::printf("| passes since start: count, mean, median (bucket) | %.0f, %s ms, %s | < 100 ms a pass |\n", p1.count, mean_all,
              bucket_median(zero, p1).c_str());
  std::printf("| slow passes (> 200 ms, log) in the window: count, median, max | %zu, %s, %s | |\n", slow_window.size(),
              median(slow_window).c_str(), max_of(slow_window).c_str());
  std::printf("| slow passes since start: count, median, max | %zu, %s, %s | |\n", slow_all.size(),
              median(slow_all).c_str(), max_of(slow_all).c_str());
  std::printf("| controller RSS: max (sampled every 1 s from start), at first admission, at end | **%.0f MB**, %.0f MB, %.0f MB | < 1 GB |\n",
              rss_max, rss_at_admission, rss_end / 1024.0);
  std::printf("\nLast slow-pass line in the window: %s\n", last_slow.empty() ? "(none)" : ("`" + last_slow + "`").c_str());
  std::printf("\nLast slow-pass line since start: %s\n", last_slow_all.empty() ? "(none)" : ("`" + last_slow_all + "`").c_str());
  if (code != 0 || Flag("kueue", 0) == 0) return code;
  std::fflush(stdout);
  return ScaleBesideKueue(nodes, pending, seconds,
                          ScaleFigures{rss_max, admitted, window_n > 0 ? 1000 * window_s / window_n : -1});
}

}  // namespace berth::bench::e2e

using namespace berth::bench::e2e;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: berth-e2e-bench throughput|gangs|priority|memory|positions|scale|run-size|behaviour|reclaim|topology [--flag N ...]\n");
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
  if (scenario == "scale") finish(Scale());
  if (scenario == "run-size") finish(RunSize());
  if (scenario == "behaviour") finish(Behaviour());
  if (scenario == "reclaim") finish(Reclaim());  // bench/e2e/reclaim.cc
  if (scenario == "topology") finish(Topology());  // bench/e2e/topology.cc (issue 48)
  std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
  return 2;
}
