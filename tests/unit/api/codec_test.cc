// The codec of berth.dev/v1alpha1 (api/v1alpha1/codec.h): round trips, errors that name the
// field, unknown fields of a Run's template kept, the merge patches' shapes.

#include "api/v1alpha1/codec.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "k8s/json.h"
#include "k8s/timefmt.h"

namespace berth::api::v1alpha1 {
namespace {

namespace json = k8s::json;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return d.ok() ? std::move(d.value()) : json::Document();
}

TimePoint At(const char* rfc3339) { return k8s::ParseRfc3339(rfc3339).value(); }

Run FullRun() {
  v1alpha1::Run r;
  r.meta.name = "train";
  r.meta.ns = "ml";
  r.meta.uid = "u-1";
  r.meta.resource_version = "42";
  r.meta.generation = 3;
  r.meta.created = At("2026-01-02T03:00:00Z");
  r.meta.labels = {{"team", "vision"}};
  r.meta.finalizers = {kRunFinalizer};
  r.spec.priority = 70;
  r.spec.nodes = 2;
  r.spec.cpu_milli = 1500;
  r.spec.memory_bytes = int64_t{16} << 30;
  r.spec.gpus = 8;
  r.spec.fleets = {"a100", "h100"};
  r.spec.max_duration = hours(4);
  r.spec.start_timeout = std::optional<Duration>();  // "off"
  r.spec.retry = RetrySpec{true, false, true, minutes(90)};
  r.spec.ttl_seconds_after_finished = 600;
  r.spec.suspend = true;
  r.spec.whole_instances = false;
  r.spec.topology_preferred = "example.com/rack";
  r.spec.template_json = R"({"spec":{"containers":[{"name":"main","image":"busybox:1.35"}]}})";
  RunStatus& s = r.status;
  s.phase = Phase::kRunning;
  s.reason = Reason::kRunning;
  s.message = "all 2 Pods run \"now\"\n";
  s.effective_priority = 75;
  s.estimated_start_at = Time(At("2026-01-02T03:30:00Z"));
  s.estimated_start_range = RunStatus::StartRange{Time(At("2026-01-02T03:20:00Z")), Time(At("2026-01-02T04:10:00Z"))};
  s.fleet = "a100";
  s.placement = {{0, "n1", 8, "train-0"}, {1, "n2", 8, "train-1"}};
  s.submitted_at = Time(At("2026-01-02T03:00:00Z"));
  s.scheduled_at = Time(At("2026-01-02T03:01:00Z"));
  s.started_at = Time(At("2026-01-02T03:02:00Z"));
  s.resubmissions = 1;
  s.retry_after = Time(At("2026-01-02T02:59:00Z"));
  s.retry_backoff_seconds = 20;
  s.observed_generation = 3;
  s.preemption = RunStatus::Preemption{"a100", {"n1"}, {"ml/low"}, 2, {"u-low", "u-x", "u-y"}, /*reclaim=*/true};
  s.template_hash = "0123456789abcdef";
  SetCondition(s.conditions, ConditionType::kScheduled, ConditionStatus::kTrue, Reason::kScheduled, "on a100", 3,
               At("2026-01-02T03:01:00Z"));
  SetCondition(s.conditions, ConditionKind::FromApi("Custom"), ConditionStatus::kUnknown,
               ReasonCode::FromApi("SomebodyElses"), "kept as written", 3, At("2026-01-02T03:01:30Z"));
  return r;
}

TEST(RunCodec, RoundTripsEveryField) {
  const v1alpha1::Run r = FullRun();
  json::Document d = MustParse(EncodeRun(r));
  auto back = DecodeRun(d);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->meta.name, "train");
  EXPECT_EQ(back->meta.ns, "ml");
  EXPECT_EQ(back->meta.generation, 3);
  EXPECT_EQ(back->meta.created, r.meta.created);
  EXPECT_EQ(back->meta.labels, r.meta.labels);
  EXPECT_EQ(back->meta.finalizers, r.meta.finalizers);
  EXPECT_EQ(back->invalid_message, "");
  EXPECT_EQ(back->status_problem, "");
  EXPECT_EQ(back->spec, r.spec);
  EXPECT_EQ(back->status, r.status);
  EXPECT_EQ(back->status.conditions[1].type.api(), "Custom") << "a condition type berth does not know is kept";
  EXPECT_EQ(back->status.conditions[1].reason.api(), "SomebodyElses");
}

