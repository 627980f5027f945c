// berth-e2e-bench topology (issue 48, item 4): berth's topology levels beside Kueue's
// Topology-Aware Scheduling (TAS) on one seeded stream of gangs, each system on a fresh control
// plane, one after the other (berth first).
//
//   berth-e2e-bench topology [--spines 4 --racks 8 --rack-nodes 18] [--gangs 300 --seed 48
//     --load 130 --runtime-min 30 --runtime-max 90 --max-duration 1 --timeout 1800]
//     [--kueue 0|1|2] [--kwok 1]
//
// The cluster: SPINES x RACKS x RACK-NODES Node objects of 8 GPUs (64 CPUs, 512Gi), labelled
// example.com/spine s<i>, example.com/rack r<j> (the rack values repeat under every spine: a
// domain is the path of values, in both systems) and kubernetes.io/hostname; kwok-managed with
// --kwok 1 (kwok's pod-complete-after-runtime stage of bench/e2e/kwok-stages.yaml ends each Pod
// after its runtime), else bare Ready nodes with berth-kubelet-sim playing the kubelet.
// The stream (Stream below, seeded): GANGS Indexed Jobs, each a gang of whole 8-GPU nodes at
// level rack (1, 2, 4, 8 or 16 nodes, at most a rack) or spine (4, 8, 16, 24 or 32, at most a
// spine), half of each required, half preferred; each Pod runs a runtime drawn uniformly from
// [RUNTIME-MIN, RUNTIME-MAX] s; Poisson arrivals at LOAD % of the cluster's capacity (offered
// node-seconds per second / nodes), so that a queue forms.
// - berth: one Fleet `topology: [{key: example.com/spine}, {key: example.com/rack}]`, placement
//   cluster; the Jobs labelled berth.dev/queue and berth.dev/whole-instances, annotated
//   berth.dev/topology-required|preferred and (--max-duration 1) berth.dev/max-duration = the
//   runtime + 50 % + 30 s (rounded up), as a user sets a limit above what the job needs; the
//   chart's admission policies; the Job controller makes the Pods, berth pins them, kube-scheduler
//   binds them.
// - Kueue: a Topology of example.com/spine, example.com/rack, kubernetes.io/hostname on the
//   ResourceFlavor of the nodes, a ClusterQueue of the whole capacity, a LocalQueue; the Jobs'
//   templates annotated kueue.x-k8s.io/podset-required|preferred-topology; Kueue admits, its TAS
//   assigns nodes (node selectors on the Pods it ungates), kube-scheduler binds.
// Measured from a watch of the Pods (the driver's clock): per gang creation -> every Pod bound
// (wait), the bound Pods' nodes (read from their Node labels: one domain of the gang's level or
// not), each Pod's busy time (bound -> Succeeded); sampled every second, the free nodes in domains
// too small for the waiting gangs. A required gang split across its level fails the command.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e_common.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "kueue.h"

