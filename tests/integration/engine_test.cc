// Issue 4: what berth does, end to end through the real API server. The tests play the kubelet.

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "engine_fixture.h"
#include "k8s/timefmt.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

const std::string kQueue = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";

std::string Env(const json::Value& pod, const std::string& name) {
  const json::Value* env = json::Find(pod, {"spec"});
  if (env == nullptr) return {};
  const json::Value& c0 = (*env)["containers"][0];
  if (!c0.HasMember("env")) return {};
  for (auto& e : c0["env"].GetArray()) {
    if (json::GetString(e, "name") == name) return json::GetString(e, "value");
  }
  return "<unset>";
}

std::string Resource(const json::Value& pod, const char* kind, const char* res) {
  const json::Value& c0 = pod["spec"]["containers"][0];
  return json::GetString(json::Find(c0, {"resources", kind, res}));
}

class Engine : public EngineTest {};

// One instance, one block: runs go one at a time.
TEST_F(Engine, DefaultPriorityIsFifo) {
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");
  Run("first", kQueue);
  ASSERT_TRUE(WaitPhase("first", "Scheduled"));
  Run("second", kQueue);
  Run("third", kQueue);
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"second", "third"}); })) << Kubectl({"get", "runs"}).out;
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("second", "effectivePriority") == 50 && Reason("second") == "NoCapacity" &&
           Message("second").find("needs 1 block") != std::string::npos;
  })) << Message("second");
  StartRun("first");
  FinishRun("first");
  ASSERT_TRUE(WaitPhase("second", "Scheduled"));
  // The only block is second's until second finishes, so third cannot have moved on.
  EXPECT_EQ(Phase("third"), "Pending");
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"third"}); })) << Kubectl({"get", "runs"}).out;
  StartRun("second");
  FinishRun("second");
  ASSERT_TRUE(WaitPhase("third", "Scheduled"));
}

// Production hot-fix 90, A/B test 70, training 50, dev test 30, submitted in reverse order.
TEST_F(Engine, HigherPriorityStartsFirst) {
  Nodes("slot", 1, "4", "8Gi");
  Fleet("slot", "slot");
  Run("blocker", kQueue);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  for (auto [name, prio] : std::vector<std::pair<std::string, int>>{{"dev-test", 30}, {"training", 50}, {"ab-test", 70}, {"hotfix", 90}}) {
    Run(name, "  priority: " + std::to_string(prio) + "\n" + kQueue);
  }
  // One List, so the four positions are read at one moment.
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"hotfix", "ab-test", "training", "dev-test"}); }))
      << Kubectl({"get", "runs"}).out;
  std::string current = "blocker";
  for (std::string next : {"hotfix", "ab-test", "training", "dev-test"}) {
    StartRun(current);
    FinishRun(current);
    ASSERT_TRUE(WaitPhase(next, "Scheduled")) << next;
    current = next;
  }
  CommandResult get = Kubectl({"get", "runs"});
  EXPECT_NE(get.out.find("PRIORITY"), std::string::npos);
}

TEST_F(Engine, PriorityPatchReordersTheQueue) {
  Nodes("slot", 1, "4", "8Gi");
  Fleet("slot", "slot");
  Run("blocker", kQueue);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  Run("early", kQueue);
  Run("late", kQueue);
  ASSERT_TRUE(Eventually([&] { return PositionsAre({"early", "late"}); })) << Kubectl({"get", "runs"}).out;
  CommandResult p = Kubectl({"patch", "run", "late", "--type", "merge", "-p", R"({"spec":{"priority":90}})"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"late", "early"}); })) << Kubectl({"get", "runs"}).out;
  EXPECT_TRUE(Eventually([&] { return StatusInt("late", "effectivePriority") == 90; }));
  StartRun("blocker");
  FinishRun("blocker");
  ASSERT_TRUE(WaitPhase("late", "Scheduled"));
  EXPECT_EQ(Phase("early"), "Pending");
}

