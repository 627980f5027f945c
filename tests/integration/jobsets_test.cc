// Issue 45, part 2: JobSets (jobset.x-k8s.io/v1alpha2) in berth's queue, end to end on real
// kubelets with the real JobSet controller (sigs.k8s.io/jobset, pinned: hack/real-nodes.sh jobset),
// Kubeflow Trainer's controller (a framework that makes JobSets: hack/real-nodes.sh trainer),
// the Job controller, garbage collector and kube-scheduler (controller-manager --workloads), and the
// chart's admission policies for JobSets and tickets (templates/admission-policies.yaml, rendered
// by real Helm). Each test asserts what a user checks with kubectl: the JobSet, its Pods, its
// ticket Run jobset-<name>.

#include <fstream>
#include <set>
#include <sstream>

#include "k8s/json.h"
#include "workload_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

const char* kNode0 = "jobsets-gpu-0";
const char* kNode1 = "jobsets-gpu-1";

// A JobSet of `replicated` replicated Jobs (named r0, r1, ...) of one Pod each, each Pod running
// `script` and asking for `gpus` GPUs; `labels`: more label lines at 4-space indent; `annotations`:
// annotation lines at 4-space indent; `marks`: a directory of this machine mounted at /marks in
// every Pod (every real node sees it).
std::string JobSetYaml(const std::string& name, const std::string& labels, int replicated, const std::string& script, int gpus,
                       const std::string& annotations = {}, const std::string& marks = {}) {
  std::string y = "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: " + name + "\n  labels:\n" + labels +
                  (annotations.empty() ? "" : "  annotations:\n" + annotations) + "spec:\n  replicatedJobs:\n";
  const std::string volume =
      marks.empty() ? "" : "            volumes: [{name: marks, hostPath: {path: " + marks + ", type: DirectoryOrCreate}}]\n";
  const std::string mount = marks.empty() ? "" : "              volumeMounts: [{name: marks, mountPath: /marks}]\n";
  for (int i = 0; i < replicated; ++i) {
    y += "  - name: r" + std::to_string(i) + "\n    replicas: 1\n    template:\n      spec:\n        backoffLimit: 0\n"
         "        template:\n          spec:\n            restartPolicy: Never\n            terminationGracePeriodSeconds: 1\n" + volume +
         "            containers:\n            - name: main\n              image: " + std::string(RealNodes::kBusybox) +
         "\n              command: [sh, -c, " + json::Quote(script) + "]\n" + mount + "              resources: {requests: {nvidia.com/gpu: " +
         std::to_string(gpus) + "}, limits: {nvidia.com/gpu: " + std::to_string(gpus) + "}}\n";
  }
  return y;
}

// The chart's policies for Jobs, JobSets and tickets (the MutatingAdmissionPolicies, or on 1.35
// the webhooks <full>-jobs and <full>-jobsets) on the JobSet controller's and Kubeflow Trainer's
// machines (workload_fixture.h).
class JobSetsTest : public RealWorkloadTest {
 protected:
  JobSetsTest() {
    dump_ = {{"jobsets", "-o", "yaml"}, {"jobs", "-o", "wide"}, {"pods", "-o", "wide", "--show-labels"}, {"runs", "-o", "yaml"}};
    // A TrainJob's JobSet goes with it (its controller would make it again).
    delete_first_ = {"trainjobs", "jobsets"};
    wait_gone_ = {"jobsets", "jobs"};
  }

