// Issue 45, part 3: single Pods and Pod groups in berth's queue, end to end on real kubelets with
// the real kube-scheduler (hack/real-nodes.sh controller-manager --workloads) and the chart's
// admission policies for Pods (templates/admission-policies.yaml, rendered by real Helm and
// applied as the chart applies them). Each test asserts what a user checks with kubectl: the
// Pods, their nodes, the ticket Run pod-<name> / podgroup-<group>.

#include <set>

#include "k8s/json.h"
#include "workload_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

// Two 8-GPU machines in one zone, started once per binary.
const char* kNode0 = "pg-gpu-0";
const char* kNode1 = "pg-gpu-1";

// The chart's policies for Pods and tickets (the MutatingAdmissionPolicy, or on 1.35 the webhook
// <full>-pods, which shares its name with the ValidatingAdmissionPolicy of berth's marks on Pods:
// that comes along and refuses no Pod "admin" creates) on two machines (workload_fixture.h).
class PodGroupsTest : public RealWorkloadTest {
 protected:
  PodGroupsTest() {
    dump_ = {{"pods", "-o", "wide", "--show-labels"}, {"runs", "-o", "yaml"}};
    delete_first_ = {"pods"};
  }

  static void SetUpTestSuite() {
    StartWorkloads("pg-gpu", {"berth-controller-pod-groups.berth-system", "berth-controller-tickets.berth-system"},
                   {{"berth-controller-pods.berth-system", "/mutate-pods"}}, GatedAtCreation);
  }

  // Whether a labelled Pod created now (dry run) comes back gated, retried for up to 60 s: a policy
  // takes effect a moment after it is created, the webhook once berth-controller serves it.
  static bool GatedAtCreation() {
    const std::string probe = "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: default, labels: "
                              "{berth.dev/queue: \"true\"}}\nspec:\n  containers: [{name: main, image: busybox}]\n";
    return Eventually([&] {
      CommandResult r = ControlPlane::Get().Kubectl(
          {"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.schedulingGates[*].name}"}, probe);
      return r.exit_code == 0 && r.out == "berth.dev/admission";
    }, std::chrono::seconds(60));
  }

  // A Pod labelled for berth's queue (`labels`: more label lines at 4-space indent; `annotations`:
  // annotation lines at 4-space indent) that runs `script` asking for `gpus` GPUs, with
  // terminationGracePeriodSeconds `grace`.
  void QueuedPod(const std::string& name, const std::string& labels, const std::string& annotations, const std::string& script,
                 int gpus, int64_t grace = 1) {
    Apply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  labels:\n    berth.dev/queue: \"true\"\n" + labels +
          (annotations.empty() ? "" : "  annotations:\n" + annotations) +
          "spec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: " + std::to_string(grace) +
          "\n  containers:\n  - name: main\n    image: " +
          std::string(RealNodes::kBusybox) + "\n    command: [sh, -c, " + json::Quote(script) +
          "]\n    resources: {requests: {nvidia.com/gpu: " + std::to_string(gpus) + "}, limits: {nvidia.com/gpu: " +
          std::to_string(gpus) + "}}\n");
  }
  // Pod `name` of group `group` of `size` Pods on fleet `fleet` (`labels`: more label lines).
  void GroupPod(const std::string& name, const std::string& group, int size, const std::string& fleet, const std::string& script,
                int gpus, const std::string& labels = {}, int64_t grace = 1) {
    QueuedPod(name, "    berth.dev/pod-group: " + group + "\n    berth.dev/fleet: " + FleetName(fleet) + "\n" + labels,
              "    berth.dev/pod-group-size: \"" + std::to_string(size) + "\"\n", script, gpus, grace);
  }

  std::map<std::string, PodRow> GroupPods(const std::string& group) { return Pods("berth.dev/pod-group=" + group); }
  // Each Pod gated and none bound.
  bool AllGatedNoneBound(const std::map<std::string, PodRow>& pods) {
    for (const auto& [name, p] : pods) {
      if (!p.gated || !p.node.empty()) return false;
    }
    return !pods.empty();
  }
  // Each Pod ran on the node of its rank in the ticket's placement (rank -> node of that Pod).
  void ExpectEachOnItsBookedNode(const std::string& ticket, const std::map<std::string, PodRow>& pods) {
    std::map<std::string, std::string> by_rank;
    for (const auto& [name, p] : pods) by_rank[p.rank] = p.node;
    json::Document doc = RunDoc(ticket);
    const json::Value* placement = json::Find(doc, {"status", "placement"});
    ASSERT_NE(placement, nullptr);
    ASSERT_EQ(by_rank.size(), placement->Size()) << "one Pod per rank";
    for (const auto& e : placement->GetArray()) {
      EXPECT_EQ(by_rank[std::to_string(json::GetInt(e, "rank"))], json::GetString(e, "node")) << "rank " << json::GetInt(e, "rank");
    }
  }
};

