#include "reconcilers/objects/run_types.h"
#include "reconcilers/writers/run_status.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace berth::reconcilers {
namespace {

namespace json = k8s::json;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using ::testing::StartsWith;

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? std::move(d).value() : json::Document();
}

// A Run named "r1" in namespace "team-a" with `spec` (JSON text; "" = no spec at all).
std::string RunJson(const std::string& spec, const std::string& status = {}) {
  std::string out = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run",)"
                    R"("metadata":{"name":"r1","namespace":"team-a","uid":"u1","generation":2})";
  if (!spec.empty()) out += R"(,"spec":)" + spec;
  if (!status.empty()) out += R"(,"status":)" + status;
  return out + "}";
}

// Decodes a Run whose spec is `spec` exactly.
std::shared_ptr<const Run> DecodeExact(const std::string& spec) {
  json::Document d = MustParse(RunJson(spec));
  auto run = DecodeRun(d);
  EXPECT_NE(run, nullptr) << spec;
  return run;
}

// Decodes a Run with `spec` plus, when `spec` has none, a valid template (one container), so
// that the field under test is the only thing that can make it invalid.
std::shared_ptr<const Run> Decode(const std::string& spec) {
  std::string full = spec;
  if (full.size() > 1 && full[0] == '{' && full.find("\"template\"") == std::string::npos) {
    full = R"({"template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}})" +
           std::string(full.size() > 2 ? "," : "") + full.substr(1);
  }
  json::Document d = MustParse(RunJson(full));
  auto run = DecodeRun(d);
  EXPECT_NE(run, nullptr) << spec;
  return run;
}

constexpr const char* kTemplate = R"({"spec":{"containers":[{"name":"main","image":"busybox","args":["sleep","1"]}]}})";

TEST(DecodeRunTest, DefaultsWhenFieldsAreAbsent) {
  auto run = Decode(std::string(R"({"template":)") + kTemplate + "}");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->meta.name, "r1");
  EXPECT_EQ(run->meta.ns, "team-a");
  EXPECT_EQ(run->meta.generation, 2);
  EXPECT_EQ(run->spec.priority, 50);
  EXPECT_EQ(run->spec.nodes, 1);
  EXPECT_EQ(run->spec.cpu_milli, 0);
  EXPECT_EQ(run->spec.memory_bytes, 0);
  EXPECT_EQ(run->spec.gpus, 0);
  EXPECT_TRUE(run->spec.fleets.empty());
  EXPECT_EQ(run->spec.max_duration, std::nullopt);
  EXPECT_EQ(run->spec.retry, std::nullopt);
  EXPECT_EQ(run->invalid_message, "");
  EXPECT_EQ(run->status.phase, std::nullopt);
  EXPECT_EQ(run->status.queue_position, std::nullopt);
}

TEST(DecodeRunTest, ObjectsWithoutANameDecodeToNull) {
  json::Document d = MustParse(R"({"kind":"Run","metadata":{"namespace":"a"},"spec":{}})");
  EXPECT_EQ(DecodeRun(d), nullptr);
  json::Document e = MustParse("{}");
  EXPECT_EQ(DecodeRun(e), nullptr);
}

TEST(DecodeRunTest, MissingSpecIsInvalid) {
  for (const std::string spec : {"", "null", "[]", "\"x\""}) {
    auto run = Decode(spec);
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->invalid_message, "spec is missing") << spec;
  }
}

