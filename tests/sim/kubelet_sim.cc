// berth-kubelet-sim: plays the kubelet for simulated Nodes (no kubelet can run here). For every
// Pod bound to a node it reports Running, then Succeeded after the seconds in the Pod annotation
// berth.dev/sim-seconds (default 30; fractions allowed), or Failed when berth.dev/sim-exit-code is not 0.
// A bound Pod being deleted is removed at once (grace period 0), as a kubelet does once its
// containers have stopped. For the local demo and benchmarks only; tests patch pod status themselves.

#include <csignal>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "k8s/client.h"
#include "k8s/config.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "k8s/timefmt.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }
}  // namespace

int main(int argc, char** argv) {
  using namespace berth;
  std::string kubeconfig;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--kubeconfig" && i + 1 < argc) {
      kubeconfig = argv[++i];
    } else if (a.rfind("--kubeconfig=", 0) == 0) {
      kubeconfig = a.substr(13);
    } else {
      std::cerr << "usage: berth-kubelet-sim [--kubeconfig PATH]\n";
      return 2;
    }
  }
  auto cfg = k8s::LoadDefaultConfig(kubeconfig, "", false);
  if (!cfg.ok()) {
    std::cerr << "berth-kubelet-sim: " << cfg.status().message() << "\n";
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  auto client = std::make_shared<k8s::Client>(cfg.value());
  k8s::Informer<k8s::Pod> pods(client, k8s::resources::kPods.Path(), k8s::DecodePod,
                               [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "pods");
  pods.Start();
  // Running since (steady clock), per pod uid; what was last reported, so a report still on its
  // way into the cache is not sent twice.
  std::map<std::string, std::chrono::steady_clock::time_point> started;
  std::map<std::string, std::string> reported;  // uid -> phase
  struct Job {
    std::string uid, path, body, phase;
  };
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = std::chrono::steady_clock::now();
    std::vector<Job> jobs;
    std::set<std::string> live;
    std::vector<std::shared_ptr<const k8s::Pod>> deleting;
    for (const auto& pod : pods.List()) {
      live.insert(pod->meta.uid);
      if (!pod->node_name.empty() && pod->meta.deleting) deleting.push_back(pod);
      if (pod->node_name.empty() || pod->meta.deleting) continue;
      const std::string path = k8s::resources::kPods.Path(pod->meta.ns, pod->meta.name, "status");
      auto rep = reported.find(pod->meta.uid);
      if (pod->phase.empty() || pod->phase == "Pending") {
        if (rep != reported.end() && rep->second == "Running") continue;  // on its way
        std::string ts = k8s::FormatRfc3339(k8s::SystemClock().Now());
        jobs.push_back({pod->meta.uid, path,
                        R"({"status":{"phase":"Running","startTime":")" + ts +
                            R"(","conditions":[{"type":"Ready","status":"True"}]}})",
                        "Running"});
        continue;
      }
      if (pod->phase != "Running") continue;
      if (rep != reported.end() && rep->second != "Running") continue;  // finished, on its way
      auto it = started.find(pod->meta.uid);
      if (it == started.end()) {
        started[pod->meta.uid] = now;
        continue;
      }
      double secs = 30;
      try {
        std::string s = pod->meta.Annotation("berth.dev/sim-seconds");
        if (!s.empty()) secs = std::stod(s);
      } catch (...) {
      }
      if (now - it->second < std::chrono::milliseconds(static_cast<int64_t>(secs * 1000))) continue;
      std::string code = pod->meta.Annotation("berth.dev/sim-exit-code");
      bool ok = code.empty() || code == "0";
      jobs.push_back({pod->meta.uid, path,
                      ok ? R"({"status":{"phase":"Succeeded"}})"
                         : R"({"status":{"phase":"Failed","message":"exit code )" + code + "\"}}",
                      ok ? "Succeeded" : "Failed"});
    }
    // Many kubelets report at once: send the reports in parallel.
    constexpr size_t kThreads = 8;
    std::vector<char> done(jobs.size(), 0);  // not vector<bool>: written from several threads
    std::vector<std::thread> threads;
    for (size_t t = 0; t < kThreads && t < jobs.size(); ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = t; i < jobs.size(); i += kThreads) done[i] = client->MergePatch(jobs[i].path, jobs[i].body).ok();
      });
    }
    for (auto& th : threads) th.join();
    for (const auto& pod : deleting) {
      k8s::DeleteOptions o;
      o.grace_period_seconds = 0;
      o.precondition_uid = pod->meta.uid;
      (void)client->Delete(k8s::resources::kPods.Path(pod->meta.ns, pod->meta.name), o);
    }
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (!done[i]) continue;
      reported[jobs[i].uid] = jobs[i].phase;
      if (jobs[i].phase == "Running") {
        started[jobs[i].uid] = now;
      } else {
        started.erase(jobs[i].uid);
      }
    }
    for (auto it = reported.begin(); it != reported.end();) it = live.count(it->first) ? std::next(it) : reported.erase(it);
    for (auto it = started.begin(); it != started.end();) it = live.count(it->first) ? std::next(it) : started.erase(it);
  }
  pods.Stop();
  return 0;
}