// Issue 44/45: berth admits a Pod group onto a fleet only when its maxGracePeriod covers the
// longest terminationGracePeriodSeconds of the group's Pods (a Pod's is immutable). A group one of
// whose Pods asks for an hour waits gated on a fleet of maxGracePeriod 1m, its ticket Pending
// GracePeriodTooLong; raised to 1h (kubectl patch), the group runs.
TEST_F(PodGroupsTest, AGroupWhosePodsGraceExceedsTheFleetsMaxGracePeriodWaitsUntilTheFleetAllowsIt) {
  RealFleet("grace", "  blocks: 8\n  maxGracePeriod: 1m\n", kNode0);
  GroupPod("short-0", "short", 2, "grace", "echo ok", 1, {}, 30);
  GroupPod("short-1", "short", 2, "grace", "echo ok", 1, {}, 3600);
  WaitsForGracePeriod("podgroup-short", 3600, "1m", FleetName("grace"));
  ASSERT_EQ(Reason("podgroup-short"), "GracePeriodTooLong");
  EXPECT_TRUE(AllGatedNoneBound(GroupPods("short")));

  CommandResult p = Kubectl({"patch", "fleet", FleetName("grace"), "--type", "merge", "-p", R"({"spec":{"maxGracePeriod":"1h"}})"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  ASSERT_TRUE(WaitPhase("podgroup-short", "Succeeded", std::chrono::seconds(120)))
      << Reason("podgroup-short") << ": " << Message("podgroup-short");
  for (const auto& [name, pod] : GroupPods("short")) EXPECT_EQ(pod.node, kNode0) << name;
}

// The shortcut test for Pod groups: a group of 2 Pods of 1 GPU each (both would fit one machine)
// waits gated, none bound, while only one machine is free; once both are, each Pod runs on its
// own booked machine (two different ones) and the ticket Succeeds when both Pods did.
TEST_F(PodGroupsTest, GroupOfTwoWaitsGatedThenEachPodRunsOnItsOwnBookedNode) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  ShellRun("blocker", "  resources: {gpu: 8}\n  fleets: [" + FleetName("both") + "]\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("blocker", "Running", std::chrono::seconds(90))) << Message("blocker");

  GroupPod("pair-a", "pair", 2, "both", "echo a; sleep 2", 1);
  GroupPod("pair-b", "pair", 2, "both", "echo b; sleep 2", 1);
  ASSERT_TRUE(Eventually([&] { return Phase("podgroup-pair") == "Pending" && StatusInt("podgroup-pair", "queuePosition") == 1; }))
      << Phase("podgroup-pair") << ": " << Message("podgroup-pair");
  json::Document ticket = RunDoc("podgroup-pair");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "kind"})), "PodGroup");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "apiVersion"})), "v1");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "name"})), "pair");
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec"}), "nodes"), 2);
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec", "resources"}), "gpu"), 1);
  EXPECT_EQ(json::Find(ticket, {"metadata", "ownerReferences"}), nullptr) << "a Pod group's ticket has no one owner";
  EXPECT_TRUE(AllGatedNoneBound(GroupPods("pair"))) << "a Pod of the waiting group is not held";

  Kubectl({"delete", "run", "blocker", "--wait=false"});
  ASSERT_TRUE(WaitPhase("podgroup-pair", "Succeeded", std::chrono::seconds(120))) << Message("podgroup-pair");
  std::vector<std::string> booked = PlacementNodes("podgroup-pair");
  ASSERT_EQ(std::set<std::string>(booked.begin(), booked.end()), (std::set<std::string>{kNode0, kNode1}));
  auto pods = GroupPods("pair");
  ASSERT_EQ(pods.size(), 2u);
  for (const auto& [name, p] : pods) EXPECT_EQ(p.phase, "Succeeded") << name;
  ExpectEachOnItsBookedNode("podgroup-pair", pods);
}

