// berth-e2e-bench reclaim: how long an owner team's run waits for its idle share, lent to other
// teams, to be taken back (issue 31, "Done means": 10 teams, 10,000 pending runs, 1,000 nodes).
//
//   berth-e2e-bench reclaim [--nodes 1000 --pending 10000 --teams 10 --samples 20]
//                           [--run-gpus 8 --owner-gpus 8 --owner-priority 10] [--debug 1]
//
// One Fleet over NODES bare Node objects of 8 GPUs (blocks 8, preemption.reclaim Borrowed,
// minRuntime 0s); TEAMS Teams, each with one namespace and an equal nominal share of the fleet.
// The even teams ("owners") run nothing at the start; the odd ones ("borrowers") run runs of
// RUN-GPUS GPUs that fill the whole cluster, so they borrow every owner's share, and PENDING more
// of their runs wait (retry on no-capacity; every borrower run retries on interruption too).
// Then SAMPLES times, one after the other: an owner team (in turn) creates one run of OWNER-GPUS
// GPUs at OWNER-PRIORITY (below the borrowers' 50: a reclaim needs no priority), which fits its
// unused nominal share; the clock runs from the create call's answer to the run's status showing
// Scheduled, as a watch on every Run (an informer) sees it. The victims are the runs whose status
// went to reason Reclaimed meanwhile (checked against the owner's status.preemption record). The
// owner's Pod is then reported Succeeded, and the next sample waits until the borrowers have
// filled the freed node again (every Pod of the cluster Running).
//
// No kubelet: the benchmark plays it as bench/e2e/behaviour.cc does (a bound Pod is reported
// Running, a Pod being deleted is removed at once), here through a watch on every Pod (a poll of
// 10,000s of objects would load the API server the measurement runs on).

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e_common.h"
#include "k8s/informer.h"
#include "k8s/json.h"
#include "k8s/objects.h"

namespace berth::bench::e2e {
namespace {

namespace json = k8s::json;
using berth::testing::ControlPlane;
using berth::testing::ControllerProcess;
using berth::testing::Eventually;
using Clock = std::chrono::steady_clock;

constexpr const char* kPool = "gpu";
constexpr int kGpusPerNode = 8;
constexpr int kBorrowerPriority = 50;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string TeamNs(int i) { return "team-" + std::to_string(i); }

// ---- the kubelet's part ------------------------------------------------------------------------

// Plays the kubelet for every Pod of the cluster, from a watch: a bound Pod not yet reported is
// reported Running; a Pod being deleted is removed at once (grace period 0). The writes are made
// by worker threads (informer handlers must be quick).
class Kubelet {
 public:
  Kubelet()
      : informer_(Client(), k8s::resources::kPods.Path(), k8s::DecodePod,
                  [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "bench-kubelet") {
    informer_.AddHandler([this](const std::string& key, const auto&, const auto& cur) {
      if (cur == nullptr) return;
      if (cur->meta.deleting) {
        Enqueue(key, true);
      } else if (!cur->node_name.empty() && (cur->phase.empty() || cur->phase == "Pending")) {
        Enqueue(key, false);
      }
    });
    for (int i = 0; i < 4; ++i) workers_.emplace_back([this] { Work(); });
    informer_.Start();
    Eventually([&] { return informer_.HasSynced(); }, std::chrono::seconds(60));
  }
  ~Kubelet() {
    informer_.Stop();
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  // Pods on a node, not being deleted, reported Running.
  int Running() const {
    int n = 0;
    for (const auto& p : informer_.List()) n += !p->node_name.empty() && !p->meta.deleting && p->phase == "Running";
    return n;
  }
  std::string Phase(const std::string& ns, const std::string& pod) const {
    auto p = informer_.Get(k8s::ObjectKey(ns, pod));
    return p == nullptr ? std::string() : p->phase;
  }

 private:
  void Enqueue(const std::string& key, bool remove) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!queued_.insert({key, remove}).second) return;
      todo_.emplace_back(key, remove);
    }
    cv_.notify_one();
  }
  void Work() {
    for (;;) {
      std::pair<std::string, bool> item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !todo_.empty(); });
        if (stop_) return;
        item = todo_.front();
        todo_.pop_front();
        queued_.erase(item);
      }
      const auto slash = item.first.find('/');
      const std::string ns = item.first.substr(0, slash), name = item.first.substr(slash + 1);
      if (item.second) {
        k8s::DeleteOptions o;
        o.grace_period_seconds = 0;
        (void)Client()->Delete(k8s::resources::kPods.Path(ns, name), o);  // gone already: fine
      } else {
        (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, name, "status"), R"({"status":{"phase":"Running"}})");
      }
    }
  }
  k8s::Informer<k8s::Pod> informer_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<std::string, bool>> todo_;
  std::set<std::pair<std::string, bool>> queued_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

