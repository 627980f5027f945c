// A soak on real nodes (issue 13): many mixed runs on three real kubelets (v1.20.2, containerd,
// runc) while a sampler watches every Pod on the machines.
//   - single-node runs of 1 to 4 blocks, 2-node gangs (whole machines), about 10 % of them with a
//     failing container, about 10 % deleted at a random moment (pending, starting or running);
//   - every run queues when capacity is short (retry on no-capacity, as `kubectl berth apply -Q`).
// It asserts what a user and an operator would check: the kubelets admitted every Pod berth bound
// (no OutOf* refusal), no machine ever had more blocks' worth of Pods running than it has blocks,
// every run ended in its right phase, and every deleted run is gone.
// BERTH_SOAK_RUNS sets the number of runs (default 60 in the suite; docs/reliability.md reports
// 500: `BERTH_SOAK_RUNS=500 build/tests/integration/it_soak_test`).

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "engine_fixture.h"
#include "k8s/json.h"
#include "real_nodes.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;

constexpr int kNodes = 3;
constexpr int kBlocksPerNode = 4;

std::string NodeName(int i) { return "soak-" + std::to_string(i); }

class SoakTest : public EngineTest {
 protected:
  SoakTest() { finish_deleted_pods_ = false; }  // the kubelets do it
  static void SetUpTestSuite() {
    std::vector<RealNodeSpec> nodes;
    for (int i = 0; i < kNodes; ++i) nodes.push_back({NodeName(i), 8, "4Gi", {{"pool", "soak"}}});
    RealNodes::Start(nodes);
  }
};

struct Planned {
  std::string name;
  int nodes = 1;
  int blocks = 1;     // per node
  bool fails = false;
  bool deleted = false;
};

// What one look at every Pod of the namespace shows.
struct Sample {
  int max_blocks_on_a_node = 0;  // blocks' worth of Pods the kubelet counts, on the busiest node
  int running_pods = 0;
  std::vector<std::string> refused;   // OutOf*/affinity refusals of berth's Pods
  std::vector<std::string> overcommit;
};

