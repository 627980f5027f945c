// The engine's scheduling pass as history grows (issue 15, "incremental passes"): the same
// cluster and queue, with 0, 10,000 and 100,000 finished runs beside them in the caches. A pass
// must cost what the live runs cost, not what every run ever submitted costs.
//
//   cmake --build <build> --target engine_pass_bench && <build>/bench/engine_pass_bench [PENDING] [SECONDS] [NODES] [FINISHED,...]
//
// In-process and without an API server: the engine (reconcilers::RunController, as the controller
// runs it, loop and writers included) talks to a scripted transport that answers the informers'
// lists with generated objects, keeps their watches open and empty, and acknowledges every write.
// The cluster: 100 nodes with 8 GPUs each in one fleet (8 blocks per node), all busy with 800
// running single-GPU runs (a Pod each), and PENDING (default 10,000) single-GPU runs waiting for
// room (retry on no-capacity). Each configuration runs for SECONDS (default 10) after the caches
// synced; the pass durations the engine reports to its observer (what berth_scheduling_cycle_duration_seconds
// shows) are summarised. The first pass after sync visits every run and is reported apart.
//
// NODES (default 100) sets the cluster's size (all busy: NODES x 8 running runs); FINISHED the
// configurations (default 0,10000,100000). The table also shows the process's RSS at the end
// less its RSS before the engine started (the scripted API's generated lists are not counted),
// the same for the heap in use (malloc's live bytes: RSS also holds what the allocator keeps
// free, which moves from run to run by tens of MB), and the loop thread's CPU time from one
// pass' end to the next (median, mean): the whole loop iteration, independent of which part of
// it a version of the engine times as the pass (issue 47: the pass' timed window grew to take in
// the snapshot update and the writes' dispatch, while the waiting runs' count left it).
//
// TEAMS (a fifth argument, default 0; even) puts the runs in TEAMS namespaces "team-<k>", each
// the namespace of a Team (issue 31) with a nominal share of the fleet: the even teams 1.5 times an
// equal share, the odd ones half of it, while the running runs are spread evenly over the teams.
// So every odd team borrows (half an equal share) what the even teams lend, and the pending runs,
// all of odd teams, wait behind each other in fair-share order (decayed usage 100 GPU-h x k).
// No pending run of a lending team: it would reclaim, and the scripted API never shows a write.
//
// Output: a Markdown table (bench/results/engine-pass.md is this output) with the ratio of each
// configuration's median pass to the one without finished runs.
//
// Start-time estimates (issue 33): BERTH_BENCH_ESTIMATE_INTERVAL_MS sets the engine's
// --estimate-interval (default: the engine's, 30s; 0: off). With estimates on, the pending runs
// carry the message berth writes with them (every estimate is unknown here: the running runs have
// no maxDuration), so a pass finds nothing to write, and the table's forecasts column shows how
// many forecasts the forecaster's thread made and the median of their own time. A second table
// times the forecast alone (scheduling::EstimateStarts, on this thread) in a harder case: the same
// cluster, each running run with a known end (10 minutes apart per instance, staggered), the
// PENDING runs each with a maxDuration of 1h: the forecast runs until its cycle budget.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <malloc.h>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/transport.h"
#include "reconcilers/engine/run_controller.h"
#include "scheduling/estimate.h"

namespace berth {
namespace {

int kNodes = 100;
int kTeams = 0;  // 0: every run in namespace "bench", no Team
// BERTH_BENCH_BUDGETS=1 (issue 47): each Team has a GPU-hour budget far from spent (1,000,000 h
// over 30 days: it holds nothing back) and the per-user usage store is on (berth's namespace
// "berth-system"), so the pass runs with usage and budgets on and decides as without them.
bool g_budgets = false;
constexpr int kGpusPerNode = 8;
constexpr const char* kCreated = "2026-11-24T10:00:00Z";

// The namespace of running run i (spread evenly over the teams) and of pending run i (odd teams).
std::string RunningNs(int i) { return kTeams == 0 ? "bench" : "team-" + std::to_string(i % kTeams); }
std::string PendingNs(int i) { return kTeams == 0 ? "bench" : "team-" + std::to_string(2 * (i % (kTeams / 2)) + 1); }

std::string Meta(const std::string& name, const std::string& uid, const std::string& extra = {},
                 const std::string& ns = "bench") {
  return R"("metadata":{"name":")" + name + R"(","namespace":")" + ns + R"(","uid":")" + uid +
         R"(","resourceVersion":"100","generation":1,"creationTimestamp":")" + kCreated +
         R"(","finalizers":["berth.dev/run-cleanup"])" + extra + "}";
}