  static void SetUpTestSuite() {
    // The JobSet CRD first, so the garbage collector started next knows the kind.
    CommandResult js = RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "jobset", ControlPlane::Get().dir()});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    CommandResult tr = RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "trainer", ControlPlane::Get().dir()});
    ASSERT_EQ(tr.exit_code, 0) << tr.err;
    StartWorkloads("jobsets-gpu",
                   {"berth-controller-jobs.berth-system", "berth-controller-jobsets.berth-system", "berth-controller-tickets.berth-system"},
                   {{"berth-controller-jobs.berth-system", "/mutate-jobs"}, {"berth-controller-jobsets.berth-system", "/mutate-jobsets"}},
                   HeldAtCreation);
  }

  // Whether a labelled JobSet created now (dry run) comes back suspended with the gate in its Pod
  // template, retried for up to 60 s: a policy takes effect a moment after it is created, the
  // webhook once berth-controller serves it.
  static bool HeldAtCreation() {
    const std::string probe = JobSetYaml("probe", "    berth.dev/queue: \"true\"\n", 1, "true", 0);
    return Eventually([&] {
      CommandResult r = ControlPlane::Get().Kubectl(
          {"create", "-n", "default", "--dry-run=server", "-f", "-", "-o",
           "jsonpath={.spec.suspend} {.spec.replicatedJobs[0].template.spec.template.spec.schedulingGates[*].name}"},
          probe);
      return r.exit_code == 0 && r.out == "true berth.dev/admission";
    }, std::chrono::seconds(60));
  }

  json::Document JobSetDoc(const std::string& name) {
    auto j = client()->Get("/apis/jobset.x-k8s.io/v1alpha2/namespaces/" + ns_ + "/jobsets/" + name);
    return j.ok() ? std::move(*j) : json::Document();
  }
  bool Suspended(const std::string& name) {
    json::Document d = JobSetDoc(name);
    const json::Value* s = d.IsObject() ? json::Find(d, {"spec", "suspend"}) : nullptr;
    return s != nullptr && s->IsBool() && s->GetBool();
  }
  bool JobSetCondition(const std::string& name, const std::string& type) { return HasTrueCondition(JobSetDoc(name), type); }
  // The JobSet's Pods (the JobSet controller's label), by name.
  std::map<std::string, PodRow> JobSetPods(const std::string& name) { return Pods("jobset.sigs.k8s.io/jobset-name=" + name); }
  // The JobSet's Jobs (the JobSet controller's label), by name: suspended, and failed (condition
  // Failed; the Job controller counts a Pod deleted from a Job it runs as a failure).
  struct JobInfo {
    bool suspended = false, failed = false;
  };
  std::map<std::string, JobInfo> ChildJobs(const std::string& name) {
    std::map<std::string, JobInfo> out;
    k8s::ListOptions o;
    o.label_selector = "jobset.sigs.k8s.io/jobset-name=" + name;
    auto l = client()->List("/apis/batch/v1/namespaces/" + ns_ + "/jobs", o);
    if (!l.ok()) return out;
    for (const auto& j : l->items) {
      JobInfo i;
      const json::Value* s = json::Find(j, {"spec", "suspend"});
      i.suspended = s != nullptr && s->IsBool() && s->GetBool();
      if (const json::Value* conds = json::Find(j, {"status", "conditions"}); conds != nullptr && conds->IsArray()) {
        for (const auto& c : conds->GetArray()) {
          i.failed |= json::GetString(c, "type") == "Failed" && json::GetString(c, "status") == "True";
        }
      }
      out[json::GetString(json::Find(j, {"metadata", "name"}))] = i;
    }
    return out;
  }
  // Every Job of the JobSet suspended and none failed.
  bool JobsSuspendedNoneFailed(const std::string& name) {
    auto jobs = ChildJobs(name);
    for (const auto& [job, j] : jobs) {
      if (!j.suspended || j.failed) return false;
    }
    return !jobs.empty();
  }
};

