// berth-e2e-bench scale --kueue 1: the scale scenario through Kueue (issue 32, 2d), as close to
// berth's as Kueue allows. Pool `big`: NODES bare nodes of 8 GPUs, free; pool `small`: one such
// node, taken whole by one running Job. PENDING suspended 1-GPU Jobs wait in the LocalQueue of
// `small`'s ClusterQueue. berth's scenario creates its pending runs with berth stopped, then
// starts berth; Kueue's webhooks must answer while Jobs are created (they mutate and validate
// each), so Kueue runs while they are created, makes their Workloads, and is then restarted:
// start -> ready -> first admission is timed from that restart, with every Workload in place (as
// a berth restart finds every Run). One 1-GPU Job for `big` is created as soon as Kueue's
// webhooks answer; it is admitted when Kueue unsuspends it. Kueue's RSS is sampled every second
// from its restart; its admission attempts (kueue_admission_attempt_duration_seconds) are read
// from its /metrics at the start and the end of a window of SECONDS after that admission. The
// restart's wait for that admission is --kueue-restart-window seconds (900); a Kueue that admits
// nothing within it still gets its table (RSS before and after the restart, "none within").

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include "e2e_common.h"
#include "k8s/json.h"
#include "kueue.h"

namespace berth::bench::e2e {
namespace {

namespace json = k8s::json;
using berth::testing::ControlPlane;
using berth::testing::Eventually;
using Clock = std::chrono::steady_clock;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

bool Unsuspended(const std::string& jobs, const std::string& job) {
  auto j = Client()->Get(jobs + "/" + job);
  const json::Value* suspend = j.ok() ? json::Find(*j, {"spec", "suspend"}) : nullptr;
  return suspend != nullptr && suspend->IsBool() && !suspend->GetBool();
}

// How many Workloads the namespace holds (paged list, counted).
long CountWorkloads(const std::string& ns) {
  k8s::ListOptions o;
  o.limit = 5000;
  long n = 0;
  std::string rv;
  k8s::Status st = Client()->ListEach("/apis/kueue.x-k8s.io/v1beta2/namespaces/" + ns + "/workloads", o,
                                      [&](const json::Value&) { ++n; }, &rv);
  return st.ok() ? n : -1;
}

std::string WholeNodePod(int gpus) {
  return R"({"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","resources":)"
         R"({"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":")" + std::to_string(gpus) +
         R"("},"limits":{"nvidia.com/gpu":")" + std::to_string(gpus) + R"("}}}]})";
}

}  // namespace

int KueueRestartWindow() { return Flag("kueue-restart-window", 900); }

