// Issue 45, part 1: batch/v1 Jobs in berth's queue, end to end on real kubelets with the real Job
// controller, garbage collector and kube-scheduler (hack/real-nodes.sh controller-manager
// --workloads) and the chart's admission policies for Jobs (templates/admission-policies.yaml,
// rendered by real Helm and applied as the chart applies them). Each test asserts what a user
// checks with kubectl: the Job, its Pods, its ticket Run job-<name>.
// On Kubernetes 1.35 (the compatibility group, BERTH_KUBE_VERSION=1.35) the API server serves no
// MutatingAdmissionPolicy: the chart holds queued Jobs there with berth's webhook (webhook.yaml,
// <full>-jobs), which these tests then apply and berth-controller serves.

#include <cstdlib>
#include <regex>
#include <set>

#include "k8s/json.h"
#include "workload_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

// The API server of this binary keeps an audit log of every write (hack/control-plane.sh
// BERTH_AUDIT), with the bodies of Pod writes, bindings and Run status writes: the audit check of
// issue 45 (2) reads when each Pod was bound and when its ticket was placed.
[[maybe_unused]] const bool kAudit = [] { return setenv("BERTH_AUDIT", "1", 1) == 0; }();

// Two 8-GPU machines in one zone, started once per binary.
const char* kNode0 = "jobs-gpu-0";
const char* kNode1 = "jobs-gpu-1";

class JobsTest : public RealWorkloadTest {
 protected:
  JobsTest() {
    dump_ = {{"jobs", "-o", "yaml"}, {"pods", "-o", "wide", "--show-labels"}, {"runs", "-o", "yaml"}};
    // The Jobs go first (their tickets go with them), then the fixture's runs.
    delete_first_ = {"jobs"};
    wait_gone_ = {"jobs"};
  }

  // The chart's policies for Jobs and tickets as Helm renders them for this API server (on 1.35
  // its webhook for Jobs, served by each test's berth-controller): workload_fixture.h.
  static void SetUpTestSuite() {
    StartWorkloads("jobs-gpu", {"berth-controller-jobs.berth-system", "berth-controller-tickets.berth-system"},
                   {{"berth-controller-jobs.berth-system", "/mutate-jobs"}}, HeldAtCreation);
  }

  // Whether a labelled Job created now (dry run) comes back suspended, retried for up to 60 s: a
  // policy takes effect a moment after it is created, and the webhook once berth-controller serves it.
  static bool HeldAtCreation() {
    const std::string probe = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: probe, namespace: default, labels: "
                              "{berth.dev/queue: \"true\"}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n"
                              "      containers: [{name: main, image: busybox}]\n";
    return Eventually([&] {
      CommandResult r = ControlPlane::Get().Kubectl({"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.suspend}"}, probe);
      return r.exit_code == 0 && r.out == "true";
    }, std::chrono::seconds(60));
  }

  // A Job labelled for berth's queue (`labels`: more label lines at 4-space indent) whose Pods run
  // `script` asking for `gpus` GPUs each; `spec_extra`: more Job spec lines (2-space indent);
  // `grace`: its template's terminationGracePeriodSeconds.
  void QueuedJob(const std::string& name, const std::string& labels, const std::string& script, int gpus,
                 const std::string& spec_extra = {}, int64_t grace = 1) {
    Apply("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  labels:\n    berth.dev/queue: \"true\"\n" +
          labels + "spec:\n  backoffLimit: 0\n" + spec_extra +
          "  template:\n    spec:\n      restartPolicy: Never\n      terminationGracePeriodSeconds: " + std::to_string(grace) +
          "\n      containers:\n"
          "      - name: main\n        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, " +
          json::Quote(script) + "]\n        resources: {requests: {nvidia.com/gpu: " + std::to_string(gpus) +
          "}, limits: {nvidia.com/gpu: " + std::to_string(gpus) + "}}\n");
  }

  json::Document JobDoc(const std::string& name) {
    auto j = client()->Get("/apis/batch/v1/namespaces/" + ns_ + "/jobs/" + name);
    return j.ok() ? std::move(*j) : json::Document();
  }
  bool Suspended(const std::string& job) {
    json::Document d = JobDoc(job);
    const json::Value* s = d.IsObject() ? json::Find(d, {"spec", "suspend"}) : nullptr;
    return s != nullptr && s->IsBool() && s->GetBool();
  }
  bool JobCondition(const std::string& job, const std::string& type) { return HasTrueCondition(JobDoc(job), type); }
  // A counter of the Job's status (succeeded, failed, ...; 0 when absent).
  int64_t JobStatusInt(const std::string& job, const char* field) {
    json::Document d = JobDoc(job);
    const json::Value* st = d.IsObject() ? json::Find(d, {"status"}) : nullptr;
    return st != nullptr && st->IsObject() ? json::GetInt(*st, field) : 0;
  }
  // The Job's Pods (the Job controller's label), by name.
  std::map<std::string, PodRow> JobPods(const std::string& job) { return Pods("batch.kubernetes.io/job-name=" + job); }
  bool NoPodBound(const std::string& job) {
    for (const auto& [name, p] : JobPods(job)) {
      if (!p.node.empty()) return false;
    }
    return true;
  }
};

// A queued Job waits suspended, with no Pod bound, while its fleet is full; once the machine is
// free berth admits it, the Job controller makes its Pod, which runs on the booked machine to
// completion, and the ticket says Succeeded.
TEST_F(JobsTest, QueuedJobWaitsSuspendedThenRunsToSucceeded) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  ShellRun("blocker", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("blocker", "Running", std::chrono::seconds(90))) << Message("blocker");

  QueuedJob("train", "    berth.dev/fleet: " + FleetName("one") + "\n", "echo trained", 8);
  ASSERT_TRUE(Eventually([&] { return Phase("job-train") == "Pending" && StatusInt("job-train", "queuePosition") == 1; }))
      << Phase("job-train") << ": " << Message("job-train");
  json::Document ticket = RunDoc("job-train");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "kind"})), "Job");
  EXPECT_EQ(json::GetString(json::Find(ticket, {"spec", "workloadRef", "uid"})),
            json::GetString(json::Find(JobDoc("train"), {"metadata", "uid"})));
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec"}), "nodes"), 1);
  EXPECT_EQ(json::GetInt(*json::Find(ticket, {"spec", "resources"}), "gpu"), 8);
  EXPECT_TRUE(Suspended("train"));
  EXPECT_TRUE(NoPodBound("train"));
  // kubectl berth queue: the ticket's KIND is the Job it stands for; -o json carries kind and workload.
  CommandResult q = Berth({"queue"});
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("KIND"), std::string::npos) << q.out;
  EXPECT_TRUE(std::regex_search(q.out, std::regex("\n1 +job-train +Job/train +- +50 "))) << q.out;
  CommandResult qj = Berth({"queue", "-o", "json"});
  ASSERT_EQ(qj.exit_code, 0) << qj.err;
  auto items = json::Parse(qj.out);
  ASSERT_TRUE(items.ok() && items->IsArray() && items->Size() == 1) << qj.out;
  EXPECT_EQ(json::GetString((*items)[0], "kind"), "Job") << qj.out;
  EXPECT_EQ(json::GetString((*items)[0], "workload"), "train") << qj.out;

  Kubectl({"delete", "run", "blocker", "--wait=false"});
  ASSERT_TRUE(WaitPhase("job-train", "Succeeded", std::chrono::seconds(120))) << Message("job-train");
  // The ticket may be done by the Job's Pods a moment before the Job controller writes Complete.
  EXPECT_TRUE(Eventually([&] { return JobCondition("train", "Complete"); }));
  EXPECT_FALSE(Suspended("train"));
  EXPECT_EQ(PlacementNodes("job-train"), std::vector<std::string>{kNode0});
}