TEST(RunCodec, WholeInstancesIsReadAsWrittenAndAbsentStaysAbsent) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, std::optional<bool>>>{
           {R"("wholeInstances":true)", true}, {R"("wholeInstances":false)", false}, {R"("nodes":2)", std::nullopt}}) {
    SCOPED_TRACE(text);
    json::Document d = MustParse(R"({"metadata":{"name":"a"},"spec":{)" + text +
                                 R"(,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}})");
    auto run = DecodeRun(d);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->spec.whole_instances, want);
    EXPECT_EQ(run->invalid_message, "");
  }
  json::Document bad = MustParse(R"({"metadata":{"name":"a"},"spec":{"wholeInstances":"yes",
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}})");
  auto run = DecodeRun(bad);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->invalid_message, "spec.wholeInstances must be true or false");
}

TEST(RunCodec, TopologyIsRequiredOrPreferredNotBoth) {
  const std::string tail = R"(},"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}})";
  auto run = DecodeRun(MustParse(R"({"metadata":{"name":"a"},"spec":{"topology":{"required":"example.com/rack")" + tail));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->spec.topology_required, "example.com/rack");
  EXPECT_EQ(run->spec.topology_preferred, "");
  EXPECT_EQ(run->invalid_message, "");
  run = DecodeRun(MustParse(R"({"metadata":{"name":"a"},"spec":{"topology":{"required":"a","preferred":"b")" + tail));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->invalid_message, "spec.topology: required and preferred are exclusive");
}

TEST(RunCodec, EmptyStatusRoundTrips) {
  v1alpha1::Run r;
  r.meta.name = "a";
  r.spec.template_json = R"({"spec":{"containers":[{"name":"c"}]}})";
  json::Document d = MustParse(EncodeRun(r));
  auto back = DecodeRun(d);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status, RunStatus{});
  EXPECT_EQ(back->spec, r.spec);
  EXPECT_FALSE(back->status.phase.has_value());
}

TEST(RunCodec, TheTemplateKeepsFieldsBerthDoesNotKnow) {
  const char* text = R"({"metadata":{"name":"a"},"spec":{"template":{"metadata":{"annotations":{"x":"y"}},
      "spec":{"containers":[{"name":"c","image":"i","futureField":{"deep":[1,2,{"k":null}]}}],
              "runtimeClassName":"gvisor","someNewPodField":true}}}})";
  auto run = DecodeRun(MustParse(text));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->invalid_message, "");
  json::Document tmpl = MustParse(run->spec.template_json);
  EXPECT_EQ(json::Serialize(*json::Find(tmpl, {"spec", "containers"})),
            R"([{"name":"c","image":"i","futureField":{"deep":[1,2,{"k":null}]}}])");
  EXPECT_TRUE(json::GetBool(*json::Find(tmpl, {"spec"}), "someNewPodField"));
  // And through an encode and a decode again.
  auto again = DecodeRun(MustParse(EncodeRun(*run)));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->spec.template_json, run->spec.template_json);
}

