// berth-e2e-bench behaviour: small scenarios run through berth and through Kueue (issue 32, 3),
// each system on a fresh control plane per scenario, with what each did as a Markdown table.
// Nothing here is timed against a goal: the table says what happened (who started, in which
// order, where, and what the waiting job's system said about it).
//
// Both systems see the same cluster: bare Node objects of 64 CPUs, 512Gi and 8 GPUs (labelled
// pool=gpu, zone=Z and kubernetes.io/hostname), no kubelet. The benchmark plays the kubelet for
// both: a bound Pod is reported Running, a finished one Succeeded, and a Pod being deleted is
// removed at once (a kubelet confirms the deletion of a Pod it does not run at once too).
// berth runs as its controller process; Kueue as in the other scenarios (bench/e2e/kueue.h) with
// kube-scheduler and the Job controller (kube-controller-manager --controllers=job), unthrottled.

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e_common.h"
#include "k8s/json.h"
#include "kueue.h"

namespace berth::bench::e2e {
namespace {

namespace json = k8s::json;
using berth::testing::ControlPlane;
using berth::testing::ControllerProcess;
using berth::testing::Eventually;
using Clock = std::chrono::steady_clock;

constexpr const char* kNs = "behaviour";
constexpr const char* kPool = "gpu";
constexpr int kGpusPerNode = 8;

// The cluster and the rules of one scenario.
struct Setup {
  std::vector<std::string> zones = {"a"};  // one node per entry, in that zone
  int blocks = 1;                          // berth: blocks per node (8: 1-GPU slices)
  long long gpu_quota = 0;                 // > 0: the namespace may hold only this many GPUs
  bool preemption = false;                 // a higher priority may stop a lower one
  bool zone_gangs = false;                 // a multi-node job stays in one zone
  std::string aging;                       // berth's --aging-interval ("": its default, 15m)
};

struct Job {
  std::string name;
  int priority = 50;  // 10, 50 or 90: Kueue's WorkloadPriorityClasses low, normal and high
  int gpus = kGpusPerNode;  // per Pod
  int nodes = 1;            // Pods (a gang when > 1)
};

struct PodInfo {
  std::string name, node, phase;
};

std::string Seconds1(Clock::duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", std::chrono::duration<double>(d).count());
  return buf;
}

std::string Shorten(std::string s, size_t n = 110) {
  if (s.size() > n) s = s.substr(0, n - 3) + "...";
  for (char& c : s) {
    if (c == '|' || c == '\n') c = ' ';
  }
  return s;
}

class System {
 public:
  virtual ~System() = default;
  virtual std::string Name() const = 0;
  // Starts the system on the current control plane, whose nodes exist.
  virtual void Start(const Setup& s) = 0;
  // Stops what Start started.
  virtual void Stop() = 0;
  virtual void Submit(const Job& j) = 0;
  // The label selector of the job's Pods.
  virtual std::string PodSelector(const std::string& job) const = 0;
  // The system knows the job and holds it waiting (not just created).
  virtual bool Waiting(const std::string& job) = 0;
  // What the system says of the job, in its own words.
  virtual std::string State(const std::string& job) = 0;
  // The configuration, for the table.
  virtual std::string Config() const = 0;