// Issue 14: what `kubectl get runs` shows is one picture of the queue. A sampler lists the runs
// over and over while runs arrive (each ahead of the others), priorities are patched (a run
// jumps from last to first, another from first to last), runs are deleted and the head is
// admitted. In every sample no two pending runs show the same position, and the positions
// settle on the true order, 1..n without gaps.
TEST_F(Engine, QueuePositionsAreOneConsistentPictureOfTheQueue) {
  Nodes("pos", 1, "4", "8Gi");
  Fleet("pos", "pos");
  Run("blocker", kQueue);
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));

  std::atomic<bool> stop{false};
  std::atomic<int> samples{0}, busy_samples{0};
  std::mutex mu;
  std::vector<std::string> duplicates;
  std::thread sampler([&] {
    while (!stop) {
      auto shown = PendingPositions();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // pacing, not waiting for anything
      if (!shown) continue;
      ++samples;
      if (shown->size() >= 3) ++busy_samples;
      for (const auto& [pos, names] : *shown) {
        if (names.size() < 2) continue;
        std::string d = "position " + std::to_string(pos) + ":";
        for (const auto& n : names) d += " " + n;
        std::lock_guard<std::mutex> lock(mu);
        duplicates.push_back(d);
      }
    }
  });

  // Each run arrives ahead of all the others: everyone moves down one place.
  for (int p = 10; p <= 80; p += 10) Run("p" + std::to_string(p), "  priority: " + std::to_string(p) + "\n" + kQueue);
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"p80", "p70", "p60", "p50", "p40", "p30", "p20", "p10"}); }))
      << Kubectl({"get", "runs"}).out;
  // The last jumps to the head, the head drops to the end.
  ASSERT_EQ(Kubectl({"patch", "run", "p10", "--type", "merge", "-p", R"({"spec":{"priority":95}})"}).exit_code, 0);
  ASSERT_EQ(Kubectl({"patch", "run", "p80", "--type", "merge", "-p", R"({"spec":{"priority":5}})"}).exit_code, 0);
  // Two leave from the middle, three more arrive between the others.
  ASSERT_EQ(Kubectl({"delete", "run", "p40", "p50", "--wait=false"}).exit_code, 0);
  for (int p : {45, 55, 65}) Run("p" + std::to_string(p), "  priority: " + std::to_string(p) + "\n" + kQueue);
  EXPECT_TRUE(Eventually([&] {
    return PositionsAre({"p10", "p70", "p65", "p60", "p55", "p45", "p30", "p20", "p80"});
  })) << Kubectl({"get", "runs"}).out;
  // The head is admitted: everyone moves up one place.
  StartRun("blocker");
  FinishRun("blocker");
  ASSERT_TRUE(WaitPhase("p10", "Scheduled"));
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"p70", "p65", "p60", "p55", "p45", "p30", "p20", "p80"}); }))
      << Kubectl({"get", "runs"}).out;

  stop = true;
  sampler.join();
  EXPECT_GT(busy_samples.load(), 0) << "no sample saw the queue (" << samples.load() << " samples)";
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_TRUE(duplicates.empty()) << duplicates.size() << " positions shown by two runs at once in " << samples.load()
                                  << " samples, first: " << duplicates.front();
}

// A 16-CPU instance in 4 blocks: two runs share it, each Pod gets its blocks' resources.
TEST_F(Engine, SingleNodeRunsShareAnInstanceByBlocks) {
  auto nodes = Nodes("cpu", 1, "16", "64Gi");
  Fleet("cpu", "cpu", "  blocks: 4\n");
  Run("small", "  resources: {cpu: \"3\"}\n");
  Run("large", "  resources: {cpu: \"6\", memory: 20Gi}\n");
  ASSERT_TRUE(WaitPhase("small", "Scheduled"));
  ASSERT_TRUE(WaitPhase("large", "Scheduled"));
  EXPECT_EQ(PlacementNodes("small"), std::vector<std::string>{nodes[0]});
  EXPECT_EQ(PlacementNodes("large"), std::vector<std::string>{nodes[0]});
  ASSERT_TRUE(Eventually([&] { return PodsOf("small").size() == 1 && PodsOf("large").size() == 1; }));
  auto small = PodsOf("small");
  auto large = PodsOf("large");
  const json::Value& sp = small.begin()->second;
  const json::Value& lp = large.begin()->second;
  EXPECT_EQ(small.begin()->first, "small-0");
  EXPECT_EQ(Resource(sp, "requests", "cpu"), "4");
  EXPECT_EQ(Resource(sp, "limits", "memory"), "16Gi");
  EXPECT_EQ(Resource(lp, "requests", "cpu"), "8");  // 2 blocks
  EXPECT_EQ(Resource(lp, "requests", "memory"), "32Gi");
  EXPECT_EQ(json::GetString(json::Find(sp, {"spec", "schedulerName"})), "berth");
  EXPECT_EQ(json::GetString(json::Find(sp, {"metadata", "labels", "berth.dev/run"})), "small");
  EXPECT_EQ(json::GetString(json::Find(sp, {"metadata", "labels", "berth.dev/rank"})), "0");
  EXPECT_EQ(json::GetString(json::Find(sp, {"metadata", "ownerReferences"})->GetArray()[0], "kind"), "Run");
  EXPECT_EQ(Env(sp, "BERTH_BLOCKS"), "1");
  EXPECT_EQ(Env(lp, "BERTH_BLOCKS"), "2");
  bool tolerates = false;
  for (auto& t : json::Find(sp, {"spec", "tolerations"})->GetArray()) {
    tolerates |= json::GetString(t, "key") == "berth.dev/fleet" && json::GetString(t, "value") == FleetName("cpu");
  }
  EXPECT_TRUE(tolerates);
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "fleet", FleetName("cpu"), "-o", "jsonpath={.status.busyBlocks}/{.status.totalBlocks}/{.status.instances[0].state}"}).out ==
           "3/4/Busy";
  }));
  CommandResult cols = cp().Kubectl({"get", "fleet", FleetName("cpu")});
  EXPECT_NE(cols.out.find("INSTANCES"), std::string::npos) << cols.out;
}