namespace berth::bench::e2e {
namespace {

using berth::testing::ControllerProcess;
using berth::testing::Eventually;
using Clock = std::chrono::steady_clock;

constexpr const char* kSpine = "example.com/spine";
constexpr const char* kRack = "example.com/rack";
constexpr const char* kPool = "topo";
constexpr const char* kNs = "topo-bench";

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Shape {
  int spines = 4, racks = 8, rack_nodes = 18;
  int Nodes() const { return spines * racks * rack_nodes; }
  int SpineNodes() const { return racks * rack_nodes; }
  std::string Spine(int i) const { return "s" + std::to_string(i / SpineNodes()); }
  std::string Rack(int i) const { return "r" + std::to_string((i / rack_nodes) % racks); }
};

// The extra labels of node i (MakeNodes names it topo-i).
std::string NodeLabels(const Shape& s, int i) {
  return std::string("\"") + kSpine + "\":\"" + s.Spine(i) + "\",\"" + kRack + "\":\"" + s.Rack(i) +
         "\",\"kubernetes.io/hostname\":\"" + kPool + "-" + std::to_string(i) + "\"";
}

struct Arrival {
  TopologyGang gang;
  double at_s = 0;  // after the stream's start
};

std::vector<int> Sizes(const std::vector<int>& all, int cap) {
  std::vector<int> out;
  for (int n : all) {
    if (n <= cap) out.push_back(n);
  }
  return out;
}

double Mean(const std::vector<int>& v) {
  double sum = 0;
  for (int n : v) sum += n;
  return v.empty() ? 0 : sum / static_cast<double>(v.size());
}

// The seeded stream (the same to both systems): draws from mt19937 only, so that it is the same
// on every standard library.
std::vector<Arrival> Stream(const Shape& shape, int gangs, unsigned seed, double load_pct, int rmin, int rmax) {
  const std::vector<int> rack_sizes = Sizes({1, 2, 4, 8, 16}, shape.rack_nodes);
  const std::vector<int> spine_sizes = Sizes({4, 8, 16, 24, 32}, shape.SpineNodes());
  const double mean_nodes = (Mean(rack_sizes) + Mean(spine_sizes)) / 2, mean_runtime = (rmin + rmax) / 2.0;
  // Offered load = arrivals/s x mean nodes x mean runtime = load x nodes.
  const double mean_gap = mean_nodes * mean_runtime / (shape.Nodes() * load_pct / 100.0);
  std::mt19937 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng()) + 0.5) / 4294967296.0; };
  std::vector<Arrival> out;
  double t = 0;
  for (int i = 0; i < gangs; ++i) {
    const bool rack = uniform() < 0.5;
    const std::vector<int>& sizes = rack ? rack_sizes : spine_sizes;
    Arrival a;
    a.gang.name = "g" + std::to_string(i);
    a.gang.level = rack ? kRack : kSpine;
    a.gang.required = uniform() < 0.5;
    a.gang.nodes = sizes[static_cast<size_t>(uniform() * static_cast<double>(sizes.size()))];
    a.gang.runtime_s = rmin + static_cast<int>(uniform() * (rmax - rmin + 1));
    a.at_s = t;
    out.push_back(a);
    t += -std::log(uniform()) * mean_gap;
  }
  return out;
}

// What the watch saw of one Pod, in seconds after the stream's start (-1: not yet).
struct PodRec {
  std::string gang, node;
  double bound = -1, end = -1;
  bool succeeded = false;
};

// The Pods of the namespace through a watch, and the gangs' creation times (set by the submitter).
class Tracker {
 public:
  explicit Tracker(Clock::time_point t0)
      : t0_(t0), informer_(Client(), k8s::resources::kPods.Path(kNs), k8s::DecodePod,
                           [](const k8s::Pod& p) { return p.meta.name; }, "bench-topology-pods") {
    informer_.AddHandler([this](const std::string& key, const auto&, const auto& cur) {
      const double now = Secs(Clock::now() - t0_);
      std::lock_guard<std::mutex> l(mu_);
      PodRec& r = pods_[key];
      if (!cur) {
        if (r.end < 0) r.end = now;
        return;
      }
      r.gang = cur->meta.Label("batch.kubernetes.io/job-name");
      if (r.bound < 0 && !cur->node_name.empty()) {
        r.bound = now;
        r.node = cur->node_name;
      }
      if (r.end < 0 && (cur->phase == "Succeeded" || cur->phase == "Failed")) r.end = now;
      r.succeeded = r.succeeded || cur->phase == "Succeeded";
    });
    informer_.Start();
    Eventually([&] { return informer_.HasSynced(); }, std::chrono::seconds(60));
  }
  ~Tracker() { informer_.Stop(); }
  void Created(const std::string& gang) {
    std::lock_guard<std::mutex> l(mu_);
    created_[gang] = Secs(Clock::now() - t0_);
  }
  // A copy of what was seen.
  std::map<std::string, PodRec> Pods() const {
    std::lock_guard<std::mutex> l(mu_);
    return pods_;
  }
  std::map<std::string, double> CreatedAt() const {
    std::lock_guard<std::mutex> l(mu_);
    return created_;
  }