// A queued JobSet waits suspended, none of its Pods bound, while its fleet is full; once the
// machine is free berth admits it, the JobSet controller resumes its Job, whose Pod runs on the
// booked machine, and the ticket says Succeeded with the JobSet Completed.
TEST_F(JobSetsTest, QueuedJobSetWaitsSuspendedThenRunsToSucceeded) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  ShellRun("blocker", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("blocker", "Running", std::chrono::seconds(90))) << Message("blocker");

  Apply(JobSetYaml("train", "    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("one") + "\n", 1, "echo trained", 8));
  ASSERT_TRUE(Eventually([&] { return Phase("jobset-train") == "Pending" && StatusInt("jobset-train", "queuePosition") == 1; }))
      << Phase("jobset-train") << ": " << Message("jobset-train");
  json::Document ticket = RunDoc("jobset-train");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "kind"})), "JobSet");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "apiVersion"})), "jobset.x-k8s.io/v1alpha2");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "uid"})),
            json::GetString(json::Find(JobSetDoc("train"), {"metadata", "uid"})));
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec"}), "nodes"), 1);
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec", "resources"}), "gpu"), 8);
  EXPECT_TRUE(Suspended("train"));
  for (const auto& [name, p] : JobSetPods("train")) EXPECT_EQ(p.node, "") << name << " was bound before berth admitted it";
  EXPECT_EQ(Tickets(), (std::set<std::string>{"jobset-train"})) << "the JobSet's Job has no ticket of its own";

  Kubectl({"delete", "run", "blocker", "--wait=false"});
  ASSERT_TRUE(WaitPhase("jobset-train", "Succeeded", std::chrono::seconds(120))) << Message("jobset-train");
  EXPECT_TRUE(JobSetCondition("train", "Completed"));
  EXPECT_FALSE(Suspended("train"));
  EXPECT_EQ(PlacementNodes("jobset-train"), std::vector<std::string>{kNode0});
  for (const auto& [name, p] : JobSetPods("train")) EXPECT_EQ(p.node, kNode0) << name;
}

// Issue 44/45: a JobSet's Pods are deleted by the Job controller with their own grace period, so
// berth admits it only onto a fleet whose maxGracePeriod covers the longest of its replicated
// Jobs' (here r1's hour, r0 has 1 s): on a fleet of 1m it waits suspended, GracePeriodTooLong;
// raised to 1h (kubectl patch), it runs.
TEST_F(JobSetsTest, AJobSetWhosePodsGraceExceedsTheFleetsMaxGracePeriodWaitsUntilTheFleetAllowsIt) {
  RealFleet("grace", "  blocks: 8\n  maxGracePeriod: 1m\n", kNode0);
  std::string yaml = JobSetYaml("long", "    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("grace") + "\n", 2, "echo ok", 1);
  const std::string one = "terminationGracePeriodSeconds: 1\n";
  const size_t second = yaml.find(one, yaml.find(one) + one.size());
  ASSERT_NE(second, std::string::npos);
  yaml.replace(second, one.size(), "terminationGracePeriodSeconds: 3600\n");
  Apply(yaml);
  WaitsForGracePeriod("jobset-long", 3600, "1m", FleetName("grace"));
  ASSERT_EQ(Reason("jobset-long"), "GracePeriodTooLong");
  EXPECT_TRUE(Suspended("long"));
  for (const auto& [name, p] : JobSetPods("long")) EXPECT_EQ(p.node, "") << name << " was bound before berth admitted it";

  CommandResult patch = Kubectl({"patch", "fleet", FleetName("grace"), "--type", "merge", "-p", R"({"spec":{"maxGracePeriod":"1h"}})"});
  ASSERT_EQ(patch.exit_code, 0) << patch.err;
  ASSERT_TRUE(WaitPhase("jobset-long", "Succeeded", std::chrono::seconds(120))) << Reason("jobset-long") << ": " << Message("jobset-long");
  EXPECT_TRUE(Eventually([&] { return JobSetCondition("long", "Completed"); }));
}

// The gang: a JobSet of 2 replicated Jobs of one 1-GPU Pod each, on whole instances (label
// berth.dev/whole-instances). Both Pods would fit on one machine; the ticket books both machines
// and each Pod runs on the machine of its own rank.
TEST_F(JobSetsTest, GangJobSetOnWholeInstancesEachPodOnItsOwnBookedNode) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  Apply(JobSetYaml("gang", "    berth.dev/queue: \"true\"\n    berth.dev/whole-instances: \"true\"\n    berth.dev/fleet: " +
                               FleetName("both") + "\n", 2, "echo $HOSTNAME; sleep 2", 1));
  ASSERT_TRUE(WaitPhase("jobset-gang", "Succeeded", std::chrono::seconds(150))) << Message("jobset-gang");
  json::Document ticket = RunDoc("jobset-gang");
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec"}), "nodes"), 2) << "all Jobs of the JobSet are one gang";
  std::vector<std::string> booked = PlacementNodes("jobset-gang");
  ASSERT_EQ(std::set<std::string>(booked.begin(), booked.end()), (std::set<std::string>{kNode0, kNode1}));
  std::map<std::string, std::string> by_rank;  // rank -> the node its Pod ran on
  for (const auto& [name, p] : JobSetPods("gang")) {
    EXPECT_EQ(p.ticket, "jobset-gang") << name;
    if (p.phase == "Succeeded") by_rank[p.rank] = p.node;
  }
  ASSERT_EQ(by_rank.size(), 2u) << "one Pod of each replicated Job, each with a rank of its own";
  for (const auto& e : json::Find(ticket, {"status", "placement"})->GetArray()) {
    EXPECT_EQ(by_rank[std::to_string(json::GetInt(e, "rank"))], json::GetString(e, "node")) << "rank " << json::GetInt(e, "rank");
  }
  EXPECT_TRUE(JobSetCondition("gang", "Completed"));
}