// Issue 18: a run that asks for no GPU is placed where it wastes none while a fleet without GPUs
// has room, even when a GPU machine is the tighter fit; it takes a GPU block only when nothing
// else fits, and its message says so.
TEST_F(Engine, RunsWithoutGpusWasteNoGpuWhileAnotherFleetHasRoom) {
  auto gpu = Nodes("waste-gpu", 1, "16", "64Gi", 4);
  auto cpu = Nodes("waste-cpu", 1, "16", "64Gi");
  Fleet("waste-gpu", "waste-gpu", "  blocks: auto\n");  // one block per GPU
  Fleet("waste-cpu", "waste-cpu", "  blocks: 4\n");
  Run("trainer", "  resources: {cpu: \"4\", gpu: 1}\n");
  ASSERT_TRUE(WaitPhase("trainer", "Scheduled"));
  EXPECT_EQ(PlacementNodes("trainer"), std::vector<std::string>{gpu[0]});
  // The GPU node is now the partly used one (the tighter fit): the CPU-only run still goes to the CPU node.
  Run("etl", "  resources: {cpu: \"4\"}\n");
  ASSERT_TRUE(WaitPhase("etl", "Scheduled"));
  EXPECT_EQ(PlacementNodes("etl"), std::vector<std::string>{cpu[0]});
  EXPECT_EQ(Message("etl").find("no GPU"), std::string::npos) << Message("etl");
  // The CPU node full, a CPU-only run takes a GPU block rather than wait, and says so.
  Run("etl-big", "  resources: {cpu: \"12\"}\n");
  ASSERT_TRUE(WaitPhase("etl-big", "Scheduled"));
  EXPECT_EQ(PlacementNodes("etl-big"), std::vector<std::string>{cpu[0]});
  Run("etl-late", "  resources: {cpu: \"2\"}\n");
  ASSERT_TRUE(WaitPhase("etl-late", "Scheduled")) << Reason("etl-late") << ": " << Message("etl-late");
  EXPECT_EQ(PlacementNodes("etl-late"), std::vector<std::string>{gpu[0]});
  EXPECT_NE(Message("etl-late").find("it asked for no GPU but takes a block with 1 GPU: none of its fleets had room without GPUs"),
            std::string::npos)
      << Message("etl-late");
}

// The combination another scheduler got wrong: blocks auto + placement cluster + nodes 2.
TEST_F(Engine, MultiNodeRunTakesWholeIdleInstancesOfAClusterFleet) {
  auto nodes = Nodes("gpu", 2, "2", "2Gi");
  Fleet("gpu", "gpu", "  blocks: auto\n  placement: cluster\n");
  // One block busy on one instance: the gang must wait and say why.
  Run("small", "  resources: {cpu: \"1\"}\n");
  ASSERT_TRUE(WaitPhase("small", "Scheduled"));
  Run("gang", "  nodes: 2\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Reason("gang") == "NoCapacity"; }));
  EXPECT_NE(Message("gang").find("needs 2 idle instances"), std::string::npos) << Message("gang");
  EXPECT_NE(Message("gang").find("1 idle"), std::string::npos) << Message("gang");
  StartRun("small");
  FinishRun("small");
  ASSERT_TRUE(WaitPhase("gang", "Scheduled"));
  auto placed = PlacementNodes("gang");
  std::sort(placed.begin(), placed.end());
  EXPECT_EQ(placed, nodes);
  StartRun("gang");
  auto pods = PodsOf("gang");
  ASSERT_EQ(pods.size(), 2u);
  const json::Value& p0 = pods.at("gang-0");
  const json::Value& p1 = pods.at("gang-1");
  EXPECT_EQ(json::GetString(json::Find(p1, {"spec", "hostname"})), "gang-1");
  EXPECT_EQ(json::GetString(json::Find(p1, {"spec", "subdomain"})), "gang");
  EXPECT_EQ(Env(p1, "BERTH_NODE_RANK"), "1");
  EXPECT_EQ(Env(p1, "BERTH_NODES_NUM"), "2");
  EXPECT_EQ(Env(p1, "BERTH_MASTER_NODE_ADDR"), "gang-0.gang." + ns_ + ".svc");
  EXPECT_EQ(Env(p0, "BERTH_NODES_ADDRS"), "gang-0.gang." + ns_ + ".svc\ngang-1.gang." + ns_ + ".svc");
  EXPECT_EQ(Env(p0, "BERTH_BLOCKS"), "2");
  EXPECT_EQ(Env(p0, "BERTH_RUN_NAME"), "gang");
  EXPECT_EQ(Resource(p0, "requests", "cpu"), "2");  // whole instance
  CommandResult svc = Kubectl({"get", "service", "gang", "-o", "jsonpath={.spec.clusterIP}/{.spec.selector.berth\\.dev/run}"});
  EXPECT_EQ(svc.out, "None/gang") << svc.err;
  EXPECT_NE(json::GetString(json::Find(p0, {"spec", "nodeName"})), json::GetString(json::Find(p1, {"spec", "nodeName"})));
}

// Issue 45 (spec.wholeInstances false): a gang of slices on a fleet of any placement; each Pod on
// its placement entry's node with its blocks; two ranks share an instance when it fits, and the
// instance counts one run started for the gang (maxRunsPerInstance).
TEST_F(Engine, AGangOfSlicesIsPlacedOnSlicesEachPodOnItsRanksNode) {
  auto nodes = Nodes("slices", 2, "8", "16Gi");
  Fleet("slices", "slices", "  blocks: 4\n  maxRunsPerInstance: 2\n");  // 2 CPUs, 4Gi a block
  Run("busy", "  resources: {cpu: \"4\"}\n");                           // 2 of the first node's 4 blocks
  ASSERT_TRUE(WaitPhase("busy", "Scheduled"));
  ASSERT_EQ(PlacementNodes("busy"), std::vector<std::string>{nodes[0]});
  Run("gang", "  nodes: 3\n  wholeInstances: false\n  resources: {cpu: \"4\"}\n" + kQueue);
  ASSERT_TRUE(WaitPhase("gang", "Scheduled")) << Reason("gang") << ": " << Message("gang");
  // Best fit slice by slice: the first node's 2 free blocks, then both other slices on the second.
  EXPECT_EQ(PlacementNodes("gang"), (std::vector<std::string>{nodes[0], nodes[1], nodes[1]}));
  ASSERT_TRUE(Eventually([&] { return PodsOf("gang").size() == 3; }));
  auto pods = PodsOf("gang");
  auto doc = RunDoc("gang");
  const json::Value* placement = json::Find(doc, {"status", "placement"});
  ASSERT_TRUE(placement != nullptr && placement->IsArray());
  ASSERT_EQ(placement->GetArray().Size(), 3u);
  for (auto& entry : placement->GetArray()) {
    const std::string pod = json::GetString(entry, "pod");
    const int64_t rank = json::GetInt(entry, "rank", -1);
    ASSERT_TRUE(pods.count(pod)) << pod;
    const json::Value& p = pods.at(pod);
    EXPECT_EQ(json::GetString(json::Find(p, {"spec", "nodeName"})), json::GetString(entry, "node")) << pod;
    EXPECT_EQ(json::GetInt(entry, "blocks", 0), 2) << pod;
    EXPECT_EQ(Resource(p, "requests", "cpu"), "4") << pod;  // its 2 blocks, not a whole instance
    EXPECT_EQ(Resource(p, "limits", "memory"), "8Gi") << pod;
    EXPECT_EQ(Env(p, "BERTH_NODE_RANK"), std::to_string(rank)) << pod;
    EXPECT_EQ(Env(p, "BERTH_NODES_NUM"), "3") << pod;
    EXPECT_EQ(Env(p, "BERTH_BLOCKS"), "2") << pod;
    EXPECT_EQ(json::GetString(json::Find(p, {"spec", "hostname"})), "gang-" + std::to_string(rank)) << pod;
    EXPECT_EQ(json::GetString(json::Find(p, {"spec", "subdomain"})), "gang") << pod;
  }
  EXPECT_EQ(Env(pods.at("gang-2"), "BERTH_NODES_ADDRS"),
            "gang-0.gang." + ns_ + ".svc\ngang-1.gang." + ns_ + ".svc\ngang-2.gang." + ns_ + ".svc");
  CommandResult svc = Kubectl({"get", "service", "gang", "-o", "jsonpath={.spec.clusterIP}"});
  EXPECT_EQ(svc.out, "None") << svc.err;
  // The second node started one run (the gang), not two: it is not retired.
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "fleet", FleetName("slices"), "-o",
                         "jsonpath={.status.instances[?(@.node==\"" + nodes[1] + "\")].runsStarted}/"
                         "{.status.instances[?(@.node==\"" + nodes[1] + "\")].state}/{.status.busyBlocks}"})
               .out == "1/Full/8";
  }));
}