// ---- what the Runs show ------------------------------------------------------------------------

struct RunView {
  std::string ns, name, uid, phase, reason;
  std::vector<std::string> victims;  // status.preemption.victimUIDs (issue 44: victims of other namespaces by uid only)
  bool reclaim = false;              // status.preemption.reclaim
};

std::shared_ptr<const RunView> DecodeRunView(const json::Value& v) {
  auto out = std::make_shared<RunView>();
  out->ns = json::GetString(json::Find(v, {"metadata", "namespace"}));
  out->name = json::GetString(json::Find(v, {"metadata", "name"}));
  out->uid = json::GetString(json::Find(v, {"metadata", "uid"}));
  if (const json::Value* st = json::Find(v, {"status"}); st != nullptr && st->IsObject()) {
    out->phase = json::GetString(*st, "phase");
    out->reason = json::GetString(*st, "reason");
    if (const json::Value* p = json::Find(*st, {"preemption"}); p != nullptr && p->IsObject()) {
      out->reclaim = json::GetBool(*p, "reclaim");
      if (const json::Value* vs = json::Find(*p, {"victimUIDs"}); vs != nullptr && vs->IsArray()) {
        for (const json::Value& x : vs->GetArray()) out->victims.push_back(json::GetString(&x));
      }
    }
  }
  return out;
}

bool Placed(const RunView& r) { return r.phase == "Scheduled" || r.phase == "Running" || r.phase == "Succeeded"; }

// A watch on every Run: when each was first seen placed, every move to reason Reclaimed (in
// order), and the victims each run's preemption record named.
class RunWatch {
 public:
  struct Reclaimed {
    std::string key, uid;
    Clock::time_point at;
  };
  RunWatch()
      : informer_(Client(), k8s::resources::kRuns.Path(), DecodeRunView,
                  [](const RunView& r) { return k8s::ObjectKey(r.ns, r.name); }, "bench-runs") {
    informer_.AddHandler([this](const std::string& key, const auto& old, const auto& cur) {
      if (cur == nullptr) return;
      const auto now = Clock::now();
      std::lock_guard<std::mutex> lock(mu_);
      if (Placed(*cur) && (old == nullptr || !Placed(*old))) placed_.emplace(key, now);
      if (cur->reason == "Reclaimed" && (old == nullptr || old->reason != "Reclaimed")) reclaimed_.push_back({key, cur->uid, now});
      if (!cur->victims.empty()) {
        record_[key] = cur->victims;
        record_reclaim_[key] = cur->reclaim;
      }
    });
    informer_.Start();
    Eventually([&] { return informer_.HasSynced(); }, std::chrono::seconds(60));
  }
  ~RunWatch() { informer_.Stop(); }
  std::optional<Clock::time_point> PlacedAt(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = placed_.find(key);
    return it == placed_.end() ? std::nullopt : std::optional(it->second);
  }
  size_t ReclaimedCount() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reclaimed_.size();
  }
  std::vector<Reclaimed> ReclaimedSince(size_t mark) const {
    std::lock_guard<std::mutex> lock(mu_);
    return {reclaimed_.begin() + static_cast<std::ptrdiff_t>(std::min(mark, reclaimed_.size())), reclaimed_.end()};
  }
  // The uids of the victims the run's preemption record named (the last non-empty list seen), and whether
  // that record was a reclaim.
  std::pair<std::vector<std::string>, bool> Record(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = record_.find(key);
    if (it == record_.end()) return {};
    return {it->second, record_reclaim_.at(key)};
  }
  std::string Phase(const std::string& key) const {
    auto r = informer_.Get(key);
    return r == nullptr ? std::string() : r->phase;
  }
  // Runs Pending with a reason written (berth has seen them and says why they wait).
  int Waiting() const {
    int n = 0;
    for (const auto& r : informer_.List()) n += r->phase == "Pending" && !r->reason.empty();
    return n;
  }
  int PlacedCount() const {
    int n = 0;
    for (const auto& r : informer_.List()) n += Placed(*r) && r->phase != "Succeeded";
    return n;
  }

 private:
  k8s::Informer<RunView> informer_;
  mutable std::mutex mu_;
  std::map<std::string, Clock::time_point> placed_;
  std::vector<Reclaimed> reclaimed_;
  std::map<std::string, std::vector<std::string>> record_;
  std::map<std::string, bool> record_reclaim_;
};

// ---- the scenario ------------------------------------------------------------------------------