  std::vector<PodInfo> Pods(const std::string& job) const {
    k8s::ListOptions o;
    o.label_selector = PodSelector(job);
    std::vector<PodInfo> out;
    auto l = Client()->List(k8s::resources::kPods.Path(kNs), o);
    if (!l.ok()) return out;
    for (auto& p : l->items) {
      if (json::Find(p, {"metadata", "deletionTimestamp"}) != nullptr) continue;
      out.push_back({json::GetString(json::Find(p, {"metadata", "name"})), json::GetString(json::Find(p, {"spec", "nodeName"})),
                     json::GetString(json::Find(p, {"status", "phase"}))});
    }
    return out;
  }
  // Every Pod of the job is bound (and none has finished).
  bool Started(const Job& j) const {
    auto pods = Pods(j.name);
    int bound = 0;
    for (auto& p : pods) bound += !p.node.empty() && p.phase != "Succeeded" && p.phase != "Failed";
    return bound == j.nodes;
  }
  void SetPhase(const std::string& job, const std::string& phase) const {
    for (auto& p : Pods(job)) {
      if (p.node.empty() || p.phase == phase) continue;
      auto r = Client()->MergePatch(k8s::resources::kPods.Path(kNs, p.name, "status"), R"({"status":{"phase":")" + phase + "\"}}");
      if (!r.ok()) std::fprintf(stderr, "pod %s to %s: %s\n", p.name.c_str(), phase.c_str(), r.status().ToString().c_str());
    }
  }
  std::vector<std::string> Nodes(const std::string& job) const {
    std::vector<std::string> out;
    for (auto& p : Pods(job)) {
      if (!p.node.empty()) out.push_back(p.node);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

// The Pod template of a scenario's Job, the same for Kueue and for berth's Job path.
std::string JobPod(const Job& j) {
  return R"({"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":)"
         R"({"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":")" + std::to_string(j.gpus) +
         R"("},"limits":{"nvidia.com/gpu":")" + std::to_string(j.gpus) + R"("}}}]})";
}

// ---- berth -------------------------------------------------------------------------------------

class Berth : public System {
 public:
  std::string Name() const override { return "berth"; }
  void Start(const Setup& s) override {
    std::string fleet = "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: gpu}\nspec:\n  nodeSelector: {pool: " +
                        std::string(kPool) + "}\n  blocks: " + std::to_string(s.blocks) + "\n";
    if (s.zone_gangs) fleet += "  placement: cluster\n  topologyKey: zone\n";
    if (s.preemption) fleet += "  preemption: {policy: LowerPriority, minRuntime: 0s}\n";
    Kubectl({"apply", "-f", "-"}, fleet);
    config_ = "Fleet blocks " + std::to_string(s.blocks) + (s.zone_gangs ? ", placement cluster, topologyKey zone" : "") +
              (s.preemption ? ", preemption LowerPriority (minRuntime 0s)" : "");
    if (s.gpu_quota > 0) {
      // berth honours the namespace's ResourceQuota; the quota controller keeps its usage.
      Kubectl({"apply", "-n", kNs, "-f", "-"}, "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpus}\nspec:\n  hard: "
                                                "{requests.nvidia.com/gpu: \"" + std::to_string(s.gpu_quota) + "\"}\n");
      const auto& cp = ControlPlane::Get();
      quota_controller_ = Spawn({KubeBin("kube-controller-manager"), "--kubeconfig=" + cp.kubeconfig(), "--secure-port=0",
                                 "--use-service-account-credentials=false", "--controllers=resourcequota",
                                 "--leader-elect=false", "--kube-api-qps=5000", "--kube-api-burst=5000"},
                                cp.dir() + "/kube-controller-manager-quota.log");
      config_ += ", ResourceQuota requests.nvidia.com/gpu " + std::to_string(s.gpu_quota);
    }
    std::vector<std::string> args = {"--metrics-bind-address=127.0.0.1:" + std::to_string(berth::testing::FreePort())};
    if (!s.aging.empty()) {
      args.push_back("--aging-interval=" + s.aging);
      config_ += ", --aging-interval=" + s.aging;
    }
    controller_ = std::make_unique<ControllerProcess>(args, "behaviour-controller");
    controller_->Start();
  }
  void Stop() override {
    if (controller_) controller_->Stop();
    controller_.reset();
    StopProcess(quota_controller_);
    quota_controller_ = -1;
  }
  void Submit(const Job& j) override {
    // Queued while capacity is short, back to the queue when interrupted (as Kueue requeues).
    const std::string body = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + j.name +
                             R"("},"spec":{"priority":)" + std::to_string(j.priority) + R"(,"nodes":)" +
                             std::to_string(j.nodes) + R"(,"resources":{"gpu":)" + std::to_string(j.gpus) +
                             R"(},"retry":{"onEvents":["no-capacity","interruption"],"duration":"off"},)"
                             R"("template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})";
    MustCreate(k8s::resources::kRuns.Path(kNs), body);
  }
  std::string PodSelector(const std::string& job) const override { return "berth.dev/run=" + job; }
  bool Waiting(const std::string& job) override {
    auto r = Client()->Get(k8s::resources::kRuns.Path(kNs, job));
    if (!r.ok()) return false;
    const json::Value* st = json::Find(*r, {"status"});
    return st != nullptr && json::GetString(*st, "phase") == "Pending" && !json::GetString(*st, "reason").empty();
  }
  std::string State(const std::string& job) override {
    auto r = Client()->Get(k8s::resources::kRuns.Path(kNs, job));
    if (!r.ok()) return "(no Run)";
    const json::Value* st = json::Find(*r, {"status"});
    if (st == nullptr) return "(no status)";
    std::string out = json::GetString(*st, "phase");
    if (auto reason = json::GetString(*st, "reason"); !reason.empty()) out += " " + reason;
    if (auto msg = json::GetString(*st, "message"); !msg.empty()) out += ": " + msg;
    return out;
  }
  std::string Config() const override { return config_; }

 private:
  std::unique_ptr<ControllerProcess> controller_;
  pid_t quota_controller_ = -1;
  std::string config_;
};

