#include "reconcilers/writers/run_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api_literals.h"

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "k8s/timefmt.h"

namespace berth::reconcilers {
namespace {
using namespace testing;  // NOLINT: Kind, Why, TimeAt

namespace json = k8s::json;

// The Fleet status berth writes, as JSON (BuildFleetStatus encoded by the codec).
std::string FleetStatusJson(const Fleet& fleet, const ClusterView& view,
                            const std::vector<const scheduling::InstanceStatus*>& instances, k8s::TimePoint now) {
  return api::EncodeFleetStatus(BuildFleetStatus(fleet, view, instances, now));
}
using std::chrono::seconds;

const k8s::TimePoint kT0 = k8s::TimePoint(std::chrono::milliseconds(1'767'323'045'000));  // 2026-01-02T03:04:05Z

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? std::move(d).value() : json::Document();
}

// ---------------------------------------------------------------------------------------------
// SetCondition

TEST(SetConditionTest, AddsANewConditionWithTheTimeOfTheCall) {
  std::vector<Condition> conds;
  SetCondition(conds, Kind("Scheduled"), ConditionStatus::kFalse, Why("Queued"), "waiting for capacity", 2, kT0);
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].type.api(), "Scheduled");
  EXPECT_EQ(conds[0].status, ConditionStatus::kFalse);
  EXPECT_EQ(conds[0].reason.api(), "Queued");
  EXPECT_EQ(conds[0].message, "waiting for capacity");
  EXPECT_EQ(conds[0].observed_generation, 2);
  EXPECT_EQ(FormatTime(conds[0].last_transition_time), "2026-01-02T03:04:05Z");
}