// spec.stop on the ticket: the JobSet is suspended (the JobSet controller suspends its Jobs and
// their Pods go), the ticket ends Failed/Stopped.
TEST_F(JobSetsTest, StopOnTheTicketSuspendsTheJobSet) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  Apply(JobSetYaml("long", "    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("one") + "\n", 1, "sleep 3600", 8));
  ASSERT_TRUE(WaitPhase("jobset-long", "Running", std::chrono::seconds(90))) << Message("jobset-long");
  EXPECT_FALSE(Suspended("long"));
  CommandResult r = Kubectl({"patch", "run", "jobset-long", "--type", "merge", "-p", R"({"spec":{"stop":true}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("jobset-long", "Failed")) << Message("jobset-long");
  EXPECT_EQ(Reason("jobset-long"), "Stopped");
  EXPECT_TRUE(Eventually([&] { return Suspended("long"); })) << "the JobSet of a stopped ticket was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobSetPods("long").empty(); }, std::chrono::seconds(60)));
  // Suspended, not failed: its Job was held before berth deleted its Pod (backoffLimit 0 would
  // have failed the Job, and so the JobSet, on a Pod deleted from a running Job).
  EXPECT_FALSE(JobSetCondition("long", "Failed"));
}

// Annotation berth.dev/max-duration on a JobSet is its ticket's maxDuration, counted from when it
// runs (docs/concepts.md, a Run's maxDuration): past it the ticket ends Failed /
// MaxDurationExceeded, the JobSet and its Job are suspended (neither fails: the Job was held before
// berth deleted its Pod) and its Pod goes; the ended ticket stays and the machine is free again.
TEST_F(JobSetsTest, MaxDurationEndsTheTicketAndSuspendsTheJobSet) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  Apply(JobSetYaml("slow", "    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("one") + "\n", 1, "sleep 3600", 8,
                   "    berth.dev/max-duration: 5s\n"));
  ASSERT_TRUE(WaitPhase("jobset-slow", "Running", std::chrono::seconds(90))) << Message("jobset-slow");
  EXPECT_EQ(json::GetString(json::Find(RunDoc("jobset-slow"), {"spec", "maxDuration"})), "5s");
  ASSERT_TRUE(WaitPhase("jobset-slow", "Failed", std::chrono::seconds(60))) << Phase("jobset-slow") << ": " << Message("jobset-slow");
  EXPECT_EQ(Reason("jobset-slow"), "MaxDurationExceeded") << Message("jobset-slow");
  EXPECT_TRUE(Eventually([&] { return Suspended("slow"); })) << "the JobSet past its max-duration was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobSetPods("slow").empty(); }, std::chrono::seconds(60))) << "its Pod stayed";
  EXPECT_TRUE(JobsSuspendedNoneFailed("slow"));
  EXPECT_FALSE(JobSetCondition("slow", "Failed"));
  ShellRun("next", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n", "sleep 3600");
  EXPECT_TRUE(WaitPhase("next", "Running", std::chrono::seconds(90))) << Message("next");
  EXPECT_EQ(Phase("jobset-slow"), "Failed") << "the ended ticket is the record: it does not queue again";
  EXPECT_TRUE(Suspended("slow"));
}

// Reclaim of a JobSet (issue 31's teams): team owner has both machines (16 GPUs) as its nominal
// share and runs nothing; the test's namespace (team borrower, no share) runs two whole-machine
// JobSets on that idle share. The owner's Run (lower priority) takes one machine back: one JobSet
// is suspended with its Job, held before berth deletes its Pod (backoffLimit 0: otherwise the Job,
// and so the JobSet, would fail), its ticket Pending / Reclaimed back in the queue. Once the
// owner's Run is gone the ticket is placed again, the JobSet resumed, and its new Pod (a later
// attempt, told apart by a mark on the machine) completes it.
TEST_F(JobSetsTest, ReclaimedJobSetIsSuspendedRequeuedAndCompletesWhenReadmitted) {
  RealFleet("rc", "  blocks: 1\n  preemption: {minRuntime: 0s}\n");
  ReclaimTeams("rc");
  const std::string marks = Marks();
  for (const std::string js : {"b1", "b2"}) {
    Apply(JobSetYaml(js, "    berth.dev/queue: \"true\"\n    berth.dev/priority: \"80\"\n    berth.dev/fleet: " + FleetName("rc") + "\n",
                     1, "if [ -e /marks/" + js + " ]; then echo again; exit 0; fi; touch /marks/" + js + "; sleep 3600", 8, {},
                     marks));
    ASSERT_TRUE(WaitPhase("jobset-" + js, "Running", std::chrono::seconds(90))) << js << ": " << Message("jobset-" + js);
  }
  OwnerRun("mine");
  ASSERT_TRUE(Eventually([&] { return OwnerPhase("mine") == "Running"; }, std::chrono::seconds(90))) << OwnerPhase("mine");

  // Exactly one borrowing JobSet was reclaimed: suspended with its Job, its Pod gone, its ticket
  // back in the queue; the other runs on.
  const std::vector<std::string> reclaimed = Reclaimed({"jobset-b1", "jobset-b2"});
  ASSERT_EQ(reclaimed.size(), 1u);
  const std::string ticket = reclaimed.front(), js = ticket.substr(std::string("jobset-").size());
  EXPECT_TRUE(Eventually([&] { return Suspended(js); })) << "the reclaimed JobSet " << js << " was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobSetPods(js).empty(); }, std::chrono::seconds(60))) << js << "'s Pod is still there";
  EXPECT_TRUE(JobsSuspendedNoneFailed(js)) << "the reclaimed JobSet's Job was not held before its Pod went";
  EXPECT_FALSE(JobSetCondition(js, "Failed"));
  EXPECT_FALSE(Suspended(js == "b1" ? "b2" : "b1"));

  // Capacity frees: the ticket is placed again, the JobSet resumed, and its new Pod completes it.
  ASSERT_EQ(cp().Kubectl({"-n", OwnerNamespace(), "delete", "run", "mine", "--wait=false"}).exit_code, 0);
  ASSERT_TRUE(WaitPhase(ticket, "Succeeded", std::chrono::seconds(150))) << Message(ticket);
  EXPECT_EQ(StatusInt(ticket, "resubmissions"), 1);
  EXPECT_TRUE(JobSetCondition(js, "Completed"));
  const std::vector<std::string> placed = PlacementNodes(ticket);
  ASSERT_EQ(placed.size(), 1u);
  auto pods = JobSetPods(js);
  ASSERT_EQ(pods.size(), 1u) << "the Pod of the first attempt is gone, the second's stays";
  EXPECT_EQ(pods.begin()->second.phase, "Succeeded");
  EXPECT_EQ(pods.begin()->second.node, placed.front()) << "the new Pod ran on the fresh placement";
}

// A JobSet preempted by a Run of higher priority is suspended (the JobSet controller suspends its
// Job, its Pod goes), its ticket goes back to the queue, and it is admitted again on a fresh
// placement once the machine is free.
TEST_F(JobSetsTest, PreemptedJobSetIsSuspendedRequeuedAndReadmitted) {
  RealFleet("pre", "  blocks: 1\n  preemption: {policy: LowerPriority, minRuntime: 0s}\n", kNode0);
  Apply(JobSetYaml("low", "    berth.dev/queue: \"true\"\n    berth.dev/priority: \"10\"\n    berth.dev/fleet: " + FleetName("pre") + "\n",
                   1, "sleep 3600", 8));
  ASSERT_TRUE(WaitPhase("jobset-low", "Running", std::chrono::seconds(90))) << Message("jobset-low");
  ShellRun("high", "  priority: 90\n  resources: {gpu: 8}\n  fleets: [" + FleetName("pre") +
                       "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("high", "Running", std::chrono::seconds(90))) << Message("high");
  EXPECT_EQ(Phase("jobset-low"), "Pending");
  EXPECT_EQ(Reason("jobset-low"), "Preempted") << Message("jobset-low");
  EXPECT_TRUE(Eventually([&] { return Suspended("low"); })) << "the preempted JobSet was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobSetPods("low").empty(); }, std::chrono::seconds(60)));
  EXPECT_FALSE(JobSetCondition("low", "Failed")) << "the preempted JobSet failed (its Job saw its Pod deleted unsuspended)";

  Kubectl({"delete", "run", "high", "--wait=false"});
  ASSERT_TRUE(WaitPhase("jobset-low", "Running", std::chrono::seconds(120))) << Message("jobset-low");
  EXPECT_FALSE(Suspended("low"));
  EXPECT_EQ(StatusInt("jobset-low", "resubmissions"), 1);
  EXPECT_TRUE(Eventually([&] {
    auto pods = JobSetPods("low");
    return pods.size() == 1 && pods.begin()->second.node == kNode0 && pods.begin()->second.phase == "Running";
  }, std::chrono::seconds(60))) << "the readmitted JobSet's Pod does not run on its booked node";
}

// Deleting the JobSet deletes its ticket and frees its blocks: the run waiting behind it starts.
TEST_F(JobSetsTest, DeletingTheJobSetRemovesItsTicket) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  Apply(JobSetYaml("hog", "    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("one") + "\n", 1, "sleep 3600", 8));
  ASSERT_TRUE(WaitPhase("jobset-hog", "Running", std::chrono::seconds(90))) << Message("jobset-hog");
  ShellRun("next", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n",
           "sleep 3600");
  ASSERT_TRUE(Eventually([&] { return Phase("next") == "Pending"; })) << Phase("next");
  CommandResult d = Kubectl({"delete", "jobset", "hog", "--wait=false"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_TRUE(Eventually([&] { return !client()->Get(k8s::resources::kRuns.Path(ns_, "jobset-hog")).ok(); },
                         std::chrono::seconds(60))) << "the ticket of a deleted JobSet is still there";
  EXPECT_TRUE(WaitPhase("next", "Running", std::chrono::seconds(120))) << Message("next");
}

// In a namespace labelled berth.dev/queue-all an unlabelled JobSet is held at admission and gets
// one ticket; its Jobs (the JobSet controller's) get none and run once berth admits the JobSet.
TEST_F(JobSetsTest, QueueAllNamespaceQueuesAJobSetOnceNotItsJobs) {
  CommandResult l = cp().Kubectl({"label", "namespace", ns_, "berth.dev/queue-all=true"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  const std::string js = JobSetYaml("plain", "    app: plain\n", 2, "true", 1);
  ASSERT_TRUE(Eventually([&] {
    CommandResult r = Kubectl({"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.suspend}"}, js);
    return r.exit_code == 0 && r.out == "true";
  })) << "a JobSet in a queue-all namespace was not held at admission";
  Apply(js);
  ASSERT_TRUE(WaitPhase("jobset-plain", "Succeeded", std::chrono::seconds(150))) << Message("jobset-plain");
  EXPECT_TRUE(JobSetCondition("plain", "Completed"));
  EXPECT_EQ(Tickets(), (std::set<std::string>{"jobset-plain"})) << "the JobSet's Jobs were queued on their own";
}

// A tenant cannot unsuspend its queued JobSet or take its queue label off (the chart's
// ValidatingAdmissionPolicy for JobSets), and a label value berth cannot read is refused naming it.
TEST_F(JobSetsTest, TenantCannotUnsuspendOrUnlabelAQueuedJobSet) {
  GrantTenantNamespaceRights();
  Apply(TenantRole("tenant-jobsets", AllVerbsOn("jobset.x-k8s.io", "[jobsets]")));
  CommandResult created = AsTenant({"create", "-f", "-"},
                                    JobSetYaml("mine", "    berth.dev/queue: \"true\"\n    berth.dev/fleet: none-" + ns_ + "\n", 1, "true", 1));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  ASSERT_TRUE(Eventually([&] { return Phase("jobset-mine") == "Pending"; })) << Phase("jobset-mine");
  EXPECT_TRUE(Suspended("mine"));

  CommandResult unsuspend = AsTenant({"patch", "jobset", "mine", "--type", "merge", "-p", R"({"spec":{"suspend":false}})"});
  EXPECT_NE(unsuspend.exit_code, 0);
  EXPECT_NE(unsuspend.err.find("this JobSet waits in berth's queue"), std::string::npos) << unsuspend.err;
  EXPECT_TRUE(Suspended("mine"));
  CommandResult unlabel = AsTenant({"label", "jobset", "mine", "berth.dev/queue-"});
  EXPECT_NE(unlabel.exit_code, 0);
  EXPECT_NE(unlabel.err.find("cannot be removed from a queued JobSet"), std::string::npos) << unlabel.err;
  CommandResult bad = AsTenant({"label", "jobset", "mine", "berth.dev/priority=high", "--overwrite"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("label berth.dev/priority must be a whole number from 0 to 100"), std::string::npos) << bad.err;
  // The label is the ticket's priority, and a good value moves it.
  CommandResult good = AsTenant({"label", "jobset", "mine", "berth.dev/priority=70", "--overwrite"});
  ASSERT_EQ(good.exit_code, 0) << good.err;
  auto ticket_priority = [&] {
    json::Document t = RunDoc("jobset-mine");
    const json::Value* spec = t.IsObject() ? json::Find(t, {"spec"}) : nullptr;
    return spec == nullptr ? -1 : json::GetInt(*spec, "priority");
  };
  EXPECT_TRUE(Eventually([&] { return ticket_priority() == 70; })) << "the ticket's priority does not follow the JobSet's label";
  // kubectl berth priority jobset/NAME writes the same label.
  CommandResult plugin = RunPlugin(cp().kubeconfig(), {"priority", "jobset/mine", "30", "-n", ns_});
  ASSERT_EQ(plugin.exit_code, 0) << plugin.out << plugin.err;
  EXPECT_NE(plugin.out.find("jobset/mine label berth.dev/priority=30"), std::string::npos) << plugin.out;
  EXPECT_TRUE(Eventually([&] { return ticket_priority() == 30; })) << ticket_priority();
}

// Issue 45 item 5, a framework on top: Kubeflow Trainer's TrainJob makes a JobSet. In a namespace
// labelled berth.dev/queue-all that JobSet is queued like any other (berth has no Trainer code):
// it waits suspended while the fleet is full (the Trainer, which asks to unsuspend it, is refused
// by the admission policy), then runs once berth admits it and the TrainJob completes.
TEST_F(JobSetsTest, TrainJobInAQueueAllNamespaceRunsOnlyAfterBerthAdmitsIt) {
  CommandResult l = cp().Kubectl({"label", "namespace", ns_, "berth.dev/queue-all=true"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  const std::string probe = JobSetYaml("probe", "    app: probe\n", 1, "true", 0);
  ASSERT_TRUE(Eventually([&] {
    CommandResult r = Kubectl({"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.suspend}"}, probe);
    return r.exit_code == 0 && r.out == "true";
  })) << "the admission policy never saw the namespace's label";
  RealFleet("one", "  blocks: 1\n", kNode0);
  ShellRun("blocker", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("blocker", "Running", std::chrono::seconds(90))) << Message("blocker");

  // A runtime of our own whose trainer container is the test image, asking for a whole machine.
  Apply("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\nmetadata: {name: plain}\nspec:\n"
        "  mlPolicy: {numNodes: 1}\n  template:\n    spec:\n      replicatedJobs:\n      - name: node\n        template:\n"
        "          metadata:\n            labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}\n          spec:\n"
        "            template:\n              spec:\n                terminationGracePeriodSeconds: 1\n                containers:\n"
        "                - name: node\n                  image: " + std::string(RealNodes::kBusybox) + "\n"
        "                  command: [sh, -c, \"echo trained\"]\n"
        "                  resources: {requests: {nvidia.com/gpu: 8}, limits: {nvidia.com/gpu: 8}}\n");
  Apply("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: tj}\nspec:\n"
        "  runtimeRef: {name: plain, kind: TrainingRuntime}\n");
  ASSERT_TRUE(Eventually([&] { return Phase("jobset-tj") == "Pending" && StatusInt("jobset-tj", "queuePosition") == 1; },
                         std::chrono::seconds(60)))
      << Phase("jobset-tj") << ": " << Message("jobset-tj");
  json::Document ticket = RunDoc("jobset-tj");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "kind"})), "JobSet");
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec", "resources"}), "gpu"), 8);
  json::Document js = JobSetDoc("tj");
  const json::Value* owners = json::Find(js, {"metadata", "ownerReferences"});
  ASSERT_TRUE(owners != nullptr && owners->IsArray() && owners->Size() == 1) << "the JobSet is the TrainJob's";
  EXPECT_EQ(json::GetString((*owners)[0], "kind"), "TrainJob");
  EXPECT_TRUE(Suspended("tj"));
  for (const auto& [name, p] : JobSetPods("tj")) EXPECT_EQ(p.node, "") << name << " was bound before berth admitted it";
  EXPECT_EQ(Tickets(), (std::set<std::string>{"jobset-tj"}));
  // The Trainer (TrainJob suspend: false) asks to unsuspend its JobSet and is refused by the policy.
  EXPECT_TRUE(Eventually([&] {
    std::ifstream in(cp().dir() + "/trainer.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str().find("this JobSet waits in berth's queue") != std::string::npos;
  })) << "the Trainer's unsuspend of the queued JobSet was not refused";
  EXPECT_TRUE(Suspended("tj"));

  Kubectl({"delete", "run", "blocker", "--wait=false"});
  ASSERT_TRUE(WaitPhase("jobset-tj", "Succeeded", std::chrono::seconds(150))) << Message("jobset-tj");
  EXPECT_EQ(PlacementNodes("jobset-tj"), std::vector<std::string>{kNode0});
  EXPECT_TRUE(Eventually([&] {
    CommandResult r = Kubectl({"get", "trainjob", "tj", "-o", "jsonpath={.status.conditions[?(@.type==\"Complete\")].status}"});
    return r.exit_code == 0 && r.out == "True";
  })) << Kubectl({"get", "trainjob", "tj", "-o", "yaml"}).out;
}

}  // namespace
}  // namespace berth::testing