// berth chooses the machine: node constraints in the template are refused with a sentence that
// says what to do instead; Pod affinity, tolerations and empty values are fine.
TEST(DecodeRunTest, TemplateNodeConstraintsAreInvalid) {
  const std::string containers = R"("containers":[{"name":"main","image":"busybox"}])";
  for (const std::string extra : {R"("nodeSelector":{"gpu":"h100"})", R"("nodeName":"n1")",
                                  R"("affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{}}})"}) {
    auto run = Decode(R"({"template":{"spec":{)" + containers + "," + extra + "}}}");
    ASSERT_NE(run, nullptr);
    EXPECT_NE(run->invalid_message.find("is not supported: berth places the run on a machine of its fleets"),
              std::string::npos) << extra << ": " << run->invalid_message;
    EXPECT_NE(run->invalid_message.find("Fleet's nodeSelector"), std::string::npos);
  }
  for (const std::string extra : {R"("nodeSelector":{})", R"("tolerations":[{"key":"x","operator":"Exists"}])",
                                  R"("affinity":{"podAntiAffinity":{}})"}) {
    auto run = Decode(R"({"template":{"spec":{)" + containers + "," + extra + "}}}");
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->invalid_message, "") << extra;
  }
}

TEST(DecodeRunTest, StartTimeout) {
  EXPECT_EQ(Decode(R"({"priority":1})")->spec.start_timeout, std::nullopt);  // the controller's default
  auto off = Decode(R"({"startTimeout":"off"})");
  ASSERT_TRUE(off->spec.start_timeout.has_value());
  EXPECT_EQ(*off->spec.start_timeout, std::nullopt);
  auto five = Decode(R"({"startTimeout":"5m"})");
  ASSERT_TRUE(five->spec.start_timeout.has_value());
  EXPECT_EQ(*five->spec.start_timeout, std::chrono::minutes(5));
  EXPECT_EQ(Decode(R"({"startTimeout":"soon"})")->invalid_message.rfind("spec.startTimeout: ", 0), 0u);
}

TEST(DecodeRunTest, TtlSecondsAfterFinished) {
  EXPECT_EQ(Decode(R"({"priority":1})")->spec.ttl_seconds_after_finished, std::nullopt);  // the controller's default
  EXPECT_EQ(Decode(R"({"ttlSecondsAfterFinished":0})")->spec.ttl_seconds_after_finished, 0);
  EXPECT_EQ(Decode(R"({"ttlSecondsAfterFinished":3600})")->spec.ttl_seconds_after_finished, 3600);
  for (const char* bad : {R"({"ttlSecondsAfterFinished":-1})", R"({"ttlSecondsAfterFinished":2147483648})",
                          R"({"ttlSecondsAfterFinished":"1h"})", R"({"ttlSecondsAfterFinished":1.5})"}) {
    auto run = Decode(bad);
    EXPECT_EQ(run->spec.ttl_seconds_after_finished, std::nullopt) << bad;
    EXPECT_EQ(run->invalid_message, "spec.ttlSecondsAfterFinished must be an integer from 0 to 2147483647") << bad;
  }
}

TEST(DecodeRunTest, StopAndSuspend) {
  auto plain = Decode(R"({"priority":1})");
  EXPECT_FALSE(plain->spec.stop);
  EXPECT_FALSE(plain->spec.suspend);
  EXPECT_TRUE(Decode(R"({"stop":true})")->spec.stop);
  EXPECT_FALSE(Decode(R"({"stop":false})")->spec.stop);
  EXPECT_TRUE(Decode(R"({"suspend":true})")->spec.suspend);
  EXPECT_FALSE(Decode(R"({"suspend":false})")->spec.suspend);
  // The schema refuses anything but a boolean; read defensively anyway, never as true.
  for (const char* odd : {R"({"stop":"true","suspend":"true"})", R"({"stop":1,"suspend":1})",
                          R"({"stop":null,"suspend":null})"}) {
    auto run = Decode(odd);
    EXPECT_FALSE(run->spec.stop) << odd;
    EXPECT_FALSE(run->spec.suspend) << odd;
    EXPECT_EQ(run->invalid_message, "") << odd;
  }
}

TEST(DecodeRunTest, PriorityAndNodes) {
  auto run = Decode(R"({"priority":90,"nodes":4})");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->spec.priority, 90);
  EXPECT_EQ(run->spec.nodes, 4);
  EXPECT_EQ(run->invalid_message, "");
}