int KueueScale(int nodes, int pending, int seconds, ScaleFigures* figures) {
  StartControlPlane();
  const std::string ns = "scale-bench", jobs = "/apis/batch/v1/namespaces/" + ns + "/jobs";
  Kubectl({"create", "namespace", ns});
  const auto t_nodes = Clock::now();
  MakeNodes("big", nodes);
  MakeNodes("small", 1);
  const double nodes_s = Secs(Clock::now() - t_nodes);
  std::vector<pid_t> procs = {StartKubeScheduler(), StartJobController()};
  // Two ClusterQueues, one per pool: `cq` (big, with the LocalQueue `lq`) and `cq-small`.
  const long long n = nodes;
  const std::string queues = KueueQueues(KueueQueueSpec{.pool = "big", .ns = ns, .cpu = 64 * n, .memory_gi = 512 * n, .gpus = 8 * n}) + "---\n" +
                             KueueQueues(KueueQueueSpec{.pool = "small", .ns = ns, .cpu = 64, .memory_gi = 512, .gpus = 8, .suffix = "-small", .priority_classes = false});
  KueueRun k = StartKueue("big", ns, false, queues);
  auto stop = [&](int code) {
    StopProcess(k.pid);
    for (pid_t p : procs) StopProcess(p);
    StopControlPlane();
    return code;
  };
  const std::string small_queue = std::string(kKueueQueue) + "-small";
  MustCreate(jobs, KueueJob("occupant", WholeNodePod(8), 1, "", "", small_queue));
  if (!Eventually([&] { return Unsuspended(jobs, "occupant"); }, std::chrono::seconds(60))) {
    std::fprintf(stderr, "the occupant Job was never admitted; see %s/kueue.log\n", ControlPlane::Get().dir().c_str());
    return stop(1);
  }
  const auto t_create = Clock::now();
  Parallel(pending, 16, [&](int i) { MustCreate(jobs, KueueJob("s" + std::to_string(i), WholeNodePod(1), 1, "", "", small_queue)); });
  const double create_s = Secs(Clock::now() - t_create);
  std::fprintf(stderr, "created %d pending Jobs in %.1f s\n", pending, create_s);
  long workloads = 0;
  if (!Eventually([&] {
        workloads = CountWorkloads(ns);
        if (workloads < pending + 1) std::this_thread::sleep_for(std::chrono::seconds(5));
        return workloads >= pending + 1;
      }, std::chrono::seconds(1800))) {
    std::fprintf(stderr, "Kueue made only %ld of %d Workloads in 30 minutes\n", workloads, pending + 1);
    return stop(1);
  }
  const double workloads_s = Secs(Clock::now() - t_create);
  // Kueue's RSS in its steady state with every Workload made and tried, before the restart (its
  // RSS after the restart is sampled separately: a restart may find no admission in its window).
  std::this_thread::sleep_for(std::chrono::seconds(30));
  const double rss_before_restart = RssKiB(k.pid) / 1024.0;

  // The restart, timed.
  const auto t0 = Clock::now();
  RestartKueue(k);
  std::atomic<bool> sampling{true};
  std::atomic<long> max_rss{0};
  std::thread sampler([&] {
    while (sampling) {
      max_rss = std::max(max_rss.load(), RssKiB(k.pid));
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  auto finish = [&](int code) {
    sampling = false;
    sampler.join();
    return stop(code);
  };
  double ready = -1, created = -1, admitted = -1;
  const int window = KueueRestartWindow();
  const auto deadline = t0 + std::chrono::seconds(window);
  bool exited = false;
  while (admitted < 0 && Clock::now() < deadline) {
    if (waitpid(k.pid, nullptr, WNOHANG) == k.pid) {
      exited = true;  // e.g. its caches did not sync within controller.cacheSyncTimeout
      break;
    }
    if (ready < 0 && KueueReady(k)) ready = Secs(Clock::now() - t0);
    if (created < 0 && Client()->Create(jobs, KueueJob("first", WholeNodePod(1))).ok()) created = Secs(Clock::now() - t0);
    if (created >= 0 && Unsuspended(jobs, "first")) admitted = Secs(Clock::now() - t0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (exited) {
    std::fprintf(stderr, "Kueue exited %.0f s after its restart, before the first admission; see %s.restarted\n",
                 Secs(Clock::now() - t0), k.log.c_str());
    sampling = false;
    sampler.join();
    k.pid = -1;  // reaped
    return stop(1);
  }
  if (admitted < 0) {
    std::fprintf(stderr, "after %d s: ready %s, first Job %s; see %s.restarted\n", window, ready < 0 ? "no" : "yes",
                 created < 0 ? "refused" : "not admitted", k.log.c_str());
  }
  // Without an admission the window starts at the end of the restart's wait: the figures are then
  // those of a Kueue that has not yet admitted anything since its restart.
  const double rss_at_admission = admitted >= 0 ? RssKiB(k.pid) / 1024.0 : -1;
  const std::string kAttempt = "kueue_admission_attempt_duration_seconds";
  const std::string page0 = KueueMetrics(k);
  std::this_thread::sleep_for(std::chrono::seconds(admitted >= 0 ? seconds : 0));
  const std::string page1 = KueueMetrics(k);
  const double attempts = SumSamples(page1, kAttempt + "_count") - SumSamples(page0, kAttempt + "_count");
  const double attempt_s = SumSamples(page1, kAttempt + "_sum") - SumSamples(page0, kAttempt + "_sum");
  const double attempts_all = SumSamples(page1, kAttempt + "_count"), attempt_all_s = SumSamples(page1, kAttempt + "_sum");
  const double pending_end = SumSamples(page1, "kueue_pending_workloads");
  const double rss_max = max_rss.load() / 1024.0, rss_end = RssKiB(k.pid) / 1024.0;
  const int code = finish(0);

  *figures = {std::max(rss_max, rss_before_restart), admitted, attempts > 0 ? 1000 * attempt_s / attempts : -1};
  std::printf("\n## Scale through Kueue %s: %d pending Jobs and %d nodes (Kubernetes %s)\n\n", KueueVersion().c_str(),
              pending, nodes, KubeVersion().c_str());
  std::printf("Pool `big`: %d bare Node objects x 8 GPUs, free (ClusterQueue `cq`). Pool `small`: one such node, taken "
              "whole by one Job; the %d pending 1-GPU Jobs wait in its ClusterQueue `cq-small`. Kueue (%s) makes their "
              "Workloads, is then restarted, and one 1-GPU Job for `big` is created as soon as its webhooks answer. The "
              "window: %d s after that Job's admission.\n\n",
              nodes, pending, k.flags.c_str(), seconds);
  std::printf("| measure | measured |\n|---|---|\n");
  std::printf("| nodes / pending Jobs | %d / %d |\n", nodes, pending);
  std::printf("| making the nodes (bench driver, 16 threads) | %.1f s |\n", nodes_s);
  std::printf("| creating the pending Jobs (bench driver, 16 threads, through Kueue's webhooks) | %.1f s (%.0f Jobs/s) |\n",
              create_s, pending / create_s);
  std::printf("| created -> every Workload made by Kueue | %.1f s |\n", workloads_s);
  std::printf("| restart -> ready (/readyz 200) | %.2f s |\n", ready);
  std::printf("| restart -> the Job for `big` accepted by its webhooks | %.2f s |\n", created);
  if (admitted >= 0) {
    std::printf("| restart -> first admission (the Job for `big` unsuspended, polled every 100 ms) | **%.2f s** |\n", admitted);
  } else {
    std::printf("| restart -> first admission (the Job for `big` unsuspended, polled every 100 ms) | **none within %d s** |\n", window);
  }
  std::printf("| pending Workloads at the end (kueue_pending_workloads, all queues) | %.0f |\n", pending_end);
  std::printf("| admission attempts in the window: count, mean | %.0f, %s |\n", attempts,
              attempts > 0 ? (std::to_string(static_cast<long>(std::lround(1000 * attempt_s / attempts))) + " ms").c_str() : "-");
  std::printf("| admission attempts since the restart: count, mean | %.0f, %s |\n", attempts_all,
              attempts_all > 0 ? (std::to_string(static_cast<long>(std::lround(1000 * attempt_all_s / attempts_all))) + " ms").c_str()
                               : "-");
  std::printf("| Kueue RSS before the restart (every Workload made and tried, 30 s after) | %.0f MB |\n", rss_before_restart);
  std::printf("| Kueue RSS: max (sampled every 1 s from the restart), at first admission, at end | **%.0f MB**, %s, %.0f MB |\n",
              rss_max, rss_at_admission >= 0 ? (std::to_string(std::lround(rss_at_admission)) + " MB").c_str() : "-", rss_end);
  return code;
}

}  // namespace berth::bench::e2e