// Issue 45 item 3 (the behaviour benchmark's "a gang of two whole nodes in one zone"): a gang of
// slices that each take a whole instance, the spec a Job's ticket carries when each Pod asks for
// a whole machine's GPUs, takes idle instances of one topology domain, as the 2-node Run does.
TEST_F(Engine, AGangOfWholeInstanceSlicesStaysInOneTopologyDomain) {
  auto a = Nodes("zones", 2, "8", "16Gi", 8, {{"zone", "a"}});
  auto b = Nodes("zones", 2, "8", "16Gi", 8, {{"zone", "b"}});
  Fleet("zones", "zones", "  blocks: 8\n  placement: cluster\n  topologyKey: zone\n");
  Run("small", "  resources: {gpu: 1}\n");
  ASSERT_TRUE(WaitPhase("small", "Scheduled"));
  ASSERT_EQ(PlacementNodes("small"), std::vector<std::string>{a[0]});  // zone a keeps one idle node
  Run("gang", "  nodes: 2\n  wholeInstances: false\n  resources: {cpu: \"1\", memory: 1Gi, gpu: 8}\n" + kQueue);
  ASSERT_TRUE(WaitPhase("gang", "Scheduled")) << Reason("gang") << ": " << Message("gang");
  EXPECT_EQ(PlacementNodes("gang"), b) << "both Pods in zone b, not " << a[1] << " and " << b[0];
}