// ---- berth, Jobs (issue 45) --------------------------------------------------------------------

// The same scenarios through berth's Job path: Kueue's Jobs but for the labels (bench::BerthJob),
// the chart's admission policies, the Job controller making the Pods, kube-scheduler binding them.
// berth answers for a Job through its ticket Run `job-<name>`.
class BerthJobs : public Berth {
 public:
  std::string Name() const override { return "berth, Jobs"; }
  void Start(const Setup& s) override {
    SetUpPolicies(/*jobs=*/true);
    procs_ = {StartKubeScheduler(), StartJobController()};
    Berth::Start(s);
  }
  void Stop() override {
    Berth::Stop();
    for (pid_t p : procs_) StopProcess(p);
    procs_.clear();
  }
  void Submit(const Job& j) override {
    const std::string pod = JobPod(j);
    MustCreate("/apis/batch/v1/namespaces/" + std::string(kNs) + "/jobs", BerthJob(j.name, pod, j.nodes, j.priority, j.nodes > 1));
  }
  std::string PodSelector(const std::string& job) const override { return "batch.kubernetes.io/job-name=" + job; }
  bool Waiting(const std::string& job) override { return Berth::Waiting("job-" + job); }
  std::string State(const std::string& job) override { return "ticket " + Berth::State("job-" + job); }
  std::string Config() const override { return Berth::Config() + "; the chart's admission policies, Job controller, kube-scheduler"; }

 private:
  std::vector<pid_t> procs_;
};

// ---- Kueue -------------------------------------------------------------------------------------

class Kueue : public System {
 public:
  std::string Name() const override { return "Kueue " + KueueVersion(); }
  void Start(const Setup& s) override {
    procs_ = {StartKubeScheduler(), StartJobController()};
    const long long nodes = static_cast<long long>(s.zones.size());
    KueueQueueSpec q{.pool = kPool, .ns = kNs, .cpu = 64 * nodes, .memory_gi = 512 * nodes,
                     .gpus = s.gpu_quota > 0 ? s.gpu_quota : kGpusPerNode * nodes, .preempt_lower_priority = s.preemption,
                     .topology_label = s.zone_gangs ? "zone" : ""};
    zone_gangs_ = s.zone_gangs;
    KueueRun k = StartKueue(kPool, kNs, false, KueueQueues(q));
    procs_.push_back(k.pid);
    config_ = "ClusterQueue nominal quota " + std::to_string(q.gpus) + " GPUs" +
              (s.preemption ? ", preemption.withinClusterQueue LowerPriority" : "") +
              (s.zone_gangs ? ", Topology-Aware Scheduling (Topology zone/hostname, podset-required-topology zone)" : "");
  }
  void Stop() override {
    for (pid_t p : procs_) StopProcess(p);
    procs_.clear();
  }
  void Submit(const Job& j) override {
    const std::string pod = JobPod(j);
    const std::string cls = j.priority >= 90 ? "high" : j.priority >= 50 ? "normal" : "low";
    MustCreate("/apis/batch/v1/namespaces/" + std::string(kNs) + "/jobs",
               KueueJob(j.name, pod, j.nodes, cls, zone_gangs_ && j.nodes > 1 ? "zone" : ""));
  }
  std::string PodSelector(const std::string& job) const override { return "batch.kubernetes.io/job-name=" + job; }
  bool Waiting(const std::string& job) override {
    auto w = Workload(job);
    return w && HasCondition(*w, "QuotaReserved");
  }
  std::string State(const std::string& job) override {
    auto w = Workload(job);
    if (!w) return "(no Workload)";
    std::string out;
    const json::Value* conds = json::Find(*w, {"status", "conditions"});
    if (conds != nullptr && conds->IsArray()) {
      for (const json::Value& c : conds->GetArray()) {
        out += (out.empty() ? "" : "; ") + json::GetString(c, "type") + "=" + json::GetString(c, "status");
        if (auto reason = json::GetString(c, "reason"); !reason.empty()) out += " " + reason;
        if (auto msg = json::GetString(c, "message"); !msg.empty() && json::GetString(c, "status") == "False") {
          out += ": " + msg;
        }
      }
    }
    return "Workload " + (out.empty() ? std::string("(no conditions)") : out);
  }
  std::string Config() const override { return config_; }