TEST(DecodeRunTest, Resources) {
  struct Case {
    std::string resources;
    int64_t cpu_milli, memory_bytes, gpus;
  };
  const std::vector<Case> cases = {
      {R"({"cpu":"4","memory":"16Gi","gpu":8})", 4000, 17'179'869'184, 8},
      {R"({"cpu":4,"memory":1024})", 4000, 1024, 0},  // int-or-string: plain integers
      {R"({"cpu":"500m","memory":"512Mi"})", 500, 536'870'912, 0},
      {R"({"cpu":"1.5","memory":"1G"})", 1500, 1'000'000'000, 0},
      {R"({"cpu":0.25})", 250, 0, 0},  // a JSON number with a fraction
      {R"({"gpu":1})", 0, 0, 1},
      {R"({})", 0, 0, 0},
  };
  for (const Case& c : cases) {
    auto run = Decode(R"({"resources":)" + c.resources + "}");
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->invalid_message, "") << c.resources;
    EXPECT_EQ(run->spec.cpu_milli, c.cpu_milli) << c.resources;
    EXPECT_EQ(run->spec.memory_bytes, c.memory_bytes) << c.resources;
    EXPECT_EQ(run->spec.gpus, c.gpus) << c.resources;
  }
}

TEST(DecodeRunTest, InvalidQuantitiesExplainThemselves) {
  struct Case {
    std::string resources, want;
  };
  const std::vector<Case> cases = {
      {R"({"cpu":"lots"})", R"(spec.resources.cpu: invalid quantity "lots")"},
      {R"({"cpu":"4","memory":"16GB"})", R"(spec.resources.memory: invalid quantity "16GB": unknown suffix "GB")"},
      {R"({"memory":"1KiB"})", R"(spec.resources.memory: invalid quantity "1KiB")"},
      {R"({"cpu":""})", R"(spec.resources.cpu: invalid quantity "": empty string)"},
      {R"({"cpu":true})", "spec.resources.cpu must be a quantity"},
      {R"({"memory":["1Gi"]})", "spec.resources.memory must be a quantity"},
      // Quantities that match the CRD pattern but overflow int64 at berth's scale.
      {R"({"cpu":"1e100"})", R"(spec.resources.cpu: invalid quantity "1e100")"},
      {R"({"cpu":"9223372036854775807"})", R"(spec.resources.cpu: invalid quantity "9223372036854775807")"},
      {R"({"memory":"9999999999Ei"})", R"(spec.resources.memory: invalid quantity "9999999999Ei")"},
  };
  for (const Case& c : cases) {
    auto run = Decode(R"({"resources":)" + c.resources + "}");
    ASSERT_NE(run, nullptr);
    EXPECT_THAT(run->invalid_message, StartsWith(c.want)) << c.resources;
  }
}

TEST(DecodeRunTest, Fleets) {
  auto run = Decode(R"({"fleets":["a100","h100",7,""]})");
  ASSERT_NE(run, nullptr);
  // Non-strings are skipped; the CRD forbids empty names, decoding keeps them as written.
  EXPECT_EQ(run->spec.fleets, (std::vector<std::string>{"a100", "h100", ""}));
  auto none = Decode(R"({"fleets":[]})");
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(none->spec.fleets.empty());
}

TEST(DecodeRunTest, MaxDuration) {
  struct Case {
    std::string spec;
    std::optional<milliseconds> want;
  };
  const std::vector<Case> cases = {
      {R"({})", std::nullopt},
      {R"({"maxDuration":"off"})", std::nullopt},
      {R"({"maxDuration":"4h"})", hours(4)},
      {R"({"maxDuration":"1h30m"})", minutes(90)},
      {R"({"maxDuration":"2d"})", hours(48)},
      {R"({"maxDuration":"90s"})", milliseconds(90'000)},
  };
  for (const Case& c : cases) {
    auto run = Decode(c.spec);
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->invalid_message, "") << c.spec;
    EXPECT_EQ(run->spec.max_duration, c.want) << c.spec;
  }
}

TEST(DecodeRunTest, InvalidMaxDuration) {
  // "5x" and "1y" are refused by the CRD pattern too; "9999999999999h" matches it but overflows.
  for (const std::string value : {"4 hours", "4", "-1h", "1y", "5x", "9999999999999h", "106752d"}) {
    auto run = Decode(std::string(R"({"maxDuration":")") + value + "\"}");
    ASSERT_NE(run, nullptr);
    EXPECT_THAT(run->invalid_message, StartsWith(std::string("spec.maxDuration: invalid duration \"") + value + "\""));
    EXPECT_EQ(run->spec.max_duration, std::nullopt);
  }
}

TEST(DecodeRunTest, Retry) {
  struct Case {
    std::string retry;  // "" = absent
    bool present;
    bool no_capacity, interruption, error;
    std::optional<milliseconds> duration;
  };
  const std::vector<Case> cases = {
      {"", false, false, false, false, std::nullopt},
      // No onEvents: every event; no duration: one hour (the CRD's defaults).
      {"{}", true, true, true, true, hours(1)},
      {R"({"duration":"30m"})", true, true, true, true, minutes(30)},
      {R"({"duration":"off"})", true, true, true, true, std::nullopt},
      {R"({"onEvents":["error"]})", true, false, false, true, hours(1)},
      {R"({"onEvents":["no-capacity","interruption"],"duration":"2h"})", true, true, true, false, hours(2)},
      {R"({"onEvents":["no-capacity","interruption","error"]})", true, true, true, true, hours(1)},
      {R"({"onEvents":[]})", true, false, false, false, hours(1)},  // an explicit empty list: none
      {R"({"onEvents":["reboot",5]})", true, false, false, false, hours(1)},  // unknown entries ignored
  };
  for (const Case& c : cases) {
    std::string spec = c.retry.empty() ? "{}" : R"({"retry":)" + c.retry + "}";
    auto run = Decode(spec);
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->invalid_message, "") << spec;
    ASSERT_EQ(run->spec.retry.has_value(), c.present) << spec;
    if (!c.present) continue;
    EXPECT_EQ(run->spec.retry->on_no_capacity, c.no_capacity) << spec;
    EXPECT_EQ(run->spec.retry->on_interruption, c.interruption) << spec;
    EXPECT_EQ(run->spec.retry->on_error, c.error) << spec;
    EXPECT_EQ(run->spec.retry->duration, c.duration) << spec;
  }
}

TEST(DecodeRunTest, InvalidRetryDuration) {
  auto run = Decode(R"({"retry":{"duration":"soon"}})");
  ASSERT_NE(run, nullptr);
  EXPECT_THAT(run->invalid_message, StartsWith("spec.retry.duration: invalid duration \"soon\""));
}

TEST(DecodeRunTest, NodesAndPriorityOutOfRange) {
  struct Case {
    std::string spec, want;
  };
  const std::vector<Case> cases = {
      {R"({"nodes":0})", "spec.nodes must be at least 1"},
      {R"({"nodes":-3})", "spec.nodes must be at least 1"},
      // More than the CRD's maximum, or a number that does not fit: refused, never wrapped to 1.
      {R"({"nodes":5000})", ""},
      {R"({"nodes":5001})", "spec.nodes must be at most 5000, not 5001"},
      {R"({"nodes":4294967297})", "spec.nodes must be at most 5000, not 4294967297"},
      {R"({"nodes":9223372036854775807})", "spec.nodes must be at most 5000, not 9223372036854775807"},
      {R"({"nodes":18446744073709551617})", "spec.nodes must be an integer from 1 to 5000"},
      {R"({"nodes":1e30})", "spec.nodes must be an integer from 1 to 5000"},
      {R"({"nodes":2.5})", "spec.nodes must be an integer from 1 to 5000"},
      {R"({"nodes":"2"})", "spec.nodes must be an integer from 1 to 5000"},
      {R"({"nodes":2.0})", ""},
      {R"({"priority":101})", "spec.priority must be between 0 and 100"},
      {R"({"priority":-1})", "spec.priority must be between 0 and 100"},
      {R"({"priority":0})", ""},
      {R"({"priority":100})", ""},
  };
  for (const Case& c : cases) {
    auto run = Decode(c.spec);
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->invalid_message, c.want) << c.spec;
  }
}