// A gang of slices larger than its fleet could ever hold waits Unschedulable and says so with the numbers.
TEST_F(Engine, AGangOfSlicesLargerThanItsFleetSaysWhy) {
  Nodes("slicebig", 1, "8", "16Gi");
  Fleet("slicebig", "slicebig", "  blocks: 4\n");
  Run("huge", "  nodes: 3\n  wholeInstances: false\n  resources: {cpu: \"4\"}\n  fleets: [" + FleetName("slicebig") + "]\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Reason("huge") == "Unschedulable"; })) << Reason("huge") << ": " << Message("huge");
  EXPECT_EQ(Phase("huge"), "Pending");
  EXPECT_NE(Message("huge").find("needs 3 slices of 2 blocks each (one per Pod) in one fleet; fleet " + FleetName("slicebig") +
                                 ", the largest, holds at most 2"),
            std::string::npos)
      << Message("huge");
}

TEST_F(Engine, MultiNodeRunOnANonClusterFleetIsUnschedulable) {
  Nodes("any", 2, "4", "8Gi");
  Fleet("any", "any");
  Run("gang", "  nodes: 2\n  fleets: [" + FleetName("any") + "]\n");
  ASSERT_TRUE(WaitPhase("gang", "Failed"));
  EXPECT_EQ(Reason("gang"), "Unschedulable");
  EXPECT_NE(Message("gang").find("cluster"), std::string::npos) << Message("gang");
  // With queueing it stays Pending with the same reason (fleets may change).
  Run("patient", "  nodes: 2\n  fleets: [" + FleetName("any") + "]\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Reason("patient") == "Unschedulable"; }));
  EXPECT_EQ(Phase("patient"), "Pending");
}

// Issue 17: without the admission webhook, the namespace label berth.dev/max-priority caps the
// priority the queue uses, and the run's message says so. A malformed value counts as 0.
TEST_F(Engine, NamespaceMaxPriorityCapsTheQueuedPriority) {
  ASSERT_EQ(cp().Kubectl({"label", "namespace", ns_, "berth.dev/max-priority=70"}).exit_code, 0);
  Run("eager", "  priority: 80\n  fleets: [none-" + ns_ + "]\n" + kQueue);  // waits: no such fleet
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("eager", "effectivePriority") == 70 &&
           Message("eager").find("priority capped at 70 by namespace " + ns_) != std::string::npos;
  })) << Message("eager");
  EXPECT_NE(Message("eager").find("spec.priority is 80"), std::string::npos) << Message("eager");
  EXPECT_EQ(Phase("eager"), "Pending");
  ASSERT_EQ(cp().Kubectl({"label", "--overwrite", "namespace", ns_, "berth.dev/max-priority=high"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("eager", "effectivePriority") == 0 && Message("eager").find("counted as 0") != std::string::npos;
  })) << Message("eager");
  ASSERT_EQ(cp().Kubectl({"label", "namespace", ns_, "berth.dev/max-priority-"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return StatusInt("eager", "effectivePriority") == 80 && Message("eager").find("capped") == std::string::npos;
  })) << Message("eager");
}

// Issue 17: a run whose Pods would exceed its namespace's ResourceQuota waits (QuotaExceeded, with
// the numbers) instead of failing at Pod creation; another namespace's run behind it is placed; the
// waiting run is placed once usage drops or the quota is raised. There is no kube-controller-manager
// here: the test writes the quota's status as its quota controller would (the API server's quota
// admission then counts each Pod berth creates).
TEST_F(Engine, ANamespaceAtItsGpuQuotaWaitsWhileOtherNamespacesRunsArePlaced) {
  Nodes("gpu", 3, "8", "32Gi", 8);
  Fleet("gpu", "gpu", "  blocks: 8\n");
  const std::string other = ns_ + "-b";
  ASSERT_EQ(cp().Kubectl({"create", "namespace", other}).exit_code, 0);
  struct Cleanup {
    std::string ns;
    ~Cleanup() { ControlPlane::Get().Kubectl({"delete", "namespace", ns, "--wait=false"}); }
  } cleanup{other};
  Apply("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpus}\nspec:\n  hard: {requests.nvidia.com/gpu: \"32\"}\n");
  const std::string status_path = "/api/v1/namespaces/" + ns_ + "/resourcequotas/gpus/status";
  auto set_status = [&](int hard, int used) {
    auto r = client()->MergePatch(status_path, R"({"status":{"hard":{"requests.nvidia.com/gpu":")" + std::to_string(hard) +
                                                   R"("},"used":{"requests.nvidia.com/gpu":")" + std::to_string(used) + R"("}}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  };
  set_status(32, 28);
  // No retry: waiting for the namespace's quota is not a failure to find capacity.
  Run("big", "  priority: 90\n  resources: {gpu: 8}\n");
  ASSERT_TRUE(Eventually([&] { return Reason("big") == "QuotaExceeded"; })) << Reason("big") << ": " << Message("big");
  EXPECT_EQ(Phase("big"), "Pending");
  EXPECT_NE(Message("big").find("needs 8 GPUs; namespace " + ns_ + " uses 28 of 32 GPUs"), std::string::npos)
      << Message("big");
  // It keeps its place in the queue (it is not on its way out, whatever its retry says).
  EXPECT_TRUE(Eventually([&] { return StatusInt("big", "queuePosition") == 1; })) << Kubectl({"get", "runs", "-o", "yaml"}).out;
  // A lower-priority run of another namespace is not blocked behind it.
  CommandResult cv = cp().Kubectl({"apply", "-n", other, "-f", "-"},
                                  "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: cv}\nspec:\n  priority: 10\n"
                                  "  resources: {gpu: 8}\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  ASSERT_EQ(cv.exit_code, 0) << cv.err;
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "run", "cv", "-n", other, "-o", "jsonpath={.status.phase}"}).out == "Scheduled";
  }));
  EXPECT_EQ(Reason("big"), "QuotaExceeded");
  // Usage drops: it is placed, and the API server's quota admission counts its Pod.
  set_status(32, 20);
  ASSERT_TRUE(WaitPhase("big", "Scheduled")) << Message("big");
  auto used = [&] {
    auto q = client()->Get("/api/v1/namespaces/" + ns_ + "/resourcequotas/gpus");
    return q.ok() ? json::GetString(json::Find(*q, {"status", "used", "requests.nvidia.com/gpu"})) : std::string();
  };
  ASSERT_TRUE(Eventually([&] { return used() == "28"; })) << used();
  Run("more", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(Eventually([&] { return Reason("more") == "QuotaExceeded"; })) << Reason("more") << ": " << Message("more");
  EXPECT_NE(Message("more").find("uses 28 of 32 GPUs"), std::string::npos) << Message("more");
  // The quota is raised: placed.
  ASSERT_EQ(Kubectl({"patch", "resourcequota", "gpus", "--type", "merge", "-p",
                     R"({"spec":{"hard":{"requests.nvidia.com/gpu":"40"}}})"}).exit_code, 0);
  set_status(40, 28);
  ASSERT_TRUE(WaitPhase("more", "Scheduled")) << Message("more");
}