 private:
  Clock::time_point t0_;
  mutable std::mutex mu_;
  std::map<std::string, PodRec> pods_;
  std::map<std::string, double> created_;
  k8s::Informer<k8s::Pod> informer_;
};

struct NodeDomains {
  std::string spine, rack;  // rack: the path spine/rack
};

std::string DomainOf(const NodeDomains& n, const std::string& level) { return level == kRack ? n.rack : n.spine; }

// The nodes' domains, read from their labels on the API server.
std::map<std::string, NodeDomains> ReadDomains() {
  k8s::ListOptions opts;
  opts.label_selector = std::string("pool=") + kPool;
  std::map<std::string, NodeDomains> out;
  auto l = Client()->List(k8s::resources::kNodes.Path(), opts);
  if (!l.ok()) return out;
  for (auto& item : l->items) {
    auto node = k8s::DecodeNode(item);
    if (!node) continue;
    const std::string spine = node->meta.Label(kSpine);
    out[node->meta.name] = {.spine = spine, .rack = spine + "/" + node->meta.Label(kRack)};
  }
  return out;
}

// Fragmentation, sampled: the free nodes in domains of a waiting gang's level that are too small
// for it (fewer free nodes than it needs), for the oldest waiting gang ("next") and the largest.
struct Fragmentation {
  int samples = 0;     // samples with a gang waiting
  double next = 0, largest = 0, free = 0;  // sums over those samples
  int waiting_at_last_arrival = -1;
};

struct Waiting {
  int count = 0;
  const TopologyGang* next = nullptr;
  const TopologyGang* largest = nullptr;
};

Waiting WaitingGangs(const std::vector<Arrival>& stream, const std::map<std::string, double>& created,
                     const std::map<std::string, int>& bound) {
  Waiting w;
  double next_at = 1e300;
  for (const Arrival& a : stream) {
    auto c = created.find(a.gang.name);
    if (c == created.end()) continue;
    auto b = bound.find(a.gang.name);
    if (b != bound.end() && b->second >= a.gang.nodes) continue;
    ++w.count;
    if (c->second < next_at) {
      next_at = c->second;
      w.next = &a.gang;
    }
    if (w.largest == nullptr || a.gang.nodes > w.largest->nodes) w.largest = &a.gang;
  }
  return w;
}

void Sample(const Tracker& t, const std::vector<Arrival>& stream, const std::map<std::string, NodeDomains>& domains,
            Fragmentation* f, int* waiting_now) {
  std::set<std::string> busy;
  std::map<std::string, int> bound;
  for (const auto& [name, p] : t.Pods()) {
    if (p.bound < 0) continue;
    ++bound[p.gang];
    if (p.end < 0) busy.insert(p.node);
  }
  const Waiting w = WaitingGangs(stream, t.CreatedAt(), bound);
  *waiting_now = w.count;
  if (w.count == 0) return;
  std::map<std::string, int> free_in;  // by domain of either level
  int free_nodes = 0;
  for (const auto& [node, d] : domains) {
    if (busy.count(node)) continue;
    ++free_nodes;
    ++free_in[d.spine];
    ++free_in[d.rack];
  }
  auto too_small = [&](const TopologyGang& g) {
    int n = 0;
    for (const auto& [domain, count] : free_in) {
      const bool of_level = (domain.find('/') != std::string::npos) == (g.level == kRack);
      if (of_level && count < g.nodes) n += count;
    }
    return n;
  };
  ++f->samples;
  f->free += free_nodes;
  f->next += too_small(*w.next);
  f->largest += too_small(*w.largest);
}

struct SideResult {
  std::string name, flags;
  bool done = false;
  int finished = 0, placed = 0, in_level = 0, required = 0, required_in = 0, preferred = 0, preferred_in = 0;
  std::vector<std::string> violations;  // required gangs split across their level
  double window = 0, util_window = 0, makespan = 0, util_run = 0;
  double wait_mean = 0, wait_p50 = 0, wait_p95 = 0, wait_max = 0;
  Fragmentation frag;
};

