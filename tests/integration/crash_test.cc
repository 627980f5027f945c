// Controller crashes: rounds of bursts of mixed single-node and multi-node runs, each with a
// SIGKILL of the controller at a random moment (every other round: while a multi-node admission
// is half done), a restart, and a settle. Invariants are sampled continuously through the API
// (tests/integration/invariants.h) and checked again once each round has settled.
//
// BERTH_CRASH_ROUNDS (default 6), BERTH_CRASH_RUNS (default 150) and BERTH_FAULT_SEED (default:
// random, printed) change the amount of work; docs/reliability.md has the longer command.

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "engine_fixture.h"
#include "invariants.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;

int EnvInt(const char* name, int def) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : def;
}

class Crash : public EngineTest {
 protected:
  // A Scheduled multi-node run whose pods are not all made and bound yet: an admission in flight.
  bool GangHalfAdmitted() {
    k8s::ListOptions opts;
    opts.label_selector = selector_;
    opts.resource_version = "0";  // the watch cache, no pages
    opts.limit = 0;
    auto runs = client()->List(kRuns.Path(ns_), opts);
    auto pods = client()->List(kPods.Path(ns_), opts);
    if (!runs.ok() || !pods.ok()) return false;
    std::map<std::string, int> bound;
    for (auto& p : pods->items) {
      const json::Value* labels = json::Find(p, {"metadata", "labels"});
      if (labels == nullptr || json::GetString(json::Find(p, {"spec", "nodeName"})).empty()) continue;
      bound[json::GetString(*labels, "berth.dev/run")] += 1;
    }
    for (auto& r : runs->items) {
      const json::Value* nodes = json::Find(r, {"spec", "nodes"});
      int n = nodes != nullptr && nodes->IsInt() ? nodes->GetInt() : 1;
      if (n < 2 || json::GetString(json::Find(r, {"status", "phase"})) != "Scheduled") continue;
      if (bound[json::GetString(json::Find(r, {"metadata", "name"}))] < n) return true;
    }
    return false;
  }
  std::string selector_;
};