TEST_F(SoakTest, MixedRunsOnRealNodesAreAllAdmittedAndNeverOvercommit) {
  int total = 60;
  if (const char* env = std::getenv("BERTH_SOAK_RUNS"); env != nullptr && std::atoi(env) > 0) total = std::atoi(env);

  const std::string fleet = FleetName("soak");
  ASSERT_EQ(cp().Kubectl({"apply", "-f", "-"},
                         "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet +
                             "}\nspec:\n  nodeSelector: {pool: soak}\n  placement: cluster\n  blocks: " +
                             std::to_string(kBlocksPerNode) + "\n").exit_code, 0);
  created_fleets_.push_back(fleet);

  std::mt19937 rng(20261123);
  std::vector<Planned> plan;
  for (int i = 0; i < total; ++i) {
    Planned p;
    p.name = "s" + std::to_string(i);
    if (rng() % 5 == 0) {
      p.nodes = 2;
      p.blocks = kBlocksPerNode;  // a gang takes whole machines
    } else {
      p.blocks = 1 + static_cast<int>(rng() % kBlocksPerNode);
    }
    p.fails = rng() % 10 == 0;
    p.deleted = !p.fails && rng() % 10 == 0;
    plan.push_back(p);
  }

  // The sampler: every Pod the kubelets count, with the blocks berth gave it.
  std::atomic<bool> stop{false};
  std::mutex mu;
  int samples = 0, max_running = 0, max_blocks = 0;
  std::set<std::string> refused, overcommit;
  std::thread sampler([&] {
    while (!stop) {
      auto l = client()->List(kPods.Path(ns_));
      if (l.ok()) {
        std::map<std::string, int> blocks_on;
        int running = 0;
        for (auto& pod : l->items) {
          const std::string name = json::GetString(json::Find(pod, {"metadata", "name"}));
          const std::string node = json::GetString(json::Find(pod, {"spec", "nodeName"}));
          const std::string phase = json::GetString(json::Find(pod, {"status", "phase"}));
          const std::string reason = json::GetString(json::Find(pod, {"status", "reason"}));
          if (reason.rfind("OutOf", 0) == 0 || reason == "NodeAffinity" || reason == "UnexpectedAdmissionError") {
            std::lock_guard<std::mutex> lock(mu);
            refused.insert(name + " on " + node + ": " + reason + " " +
                           json::GetString(json::Find(pod, {"status", "message"})));
          }
          if (node.empty() || phase == "Succeeded" || phase == "Failed") continue;
          // A Pod being deleted whose containers all stopped no longer counts (the kubelet's rule).
          bool deleting = json::Find(pod, {"metadata", "deletionTimestamp"}) != nullptr;
          bool any_running = false;
          const json::Value* cs = json::Find(pod, {"status", "containerStatuses"});
          if (cs != nullptr && cs->IsArray()) {
            for (auto& c : cs->GetArray()) any_running |= json::Find(c, {"state", "running"}) != nullptr;
          }
          if (deleting && cs != nullptr && cs->IsArray() && cs->Size() > 0 && !any_running) continue;
          if (phase == "Running") ++running;
          std::string b = json::GetString(json::Find(pod, {"metadata", "annotations", "berth.dev/blocks"}));
          blocks_on[node] += b.empty() ? kBlocksPerNode + 1 : std::atoi(b.c_str());
        }
        std::lock_guard<std::mutex> lock(mu);
        ++samples;
        max_running = std::max(max_running, running);
        for (auto& [node, b] : blocks_on) {
          max_blocks = std::max(max_blocks, b);
          if (b > kBlocksPerNode) overcommit.insert(node + " held " + std::to_string(b) + " blocks");
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
    }
  });

  auto yaml_of = [&](const Planned& p) {
    std::uniform_int_distribution<int> ms(100, 2500);
    std::string script = "sleep " + std::to_string(ms(rng) / 1000.0).substr(0, 4) + "; exit " + (p.fails ? "1" : "0");
    return "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + p.name + "}\nspec:\n" +
           (p.nodes > 1 ? "  nodes: " + std::to_string(p.nodes) + "\n" : std::string()) +
           "  resources: {gpu: " + std::to_string(2 * p.blocks) + "}\n" +
           "  retry: {onEvents: [no-capacity], duration: \"off\"}\n" +
           "  template:\n    spec:\n      terminationGracePeriodSeconds: 3\n      containers:\n"
           "      - name: main\n        image: " + RealNodes::kBusybox + "\n        command: [sh, -c, " +
           json::Quote(script) + "]\n";
  };

  // Submit in waves of 20, keeping at most ~40 runs unfinished; delete the marked runs at random
  // moments of their life.
  const auto started = std::chrono::steady_clock::now();
  std::vector<size_t> to_delete;
  size_t next = 0;
  std::uniform_int_distribution<int> coin(0, 2);
  while (next < plan.size() || !to_delete.empty()) {
    int open = 0;
    if (auto l = client()->List(k8s::resources::kRuns.Path(ns_)); l.ok()) {
      for (auto& r : l->items) {
        std::string ph = json::GetString(json::Find(r, {"status", "phase"}));
        if (ph != "Succeeded" && ph != "Failed") ++open;
      }
    }
    if (next < plan.size() && open < 40) {
      std::string docs;
      for (int k = 0; k < 20 && next < plan.size(); ++k, ++next) {
        docs += "---\n" + yaml_of(plan[next]);
        if (plan[next].deleted) to_delete.push_back(next);
      }
      CommandResult r = Kubectl({"apply", "-f", "-"}, docs);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    // Each marked run is deleted with probability 1/3 per round: some while pending, some running.
    for (auto it = to_delete.begin(); it != to_delete.end();) {
      if (coin(rng) == 0) {
        ASSERT_EQ(Kubectl({"delete", "run", plan[*it].name, "--wait=false"}).exit_code, 0);
        it = to_delete.erase(it);
      } else {
        ++it;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }

  // Every run ends; the deleted ones are gone.
  ASSERT_TRUE(Eventually([&] {
    auto l = client()->List(k8s::resources::kRuns.Path(ns_));
    if (!l.ok()) return false;
    size_t ended = 0;
    for (auto& r : l->items) {
      std::string ph = json::GetString(json::Find(r, {"status", "phase"}));
      if (ph == "Succeeded" || ph == "Failed") ++ended;
    }
    size_t expected = 0;
    for (auto& p : plan) expected += p.deleted ? 0 : 1;
    return l->items.size() == expected && ended == expected;
  }, std::chrono::minutes(20))) << Kubectl({"get", "runs"}).out;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  stop = true;
  sampler.join();

  int succeeded = 0, failed = 0, deleted = 0, gangs = 0;
  for (auto& p : plan) {
    gangs += p.nodes > 1;
    if (p.deleted) {
      ++deleted;
      continue;
    }
    const std::string want = p.fails ? "Failed" : "Succeeded";
    EXPECT_EQ(Phase(p.name), want) << p.name << ": " << Message(p.name);
    if (p.fails) {
      EXPECT_EQ(Reason(p.name), "PodFailed") << p.name << ": " << Message(p.name);
      ++failed;
    } else {
      ++succeeded;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_GT(samples, 20) << "the sampler must have looked many times";
  EXPECT_GT(max_running, 1) << "runs must have run side by side";
  EXPECT_TRUE(refused.empty()) << refused.size() << " refusals, first: " << *refused.begin();
  EXPECT_TRUE(overcommit.empty()) << overcommit.size() << " over-commits, first: " << *overcommit.begin();
  std::printf("soak: %d runs (%d 2-node gangs) in %.0f s (%.2f runs/s): %d Succeeded, %d Failed (failing "
              "container), %d deleted; %d samples of every Pod: %zu kubelet refusals, %zu over-committed "
              "nodes, at most %d of %d blocks held on a node, at most %d Pods running at once\n",
              total, gangs, seconds, total / seconds, succeeded, failed, deleted, samples, refused.size(),
              overcommit.size(), max_blocks, kBlocksPerNode, max_running);
}

}  // namespace
}  // namespace berth::testing