double Overlap(double a0, double a1, double b0, double b1) { return std::max(0.0, std::min(a1, b1) - std::max(a0, b0)); }

// The figures from what the watch saw.
void Analyse(const std::vector<Arrival>& stream, const std::map<std::string, PodRec>& pods,
             const std::map<std::string, double>& created, const std::map<std::string, NodeDomains>& domains,
             int nodes, SideResult* r) {
  std::map<std::string, std::vector<const PodRec*>> of_gang;
  for (const auto& [name, p] : pods) of_gang[p.gang].push_back(&p);
  std::vector<double> waits;
  double last_created = 0;
  for (const auto& [g, at] : created) last_created = std::max(last_created, at);
  r->window = last_created;
  double busy_window = 0, busy_run = 0;
  for (const auto& [name, p] : pods) {
    if (p.bound < 0) continue;
    const double end = p.end < 0 ? p.bound : p.end;  // unfinished: not counted
    busy_window += Overlap(p.bound, end, 0, last_created);
    busy_run += end - p.bound;
    r->makespan = std::max(r->makespan, end);
  }
  r->util_window = last_created > 0 ? busy_window / (nodes * last_created) : 0;
  r->util_run = r->makespan > 0 ? busy_run / (nodes * r->makespan) : 0;
  for (const Arrival& a : stream) {
    const TopologyGang& g = a.gang;
    const auto& ps = of_gang[g.name];
    int bound = 0, succeeded = 0;
    double all_bound = 0;
    std::set<std::string> in;
    for (const PodRec* p : ps) {
      if (p->bound < 0) continue;
      ++bound;
      succeeded += p->succeeded;
      all_bound = std::max(all_bound, p->bound);
      auto d = domains.find(p->node);
      in.insert(d == domains.end() ? "?" + p->node : DomainOf(d->second, g.level));
    }
    r->finished += bound >= g.nodes && succeeded >= g.nodes;
    if (bound < g.nodes) continue;
    ++r->placed;
    auto c = created.find(g.name);
    if (c != created.end()) waits.push_back(all_bound - c->second);
    const bool one = in.size() == 1;
    r->in_level += one;
    (g.required ? r->required : r->preferred) += 1;
    (g.required ? r->required_in : r->preferred_in) += one;
    if (g.required && !one) {
      std::string where;
      for (const std::string& d : in) where += (where.empty() ? "" : ", ") + d;
      r->violations.push_back(g.name + " (" + std::to_string(g.nodes) + " nodes, required " + g.level + "): " + where);
    }
  }
  std::sort(waits.begin(), waits.end());
  if (!waits.empty()) {
    double sum = 0;
    for (double w : waits) sum += w;
    r->wait_mean = sum / static_cast<double>(waits.size());
    auto pct = [&](double q) { return waits[std::min(waits.size() - 1, static_cast<size_t>(q * static_cast<double>(waits.size())))]; };
    r->wait_p50 = pct(0.5);
    r->wait_p95 = pct(0.95);
    r->wait_max = waits.back();
  }
}

