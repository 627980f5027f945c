// Restart safety: SIGKILL the controller in the middle of a burst of admissions, start it again,
// and check every invariant through the API.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <set>

#include "engine_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;

class Restart : public EngineTest {
 protected:
};

TEST_F(Restart, SigkillDuringABurstLosesNothingAndDoubleBooksNothing) {
  constexpr int kNodes = 50, kBlocks = 4, kRunCount = kNodes * kBlocks, kExtra = 10;
  auto nodes = Nodes("burst", kNodes, "4", "16Gi");
  Fleet("burst", "burst", "  blocks: 4\n");
  std::string run_json_head = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")";
  std::string run_json_tail = R"("},"spec":{"resources":{"cpu":"1"},"retry":{"onEvents":["no-capacity"],"duration":"off"},)"
                              R"("template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})";
  // All runs exist before the controller sees them, so the kills land in the middle of the burst.
  controller_->Kill();
  for (int i = 0; i < kRunCount + kExtra; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "r%03d", i);
    auto r = client()->Create(kRuns.Path(ns_), run_json_head + name + run_json_tail);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // Kill it three times while admissions are in flight, then let a fourth process finish the job.
  auto pod_count = [&] {
    auto pods = client()->List(kPods.Path(ns_));
    return pods.ok() ? static_cast<int>(pods->items.size()) : 0;
  };
  for (int kill = 0; kill < 3; ++kill) {
    int before = CountPhase("Scheduled");
    controller_ = std::make_unique<ControllerProcess>(controller_args_);
    controller_->Start();
    // Twice while runs are being admitted, once while their pods are being created.
    if (kill < 2) {
      ASSERT_TRUE(Eventually([&] { return CountPhase("Scheduled") > before + 20; }, std::chrono::seconds(120)));
    } else {
      ASSERT_TRUE(Eventually([&] { return pod_count() > 20; }, std::chrono::seconds(120)));
    }
    controller_->Kill();
    auto pods = client()->List(kPods.Path(ns_));
    std::printf("killed the controller with %d runs Scheduled and %zu pods\n", CountPhase("Scheduled"),
                pods.ok() ? pods->items.size() : 0);
  }
  controller_ = std::make_unique<ControllerProcess>(controller_args_);
  controller_->Start();
  // Everything that fits is admitted, with every pod bound.
  ASSERT_TRUE(Eventually([&] { return CountPhase("Scheduled") == kRunCount; }, std::chrono::seconds(180)))
      << CountPhase("Scheduled") << " scheduled";
  ASSERT_TRUE(Eventually([&] {
    auto pods = client()->List(kPods.Path(ns_));
    if (!pods.ok()) return false;
    int bound = 0;
    for (auto& p : pods->items) bound += !json::GetString(json::Find(p, {"spec", "nodeName"})).empty();
    return bound == kRunCount;
  }, std::chrono::seconds(120)));
  // The runs that do not fit say why (a status write in the background, after the admissions).
  ASSERT_TRUE(Eventually([&] {
    auto l = client()->List(kRuns.Path(ns_));
    if (!l.ok()) return false;
    int waiting = 0;
    for (auto& run : l->items) {
      waiting += json::GetString(json::Find(run, {"status", "phase"})) == "Pending" &&
                 json::GetString(json::Find(run, {"status", "reason"})) == "NoCapacity";
    }
    return waiting == kExtra;
  }, std::chrono::seconds(60))) << "the runs that do not fit never all said NoCapacity";

  // Nothing changes from here on: every block is taken and nobody finishes a run.
  auto runs = client()->List(kRuns.Path(ns_));
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->items.size(), static_cast<size_t>(kRunCount + kExtra)) << "a run was lost";
  std::map<std::string, int> blocks_on_node;
  std::map<std::string, std::pair<std::string, std::string>> expected_pods;  // pod -> (run, node)
  std::map<std::string, int> runs_on_node;
  int pending = 0;
  for (auto& run : runs->items) {
    std::string name = json::GetString(json::Find(run, {"metadata", "name"}));
    std::string phase = json::GetString(json::Find(run, {"status", "phase"}));
    if (phase == "Pending") {
      ++pending;
      EXPECT_EQ(json::GetString(json::Find(run, {"status", "reason"})), "NoCapacity");
      continue;
    }
    ASSERT_EQ(phase, "Scheduled") << name;
    const json::Value* placement = json::Find(run, {"status", "placement"});
    ASSERT_TRUE(placement != nullptr && placement->IsArray() && placement->Size() == 1) << name;
    const json::Value& p = (*placement)[0];
    std::string node = json::GetString(p, "node");
    blocks_on_node[node] += static_cast<int>(json::GetInt(p, "blocks"));
    runs_on_node[node] += 1;
    expected_pods[json::GetString(p, "pod")] = {name, node};
  }
  EXPECT_EQ(pending, kExtra);
  for (auto& [node, blocks] : blocks_on_node) EXPECT_LE(blocks, kBlocks) << "over-committed " << node;
  // Every pod belongs to a placement, is bound where the placement says, and none is missing.
  auto pods = client()->List(kPods.Path(ns_));
  ASSERT_TRUE(pods.ok());
  std::set<std::string> seen;
  for (auto& pod : pods->items) {
    std::string name = json::GetString(json::Find(pod, {"metadata", "name"}));
    auto it = expected_pods.find(name);
    ASSERT_NE(it, expected_pods.end()) << "orphan or duplicate pod " << name;
    EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "nodeName"})), it->second.second) << name;
    seen.insert(name);
  }
  EXPECT_EQ(seen.size(), expected_pods.size());
  // The durable count matches what was started on each instance, on every instance (the Fleet
  // status is written after the runs', so wait for it).
  std::vector<std::string> wanted;
  for (const auto& node : nodes) {
    wanted.push_back(node + "=" + std::to_string(runs_on_node[node]) + "/" + std::to_string(blocks_on_node[node]));
  }
  std::sort(wanted.begin(), wanted.end());
  std::string want;
  for (const auto& e : wanted) want += e + " ";
  std::string got;
  EXPECT_TRUE(Eventually([&] {
    got = cp().Kubectl({"get", "fleet", FleetName("burst"), "-o",
                        "jsonpath={range .status.instances[*]}{.node}={.runsStarted}/{.busyBlocks} {end}"}).out;
    // Compared as sorted sets of entries: the order of the instances is not the point.
    std::istringstream entries(got);
    std::vector<std::string> sorted;
    for (std::string e; entries >> e;) sorted.push_back(e);
    std::sort(sorted.begin(), sorted.end());
    std::string joined;
    for (const auto& e : sorted) joined += e + " ";
    got = joined;
    return joined == want;
  }, std::chrono::seconds(60))) << "fleet status (node=runsStarted/busyBlocks):\n" << got << "\nwant:\n" << want;
  int total_started = 0;
  for (const auto& [node, n] : runs_on_node) total_started += n;
  EXPECT_EQ(total_started, kRunCount);
}

}  // namespace
}  // namespace berth::testing