struct Config {
  int nodes = 0, pending = 0, teams = 0, samples = 0, run_gpus = 0, owner_gpus = 0, owner_priority = 0;
  int share = 0;          // each team's nominal GPUs
  int cluster_runs = 0;   // borrower runs that fill the cluster
  std::vector<int> owners, borrowers;
};

Config ReadConfig() {
  Config c;
  c.nodes = Flag("nodes", 1000);
  c.pending = Flag("pending", 10000);
  c.teams = std::max(2, Flag("teams", 10));
  c.samples = std::max(1, Flag("samples", 20));
  c.run_gpus = std::clamp(Flag("run-gpus", kGpusPerNode), 1, kGpusPerNode);
  c.owner_gpus = std::clamp(Flag("owner-gpus", kGpusPerNode), 1, kGpusPerNode);
  c.owner_priority = Flag("owner-priority", 10);
  c.share = c.nodes * kGpusPerNode / c.teams;
  c.cluster_runs = c.nodes * (kGpusPerNode / c.run_gpus);
  for (int i = 0; i < c.teams; ++i) (i % 2 == 0 ? c.owners : c.borrowers).push_back(i);
  return c;
}

// A run of `gpus` GPUs on one node (RunBody: a busybox template).
std::string RunYaml(const std::string& name, int gpus, int priority, const std::string& retry) {
  return RunBody(name, R"("priority":)" + std::to_string(priority) + R"(,"resources":{"gpu":)" + std::to_string(gpus) +
                           R"(},"retry":{"onEvents":[)" + retry + R"(],"duration":"off"},)");
}

const std::string kBorrowerRetry = R"("no-capacity","interruption")";

// Namespaces, Teams, nodes and the Fleet.
void MakeCluster(const Config& c) {
  for (int i = 0; i < c.teams; ++i) {
    Kubectl({"create", "namespace", TeamNs(i)});
    Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + TeamNs(i) +
                                      "}\nspec:\n  namespaces: [" + TeamNs(i) + "]\n  shares:\n  - fleet: " + kPool +
                                      "\n    nominal: {gpu: " + std::to_string(c.share) + "}\n");
  }
  MakeNodes(kPool, c.nodes);
  Kubectl({"apply", "-f", "-"}, std::string("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: ") + kPool +
                                    "}\nspec:\n  nodeSelector: {pool: " + kPool + "}\n  blocks: " +
                                    std::to_string(kGpusPerNode) + "\n  preemption: {reclaim: Borrowed, minRuntime: 0s}\n");
}

// The borrowers' runs fill the cluster (each Pod Running), then PENDING more wait. False when a
// step did not happen in time (said on stderr).
bool FillAndQueue(const Config& c, const Kubelet& kubelet, const RunWatch& runs) {
  const auto t0 = Clock::now();
  Parallel(c.cluster_runs, 16, [&](int i) {
    const int team = c.borrowers[i % c.borrowers.size()];
    MustCreate(k8s::resources::kRuns.Path(TeamNs(team)), RunYaml("run-" + std::to_string(i), c.run_gpus, kBorrowerPriority, kBorrowerRetry));
  });
  if (!Eventually([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        return kubelet.Running() >= c.cluster_runs;
      }, std::chrono::seconds(900))) {
    std::fprintf(stderr, "only %d of %d borrower Pods Running after 900 s\n", kubelet.Running(), c.cluster_runs);
    return false;
  }
  std::fprintf(stderr, "%d borrower runs Running after %.1f s\n", c.cluster_runs, Ms(Clock::now() - t0) / 1000);
  const auto t1 = Clock::now();
  Parallel(c.pending, 16, [&](int i) {
    const int team = c.borrowers[i % c.borrowers.size()];
    MustCreate(k8s::resources::kRuns.Path(TeamNs(team)), RunYaml("wait-" + std::to_string(i), c.run_gpus, kBorrowerPriority, kBorrowerRetry));
  });
  // Steady state: berth has written every waiting run's first status.
  if (!Eventually([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        return runs.Waiting() >= c.pending;
      }, std::chrono::seconds(900))) {
    std::fprintf(stderr, "only %d of %d pending runs have a status after 900 s\n", runs.Waiting(), c.pending);
    return false;
  }
  std::fprintf(stderr, "%d pending runs created and their status written after %.1f s\n", c.pending, Ms(Clock::now() - t1) / 1000);
  return true;
}

struct Sample {
  double placed_ms = 0, reclaimed_ms = 0;  // create answered -> owner Scheduled; -> last victim Reclaimed
  int victims = 0;                         // runs moved to Reclaimed meanwhile
  bool twice = false;                      // one of them twice (stopped, placed again, stopped again)
  bool record_matches = false;             // the owner's preemption record (reclaim: true) names exactly them
  bool victims_borrowers = false;          // every victim is a borrower's run
};