TEST(DecodeRunTest, TheFirstProblemIsReported) {
  auto run = Decode(R"({"resources":{"cpu":"x"},"maxDuration":"y","retry":{"duration":"z"},"nodes":0})");
  ASSERT_NE(run, nullptr);
  EXPECT_THAT(run->invalid_message, StartsWith("spec.resources.cpu: "));
  auto later = Decode(R"({"maxDuration":"y","retry":{"duration":"z"},"nodes":0})");
  ASSERT_NE(later, nullptr);
  EXPECT_THAT(later->invalid_message, StartsWith("spec.maxDuration: "));
}

TEST(DecodeRunTest, TemplateIsSerialized) {
  auto run = Decode(std::string(R"({"template":)") + kTemplate + R"(,"priority":10})");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->spec.template_json, kTemplate);
  // It is JSON a Pod can be built from.
  json::Document t = MustParse(run->spec.template_json);
  const json::Value* containers = json::Find(t, {"spec", "containers"});
  ASSERT_NE(containers, nullptr);
  ASSERT_TRUE(containers->IsArray());
  EXPECT_EQ(json::GetString((*containers)[0], "image"), "busybox");

  auto none = DecodeExact("{}");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->spec.template_json, "");
}

// Issue 29, item 6: the cache keeps a template up to kKeptTemplateBytes, and of a larger one only
// its size and hash (its Pods are made from the run read again); over kMaxTemplateBytes the run
// cannot be used. A Run's own labels and annotations are not kept (berth reads none).
TEST(DecodeRunTest, OnlyWhatBerthNeedsOfTheTemplateIsKept) {
  auto sized = [](size_t bytes) {
    const std::string head = R"({"spec":{"containers":[{"name":"c","image":"busybox","env":[{"name":"P","value":")";
    const std::string tail = R"("}]}]}})";
    return head + std::string(bytes - head.size() - tail.size(), 'x') + tail;
  };
  const std::string kept = sized(kKeptTemplateBytes), large = sized(kKeptTemplateBytes + 1);
  auto small_run = Decode(R"({"template":)" + kept + "}");
  ASSERT_NE(small_run, nullptr);
  EXPECT_EQ(small_run->spec.template_json, kept);
  EXPECT_EQ(small_run->template_bytes, kept.size());
  EXPECT_EQ(small_run->invalid_message, "");

  auto large_run = Decode(R"({"template":)" + large + "}");
  ASSERT_NE(large_run, nullptr);
  EXPECT_EQ(large_run->spec.template_json, "");
  EXPECT_EQ(large_run->template_bytes, large.size());
  EXPECT_NE(large_run->template_hash, small_run->template_hash);
  EXPECT_EQ(large_run->invalid_message, "");

  const std::string too_large = sized(kMaxTemplateBytes + 1);
  auto refused = Decode(R"({"template":)" + too_large + "}");
  ASSERT_NE(refused, nullptr);
  EXPECT_EQ(refused->spec.template_json, "");
  EXPECT_EQ(refused->invalid_message, TemplateTooLarge(too_large.size()));
  EXPECT_THAT(refused->invalid_message,
              StartsWith("spec.template is 262145 bytes as JSON; berth takes templates of at most 262144 bytes"));

  json::Document obj = MustParse(
      R"({"metadata":{"name":"r","labels":{"app":"x"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"spec":{"template":)" +
      kept + "}}");
  auto run = DecodeRun(obj);
  ASSERT_NE(run, nullptr);
  EXPECT_TRUE(run->meta.labels.empty());
  EXPECT_TRUE(run->meta.annotations.empty());
}