TEST(SetConditionTest, TransitionTimeMovesOnlyWhenTheStatusChanges) {
  struct Case {
    std::string name;
    std::string status, reason, message;
    int64_t generation;
    bool want_new_time;
  };
  const std::vector<Case> cases = {
      {"nothing changes", "False", "Queued", "position 3", 1, false},
      {"message changes", "False", "Queued", "position 2", 1, false},
      {"reason changes", "False", "NoCapacity", "no fleet fits", 1, false},
      {"generation changes", "False", "Queued", "position 3", 2, false},
      {"False -> True", "True", "Placed", "on n1", 1, true},
      {"False -> Unknown", "Unknown", "NodeLost", "", 1, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Condition> conds;
    SetCondition(conds, Kind("Ready"), ConditionStatus::kTrue, Why("AllPodsRunning"), "", 1, kT0 - seconds(300));
    SetCondition(conds, Kind("Scheduled"), ConditionStatus::kFalse, Why("Queued"), "position 3", 1, kT0 - seconds(60));
    SetCondition(conds, Kind("Finished"), ConditionStatus::kFalse, Why("Running"), "", 1, kT0 - seconds(30));
    const std::vector<Condition> before = conds;

    SetCondition(conds, Kind("Scheduled"), *api::ParseConditionStatus(c.status), Why(c.reason), c.message, c.generation, kT0);
    ASSERT_EQ(conds.size(), 3u) << "an existing condition is updated in place";
    const Condition& s = conds[1];
    EXPECT_EQ(s.type.api(), "Scheduled");
    EXPECT_EQ(ToApi(s.status), c.status);
    EXPECT_EQ(s.reason.api(), c.reason);
    EXPECT_EQ(s.message, c.message);
    EXPECT_EQ(s.observed_generation, c.generation);
    EXPECT_EQ(FormatTime(s.last_transition_time),
              c.want_new_time ? "2026-01-02T03:04:05Z" : k8s::FormatRfc3339(kT0 - seconds(60)));
    // The others are untouched.
    EXPECT_TRUE(conds[0] == before[0]);
    EXPECT_TRUE(conds[2] == before[2]);
  }
}

TEST(SetConditionTest, ChangingBackAndForthRecordsEachTransition) {
  std::vector<Condition> conds;
  SetCondition(conds, Kind("Ready"), ConditionStatus::kFalse, Why("Starting"), "", 1, kT0);
  SetCondition(conds, Kind("Ready"), ConditionStatus::kTrue, Why("AllPodsRunning"), "", 1, kT0 + seconds(10));
  SetCondition(conds, Kind("Ready"), ConditionStatus::kTrue, Why("AllPodsRunning"), "", 1, kT0 + seconds(20));
  EXPECT_EQ(FormatTime(conds[0].last_transition_time), k8s::FormatRfc3339(kT0 + seconds(10)));
  SetCondition(conds, Kind("Ready"), ConditionStatus::kFalse, Why("PodFailed"), "", 1, kT0 + seconds(30));
  EXPECT_EQ(FormatTime(conds[0].last_transition_time), k8s::FormatRfc3339(kT0 + seconds(30)));
  EXPECT_EQ(conds.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// DiffersInMoreThanPositionAndMessage / SameStatus

RunStatus BaseStatus() {
  RunStatus s;
  s.phase = Phase::kRunning;
  s.reason = Why("AllPodsRunning");
  s.message = "2 pods running";
  s.queue_position = std::nullopt;
  s.effective_priority = 60;
  s.fleet = "a100";
  s.placement = {PlacementEntry{0, "n1", 4, "train-0"}, PlacementEntry{1, "n2", 4, "train-1"}};
  s.submitted_at = TimeAt("2026-01-02T03:00:00Z");
  s.scheduled_at = TimeAt("2026-01-02T03:01:00Z");
  s.started_at = TimeAt("2026-01-02T03:02:00Z");
  s.resubmissions = 1;
  s.observed_generation = 4;
  s.conditions = {Condition{Kind("Scheduled"), ConditionStatus::kTrue, Why("Placed"), "on a100", TimeAt("2026-01-02T03:01:00Z"), 4},
                  Condition{Kind("Ready"), ConditionStatus::kTrue, Why("AllPodsRunning"), "", TimeAt("2026-01-02T03:02:00Z"), 4}};
  return s;
}

TEST(RunStatusCompareTest, TruthTable) {
  struct Case {
    std::string name;
    std::function<void(RunStatus&)> change;
    bool want_differs;  // DiffersInMoreThanPositionAndMessage
    bool want_same;     // SameStatus
  };
  const std::vector<Case> cases = {
      {"identical", [](RunStatus&) {}, false, true},
      // Fields refreshed lazily: not worth an immediate write, but not the same status.
      {"message", [](RunStatus& s) { s.message = "still running"; }, false, false},
      {"queue position moves", [](RunStatus& s) { s.queue_position = 7; }, true, false},
      {"condition message", [](RunStatus& s) { s.conditions[0].message = "on a100 (n1, n2)"; }, false, false},
      {"condition transition time", [](RunStatus& s) { s.conditions[1].last_transition_time = TimeAt("2026-01-02T04:00:00Z"); },
       false, false},
      // Everything else is a real change.
      {"phase", [](RunStatus& s) { s.phase = Phase::kSucceeded; }, true, false},
      {"reason", [](RunStatus& s) { s.reason = Why("Other"); }, true, false},
      {"effective priority", [](RunStatus& s) { s.effective_priority = 61; }, true, false},
      {"effective priority cleared", [](RunStatus& s) { s.effective_priority.reset(); }, true, false},
      {"fleet", [](RunStatus& s) { s.fleet = "h100"; }, true, false},
      {"placement node", [](RunStatus& s) { s.placement[1].node = "n3"; }, true, false},
      {"placement blocks", [](RunStatus& s) { s.placement[0].blocks = 2; }, true, false},
      {"placement pod", [](RunStatus& s) { s.placement[0].pod = "train-r1-0"; }, true, false},
      {"placement rank", [](RunStatus& s) { s.placement[0].rank = 5; }, true, false},
      {"placement shorter", [](RunStatus& s) { s.placement.pop_back(); }, true, false},
      {"placement cleared", [](RunStatus& s) { s.placement.clear(); }, true, false},
      {"submittedAt", [](RunStatus& s) { s.submitted_at = TimeAt("x"); }, true, false},
      {"scheduledAt", [](RunStatus& s) { s.scheduled_at = TimeAt(""); }, true, false},
      {"startedAt", [](RunStatus& s) { s.started_at = TimeAt(""); }, true, false},
      {"finishedAt", [](RunStatus& s) { s.finished_at = TimeAt("2026-01-02T05:00:00Z"); }, true, false},
      {"resubmissions", [](RunStatus& s) { s.resubmissions = 2; }, true, false},
      {"retryAfter", [](RunStatus& s) { s.retry_after = TimeAt("2026-01-02T03:05:00Z"); }, true, false},
      {"retryBackoffSeconds", [](RunStatus& s) { s.retry_backoff_seconds = 20; }, true, false},
      {"observedGeneration", [](RunStatus& s) { s.observed_generation = 5; }, true, false},
      {"templateHash", [](RunStatus& s) { s.template_hash = "0123456789abcdef"; }, true, false},
      {"preemption set", [](RunStatus& s) { s.preemption = RunStatus::Preemption{"a100", {"n1"}, {"ml/low"}, 0, {"u-low"}, false}; }, true, false},
      {"condition status", [](RunStatus& s) { s.conditions[1].status = ConditionStatus::kFalse; }, true, false},
      {"condition reason", [](RunStatus& s) { s.conditions[1].reason = Why("PodFailed"); }, true, false},
      {"condition generation", [](RunStatus& s) { s.conditions[0].observed_generation = 5; }, true, false},
      {"condition type", [](RunStatus& s) { s.conditions[0].type = Kind("Finished"); }, true, false},
      {"condition added", [](RunStatus& s) { s.conditions.push_back(Condition{Kind("Finished"), ConditionStatus::kFalse, Why("Running"), "", TimeAt("t"), 4}); },
       true, false},
      {"conditions reordered", [](RunStatus& s) { std::swap(s.conditions[0], s.conditions[1]); }, true, false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const RunStatus a = BaseStatus();
    RunStatus b = BaseStatus();
    c.change(b);
    EXPECT_EQ(DiffersInMoreThanPositionAndMessage(a, b), c.want_differs);
    EXPECT_EQ(DiffersInMoreThanPositionAndMessage(b, a), c.want_differs) << "must be symmetric";
    EXPECT_EQ(SameStatus(a, b), c.want_same);
    EXPECT_EQ(SameStatus(b, a), c.want_same) << "must be symmetric";
  }
}

TEST(RunStatusCompareTest, QueuePositionWhilePending) {
  RunStatus a;
  a.phase = Phase::kPending;
  a.queue_position = 3;
  RunStatus b = a;
  EXPECT_TRUE(SameStatus(a, b));
  b.queue_position = 2;  // moving up the queue: refreshed lazily
  EXPECT_FALSE(DiffersInMoreThanPositionAndMessage(a, b));
  EXPECT_FALSE(SameStatus(a, b));
  b.queue_position.reset();  // leaving the first 100 places (or the queue): a real change
  EXPECT_TRUE(DiffersInMoreThanPositionAndMessage(a, b));
  EXPECT_TRUE(SameStatus(RunStatus{}, RunStatus{}));
}

// ---------------------------------------------------------------------------------------------
// RunStatusPatch

TEST(RunStatusPatchTest, EmptyStatusWritesNullsAndNoPrecondition) {
  json::Document d = MustParse(RunStatusPatch(RunStatus{}, ""));
  ASSERT_TRUE(d.IsObject());
  EXPECT_FALSE(d.HasMember("metadata")) << "no resourceVersion: an unconditional write";
  const json::Value* st = json::Find(d, {"status"});
  ASSERT_NE(st, nullptr);
  for (const char* key : {"phase", "reason", "message", "queuePosition", "effectivePriority", "fleet", "placement",
                          "submittedAt", "scheduledAt", "startedAt", "finishedAt"}) {
    ASSERT_TRUE(st->HasMember(key)) << key << " must be written (as null) so a merge patch clears it";
    EXPECT_TRUE((*st)[key].IsNull()) << key;
  }
  EXPECT_EQ(json::GetInt(*st, "resubmissions", -1), 0);
  EXPECT_EQ(json::GetInt(*st, "observedGeneration", -1), 0);
  ASSERT_TRUE(st->HasMember("conditions"));
  ASSERT_TRUE((*st)["conditions"].IsArray());
  EXPECT_EQ((*st)["conditions"].Size(), 0u);
}

// status.preemption: written whole while set, null (cleared by the merge patch) otherwise, and
// read back as written.
TEST(RunStatusPatchTest, PreemptionRoundTripsAndClears) {
  json::Document cleared = MustParse(RunStatusPatch(RunStatus{}, ""));
  ASSERT_NE(json::Find(cleared, {"status", "preemption"}), nullptr);
  EXPECT_TRUE(json::Find(cleared, {"status", "preemption"})->IsNull());
  RunStatus s;
  s.phase = Phase::kPending;
  s.preemption = RunStatus::Preemption{"a100", {"n1", "n2"}, {"ml/a", "ml/b"}, 1, {"u-a", "u-b", "u-c"}, false};
  json::Document d = MustParse(RunStatusPatch(s, ""));
  RunStatus back = DecodeRunStatus(*json::Find(d, {"status"}));
  ASSERT_TRUE(back.preemption.has_value());
  EXPECT_EQ(*back.preemption, *s.preemption);
  EXPECT_TRUE(SameStatus(s, back));
  s.preemption->victims.pop_back();
  EXPECT_FALSE(SameStatus(s, back));
  s.preemption = back.preemption;
  s.preemption->other_victims = 2;  // issue 44: the count and the uids are part of the record
  EXPECT_FALSE(SameStatus(s, back));
  s.preemption = back.preemption;
  s.preemption->victim_uids.pop_back();
  EXPECT_FALSE(SameStatus(s, back));
}

TEST(RunStatusPatchTest, ResourceVersionPrecondition) {
  json::Document d = MustParse(RunStatusPatch(RunStatus{}, "12345"));
  EXPECT_EQ(json::GetString(json::Find(d, {"metadata", "resourceVersion"})), "12345");
}

TEST(RunStatusPatchTest, FullStatus) {
  RunStatus s = BaseStatus();
  s.finished_at = TimeAt("2026-01-02T05:00:00Z");
  s.queue_position = 0;
  s.message = "line \"one\"\nline\ttwo \\ done";
  json::Document d = MustParse(RunStatusPatch(s, "77"));
  const json::Value* st = json::Find(d, {"status"});
  ASSERT_NE(st, nullptr);
  EXPECT_EQ(json::GetString(*st, "phase"), "Running");
  EXPECT_EQ(json::GetString(*st, "reason"), "AllPodsRunning");
  EXPECT_EQ(json::GetString(*st, "message"), s.message);
  EXPECT_EQ(json::GetInt(*st, "queuePosition", -1), 0) << "0 is a value, not null";
  EXPECT_EQ(json::GetInt(*st, "effectivePriority"), 60);
  EXPECT_EQ(json::GetString(*st, "fleet"), "a100");
  EXPECT_EQ(json::GetString(*st, "submittedAt"), "2026-01-02T03:00:00Z");
  EXPECT_EQ(json::GetString(*st, "scheduledAt"), "2026-01-02T03:01:00Z");
  EXPECT_EQ(json::GetString(*st, "startedAt"), "2026-01-02T03:02:00Z");
  EXPECT_EQ(json::GetString(*st, "finishedAt"), "2026-01-02T05:00:00Z");
  EXPECT_EQ(json::GetInt(*st, "resubmissions"), 1);
  EXPECT_EQ(json::GetInt(*st, "observedGeneration"), 4);
  // No backoff yet: both fields are cleared (null), not written as empty values.
  ASSERT_NE(json::Find(*st, {"retryAfter"}), nullptr);
  EXPECT_TRUE(json::Find(*st, {"retryAfter"})->IsNull());
  EXPECT_TRUE(json::Find(*st, {"retryBackoffSeconds"})->IsNull());

  const json::Value* placement = json::Find(*st, {"placement"});
  ASSERT_NE(placement, nullptr);
  ASSERT_TRUE(placement->IsArray());
  ASSERT_EQ(placement->Size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    const json::Value& p = (*placement)[i];
    EXPECT_EQ(json::GetInt(p, "rank", -1), i);
    EXPECT_EQ(json::GetString(p, "node"), "n" + std::to_string(i + 1));
    EXPECT_EQ(json::GetInt(p, "blocks"), 4);
    EXPECT_EQ(json::GetString(p, "pod"), "train-" + std::to_string(i));
  }

  const json::Value* conds = json::Find(*st, {"conditions"});
  ASSERT_NE(conds, nullptr);
  ASSERT_EQ(conds->Size(), 2u);
  const json::Value& c0 = (*conds)[0];
  EXPECT_EQ(json::GetString(c0, "type"), "Scheduled");
  EXPECT_EQ(json::GetString(c0, "status"), "True");
  EXPECT_EQ(json::GetString(c0, "reason"), "Placed");
  EXPECT_EQ(json::GetString(c0, "message"), "on a100");
  EXPECT_EQ(json::GetString(c0, "lastTransitionTime"), "2026-01-02T03:01:00Z");
  EXPECT_EQ(json::GetInt(c0, "observedGeneration"), 4);
  EXPECT_EQ(json::GetString((*conds)[1], "type"), "Ready");
}

TEST(RunStatusPatchTest, RoundTripsThroughTheDecoder) {
  std::vector<RunStatus> statuses;
  statuses.push_back(RunStatus{});
  statuses.push_back(BaseStatus());
  RunStatus pending;
  pending.phase = Phase::kPending;
  pending.reason = Why("NoCapacity");
  pending.message = "needs 2 idle instances; fleet \"a100\" has 1";
  pending.queue_position = 12;
  pending.effective_priority = 100;
  pending.submitted_at = TimeAt("2026-01-02T03:00:00Z");
  SetCondition(pending.conditions, Kind("Scheduled"), ConditionStatus::kFalse, Why("NoCapacity"), pending.message, 1, kT0);
  statuses.push_back(pending);
  for (const auto& s : statuses) {
    SCOPED_TRACE(std::string(PhaseName(s.phase)));
    json::Document d = MustParse(RunStatusPatch(s, "1"));
    RunStatus back = DecodeRunStatus(*json::Find(d, {"status"}));
    EXPECT_TRUE(SameStatus(s, back)) << RunStatusPatch(s, "1");
  }
}

TEST(FinalizersPatchTest, AddsOrRemovesOnlyBerthsOwn) {
  EXPECT_EQ(FinalizersPatch("7", {}, true), R"({"metadata":{"resourceVersion":"7","finalizers":["berth.dev/run-cleanup"]}})");
  EXPECT_EQ(FinalizersPatch("7", {"a/b"}, true),
            R"({"metadata":{"resourceVersion":"7","finalizers":["a/b","berth.dev/run-cleanup"]}})");
  // Already there: still once.
  EXPECT_EQ(FinalizersPatch("7", {"berth.dev/run-cleanup", "a/b"}, true),
            R"({"metadata":{"resourceVersion":"7","finalizers":["a/b","berth.dev/run-cleanup"]}})");
  EXPECT_EQ(FinalizersPatch("8", {"a/b", "berth.dev/run-cleanup", "c/d"}, false),
            R"({"metadata":{"resourceVersion":"8","finalizers":["a/b","c/d"]}})");
  EXPECT_EQ(FinalizersPatch("8", {"berth.dev/run-cleanup"}, false), R"({"metadata":{"resourceVersion":"8","finalizers":[]}})");
  // Names are JSON-quoted.
  EXPECT_EQ(FinalizersPatch("9", {"x\"y"}, false), R"({"metadata":{"resourceVersion":"9","finalizers":["x\"y"]}})");
}

// Every terminal status comes from Finish: the same fields and conditions whichever rule ended the run.
TEST(FinishTest, EveryTerminalStatusHasTheSameShape) {
  const k8s::TimePoint created = k8s::ParseRfc3339("2026-11-24T10:00:00Z").value();
  const k8s::TimePoint now = k8s::ParseRfc3339("2026-11-24T11:00:00Z").value();
  RunStatus running;
  running.phase = Phase::kRunning;
  running.reason = Why("Running");
  running.fleet = "a100";
  running.placement = {PlacementEntry{0, "n1", 2, "train-0"}};
  running.submitted_at = TimeAt("2026-11-24T10:00:00Z");
  running.started_at = TimeAt("2026-11-24T10:05:00Z");
  running.queue_position = 3;  // stale: a finished run shows none
  running.preemption = RunStatus::Preemption{"a100", {"n1"}, {"ml/low"}, 0, {"u-low"}, false};  // stale: an ended run keeps no nodes
  SetCondition(running.conditions, Kind("Ready"), ConditionStatus::kTrue, Why("Running"), "the pod is running", 1, created);

  struct Case {
    Outcome outcome;
    std::string reason, ready_reason;
  };
  for (const Case& c : {Case{Outcome::kSucceeded, "Succeeded", "Finished"}, Case{Outcome::kFailed, "PodFailed", "PodFailed"},
                        Case{Outcome::kFailed, "MaxDurationExceeded", "MaxDurationExceeded"},
                        Case{Outcome::kFailed, "InvalidSpec", "InvalidSpec"}}) {
    RunStatus s = Finish(running, c.outcome, Why(c.reason), "why", 4, created, now);
    EXPECT_EQ(s.phase, c.outcome == Outcome::kSucceeded ? Phase::kSucceeded : Phase::kFailed) << c.reason;
    EXPECT_EQ(s.reason.api(), c.reason);
    EXPECT_EQ(s.message, "why");
    EXPECT_EQ(FormatTime(s.finished_at), "2026-11-24T11:00:00Z");
    EXPECT_EQ(FormatTime(s.started_at), "2026-11-24T10:05:00Z") << "kept";
    EXPECT_EQ(s.queue_position, std::nullopt);
    EXPECT_EQ(s.preemption, std::nullopt);
    EXPECT_EQ(s.observed_generation, 4);
    EXPECT_EQ(s.placement, running.placement) << "where it ran stays readable";
    ASSERT_EQ(s.conditions.size(), 2u);
    EXPECT_EQ(s.conditions[0].type.api(), "Ready");
    EXPECT_EQ(s.conditions[0].status, ConditionStatus::kFalse);
    EXPECT_EQ(s.conditions[0].reason.api(), c.ready_reason);
    EXPECT_EQ(FormatTime(s.conditions[0].last_transition_time), "2026-11-24T11:00:00Z");
    EXPECT_EQ(s.conditions[1].type.api(), "Finished");
    EXPECT_EQ(s.conditions[1].status, ConditionStatus::kTrue);
    EXPECT_EQ(s.conditions[1].reason.api(), c.reason);
    EXPECT_EQ(s.conditions[1].observed_generation, 4);
  }
}

TEST(FinishTest, FillsWhatARunThatNeverRanLacks) {
  const k8s::TimePoint created = k8s::ParseRfc3339("2026-11-24T10:00:00Z").value();
  const k8s::TimePoint now = k8s::ParseRfc3339("2026-11-24T10:00:02Z").value();
  RunStatus empty;
  RunStatus failed = Finish(empty, Outcome::kFailed, Reason::kInvalidSpec, "bad", 1, created, now);
  EXPECT_EQ(FormatTime(failed.submitted_at), "2026-11-24T10:00:00Z");
  EXPECT_EQ(FormatTime(failed.started_at), "") << "a run that never started shows no start";
  RunStatus succeeded = Finish(empty, Outcome::kSucceeded, Reason::kSucceeded, "done", 1, created, now);
  EXPECT_EQ(FormatTime(succeeded.started_at), "2026-11-24T10:00:02Z") << "a success that was never seen Running started by the end";
}

}  // namespace
}  // namespace berth::reconcilers