// Issue 29, item 6: what DecodeRun keeps. By default everything (the whole template, every label
// and annotation); with RunDecodeOptions (the engine's cache) only labels and annotations under
// the prefix and a template up to kept_template_bytes, its size and hash either way. A template
// over kMaxTemplateBytes makes the spec unusable, naming the bound.
TEST(RunCodec, DecodeOptionsKeepLessOfTheMetadataAndTheTemplate) {
  const std::string tmpl = R"({"spec":{"containers":[{"name":"c","image":"i","args":[")" + std::string(100, 'a') + R"("]}]}})";
  const std::string text = R"({"metadata":{"name":"a","labels":{"app":"x","berth.dev/run":"a"},)"
                           R"("annotations":{"note":"n","berth.dev/blocks":"2"}},"spec":{"template":)" + tmpl + "}}";
  auto all = DecodeRun(MustParse(text));
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->spec.template_json, tmpl);
  EXPECT_EQ(all->template_bytes, tmpl.size());
  EXPECT_NE(all->template_hash, 0u);
  EXPECT_EQ(all->meta.labels.size(), 2u);
  EXPECT_EQ(all->meta.annotations.size(), 2u);

  auto slim = DecodeRun(MustParse(text), RunDecodeOptions{.keep_meta_prefix = "berth.dev/", .kept_template_bytes = 64});
  ASSERT_TRUE(slim.ok());
  EXPECT_EQ(slim->spec.template_json, "");
  EXPECT_EQ(slim->template_bytes, tmpl.size());
  EXPECT_EQ(slim->template_hash, all->template_hash);
  EXPECT_EQ(slim->invalid_message, "");
  EXPECT_EQ(slim->meta.labels, (std::map<std::string, std::string>{{"berth.dev/run", "a"}}));
  EXPECT_EQ(slim->meta.annotations, (std::map<std::string, std::string>{{"berth.dev/blocks", "2"}}));

  const std::string big = R"({"spec":{"containers":[{"name":"c","image":"i","args":[")" +
                          std::string(kMaxTemplateBytes, 'a') + R"("]}]}})";
  auto over = DecodeRun(MustParse(R"({"metadata":{"name":"a"},"spec":{"template":)" + big + "}}"));
  ASSERT_TRUE(over.ok());
  EXPECT_EQ(over->template_bytes, big.size());
  EXPECT_EQ(over->invalid_message, TemplateTooLarge(big.size()));
  EXPECT_EQ(over->invalid_message.rfind("spec.template is " + std::to_string(big.size()) +
                                            " bytes as JSON; berth takes templates of at most 262144 bytes",
                                        0),
            0u);
}

TEST(RunCodec, NoObjectOrNoNameIsAnError) {
  auto not_object = DecodeRun(MustParse("[1]"));
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("JSON object"), std::string::npos);
  auto nameless = DecodeRun(MustParse(R"({"metadata":{},"spec":{}})"));
  ASSERT_FALSE(nameless.ok());
  EXPECT_NE(nameless.status().message().find("metadata.name"), std::string::npos);
}

TEST(RunCodec, SpecProblemsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"maxDuration":"soon","template":{"spec":{"containers":[{}]}}})", "spec.maxDuration: "},
      {R"({"retry":{"duration":"x"},"template":{"spec":{"containers":[{}]}}})", "spec.retry.duration: "},
      {R"({"resources":{"cpu":"lots"},"template":{"spec":{"containers":[{}]}}})", "spec.resources.cpu: "},
      {R"({"nodes":0,"template":{"spec":{"containers":[{}]}}})", "spec.nodes must be at least 1"},
      {R"({"template":{"spec":{}}})", "spec.template.spec.containers must list at least one container"},
      {R"({"ttlSecondsAfterFinished":-1,"template":{"spec":{"containers":[{}]}}})", "spec.ttlSecondsAfterFinished"},
  };
  for (const auto& [spec, want] : cases) {
    auto run = DecodeRun(MustParse(std::string(R"({"metadata":{"name":"a"},"spec":)") + spec + "}"));
    ASSERT_TRUE(run.ok()) << spec;
    EXPECT_EQ(run->invalid_message.rfind(want, 0), 0u) << spec << " gave: " << run->invalid_message;
  }
}