// Submits the stream on its schedule, samples every second until every gang is done (or the
// timeout after the last arrival), and analyses.
void Drive(const std::vector<Arrival>& stream, const std::string& jobs_path,
           const std::function<std::string(const TopologyGang&)>& body, int nodes, SideResult* r) {
  const auto domains = ReadDomains();
  if (static_cast<int>(domains.size()) != nodes) std::fprintf(stderr, "read %zu of %d nodes' labels\n", domains.size(), nodes);
  const auto t0 = Clock::now();
  Tracker tracker(t0);
  std::atomic<bool> sampling{true}, submitted{false};
  std::thread sampler([&] {
    bool last_arrival_seen = false;
    while (sampling) {
      int waiting = 0;
      const bool was_submitted = submitted;
      Sample(tracker, stream, domains, &r->frag, &waiting);
      if (was_submitted && !last_arrival_seen) {
        r->frag.waiting_at_last_arrival = waiting;
        last_arrival_seen = true;
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  for (const Arrival& a : stream) {
    std::this_thread::sleep_until(t0 + std::chrono::microseconds(static_cast<long long>(a.at_s * 1e6)));
    MustCreate(jobs_path, body(a.gang));
    tracker.Created(a.gang.name);
  }
  submitted = true;
  auto all_done = [&] {
    std::map<std::string, int> ended;
    for (const auto& [name, p] : tracker.Pods()) ended[p.gang] += p.end >= 0 && p.bound >= 0;
    for (const Arrival& a : stream) {
      if (ended[a.gang.name] < a.gang.nodes) return false;
    }
    return true;
  };
  r->done = Eventually([&] {
    if (all_done()) return true;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return false;
  }, std::chrono::seconds(Flag("timeout", 1800)));
  sampling = false;
  sampler.join();
  Analyse(stream, tracker.Pods(), tracker.CreatedAt(), domains, nodes, r);
}

std::string FleetYaml() {
  return std::string("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: ") + kPool +
         "}\nspec:\n  nodeSelector: {pool: " + kPool + "}\n  blocks: auto\n  placement: cluster\n  topology: [{key: " + kSpine +
         "}, {key: " + kRack + "}]\n";
}

// The runtime plus 50 % plus 30 s (for its Pods to be made, bound and started), rounded up: a
// limit above what the job needs, as a user sets one.
int MaxDuration(const TopologyGang& g) { return Flag("max-duration", 1) ? (g.runtime_s * 3 + 1) / 2 + 30 : 0; }

const std::string kWholeNodePod =
    R"({"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":)"
    R"({"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}]})";

SideResult RunSide(bool kueue, const Shape& shape, const std::vector<Arrival>& stream) {
  StartControlPlane();
  Kubectl({"create", "namespace", kNs});
  const int n = shape.Nodes();
  MakeNodes(kPool, n, [&](int i) { return NodeLabels(shape, i); });
  std::vector<pid_t> procs = {StartKubeScheduler(), StartJobController()};
  std::unique_ptr<ControllerProcess> controller, kubelet;
  if (!Kwok()) {
    kubelet = ControllerProcess::KubeletSim("kubelet-sim");
    kubelet->Start();
  }
  SideResult r;
  const std::string common = "; kube-scheduler " + Join(kSchedulerFlags) + "; kube-controller-manager " + Join(JobControllerFlags());
  if (kueue) {
    const long long nn = n;
    const std::string queues = KueueQueues(KueueQueueSpec{.pool = kPool, .ns = kNs, .cpu = 64 * nn, .memory_gi = 512 * nn,
                                                          .gpus = 8 * nn, .topology_levels = {kSpine, kRack}});
    const KueueRun k = StartKueue(kPool, kNs, false, queues);
    procs.push_back(k.pid);
    r.name = "Kueue " + KueueVersion() + " TAS + Job controller + kube-scheduler " + KubeVersion();
    r.flags = k.flags + "; Topology [" + kSpine + ", " + kRack + ", kubernetes.io/hostname] on the ResourceFlavor (topologyName), " +
              "ClusterQueue of the whole capacity (BestEffortFIFO, no preemption), TAS profile: the defaults of its feature gates" +
              common;
  } else {
    Kubectl({"apply", "-f", "-"}, FleetYaml());
    SetUpPolicies(/*jobs=*/true);
    // Its default log level (the harness passes debug, as Kueue's is not raised either).
    controller = std::make_unique<ControllerProcess>(std::vector<std::string>{"--log-level=info"}, "bench-controller");
    controller->Start();
    r.name = "berth, Jobs + Job controller + kube-scheduler " + KubeVersion();
    r.flags = std::string("berth-controller --log-level=info (its defaults: no client rate limit); Fleet placement: cluster, blocks: auto, topology [") +
              kSpine + ", " + kRack + "]; the chart's admission policies; Jobs labelled berth.dev/whole-instances" +
              (Flag("max-duration", 1) ? ", annotated berth.dev/max-duration (runtime x 1.5 + 30 s)" : "") + common;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const std::string jobs = std::string("/apis/batch/v1/namespaces/") + kNs + "/jobs";
  Drive(stream, jobs, [&](const TopologyGang& g) {
    return kueue ? KueueTopologyJob(g, kWholeNodePod) : BerthTopologyJob(g, kWholeNodePod, MaxDuration(g));
  }, n, &r);
  if (controller) controller->Stop();
  if (kubelet) kubelet->Stop();
  for (pid_t p : procs) StopProcess(p);
  StopControlPlane();
  return r;
}

std::string Pct(int part, int all) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f %% (%d of %d)", all > 0 ? 100.0 * part / all : 0.0, part, all);
  return b;
}