TEST_F(Engine, QueueingWaitsForCapacityAndWithoutItTheRunFails) {
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");
  Run("holder");
  ASSERT_TRUE(WaitPhase("holder", "Scheduled"));
  Run("impatient");
  ASSERT_TRUE(WaitPhase("impatient", "Failed"));
  EXPECT_EQ(Reason("impatient"), "NoCapacity");
  Run("queued", kQueue);
  ASSERT_TRUE(Eventually([&] { return Reason("queued") == "NoCapacity"; }));
  EXPECT_EQ(Phase("queued"), "Pending");
  StartRun("holder");
  FinishRun("holder");
  ASSERT_TRUE(WaitPhase("queued", "Scheduled"));
}

TEST_F(Engine, RetryDurationExpiryFailsWithRetryLimitExceeded) {
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");
  Run("holder");
  ASSERT_TRUE(WaitPhase("holder", "Scheduled"));
  Run("short-wait", "  retry: {onEvents: [no-capacity], duration: 3s}\n");
  ASSERT_TRUE(Eventually([&] { return Reason("short-wait") == "NoCapacity"; }));
  ASSERT_TRUE(WaitPhase("short-wait", "Failed", std::chrono::seconds(20)));
  EXPECT_EQ(Reason("short-wait"), "RetryLimitExceeded");
}

TEST_F(Engine, PodFailureFailsTheRunOrRetriesIt) {
  Nodes("pair", 2, "4", "8Gi");
  Fleet("pair", "pair", "  placement: cluster\n");
  Run("fragile", "  nodes: 2\n");
  StartRun("fragile");
  SetPodPhase("fragile-1", "Failed");
  ASSERT_TRUE(WaitPhase("fragile", "Failed"));
  EXPECT_EQ(Reason("fragile"), "PodFailed");
  // The other pod of the run is deleted (and, once its "kubelet" confirms it is gone, its blocks
  // are free for the next run: a Pod still running holds them).
  EXPECT_TRUE(Eventually([&] { return PodsOf("fragile").count("fragile-0") == 0; }));

  Run("sturdy", "  nodes: 2\n  retry: {onEvents: [error], duration: 1h}\n");
  StartRun("sturdy");
  SetPodPhase("sturdy-0", "Failed");
  ASSERT_TRUE(Eventually([&] { return StatusInt("sturdy", "resubmissions") == 1; }));
  // Back in the queue, then admitted again with new pods.
  ASSERT_TRUE(Eventually([&] { return PodsOf("sturdy").count("sturdy-0-r1") == 1; }));
  ASSERT_TRUE(Eventually([&] { return Phase("sturdy") == "Scheduled"; }));
  // Events are posted after the writes they report, in the background: one Retrying, and a
  // Scheduled for each attempt (the first attempt's alone is not enough).
  std::string reasons;
  EXPECT_TRUE(Eventually([&] {
    reasons = Kubectl({"get", "events", "--field-selector", "involvedObject.name=sturdy", "-o",
                       "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}"}).out;
    std::multiset<std::string> seen;
    std::istringstream lines(reasons);
    for (std::string line; std::getline(lines, line);) seen.insert(line);
    return seen.count("Retrying") >= 1 && seen.count("Scheduled") >= 2;
  })) << reasons;
}

TEST_F(Engine, NodeLossIsAnInterruption) {
  auto nodes = Nodes("lossy", 1, "4", "8Gi");
  Fleet("lossy", "lossy");
  Run("victim");
  StartRun("victim");
  ASSERT_TRUE(client()->Delete(k8s::resources::kNodes.Path("", nodes[0])).ok());
  ASSERT_TRUE(WaitPhase("victim", "Failed"));
  EXPECT_EQ(Reason("victim"), "Interrupted");
  EXPECT_NE(Message("victim").find(nodes[0]), std::string::npos) << Message("victim");
}

TEST_F(Engine, EvictionWithRetryOnInterruptionGoesBackToTheQueue) {
  Nodes("evict", 1, "4", "8Gi");
  Fleet("evict", "evict");
  Run("evictee", "  retry: {onEvents: [interruption], duration: 1h}\n");
  StartRun("evictee");
  SetPodPhase("evictee-0", "Failed", "Evicted");
  ASSERT_TRUE(Eventually([&] { return StatusInt("evictee", "resubmissions") == 1; }));
  EXPECT_TRUE(Eventually([&] { return Phase("evictee") == "Scheduled"; }));
}

