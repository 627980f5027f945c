// The rules of an admitted run's life (reconcilers/objects/lifecycle.h), one table row per transition of
// docs/concepts.md, on a fake clock: no API server, no engine.

#include "reconcilers/objects/lifecycle.h"

#include <gtest/gtest.h>

#include "api_literals.h"

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "k8s/timefmt.h"
#include "reconcilers/writers/pod_builder.h"

namespace berth::reconcilers {
namespace {
using namespace testing;  // NOLINT: Kind, Why, TimeAt

using Kind = PlacedDecision::Kind;
using std::chrono::minutes;
using std::chrono::seconds;

const k8s::TimePoint kScheduled = k8s::ParseRfc3339("2026-11-24T10:00:00Z").value();

// A run placed on n1 (rank 0, pod "train-0") and, for two nodes, n2 (rank 1, pod "train-1").
Run Placed(const std::string& phase, int nodes = 1) {
  Run r;
  r.meta.name = "train";
  r.meta.ns = "ml";
  r.spec.nodes = nodes;
  r.status.phase = api::ParsePhase(phase);
  r.status.scheduled_at = Time(kScheduled);
  if (phase == "Running") r.status.started_at = Time(kScheduled + seconds(10));
  for (int i = 0; i < nodes; ++i) {
    r.status.placement.push_back(PlacementEntry{i, "n" + std::to_string(i + 1), 1, "train-" + std::to_string(i)});
  }
  return r;
}

k8s::Pod MakePod(const std::string& name, const std::string& node, const std::string& phase,
                 const std::string& reason = {}, const std::string& message = {}) {
  k8s::Pod p;
  p.meta.name = name;
  p.meta.ns = "ml";
  p.node_name = node;
  p.phase = phase;
  p.reason = reason;
  p.message = message;
  return p;
}

struct Row {
  std::string name{};
  std::function<void(Run&)> run{};                 // changes to the placed run
  std::vector<k8s::Pod> pods{};                    // the current attempt's Pods
  std::map<std::string, std::string> node_problems{};
  std::chrono::milliseconds since_scheduled{minutes(1)};
  std::chrono::milliseconds default_start_timeout{minutes(10)};
  // Expected.
  Kind kind{Kind::kNothing};
  bool interruption{false};
  std::string text{};    // why (kEnd) or message
  std::string reason{};  // kEnd's reason override
  std::string refused_node{};
};

void Check(const Row& row, const std::string& phase, int nodes) {
  Run run = Placed(phase, nodes);
  if (row.run) row.run(run);
  PlacedInput in;
  in.run = &run;
  for (const auto& p : row.pods) in.pods[p.meta.name] = &p;
  in.node_problems = row.node_problems;
  in.default_start_timeout = row.default_start_timeout;
  in.now = kScheduled + row.since_scheduled;
  const PlacedDecision d = DecidePlaced(in);
  EXPECT_EQ(static_cast<int>(d.kind), static_cast<int>(row.kind)) << row.name;
  if (row.kind == Kind::kEnd || row.kind == Kind::kStop) {
    EXPECT_EQ(d.interruption, row.interruption) << row.name;
    EXPECT_EQ(d.why, row.text) << row.name;
    EXPECT_EQ(d.reason, api::ReasonCode::FromApi(row.reason)) << row.name;
    EXPECT_EQ(d.refused_node, row.refused_node) << row.name;
  } else if (!row.text.empty()) {
    EXPECT_EQ(d.message, row.text) << row.name;
  }
}

TEST(LifecycleTest, ScheduledRun) {
  const std::vector<Row> rows = {
      {"Pods not created yet", nullptr, {}, {}, minutes(1), minutes(10), Kind::kCreatePods},
      {"Pod created, not bound yet", nullptr, {MakePod("train-0", "", "Pending")}, {}, minutes(1), minutes(10),
       Kind::kCreatePods},
      {"Pod bound, starting", nullptr, {MakePod("train-0", "n1", "Pending")}, {}, minutes(1), minutes(10), Kind::kNothing},
      {"Pod running: the run is Running", nullptr, {MakePod("train-0", "n1", "Running")}, {}, minutes(1), minutes(10),
       Kind::kStarted, false, "the pod is running"},
      {"Pod done before it was seen running", nullptr, {MakePod("train-0", "n1", "Succeeded")}, {}, minutes(1),
       minutes(10), Kind::kSucceed, false, "the pod succeeded"},
      {"node not ready: interruption", nullptr, {MakePod("train-0", "n1", "Pending")}, {{"n1", "is not ready"}},
       minutes(1), minutes(10), Kind::kEnd, true, "node n1 is not ready"},
      {"node gone: interruption", nullptr, {}, {{"n1", "is gone or no longer in a fleet"}}, minutes(1), minutes(10),
       Kind::kEnd, true, "node n1 is gone or no longer in a fleet"},
      {"kubelet refused the Pod: interruption, the node named", nullptr,
       {MakePod("train-0", "n1", "Failed", "OutOfcpu", "Node didn't have enough resource: cpu")}, {}, minutes(1),
       minutes(10), Kind::kEnd, true,
       "the kubelet on node n1 refused pod train-0: OutOfcpu (Node didn't have enough resource: cpu)", "", "n1"},
      {"image cannot be pulled: shown in the message",
       nullptr,
       {[] {
         k8s::Pod p = MakePod("train-0", "n1", "Pending");
         p.waiting = "ErrImagePull: not found";
         return p;
       }()},
       {}, minutes(1), minutes(10), Kind::kShowWaiting, false, "pod train-0 on node n1 cannot start: ErrImagePull: not found"},
      {"the same message already shown: nothing to write",
       [](reconcilers::Run& r) { r.status.message = "pod train-0 on node n1 cannot start: ErrImagePull: not found"; },
       {[] {
         k8s::Pod p = MakePod("train-0", "n1", "Pending");
         p.waiting = "ErrImagePull: not found";
         return p;
       }()},
       {}, minutes(1), minutes(10), Kind::kNothing},
      {"start timeout (the controller's default) passed", nullptr, {MakePod("train-0", "n1", "Pending")}, {},
       minutes(10), minutes(10), Kind::kEnd, false, "the Pods did not all start within startTimeout 10m", "StartTimeout"},
      {"spec.startTimeout overrides the default", [](reconcilers::Run& r) { r.spec.start_timeout = std::optional<std::chrono::milliseconds>(minutes(2)); },
       {MakePod("train-0", "n1", "Pending")}, {}, minutes(3), minutes(10), Kind::kEnd, false,
       "the Pods did not all start within startTimeout 2m", "StartTimeout"},
      {"spec.startTimeout off: never", [](reconcilers::Run& r) { r.spec.start_timeout = std::optional<std::chrono::milliseconds>(); },
       {MakePod("train-0", "n1", "Pending")}, {}, minutes(600), minutes(10), Kind::kNothing},
      {"default off (0): never", nullptr, {MakePod("train-0", "n1", "Pending")}, {}, minutes(600), minutes(0), Kind::kNothing},
      {"a Pod being deleted before the run runs is not an interruption yet",
       nullptr,
       {[] {
         k8s::Pod p = MakePod("train-0", "n1", "Pending");
         p.meta.deleting = true;
         return p;
       }()},
       {}, minutes(1), minutes(10), Kind::kNothing},
  };
  for (const auto& row : rows) Check(row, "Scheduled", 1);
}

TEST(LifecycleTest, RunningRun) {
  const std::vector<Row> rows = {
      {"running: keep watching", nullptr, {MakePod("train-0", "n1", "Running")}, {}, minutes(5), minutes(10), Kind::kNothing},
      {"Pod succeeded", nullptr, {MakePod("train-0", "n1", "Succeeded")}, {}, minutes(5), minutes(10), Kind::kSucceed,
       false, "the pod succeeded"},
      {"Pod failed: the run's failure", nullptr, {MakePod("train-0", "n1", "Failed", "Error", "exit code 3")}, {},
       minutes(5), minutes(10), Kind::kEnd, false, "pod train-0 failed: exit code 3"},
      {"Pod evicted: interruption", nullptr, {MakePod("train-0", "n1", "Failed", "Evicted", "low on memory")}, {},
       minutes(5), minutes(10), Kind::kEnd, true, "pod train-0 was evicted: low on memory"},
      {"node shut down: interruption", nullptr, {MakePod("train-0", "n1", "Failed", "Shutdown")}, {}, minutes(5),
       minutes(10), Kind::kEnd, true, "pod train-0 was evicted"},
      {"Pod deleted: interruption", nullptr, {}, {}, minutes(5), minutes(10), Kind::kEnd, true, "pod train-0 was deleted"},
      {"Pod being deleted: interruption",
       nullptr,
       {[] {
         k8s::Pod p = MakePod("train-0", "n1", "Running");
         p.meta.deleting = true;
         return p;
       }()},
       {}, minutes(5), minutes(10), Kind::kEnd, true, "pod train-0 is being deleted"},
      {"node lost: interruption", nullptr, {MakePod("train-0", "n1", "Running")}, {{"n1", "is not ready"}}, minutes(5),
       minutes(10), Kind::kEnd, true, "node n1 is not ready"},
      {"within maxDuration", [](reconcilers::Run& r) { r.spec.max_duration = minutes(30); }, {MakePod("train-0", "n1", "Running")}, {},
       minutes(30), minutes(10), Kind::kNothing},
      {"past maxDuration (from startedAt)", [](reconcilers::Run& r) { r.spec.max_duration = minutes(30); },
       {MakePod("train-0", "n1", "Running")}, {}, minutes(30) + seconds(10), minutes(10), Kind::kMaxDuration, false,
       "ran longer than maxDuration 30m"},
      {"no start timeout once running", nullptr, {MakePod("train-0", "n1", "Running")}, {}, minutes(600), minutes(10),
       Kind::kNothing},
  };
  for (const auto& row : rows) Check(row, "Running", 1);
}

TEST(LifecycleTest, MultiNodeRunIsAllOrNothing) {
  const std::vector<Row> rows = {
      {"one rank running, one starting", nullptr,
       {MakePod("train-0", "n1", "Running"), MakePod("train-1", "n2", "Pending")}, {}, minutes(1), minutes(10),
       Kind::kNothing},
      {"both running", nullptr, {MakePod("train-0", "n1", "Running"), MakePod("train-1", "n2", "Running")}, {},
       minutes(1), minutes(10), Kind::kStarted, false, "all 2 pods are running"},
      {"one rank done, one running: Running", nullptr,
       {MakePod("train-0", "n1", "Succeeded"), MakePod("train-1", "n2", "Running")}, {}, minutes(1), minutes(10),
       Kind::kStarted, false, "all 2 pods are running"},
      {"one rank's Pod missing", nullptr, {MakePod("train-0", "n1", "Running")}, {}, minutes(1), minutes(10),
       Kind::kCreatePods},
      {"one rank refused: the whole run is interrupted", nullptr,
       {MakePod("train-0", "n1", "Running"), MakePod("train-1", "n2", "Failed", "OutOfnvidia.com/gpu")}, {}, minutes(1),
       minutes(10), Kind::kEnd, true, "the kubelet on node n2 refused pod train-1: OutOfnvidia.com/gpu", "", "n2"},
      {"the second node not ready", nullptr,
       {MakePod("train-0", "n1", "Running"), MakePod("train-1", "n2", "Running")}, {{"n2", "is not ready"}}, minutes(1),
       minutes(10), Kind::kEnd, true, "node n2 is not ready"},
  };
  for (const auto& row : rows) Check(row, "Scheduled", 2);

  const std::vector<Row> running = {
      {"every rank succeeded", nullptr, {MakePod("train-0", "n1", "Succeeded"), MakePod("train-1", "n2", "Succeeded")},
       {}, minutes(5), minutes(10), Kind::kSucceed, false, "all 2 pods succeeded"},
      {"one rank failed: the run fails", nullptr,
       {MakePod("train-0", "n1", "Succeeded"), MakePod("train-1", "n2", "Failed", "Error")}, {}, minutes(5), minutes(10),
       Kind::kEnd, false, "pod train-1 failed"},
  };
  for (const auto& row : running) Check(row, "Running", 2);
}

TEST(LifecycleTest, StopAndSuspendComeFirst) {
  auto stop = [](reconcilers::Run& r) { r.spec.stop = true; };
  auto suspend = [](reconcilers::Run& r) { r.spec.suspend = true; };
  auto both = [](reconcilers::Run& r) { r.spec.stop = r.spec.suspend = true; };
  const std::string kSuspended =
      ": its Pods are stopped with their grace period; it waits out of the queue until spec.suspend is false again "
      "(kubectl berth resume)";
  const std::vector<Row> running = {
      {"stopped while running", stop, {MakePod("train-0", "n1", "Running"), MakePod("train-1", "n2", "Running")}, {},
       minutes(5), minutes(10), Kind::kStop, false, "stopped (spec.stop) while running; its Pods are stopped with their grace period",
       "Stopped"},
      {"stop wins over a failed Pod (the user's word is the newer)", stop,
       {MakePod("train-0", "n1", "Failed", "Error"), MakePod("train-1", "n2", "Running")}, {}, minutes(5), minutes(10),
       Kind::kStop, false, "stopped (spec.stop) while running; its Pods are stopped with their grace period", "Stopped"},
      {"stop wins over suspend", both, {MakePod("train-0", "n1", "Running"), MakePod("train-1", "n2", "Running")}, {},
       minutes(5), minutes(10), Kind::kStop, false,
       "stopped (spec.stop) while running; its Pods are stopped with their grace period", "Stopped"},
      {"suspended while running", suspend, {MakePod("train-0", "n1", "Running"), MakePod("train-1", "n2", "Running")},
       {}, minutes(5), minutes(10), Kind::kSuspend, false, "suspended (spec.suspend) while running" + kSuspended},
      {"suspend on a lost node: suspended, not interrupted", suspend, {MakePod("train-0", "n1", "Running")},
       {{"n2", "is not ready"}}, minutes(5), minutes(10), Kind::kSuspend, false,
       "suspended (spec.suspend) while running" + kSuspended},
      {"every rank succeeded before the stop was seen: succeeded", stop,
       {MakePod("train-0", "n1", "Succeeded"), MakePod("train-1", "n2", "Succeeded")}, {}, minutes(5), minutes(10),
       Kind::kSucceed, false, "all 2 pods succeeded"},
      {"every rank succeeded before the suspension was seen: succeeded", suspend,
       {MakePod("train-0", "n1", "Succeeded"), MakePod("train-1", "n2", "Succeeded")}, {}, minutes(5), minutes(10),
       Kind::kSucceed, false, "all 2 pods succeeded"},
      {"one rank succeeded, one runs: stopped", stop,
       {MakePod("train-0", "n1", "Succeeded"), MakePod("train-1", "n2", "Running")}, {}, minutes(5), minutes(10),
       Kind::kStop, false, "stopped (spec.stop) while running; its Pods are stopped with their grace period", "Stopped"},
  };
  for (const auto& row : running) Check(row, "Running", 2);
  const std::vector<Row> scheduled = {
      {"stopped before its Pods were made", stop, {}, {}, minutes(1), minutes(10), Kind::kStop, false,
       "stopped (spec.stop) while scheduled; its Pods are stopped with their grace period", "Stopped"},
      {"suspended while starting", suspend, {MakePod("train-0", "n1", "Pending")}, {}, minutes(1), minutes(10),
       Kind::kSuspend, false, "suspended (spec.suspend) while scheduled" + kSuspended},
      {"suspended past its start timeout: suspended, no StartTimeout", suspend, {MakePod("train-0", "n1", "Pending")},
       {}, minutes(30), minutes(10), Kind::kSuspend, false, "suspended (spec.suspend) while scheduled" + kSuspended},
  };
  for (const auto& row : scheduled) Check(row, "Scheduled", 1);
}

TEST(LifecycleTest, KubeletRefusalsAndEvictionsAreTheNodesFaultNotTheRuns) {
  for (const char* r : {"OutOfcpu", "OutOfmemory", "OutOfnvidia.com/gpu", "NodeAffinity", "NodeName", "NodePorts",
                        "TaintToleration", "UnexpectedAdmissionError"}) {
    EXPECT_TRUE(IsKubeletRefusal(r)) << r;
  }
  for (const char* r : {"Error", "OOMKilled", "", "DeadlineExceeded"}) EXPECT_FALSE(IsKubeletRefusal(r)) << r;
  for (const char* r : {"Evicted", "Preempted", "Shutdown", "NodeLost", "Terminated"}) EXPECT_TRUE(IsEviction(r)) << r;
  for (const char* r : {"Error", "OOMKilled", "OutOfcpu"}) EXPECT_FALSE(IsEviction(r)) << r;
}

}  // namespace
}  // namespace berth::reconcilers