const std::string kRunSpec =
    R"("spec":{"priority":50,"nodes":1,"resources":{"gpu":1},"fleets":["gpu"],)"
    R"("retry":{"onEvents":["no-capacity"],"duration":"off"},)"
    R"("template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}})";

const std::string kWaiting = "needs 1 block on one instance; largest free is 0 (fleet gpu)";
// The pending runs' message: kWaiting, and with estimates on what the estimate adds.
std::string g_message = kWaiting;
std::chrono::milliseconds g_estimate_interval{-1};  // < 0: the engine's default

// As a run looks once it has waited a pass: the status berth wrote for it (no capacity), so a
// pass finds nothing to write for it (the scripted API never applies a write). Created a day
// before the bench runs: aged to the top priority (100).
std::string PendingRun(int i) {
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run",)" +
         Meta("pending-" + std::to_string(i), "up" + std::to_string(i), {}, PendingNs(i)) +
         "," + kRunSpec + R"(,"status":{"phase":"Pending","reason":"NoCapacity","message":")" + g_message + R"(",)"
         R"("effectivePriority":100,"observedGeneration":1,"submittedAt":")" + kCreated +
         R"(","conditions":[{"type":"Scheduled","status":"False","reason":"NoCapacity","message":")" + g_message + R"(",)"
         R"("lastTransitionTime":")" + kCreated + R"(","observedGeneration":1}]}})";
}

std::string RunningRun(int i) {
  const std::string name = "running-" + std::to_string(i);
  const std::string node = "node-" + std::to_string(i / kGpusPerNode);
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run",)" + Meta(name, "ur" + std::to_string(i), {}, RunningNs(i)) +
         "," + kRunSpec +
         R"(,"status":{"phase":"Running","reason":"Running","fleet":"gpu","placement":[{"rank":0,"node":")" + node +
         R"(","blocks":1,"pod":")" + name + R"(-0"}],"submittedAt":")" + kCreated + R"(","scheduledAt":")" + kCreated +
         R"(","startedAt":")" + kCreated + R"(","observedGeneration":1}})";
}

std::string FinishedRun(int i) {
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run",)" + Meta("done-" + std::to_string(i), "ud" + std::to_string(i)) +
         "," + kRunSpec +
         R"(,"status":{"phase":"Succeeded","reason":"Succeeded","message":"the pod succeeded","submittedAt":")" +
         kCreated + R"(","scheduledAt":")" + kCreated + R"(","startedAt":")" + kCreated + R"(","finishedAt":")" +
         kCreated + R"(","observedGeneration":1}})";
}

std::string RunningPod(int i) {
  const std::string run = "running-" + std::to_string(i);
  const std::string node = "node-" + std::to_string(i / kGpusPerNode);
  return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + run + R"(-0","namespace":")" + RunningNs(i) +
         R"(","uid":"pod)" +
         std::to_string(i) + R"(","resourceVersion":"100","labels":{"berth.dev/run":")" + run +
         R"(","berth.dev/attempt":"0"},"annotations":{"berth.dev/blocks":"1"},"ownerReferences":[{"apiVersion":"berth.dev/v1alpha1","kind":"Run","name":")" +
         run + R"(","uid":"ur)" + std::to_string(i) +
         R"(","controller":true}]},"spec":{"nodeName":")" + node +
         R"(","containers":[{"name":"main","image":"busybox","resources":{"requests":{"nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"1"}}}]},)"
         R"("status":{"phase":"Running","containerStatuses":[{"name":"main","ready":true,"state":{"running":{"startedAt":")" +
         kCreated + R"("}}}]}})";
}

std::string Node(int i) {
  return R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"node-)" + std::to_string(i) + R"(","uid":"n)" +
         std::to_string(i) +
         R"(","resourceVersion":"100","labels":{"pool":"gpu"}},"spec":{},"status":{"allocatable":{"cpu":"64","memory":"512Gi","pods":"110","nvidia.com/gpu":"8"},)"
         R"("conditions":[{"type":"Ready","status":"True"}]}})";
}

