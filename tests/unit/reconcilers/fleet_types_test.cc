#include "reconcilers/objects/fleet_types.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth::reconcilers {
namespace {

namespace json = k8s::json;
using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? std::move(d).value() : json::Document();
}

// A Fleet "a100" with `spec` (JSON text, "" = no spec) and `status` ("" = none).
std::shared_ptr<const Fleet> DecodeExact(const std::string& spec, const std::string& status = {}) {
  std::string text = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet",)"
                     R"("metadata":{"name":"a100","uid":"f-uid","generation":3,"creationTimestamp":"2026-01-02T03:04:05Z"})";
  if (!spec.empty()) text += R"(,"spec":)" + spec;
  if (!status.empty()) text += R"(,"status":)" + status;
  text += "}";
  json::Document d = MustParse(text);
  auto f = DecodeFleet(d);
  EXPECT_NE(f, nullptr) << text;
  return f;
}

// As DecodeExact, with `fields` (a JSON object body without braces, may be empty) added to a
// spec that already has a valid nodeSelector.
std::shared_ptr<const Fleet> DecodeWith(const std::string& fields) {
  return DecodeExact(R"({"nodeSelector":{"pool":"a100"})" + std::string(fields.empty() ? "" : ",") + fields + "}");
}

TEST(DecodeFleetTest, DefaultsWhenOnlyTheSelectorIsGiven) {
  auto f = DecodeWith("");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->meta.name, "a100");
  EXPECT_EQ(f->meta.uid, "f-uid");
  EXPECT_EQ(f->spec.node_selector, (std::map<std::string, std::string>{{"pool", "a100"}}));
  EXPECT_FALSE(f->spec.blocks_auto);
  EXPECT_EQ(f->spec.blocks, 1);
  EXPECT_FALSE(f->spec.cluster_placement);
  EXPECT_EQ(f->spec.topology_key, "");
  EXPECT_EQ(f->spec.gpu_resource, "nvidia.com/gpu");
  EXPECT_EQ(f->spec.max_runs_per_instance, std::nullopt);
  EXPECT_EQ(f->spec.instance_lifetime, std::nullopt);
  EXPECT_EQ(f->invalid_message, "");
  EXPECT_THAT(f->status.instances, IsEmpty());
  EXPECT_THAT(f->status.conditions, IsEmpty());
  EXPECT_EQ(f->status.observed_generation, 0);
}

TEST(DecodeFleetTest, WithoutANameThereIsNoFleet) {
  json::Document d = MustParse(R"({"kind":"Fleet","metadata":{},"spec":{"nodeSelector":{"pool":"x"}}})");
  EXPECT_EQ(DecodeFleet(d), nullptr);
  json::Document not_object = MustParse("[]");
  EXPECT_EQ(DecodeFleet(not_object), nullptr);
}

TEST(DecodeFleetTest, Blocks) {
  struct Case {
    std::string blocks;  // JSON value
    bool want_auto;
    int64_t want_blocks;
    std::string want_invalid;  // substring; "" = valid
  };
  const std::vector<Case> cases = {
      {R"("auto")", true, 1, ""},
      {"1", false, 1, ""},
      {"4", false, 4, ""},
      {"64", false, 64, ""},
      {R"("4")", false, 4, ""},
      {R"("12")", false, 12, ""},
      {R"("abc")", false, 1, R"(spec.blocks must be "auto" or an integer >= 1, not "abc")"},
      {R"("4x")", false, 0, "not \"4x\""},
      {R"("")", false, 0, "spec.blocks"},
      {R"("0")", false, 0, "not \"0\""},
      {R"("-2")", false, 0, "spec.blocks"},
      {R"("Auto")", false, 0, "spec.blocks"},
      {R"("99999999999999999999999")", false, 0, "spec.blocks"},
      {"0", false, 0, "spec.blocks must be at least 1"},
      {"-3", false, 0, "spec.blocks must be at least 1"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE("blocks: " + c.blocks);
    auto f = DecodeWith(R"("blocks":)" + c.blocks);
    ASSERT_NE(f, nullptr);
    if (c.want_invalid.empty()) {
      EXPECT_EQ(f->invalid_message, "");
      EXPECT_EQ(f->spec.blocks_auto, c.want_auto);
      EXPECT_EQ(f->spec.blocks, c.want_blocks);
    } else {
      EXPECT_THAT(f->invalid_message, HasSubstr(c.want_invalid));
      EXPECT_FALSE(f->spec.blocks_auto);
    }
  }
}

TEST(DecodeFleetTest, PlacementTopologyAndGpuResource) {
  struct Case {
    std::string fields;
    bool want_cluster;
    std::string want_topology, want_gpu;
  };
  const std::vector<Case> cases = {
      {R"("placement":"any")", false, "", "nvidia.com/gpu"},
      {R"("placement":"cluster")", true, "", "nvidia.com/gpu"},
      {R"("placement":"cluster","topologyKey":"topology.kubernetes.io/zone")", true, "topology.kubernetes.io/zone",
       "nvidia.com/gpu"},
      {R"("gpuResource":"amd.com/gpu")", false, "", "amd.com/gpu"},
      {R"("placement":"cluster","gpuResource":"habana.ai/gaudi")", true, "", "habana.ai/gaudi"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fields);
    auto f = DecodeWith(c.fields);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->invalid_message, "");
    EXPECT_EQ(f->spec.cluster_placement, c.want_cluster);
    EXPECT_EQ(f->spec.topology_key, c.want_topology);
    EXPECT_EQ(f->spec.gpu_resource, c.want_gpu);
  }
}