namespace berth::reconcilers {
namespace {

// NextDeadline: the instant DecidePlaced's answer changes with time alone, so the engine can wake
// then instead of polling. Checked against DecidePlaced itself: a moment before the deadline the
// decision is not the timed one, at the deadline it is.
TEST(LifecycleTest, NextDeadlineIsWhenTheTimedRuleFires) {
  // Running with maxDuration 1h: started 10 s after scheduling.
  reconcilers::Run running = Placed("Running");
  running.spec.max_duration = std::chrono::hours(1);
  k8s::Pod p = MakePod("train-0", "n1", "Running");
  PlacedInput in;
  in.run = &running;
  in.pods["train-0"] = &p;
  auto deadline = NextDeadline(in);
  ASSERT_TRUE(deadline.has_value());
  EXPECT_EQ(*deadline, kScheduled + seconds(10) + std::chrono::hours(1));
  in.now = *deadline - std::chrono::milliseconds(1);
  EXPECT_EQ(DecidePlaced(in).kind, Kind::kNothing);
  in.now = *deadline;
  EXPECT_EQ(DecidePlaced(in).kind, Kind::kMaxDuration);

  // Running without maxDuration: no deadline.
  running.spec.max_duration.reset();
  EXPECT_FALSE(NextDeadline(in).has_value());

  // Scheduled, Pods not started: the start timeout (spec first, else the controller's default).
  reconcilers::Run scheduled = Placed("Scheduled");
  k8s::Pod pending = MakePod("train-0", "n1", "Pending");
  PlacedInput s;
  s.run = &scheduled;
  s.pods["train-0"] = &pending;
  s.default_start_timeout = minutes(10);
  ASSERT_TRUE(NextDeadline(s).has_value());
  EXPECT_EQ(*NextDeadline(s), kScheduled + minutes(10));
  scheduled.spec.start_timeout = std::optional<std::chrono::milliseconds>(minutes(2));
  EXPECT_EQ(*NextDeadline(s), kScheduled + minutes(2));
  s.now = kScheduled + minutes(2) - std::chrono::milliseconds(1);
  EXPECT_NE(DecidePlaced(s).kind, Kind::kEnd);
  s.now = kScheduled + minutes(2);
  EXPECT_EQ(DecidePlaced(s).kind, Kind::kEnd);
  scheduled.spec.start_timeout = std::optional<std::chrono::milliseconds>();  // spec.startTimeout: off
  EXPECT_FALSE(NextDeadline(s).has_value()) << "the start timeout is off for this run";
  scheduled.spec.start_timeout.reset();
  s.default_start_timeout = std::chrono::milliseconds(0);
  EXPECT_FALSE(NextDeadline(s).has_value()) << "no start timeout at all";
}

}  // namespace
}  // namespace berth::reconcilers