std::string Num(double v, const char* fmt) {
  char b[64];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

void PrintRow(const std::string& measure, const std::vector<SideResult>& rs, const std::function<std::string(const SideResult&)>& cell) {
  std::string line = "| " + measure + " |";
  for (const SideResult& r : rs) line += " " + cell(r) + " |";
  std::printf("%s\n", line.c_str());
}

void PrintTable(const Shape& shape, const std::vector<Arrival>& stream, const std::vector<SideResult>& rs) {
  int req = 0, rack = 0, pod_count = 0;
  for (const Arrival& a : stream) {
    req += a.gang.required;
    rack += a.gang.level == kRack;
    pod_count += a.gang.nodes;
  }
  std::printf("\n## Topology: %zu gangs on %d spines x %d racks x %d nodes (%d nodes, %d GPUs; %s; Kubernetes %s)\n\n",
              stream.size(), shape.spines, shape.racks, shape.rack_nodes, shape.Nodes(), 8 * shape.Nodes(),
              Kwok() ? "kwok-managed Node objects, simulated: kwok runs each Pod for its runtime"
                     : "bare Node objects, simulated: berth-kubelet-sim runs each Pod for its runtime",
              KubeVersion().c_str());
  std::printf("Stream (seed %d): %zu Indexed Jobs (%d Pods of 8 GPUs, one whole node each), %d at level rack, %zu at spine; "
              "%d required, %zu preferred; runtimes uniform %d-%d s; Poisson arrivals at %d %% of capacity over %.0f s. "
              "Each system on a fresh control plane, berth first.\n\n",
              Flag("seed", 48), stream.size(), pod_count, rack, stream.size() - rack, req, stream.size() - req,
              Flag("runtime-min", 30), Flag("runtime-max", 90), Flag("load", 130), stream.empty() ? 0.0 : stream.back().at_s);
  if (Kwok()) std::printf("kwok `%s`\n\n", Join(KwokFlags()).c_str());
  for (const SideResult& r : rs) std::printf("- **%s**: `%s`\n", r.name.c_str(), r.flags.c_str());
  std::string head = "\n| measure |", sep = "|---|";
  for (const SideResult& r : rs) {
    head += " " + r.name.substr(0, r.name.find(',') == std::string::npos ? r.name.find(' ') : r.name.find(',')) + " |";
    sep += "---|";
  }
  std::printf("%s\n%s\n", head.c_str(), sep.c_str());
  PrintRow("every gang ended / gangs whose every Pod Succeeded", rs, [&](const SideResult& r) { return std::string(r.done ? "yes" : "**NO**") + " / " + std::to_string(r.finished); });
  PrintRow("**gangs in one domain of their level** (of those placed)", rs, [](const SideResult& r) { return "**" + Pct(r.in_level, r.placed) + "**"; });
  PrintRow("preferred gangs in one domain of their preferred level", rs, [](const SideResult& r) { return Pct(r.preferred_in, r.preferred); });
  PrintRow("required gangs in one domain (must be all)", rs, [](const SideResult& r) { return Pct(r.required_in, r.required); });
  PrintRow("required gangs split across their level (violations)", rs, [](const SideResult& r) { return std::to_string(r.violations.size()); });
  PrintRow("**GPU utilization**, arrivals window (first to last creation)", rs, [](const SideResult& r) { return "**" + Num(100 * r.util_window, "%.1f %%") + "** of " + Num(r.window, "%.0f s"); });
  PrintRow("GPU utilization, whole run (first creation to last Pod done)", rs, [](const SideResult& r) { return Num(100 * r.util_run, "%.1f %%") + " of " + Num(r.makespan, "%.0f s"); });
  PrintRow("**mean wait** (creation to every Pod bound)", rs, [](const SideResult& r) { return "**" + Num(r.wait_mean, "%.1f s") + "**"; });
  PrintRow("wait p50 / p95 / max", rs, [](const SideResult& r) { return Num(r.wait_p50, "%.1f") + " / " + Num(r.wait_p95, "%.1f") + " / " + Num(r.wait_max, "%.1f s"); });
  auto frag = [](double sum, const SideResult& r) { return r.frag.samples > 0 ? sum / r.frag.samples : 0.0; };
  PrintRow("fragmentation: free nodes in domains too small for the next waiting gang (mean of samples)", rs, [&](const SideResult& r) { return Num(frag(r.frag.next, r), "%.1f"); });
  PrintRow("fragmentation: the same for the largest waiting gang", rs, [&](const SideResult& r) { return Num(frag(r.frag.largest, r), "%.1f"); });
  PrintRow("free nodes while a gang waits (mean of samples)", rs, [&](const SideResult& r) { return Num(frag(r.frag.free, r), "%.1f") + " (" + std::to_string(r.frag.samples) + " samples)"; });
  PrintRow("gangs waiting at the last arrival", rs, [](const SideResult& r) { return std::to_string(r.frag.waiting_at_last_arrival); });
}

}  // namespace