// Issue 44/45: the Job controller deletes a queued Job's Pods with their own grace period, which
// berth cannot shorten, so berth never admits a Job onto a fleet whose maxGracePeriod is shorter.
// A Job with a year of grace waits suspended on a fleet of maxGracePeriod 10m, its ticket Pending
// GracePeriodTooLong saying what to change, while a Job with a short grace runs on the same free
// machine; once the fleet's maxGracePeriod is raised (kubectl patch), it runs.
TEST_F(JobsTest, AJobWhosePodsGraceExceedsTheFleetsMaxGracePeriodWaitsUntilTheFleetAllowsIt) {
  RealFleet("grace", "  blocks: 1\n  maxGracePeriod: 10m\n", kNode0);
  const std::string fleet = "    berth.dev/fleet: " + FleetName("grace") + "\n";
  QueuedJob("year", fleet, "echo ran", 8, {}, 31536000);
  const std::string why = WaitsForGracePeriod("job-year", 31536000, "10m", FleetName("grace"));
  ASSERT_EQ(Reason("job-year"), "GracePeriodTooLong");
  EXPECT_NE(why.find("lower terminationGracePeriodSeconds in its Pod template to at most 600, or raise the fleet's "
                     "spec.maxGracePeriod"),
            std::string::npos)
      << why;
  json::Document ticket = RunDoc("job-year");
  const json::Value* conds = json::Find(ticket, {"status", "conditions"});
  ASSERT_TRUE(conds != nullptr && conds->IsArray());
  bool scheduled_false = false;
  for (const auto& c : conds->GetArray()) {
    scheduled_false |= json::GetString(c, "type") == "Scheduled" && json::GetString(c, "status") == "False" &&
                       json::GetString(c, "reason") == "GracePeriodTooLong";
  }
  EXPECT_TRUE(scheduled_false) << "condition Scheduled=False GracePeriodTooLong";

  // Not a capacity wait: a Job with a short grace period takes the free machine and runs.
  QueuedJob("quick", fleet, "echo quick", 8);
  ASSERT_TRUE(WaitPhase("job-quick", "Succeeded", std::chrono::seconds(120))) << Message("job-quick");
  EXPECT_EQ(PlacementNodes("job-quick"), std::vector<std::string>{kNode0});
  EXPECT_EQ(Reason("job-year"), "GracePeriodTooLong") << Message("job-year");
  EXPECT_TRUE(Suspended("year"));
  EXPECT_TRUE(NoPodBound("year"));

  // The fleet's owner allows a year: the Job runs at once.
  CommandResult p = Kubectl({"patch", "fleet", FleetName("grace"), "--type", "merge", "-p", R"({"spec":{"maxGracePeriod":"8760h"}})"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  ASSERT_TRUE(WaitPhase("job-year", "Succeeded", std::chrono::seconds(120))) << Reason("job-year") << ": " << Message("job-year");
  EXPECT_EQ(PlacementNodes("job-year"), std::vector<std::string>{kNode0});
  EXPECT_TRUE(Eventually([&] { return JobCondition("year", "Complete"); }));
}

// Changing the priority label re-orders the queue at once: the ticket follows the label.
TEST_F(JobsTest, PriorityLabelReordersTheQueue) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  ShellRun("blocker", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("blocker", "Running", std::chrono::seconds(90))) << Message("blocker");
  QueuedJob("first", "    berth.dev/fleet: " + FleetName("one") + "\n", "true", 8);
  ASSERT_TRUE(Eventually([&] { return StatusInt("job-first", "queuePosition") == 1; })) << Message("job-first");
  QueuedJob("second", "    berth.dev/fleet: " + FleetName("one") + "\n", "true", 8);
  ASSERT_TRUE(Eventually([&] { return PositionsAre({"job-first", "job-second"}); })) << Message("job-second");

  // kubectl berth priority job/NAME writes the Job's label and waits for the ticket's new place.
  CommandResult r = Berth({"priority", "job/second", "90"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("job/second label berth.dev/priority=90"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run/job-second: position 1 in the queue"), std::string::npos) << r.out;
  EXPECT_EQ(json::GetString(json::Find(JobDoc("second"), {"metadata", "labels", "berth.dev/priority"})), "90");
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"job-second", "job-first"}); })) << Message("job-second");
  // The label itself works as well (kubectl label), back down.
  CommandResult down = Kubectl({"label", "job", "second", "berth.dev/priority=5", "--overwrite"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"job-first", "job-second"}); })) << Message("job-second");
  EXPECT_EQ(json::GetInt(*json::Find(RunDoc("job-second"), {"spec"}), "priority"), 5);
  // A value berth cannot read is refused at admission, naming the label.
  CommandResult bad = Kubectl({"label", "job", "second", "berth.dev/priority=high", "--overwrite"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("label berth.dev/priority must be a whole number from 0 to 100"), std::string::npos) << bad.err;
}

// The shortcut test: an Indexed Job of 2 Pods, both of which would fit on one machine, is one
// gang on two booked machines, and each Pod lands on its own booked machine.
TEST_F(JobsTest, IndexedJobOfTwoPodsEachOnItsOwnBookedNode) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  QueuedJob("pair", "    berth.dev/fleet: " + FleetName("both") + "\n", "echo rank $JOB_COMPLETION_INDEX; sleep 2", 1,
            "  parallelism: 2\n  completions: 2\n  completionMode: Indexed\n");
  ASSERT_TRUE(WaitPhase("job-pair", "Succeeded", std::chrono::seconds(120))) << Message("job-pair");
  std::vector<std::string> booked = PlacementNodes("job-pair");
  ASSERT_EQ(std::set<std::string>(booked.begin(), booked.end()), (std::set<std::string>{kNode0, kNode1}));
  std::map<std::string, std::string> by_rank;  // rank -> the node its Pod ran on
  for (const auto& [name, p] : JobPods("pair")) {
    if (p.phase == "Succeeded") by_rank[p.rank] = p.node;
  }
  ASSERT_EQ(by_rank.size(), 2u);
  json::Document ticket = RunDoc("job-pair");
  for (const auto& e : json::Find(ticket, {"status", "placement"})->GetArray()) {
    EXPECT_EQ(by_rank[std::to_string(json::GetInt(e, "rank"))], json::GetString(e, "node")) << "rank " << json::GetInt(e, "rank");
  }
  EXPECT_TRUE(Eventually([&] { return JobCondition("pair", "Complete"); }));
}