TEST(DecodeFleetTest, MaxRunsPerInstance) {
  EXPECT_EQ(DecodeWith("")->spec.max_runs_per_instance, std::nullopt);
  EXPECT_EQ(DecodeWith(R"("maxRunsPerInstance":10)")->spec.max_runs_per_instance, std::optional<int64_t>(10));
  EXPECT_EQ(DecodeWith(R"("maxRunsPerInstance":1)")->spec.max_runs_per_instance, std::optional<int64_t>(1));
  EXPECT_EQ(DecodeWith(R"("maxRunsPerInstance":null)")->spec.max_runs_per_instance, std::nullopt);
}

TEST(DecodeFleetTest, InstanceLifetime) {
  struct Case {
    std::string value;
    std::optional<milliseconds> want;
    std::string want_invalid;  // substring; "" = valid
  };
  const std::vector<Case> cases = {
      {"5h", hours(5), ""},
      {"90m", minutes(90), ""},
      {"1h30m", minutes(90), ""},
      {"2d", hours(48), ""},
      {"soon", std::nullopt, "spec.instanceLifetime"},
      {"5", std::nullopt, "spec.instanceLifetime"},
      {"off", std::nullopt, "spec.instanceLifetime"},  // a lifetime of "never" is no lifetime: leave it out
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    auto f = DecodeWith(R"("instanceLifetime":")" + c.value + "\"");
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->spec.instance_lifetime, c.want);
    if (c.want_invalid.empty()) {
      EXPECT_EQ(f->invalid_message, "");
    } else {
      EXPECT_THAT(f->invalid_message, HasSubstr(c.want_invalid));
    }
  }
}

TEST(DecodeFleetTest, Preemption) {
  struct Case {
    std::string value;  // the spec.preemption JSON, "" = absent
    bool want_lower = false;
    milliseconds want_min_runtime = minutes(5);
    std::string want_invalid;  // substring; "" = valid
  };
  const std::vector<Case> cases = {
      {"", false, minutes(5), ""},
      {R"({"policy":"Never"})", false, minutes(5), ""},
      {R"({"policy":"LowerPriority"})", true, minutes(5), ""},
      {R"({"policy":"LowerPriority","minRuntime":"90s"})", true, milliseconds(90000), ""},
      {R"({"policy":"LowerPriority","minRuntime":"0s"})", true, milliseconds(0), ""},
      {R"({"minRuntime":"1h"})", false, hours(1), ""},
      {R"({"policy":"Always"})", false, minutes(5), "spec.preemption.policy"},
      {R"({"policy":"LowerPriority","minRuntime":"soon"})", true, minutes(5), "spec.preemption.minRuntime"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    auto f = c.value.empty() ? DecodeWith(R"("blocks":1)") : DecodeWith(R"("preemption":)" + c.value);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->spec.preempt_lower_priority, c.want_lower);
    EXPECT_EQ(f->spec.min_runtime, c.want_min_runtime);
    if (c.want_invalid.empty()) {
      EXPECT_EQ(f->invalid_message, "");
    } else {
      EXPECT_THAT(f->invalid_message, HasSubstr(c.want_invalid));
    }
  }
}

TEST(DecodeFleetTest, NodeSelector) {
  struct Case {
    std::string spec;
    std::map<std::string, std::string> want;
    bool want_invalid;
  };
  const std::vector<Case> cases = {
      {R"({"nodeSelector":{"pool":"a","zone":"z1"}})", {{"pool", "a"}, {"zone", "z1"}}, false},
      {R"({"nodeSelector":{"pool":""}})", {{"pool", ""}}, false},
      {R"({"nodeSelector":{}})", {}, true},
      {R"({"blocks":2})", {}, true},
      {R"({"nodeSelector":"pool=a"})", {}, true},
      {R"({"nodeSelector":{"pool":7}})", {}, true},  // non-string values are not labels
      {"", {}, true},                                 // no spec at all
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec);
    auto f = DecodeExact(c.spec);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->spec.node_selector, c.want);
    if (c.want_invalid) {
      EXPECT_EQ(f->invalid_message, "spec.nodeSelector is empty");
    } else {
      EXPECT_EQ(f->invalid_message, "");
    }
  }
}