// Team k of kTeams: its namespace, a nominal share of the fleet's GPUs (even k: 1.5 equal shares,
// odd k: 0.5) and a decayed usage of 100 x k GPU-hours.
std::string TeamObject(int k) {
  const int equal = kNodes * kGpusPerNode / kTeams;
  const int nominal = k % 2 == 0 ? equal + equal / 2 : equal - equal / 2;
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Team","metadata":{"name":"team-)" + std::to_string(k) +
         R"(","uid":"t)" + std::to_string(k) + R"(","resourceVersion":"100","generation":1},"spec":{"namespaces":["team-)" +
         std::to_string(k) + R"("],"weight":1,"shares":[{"fleet":"gpu","nominal":{"gpu":)" + std::to_string(nominal) +
         R"(}}])" + (g_budgets ? R"(,"budgets":[{"resource":"gpu","hours":1000000,"period":"30d"}])" : "") +
         R"(},"status":{"usage":{"gpuHours":)" + std::to_string(100 * k) + R"(,"cpuHours":0,"updatedAt":")" + kCreated +
         R"("},"observedGeneration":1}})";
}

const std::string kFleet =
    R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"gpu","uid":"f1","resourceVersion":"100","generation":1},)"
    R"("spec":{"nodeSelector":{"pool":"gpu"},"blocks":"auto"}})";

std::string List(const std::vector<std::string>& items) {
  std::string out = R"({"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[)";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ",";
    out += items[i];
  }
  return out + "]}";
}

// Answers the informers' lists from generated objects, keeps watches open (no events) and
// acknowledges every write with a resourceVersion the caches already have.
class ScriptedApi final : public k8s::Transport {
 public:
  ScriptedApi(int pending, int finished) {
    std::vector<std::string> runs, pods, nodes;
    for (int i = 0; i < pending; ++i) runs.push_back(PendingRun(i));
    for (int i = 0; i < kNodes * kGpusPerNode; ++i) {
      runs.push_back(RunningRun(i));
      pods.push_back(RunningPod(i));
    }
    for (int i = 0; i < finished; ++i) runs.push_back(FinishedRun(i));
    for (int i = 0; i < kNodes; ++i) nodes.push_back(Node(i));
    std::vector<std::string> teams;
    for (int k = 0; k < kTeams; ++k) teams.push_back(TeamObject(k));
    teams_ = List(teams);
    runs_ = List(runs);
    pods_ = List(pods);
    nodes_ = List(nodes);
    fleets_ = List({kFleet});
  }

  k8s::Result<k8s::HttpResponse> Send(const k8s::HttpRequest& req) override {
    k8s::HttpResponse r;
    r.status = 200;
    const std::string path = req.path.substr(0, req.path.find('?'));
    if (req.method == "GET") {
      if (path == "/apis/berth.dev/v1alpha1/runs") {
        r.body = runs_;
      } else if (path == "/apis/berth.dev/v1alpha1/fleets") {
        r.body = fleets_;
      } else if (path == "/apis/berth.dev/v1alpha1/teams") {
        r.body = teams_;
      } else if (path == "/api/v1/nodes") {
        r.body = nodes_;
      } else if (path == "/api/v1/pods") {
        // berth's Pods (labelSelector=berth.dev/run); everyone else's ("!berth.dev/run") are none.
        const bool others = req.path.find("%21") != std::string::npos || req.path.find('!') != std::string::npos;
        r.body = others ? List({}) : pods_;
      } else if (path == "/api/v1/namespaces" || path == "/api/v1/resourcequotas") {
        r.body = List({});  // none: no priority caps, no quotas (the engine's informers wait for these lists)
      } else {
        r.status = 404;
        r.body = R"({"kind":"Status","status":"Failure","reason":"NotFound","code":404})";
      }
      return r;
    }
    if (writes_++ == 0 && std::getenv("BERTH_BENCH_SHOW_WRITE")) std::fprintf(stderr, "%s %s %s\n", req.method.c_str(), req.path.c_str(), req.body.c_str());
    r.status = req.method == "POST" ? 201 : 200;
    r.body = R"({"metadata":{"resourceVersion":"1"}})";
    return r;
  }