// A Job preempted by a Run of higher priority is suspended (its Pod stops), its ticket goes back
// to the queue, and it is admitted again on a fresh placement when the machine is free.
TEST_F(JobsTest, PreemptedJobIsSuspendedRequeuedAndReadmitted) {
  RealFleet("pre", "  blocks: 1\n  preemption: {policy: LowerPriority, minRuntime: 0s}\n", kNode0);
  QueuedJob("low", "    berth.dev/fleet: " + FleetName("pre") + "\n    berth.dev/priority: \"10\"\n", "sleep 3600", 8);
  ASSERT_TRUE(WaitPhase("job-low", "Running", std::chrono::seconds(90))) << Message("job-low");
  ShellRun("high", "  priority: 90\n  resources: {gpu: 8}\n  fleets: [" + FleetName("pre") +
                       "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("high", "Running", std::chrono::seconds(90))) << Message("high");
  EXPECT_EQ(Phase("job-low"), "Pending");
  EXPECT_EQ(Reason("job-low"), "Preempted") << Message("job-low");
  EXPECT_TRUE(Eventually([&] { return Suspended("low"); })) << "the preempted Job was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobPods("low").empty(); }, std::chrono::seconds(60)));

  Kubectl({"delete", "run", "high", "--wait=false"});
  ASSERT_TRUE(WaitPhase("job-low", "Running", std::chrono::seconds(120))) << Message("job-low");
  EXPECT_FALSE(Suspended("low"));
  EXPECT_EQ(StatusInt("job-low", "resubmissions"), 1);
}

// A Job whose Pods each ask for a whole machine's GPUs (an Indexed Job of 2 Pods of 8 GPUs: a gang
// of whole slices) preempts like the 2-node Run of its shape: the lower-priority Job holding both
// machines is preempted whole (suspended, its Pods gone, its ticket back in the queue), and each Pod
// of the preemptor runs on its own booked machine. Before, such a ticket waited for room for ever.
TEST_F(JobsTest, WholeMachineIndexedJobPreemptsALowerPriorityJobHoldingTheMachines) {
  RealFleet("gang", "  placement: cluster\n  topologyKey: zone\n  preemption: {policy: LowerPriority, minRuntime: 0s}\n");
  const std::string indexed = "  parallelism: 2\n  completions: 2\n  completionMode: Indexed\n";
  QueuedJob("low", "    berth.dev/fleet: " + FleetName("gang") + "\n    berth.dev/priority: \"10\"\n", "sleep 3600", 8, indexed);
  ASSERT_TRUE(WaitPhase("job-low", "Running", std::chrono::seconds(90))) << Message("job-low");
  std::vector<std::string> held = PlacementNodes("job-low");
  ASSERT_EQ(std::set<std::string>(held.begin(), held.end()), (std::set<std::string>{kNode0, kNode1}));

  QueuedJob("high", "    berth.dev/fleet: " + FleetName("gang") + "\n    berth.dev/priority: \"90\"\n", "sleep 3600", 8, indexed);
  ASSERT_TRUE(WaitPhase("job-high", "Running", std::chrono::seconds(120))) << Message("job-high");
  EXPECT_TRUE(Eventually([&] {
    return EventMessages("job-high", "Preempting").find("preempting " + ns_ + "/job-low on fleet " + FleetName("gang")) != std::string::npos;
  })) << EventMessages("job-high", "Preempting");
  // The victim: preempted whole, suspended, its Pods gone, its ticket back in the queue.
  EXPECT_EQ(Phase("job-low"), "Pending") << Message("job-low");
  EXPECT_EQ(Reason("job-low"), "Preempted") << Message("job-low");
  EXPECT_TRUE(Eventually([&] { return Suspended("low"); })) << "the preempted Job was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobPods("low").empty(); }, std::chrono::seconds(60)));
  EXPECT_TRUE(Eventually([&] {
    return EventMessages("job-low", "Retrying").find("preempted by " + ns_ + "/job-high (priority 90)") != std::string::npos;
  })) << EventMessages("job-low", "Retrying");
  // The preemptor: both machines, each Pod running on its rank's booked machine.
  std::vector<std::string> booked = PlacementNodes("job-high");
  ASSERT_EQ(std::set<std::string>(booked.begin(), booked.end()), (std::set<std::string>{kNode0, kNode1}));
  std::map<std::string, std::string> by_rank;  // rank -> the node its running Pod is on
  ASSERT_TRUE(Eventually([&] {
    by_rank.clear();
    for (const auto& [name, p] : JobPods("high")) {
      if (p.phase == "Running" && !p.deleting) by_rank[p.rank] = p.node;
    }
    return by_rank.size() == 2;
  })) << "the preemptor's two Pods are not both running";
  json::Document ticket = RunDoc("job-high");
  for (const auto& e : json::Find(ticket, {"status", "placement"})->GetArray()) {
    EXPECT_EQ(by_rank[std::to_string(json::GetInt(e, "rank"))], json::GetString(e, "node")) << "rank " << json::GetInt(e, "rank");
  }
  EXPECT_FALSE(Suspended("high"));
}

// The reclaim of such a gang (issue 31's teams): team owner has both machines (16 GPUs) as its
// nominal share and runs nothing; the test's namespace (team borrower, no share) runs two
// whole-machine Jobs of priority 80 on that idle share. The owner's Indexed Job of 2 whole-machine
// Pods (priority 10, within its share) takes both machines back as a 2-node Run would: both
// borrowing Jobs are reclaimed (suspended, their tickets Pending / Reclaimed, back in the queue),
// and each of the owner's Pods runs on its own booked machine. Before, such a ticket waited behind
// the borrowers for ever; and while the borrowers' Pods stopped (deleted by the Job controller) the
// machines looked too small for a moment, the reclaim was dropped and the higher-priority borrowers
// took the machines back first, again and again (a stopping ticket Pod now holds its blocks).
TEST_F(JobsTest, WholeMachineIndexedJobReclaimsItsTeamsShareFromBorrowingJobs) {
  RealFleet("rc", "  placement: cluster\n  topologyKey: zone\n  preemption: {minRuntime: 0s}\n");
  ReclaimTeams("rc");
  for (const std::string job : {"b1", "b2"}) {
    QueuedJob(job, "    berth.dev/fleet: " + FleetName("rc") + "\n    berth.dev/priority: \"80\"\n", "sleep 3600", 8);
    ASSERT_TRUE(WaitPhase("job-" + job, "Running", std::chrono::seconds(90))) << job << ": " << Message("job-" + job);
  }
  const std::string owner = OwnerNamespace();
  struct Cleanup {  // the owner's Job, before the fixture waits for the owner's Pods to go
    std::string ns;
    ~Cleanup() {
      ControlPlane::Get().Kubectl({"-n", ns, "delete", "jobs", "--all", "--wait=false", "--cascade=background"});
    }
  } cleanup{owner};
  CommandResult r = cp().Kubectl(
      {"apply", "-f", "-"},
      "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: mine\n  namespace: " + owner + "\n  labels:\n"
      "    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("rc") + "\n    berth.dev/priority: \"10\"\n"
      "spec:\n  backoffLimit: 0\n  parallelism: 2\n  completions: 2\n  completionMode: Indexed\n  template:\n    spec:\n"
      "      restartPolicy: Never\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
      "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, 'sleep 3600']\n"
      "        resources: {requests: {nvidia.com/gpu: 8}, limits: {nvidia.com/gpu: 8}}\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Eventually([&] { return OwnerPhase("job-mine") == "Running"; }, std::chrono::seconds(120)))
      << OwnerPhase("job-mine");

  // Both borrowing Runs were reclaimed (one machine each), back in the queue.
  EXPECT_EQ(Reclaimed({"job-b1", "job-b2"}), (std::vector<std::string>{"job-b1", "job-b2"}));
  EXPECT_TRUE(Suspended("b1") && Suspended("b2")) << "a reclaimed Job is suspended";
  // The owner's Job: both machines, each Pod running on its rank's booked machine.
  auto ticket = client()->Get(k8s::resources::kRuns.Path(owner, "job-mine"));
  ASSERT_TRUE(ticket.ok());
  std::map<std::string, std::string> booked;  // rank -> node
  for (const auto& e : json::Find(*ticket, {"status", "placement"})->GetArray()) {
    booked[std::to_string(json::GetInt(e, "rank"))] = json::GetString(e, "node");
  }
  ASSERT_EQ(booked.size(), 2u);
  EXPECT_NE(booked["0"], booked["1"]);
  std::map<std::string, std::string> running;  // rank -> the node its running Pod is on
  EXPECT_TRUE(Eventually([&] {
    running.clear();
    k8s::ListOptions o;
    o.label_selector = "batch.kubernetes.io/job-name=mine";
    auto l = client()->List(k8s::resources::kPods.Path(owner), o);
    if (!l.ok()) return false;
    for (const auto& p : l->items) {
      if (json::GetString(json::Find(p, {"status", "phase"})) != "Running") continue;
      running[json::GetString(json::Find(p, {"metadata", "labels", "berth.dev/rank"}))] =
          json::GetString(json::Find(p, {"spec", "nodeName"}));
    }
    return running == booked;
  })) << "the owner's Pods are not running on their booked machines";
}

// kubectl berth stop on the ticket: the Job is suspended, its Pod stops, the ticket ends Stopped.
TEST_F(JobsTest, StopOnTheTicketSuspendsTheJob) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  QueuedJob("long", "    berth.dev/fleet: " + FleetName("one") + "\n", "sleep 3600", 8);
  ASSERT_TRUE(WaitPhase("job-long", "Running", std::chrono::seconds(90))) << Message("job-long");
  CommandResult r = Kubectl({"patch", "run", "job-long", "--type", "merge", "-p", R"({"spec":{"stop":true}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("job-long", "Failed")) << Message("job-long");
  EXPECT_EQ(Reason("job-long"), "Stopped");
  // The ticket's status is written first, then the Job held, then its Pods deleted.
  EXPECT_TRUE(Eventually([&] { return Suspended("long"); })) << "the Job of a stopped ticket was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobPods("long").empty(); }, std::chrono::seconds(60)));
}

// Deleting the Job deletes its ticket and frees its blocks: the run waiting behind it starts.
TEST_F(JobsTest, DeletingTheJobFreesItsBlocks) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  QueuedJob("hog", "    berth.dev/fleet: " + FleetName("one") + "\n", "sleep 3600", 8);
  ASSERT_TRUE(WaitPhase("job-hog", "Running", std::chrono::seconds(90))) << Message("job-hog");
  ShellRun("next", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n",
           "sleep 3600");
  ASSERT_TRUE(Eventually([&] { return Phase("next") == "Pending"; })) << Phase("next");
  Kubectl({"delete", "job", "hog", "--wait=false"});
  EXPECT_TRUE(Eventually([&] { return !client()->Get(k8s::resources::kRuns.Path(ns_, "job-hog")).ok(); },
                         std::chrono::seconds(60)))
      << "the ticket outlived its Job";
  EXPECT_TRUE(WaitPhase("next", "Running", std::chrono::seconds(120))) << Message("next");
}

// A Job created unsuspended with the label is suspended at admission and its Pods are gated.
TEST_F(JobsTest, UnsuspendedJobIsSuspendedAtAdmission) {
  CommandResult r = Kubectl({"create", "-o", "json", "-f", "-"},
                            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: eager, labels: {berth.dev/queue: \"true\", "
                            "berth.dev/fleet: none-" + ns_ + "}}\nspec:\n  suspend: false\n  template:\n    spec:\n"
                            "      restartPolicy: Never\n      containers: [{name: main, image: busybox:1.35, command: [\"true\"]}]\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = json::Parse(r.out);
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE(json::Find(*doc, {"spec", "suspend"})->GetBool());
  const json::Value* gates = json::Find(*doc, {"spec", "template", "spec", "schedulingGates"});
  ASSERT_NE(gates, nullptr);
  ASSERT_TRUE(gates->IsArray());
  EXPECT_EQ(json::GetString((*gates)[0], "name"), "berth.dev/admission");
  ASSERT_TRUE(Eventually([&] { return Phase("job-eager") == "Pending"; })) << Phase("job-eager");
  EXPECT_TRUE(JobPods("eager").empty());
}

// A tenant cannot unsuspend its queued Job, take its label off, or lift the gate of a gated Pod;
// nor create a ticket of its own or change a ticket's spec.
TEST_F(JobsTest, TenantCannotUnsuspendOrRemoveTheGate) {
  GrantTenantNamespaceRights();
  Apply(TenantRole("tenant-jobs", AllVerbsOn("batch", "[jobs]")));
  QueuedJob("mine", "    berth.dev/fleet: none-" + ns_ + "\n", "true", 1);
  ASSERT_TRUE(Eventually([&] { return Phase("job-mine") == "Pending"; })) << Phase("job-mine");

  CommandResult unsuspend = AsTenant({"patch", "job", "mine", "--type", "merge", "-p", R"({"spec":{"suspend":false}})"});
  EXPECT_NE(unsuspend.exit_code, 0);
  EXPECT_NE(unsuspend.err.find("berth unsuspends it when it admits it"), std::string::npos) << unsuspend.err;
  EXPECT_TRUE(Suspended("mine"));
  CommandResult unlabel = AsTenant({"label", "job", "mine", "berth.dev/queue-"});
  EXPECT_NE(unlabel.exit_code, 0);
  EXPECT_NE(unlabel.err.find("cannot be removed from a queued Job"), std::string::npos) << unlabel.err;

  CommandResult ticket = AsTenant({"patch", "run", "job-mine", "--type", "merge", "-p", R"({"spec":{"priority":99}})"});
  EXPECT_NE(ticket.exit_code, 0);
  EXPECT_NE(ticket.err.find("change the Job's label"), std::string::npos) << ticket.err;
  CommandResult forged = AsTenant({"create", "-f", "-"},
                                   "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: forged}\nspec:\n"
                                   "  workloadRef: {apiVersion: batch/v1, kind: Job, name: x, uid: x}\n");
  EXPECT_NE(forged.exit_code, 0);
  EXPECT_NE(forged.err.find("is a ticket berth keeps for a workload"), std::string::npos) << forged.err;

  // A gated Pod (as the Job controller makes them): the tenant cannot lift the gate.
  Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: gated}\nspec:\n  schedulingGates: [{name: berth.dev/admission}]\n"
        "  containers: [{name: main, image: busybox:1.35}]\n");
  CommandResult lift = AsTenant({"patch", "pod", "gated", "--type", "json", "-p", R"([{"op":"remove","path":"/spec/schedulingGates"}])"});
  EXPECT_NE(lift.exit_code, 0);
  EXPECT_NE(lift.err.find("only berth removes it"), std::string::npos) << lift.err;
  Kubectl({"delete", "pod", "gated", "--wait=false"});
}

// Annotation berth.dev/max-duration: past it the Job is suspended, its Pod stopped, and the
// ticket ends MaxDurationExceeded.
TEST_F(JobsTest, MaxDurationAnnotationEndsTheTicketAndSuspendsTheJob) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  Apply("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: slow\n  labels: {berth.dev/queue: \"true\", berth.dev/fleet: " +
        FleetName("one") + "}\n  annotations: {berth.dev/max-duration: 3s}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n"
        "      restartPolicy: Never\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
        "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sleep, \"3600\"]\n");
  ASSERT_TRUE(WaitPhase("job-slow", "Running", std::chrono::seconds(90))) << Message("job-slow");
  ASSERT_TRUE(WaitPhase("job-slow", "Failed", std::chrono::seconds(60))) << Message("job-slow");
  EXPECT_EQ(Reason("job-slow"), "MaxDurationExceeded");
  EXPECT_TRUE(Eventually([&] { return Suspended("slow"); })) << "the Job past its max-duration was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobPods("slow").empty(); }, std::chrono::seconds(60)));
}

// A namespace labelled berth.dev/queue-all queues every Job created in it, label or not.
TEST_F(JobsTest, QueueAllNamespaceQueuesAJobWithoutTheLabel) {
  CommandResult l = cp().Kubectl({"label", "namespace", ns_, "berth.dev/queue-all=true"});
  ASSERT_EQ(l.exit_code, 0) << l.err;
  // The admission policy reads the namespace's labels from its own cache: retried (dry run) until it does.
  const std::string job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: unlabelled}\nspec:\n  template:\n    spec:\n"
                          "      restartPolicy: Never\n      containers: [{name: main, image: busybox:1.35, command: [\"true\"]}]\n";
  ASSERT_TRUE(Eventually([&] {
    CommandResult r = Kubectl({"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.suspend}"}, job);
    return r.exit_code == 0 && r.out == "true";
  })) << "a Job in a queue-all namespace was not held at admission";
  Apply(job);
  EXPECT_TRUE(Suspended("unlabelled"));
  ASSERT_TRUE(Eventually([&] { return !Phase("job-unlabelled").empty(); })) << "no ticket for a Job of a queue-all namespace";
  EXPECT_EQ(json::GetString(json::Find(RunDoc("job-unlabelled"), {"spec", "workloadRef", "name"})), "unlabelled");
}