// Fewer Pods than the group's size: the ticket waits, saying how many exist, and its Pod stays
// gated although the fleet is free (all or nothing); once the last Pod exists the group runs.
TEST_F(PodGroupsTest, GroupWithFewerPodsThanItsSizeWaitsWithTheReason) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  GroupPod("duo-a", "duo", 2, "both", "sleep 1", 1);
  ASSERT_TRUE(Eventually([&] { return Reason("podgroup-duo") == "PodGroupIncomplete"; }))
      << Phase("podgroup-duo") << "/" << Reason("podgroup-duo") << ": " << Message("podgroup-duo");
  EXPECT_EQ(Phase("podgroup-duo"), "Pending");
  EXPECT_EQ(Message("podgroup-duo"), "1 of 2 Pods of the group exist: the group is admitted once all its Pods exist (all or nothing)");
  EXPECT_TRUE(AllGatedNoneBound(GroupPods("duo")));

  GroupPod("duo-b", "duo", 2, "both", "sleep 1", 1);
  ASSERT_TRUE(WaitPhase("podgroup-duo", "Succeeded", std::chrono::seconds(120))) << Message("podgroup-duo");
  ExpectEachOnItsBookedNode("podgroup-duo", GroupPods("duo"));
}

// `kubectl berth priority podgroup/NAME VALUE` writes the label on every Pod of the group and the
// ticket follows; `pod/NAME` a single queued Pod's; a group with no Pods is a sentence and exit 1.
TEST_F(PodGroupsTest, KubectlBerthPriorityChangesAGroupsAndAPodsLabel) {
  const std::string nowhere = "    berth.dev/fleet: none-" + ns_ + "\n";  // no such fleet: they wait
  QueuedPod("g-a", "    berth.dev/pod-group: g\n" + nowhere, "    berth.dev/pod-group-size: \"2\"\n", "sleep 1", 1);
  QueuedPod("g-b", "    berth.dev/pod-group: g\n" + nowhere, "    berth.dev/pod-group-size: \"2\"\n", "sleep 1", 1);
  QueuedPod("solo", nowhere, "", "sleep 1", 1);
  ASSERT_TRUE(Eventually([&] { return Phase("podgroup-g") == "Pending" && Phase("pod-solo") == "Pending"; }))
      << Phase("podgroup-g") << " " << Phase("pod-solo");
  auto priority = [&](const std::string& ticket) {
    json::Document t = RunDoc(ticket);
    const json::Value* spec = t.IsObject() ? json::Find(t, {"spec"}) : nullptr;
    return spec == nullptr ? -1 : json::GetInt(*spec, "priority");
  };
  CommandResult r = RunPlugin(cp().kubeconfig(), {"priority", "podgroup/g", "80", "-n", ns_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("podgroup/g label berth.dev/priority=80"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run/podgroup-g: "), std::string::npos) << r.out;
  for (const std::string pod : {"g-a", "g-b"}) {
    EXPECT_EQ(Kubectl({"get", "pod", pod, "-o", "jsonpath={.metadata.labels.berth\\.dev/priority}"}).out, "80") << pod;
  }
  EXPECT_TRUE(Eventually([&] { return priority("podgroup-g") == 80; })) << priority("podgroup-g");
  r = RunPlugin(cp().kubeconfig(), {"priority", "pod/solo", "7", "-n", ns_});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(Eventually([&] { return priority("pod-solo") == 7; })) << priority("pod-solo");
  r = RunPlugin(cp().kubeconfig(), {"priority", "podgroup/nobody", "80", "-n", ns_});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("podgroup \"nobody\" in namespace \"" + ns_ + "\" has no Pods"), std::string::npos) << r.err;
}

// A higher-priority Run preempts a running Pod group: its Pods are deleted (nothing makes bare
// Pods again) and its ticket ends Failed / Preempted; the Run starts on the freed machine.
TEST_F(PodGroupsTest, PreemptedGroupsPodsAreDeletedAndItsTicketEndsPreempted) {
  RealFleet("pre", "  placement: cluster\n  topologyKey: zone\n  preemption: {policy: LowerPriority, minRuntime: 0s}\n");
  GroupPod("low-a", "low", 2, "pre", "sleep 3600", 8, "    berth.dev/priority: \"10\"\n");
  GroupPod("low-b", "low", 2, "pre", "sleep 3600", 8, "    berth.dev/priority: \"10\"\n");
  ASSERT_TRUE(WaitPhase("podgroup-low", "Running", std::chrono::seconds(90))) << Message("podgroup-low");
  EXPECT_EQ(json::GetInt(*json::Find(RunDoc("podgroup-low"), {"spec"}), "priority"), 10);
  ShellRun("high", "  priority: 90\n  resources: {gpu: 8}\n  fleets: [" + FleetName("pre") +
                       "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("high", "Running", std::chrono::seconds(90))) << Message("high");
  ASSERT_TRUE(WaitPhase("podgroup-low", "Failed")) << Phase("podgroup-low") << ": " << Message("podgroup-low");
  EXPECT_EQ(Reason("podgroup-low"), "Preempted") << Message("podgroup-low");
  EXPECT_TRUE(Eventually([&] { return GroupPods("low").empty(); }, std::chrono::seconds(60))) << "the preempted group's Pods stayed";
}

// Reclaim of a Pod group (issue 31's teams): team owner has both machines (16 GPUs) as its nominal
// share and runs nothing; the test's namespace (team borrower, no share) runs a group of two
// whole-machine Pods on that idle share. The owner's Run (lower priority) takes one machine back:
// the gang's Pods are all deleted (nothing makes bare Pods again) and its ticket ends Failed /
// Reclaimed (docs/concepts.md, Pod groups, "Stopped"), naming the team; the owner's Run runs.
TEST_F(PodGroupsTest, ReclaimedGroupsPodsAreDeletedAndItsTicketEndsReclaimed) {
  RealFleet("rc", "  placement: cluster\n  topologyKey: zone\n  preemption: {minRuntime: 0s}\n");
  ReclaimTeams("rc");
  GroupPod("b-a", "b", 2, "rc", "sleep 3600", 8, "    berth.dev/priority: \"80\"\n");
  GroupPod("b-b", "b", 2, "rc", "sleep 3600", 8, "    berth.dev/priority: \"80\"\n");
  ASSERT_TRUE(WaitPhase("podgroup-b", "Running", std::chrono::seconds(90))) << Message("podgroup-b");
  OwnerRun("mine");
  ASSERT_TRUE(WaitPhase("podgroup-b", "Failed", std::chrono::seconds(60))) << Phase("podgroup-b") << ": " << Message("podgroup-b");
  EXPECT_EQ(Reason("podgroup-b"), "Reclaimed") << Message("podgroup-b");
  EXPECT_NE(Message("podgroup-b").find("reclaimed by team " + OwnerTeam()), std::string::npos) << Message("podgroup-b");
  EXPECT_TRUE(Eventually([&] { return GroupPods("b").empty(); }, std::chrono::seconds(60))) << "the reclaimed group's Pods stayed";
  EXPECT_TRUE(Eventually([&] { return OwnerPhase("mine") == "Running"; }, std::chrono::seconds(90))) << OwnerPhase("mine");
  EXPECT_EQ(Phase("podgroup-b"), "Failed") << "the ended ticket is the record: it does not queue again";
}

// `kubectl berth stop podgroup-NAME` on a running group: the plugin says it asked, the ticket ends
// Failed / Stopped, the group's Pods are deleted, and the ended ticket stays as the record.
TEST_F(PodGroupsTest, KubectlBerthStopEndsARunningGroupAndDeletesItsPods) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  GroupPod("run-a", "run", 2, "both", "sleep 3600", 1);
  GroupPod("run-b", "run", 2, "both", "sleep 3600", 1);
  ASSERT_TRUE(WaitPhase("podgroup-run", "Running", std::chrono::seconds(90))) << Message("podgroup-run");
  CommandResult r = Berth({"stop", "podgroup-run"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("run/podgroup-run stop requested (was Running)"), std::string::npos) << r.out;
  ASSERT_TRUE(WaitPhase("podgroup-run", "Failed")) << Message("podgroup-run");
  EXPECT_EQ(Reason("podgroup-run"), "Stopped") << Message("podgroup-run");
  EXPECT_TRUE(Eventually([&] { return GroupPods("run").empty(); }, std::chrono::seconds(60))) << "the stopped group's Pods stayed";
  EXPECT_EQ(Phase("podgroup-run"), "Failed") << "the ended ticket is the record";
}

// A namespace labelled berth.dev/queue-all after Pods already run in it (docs/concepts.md, Pods and
// Pod groups; as Kueue): what runs is not touched. A bare Pod and a group of two Pods that ran
// before the label (never held at creation) get no ticket, keep running where they are, and are
// never pinned; a group created after the label is queued (held, admitted on its booked nodes).
TEST_F(PodGroupsTest, QueueAllLabelledAfterPodsRunLeavesThemAlone) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  auto plain_pod = [&](const std::string& name, const std::string& labels, const std::string& annotations, const std::string& script) {
    Apply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  labels:\n    app: plain\n" + labels +
          (annotations.empty() ? "" : "  annotations:\n" + annotations) +
          "spec:\n  restartPolicy: Never\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: " +
          std::string(RealNodes::kBusybox) + "\n    command: [sh, -c, " + json::Quote(script) + "]\n");
  };
  const std::string old_group = "    berth.dev/pod-group: old\n", size = "    berth.dev/pod-group-size: \"2\"\n";
  plain_pod("bare", "", "", "sleep 3600");
  plain_pod("old-a", old_group, size, "sleep 3600");
  plain_pod("old-b", old_group, size, "sleep 3600");
  std::map<std::string, std::string> nodes;  // the Pods that ran before the label, and their nodes
  ASSERT_TRUE(Eventually([&] {
    nodes.clear();
    for (const auto& [name, p] : Pods("app=plain")) {
      if (p.phase == "Running") nodes[name] = p.node;
    }
    return nodes.size() == 3;
  }, std::chrono::seconds(90))) << nodes.size() << " of 3 Pods run";

  CommandResult l = cp().Kubectl({"label", "namespace", ns_, "berth.dev/queue-all=true"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  // A group made now (no berth.dev/queue label) is berth's: held at creation once the policy sees
  // the namespace's label, then admitted. Its ticket shows that berth has seen the label too.
  const std::string group = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: new-a\n  labels: {berth.dev/pod-group: new, berth.dev/fleet: " +
                            FleetName("both") + "}\n  annotations: {berth.dev/pod-group-size: \"1\"}\nspec:\n  restartPolicy: Never\n"
                            "  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: " +
                            std::string(RealNodes::kBusybox) + "\n    command: [sh, -c, 'echo new']\n";
  ASSERT_TRUE(Eventually([&] {
    CommandResult r = Kubectl({"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.schedulingGates[*].name}"}, group);
    return r.exit_code == 0 && r.out == "berth.dev/admission";
  })) << "a group Pod of a queue-all namespace was not gated at creation";
  Apply(group);
  ASSERT_TRUE(WaitPhase("podgroup-new", "Succeeded", std::chrono::seconds(120))) << Phase("podgroup-new") << ": " << Message("podgroup-new");

  EXPECT_EQ(Tickets(), (std::set<std::string>{"podgroup-new"})) << "a Pod that ran before the label was queued";
  auto pods = Pods("app=plain");
  ASSERT_EQ(pods.size(), 3u) << "a Pod that ran before the label was deleted";
  for (const auto& [name, p] : pods) {
    EXPECT_EQ(p.phase, "Running") << name;
    EXPECT_EQ(p.node, nodes[name]) << name;
    EXPECT_FALSE(p.deleting) << name;
    EXPECT_EQ(p.rank, "") << name << " was pinned by berth";
    EXPECT_FALSE(p.gated) << name;
  }
}

// kubectl berth stop on a group that still waits for its Pods: the ticket ends Stopped and the
// Pod that waited gated is deleted (nothing would ever lift its gate); the ended ticket stays.
TEST_F(PodGroupsTest, StoppingAWaitingGroupEndsItAndDeletesItsGatedPods) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  GroupPod("half-a", "half", 2, "both", "sleep 1", 1);
  ASSERT_TRUE(Eventually([&] { return Reason("podgroup-half") == "PodGroupIncomplete"; })) << Message("podgroup-half");
  CommandResult r = Kubectl({"patch", "run", "podgroup-half", "--type", "merge", "-p", R"({"spec":{"stop":true}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("podgroup-half", "Failed")) << Message("podgroup-half");
  EXPECT_EQ(Reason("podgroup-half"), "Stopped");
  EXPECT_TRUE(Eventually([&] { return GroupPods("half").empty(); }, std::chrono::seconds(60))) << "the gated Pod stayed";
  EXPECT_EQ(Phase("podgroup-half"), "Failed") << "the ended ticket is the record";
}

// Annotation berth.dev/max-duration on the group's Pods: past it the ticket ends
// MaxDurationExceeded and the group's Pods are deleted.
TEST_F(PodGroupsTest, MaxDurationEndsTheGroupAndDeletesItsPods) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  for (const std::string name : {"slow-a", "slow-b"}) {
    QueuedPod(name, "    berth.dev/pod-group: slow\n    berth.dev/fleet: " + FleetName("both") + "\n",
              "    berth.dev/pod-group-size: \"2\"\n    berth.dev/max-duration: 3s\n", "sleep 3600", 1);
  }
  ASSERT_TRUE(WaitPhase("podgroup-slow", "Running", std::chrono::seconds(90))) << Message("podgroup-slow");
  ASSERT_TRUE(WaitPhase("podgroup-slow", "Failed", std::chrono::seconds(60))) << Message("podgroup-slow");
  EXPECT_EQ(Reason("podgroup-slow"), "MaxDurationExceeded");
  EXPECT_TRUE(Eventually([&] { return GroupPods("slow").empty(); }, std::chrono::seconds(60))) << "the group's Pods stayed";
}

// A single Pod labelled berth.dev/queue: its ticket pod-<name> (owned by the Pod) is admitted, the
// Pod runs on the booked machine and the ticket Succeeds with it.
TEST_F(PodGroupsTest, SingleQueuedPodRunsOnItsBookedNode) {
  RealFleet("one", "  blocks: 1\n", kNode1);
  QueuedPod("solo", "    berth.dev/fleet: " + FleetName("one") + "\n", "", "echo solo", 2);
  ASSERT_TRUE(WaitPhase("pod-solo", "Succeeded", std::chrono::seconds(120))) << Phase("pod-solo") << ": " << Message("pod-solo");
  json::Document ticket = RunDoc("pod-solo");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "kind"})), "Pod");
  const json::Value* owners = json::Find(ticket, {"metadata", "ownerReferences"});
  ASSERT_NE(owners, nullptr);
  EXPECT_EQ(json::GetString((*owners)[0], "kind"), "Pod");
  EXPECT_EQ(json::GetString((*owners)[0], "name"), "solo");
  auto pods = Pods("berth.dev/ticket=pod-solo");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods.begin()->second.node, kNode1);
  EXPECT_EQ(pods.begin()->second.phase, "Succeeded");
}