TEST(RunCodec, StatusProblemsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"phase":"Sleeping"})", "status.phase must be Pending, Scheduled, Running, Succeeded or Failed"},
      {R"({"queuePosition":"first"})", "status.queuePosition must be an integer"},
      {R"({"startedAt":"yesterday"})", "status.startedAt must be an RFC 3339 time"},
      {R"({"placement":[{"rank":0},{"node":7}]})", "status.placement[1].node must be a string"},
      {R"({"conditions":[{"type":"Ready","status":"Maybe"}]})", "status.conditions[0].status must be True, False"},
      {R"({"preemption":{"victims":"all"}})", "status.preemption.victims must be a list of strings"},
      {R"({"preemption":{"otherVictims":"two"}})", "status.preemption.otherVictims must be an integer"},
      {R"({"preemption":{"victimUIDs":[1]}})", "status.preemption.victimUIDs"},
      {R"("Running")", "status must be an object"},
  };
  for (const auto& [status, want] : cases) {
    auto strict = DecodeRunStatus(MustParse(status));
    ASSERT_FALSE(strict.ok()) << status;
    EXPECT_EQ(strict.status().message().rfind(want, 0), 0u) << status << " gave: " << strict.status().message();
    // Within a Run the status is read defensively: the run is still there, the problem named.
    auto run = DecodeRun(MustParse(std::string(R"({"metadata":{"name":"a"},"spec":{},"status":)") + status + "}"));
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status_problem.rfind(want, 0), 0u) << status;
  }
}

TEST(RunCodec, TimesAreWholeSeconds) {
  const TimePoint t = At("2026-01-02T03:04:05Z") + std::chrono::milliseconds(987);
  RunStatus s;
  s.started_at = Time(t);
  EXPECT_EQ(s.started_at->point(), At("2026-01-02T03:04:05Z"));
  auto back = DecodeRunStatus(MustParse(EncodeRunStatus(s)));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, s) << "built in memory and read back compare equal";
  auto fraction = DecodeRunStatus(MustParse(R"({"startedAt":"2026-01-02T03:04:05.5+01:00"})"));
  ASSERT_TRUE(fraction.ok());
  EXPECT_EQ(fraction->started_at->point(), At("2026-01-02T02:04:05Z"));
}

TEST(RunCodec, EstimatedStartAtIsRfc3339AndAbsentWhenUnknown) {
  RunStatus s;
  s.phase = Phase::kPending;
  s.estimated_start_at = Time(At("2026-01-02T04:00:00Z"));
  json::Document d = MustParse(EncodeRunStatus(s));
  EXPECT_EQ(json::GetString(json::Find(d, {"estimatedStartAt"})), "2026-01-02T04:00:00Z");
  auto back = DecodeRunStatus(d);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->estimated_start_at, s.estimated_start_at);
  s.estimated_start_at.reset();
  json::Document unknown = MustParse(EncodeRunStatus(s));
  EXPECT_FALSE(unknown.HasMember("estimatedStartAt")) << "absent when unknown";
  auto none = DecodeRunStatus(unknown);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->estimated_start_at.has_value());
}