  k8s::Result<k8s::HttpResponse> Stream(const k8s::HttpRequest&, const std::function<bool(std::string&)>&,
                                        k8s::Cancellation* cancel, int idle_timeout_seconds) override {
    // An open watch with nothing to say, until cancelled or its timeout.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(std::max(1, idle_timeout_seconds));
    while (std::chrono::steady_clock::now() < until && (cancel == nullptr || !cancel->cancelled())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    k8s::HttpResponse r;
    r.status = 200;
    return r;
  }

  uint64_t writes() const { return writes_; }

 private:
  std::string runs_, pods_, nodes_, fleets_, teams_;
  std::atomic<uint64_t> writes_{0};
};

class PassTimes final : public reconcilers::EngineObserver {
 public:
  void OnPass(const PassSummary& s) override {
    std::lock_guard<std::mutex> lock(mu_);
    times_.push_back(s.duration);
    decided_.push_back(s.decided);
    cpu_ns_.push_back(ThreadCpuNs());  // OnPass runs on the engine's loop thread, at each pass' end
  }
  void OnAdmitted(std::chrono::milliseconds) override {}
  void OnFinished(const std::string&, const std::string&) override {}
  void OnWriteFailed(const std::string&) override {}
  void OnForecast(size_t, std::chrono::microseconds took) override {
    std::lock_guard<std::mutex> lock(mu_);
    forecasts_.push_back(took);
  }
  std::vector<std::chrono::microseconds> Forecasts() {
    std::lock_guard<std::mutex> lock(mu_);
    return forecasts_;
  }
  std::vector<std::chrono::microseconds> Take(std::vector<bool>& decided, std::vector<int64_t>& cpu_ns) {
    std::lock_guard<std::mutex> lock(mu_);
    decided = std::move(decided_);
    cpu_ns = std::move(cpu_ns_);
    return std::move(times_);
  }

 private:
  std::mutex mu_;
  std::vector<std::chrono::microseconds> times_;
  std::vector<bool> decided_;  // the core ran in that pass (otherwise its last result stood)
  std::vector<std::chrono::microseconds> forecasts_;  // each forecast's own time (its thread)
  std::vector<int64_t> cpu_ns_;  // the loop thread's CPU time at each pass' end

  static int64_t ThreadCpuNs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
  }
};

struct Row {
  int finished = 0;
  double first_ms = 0, median_ms = 0, p90_ms = 0, mean_ms = 0;
  size_t passes = 0;
  size_t decided = 0;            // passes (after the first) in which the scheduling core ran
  double decided_median_ms = 0;  // their median
  double sync_s = 0;
  double rss_mb = 0;  // the engine's share: RSS at the end less RSS before it started
  double heap_mb = 0;  // the same for the heap in use (malloc's live bytes, not what it keeps free)
  double loop_cpu_median_ms = 0, loop_cpu_mean_ms = 0;  // the loop thread's CPU from one pass' end to the next
  size_t forecasts = 0;           // start-time forecasts made (on the forecaster's thread)
  double forecast_median_ms = 0;  // their own time
};

// The heap in use (glibc's mallinfo2: bytes allocated and not freed, all arenas, mmapped chunks
// included): what the engine holds, without what the allocator keeps free for later.
double HeapInUseMiB() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<double>(mi.uordblks + mi.hblkhd) / (1024.0 * 1024.0);
}

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