 private:
  // The Workload Kueue made for the Job.
  std::optional<json::Document> Workload(const std::string& job) {
    auto l = Client()->List("/apis/kueue.x-k8s.io/v1beta2/namespaces/" + std::string(kNs) + "/workloads");
    if (!l.ok()) return std::nullopt;
    for (auto& item : l->items) {
      const json::Value* owners = json::Find(item, {"metadata", "ownerReferences"});
      if (owners != nullptr && owners->IsArray() && !owners->Empty() && json::GetString((*owners)[0], "name") == job) {
        return std::move(item);
      }
    }
    return std::nullopt;
  }
  static bool HasCondition(const json::Value& w, const std::string& type) {
    const json::Value* conds = json::Find(w, {"status", "conditions"});
    if (conds == nullptr || !conds->IsArray()) return false;
    for (const json::Value& c : conds->GetArray()) {
      if (json::GetString(c, "type") == type) return true;
    }
    return false;
  }
  std::vector<pid_t> procs_;
  bool zone_gangs_ = false;
  std::string config_;
};

// ---- the cluster -------------------------------------------------------------------------------

void MakeZoneNodes(const std::vector<std::string>& zones) {
  std::map<std::string, int> per_zone;
  for (const auto& zone : zones) {
    const std::string name = zone + "-" + std::to_string(per_zone[zone]++);
    const std::string res = R"({"cpu":"64","memory":"512Gi","pods":"110","nvidia.com/gpu":"8"})";
    MustCreate(k8s::resources::kNodes.Path(),
               R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{"pool":")" + kPool +
                   R"(","zone":")" + zone + R"(","kubernetes.io/hostname":")" + name + R"("}},"status":{"capacity":)" + res +
                   R"(,"allocatable":)" + res + R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})");
    // The API server taints a new node not-ready; no node lifecycle controller runs to lift it.
    (void)Client()->JsonPatch(k8s::resources::kNodes.Path("", name), R"([{"op":"remove","path":"/spec/taints"}])");
  }
}

// Plays the kubelet's part in deletions: a Pod being deleted (gracefully) is removed at once.
class PodReaper {
 public:
  PodReaper() : thread_([this] { Loop(); }) {}
  ~PodReaper() {
    stop_ = true;
    thread_.join();
  }