// One owner run, created and timed until placed; then finished, and the cluster refilled.
std::optional<Sample> OneSample(const Config& c, int k, const Kubelet& kubelet, const RunWatch& runs) {
  const int team = c.owners[k % c.owners.size()];
  const std::string ns = TeamNs(team), name = "own-" + std::to_string(k), key = ns + "/" + name;
  const size_t mark = runs.ReclaimedCount();
  MustCreate(k8s::resources::kRuns.Path(ns), RunYaml(name, c.owner_gpus, c.owner_priority, R"("no-capacity")"));
  const auto t0 = Clock::now();
  if (!Eventually([&] { return runs.PlacedAt(key).has_value(); }, std::chrono::seconds(120))) {
    std::fprintf(stderr, "%s not placed within 120 s (phase %s)\n", key.c_str(), runs.Phase(key).c_str());
    return std::nullopt;
  }
  Sample s;
  s.placed_ms = std::max(0.0, Ms(*runs.PlacedAt(key) - t0));
  const auto victims = runs.ReclaimedSince(mark);
  s.victims = static_cast<int>(victims.size());
  std::set<std::string> seen, seen_uids;
  s.victims_borrowers = true;
  for (const auto& v : victims) {
    s.twice = s.twice || !seen.insert(v.key).second;
    seen_uids.insert(v.uid);
    s.reclaimed_ms = std::max(s.reclaimed_ms, Ms(v.at - t0));
    const int vteam = std::atoi(v.key.c_str() + 5);  // "team-N/..."
    s.victims_borrowers = s.victims_borrowers && vteam % 2 == 1;
  }
  const auto [record, reclaim] = runs.Record(key);
  s.record_matches = reclaim && std::set<std::string>(record.begin(), record.end()) == seen_uids;
  if (!s.record_matches) {
    std::string names;
    for (const auto& r : record) names += " " + r;
    std::fprintf(stderr, "%s: record (reclaim %d):%s; %d moved to Reclaimed\n", key.c_str(), reclaim, names.c_str(), s.victims);
  }
  // The owner's Pod runs (the kubelet reports it) and finishes; the borrowers fill the node again.
  const std::string pod = name + "-0";
  if (!Eventually([&] { return kubelet.Phase(ns, pod) == "Running"; }, std::chrono::seconds(60))) return std::nullopt;
  (void)Client()->MergePatch(k8s::resources::kPods.Path(ns, pod, "status"), R"({"status":{"phase":"Succeeded"}})");
  if (!Eventually([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return runs.Phase(key) == "Succeeded" && kubelet.Running() >= c.cluster_runs;
      }, std::chrono::seconds(120))) {
    std::fprintf(stderr, "%s: phase %s, %d of %d Pods Running 120 s after it finished\n", key.c_str(), runs.Phase(key).c_str(),
                 kubelet.Running(), c.cluster_runs);
    return std::nullopt;
  }
  return s;
}

double Pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));  // nearest rank, 1-based
  return v[std::min(v.size(), std::max<size_t>(rank, 1)) - 1];
}

std::string LoadAvg() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

// The sum of every berth_reclaims_total sample on the controller's /metrics page.
double ReclaimsTotal(int port) {
  std::istringstream in(berth::testing::HttpGet("http://127.0.0.1:" + std::to_string(port) + "/metrics"));
  double sum = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("berth_reclaims_total{", 0) == 0) sum += std::atof(line.c_str() + line.rfind(' ') + 1);
  }
  return sum;
}