TEST_F(Engine, MaxDurationIsEnforced) {
  Nodes("md", 1, "4", "8Gi");
  Fleet("md", "md");
  Run("bounded", "  maxDuration: 2s\n");
  StartRun("bounded");
  ASSERT_TRUE(WaitPhase("bounded", "Failed", std::chrono::seconds(20)));
  EXPECT_EQ(Reason("bounded"), "MaxDurationExceeded");
  EXPECT_TRUE(Eventually([&] {
    auto pods = PodsOf("bounded");
    return pods.empty() || json::Find(pods.begin()->second, {"metadata", "deletionTimestamp"}) != nullptr;
  }));
}

TEST_F(Engine, MaxRunsPerInstanceRetiresTheInstance) {
  Nodes("ret", 1, "4", "8Gi");
  Fleet("ret", "ret", "  maxRunsPerInstance: 1\n");
  Run("only");
  StartRun("only");
  FinishRun("only");
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "fleet", FleetName("ret"), "-o", "jsonpath={.status.instances[0].state}/{.status.instances[0].runsStarted}"}).out ==
           "Retired/1";
  }));
  Run("next", kQueue);
  // The controller has seen the run and says why it waits: the only instance is retired.
  EXPECT_TRUE(Eventually([&] {
    return Reason("next") == "NoCapacity" && Message("next").find("retired") != std::string::npos;
  })) << Reason("next") << ": " << Message("next");
  EXPECT_EQ(Phase("next"), "Pending") << Message("next");
  EXPECT_TRUE(PodsOf("next").empty());
}

TEST_F(Engine, RunsWithMaxDurationOnlyGoWhereTheyCanFinish) {
  std::string soon = k8s::FormatRfc3339(k8s::SystemClock().Now() + std::chrono::hours(1));
  Nodes("hpc", 1, "4", "8Gi", 0, {}, {{"berth.dev/expires-at", soon}});
  Fleet("hpc", "hpc", "  blocks: 4\n");
  Run("long", "  maxDuration: 4h\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return !Reason("long").empty(); }));
  EXPECT_EQ(Phase("long"), "Pending");
  EXPECT_NE(Message("long").find("4h"), std::string::npos) << Message("long");
  Run("quick", "  maxDuration: 30m\n");
  ASSERT_TRUE(WaitPhase("quick", "Scheduled"));
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "fleet", FleetName("hpc"), "-o", "jsonpath={.status.instances[0].expiresAt}"}).out == soon;
  }));
}

// EASY backfill: a 4-node run is not starved by a stream of 1-node runs.
TEST_F(Engine, ReservationLetsAGangStartDespiteSmallRuns) {
  Nodes("res", 4, "4", "8Gi");
  Fleet("res", "res", "  placement: cluster\n");
  for (int i = 0; i < 4; ++i) Run("busy-" + std::to_string(i), "  maxDuration: 1h\n");
  for (int i = 0; i < 4; ++i) StartRun("busy-" + std::to_string(i));
  Run("gang", "  nodes: 4\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Reason("gang") == "NoCapacity"; }));
  for (int i = 0; i < 4; ++i) {
    Run("stream-" + std::to_string(i), "  maxDuration: 1h\n" + kQueue);
  }
  ASSERT_TRUE(Eventually([&] { return StatusInt("stream-3", "queuePosition") == 5; }));
  // The instances come free one at a time. A small run placed on one would hold it for an hour
  // (nobody finishes it), so the gang being placed on all four at the end proves that none was.
  for (int i = 0; i < 4; ++i) FinishRun("busy-" + std::to_string(i));
  ASSERT_TRUE(WaitPhase("gang", "Scheduled"));
  EXPECT_EQ(PlacementNodes("gang").size(), 4u);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(Phase("stream-" + std::to_string(s)), "Pending") << "a small run took a reserved instance";
  }
}