// Reclaim of a Job (issue 45 (4), issue 31): team "owner" has both machines (16 GPUs) as its
// nominal share and runs nothing; team "borrower" (the test's namespace, no share) runs two
// whole-machine Jobs on that idle share. The owner's Run (lower priority) takes one machine back:
// one borrowing Job is suspended, its Pod deleted, its ticket Pending/Reclaimed (back in the
// queue); once the owner's Run is gone its ticket is placed again, the Job released, and its new
// Pod runs to completion (a Pod of the Job's first attempt sleeps; one of a later attempt exits 0,
// told apart by a marker file on the machine). backoffLimit 0: berth only suspends the Job and the
// Job controller deletes the reclaimed Pod itself, which it counts as no failure (status.failed
// stays 0); a Pod berth deleted would have failed the Job (docs/concepts.md, Jobs: "Stopped").
TEST_F(JobsTest, ReclaimedJobIsSuspendedRequeuedAndCompletesWhenReadmitted) {
  RealFleet("rc", "  blocks: 1\n  preemption: {minRuntime: 0s}\n");
  ReclaimTeams("rc");
  const std::string marks = Marks();
  for (const std::string job : {"b1", "b2"}) {
    Apply("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + job + "\n  labels: {berth.dev/queue: \"true\", berth.dev/fleet: " +
          FleetName("rc") + ", berth.dev/priority: \"80\"}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n"
          "      restartPolicy: Never\n      terminationGracePeriodSeconds: 1\n"
          "      volumes: [{name: marks, hostPath: {path: " + marks + ", type: DirectoryOrCreate}}]\n"
          "      containers:\n      - name: main\n        image: " + std::string(RealNodes::kBusybox) + "\n"
          "        volumeMounts: [{name: marks, mountPath: /marks}]\n"
          "        command: [sh, -c, 'if [ -e /marks/" + job + " ]; then echo again; exit 0; fi; touch /marks/" + job +
          "; sleep 3600']\n        resources: {requests: {nvidia.com/gpu: 8}, limits: {nvidia.com/gpu: 8}}\n");
    ASSERT_TRUE(WaitPhase("job-" + job, "Running", std::chrono::seconds(90))) << job << ": " << Message("job-" + job);
  }
  OwnerRun("mine");
  ASSERT_TRUE(Eventually([&] { return OwnerPhase("mine") == "Running"; }, std::chrono::seconds(90))) << OwnerPhase("mine");

  // Exactly one borrowing Job was reclaimed (Pending / Reclaimed, an Event Retrying naming the
  // owner's team): suspended, its Pod gone, no failure counted; the other runs on, not suspended.
  const std::vector<std::string> reclaimed = Reclaimed({"job-b1", "job-b2"});
  ASSERT_EQ(reclaimed.size(), 1u);
  const std::string ticket = reclaimed.front(), job = ticket.substr(std::string("job-").size());
  EXPECT_TRUE(Eventually([&] { return Suspended(job); })) << "the reclaimed Job " << job << " was not suspended";
  EXPECT_TRUE(Eventually([&] { return JobPods(job).empty(); }, std::chrono::seconds(60))) << job << "'s Pod is still there";
  EXPECT_EQ(JobStatusInt(job, "failed"), 0) << "the Job controller counted the reclaimed Pod as a failure";
  EXPECT_FALSE(JobCondition(job, "Failed"));
  EXPECT_FALSE(Suspended(job == "b1" ? "b2" : "b1"));
  // The audit log: the Job controller deleted the reclaimed Pod, berth deleted none of the Job's.
  size_t by_job_controller = 0;
  for (const auto& w : AuditedWrites(ns_)) {
    if (w.resource != "pods" || w.verb != "delete" || w.name.rfind(job + "-", 0) != 0) continue;
    EXPECT_EQ(w.agent.rfind("berth-controller/", 0), std::string::npos) << "berth deleted Pod " << w.name << " of Job " << job;
    by_job_controller += w.agent.find("job-controller") != std::string::npos ? 1 : 0;
  }
  EXPECT_GE(by_job_controller, 1u) << "no delete of the reclaimed Pod by the Job controller in the audit log";

  // Capacity frees: the ticket is placed again, the Job released, and its new Pod completes it.
  ASSERT_EQ(cp().Kubectl({"-n", OwnerNamespace(), "delete", "run", "mine", "--wait=false"}).exit_code, 0);
  ASSERT_TRUE(WaitPhase(ticket, "Succeeded", std::chrono::seconds(120))) << Message(ticket);
  EXPECT_EQ(StatusInt(ticket, "resubmissions"), 1);
  EXPECT_TRUE(Eventually([&] { return JobCondition(job, "Complete"); }));
  EXPECT_EQ(JobStatusInt(job, "failed"), 0);
  EXPECT_FALSE(Suspended(job));
  const std::vector<std::string> placed = PlacementNodes(ticket);
  ASSERT_EQ(placed.size(), 1u);
  std::map<std::string, PodRow> pods = JobPods(job);
  ASSERT_EQ(pods.size(), 1u) << "the Pod of the first attempt is gone, the second's stays";
  EXPECT_EQ(pods.begin()->second.phase, "Succeeded");
  EXPECT_EQ(pods.begin()->second.node, placed.front()) << "the new Pod ran on the fresh placement";
}

// Issue 45 (2): no Pod of an unadmitted workload is ever bound to a node, shown from the API
// server's audit log. Five Pods of four queued Jobs, all created at once and unsuspended, wait for
// two 8-GPU machines and run through. Then, in the audit log: every Pod the Job controller created
// was created gated and without a node; no Pod write set spec.nodeName; and every binding of a
// Pod of a queued Job came after the status write that placed its ticket (the first with a
// placement). Without the chart's hold at creation (MutatingAdmissionPolicy, or the 1.35 webhook)
// the Job controller's Pods would be bound before berth placed their tickets.
TEST_F(JobsTest, AuditLogShowsNoPodOfAQueuedJobBoundBeforeItsTicketWasPlaced) {
  RealFleet("both", "  placement: cluster\n  topologyKey: zone\n");
  const std::map<std::string, int> pods_of = {{"a", 1}, {"b", 1}, {"c", 1}, {"pair", 2}};
  std::string manifest;
  for (const auto& [job, pods] : pods_of) {
    manifest += "---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + job +
                "\n  labels: {berth.dev/queue: \"true\", berth.dev/fleet: " + FleetName("both") +
                "}\nspec:\n  suspend: false\n  backoffLimit: 0\n  parallelism: " + std::to_string(pods) +
                "\n  completions: " + std::to_string(pods) + "\n  completionMode: Indexed\n  template:\n    spec:\n"
                "      restartPolicy: Never\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: main\n"
                "        image: " + std::string(RealNodes::kBusybox) + "\n        command: [sh, -c, \"sleep 2\"]\n"
                "        resources: {requests: {nvidia.com/gpu: 8}, limits: {nvidia.com/gpu: 8}}\n";
  }
  Apply(manifest);
  for (const auto& [job, pods] : pods_of) {
    ASSERT_TRUE(WaitPhase("job-" + job, "Succeeded", std::chrono::seconds(180))) << job << ": " << Message("job-" + job);
  }

  // The Pods that ran, by name: their Job.
  std::map<std::string, std::string> job_of;
  for (const auto& [job, pods] : pods_of) {
    for (const auto& [name, p] : JobPods(job)) {
      if (!p.node.empty()) job_of[name] = job;
    }
  }
  ASSERT_EQ(job_of.size(), 5u);

  const std::vector<AuditedWrite> writes = AuditedWrites(ns_);
  std::map<std::string, std::string> placed_at;  // ticket -> its first status write with a placement
  for (const auto& w : writes) {
    if (w.resource != "runs" || w.subresource != "status" || w.code < 200 || w.code >= 300 || !w.body.IsObject()) continue;
    const json::Value* placement = json::Find(w.body, {"status", "placement"});
    if (placement == nullptr || !placement->IsArray() || placement->Empty()) continue;
    if (!placed_at.count(w.name) || w.at < placed_at[w.name]) placed_at[w.name] = w.at;
  }
  // The Job of each Pod created (a create is audited before the Pod has its name: by the
  // generateName it was made with, "<job>-<index>-", to which the API server adds 5 characters).
  std::map<std::string, std::string> job_of_prefix;
  std::set<std::string> bound;
  for (const auto& w : writes) {
    if (w.resource != "pods" || w.code < 200 || w.code >= 300) continue;
    if (w.subresource != "binding" && !w.subresource.empty()) continue;  // status: the kubelet's
    if (w.verb != "create" && w.verb != "update" && w.verb != "patch") continue;  // deletes set no node
    ASSERT_TRUE(w.body.IsObject()) << "the audit log has no body of a Pod write: " << w.verb << " " << w.name;
    if (w.subresource == "binding") {
      const std::string pod = w.name;
      const std::string prefix = pod.size() > 5 ? pod.substr(0, pod.size() - 5) : "";
      ASSERT_EQ(job_of_prefix.count(prefix), 1u) << "a binding of Pod " << pod << ", which no Job created";
      const std::string ticket = "job-" + job_of_prefix[prefix];
      const std::string node = json::GetString(json::Find(w.body, {"target", "name"}));
      EXPECT_TRUE(placed_at.count(ticket) && placed_at[ticket] < w.at)
          << pod << " was bound to " << node << " at " << w.at << ", before its ticket " << ticket << " was placed ("
          << (placed_at.count(ticket) ? "at " + placed_at[ticket] : std::string("never")) << ")";
      bound.insert(pod);
      continue;
    }
    EXPECT_EQ(json::Find(w.body, {"spec", "nodeName"}), nullptr)
        << w.user << " " << w.verb << " of Pod " << w.name << " at " << w.at << " sets spec.nodeName";
    if (w.verb != "create") continue;
    const std::string generate_name = json::GetString(json::Find(w.body, {"metadata", "generateName"}));
    job_of_prefix[generate_name] = json::GetString(json::Find(w.body, {"metadata", "labels", "batch.kubernetes.io/job-name"}));
    bool gated = false;
    if (const json::Value* gates = json::Find(w.body, {"spec", "schedulingGates"}); gates != nullptr && gates->IsArray()) {
      for (const auto& g : gates->GetArray()) gated = gated || json::GetString(g, "name") == "berth.dev/admission";
    }
    EXPECT_TRUE(gated) << "Pod " << generate_name << "... was created at " << w.at << " without the gate berth.dev/admission";
  }
  // Not vacuous: every Pod that ran was bound (by kube-scheduler) in the log read.
  for (const auto& ran : job_of) EXPECT_EQ(bound.count(ran.first), 1u) << "no binding of " << ran.first << " in the audit log";
}

// Issue 45 (4): a Job that ends while its ticket waits in the queue ends the ticket too, as a placed
// ticket's Job does: Failed with the Job's reason, Succeeded when it completed; neither keeps its
// place (or a reservation) in the queue, and the Job behind them is admitted when the machine is
// free. The Jobs here are managed by another controller (spec.managedBy, as MultiKueue's Jobs
// are: the Job controller leaves them alone), which ends them by writing their status.
TEST_F(JobsTest, PendingTicketEndsWhenItsJobEndsOutsideTheQueue) {
  RealFleet("one", "  blocks: 1\n", kNode0);
  ShellRun("blocker", "  resources: {gpu: 8}\n  fleets: [" + FleetName("one") + "]\n", "sleep 3600");
  ASSERT_TRUE(WaitPhase("blocker", "Running", std::chrono::seconds(90))) << Message("blocker");
  const std::string fleet = "    berth.dev/fleet: " + FleetName("one") + "\n";
  QueuedJob("failing", fleet + "    berth.dev/priority: \"90\"\n", "true", 8, "  managedBy: example.com/elsewhere\n");
  QueuedJob("completing", fleet + "    berth.dev/priority: \"80\"\n", "true", 8, "  managedBy: example.com/elsewhere\n");
  QueuedJob("after", fleet, "echo after", 8);
  ASSERT_TRUE(Eventually([&] { return PositionsAre({"job-failing", "job-completing", "job-after"}); }))
      << Message("job-failing") << " / " << Message("job-completing") << " / " << Message("job-after");

  // Their controller ends them, as the Job controller would: the interim condition, then the final one.
  const std::string at = "\"2026-01-01T00:00:00Z\"";
  auto condition = [&](const std::string& type, const std::string& reason, const std::string& message) {
    return R"({"type":")" + type + R"(","status":"True","reason":")" + reason + R"(","message":")" + message +
           R"(","lastTransitionTime":)" + at + "}";
  };
  CommandResult failed = Kubectl(
      {"patch", "job", "failing", "--subresource=status", "--type=merge", "-p",
       R"({"status":{"startTime":)" + at + R"(,"failed":1,"conditions":[)" +
           condition("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit") + "," +
           condition("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit") + "]}}"});
  ASSERT_EQ(failed.exit_code, 0) << failed.err;
  CommandResult completed = Kubectl(
      {"patch", "job", "completing", "--subresource=status", "--type=merge", "-p",
       R"({"status":{"startTime":)" + at + R"(,"completionTime":)" + at + R"(,"succeeded":1,"conditions":[)" +
           condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods") + "," +
           condition("Complete", "CompletionsReached", "Reached expected number of succeeded pods") + "]}}"});
  ASSERT_EQ(completed.exit_code, 0) << completed.err;

  ASSERT_TRUE(WaitPhase("job-failing", "Failed", std::chrono::seconds(60))) << Message("job-failing");
  EXPECT_EQ(Reason("job-failing"), "BackoffLimitExceeded");
  EXPECT_NE(Message("job-failing").find("the Job failed: Job has reached the specified backoff limit"), std::string::npos)
      << Message("job-failing");
  ASSERT_TRUE(WaitPhase("job-completing", "Succeeded", std::chrono::seconds(60))) << Message("job-completing");
  EXPECT_NE(Message("job-completing").find("the Job completed"), std::string::npos) << Message("job-completing");
  EXPECT_TRUE(Eventually([&] { return PositionsAre({"job-after"}); })) << Message("job-after");
  EXPECT_EQ(StatusInt("job-failing", "queuePosition"), -1) << "an ended ticket has no place in the queue";
  EXPECT_EQ(StatusInt("job-completing", "queuePosition"), -1);

  // The machine frees: the Job behind them is the one admitted, and runs to completion.
  Kubectl({"delete", "run", "blocker", "--wait=false"});
  ASSERT_TRUE(WaitPhase("job-after", "Succeeded", std::chrono::seconds(120))) << Message("job-after");
  EXPECT_EQ(PlacementNodes("job-after"), std::vector<std::string>{kNode0});
  EXPECT_TRUE(JobPods("failing").empty());
  EXPECT_TRUE(JobPods("completing").empty());
}