// Deleting a running group's Pods removes its ticket and frees its blocks: the run waiting behind it starts.
TEST_F(PodGroupsTest, DeletingTheGroupsPodsRemovesItsTicketAndFreesItsBlocks) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  GroupPod("hog-a", "hog", 1, "one", "sleep 3600", 8);
  ASSERT_TRUE(WaitPhase("podgroup-hog", "Running", std::chrono::seconds(90))) << Message("podgroup-hog");
  ShellRun("next", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n",
           "sleep 3600");
  ASSERT_TRUE(Eventually([&] { return Phase("next") == "Pending"; })) << Phase("next");
  Kubectl({"delete", "pod", "hog-a", "--wait=false"});
  EXPECT_TRUE(Eventually([&] { return !client()->Get(k8s::resources::kRuns.Path(ns_, "podgroup-hog")).ok(); },
                         std::chrono::seconds(60)))
      << "the ticket outlived its Pods";
  EXPECT_TRUE(WaitPhase("next", "Running", std::chrono::seconds(120))) << Message("next");
}

// A namespace's ResourceQuota counts a queued Pod once: its gated Pod is in status.used from its
// creation (the API server's quota admission), and berth takes it out of the usage for its own
// ticket (it is not counted again on top of its own need). With a quota of 8 GPUs a queued 8-GPU
// Pod runs; a Run of 8 GPUs after it waits for the quota with the true numbers, 8 of 8, though a
// machine is free.
TEST_F(PodGroupsTest, AQueuedPodRunsOnAQuotaItsOwnPodFillsAndARunAfterItWaitsForTheQuota) {
  RealFleet("whole", "  blocks: 1\n");
  Apply("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpus}\nspec:\n  hard: {requests.nvidia.com/gpu: \"8\"}\n");
  auto quota = [&](const char* field) {
    auto q = client()->Get("/api/v1/namespaces/" + ns_ + "/resourcequotas/gpus");
    return q.ok() ? json::GetString(json::Find(*q, {"status", field, "requests.nvidia.com/gpu"})) : std::string();
  };
  // The quota controller has taken the quota up (status.hard): the API server counts Pods from now on.
  ASSERT_TRUE(Eventually([&] { return quota("hard") == "8" && quota("used") == "0"; })) << quota("hard") << " " << quota("used");
  QueuedPod("first", "    berth.dev/fleet: " + FleetName("whole") + "\n", "", "sleep 3600", 8);
  ASSERT_TRUE(WaitPhase("pod-first", "Running", std::chrono::seconds(90))) << Reason("pod-first") << ": " << Message("pod-first");
  auto pods = Pods("berth.dev/ticket=pod-first");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods.begin()->second.phase, "Running");
  EXPECT_EQ(quota("used"), "8");  // its Pod, counted once

  ShellRun("second", "  resources: {gpu: 8}\n  fleets: [" + FleetName("whole") + "]\n", "sleep 3600");
  ASSERT_TRUE(Eventually([&] { return Reason("second") == "QuotaExceeded"; })) << Reason("second") << ": " << Message("second");
  EXPECT_EQ(Phase("second"), "Pending");
  EXPECT_NE(Message("second").find("needs 8 GPUs; namespace " + ns_ + " uses 8 of 8 GPUs"), std::string::npos)
      << Message("second");
  EXPECT_EQ(Phase("pod-first"), "Running");
}