TEST_F(Crash, SigkillAtRandomMomentsLosesNothingAndDoubleBooksNothing) {
  const int rounds = EnvInt("BERTH_CRASH_ROUNDS", 6);
  const int runs_per_round = EnvInt("BERTH_CRASH_RUNS", 150);
  const unsigned seed = static_cast<unsigned>(EnvInt("BERTH_FAULT_SEED", static_cast<int>(std::random_device{}() % 1000000)));
  keep_runs_ = true;
  std::printf("crash test: %d rounds of %d runs, seed %u (BERTH_FAULT_SEED=%u repeats it)\n", rounds, runs_per_round,
              seed, seed);
  std::mt19937 rng(seed);

  constexpr int kNodes = 32, kBlocks = 4;
  auto nodes = Nodes("crash", kNodes, "4", "16Gi");
  Fleet("crash", "crash", "  blocks: 4\n  placement: cluster\n");
  std::map<std::string, int> total;
  for (const auto& n : nodes) total[n] = kBlocks;
  auto kubelet = ControllerProcess::KubeletSim();
  kubelet->Start();
  InvariantSampler sampler(client(), ns_, FleetName("crash"), total);
  sampler.Start();

  int kills = 0, mid_gang_kills = 0, runs_total = 0;
  for (int round = 0; round < rounds; ++round) {
    // The burst: made by a second thread while the controller works, so a kill can land while runs
    // are still arriving. A quarter are gangs of 2 or 3 whole instances.
    const std::string round_label = "r" + std::to_string(round);
    selector_ = "berth.dev/test-round=" + round_label;
    sampler.SetSelector(selector_);
    std::vector<std::string> bodies;
    for (int i = 0; i < runs_per_round; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "r%02d-%03d", round, i);
      int kind = static_cast<int>(rng() % 8);
      std::string spec;
      if (kind < 2) {
        spec = R"("nodes":)" + std::to_string(2 + kind);  // 2 or 3 whole instances
      } else {
        spec = R"("resources":{"cpu":")" + std::to_string(1 + kind % 2) + R"("})";  // 1 or 2 blocks
      }
      double secs = 0.1 + 0.1 * static_cast<double>(rng() % 4);
      bodies.push_back(R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + std::string(name) +
                       R"(","labels":{"berth.dev/test-round":")" + round_label + R"("}},"spec":{)" + spec +
                       R"(,"retry":{"onEvents":["no-capacity"],"duration":"off"},)"
                       R"("template":{"metadata":{"labels":{"berth.dev/test-round":")" + round_label +
                       R"("},"annotations":{"berth.dev/sim-seconds":")" + std::to_string(secs) +
                       R"("}},"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})");
    }
    std::thread submitter([&] {
      for (const auto& body : bodies) {
        auto r = client()->Create(kRuns.Path(ns_), body);
        EXPECT_TRUE(r.ok()) << r.status().ToString();
      }
    });
    bool mid_gang = round % 2 == 1;
    if (mid_gang) {
      // Freeze the controller at random instants until a gang's admission is caught half done.
      bool caught = false;
      for (int attempt = 0; attempt < 300 && !caught; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 + rng() % 60));
        controller_->Pause();
        caught = GangHalfAdmitted();
        if (!caught) controller_->Resume();
      }
      mid_gang_kills += caught;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 4000));
    }
    controller_->Kill();
    ++kills;
    submitter.join();
    runs_total += runs_per_round;
    controller_ = std::make_unique<ControllerProcess>(controller_args_);
    controller_->Start();

    // Settle: the kubelet finishes every run.
    const auto kill_at = std::chrono::steady_clock::now();
    bool settled = false;
    while (!settled && std::chrono::steady_clock::now() - kill_at < std::chrono::seconds(180)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      k8s::ListOptions opts;
      opts.label_selector = selector_;
      opts.resource_version = "0";
      opts.limit = 0;
      auto l = client()->List(kRuns.Path(ns_), opts);
      if (!l.ok()) continue;
      int done = 0;
      for (auto& r : l->items) done += json::GetString(json::Find(r, {"status", "phase"})) == "Succeeded";
      settled = done == runs_per_round;
    }
    ASSERT_TRUE(settled) << "round " << round << ": not every run succeeded";
    sampler.SampleOnce();
    sampler.CheckSettled("Succeeded");
    ASSERT_FALSE(::testing::Test::HasFailure()) << "round " << round;
    const double settle_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - kill_at).count();
    // The round's runs are deleted (the controller deletes their Pods and removes its finalizer), so
    // that every round meets the same cluster: with 20 rounds of runs piling up, the API server's
    // lists and the kubelet's passes grew and a round took 4 times as long at the end as at the
    // start on a loaded CI machine.
    const auto delete_at = std::chrono::steady_clock::now();
    cp().Kubectl({"-n", ns_, "delete", "runs", "-l", selector_, "--wait=false"});
    bool gone = Eventually([&] {
      k8s::ListOptions opts;
      opts.label_selector = selector_;
      opts.resource_version = "0";
      opts.limit = 0;
      auto runs = client()->List(kRuns.Path(ns_), opts);
      auto pods = client()->List(kPods.Path(ns_), opts);
      return runs.ok() && pods.ok() && runs->items.empty() && pods->items.empty();
    }, std::chrono::seconds(180));
    ASSERT_TRUE(gone) << "round " << round << ": deleted runs or their Pods are still there";
    std::printf("round %d: killed %s; settled %.1f s after the kill; runs and Pods gone %.1f s after the delete\n", round,
                mid_gang ? "mid-gang" : "at a random moment", settle_s,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - delete_at).count());
    std::fflush(stdout);
  }
  sampler.Stop();
  kubelet->Stop();
  auto violations = sampler.violations();
  for (const auto& v : violations) ADD_FAILURE() << v;
  EXPECT_GT(sampler.placed_samples(), 0) << "no invariant sample saw a placed run (" << sampler.samples() << " samples)";
  std::printf("crash test figures: rounds=%d kills=%d mid_gang_kills=%d runs=%d samples=%lld checks=%lld violations=%zu\n",
              rounds, kills, mid_gang_kills, runs_total, static_cast<long long>(sampler.samples()),
              static_cast<long long>(sampler.checks()), violations.size());
  EXPECT_GE(mid_gang_kills, rounds / 4) << "too few kills landed in the middle of a multi-node admission";
}

}  // namespace
}  // namespace berth::testing