namespace berth::reconcilers {
namespace {

// The Fleet status berth writes, from the view and the core's instance descriptions.
const json::Value& At(const json::Value& array, int i) { return array[static_cast<rapidjson::SizeType>(i)]; }

TEST(FleetStatusJsonTest, CountsInstancesAndSetsReadyAndConflict) {
  const k8s::TimePoint now = k8s::ParseRfc3339("2026-11-25T10:00:00Z").value();
  Fleet fleet;
  fleet.meta.name = "a100";
  fleet.meta.generation = 3;
  ClusterView view;
  view.fleets["a100"] = &fleet;
  InstanceInfo n1;
  n1.node = "n1";
  n1.uid = "u1";
  n1.fleet = "a100";
  n1.placed_run_uids = {"run-b", "run-a"};
  view.instances["n1"] = n1;
  InstanceInfo n2 = n1;
  n2.node = "n2";
  n2.uid = "u2";
  n2.placed_run_uids.clear();
  n2.node_problem = "unreadable berth.dev/expires-at";
  view.instances["n2"] = n2;
  scheduling::InstanceStatus d1{"n1", "a100", 8, 3, 5, std::nullopt, scheduling::InstanceState::kBusy, ""};
  scheduling::InstanceStatus d2{"n2", "a100", 8, 0, 0, std::nullopt, scheduling::InstanceState::kNotReady, "not ready"};
  scheduling::InstanceStatus ghost{"gone", "a100", 8, 0, 0, std::nullopt, scheduling::InstanceState::kIdle, ""};

  auto doc = json::Parse(FleetStatusJson(fleet, view, {&d1, &d2, &ghost}, now));
  ASSERT_TRUE(doc.ok());
  const json::Value& st = *doc;
  EXPECT_EQ(json::GetInt(st, "totalInstances"), 2) << "an instance the view does not know is left out";
  EXPECT_EQ(json::GetInt(st, "readyInstances"), 1);
  EXPECT_EQ(json::GetInt(st, "totalBlocks"), 16);
  EXPECT_EQ(json::GetInt(st, "busyBlocks"), 3);
  EXPECT_EQ(json::GetInt(st, "observedGeneration"), 3);
  const json::Value* items = json::Find(st, {"instances"});
  ASSERT_TRUE(items != nullptr && items->IsArray() && items->Size() == 2);
  const json::Value& i1 = At(*items, 0);
  EXPECT_EQ(json::GetString(i1, "state"), "Busy");
  EXPECT_EQ(json::GetInt(i1, "runsStarted"), 5);
  const json::Value* counted = json::Find(i1, {"countedRuns"});
  ASSERT_TRUE(counted != nullptr && counted->Size() == 2);
  EXPECT_EQ(std::string(At(*counted, 0).GetString()), "run-a") << "sorted";
  EXPECT_EQ(json::GetString(At(*items, 1), "message"), "unreadable berth.dev/expires-at") << "the node's problem wins";
  const json::Value* conds = json::Find(st, {"conditions"});
  ASSERT_TRUE(conds != nullptr && conds->Size() == 1) << "no Conflict condition when there never was one";
  EXPECT_EQ(json::GetString(At(*conds, 0), "type"), "Ready");
  EXPECT_EQ(json::GetString(At(*conds, 0), "status"), "True");
  EXPECT_EQ(json::GetString(At(*conds, 0), "message"), "1 of 2 instances take new runs");

  // Another fleet owns n3: Conflict=True; with no instances, Ready=False.
  view.conflicts["a100"] = {"n3"};
  auto doc2 = json::Parse(FleetStatusJson(fleet, view, {}, now));
  ASSERT_TRUE(doc2.ok());
  conds = json::Find(*doc2, {"conditions"});
  ASSERT_TRUE(conds != nullptr && conds->Size() == 2);
  EXPECT_EQ(json::GetString(At(*conds, 0), "reason"), "NoReadyInstances");
  EXPECT_EQ(json::GetString(At(*conds, 0), "message"), "no Node matches the nodeSelector");
  EXPECT_EQ(json::GetString(At(*conds, 1), "reason"), "NodesClaimedByOlderFleet");

  view.invalid_fleets["a100"] = "spec.nodeSelector is empty";
  auto doc3 = json::Parse(FleetStatusJson(fleet, view, {}, now));
  ASSERT_TRUE(doc3.ok());
  EXPECT_EQ(json::GetString(At(*json::Find(*doc3, {"conditions"}), 0), "reason"), "InvalidSpec");
}

}  // namespace
}  // namespace berth::reconcilers