TEST(DecodeRunTest, TemplateNeedsAContainer) {
  for (const char* spec : {R"({})", R"({"template":{}})", R"({"template":{"spec":{"containers":[]}}})"}) {
    auto run = DecodeExact(spec);
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(run->invalid_message, "spec.template.spec.containers must list at least one container") << spec;
  }
}

// ---------------------------------------------------------------------------------------------
// DecodeRunStatus

constexpr const char* kFullStatus = R"({
  "phase": "Running", "reason": "Started", "message": "2 of 2 pods running",
  "queuePosition": 0, "effectivePriority": 57, "fleet": "a100",
  "placement": [
    {"rank": 0, "node": "gpu-1", "blocks": 4, "pod": "r1-0"},
    {"rank": 1, "node": "gpu-2", "blocks": 8, "pod": "r1-1"}
  ],
  "submittedAt": "2026-11-21T10:00:00Z", "scheduledAt": "2026-11-21T10:05:00Z",
  "startedAt": "2026-11-21T10:06:00Z", "finishedAt": "",
  "resubmissions": 2, "retryAfter": "2026-01-02T03:04:05Z", "retryBackoffSeconds": 40, "observedGeneration": 4,
  "conditions": [
    {"type": "Scheduled", "status": "True", "reason": "Placed", "message": "on a100",
     "lastTransitionTime": "2026-11-21T10:05:00Z", "observedGeneration": 4},
    {"type": "Ready", "status": "False", "reason": "Starting"}
  ]
})";