namespace berth::reconcilers {
namespace {

// DecidePending: the rules of a waiting run (reconcilers/objects/lifecycle.h), one row per rule.
// Issue 29, item 4: names that cannot work are found before the run is queued (it holds nothing).
TEST(LifecycleTest, RunNameProblemFollowsTheCrdRules) {
  auto problem = [](const std::string& name, int64_t nodes) {
    reconcilers::Run r;
    r.meta.name = name;
    r.spec.nodes = nodes;
    return RunNameProblem(r);
  };
  for (const auto& [name, nodes] : std::vector<std::pair<std::string, int64_t>>{
           {"train", 2}, {"a", 2}, {"train-2", 8}, {"1train", 1}, {"train.v2", 1}, {std::string(63, 'l'), 1},
           {std::string(60, 'l'), 100}, {std::string(58, 'l'), 5000}}) {
    EXPECT_EQ(problem(name, nodes), "") << name << " x" << nodes;
  }
  for (const auto& [name, nodes] : std::vector<std::pair<std::string, int64_t>>{
           {"1b-llama", 2}, {"train.v2", 3}, {"train-", 2}, {"Train", 2}, {"-train", 2}, {"tr_ain", 2},
           {std::string(64, 'l'), 1}, {std::string(60, 'l'), 101}}) {
    EXPECT_NE(problem(name, nodes), "") << name << " x" << nodes;
  }
}

TEST(LifecycleTest, PendingRun) {
  using PK = PendingDecision::Kind;
  const k8s::TimePoint now = kScheduled;
  auto pod = [](const std::string& name, const std::string& attempt, const std::string& phase, bool deleting) {
    k8s::Pod p = MakePod(name, "n1", phase);
    p.meta.labels[kAttemptLabel] = attempt;
    p.meta.deleting = deleting;
    return p;
  };
  struct PendingRow {
    std::string name;
    std::function<void(reconcilers::Run&)> change;
    std::vector<k8s::Pod> pods;
    bool busy = false;
    PK kind = PK::kQueue;
    std::string message_has;
    std::vector<std::string> pods_out;
  };
  const std::vector<PendingRow> rows = {
      {"plain", [](reconcilers::Run&) {}, {}, false, PK::kQueue, "", {}},
      {"busy keeps its place", [](reconcilers::Run&) {}, {}, true, PK::kQueue, "", {}},
      {"stop", [](reconcilers::Run& r) { r.spec.stop = true; }, {}, false, PK::kStop, "before it was scheduled", {}},
      {"stop while suspended",
       [](reconcilers::Run& r) {
         r.spec.stop = true;
         r.spec.suspend = true;
         r.status.reason = Why("Suspended");
       },
       {}, false, PK::kStop, "while suspended", {}},
      {"stop waits for a write in flight", [](reconcilers::Run& r) { r.spec.stop = true; }, {}, true, PK::kWait, "", {}},
      {"invalid spec", [](reconcilers::Run& r) { r.invalid_message = "spec.nodes must be at least 1"; }, {}, false,
       PK::kInvalid, "spec.nodes must be at least 1", {}},
      {"a name too long for a label", [](reconcilers::Run& r) { r.meta.name = std::string(64, 'a'); }, {}, false,
       PK::kInvalid, "longer than 63", {}},
      {"a multi-node run named with a leading digit (issue 29)",
       [](reconcilers::Run& r) {
         r.meta.name = "1b-llama";
         r.spec.nodes = 2;
       },
       {}, false, PK::kInvalid, "must have a name that is a DNS-1035 label", {}},
      {"a multi-node run named with a dot", [](reconcilers::Run& r) { r.meta.name = "train.v2"; r.spec.nodes = 4; }, {}, false,
       PK::kInvalid, "DNS-1035", {}},
      {"a single-node run may start with a digit", [](reconcilers::Run& r) { r.meta.name = "1b-llama"; }, {}, false,
       PK::kQueue, "", {}},
      {"a multi-node run's last hostname too long",
       [](reconcilers::Run& r) {
         r.meta.name = std::string(61, 'a');
         r.spec.nodes = 11;
       },
       {}, false, PK::kInvalid, "hostnames <name>-<rank>", {}},
      {"invalid and busy: out of the queue", [](reconcilers::Run& r) { r.invalid_message = "bad"; }, {}, true, PK::kWait,
       "", {}},
      {"suspend", [](reconcilers::Run& r) { r.spec.suspend = true; }, {}, false, PK::kSuspend, "spec.suspend", {}},
      {"suspend and busy: out of the queue", [](reconcilers::Run& r) { r.spec.suspend = true; }, {}, true, PK::kWait, "", {}},
      {"an earlier attempt's Pod still runs",
       [](reconcilers::Run& r) { r.status.resubmissions = 1; },
       {pod("train-0", "0", "Running", false), pod("train-r0-1", "0", "Failed", false), pod("x", "0", "Running", true)},
       false, PK::kDeletePods, "", {"train-0"}},
      {"resumed, nothing left", [](reconcilers::Run& r) { r.status.reason = Why("Suspended"); }, {}, false, PK::kResumed,
       "back in the queue", {}},
      {"resumed, the suspended attempt's Pods still going", [](reconcilers::Run& r) { r.status.reason = Why("Suspended"); },
       {pod("train-0", "0", "Running", true)}, false, PK::kResumed, "once the Pods of its suspended attempt are gone", {}},
      {"this attempt's Pods being deleted: wait", [](reconcilers::Run&) {}, {pod("train-0", "0", "Running", true)}, false,
       PK::kWait, "", {}},
      {"this attempt's finished Pod kept: delete it", [](reconcilers::Run&) {}, {pod("train-0", "0", "Succeeded", false)},
       false, PK::kDeletePods, "", {"train-0"}},
      {"backing off",
       [now](reconcilers::Run& r) { r.status.retry_after = Time(now + seconds(30)); }, {}, false,
       PK::kBackoff, "", {}},
      {"backoff over", [now](reconcilers::Run& r) { r.status.retry_after = Time(now); }, {}, false,
       PK::kQueue, "", {}},
  };
  for (const auto& row : rows) {
    reconcilers::Run run;
    run.meta.name = "train";
    run.meta.ns = "ml";
    run.status.phase = Phase::kPending;
    row.change(run);
    PendingInput in;
    in.run = &run;
    for (const auto& p : row.pods) in.pods.push_back(&p);
    in.busy = row.busy;
    in.now = now;
    const PendingDecision d = DecidePending(in);
    EXPECT_EQ(static_cast<int>(d.kind), static_cast<int>(row.kind)) << row.name;
    if (!row.message_has.empty()) {
      EXPECT_NE(d.message.find(row.message_has), std::string::npos) << row.name << ": " << d.message;
    }
    std::vector<std::string> names;
    for (const k8s::Pod* p : d.pods) names.push_back(p->meta.name);
    EXPECT_EQ(names, row.pods_out) << row.name;
    if (row.kind == PK::kBackoff) {
      ASSERT_TRUE(d.until.has_value()) << row.name;
      EXPECT_EQ(*d.until, now + seconds(30)) << row.name;
    }
  }
}

}  // namespace
}  // namespace berth::reconcilers