Row Measure(int pending, int finished, int seconds) {
  auto api = std::make_shared<ScriptedApi>(pending, finished);
  k8s::ClientConfig cfg;
  cfg.server = "https://bench.invalid";
  auto client = std::make_shared<k8s::Client>(cfg, api);
  k8s::SystemClock clock;
  PassTimes times;
  reconcilers::EngineOptions options;
  if (g_estimate_interval >= std::chrono::milliseconds::zero()) options.estimate_interval = g_estimate_interval;
  const long rss_before = RssKiB();
  const double heap_before = HeapInUseMiB();
  reconcilers::RunController engine(client, clock, options);
  if (g_budgets) engine.SetUsersNamespace("berth-system");
  engine.SetObserver(&times);
  auto start = std::chrono::steady_clock::now();
  engine.Start();
  while (!engine.HasSynced()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  Row row;
  row.finished = finished;
  row.sync_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  row.rss_mb = (RssKiB() - rss_before) / 1024.0;
  row.heap_mb = HeapInUseMiB() - heap_before;
  engine.Stop();
  std::vector<std::chrono::microseconds> forecasts = times.Forecasts();
  row.forecasts = forecasts.size();
  if (!forecasts.empty()) {
    std::sort(forecasts.begin(), forecasts.end());
    row.forecast_median_ms = forecasts[forecasts.size() / 2].count() / 1000.0;
  }
  std::vector<bool> decided;
  std::vector<int64_t> cpu_ns;
  std::vector<std::chrono::microseconds> t = times.Take(decided, cpu_ns);
  if (t.empty()) return row;
  // The whole loop iteration, whatever part of it a version times as "the pass" (the time from
  // one pass' end to the next, on the loop thread's CPU clock: the pass and any work around it).
  std::vector<double> cpu_ms;
  for (size_t i = 1; i < cpu_ns.size(); ++i) cpu_ms.push_back(static_cast<double>(cpu_ns[i] - cpu_ns[i - 1]) / 1e6);
  if (!cpu_ms.empty()) {
    double sum = 0;
    for (double c : cpu_ms) sum += c;
    row.loop_cpu_mean_ms = sum / static_cast<double>(cpu_ms.size());
    std::sort(cpu_ms.begin(), cpu_ms.end());
    row.loop_cpu_median_ms = cpu_ms[cpu_ms.size() / 2];
  }
  row.first_ms = t.front().count() / 1000.0;
  std::vector<std::chrono::microseconds> rest(t.begin() + 1, t.end());
  row.passes = rest.size();
  std::vector<std::chrono::microseconds> deciding;
  for (size_t i = 1; i < t.size(); ++i) {
    if (decided[i]) deciding.push_back(t[i]);
  }
  row.decided = deciding.size();
  if (!deciding.empty()) {
    std::sort(deciding.begin(), deciding.end());
    row.decided_median_ms = deciding[deciding.size() / 2].count() / 1000.0;
  }
  if (!rest.empty()) {
    std::sort(rest.begin(), rest.end());
    row.median_ms = rest[rest.size() / 2].count() / 1000.0;
    row.p90_ms = rest[rest.size() * 9 / 10].count() / 1000.0;
    double sum = 0;
    for (auto d : rest) sum += static_cast<double>(d.count());
    row.mean_ms = sum / static_cast<double>(rest.size()) / 1000.0;
  }
  return row;
}

// The forecast alone (scheduling::EstimateStarts) for `pending` waiting runs of 1 GPU and 1h
// behind kNodes x 8 running runs whose ends are staggered (instance i's GPUs end 10m apart,
// instances 1m apart), every run with a spread of five learned runtimes (queued: 36-60 minutes;
// running: ending 0-8 minutes before their maxDuration), so the engine's sampled forecasts
// (EstimateOptions::samples) all run: its median own time over `times` calls, in ms, and how many
// runs it gave an estimate.
double ForecastAlone(int pending, int times, size_t& known) {
  using std::chrono::minutes;
  const scheduling::TimePoint now = std::chrono::time_point_cast<std::chrono::milliseconds>(std::chrono::system_clock::now());
  scheduling::EstimateInput in;
  scheduling::FleetSpec fleet;
  fleet.name = "gpu";
  fleet.blocks = scheduling::BlocksSetting::Count(kGpusPerNode);
  in.snapshot.fleets.push_back(fleet);
  for (int n = 0; n < kNodes; ++n) {
    scheduling::InstanceSpec inst;
    inst.name = "node-" + std::to_string(n);
    inst.fleet = "gpu";
    inst.allocatable = scheduling::Resources{64000, int64_t{512} << 30, kGpusPerNode};
    in.snapshot.instances.push_back(inst);
    for (int g = 0; g < kGpusPerNode; ++g) {
      scheduling::RunningRun r;
      r.id = "bench/running-" + std::to_string(n * kGpusPerNode + g);
      r.placement = {{inst.name, 1}};
      r.expected_end = now + minutes(10 * (g + 1) + n % 10);
      // As learned from comparable runs: ends 0-8 minutes before the maxDuration end.
      for (int d : {8, 6, 4, 2, 0}) in.running_end_spread[r.id].push_back(*r.expected_end - minutes(d));
      in.running_end[r.id] = *r.expected_end - minutes(4);
      in.snapshot.running.push_back(r);
    }
  }
  for (int i = 0; i < pending; ++i) {
    scheduling::PendingRun p;
    p.id = "bench/pending-" + std::to_string(i);
    p.submitted_at = now - minutes(pending - i);
    p.resources = scheduling::Resources{1000, int64_t{8} << 30, 1};
    p.max_duration = std::chrono::hours(1);
    in.runtime[p.id] = minutes(48);
    in.runtime_spread[p.id] = {minutes(36), minutes(42), minutes(48), minutes(54), minutes(60)};
    in.queued.push_back(p);
  }
  in.now = now;
  std::vector<double> took;
  for (int k = 0; k < times; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<scheduling::StartEstimate> e = scheduling::EstimateStarts(in);
    took.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    known = static_cast<size_t>(std::count_if(e.begin(), e.end(), [](const auto& x) { return x.start.has_value(); }));
  }
  std::sort(took.begin(), took.end());
  return took[took.size() / 2];
}

}  // namespace
}  // namespace berth