TEST(DecodeRunStatusTest, DecodesAFullStatus) {
  json::Document d = MustParse(kFullStatus);
  RunStatus s = DecodeRunStatus(d);
  EXPECT_EQ(s.phase, Phase::kRunning);
  EXPECT_EQ(s.reason.api(), "Started");
  EXPECT_EQ(s.message, "2 of 2 pods running");
  EXPECT_EQ(s.queue_position, 0);  // zero is a value, not "absent"
  EXPECT_EQ(s.effective_priority, 57);
  EXPECT_EQ(s.fleet, "a100");
  ASSERT_EQ(s.placement.size(), 2u);
  EXPECT_EQ(s.placement[0].rank, 0);
  EXPECT_EQ(s.placement[0].node, "gpu-1");
  EXPECT_EQ(s.placement[0].blocks, 4);
  EXPECT_EQ(s.placement[0].pod, "r1-0");
  EXPECT_EQ(s.placement[1].rank, 1);
  EXPECT_EQ(s.placement[1].node, "gpu-2");
  EXPECT_EQ(s.placement[1].blocks, 8);
  EXPECT_EQ(s.placement[1].pod, "r1-1");
  EXPECT_EQ(FormatTime(s.submitted_at), "2026-11-21T10:00:00Z");
  EXPECT_EQ(FormatTime(s.scheduled_at), "2026-11-21T10:05:00Z");
  EXPECT_EQ(FormatTime(s.started_at), "2026-11-21T10:06:00Z");
  EXPECT_EQ(FormatTime(s.finished_at), "");
  EXPECT_EQ(s.resubmissions, 2);
  EXPECT_EQ(FormatTime(s.retry_after), "2026-01-02T03:04:05Z");
  EXPECT_EQ(s.retry_backoff_seconds, 40);
  EXPECT_EQ(s.observed_generation, 4);
  ASSERT_EQ(s.conditions.size(), 2u);
  EXPECT_EQ(s.conditions[0].type.api(), "Scheduled");
  EXPECT_EQ(s.conditions[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(s.conditions[0].reason.api(), "Placed");
  EXPECT_EQ(s.conditions[0].message, "on a100");
  EXPECT_EQ(FormatTime(s.conditions[0].last_transition_time), "2026-11-21T10:05:00Z");
  EXPECT_EQ(s.conditions[0].observed_generation, 4);
  EXPECT_EQ(s.conditions[1].type.api(), "Ready");
  EXPECT_EQ(s.conditions[1].status, ConditionStatus::kFalse);
  EXPECT_EQ(s.conditions[1].reason.api(), "Starting");
  EXPECT_EQ(s.conditions[1].message, "");
  EXPECT_EQ(s.conditions[1].observed_generation, 0);
}

TEST(DecodeRunStatusTest, EmptyOrAbsentStatus) {
  for (const std::string text : {"{}", "null", "[]", "\"Running\""}) {
    json::Document d = MustParse(text);
    RunStatus s = DecodeRunStatus(d);
    EXPECT_EQ(s.phase, std::nullopt) << text;
    EXPECT_EQ(s.queue_position, std::nullopt) << text;
    EXPECT_EQ(s.effective_priority, std::nullopt) << text;
    EXPECT_TRUE(s.placement.empty()) << text;
    EXPECT_TRUE(s.conditions.empty()) << text;
    EXPECT_EQ(s.resubmissions, 0) << text;
    EXPECT_EQ(s.observed_generation, 0) << text;
  }
}

TEST(DecodeRunStatusTest, PendingRunWithoutPlacement) {
  json::Document d = MustParse(R"({"phase":"Pending","reason":"NoCapacity","queuePosition":3})");
  RunStatus s = DecodeRunStatus(d);
  EXPECT_EQ(s.phase, Phase::kPending);
  EXPECT_EQ(s.reason.api(), "NoCapacity");
  EXPECT_EQ(s.queue_position, 3);
  EXPECT_EQ(s.effective_priority, std::nullopt);
  EXPECT_TRUE(s.placement.empty());
}

TEST(DecodeRunTest, DecodesTheStatusToo) {
  json::Document d = MustParse(RunJson(R"({"priority":60})", kFullStatus));
  auto run = DecodeRun(d);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->spec.priority, 60);
  EXPECT_EQ(run->status.phase, Phase::kRunning);
  EXPECT_EQ(run->status.fleet, "a100");
  EXPECT_EQ(run->status.placement.size(), 2u);
  EXPECT_EQ(run->status.conditions.size(), 2u);
}

// Issue 44: the engine's cache keeps of a Run's ownerReferences and finalizers only what it needs
// (berth's finalizer; a Run has no controller), however many the tenant writes; the patch that
// removes berth's finalizer then leaves the others as they are (a JSON patch at its index, on the
// version seen); status.podUIDs is read.
TEST(DecodeRunTest, TheCacheKeepsOnlyBerthsFinalizerOfThousandsAndPatchesAroundTheOthers) {
  std::string finalizers, owners;
  for (int i = 0; i < 3000; ++i) {
    finalizers += R"("example.com/f-)" + std::to_string(i) + R"(",)";
    owners += std::string(i > 0 ? "," : "") + R"({"apiVersion":"v1","kind":"ConfigMap","name":"c)" + std::to_string(i) +
              R"(","uid":"u)" + std::to_string(i) + R"("})";
  }
  const std::string text = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"r1",)"
                           R"("namespace":"team-a","uid":"u1","resourceVersion":"77","finalizers":[)" +
                           finalizers + R"("berth.dev/run-cleanup"],"ownerReferences":[)" + owners +
                           R"(]},"spec":{"fleets":["a"]},"status":{"phase":"Running","podUIDs":["p1","p2"]}})";
  json::Document d = MustParse(text);
  auto run = DecodeRun(d);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->meta.finalizers, (std::vector<std::string>{kFinalizer}));
  EXPECT_EQ(run->meta.finalizers_left_out, 3000);
  EXPECT_TRUE(run->meta.owners.empty());
  EXPECT_EQ(run->meta.owners_left_out, 3000);
  EXPECT_EQ(run->status.pod_uids, (std::vector<std::string>{"p1", "p2"}));
  bool json_patch = false;
  const std::string patch = FinalizerPatch(run->meta, /*with_ours=*/false, json_patch);
  EXPECT_TRUE(json_patch);
  EXPECT_EQ(patch, R"([{"op":"test","path":"/metadata/resourceVersion","value":"77"},)"
                   R"({"op":"test","path":"/metadata/finalizers/3000","value":"berth.dev/run-cleanup"},)"
                   R"({"op":"remove","path":"/metadata/finalizers/3000"}])");
}

}  // namespace
}  // namespace berth::reconcilers