// Admission: a queued Pod comes back from create gated; one asking for a node is refused, and so
// is a group Pod without a readable size.
TEST_F(PodGroupsTest, QueuedPodsAreGatedAtCreationAndBadOnesRefused) {
  CommandResult r = Kubectl({"create", "-o", "jsonpath={.spec.schedulingGates[*].name}", "-f", "-"},
                            "apiVersion: v1\nkind: Pod\nmetadata: {name: held, labels: {berth.dev/pod-group: g, berth.dev/queue: \"true\"},"
                            " annotations: {berth.dev/pod-group-size: \"2\"}}\nspec:\n  containers: [{name: main, image: busybox:1.35}]\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "berth.dev/admission");
  CommandResult bound = Kubectl({"create", "-f", "-"},
                                "apiVersion: v1\nkind: Pod\nmetadata: {name: bound, labels: {berth.dev/queue: \"true\"}}\nspec:\n"
                                "  nodeName: " + std::string(kNode0) + "\n  containers: [{name: main, image: busybox:1.35}]\n");
  EXPECT_NE(bound.exit_code, 0);
  // The gate the policy adds makes the API server refuse the node (a gated Pod is never bound).
  EXPECT_NE(bound.err.find("spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"),
            std::string::npos)
      << bound.err;
  CommandResult sizeless = Kubectl({"create", "-f", "-"},
                                   "apiVersion: v1\nkind: Pod\nmetadata: {name: sizeless, labels: {berth.dev/pod-group: g2, "
                                   "berth.dev/queue: \"true\"}}\nspec:\n  containers: [{name: main, image: busybox:1.35}]\n");
  EXPECT_NE(sizeless.exit_code, 0);
  EXPECT_NE(sizeless.err.find("annotation berth.dev/pod-group-size must be the number of Pods of group g2"), std::string::npos)
      << sizeless.err;
  // An unlabelled Pod is none of berth's business: not gated.
  CommandResult plain = Kubectl({"create", "-o", "jsonpath={.spec.schedulingGates}", "-f", "-"},
                                "apiVersion: v1\nkind: Pod\nmetadata: {name: plain}\nspec:\n  containers: [{name: main, image: busybox:1.35}]\n");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, "");
}

}  // namespace
}  // namespace berth::testing