TEST(DecodeFleetTest, FirstProblemIsTheOneReported) {
  auto f = DecodeExact(R"({"nodeSelector":{},"blocks":"x","instanceLifetime":"never"})");
  EXPECT_THAT(f->invalid_message, HasSubstr("spec.blocks"));
  f = DecodeExact(R"({"nodeSelector":{},"instanceLifetime":"never"})");
  EXPECT_THAT(f->invalid_message, HasSubstr("spec.instanceLifetime"));
}

TEST(DecodeFleetTest, StatusInstancesAndConditions) {
  auto f = DecodeExact(R"({"nodeSelector":{"pool":"a100"}})", R"({
      "observedGeneration":3,
      "instances":[
        {"node":"n1","uid":"u1","totalBlocks":8,"busyBlocks":3,"runsStarted":12,
         "countedRuns":["r-a","r-b",5],"expiresAt":"2026-01-02T08:04:05Z","state":"Busy","message":"3 of 8 blocks busy"},
        {"node":"n2","uid":"u2","totalBlocks":8,"busyBlocks":0,"runsStarted":0,"state":"Idle"}],
      "conditions":[{"type":"Ready","status":"True","reason":"InstancesReady","message":"2 of 2 ready",
                     "lastTransitionTime":"2026-01-02T03:05:00Z","observedGeneration":3}]})");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->status.observed_generation, 3);
  ASSERT_EQ(f->status.instances.size(), 2u);
  const InstanceRecord& a = f->status.instances[0];
  EXPECT_EQ(a.node, "n1");
  EXPECT_EQ(a.uid, "u1");
  EXPECT_EQ(a.total_blocks, 8);
  EXPECT_EQ(a.busy_blocks, 3);
  EXPECT_EQ(a.runs_started, 12);
  EXPECT_THAT(a.counted_runs, ElementsAre("r-a", "r-b"));  // non-strings are skipped
  EXPECT_EQ(FormatTime(a.expires_at), "2026-01-02T08:04:05Z");
  EXPECT_EQ(a.state, api::InstanceState::kBusy);
  EXPECT_EQ(a.message, "3 of 8 blocks busy");
  const InstanceRecord& b = f->status.instances[1];
  EXPECT_EQ(b.node, "n2");
  EXPECT_THAT(b.counted_runs, IsEmpty());
  EXPECT_EQ(FormatTime(b.expires_at), "");
  EXPECT_EQ(b.state, api::InstanceState::kIdle);
  // Looked up by uid through the decoded index.
  EXPECT_EQ(f->RecordForUid("u1"), &f->status.instances[0]);
  EXPECT_EQ(f->RecordForUid("u2"), &f->status.instances[1]);
  EXPECT_EQ(f->RecordForUid("n1"), nullptr);
  EXPECT_EQ(f->RecordForUid(""), nullptr);
  ASSERT_EQ(f->status.conditions.size(), 1u);
  EXPECT_EQ(f->status.conditions[0].type.api(), "Ready");
  EXPECT_EQ(f->status.conditions[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(f->status.conditions[0].reason.api(), "InstancesReady");
  EXPECT_EQ(f->status.conditions[0].observed_generation, 3);
}

TEST(FleetTest, Selects) {
  Fleet f;
  f.spec.node_selector = {{"pool", "a100"}, {"zone", "z1"}};
  struct Case {
    std::string name;
    std::map<std::string, std::string> labels;
    bool want;
  };
  const std::vector<Case> cases = {
      {"exact", {{"pool", "a100"}, {"zone", "z1"}}, true},
      {"superset", {{"pool", "a100"}, {"zone", "z1"}, {"kubernetes.io/hostname", "n1"}}, true},
      {"one label missing", {{"pool", "a100"}}, false},
      {"other value", {{"pool", "a100"}, {"zone", "z2"}}, false},
      {"value case matters", {{"pool", "A100"}, {"zone", "z1"}}, false},
      {"no labels", {}, false},
  };
  for (const auto& c : cases) EXPECT_EQ(f.Selects(c.labels), c.want) << c.name;

  Fleet empty;  // an empty selector must not select every node
  EXPECT_FALSE(empty.Selects({}));
  EXPECT_FALSE(empty.Selects({{"pool", "a100"}}));
}

TEST(FleetTest, RecordForUidMatchesTheNodeUidNotItsName) {
  Fleet f;
  auto record = [](const std::string& node, const std::string& uid, int64_t runs) {
    InstanceRecord r;
    r.node = node;
    r.uid = uid;
    r.runs_started = runs;
    return r;
  };
  f.status.instances = {record("n1", "old-uid", 9), record("n2", "u2", 1)};
  ASSERT_NE(f.RecordForUid("old-uid"), nullptr);
  EXPECT_EQ(f.RecordForUid("old-uid")->runs_started, 9);
  EXPECT_EQ(f.RecordForUid("u2")->node, "n2");
  EXPECT_EQ(f.RecordForUid("n1"), nullptr);
  EXPECT_EQ(f.RecordForUid("new-uid"), nullptr);
  EXPECT_EQ(f.RecordForUid(""), nullptr);
}

}  // namespace
}  // namespace berth::reconcilers