 private:
  void Loop() {
    while (!stop_) {
      auto l = Client()->List(k8s::resources::kPods.Path(kNs));
      if (l.ok()) {
        for (auto& p : l->items) {
          if (json::Find(p, {"metadata", "deletionTimestamp"}) == nullptr) continue;
          k8s::DeleteOptions o;
          o.grace_period_seconds = 0;
          // A failure is tried again on the next round.
          (void)Client()->Delete(k8s::resources::kPods.Path(kNs, json::GetString(json::Find(p, {"metadata", "name"}))), o);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// ---- the scenarios -----------------------------------------------------------------------------

// Submits `j`, waits until it has started and reports its Pods Running; false after `timeout`.
bool StartAndRun(System& sys, const Job& j, std::chrono::seconds timeout = std::chrono::seconds(60)) {
  sys.Submit(j);
  if (!Eventually([&] { return sys.Started(j); }, timeout)) return false;
  sys.SetPhase(j.name, "Running");
  return true;
}

// Submits each job (1.1 s apart: creation times are in seconds) and waits until the system holds
// each one waiting.
bool SubmitWaiting(System& sys, const std::vector<Job>& jobs) {
  for (const auto& j : jobs) {
    sys.Submit(j);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  }
  for (const auto& j : jobs) {
    if (!Eventually([&] { return sys.Waiting(j.name); }, std::chrono::seconds(60))) return false;
  }
  return true;
}

// The running job finishes, one slot frees; the waiting job that starts next. Empty when none
// started within 30 s.
std::string FreeOne(System& sys, const std::string& running, const std::vector<Job>& waiting) {
  sys.SetPhase(running, "Succeeded");
  std::string next;
  Eventually([&] {
    for (const auto& j : waiting) {
      if (sys.Started(j)) {
        next = j.name;
        return true;
      }
    }
    return false;
  }, std::chrono::seconds(30));
  if (!next.empty()) {
    sys.SetPhase(next, "Running");
  } else {
    for (auto& p : sys.Pods(running)) std::fprintf(stderr, "  %s: pod %s on %s: %s\n", running.c_str(), p.name.c_str(), p.node.c_str(), p.phase.c_str());
    for (const auto& j : waiting) std::fprintf(stderr, "  %s: %s\n", j.name.c_str(), sys.State(j.name).c_str());
  }
  return next;
}

// One node, held by a running job; the jobs wait behind it; three slots free one after another.
std::string StartOrder(System& sys, const std::vector<Job>& jobs) {
  if (!StartAndRun(sys, {"first"})) return "the first job never started: " + Shorten(sys.State("first"));
  if (!SubmitWaiting(sys, jobs)) return "the jobs were never all held waiting";
  std::vector<Job> waiting = jobs;
  std::string running = "first", order;
  while (!waiting.empty()) {
    const std::string next = FreeOne(sys, running, waiting);
    if (next.empty()) return order + (order.empty() ? "" : ", then ") + "nothing started within 30 s of a slot freeing";
    order += (order.empty() ? "" : ", ") + next;
    waiting.erase(std::find_if(waiting.begin(), waiting.end(), [&](const Job& j) { return j.name == next; }));
    running = next;
  }
  return "started " + order;
}

std::string PriorityOrder(System& sys) {
  return StartOrder(sys, {{"low", 10}, {"normal", 50}, {"high", 90}}) + " (submitted low, normal, high)";
}

std::string FifoWithinPriority(System& sys) {
  return StartOrder(sys, {{"zulu", 50}, {"alpha", 50}, {"mike", 50}}) + " (submitted zulu, alpha, mike; priority 50)";
}

// A low-priority job waits behind a stream of higher ones: two always wait beside it. Does it
// ever start?
std::string Starvation(System& sys) {
  if (!StartAndRun(sys, {"first"})) return "the first job never started: " + Shorten(sys.State("first"));
  const Job low{"low", 10};
  int n = 0;
  std::vector<Job> waiting = {low};
  auto more = [&] {
    Job h{"stream-" + std::to_string(n++), 50};
    sys.Submit(h);
    waiting.push_back(h);
  };
  sys.Submit(low);
  more();
  more();
  if (!Eventually([&] { return sys.Waiting("low"); }, std::chrono::seconds(60))) return "low was never held waiting";
  const auto t0 = Clock::now();
  std::string running = "first";
  for (int frees = 1; Clock::now() - t0 < std::chrono::seconds(60); ++frees) {
    const std::string next = FreeOne(sys, running, waiting);
    if (next.empty()) return "nothing started within 30 s of a slot freeing";
    if (next == "low") {
      return "low started after " + std::to_string(frees) + " slot frees (" + Seconds1(Clock::now() - t0) +
             "), two priority-50 jobs waiting beside it";
    }
    waiting.erase(std::find_if(waiting.begin(), waiting.end(), [&](const Job& j) { return j.name == next; }));
    running = next;
    more();
  }
  return "low had not started after 60 s of slot frees, each taken by a priority-50 job (" + Shorten(sys.State("low"), 80) + ")";
}

// One node of 8 GPUs; nine 1-GPU jobs.
std::string SharedNode(System& sys) {
  std::vector<Job> jobs;
  for (int i = 1; i <= 9; ++i) jobs.push_back({"slice-" + std::to_string(i), 50, 1});
  for (const auto& j : jobs) sys.Submit(j);
  int started = 0;
  Eventually([&] {
    started = 0;
    for (const auto& j : jobs) started += sys.Started(j);
    return started >= 8;
  }, std::chrono::seconds(60));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a ninth would have started by now
  std::set<std::string> nodes;
  std::string waiting;
  started = 0;
  for (const auto& j : jobs) {
    if (sys.Started(j)) {
      ++started;
      for (auto& n : sys.Nodes(j.name)) nodes.insert(n);
    } else {
      waiting = j.name;
    }
  }
  std::string out = std::to_string(started) + " of 9 run at once on " + std::to_string(nodes.size()) + " node(s)";
  if (!waiting.empty()) out += "; " + waiting + " waits (" + Shorten(sys.State(waiting), 90) + ")";
  return out;
}

// Zones a (a-0, a-1) and b (b-0, b-1); a 1-GPU job takes a slice of one node, then a gang of two
// whole nodes arrives: it fits only on two idle nodes of one zone.
std::string ZoneGang(System& sys) {
  if (!StartAndRun(sys, {"small", 50, 1})) return "the 1-GPU job never started: " + Shorten(sys.State("small"));
  const auto small = sys.Nodes("small");
  const Job gang{"gang", 50, kGpusPerNode, 2};
  sys.Submit(gang);
  if (!Eventually([&] { return sys.Started(gang); }, std::chrono::seconds(60))) {
    return "the gang did not start within 60 s (" + std::to_string(sys.Nodes("gang").size()) + " of 2 Pods bound; " +
           Shorten(sys.State("gang"), 90) + ")";
  }
  const auto nodes = sys.Nodes("gang");
  std::set<std::string> zones;
  std::string where;
  for (const auto& n : nodes) {
    zones.insert(n.substr(0, n.find('-')));
    where += (where.empty() ? "" : ", ") + n;
  }
  const bool shares = std::find(nodes.begin(), nodes.end(), small.empty() ? "" : small[0]) != nodes.end();
  return "1-GPU job on " + (small.empty() ? std::string("?") : small[0]) + "; gang on " + where + ": " +
         (zones.size() == 1 ? "one zone" : "two zones") + (shares ? ", sharing the busy node" : ", whole idle nodes");
}

// Two nodes (16 GPUs), a quota of 8 GPUs: the second whole-node job waits for the first.
std::string QuotaQueues(System& sys) {
  if (!StartAndRun(sys, {"q1"})) return "q1 never started: " + Shorten(sys.State("q1"));
  const Job q2{"q2"};
  sys.Submit(q2);
  if (!Eventually([&] { return sys.Waiting("q2") || sys.Started(q2); }, std::chrono::seconds(60))) return "q2 was never seen";
  std::this_thread::sleep_for(std::chrono::seconds(3));
  if (sys.Started(q2)) return "q2 started beside q1: the quota did not hold";
  const std::string said = Shorten(sys.State("q2"), 120);
  sys.SetPhase("q1", "Succeeded");
  const auto t0 = Clock::now();
  if (!Eventually([&] { return sys.Started(q2); }, std::chrono::seconds(30))) {
    return "q2 waited (" + said + ") and did not start within 30 s of q1 finishing";
  }
  return "q2 waited while q1 ran (" + said + "); started " + Seconds1(Clock::now() - t0) + " after q1 finished";
}

// One node held by a priority-10 job; a priority-90 job arrives.
std::string Preemption(System& sys) {
  if (!StartAndRun(sys, {"low", 10})) return "low never started: " + Shorten(sys.State("low"));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const Job high{"high", 90};
  const auto t0 = Clock::now();
  sys.Submit(high);
  if (!Eventually([&] { return sys.Started(high); }, std::chrono::seconds(30))) {
    return "high still waits after 30 s (" + Shorten(sys.State("high"), 90) + "); low: " + Shorten(sys.State("low"), 60);
  }
  const std::string took = Seconds1(Clock::now() - t0);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  return "high started " + took + " after it was created; low: " + Shorten(sys.State("low"), 100);
}

struct Scenario {
  std::string what;
  Setup setup;
  std::string (*run)(System&);
};

// Runs `s` through `sys` on a fresh control plane; returns what happened.
std::string RunScenario(System& sys, const Scenario& s, std::string* config) {
  StartControlPlane();
  Kubectl({"create", "namespace", kNs});
  MakeZoneNodes(s.setup.zones);
  sys.Start(s.setup);
  *config = sys.Config();
  std::string out;
  {
    PodReaper reaper;
    out = s.run(sys);
  }
  sys.Stop();
  StopControlPlane();
  return out;
}

}  // namespace

int Behaviour() {
  std::vector<Scenario> scenarios = {
      {"priority order: one node; low (10), normal (50), high (90) wait behind a running job", {}, PriorityOrder},
      {"FIFO within a priority: three priority-50 jobs wait behind a running job", {}, FifoWithinPriority},
      {"a priority-10 job behind a stream of priority-50 jobs (two always waiting), one node", {{"a"}, 1, 0, false, false, "250ms"},
       Starvation},
      {"nine 1-GPU jobs on one node of 8 GPUs", {{"a"}, 8, 0, false, false, ""}, SharedNode},
      {"a gang of two whole nodes in one zone; zones a and b of two nodes, one busy with a 1-GPU job",
       {{"a", "a", "b", "b"}, 8, 0, false, true, ""}, ZoneGang},
      {"a quota of 8 GPUs on two 8-GPU nodes: two whole-node jobs", {{"a", "a"}, 1, 8, false, false, ""}, QuotaQueues},
      {"preemption: a priority-90 job arrives at a node held by a priority-10 job", {{"a"}, 1, 0, true, false, ""}, Preemption},
  };
  const int only = Flag("only", 0);  // 1-based: run one scenario
  Berth berth;
  BerthJobs berth_jobs;
  Kueue kueue;
  // --jobs 1: berth's Job path too (issue 45), between berth's Runs and Kueue.
  std::vector<System*> systems = {&berth, &kueue};
  if (Flag("jobs", 0) != 0) systems.insert(systems.begin() + 1, &berth_jobs);
  struct Row {
    std::string what;
    std::vector<std::string> outcome, config;
  };
  std::vector<Row> rows;
  for (size_t i = 0; i < scenarios.size(); ++i) {
    if (only > 0 && static_cast<size_t>(only) != i + 1) continue;
    Row row{scenarios[i].what, {}, {}};
    for (System* sys : systems) {
      row.config.emplace_back();
      row.outcome.push_back(RunScenario(*sys, scenarios[i], &row.config.back()));
      std::fprintf(stderr, "%s: %s: %s\n", sys->Name().c_str(), row.what.c_str(), row.outcome.back().c_str());
    }
    rows.push_back(row);
  }
  std::string header = "| scenario |", rule = "|---|";
  for (System* sys : systems) {
    header += " " + sys->Name() + " |";
    rule += "---|";
  }
  auto print = [&](bool config) {
    std::printf("%s\n%s\n", header.c_str(), rule.c_str());
    for (const auto& r : rows) {
      std::printf("| %s |", r.what.c_str());
      for (const auto& cell : config ? r.config : r.outcome) std::printf(" %s |", cell.c_str());
      std::printf("\n");
    }
  };
  std::printf("\n## Behaviour side by side: berth and %s (bench/e2e/behaviour.cc)\n\n", kueue.Name().c_str());
  print(false);
  std::printf("\nConfiguration of each scenario:\n\n");
  print(true);
  return 0;
}

}  // namespace berth::bench::e2e