// Issue 45 (4, 6): a ticket's blocks are free once its Job's Pods show it done, before the Job
// controller writes the Job's Complete condition. That write waits (here for as long as the test
// likes) behind the Job controller's count of the Pod: a ValidatingAdmissionPolicy refuses the
// removal of the Pod's completion finalizer (batch.kubernetes.io/job-tracking), without which the
// Job controller counts no success. Meanwhile the first Job's Pod succeeds on the one machine:
// its ticket is Succeeded, and the next queued Job is admitted on that machine and runs to
// completion while the first Job still has no Complete condition (and status.succeeded 0). Then
// the policy goes and the first Job completes too. Without the rule the first ticket would wait
// for the Complete condition (PodsShowJobDone, docs/concepts.md).
TEST_F(JobsTest, BlocksFreeWhenTheJobsPodsShowItDone) {
  const std::string marks = cp().dir() + "/done-" + ns_;  // on the machine: every node sees it
  const std::string policy = "hold-count-" + ns_;
  struct Cleanup {
    std::string policy, marks;
    ~Cleanup() {
      ControlPlane& cp = ControlPlane::Get();
      cp.Kubectl({"delete", "validatingadmissionpolicybinding", policy, "--ignore-not-found"});
      cp.Kubectl({"delete", "validatingadmissionpolicy", policy, "--ignore-not-found"});
      RunCommand({"rm", "-rf", marks});
    }
  } cleanup{policy, marks};
  RealFleet("one", "  blocks: 1\n", kNode0);
  const std::string fleet = FleetName("one");
  Apply("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: first\n  labels: {berth.dev/queue: \"true\", berth.dev/fleet: " +
        fleet + "}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n"
        "      terminationGracePeriodSeconds: 1\n"
        "      volumes: [{name: marks, hostPath: {path: " + marks + ", type: DirectoryOrCreate}}]\n"
        "      containers:\n      - name: main\n        image: " + std::string(RealNodes::kBusybox) + "\n"
        "        volumeMounts: [{name: marks, mountPath: /marks}]\n"
        "        command: [sh, -c, 'until [ -e /marks/go ]; do sleep 0.2; done; echo done']\n"
        "        resources: {requests: {nvidia.com/gpu: 8}, limits: {nvidia.com/gpu: 8}}\n");
  ASSERT_TRUE(WaitPhase("job-first", "Running", std::chrono::seconds(90))) << Message("job-first");
  QueuedJob("second", "    berth.dev/fleet: " + fleet + "\n", "echo second", 8);
  ASSERT_TRUE(Eventually([&] { return StatusInt("job-second", "queuePosition") == 1; })) << Message("job-second");

  // The Job controller may not take the completion finalizer off the first Job's Pods (so it
  // counts no success of them); checked with a dry run of that removal until the policy refuses it.
  Apply("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: " + policy +
        "}\nspec:\n  failurePolicy: Fail\n  matchConstraints:\n    resourceRules:\n"
        "    - {apiGroups: [\"\"], apiVersions: [v1], operations: [UPDATE], resources: [pods]}\n"
        "  validations:\n  - expression: >-\n"
        "      !(has(oldObject.metadata.finalizers) && 'batch.kubernetes.io/job-tracking' in oldObject.metadata.finalizers) ||\n"
        "      (has(object.metadata.finalizers) && 'batch.kubernetes.io/job-tracking' in object.metadata.finalizers) ||\n"
        "      !has(object.metadata.labels) || !('batch.kubernetes.io/job-name' in object.metadata.labels) ||\n"
        "      object.metadata.labels['batch.kubernetes.io/job-name'] != 'first'\n"
        "    message: the test holds the Job controller's count of the Pods of Job first\n---\n"
        "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: " + policy +
        "}\nspec:\n  policyName: " + policy + "\n  validationActions: [Deny]\n  matchResources:\n    namespaceSelector:\n"
        "      matchLabels: {kubernetes.io/metadata.name: " + ns_ + "}\n");
  std::map<std::string, PodRow> first = JobPods("first");
  ASSERT_EQ(first.size(), 1u);
  const std::string pod = first.begin()->first;
  ASSERT_TRUE(Eventually([&] {
    CommandResult r = Kubectl({"patch", "pod", pod, "--dry-run=server", "--type=json", "-p",
                               R"([{"op":"remove","path":"/metadata/finalizers"}])"});
    return r.exit_code != 0 && r.err.find("holds the Job controller's count") != std::string::npos;
  }, std::chrono::seconds(60))) << "the policy never refused the removal of the completion finalizer";

  // The first Job's Pod ends: its ticket is done by its Pods, and the second Job runs on the machine.
  CommandResult go = RunCommand({"touch", marks + "/go"});
  ASSERT_EQ(go.exit_code, 0) << go.err;
  ASSERT_TRUE(WaitPhase("job-first", "Succeeded", std::chrono::seconds(60))) << Message("job-first");
  EXPECT_NE(Message("job-first").find("Pods show it done (1 succeeded, completions 1)"), std::string::npos)
      << Message("job-first");
  ASSERT_TRUE(WaitPhase("job-second", "Succeeded", std::chrono::seconds(120))) << Message("job-second");
  EXPECT_EQ(PlacementNodes("job-second"), std::vector<std::string>{kNode0});
  EXPECT_TRUE(Eventually([&] { return JobCondition("second", "Complete"); }));
  EXPECT_EQ(JobPods("first").begin()->second.phase, "Succeeded");
  EXPECT_FALSE(JobCondition("first", "Complete")) << "the Job controller could not count the Pod: no Complete yet";
  EXPECT_EQ(JobStatusInt("first", "succeeded"), 0);

  // The policy goes: the Job controller counts the Pod and the first Job completes as well.
  Kubectl({"delete", "validatingadmissionpolicybinding", policy});
  Kubectl({"delete", "validatingadmissionpolicy", policy});
  EXPECT_TRUE(Eventually([&] { return JobCondition("first", "Complete"); }, std::chrono::seconds(90)))
      << "the first Job never completed once its Pod could be counted";
  EXPECT_EQ(Phase("job-first"), "Succeeded");
}