int Topology() {
  const Shape shape{.spines = Flag("spines", 4), .racks = Flag("racks", 8), .rack_nodes = Flag("rack-nodes", 18)};
  const std::vector<Arrival> stream = Stream(shape, Flag("gangs", 300), static_cast<unsigned>(Flag("seed", 48)), Flag("load", 130),
                                             Flag("runtime-min", 30), Flag("runtime-max", 90));
  const int kueue = Flag("kueue", 1);
  std::vector<SideResult> rs;
  if (kueue != 2) rs.push_back(RunSide(false, shape, stream));
  if (kueue != 0) rs.push_back(RunSide(true, shape, stream));
  PrintTable(shape, stream, rs);
  bool ok = true;
  for (const SideResult& r : rs) {
    for (const std::string& v : r.violations) std::printf("\n**violation** (%s): %s\n", r.name.c_str(), v.c_str());
    ok = ok && r.done && r.violations.empty();
  }
  if (rs.size() == 2) {
    const SideResult &b = rs[0], &k = rs[1];
    const double bs = b.placed ? 1.0 * b.in_level / b.placed : 0, ks = k.placed ? 1.0 * k.in_level / k.placed : 0;
    std::printf("\n| goal (issue 48) | berth | Kueue | |\n|---|---|---|---|\n");
    std::printf("| GPU utilization >= Kueue's (arrivals window) | %.1f %% | %.1f %% | %s |\n", 100 * b.util_window,
                100 * k.util_window, b.util_window >= k.util_window ? "**met**" : "**not met**");
    std::printf("| share in one domain of their level >= Kueue's | %.1f %% | %.1f %% | %s |\n", 100 * bs, 100 * ks,
                bs >= ks ? "**met**" : "**not met**");
    std::printf("| no required gang split | %zu | %zu | %s |\n", b.violations.size(), k.violations.size(),
                b.violations.empty() ? "**met**" : "**not met**");
  }
  return ok ? 0 : 1;
}

}  // namespace berth::bench::e2e