// Issue 47: status.estimatedStartRange {earliest, latest}, RFC 3339 like estimatedStartAt; a merge
// patch without a range clears it (null), a status without one leaves it out.
TEST(RunCodec, EstimatedStartRangeHasBothEndsAndIsClearedByAPatchWithoutIt) {
  RunStatus s;
  s.phase = Phase::kPending;
  s.estimated_start_at = Time(At("2026-01-02T04:00:00Z"));
  s.estimated_start_range = RunStatus::StartRange{Time(At("2026-01-02T03:40:00Z")), Time(At("2026-01-02T05:30:00Z"))};
  json::Document d = MustParse(EncodeRunStatus(s));
  EXPECT_EQ(json::GetString(json::Find(d, {"estimatedStartRange", "earliest"})), "2026-01-02T03:40:00Z");
  EXPECT_EQ(json::GetString(json::Find(d, {"estimatedStartRange", "latest"})), "2026-01-02T05:30:00Z");
  auto back = DecodeRunStatus(d);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->estimated_start_range, s.estimated_start_range);
  s.estimated_start_range.reset();
  json::Document none = MustParse(EncodeRunStatus(s));
  EXPECT_FALSE(none.HasMember("estimatedStartRange"));
  json::Document patch = MustParse(RunStatusPatch(s, "7"));
  const json::Value* cleared = json::Find(patch, {"status", "estimatedStartRange"});
  ASSERT_NE(cleared, nullptr);
  EXPECT_TRUE(cleared->IsNull()) << "a merge patch clears a range no longer shown";
  // Half a range is none.
  auto half = DecodeRunStatus(MustParse(R"({"phase":"Pending","estimatedStartRange":{"earliest":"2026-01-02T03:40:00Z"}})"));
  ASSERT_TRUE(half.ok());
  EXPECT_FALSE(half->estimated_start_range);
}

// Issue 44: status.templateHash is kept across controllers (a hash written by one build is
// compared by the next), so the template's hash is FNV-1a of its JSON as served, not std::hash.
TEST(RunCodec, TheTemplateHashIsTheSameInEveryBuild) {
  auto run = DecodeRun(MustParse(R"({"metadata":{"name":"a"},"spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})"));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(TemplateHashText(run->template_hash), "2f32275f6e0384a5");
  EXPECT_EQ(TemplateHashText(0), "0000000000000000");
  EXPECT_EQ(TemplateHashText(0xabcdef0123456789ull), "abcdef0123456789");
}

TEST(RunStatusPatch, WritesEveryFieldWithNullsForTheEmptyOnes) {
  json::Document d = MustParse(RunStatusPatch(RunStatus{}, ""));
  EXPECT_FALSE(d.HasMember("metadata")) << "no resourceVersion: an unconditional write";
  const json::Value* st = json::Find(d, {"status"});
  ASSERT_NE(st, nullptr);
  for (const char* key : {"phase", "reason", "message", "queuePosition", "effectivePriority", "estimatedStartAt", "fleet",
                          "placement", "submittedAt", "scheduledAt", "startedAt", "finishedAt", "retryAfter",
                          "retryBackoffSeconds", "preemption", "templateHash"}) {
    ASSERT_TRUE(st->HasMember(key)) << key << " must be written (as null) so a merge patch clears it";
    EXPECT_TRUE((*st)[key].IsNull()) << key;
  }
  EXPECT_EQ(json::GetInt(*st, "resubmissions", -1), 0);
  EXPECT_EQ(json::GetInt(*st, "observedGeneration", -1), 0);
  ASSERT_TRUE((*st)["conditions"].IsArray());
  EXPECT_EQ((*st)["conditions"].Size(), 0u);
  json::Document full = MustParse(RunStatusPatch(FullRun().status, "77"));
  EXPECT_EQ(json::GetString(json::Find(full, {"metadata", "resourceVersion"})), "77");
  auto back = DecodeRunStatus(*json::Find(full, {"status"}));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, FullRun().status);
}