// A namespace's ResourceQuota counts a running Job's Pod once: berth charges a placed ticket to
// the quota only until the Job's Pods exist (the API server counts them in status.used from then
// on; the ResourceQuota controller keeps it). With a quota of 16 GPUs two 8-GPU Jobs run at once
// on the two machines, and a third waits for the quota with the true numbers: 16 of 16.
TEST_F(JobsTest, TwoJobsRunAtOnceWithinAQuotaOfTheirSumAndAThirdWaitsForIt) {
  RealFleet("whole", "  blocks: 1\n");
  Apply("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpus}\nspec:\n  hard: {requests.nvidia.com/gpu: \"16\"}\n");
  auto quota = [&](const char* field) {
    auto q = client()->Get("/api/v1/namespaces/" + ns_ + "/resourcequotas/gpus");
    return q.ok() ? json::GetString(json::Find(*q, {"status", field, "requests.nvidia.com/gpu"})) : std::string();
  };
  // The quota controller has taken the quota up (status.hard): the API server counts Pods from now on.
  ASSERT_TRUE(Eventually([&] { return quota("hard") == "16" && quota("used") == "0"; }))
      << quota("hard") << " " << quota("used");
  const std::string fleet = "    berth.dev/fleet: " + FleetName("whole") + "\n";
  QueuedJob("q1", fleet, "sleep 3600", 8);
  ASSERT_TRUE(WaitPhase("job-q1", "Running", std::chrono::seconds(90))) << Message("job-q1");
  // q1's Pod is in the quota's usage before q2 comes.
  ASSERT_TRUE(Eventually([&] { return quota("used") == "8"; })) << quota("used");

  QueuedJob("q2", fleet, "sleep 3600", 8);
  ASSERT_TRUE(WaitPhase("job-q2", "Running", std::chrono::seconds(90))) << Reason("job-q2") << ": " << Message("job-q2");
  EXPECT_EQ(Phase("job-q1"), "Running");
  std::set<std::string> nodes;
  for (const char* job : {"q1", "q2"}) {
    for (const auto& [name, p] : JobPods(job)) {
      if (p.phase == "Running") nodes.insert(p.node);
    }
  }
  EXPECT_EQ(nodes, (std::set<std::string>{kNode0, kNode1}));
  ASSERT_TRUE(Eventually([&] { return quota("used") == "16"; })) << quota("used");

  QueuedJob("q3", fleet, "sleep 3600", 8);
  ASSERT_TRUE(Eventually([&] { return Reason("job-q3") == "QuotaExceeded"; })) << Reason("job-q3") << ": " << Message("job-q3");
  EXPECT_EQ(Phase("job-q3"), "Pending");
  EXPECT_NE(Message("job-q3").find("needs 8 GPUs; namespace " + ns_ + " uses 16 of 16 GPUs"), std::string::npos)
      << Message("job-q3");
  EXPECT_TRUE(Suspended("q3"));
}