TEST_F(Engine, DeletingARunDeletesItsPodsAndFreesItsBlocks) {
  Nodes("del", 1, "4", "8Gi");
  Fleet("del", "del");
  Run("doomed");
  StartRun("doomed");
  Run("waiting", kQueue);
  ASSERT_TRUE(Eventually([&] { return Reason("waiting") == "NoCapacity"; }));
  CommandResult d = Kubectl({"delete", "run", "doomed", "--wait=false"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(Eventually([&] { return !GetRun("doomed").IsObject(); }));
  EXPECT_TRUE(Eventually([&] {
    auto pods = PodsOf("doomed");
    return pods.empty() || json::Find(pods.begin()->second, {"metadata", "deletionTimestamp"}) != nullptr;
  }));
  ASSERT_TRUE(WaitPhase("waiting", "Scheduled"));
}

TEST_F(Engine, AnAdmittedRunFollowsPriorityAndSaysWhenOtherChangesAreIgnored) {
  auto nodes = Nodes("adm", 1, "4", "8Gi");
  Fleet("adm", "adm");
  Run("steady");
  StartRun("steady");
  ASSERT_EQ(Kubectl({"patch", "run", "steady", "--type", "merge", "-p", R"({"spec":{"priority":80}})"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return StatusInt("steady", "observedGeneration") == 2; }));
  EXPECT_EQ(Phase("steady"), "Running");
  ASSERT_EQ(Kubectl({"patch", "run", "steady", "--type", "merge", "-p", R"({"spec":{"nodes":3}})"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return Kubectl({"get", "events", "--field-selector", "involvedObject.name=steady", "-o", "jsonpath={.items[*].reason}"})
               .out.find("SpecChangeIgnored") != std::string::npos;
  }));
  EXPECT_TRUE(Eventually([&] { return StatusInt("steady", "observedGeneration") == 3; }));
  EXPECT_EQ(Phase("steady"), "Running");
  EXPECT_EQ(PlacementNodes("steady"), nodes);
  EXPECT_EQ(PodsOf("steady").size(), 1u);
}

TEST_F(Engine, FleetStatusShowsNotReadyCordonedAndConflicts) {
  auto nodes = Nodes("st", 2, "4", "8Gi");
  Fleet("st", "st");
  ASSERT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "fleet", FleetName("st"), "-o", "jsonpath={.status.readyInstances}/{.status.totalInstances}"}).out == "2/2";
  }));
  ASSERT_TRUE(client()->MergePatch(k8s::resources::kNodes.Path("", nodes[0]), R"({"spec":{"unschedulable":true}})").ok());
  ASSERT_TRUE(client()->MergePatch(k8s::resources::kNodes.Path("", nodes[1], "status"),
                                   R"({"status":{"conditions":[{"type":"Ready","status":"False","reason":"KubeletDown"}]}})").ok());
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "fleet", FleetName("st"), "-o", "jsonpath={.status.instances[*].state}/{.status.readyInstances}"}).out ==
           "NotReady NotReady/0";
  }));
  // Both take no runs, and each says why: one is cordoned, the other's kubelet is down.
  auto message_of = [&](const std::string& node) {
    return cp().Kubectl({"get", "fleet", FleetName("st"), "-o", "jsonpath={.status.instances[?(@.node==\"" + node + "\")].message}"}).out;
  };
  EXPECT_TRUE(Eventually([&] {
    return message_of(nodes[0]).find("cordoned") != std::string::npos && message_of(nodes[1]) == "node is not ready";
  })) << nodes[0] << ": " << message_of(nodes[0]) << "; " << nodes[1] << ": " << message_of(nodes[1]);
  // A younger fleet selecting the same nodes gets nothing and says so.
  Fleet("st-two", "st");
  EXPECT_TRUE(Eventually([&] {
    return cp().Kubectl({"get", "fleet", FleetName("st-two"), "-o", "jsonpath={.status.conditions[?(@.type==\"Conflict\")].status}/{.status.totalInstances}"}).out ==
           "True/0";
  }));
}

// spec.ttlSecondsAfterFinished, as for a Job: the run is deleted that long after it finished
// (its Pods with it), never before; set on a run that has already finished, it applies too.
TEST_F(Engine, TtlSecondsAfterFinishedDeletesAFinishedRun) {
  Nodes("ttl", 1, "4", "8Gi");
  Fleet("ttl", "ttl");
  Run("short-lived", "  ttlSecondsAfterFinished: 3\n");
  StartRun("short-lived");
  FinishRun("short-lived");
  const auto finished = k8s::ParseRfc3339(json::GetString(json::Find(RunDoc("short-lived"), {"status", "finishedAt"})));
  ASSERT_TRUE(finished.ok()) << "a finished run shows finishedAt";
  ASSERT_TRUE(Eventually([&] { return !GetRun("short-lived").IsObject(); }, std::chrono::seconds(40)))
      << "the run is still there long after its time to live";
  const auto gone = std::chrono::system_clock::now();
  EXPECT_GE(gone, finished.value() + std::chrono::seconds(3)) << "deleted before its time to live had passed";
  EXPECT_TRUE(Eventually([&] {
    auto pods = PodsOf("short-lived");
    return pods.empty() || json::Find(pods.begin()->second, {"metadata", "deletionTimestamp"}) != nullptr;
  }));

  // A run kept after it finished (no TTL here, none by default) is deleted once a TTL is set.
  Run("kept");
  StartRun("kept");
  FinishRun("kept");
  ASSERT_TRUE(GetRun("kept").IsObject()) << "without a TTL a finished run is kept";
  CommandResult p = Kubectl({"patch", "run", "kept", "--type=merge", "-p", R"({"spec":{"ttlSecondsAfterFinished":0}})"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(Eventually([&] { return !GetRun("kept").IsObject(); }, std::chrono::seconds(40)));
}

// --finished-run-ttl: the default for runs that do not set ttlSecondsAfterFinished; a run's own
// value wins.
class FinishedRunTtl : public EngineTest {
 public:
  FinishedRunTtl() { controller_args_ = {"--finished-run-ttl=1s"}; }
};

TEST_F(FinishedRunTtl, TheControllerDefaultAppliesUnlessTheRunSaysOtherwise) {
  Nodes("dttl", 1, "4", "8Gi");
  Fleet("dttl", "dttl");
  Run("keeps-an-hour", "  ttlSecondsAfterFinished: 3600\n");
  StartRun("keeps-an-hour");
  FinishRun("keeps-an-hour");
  Run("default-ttl");
  StartRun("default-ttl");
  SetPodsPhase("default-ttl", "Failed", "Error");
  ASSERT_TRUE(WaitPhase("default-ttl", "Failed")) << "a failed run is a finished run too";
  ASSERT_TRUE(Eventually([&] { return !GetRun("default-ttl").IsObject(); }, std::chrono::seconds(40)));
  EXPECT_TRUE(GetRun("keeps-an-hour").IsObject()) << "the run's own ttlSecondsAfterFinished wins over the default";
}

}  // namespace
}  // namespace berth::testing