TEST(SmallPatches, Shapes) {
  EXPECT_EQ(QueuePositionPatch(3, "9"), R"({"metadata":{"resourceVersion":"9"},"status":{"queuePosition":3}})");
  EXPECT_EQ(QueuePositionPatch(std::nullopt, "9"),
            R"({"metadata":{"resourceVersion":"9"},"status":{"queuePosition":null}})");
  EXPECT_EQ(FinalizersPatch("7", {}, true), R"({"metadata":{"resourceVersion":"7","finalizers":["berth.dev/run-cleanup"]}})");
  EXPECT_EQ(FinalizersPatch("8", {"a/b", "berth.dev/run-cleanup", "c/d"}, false),
            R"({"metadata":{"resourceVersion":"8","finalizers":["a/b","c/d"]}})");
  EXPECT_EQ(FinalizersPatch("7", {"berth.dev/run-cleanup", "a/b"}, true),
            R"({"metadata":{"resourceVersion":"7","finalizers":["a/b","berth.dev/run-cleanup"]}})");
  EXPECT_EQ(PriorityPatch(90, "5"), R"({"metadata":{"resourceVersion":"5"},"spec":{"priority":90}})");
  EXPECT_EQ(StopPatch("5"), R"({"metadata":{"resourceVersion":"5"},"spec":{"stop":true}})");
  EXPECT_EQ(SuspendPatch(false, ""), R"({"spec":{"suspend":false}})");
  Condition c{ConditionType::kReady, ConditionStatus::kFalse, Reason::kInvalidSpec, "too \"deep\"",
              Time(At("2026-01-02T03:00:00Z")), 2};
  EXPECT_EQ(ReasonPatch(Reason::kInvalidSpec, "too \"deep\"", c),
            R"({"status":{"reason":"InvalidSpec","message":"too \"deep\"","conditions":[{"type":"Ready","status":)"
            R"("False","reason":"InvalidSpec","message":"too \"deep\"","lastTransitionTime":"2026-01-02T03:00:00Z",)"
            R"("observedGeneration":2}]}})");
}

TEST(SetConditionTest, MovesTheTransitionTimeOnlyWhenTheStatusChanges) {
  std::vector<Condition> conds;
  const TimePoint t0 = At("2026-01-02T03:00:00Z");
  SetCondition(conds, ConditionType::kReady, ConditionStatus::kFalse, Reason::kNoCapacity, "waits", 1, t0);
  SetCondition(conds, ConditionType::kReady, ConditionStatus::kFalse, Reason::kPreempted, "still", 2, t0 + hours(1));
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].last_transition_time->point(), t0);
  EXPECT_EQ(conds[0].reason, Reason::kPreempted);
  SetCondition(conds, ConditionType::kReady, ConditionStatus::kTrue, Reason::kRunning, "runs", 2, t0 + hours(2));
  EXPECT_EQ(conds[0].last_transition_time->point(), t0 + hours(2));
  EXPECT_NE(FindCondition(conds, ConditionType::kReady), nullptr);
  EXPECT_EQ(FindCondition(conds, ConditionType::kFinished), nullptr);
}

Fleet FullFleet() {
  Fleet f;
  f.meta.name = "a100";
  f.meta.generation = 2;
  f.spec.node_selector = {{"pool", "a100"}};
  f.spec.blocks_auto = true;
  f.spec.cluster_placement = true;
  f.spec.topology_key = "zone";
  f.spec.topology = {"example.com/spine", "example.com/rack"};
  f.spec.gpu_resource = "amd.com/gpu";
  f.spec.max_runs_per_instance = 10;
  f.spec.instance_lifetime = hours(5);
  f.spec.preempt_lower_priority = true;
  f.spec.min_runtime = minutes(2);
  f.spec.reclaim_borrowed = false;
  FleetInstance i;
  i.node = "n1";
  i.uid = "uid-1";
  i.total_blocks = 8;
  i.busy_blocks = 3;
  i.runs_started = 4;
  i.counted_runs = {"r1", "r2"};
  i.expires_at = Time(At("2026-01-03T00:00:00Z"));
  i.state = InstanceState::kBusy;
  i.message = "3 of 8 blocks busy";
  i.held_by_other_pods = "cpu 500m";
  f.status.instances = {i};
  f.status.total_instances = f.status.ready_instances = 1;
  f.status.total_blocks = 8;
  f.status.busy_blocks = 3;
  f.status.observed_generation = 2;
  SetCondition(f.status.conditions, ConditionType::kReady, ConditionStatus::kTrue, Reason::kInstancesReady,
               "1 of 1 instances take new runs", 2, At("2026-01-02T03:00:00Z"));
  return f;
}