int main(int argc, char** argv) {
  const int pending = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 10;
  if (argc > 3) berth::kNodes = std::atoi(argv[3]);
  std::vector<int> finished_list = {0, 10000, 100000};
  if (argc > 4) {
    finished_list.clear();
    std::stringstream in(argv[4]);
    std::string item;
    while (std::getline(in, item, ',')) finished_list.push_back(std::atoi(item.c_str()));
  }
  if (argc > 5) berth::kTeams = std::atoi(argv[5]);
  if (pending < 0 || seconds < 1 || berth::kNodes < 1 || finished_list.empty() || berth::kTeams < 0 || berth::kTeams % 2 != 0) {
    std::fprintf(stderr, "usage: engine_pass_bench [PENDING >= 0] [SECONDS >= 1] [NODES >= 1] [FINISHED,...] [TEAMS, even]\n");
    return 2;
  }
  spdlog::set_level(getenv("BERTH_BENCH_LOG") ? spdlog::level::info : spdlog::level::warn);
  berth::g_budgets = getenv("BERTH_BENCH_BUDGETS") != nullptr && std::string(getenv("BERTH_BENCH_BUDGETS")) == "1";
  if (const char* e = getenv("BERTH_BENCH_ESTIMATE_INTERVAL_MS")) berth::g_estimate_interval = std::chrono::milliseconds(std::atol(e));
  if (berth::g_estimate_interval != std::chrono::milliseconds::zero()) {
    berth::g_message += "; estimated start unknown: " +
                        std::string(berth::scheduling::ExplainUnknown(berth::scheduling::EstimateUnknown::kNoKnownEnd));
  }
  std::vector<berth::Row> rows;
  for (int finished : finished_list) rows.push_back(berth::Measure(pending, finished, seconds));
  std::printf("## Scheduling pass with finished runs in the caches: %d pending, %d running, %d nodes", pending,
              berth::kNodes * berth::kGpusPerNode, berth::kNodes);
  if (berth::kTeams > 0) {
    std::printf(", %d teams (%d of them borrowing half an equal share each; the pending runs theirs)", berth::kTeams,
                berth::kTeams / 2);
  }
  std::printf("\n\n");
  std::printf("| finished runs | caches synced | first pass (visits all) | passes | median pass | p90 pass | mean pass | median vs first row | passes in which the core decided: count, median | engine RSS | engine heap in use | loop CPU per pass: median, mean | forecasts: count, median own time |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& r : rows) {
    const double ratio = rows[0].median_ms > 0 ? r.median_ms / rows[0].median_ms : 0;
    std::printf("| %d | %.1f s | %.1f ms | %zu | %.2f ms | %.2f ms | %.2f ms | %.2f | %zu, %.2f ms | %.0f MB | %.0f MB | %.2f, %.2f ms | %zu, %.2f ms |\n",
                r.finished, r.sync_s, r.first_ms, r.passes, r.median_ms, r.p90_ms, r.mean_ms, ratio, r.decided, r.decided_median_ms, r.rss_mb,
                r.heap_mb, r.loop_cpu_median_ms, r.loop_cpu_mean_ms, r.forecasts, r.forecast_median_ms);
  }
  size_t known = 0;
  const double alone = berth::ForecastAlone(pending, 5, known);
  std::printf("\n## The forecast alone (its own thread): %d pending (1h each) behind %d running runs with staggered ends, "
              "every run with five learned runtimes (%d sampled forecasts a call)\n\n",
              pending, berth::kNodes * berth::kGpusPerNode, berth::scheduling::EstimateOptions{}.samples);
  std::printf("| pending | median of 5 calls | runs with an estimate |\n|---|---|---|\n| %d | %.1f ms | %zu |\n", pending, alone,
              known);
  return 0;
}