void PrintTable(const Config& c, const std::vector<Sample>& samples, const std::string& flags, const std::string& loads,
                double reclaims_metric) {
  std::vector<double> placed, reclaimed, victims;
  int matches = 0, borrowers = 0, twice = 0;
  std::string each;
  for (const auto& s : samples) {
    placed.push_back(s.placed_ms);
    reclaimed.push_back(s.reclaimed_ms);
    victims.push_back(s.victims);
    matches += s.record_matches;
    borrowers += s.victims_borrowers;
    twice += s.twice;
    each += (each.empty() ? "" : ", ") + std::to_string(s.victims);
  }
  std::printf("\n## Reclaim latency: %d teams, %d pending runs, %d nodes (Kubernetes %s, bench/e2e/reclaim.cc)\n\n", c.teams,
              c.pending, c.nodes, KubeVersion().c_str());
  std::printf("One Fleet of %d bare Node objects x 8 GPUs (`blocks: 8`, `preemption: {reclaim: Borrowed, minRuntime: 0s}`); "
              "%d Teams of one namespace each, nominal %d GPUs each. %zu owner teams idle; %zu borrower teams fill the cluster "
              "with %d running runs of %d GPU(s) (priority %d) and %d more of their runs wait (retry on no-capacity and "
              "interruption). %d samples, one after the other: an owner team (in turn) creates one run of %d GPU(s) at "
              "priority %d, within its unused nominal share; when it is placed its Pod is reported Succeeded and the next "
              "sample waits until the borrowers have filled the freed node again. berth-controller `%s`. Machine load "
              "(1/5/15 min) at the first and last sample: %s.\n\n",
              c.nodes, c.teams, c.share, c.owners.size(), c.borrowers.size(), c.cluster_runs, c.run_gpus, kBorrowerPriority,
              c.pending, c.samples, c.owner_gpus, c.owner_priority, flags.c_str(), loads.c_str());
  std::printf("| from the owner's create call answered | p50 | p90 | p99 | max |\n|---|---|---|---|---|\n");
  std::printf("| until its status shows Scheduled (placed; Run watch) | **%.0f ms** | %.0f ms | %.0f ms | %.0f ms |\n",
              Pct(placed, 0.5), Pct(placed, 0.9), Pct(placed, 0.99), Pct(placed, 1.0));
  std::printf("| until the last victim's status shows reason Reclaimed | %.0f ms | %.0f ms | %.0f ms | %.0f ms |\n",
              Pct(reclaimed, 0.5), Pct(reclaimed, 0.9), Pct(reclaimed, 0.99), Pct(reclaimed, 1.0));
  std::printf("\n| samples | runs stopped (reason Reclaimed) per sample: min / median / max | samples whose stops are exactly "
              "the victims of the owner's record (reclaim: true) | samples that stopped one run twice | every stopped run a "
              "borrower's | berth_reclaims_total at the end |\n|---|---|---|---|---|---|\n");
  std::printf("| %zu | %.0f / %.0f / %.0f | %d of %zu | %d | %d of %zu | %.0f |\n", samples.size(),
              *std::min_element(victims.begin(), victims.end()), Pct(victims, 0.5), Pct(victims, 1.0), matches, samples.size(),
              twice, borrowers, samples.size(), reclaims_metric);
  std::printf("\nRuns stopped in each sample, in order: %s.\n", each.c_str());
}

}  // namespace

int Reclaim() {
  const Config c = ReadConfig();
  if (kGpusPerNode % c.run_gpus != 0) {
    std::fprintf(stderr, "--run-gpus must divide 8, so that the borrowers' runs fill every node\n");
    return 2;
  }
  if (c.share < c.owner_gpus) {
    std::fprintf(stderr, "each team's nominal share (%d GPUs) is below the owner's run (%d GPUs): more nodes or fewer teams\n",
                 c.share, c.owner_gpus);
    return 2;
  }
  StartControlPlane();
  MakeCluster(c);
  const int port = berth::testing::FreePort();
  // --debug 1: the harness' --log-level=debug kept (to trace a reclaim in the controller's log).
  const std::string level = Flag("debug", 0) != 0 ? "--log-level=debug" : "--log-level=info";
  const std::vector<std::string> args = {"--metrics-bind-address=127.0.0.1:" + std::to_string(port), level};
  ControllerProcess controller(args, "bench-controller");
  controller.Start();
  std::vector<Sample> samples;
  std::string loads;
  {
    Kubelet kubelet;
    RunWatch runs;
    if (FillAndQueue(c, kubelet, runs)) {
      std::this_thread::sleep_for(std::chrono::seconds(5));  // let the waiting messages quiet down
      loads = LoadAvg();
      for (int k = 0; k < c.samples; ++k) {
        auto s = OneSample(c, k, kubelet, runs);
        if (!s) break;
        std::fprintf(stderr, "sample %d: placed after %.0f ms, %d victim(s)\n", k, s->placed_ms, s->victims);
        samples.push_back(*s);
      }
      loads += " / " + LoadAvg();
    }
  }
  const double reclaims = ReclaimsTotal(port);
  const std::string flags = "--metrics-bind-address=127.0.0.1:PORT " + level;
  const bool complete = static_cast<int>(samples.size()) == c.samples;
  if (!complete) std::fprintf(stderr, "controller log: %s\n", controller.log_path().c_str());
  controller.Stop();
  StopControlPlane();
  if (samples.empty()) return 1;
  PrintTable(c, samples, flags, loads, reclaims);
  return complete ? 0 : 1;
}

}  // namespace berth::bench::e2e
