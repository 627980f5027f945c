// berth-kubelet-sim: plays the kubelet for simulated Nodes (no kubelet can run here). For every
// Pod bound to a node it reports Running, then Succeeded after the seconds in the Pod annotation
// berth.dev/sim-seconds (default 30), or Failed when berth.dev/sim-exit-code is not 0.
// For the local demo and benchmarks only; tests patch pod status themselves.

#include <csignal>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

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
  // Running since (steady clock), per pod uid.
  std::map<std::string, std::chrono::steady_clock::time_point> started;
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto now = std::chrono::steady_clock::now();
    for (const auto& pod : pods.List()) {
      if (pod->node_name.empty() || pod->meta.deleting) continue;
      const std::string path = k8s::resources::kPods.Path(pod->meta.ns, pod->meta.name, "status");
      if (pod->phase.empty() || pod->phase == "Pending") {
        std::string ts = k8s::FormatRfc3339(k8s::SystemClock().Now());
        auto r = client->MergePatch(path, R"({"status":{"phase":"Running","startTime":")" + ts +
                                              R"(","conditions":[{"type":"Ready","status":"True"}]}})");
        if (r.ok()) started[pod->meta.uid] = now;
        continue;
      }
      if (pod->phase != "Running") continue;
      auto it = started.find(pod->meta.uid);
      if (it == started.end()) {
        started[pod->meta.uid] = now;
        continue;
      }
      int secs = 30;
      try {
        std::string s = pod->meta.Annotation("berth.dev/sim-seconds");
        if (!s.empty()) secs = std::stoi(s);
      } catch (...) {
      }
      if (now - it->second < std::chrono::seconds(secs)) continue;
      std::string code = pod->meta.Annotation("berth.dev/sim-exit-code");
      bool ok = code.empty() || code == "0";
      client->MergePatch(path, ok ? R"({"status":{"phase":"Succeeded"}})"
                                  : R"({"status":{"phase":"Failed","message":"exit code )" + code + "\"}}");
      started.erase(it);
    }
  }
  pods.Stop();
  return 0;
}