// A stopped Job's Pod that takes its grace to stop still holds its machine, and its blocks count
// for its namespace's Team as a Run's stopping Pod's do (docs/reliability.md): the Team's
// status.fleets[].used shows its 8 GPUs while the Pod stops (its grace: 40 s), then 0.
TEST_F(JobsTest, AStoppedJobsStoppingPodCountsForItsTeamUntilItIsGone) {
  const std::string team = "stop-" + ns_;
  struct Cleanup {  // the cluster-scoped Team
    std::string team;
    ~Cleanup() { ControlPlane::Get().Kubectl({"delete", "team", team, "--ignore-not-found", "--wait=false"}); }
  } cleanup{team};
  RealFleet("one", "  blocks: 1\n", kNode0);
  CommandResult r = Kubectl({"apply", "-f", "-"},
                            "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team + "}\nspec:\n  namespaces: [" +
                                ns_ + "]\n  shares:\n  - fleet: " + FleetName("one") + "\n    nominal: {gpu: 8}\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto used_gpus = [&]() -> std::string {
    auto t = client()->Get(k8s::resources::kTeams.Path("", team));
    const json::Value* fleets = t.ok() ? json::Find(*t, {"status", "fleets"}) : nullptr;
    if (fleets == nullptr || !fleets->IsArray()) return "no status";
    for (const auto& f : fleets->GetArray()) {
      if (json::GetString(f, "fleet") != FleetName("one")) continue;
      const json::Value* used = json::Find(f, {"used"});
      return used != nullptr && used->IsObject() ? std::to_string(json::GetInt(*used, "gpu")) : "0";
    }
    return "no fleet";
  };
  // Its container (PID 1, no handler) does not stop on SIGTERM: it stops when its grace ends.
  Apply("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: slow\n  labels: {berth.dev/queue: \"true\", berth.dev/fleet: " +
        FleetName("one") + "}\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n"
        "      terminationGracePeriodSeconds: 40\n      containers:\n      - name: main\n        image: " +
        std::string(RealNodes::kBusybox) + "\n        command: [sleep, \"3600\"]\n"
        "        resources: {requests: {nvidia.com/gpu: 8}, limits: {nvidia.com/gpu: 8}}\n");
  ASSERT_TRUE(WaitPhase("job-slow", "Running", std::chrono::seconds(90))) << Message("job-slow");
  ASSERT_TRUE(Eventually([&] { return used_gpus() == "8"; }, std::chrono::seconds(90))) << used_gpus();

  r = Kubectl({"patch", "run", "job-slow", "--type", "merge", "-p", R"({"spec":{"stop":true}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(WaitPhase("job-slow", "Failed")) << Message("job-slow");
  auto stopping = [&] {
    auto pods = JobPods("slow");
    return pods.size() == 1 && pods.begin()->second.deleting && pods.begin()->second.phase == "Running";
  };
  ASSERT_TRUE(Eventually(stopping, std::chrono::seconds(30))) << "the stopped Job's Pod is not stopping";
  // The ticket has ended: only the stopping Pod can make the Team's use 8 GPUs now.
  EXPECT_TRUE(Eventually([&] { return used_gpus() == "8" && stopping(); }, std::chrono::seconds(30))) << used_gpus();
  ASSERT_TRUE(Eventually([&] { return JobPods("slow").empty(); }, std::chrono::seconds(90))) << "the Pod did not stop";
  EXPECT_TRUE(Eventually([&] { return used_gpus() == "0"; }, std::chrono::seconds(90))) << used_gpus();
}

}  // namespace
}  // namespace berth::testing