TEST(FleetCodec, RoundTripsEveryField) {
  const Fleet f = FullFleet();
  auto back = DecodeFleet(MustParse(EncodeFleet(f)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->spec, f.spec);
  EXPECT_EQ(back->status, f.status);
  EXPECT_EQ(back->invalid_message, "");
  EXPECT_EQ(back->status_problem, "");
  ASSERT_NE(back->RecordForUid("uid-1"), nullptr);
  EXPECT_EQ(back->RecordForUid("uid-1")->node, "n1");
  EXPECT_TRUE(back->Selects({{"pool", "a100"}, {"other", "x"}}));
  EXPECT_FALSE(back->Selects({{"pool", "h100"}}));
  json::Document patch = MustParse(FleetStatusPatch(f.status, "11"));
  EXPECT_EQ(json::GetString(json::Find(patch, {"metadata", "resourceVersion"})), "11");
}

TEST(FleetCodec, ProblemsNameTheField) {
  auto f = DecodeFleet(MustParse(R"({"metadata":{"name":"f"},"spec":{"nodeSelector":{"a":"b"},"blocks":"many"},
      "status":{"instances":[{"node":"n","state":"Sleepy"}]}})"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->invalid_message, R"(spec.blocks must be "auto" or an integer >= 1, not "many")");
  EXPECT_EQ(f->status_problem, R"(status.instances[0].state is not an instance state: "Sleepy")");
  EXPECT_FALSE(DecodeFleet(MustParse(R"({"spec":{}})")).ok());
}

TEST(TeamCodec, RoundTripsEveryField) {
  Team t;
  t.meta.name = "vision";
  t.spec.namespaces = {"vision-dev", "vision-prod"};
  t.spec.parent = "research";
  t.spec.weight = 2;
  TeamShare share;
  share.fleet = "a100";
  share.nominal.gpus = 16;
  share.nominal.cpu_milli = 64000;
  share.borrowing_limit = ResourceAmounts{std::nullopt, int64_t{1} << 30, 16};
  t.spec.shares = {share};
  TeamFleetStatus fs;
  fs.fleet = "a100";
  fs.nominal.gpus = 16;
  fs.used.gpus = 24;
  fs.borrowed.gpus = 8;
  fs.lent.gpus = 0;
  t.status.fleets = {fs};
  t.status.gpu_hours = 340.25;
  t.status.cpu_hours = 1210.5;
  t.status.usage_updated_at = Time(base::TimePoint(std::chrono::seconds(1'800'000'000)));
  auto back = DecodeTeam(MustParse(EncodeTeam(t)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->spec, t.spec);
  EXPECT_EQ(back->status, t.status);
  EXPECT_EQ(back->invalid_message, "");
}

TEST(TeamCodec, ProblemsNameTheField) {
  auto t = DecodeTeam(MustParse(R"({"metadata":{"name":"v"},"spec":{"weight":0,"shares":[{"fleet":"a"}]}})"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->invalid_message, "spec.weight must be at least 1");
  t = DecodeTeam(MustParse(R"({"metadata":{"name":"v"},"spec":{"shares":[{"fleet":"a","nominal":{"cpu":"x"}}]}})"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->invalid_message.rfind("spec.shares[0].nominal.cpu must be a quantity", 0), 0u) << t->invalid_message;
}

// Issue 47 (3): spec.budgets round trip, and what the decoder refuses beyond the CRD.
TEST(TeamCodec, BudgetsRoundTripAndAPeriodOutOfBoundsIsNamed) {
  Team t;
  t.meta.name = "vision";
  t.spec.budgets = {TeamBudget{"gpu", 5000, "30d", std::chrono::hours(24 * 30), ""},
                    TeamBudget{"memory", 0.5, "12h", std::chrono::hours(12), "h100"}};
  auto back = DecodeTeam(MustParse(EncodeTeam(t)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->spec.budgets, t.spec.budgets);
  EXPECT_EQ(back->invalid_message, "");
  auto bad = DecodeTeam(MustParse(R"({"metadata":{"name":"v"},"spec":{"budgets":[{"resource":"gpu","hours":1,"period":"91d"}]}})"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->invalid_message, "spec.budgets[0].period must be from 1h to 90d (the usage history berth keeps)");
  bad = DecodeTeam(MustParse(R"({"metadata":{"name":"v"},"spec":{"budgets":[{"resource":"tpu","hours":1,"period":"1d"}]}})"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->invalid_message, "spec.budgets[0].resource must be gpu, cpu or memory");
}

// A ticket's spec.topology (issue 48): created with it; a patch names both members (null for the
// unset one: a merge patch would keep it) and clears the object when neither is set.
TEST(RunCodec, TicketTopologyCreatedAndPatched) {
  RunSpec spec;
  spec.nodes = 2;
  spec.topology_required = "example.com/rack";
  k8s::ObjectMeta meta;
  meta.name = "job-a";
  meta.ns = "ml";
  json::Document doc = MustParse(EncodeTicket(meta, k8s::OwnerRef{}, spec));
  auto created = DecodeRun(doc);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->spec.topology_required, "example.com/rack");
  EXPECT_EQ(created->spec.topology_preferred, "");
  std::string patch = TicketSpecPatch(spec, {}, "7");
  EXPECT_NE(patch.find(R"("topology":{"required":"example.com/rack","preferred":null})"), std::string::npos) << patch;
  spec.topology_required.clear();
  spec.topology_preferred = "rack";
  patch = TicketSpecPatch(spec, {}, "7");
  EXPECT_NE(patch.find(R"("topology":{"required":null,"preferred":"rack"})"), std::string::npos) << patch;
  spec.topology_preferred.clear();
  patch = TicketSpecPatch(spec, {}, "7");
  EXPECT_NE(patch.find(R"("topology":null)"), std::string::npos) << patch;
  EXPECT_EQ(EncodeTicket(meta, k8s::OwnerRef{}, spec).find("topology"), std::string::npos);
}

}  // namespace
// Issue 47 (7): Fleet spec.costWeight (default 1, 0 to 1000) and the Team's weighted usage beside
// the raw (absent in an older status: nullopt).
TEST(FleetCodec, CostWeightRoundTripsAndOutOfBoundsIsNamed) {
  Fleet f = FullFleet();
  EXPECT_EQ(f.spec.cost_weight, 1);
  f.spec.cost_weight = 2.5;
  auto back = DecodeFleet(MustParse(EncodeFleet(f)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->spec.cost_weight, 2.5);
  auto bad = DecodeFleet(MustParse(R"({"metadata":{"name":"f"},"spec":{"nodeSelector":{"a":"b"},"costWeight":1001}})"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->invalid_message, "spec.costWeight must be a number from 0 to 1000");
  bad = DecodeFleet(MustParse(R"({"metadata":{"name":"f"},"spec":{"nodeSelector":{"a":"b"},"costWeight":"3"}})"));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(bad->invalid_message, "spec.costWeight must be a number from 0 to 1000");
}

TEST(TeamCodec, WeightedUsageRoundTripsBesideTheRaw) {
  Team t;
  t.meta.name = "vision";
  t.status.gpu_hours = 10;
  t.status.weighted_gpu_hours = 30;
  t.status.weighted_cpu_hours = 4.5;
  auto back = DecodeTeam(MustParse(EncodeTeam(t)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->status.weighted_gpu_hours, 30);
  EXPECT_EQ(back->status.weighted_cpu_hours, 4.5);
  auto old = DecodeTeam(MustParse(R"({"metadata":{"name":"v"},"spec":{},"status":{"usage":{"gpuHours":3}}})"));
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->status.weighted_gpu_hours, std::nullopt);
}

}  // namespace berth::api::v1alpha1
