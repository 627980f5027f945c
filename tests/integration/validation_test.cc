// Bad input. Part 1: every field the CRD schema can constrain is refused by the real API server
// (422 Invalid) with a message that names the field and the rule, one test per field and rule;
// a PATCH that would make a stored Run invalid is refused and changes nothing; the CRDs' CEL rules
// (x-kubernetes-validations) refuse names the Pods could not carry. Part 2: what the
// schema cannot catch reaches berth-controller, which fails or parks such runs with a clear
// reason and message, never crashes, and keeps serving the good runs behind them.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine_fixture.h"
#include "harness.h"
#include "k8s/json.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kFleets;
using k8s::resources::kNodes;
using k8s::resources::kRuns;

const std::string kSource = BERTH_SOURCE_DIR;

// A valid Pod template, for the Run cases that break something else.
const std::string kTemplate = R"("template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}})";

// Kubernetes 1.35+ names an array item's field with its index (spec.fleets[1]; 1.20 left it out)
// and prints the number of properties for minProperties as the "value". The messages below are
// 1.37's exact words.
struct BadInput {
  std::string name;  // the gtest name: <Kind>_<field>_<what>
  std::string kind;  // Run or Fleet
  std::string spec;  // the whole JSON value of .spec ("" = no spec at all)
  std::vector<std::string> expect;  // every one must be in the API's message
};

std::ostream& operator<<(std::ostream& os, const BadInput& b) { return os << b.name; }

// The spec of a Run: `fields` (JSON members, may be empty) plus a valid template.
std::string RunSpec(const std::string& fields) { return "{" + fields + (fields.empty() ? "" : ",") + kTemplate + "}"; }
// The spec of a Fleet: a valid nodeSelector plus `fields`.
std::string FleetSpec(const std::string& fields) {
  return R"({"nodeSelector":{"pool":"x"})" + std::string(fields.empty() ? "" : ",") + fields + "}";
}

const char* kQuantityRule =
    R"(should match '^(\+)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$')";
const char* kDurationOrOffRule = R"(should match '^(off|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d))+)$')";
const char* kDurationRule = R"(should match '^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d))+$')";
const char* kQualifiedNameRule =
    R"(should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')";
const char* kTopologyKeyRule =
    R"(should match '^(([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$')";

std::vector<BadInput> Cases() {
  const std::string q = kQuantityRule;
  return {
      // ---- Run ----
      {"Run_spec_Missing", "Run", "", {"spec: Required value"}},
      {"Run_priority_Above100", "Run", RunSpec(R"("priority":101)"),
       {"spec.priority: Invalid value: 101: spec.priority in body should be less than or equal to 100"}},
      {"Run_priority_Negative", "Run", RunSpec(R"("priority":-1)"),
       {"spec.priority: Invalid value: -1: spec.priority in body should be greater than or equal to 0"}},
      {"Run_priority_NotAnInteger", "Run", RunSpec(R"("priority":1.5)"),
       {"spec.priority: Invalid value: \"number\": spec.priority in body must be of type integer: \"number\""}},
      {"Run_priority_String", "Run", RunSpec(R"("priority":"high")"),
       {"spec.priority: Invalid value: \"string\": spec.priority in body must be of type integer: \"string\""}},
      {"Run_stop_String", "Run", RunSpec(R"("stop":"yes")"),
       {"spec.stop: Invalid value: \"string\": spec.stop in body must be of type boolean: \"string\""}},
      {"Run_suspend_String", "Run", RunSpec(R"("suspend":"true")"),
       {"spec.suspend: Invalid value: \"string\": spec.suspend in body must be of type boolean: \"string\""}},
      {"Run_suspend_Integer", "Run", RunSpec(R"("suspend":1)"),
       {"spec.suspend: Invalid value: \"integer\": spec.suspend in body must be of type boolean: \"integer\""}},
      {"Run_wholeInstances_String", "Run", RunSpec(R"("wholeInstances":"false")"),
       {"spec.wholeInstances: Invalid value: \"string\": spec.wholeInstances in body must be of type boolean: \"string\""}},
      {"Run_nodes_Zero", "Run", RunSpec(R"("nodes":0)"),
       {"spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or equal to 1"}},
      {"Run_nodes_Negative", "Run", RunSpec(R"("nodes":-2)"),
       {"spec.nodes: Invalid value: -2: spec.nodes in body should be greater than or equal to 1"}},
      {"Run_nodes_AboveMaximum", "Run", RunSpec(R"("nodes":5001)"),
       {"spec.nodes: Invalid value: 5001: spec.nodes in body should be less than or equal to 5000"}},
      {"Run_nodes_Beyond32Bits", "Run", RunSpec(R"("nodes":4294967297)"),
       {"spec.nodes: Invalid value: 4294967297: spec.nodes in body should be less than or equal to 5000"}},
      {"Run_nodes_String", "Run", RunSpec(R"("nodes":"two")"),
       {"spec.nodes: Invalid value: \"string\": spec.nodes in body must be of type integer: \"string\""}},
      {"Run_resources_NotAnObject", "Run", RunSpec(R"("resources":"big")"),
       {"spec.resources: Invalid value: \"string\": spec.resources in body must be of type object: \"string\""}},
      {"Run_resources_cpu_NotAQuantity", "Run", RunSpec(R"("resources":{"cpu":"four"})"),
       {"spec.resources.cpu: Invalid value: \"four\": spec.resources.cpu in body " + q}},
      {"Run_resources_cpu_NegativeString", "Run", RunSpec(R"("resources":{"cpu":"-1"})"),
       {"spec.resources.cpu: Invalid value: \"-1\": spec.resources.cpu in body " + q}},
      {"Run_resources_cpu_NegativeInteger", "Run", RunSpec(R"("resources":{"cpu":-2})"),
       {"spec.resources.cpu: Invalid value: -2: spec.resources.cpu in body should be greater than or equal to 0"}},
      {"Run_resources_cpu_WithSpace", "Run", RunSpec(R"("resources":{"cpu":"4 cores"})"),
       {"spec.resources.cpu: Invalid value: \"4 cores\": spec.resources.cpu in body " + q}},
      {"Run_resources_memory_UnknownSuffix", "Run", RunSpec(R"("resources":{"memory":"16GB"})"),
       {"spec.resources.memory: Invalid value: \"16GB\": spec.resources.memory in body " + q}},
      {"Run_resources_memory_NegativeInteger", "Run", RunSpec(R"("resources":{"memory":-1})"),
       {"spec.resources.memory: Invalid value: -1: spec.resources.memory in body should be greater than or equal to 0"}},
      {"Run_resources_memory_Boolean", "Run", RunSpec(R"("resources":{"memory":true})"), {"spec.resources.memory: Invalid value"}},
      {"Run_resources_gpu_Negative", "Run", RunSpec(R"("resources":{"gpu":-1})"),
       {"spec.resources.gpu: Invalid value: -1: spec.resources.gpu in body should be greater than or equal to 0"}},
      {"Run_resources_gpu_NotAnInteger", "Run", RunSpec(R"("resources":{"gpu":0.5})"),
       {"spec.resources.gpu: Invalid value: \"number\": spec.resources.gpu in body must be of type integer: \"number\""}},
      {"Run_resources_gpu_String", "Run", RunSpec(R"("resources":{"gpu":"2"})"),
       {"spec.resources.gpu: Invalid value: \"string\": spec.resources.gpu in body must be of type integer: \"string\""}},
      {"Run_fleets_NotAList", "Run", RunSpec(R"("fleets":"a100")"),
       {"spec.fleets: Invalid value: \"string\": spec.fleets in body must be of type array: \"string\""}},
      {"Run_fleets_EmptyName", "Run", RunSpec(R"("fleets":[""])"),
       {"spec.fleets[0]: Invalid value: \"\": spec.fleets[0] in body should be at least 1 chars long"}},
      {"Run_fleets_NotAnObjectName", "Run", RunSpec(R"("fleets":["a100","GPU_Pool"])"),
       {"spec.fleets[1]: Invalid value: \"GPU_Pool\": spec.fleets[1] in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'"}},
      {"Run_fleets_NameNotAString", "Run", RunSpec(R"("fleets":[7])"),
       {"spec.fleets[0]: Invalid value: \"integer\": spec.fleets[0] in body must be of type string: \"integer\""}},
      {"Run_maxDuration_Words", "Run", RunSpec(R"("maxDuration":"4 hours")"),
       {"spec.maxDuration: Invalid value: \"4 hours\": spec.maxDuration in body " + std::string(kDurationOrOffRule)}},
      {"Run_maxDuration_UnknownUnit", "Run", RunSpec(R"("maxDuration":"5x")"),
       {"spec.maxDuration: Invalid value: \"5x\": spec.maxDuration in body " + std::string(kDurationOrOffRule)}},
      {"Run_maxDuration_NoUnit", "Run", RunSpec(R"("maxDuration":"90")"),
       {"spec.maxDuration: Invalid value: \"90\": spec.maxDuration in body " + std::string(kDurationOrOffRule)}},
      {"Run_maxDuration_Negative", "Run", RunSpec(R"("maxDuration":"-1h")"),
       {"spec.maxDuration: Invalid value: \"-1h\": spec.maxDuration in body " + std::string(kDurationOrOffRule)}},
      {"Run_maxDuration_Empty", "Run", RunSpec(R"("maxDuration":"")"),
       {"spec.maxDuration: Invalid value: \"\": spec.maxDuration in body " + std::string(kDurationOrOffRule)}},
      {"Run_maxDuration_OffAsBoolean", "Run", RunSpec(R"("maxDuration":false)"),
       {"spec.maxDuration: Invalid value: \"boolean\": spec.maxDuration in body must be of type string: \"boolean\""}},
      {"Run_retry_NotAnObject", "Run", RunSpec(R"("retry":true)"),
       {"spec.retry: Invalid value: \"boolean\": spec.retry in body must be of type object: \"boolean\""}},
      {"Run_retry_onEvents_UnknownEvent", "Run", RunSpec(R"("retry":{"onEvents":["error","sometimes"]})"),
       {"spec.retry.onEvents[1]: Unsupported value: \"sometimes\": supported values: \"no-capacity\", \"interruption\", \"error\""}},
      {"Run_retry_onEvents_NotAList", "Run", RunSpec(R"("retry":{"onEvents":"error"})"),
       {"spec.retry.onEvents: Invalid value: \"string\": spec.retry.onEvents in body must be of type array: \"string\""}},
      {"Run_retry_duration_Words", "Run", RunSpec(R"("retry":{"duration":"forever"})"),
       {"spec.retry.duration: Invalid value: \"forever\": spec.retry.duration in body " + std::string(kDurationOrOffRule)}},
      {"Run_retry_duration_UnknownUnit", "Run", RunSpec(R"("retry":{"duration":"2w"})"),
       {"spec.retry.duration: Invalid value: \"2w\": spec.retry.duration in body " + std::string(kDurationOrOffRule)}},
      {"Run_template_Missing", "Run", R"({"priority":50})", {"a Run has exactly one of spec.template"}},
      {"Run_template_and_workloadRef", "Run", R"({"template":{"spec":{"containers":[{"name":"m","image":"busybox"}]}},"workloadRef":{"kind":"Job","name":"j","uid":"u"}})", {"a Run has exactly one of spec.template"}},
      {"Run_template_NotAnObject", "Run", R"({"template":"busybox"})",
       {"spec.template: Invalid value: \"string\": spec.template in body must be of type object: \"string\""}},
      {"Run_template_spec_Missing", "Run", R"({"template":{"metadata":{"labels":{"app":"x"}}}})", {"spec.template.spec: Required value"}},
      {"Run_template_spec_containers_Missing", "Run", R"({"template":{"spec":{"restartPolicy":"Never"}}})",
       {"spec.template.spec.containers: Required value"}},
      {"Run_template_spec_containers_Empty", "Run", R"({"template":{"spec":{"containers":[]}}})",
       {"spec.template.spec.containers: Invalid value: 0: spec.template.spec.containers in body should have at least 1 items"}},
      {"Run_template_spec_containers_NotAList", "Run", R"({"template":{"spec":{"containers":{"name":"main","image":"busybox"}}}})",
       {"spec.template.spec.containers: Invalid value: \"object\": spec.template.spec.containers in body must be of type array: \"object\""}},
      {"Run_template_spec_containers_name_Missing", "Run", R"({"template":{"spec":{"containers":[{"image":"busybox"}]}}})",
       {"spec.template.spec.containers[0].name: Required value"}},
      {"Run_template_spec_containers_name_NotADnsLabel", "Run",
       R"({"template":{"spec":{"containers":[{"name":"Main_1","image":"busybox"}]}}})",
       {"spec.template.spec.containers[0].name: Invalid value: \"Main_1\": spec.template.spec.containers[0].name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"}},
      {"Run_template_spec_containers_image_Missing", "Run", R"({"template":{"spec":{"containers":[{"name":"main"}]}}})",
       {"spec.template.spec.containers[0].image: Required value"}},
      {"Run_template_spec_containers_image_Empty", "Run", R"({"template":{"spec":{"containers":[{"name":"main","image":""}]}}})",
       {"spec.template.spec.containers[0].image: Invalid value: \"\": spec.template.spec.containers[0].image in body should be at least 1 chars long"}},
      // ---- Fleet ----
      {"Fleet_spec_Missing", "Fleet", "", {"spec: Required value"}},
      {"Fleet_nodeSelector_Missing", "Fleet", R"({"blocks":2})", {"spec.nodeSelector: Required value"}},
      {"Fleet_nodeSelector_Empty", "Fleet", R"({"nodeSelector":{}})",
       {"spec.nodeSelector: Invalid value: 0: spec.nodeSelector in body should have at least 1 properties"}},
      {"Fleet_nodeSelector_ValueNotAString", "Fleet", R"({"nodeSelector":{"gpus":8}})",
       {"spec.nodeSelector.gpus: Invalid value: \"integer\": spec.nodeSelector.gpus in body must be of type string: \"integer\""}},
      {"Fleet_nodeSelector_ValueNotALabelValue", "Fleet", R"({"nodeSelector":{"pool":"a100 nodes"}})",
       {"spec.nodeSelector.pool: Invalid value: \"a100 nodes\": spec.nodeSelector.pool in body should match '^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'"}},
      {"Fleet_blocks_Word", "Fleet", FleetSpec(R"("blocks":"abc")"),
       {"spec.blocks: Invalid value: \"abc\": spec.blocks in body should match '^(auto|[1-9][0-9]*)$'"}},
      {"Fleet_blocks_ZeroString", "Fleet", FleetSpec(R"("blocks":"0")"),
       {"spec.blocks: Invalid value: \"0\": spec.blocks in body should match '^(auto|[1-9][0-9]*)$'"}},
      {"Fleet_blocks_Zero", "Fleet", FleetSpec(R"("blocks":0)"),
       {"spec.blocks: Invalid value: 0: spec.blocks in body should be greater than or equal to 1"}},
      {"Fleet_blocks_Negative", "Fleet", FleetSpec(R"("blocks":-4)"),
       {"spec.blocks: Invalid value: -4: spec.blocks in body should be greater than or equal to 1"}},
      {"Fleet_placement_Unknown", "Fleet", FleetSpec(R"("placement":"everywhere")"),
       {"spec.placement: Unsupported value: \"everywhere\": supported values: \"any\", \"cluster\""}},
      {"Fleet_topologyKey_NotALabelKey", "Fleet", FleetSpec(R"("topologyKey":"my zone")"),
       {"spec.topologyKey: Invalid value: \"my zone\": spec.topologyKey in body " + std::string(kTopologyKeyRule)}},
      {"Fleet_gpuResource_Empty", "Fleet", FleetSpec(R"("gpuResource":"")"),
       {"spec.gpuResource: Invalid value: \"\": spec.gpuResource in body should be at least 1 chars long"}},
      {"Fleet_gpuResource_NotAResourceName", "Fleet", FleetSpec(R"("gpuResource":"nvidia gpu")"),
       {"spec.gpuResource: Invalid value: \"nvidia gpu\": spec.gpuResource in body " + std::string(kQualifiedNameRule)}},
      {"Fleet_maxRunsPerInstance_Zero", "Fleet", FleetSpec(R"("maxRunsPerInstance":0)"),
       {"spec.maxRunsPerInstance: Invalid value: 0: spec.maxRunsPerInstance in body should be greater than or equal to 1"}},
      {"Fleet_maxRunsPerInstance_String", "Fleet", FleetSpec(R"("maxRunsPerInstance":"10")"),
       {"spec.maxRunsPerInstance: Invalid value: \"string\": spec.maxRunsPerInstance in body must be of type integer: \"string\""}},
      {"Fleet_instanceLifetime_Words", "Fleet", FleetSpec(R"("instanceLifetime":"5 hours")"),
       {"spec.instanceLifetime: Invalid value: \"5 hours\": spec.instanceLifetime in body " + std::string(kDurationRule)}},
      {"Fleet_instanceLifetime_Off", "Fleet", FleetSpec(R"("instanceLifetime":"off")"),
       {"spec.instanceLifetime: Invalid value: \"off\": spec.instanceLifetime in body " + std::string(kDurationRule)}},
      // Issue 44: the most shutdown time berth gives a Pod is a duration.
      {"Fleet_maxGracePeriod_Words", "Fleet", FleetSpec(R"("maxGracePeriod":"ten minutes")"),
       {"spec.maxGracePeriod: Invalid value: \"ten minutes\": spec.maxGracePeriod in body " + std::string(kDurationRule)}},
      {"Fleet_maxGracePeriod_Number", "Fleet", FleetSpec(R"("maxGracePeriod":600)"),
       {"spec.maxGracePeriod: Invalid value: \"integer\": spec.maxGracePeriod in body must be of type string: \"integer\""}},
  };
}

class SchemaRejects : public IntegrationTest, public ::testing::WithParamInterface<BadInput> {};

TEST_P(SchemaRejects, WithTheFieldAndTheRule) {
  const BadInput& c = GetParam();
  const bool run = c.kind == "Run";
  const std::string name = run ? "bad" : "bad-" + ns_;
  std::string body = R"({"apiVersion":"berth.dev/v1alpha1","kind":")" + c.kind + R"(","metadata":{"name":")" + name + "\"}";
  if (!c.spec.empty()) body += R"(,"spec":)" + c.spec;
  body += "}";
  const std::string path = run ? kRuns.Path(ns_) : kFleets.Path();
  auto created = client()->Create(path, body);
  if (created.ok()) {
    (void)client()->Delete(run ? kRuns.Path(ns_, name) : kFleets.Path("", name));
    FAIL() << c.name << ": the API server accepted " << body;
  }
  const k8s::Status& s = created.status();
  EXPECT_EQ(s.code(), 422) << c.name << ": " << s.ToString();
  EXPECT_EQ(s.reason(), "Invalid") << c.name << ": " << s.ToString();
  const std::string head = (run ? "Run.berth.dev \"" : "Fleet.berth.dev \"") + name + "\" is invalid: ";
  EXPECT_EQ(s.message().rfind(head, 0), 0u) << c.name << ": the message does not name the object: " << s.message();
  for (const auto& e : c.expect) {
    EXPECT_NE(s.message().find(e), std::string::npos) << c.name << ": expected\n  " << e << "\nin\n  " << s.message();
  }
  // Nothing was stored.
  auto got = client()->Get(run ? kRuns.Path(ns_, name) : kFleets.Path("", name));
  EXPECT_TRUE(got.status().IsNotFound()) << c.name << ": " << got.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(EveryField, SchemaRejects, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<BadInput>& i) { return i.param.name; });

class Validation : public IntegrationTest {
 protected:
  // The Runs made here must not outlive the test: a controller of a later test would place them
  // on its fleets (fleets are cluster-wide). No controller runs now, so there is no finalizer.
  void TearDown() override {
    cp().Kubectl({"-n", ns_, "delete", "runs", "--all", "--wait=true", "--timeout=30s"});
    IntegrationTest::TearDown();
  }
  std::string RunJson(const std::string& name, const std::string& spec) {
    return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name + R"("},"spec":)" + spec + "}";
  }
};

// The contract's own examples (api.md) and examples/ stay valid under the tightened schema.
TEST_F(Validation, TheContractsExamplesAreAccepted) {
  CommandResult r = Kubectl({"apply", "--dry-run=server", "-f", kSource + "/examples/fleets.yaml", "-f", kSource + "/examples/runs.yaml"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  r = Kubectl({"apply", "--dry-run=server", "-f", "-"}, R"(apiVersion: berth.dev/v1alpha1
kind: Run
metadata: {name: train}
spec:
  priority: 50
  nodes: 1
  resources:
    cpu: "4"
    memory: 16Gi
    gpu: 1
  fleets: [a100]
  maxDuration: 4h
  retry:
    onEvents: [no-capacity, interruption, error]
    duration: 1h
  template:
    metadata: {labels: {app: train}}
    spec:
      containers: [{name: main, image: ghcr.io/x/train:1, command: [python, train.py]}]
---
apiVersion: berth.dev/v1alpha1
kind: Run
metadata: {name: forms}
spec:
  resources: {cpu: 500m, memory: 1.5Gi}
  maxDuration: "off"
  retry: {duration: 1h30m}
  template:
    spec:
      initContainers: [{name: init, image: busybox}]
      containers: [{name: main, image: busybox}, {name: sidecar-2, image: busybox}]
      volumes: [{name: data, emptyDir: {}}]
---
apiVersion: berth.dev/v1alpha1
kind: Run
metadata: {name: days}
spec:
  resources: {cpu: 2, memory: 1073741824}
  maxDuration: 2d
  retry: {duration: "off"}
  template:
    spec:
      containers: [{name: main, image: busybox}]
---
apiVersion: berth.dev/v1alpha1
kind: Fleet
metadata: {name: a100-validation}
spec:
  nodeSelector: {pool: a100}
  blocks: auto
  placement: cluster
  topologyKey: ""
  gpuResource: nvidia.com/gpu
  maxRunsPerInstance: 10
  instanceLifetime: 5h
---
apiVersion: berth.dev/v1alpha1
kind: Fleet
metadata: {name: forms-validation}
spec:
  nodeSelector: {pool: cpu, tier: gold}
  blocks: "4"
  topologyKey: topology.kubernetes.io/zone
  gpuResource: amd.com/gpu
  instanceLifetime: 1h30m
)");
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
}

// A PATCH that would make a stored Run invalid is refused as a whole; the object is unchanged.
TEST_F(Validation, PatchMakingARunInvalidIsRefusedAndChangesNothing) {
  auto created = client()->Create(kRuns.Path(ns_), RunJson("keep", RunSpec(R"("priority":40)")));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const std::string rv = json::GetString(json::Find(*created, {"metadata", "resourceVersion"}));
  struct Patch {
    std::string type, body, expect;
  };
  const std::vector<Patch> patches = {
      {"merge", R"({"spec":{"priority":101}})",
       "spec.priority: Invalid value: 101: spec.priority in body should be less than or equal to 100"},
      {"merge", R"({"spec":{"priority":90,"nodes":0}})",
       "spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or equal to 1"},
      {"merge", R"({"spec":{"maxDuration":"5x"}})", "spec.maxDuration: Invalid value: \"5x\""},
      {"merge", R"({"spec":{"template":null}})", "a Run has exactly one of spec.template"},
      {"json", R"([{"op":"replace","path":"/spec/template/spec/containers","value":[]}])",
       "spec.template.spec.containers: Invalid value: 0: spec.template.spec.containers in body should have at least 1 items"},
  };
  for (const auto& p : patches) {
    auto r = p.type == "merge" ? client()->MergePatch(kRuns.Path(ns_, "keep"), p.body)
                               : client()->JsonPatch(kRuns.Path(ns_, "keep"), p.body);
    ASSERT_FALSE(r.ok()) << p.body << " was accepted";
    EXPECT_EQ(r.status().code(), 422) << p.body << ": " << r.status().ToString();
    EXPECT_NE(r.status().message().find(p.expect), std::string::npos) << p.body << ": " << r.status().message();
  }
  // kubectl patch says the same and exits non-zero.
  CommandResult k = Kubectl({"patch", "run", "keep", "--type", "merge", "-p", R"({"spec":{"priority":101}})"});
  EXPECT_NE(k.exit_code, 0);
  EXPECT_NE(k.err.find("spec.priority: Invalid value: 101"), std::string::npos) << k.err;

  auto stored = client()->Get(kRuns.Path(ns_, "keep"));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(json::GetString(json::Find(*stored, {"metadata", "resourceVersion"})), rv) << "a refused patch wrote something";
  EXPECT_EQ(json::GetInt(*json::Find(*stored, {"spec"}), "priority"), 40);
  EXPECT_EQ(json::GetInt(*json::Find(*stored, {"spec"}), "nodes"), 1);
  EXPECT_EQ(json::Find(*stored, {"spec", "maxDuration"}), nullptr);
  const json::Value* containers = json::Find(*stored, {"spec", "template", "spec", "containers"});
  ASSERT_NE(containers, nullptr);
  EXPECT_EQ(containers->Size(), 1u);
}

// Unknown fields: a client that does not ask for strict field validation (fieldValidation defaults
// to Warn) gets them pruned by the structural schema; kubectl asks for Strict, and the API server
// refuses the typo.
TEST_F(Validation, UnknownFieldsArePrunedForAClientAndRefusedForKubectl) {
  auto created = client()->Create(kRuns.Path(ns_), RunJson("typo", RunSpec(R"("prority":90,"retry":{"onEvent":["error"]})")));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(json::Find(*created, {"spec", "prority"}), nullptr) << "unknown field kept";
  EXPECT_EQ(json::GetInt(*json::Find(*created, {"spec"}), "priority"), 50) << "the default, not the misspelt 90";
  EXPECT_EQ(json::Find(*created, {"spec", "retry", "onEvent"}), nullptr);
  const json::Value* events = json::Find(*created, {"spec", "retry", "onEvents"});
  ASSERT_NE(events, nullptr) << "retry.onEvents defaulted";
  EXPECT_EQ(events->Size(), 3u);
  // Inside the Pod template unknown fields are kept: the API server checks them when berth creates the Pod.
  auto kept = client()->Create(kRuns.Path(ns_), RunJson("podfields", R"({"template":{"spec":{"containers":[{"name":"main","image":"busybox","tty":true}],"hostNetwork":false}}})"));
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_NE(json::Find(*kept, {"spec", "template", "spec", "hostNetwork"}), nullptr);

  CommandResult k = Kubectl({"apply", "-f", "-"}, R"(apiVersion: berth.dev/v1alpha1
kind: Run
metadata: {name: typo-kubectl}
spec:
  prority: 90
  template:
    spec:
      containers: [{name: main, image: busybox}]
)");
  EXPECT_NE(k.exit_code, 0) << "kubectl accepted a misspelt field: " << k.out;
  EXPECT_NE(k.err.find("strict decoding error: unknown field \"spec.prority\""), std::string::npos) << k.err;
  EXPECT_TRUE(GetRun("typo-kubectl").IsNull()) << "kubectl sent it anyway";
}

// ---- CEL rules (x-kubernetes-validations): names the Pods could not carry ----

std::string RunYaml(const std::string& name, int nodes) {
  return "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n  nodes: " +
         std::to_string(nodes) + "\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
}
std::string FleetYaml(const std::string& name) {
  return "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + name + "}\nspec:\n  nodeSelector: {pool: x}\n";
}

// The multi-node rule's words, as `kubectl apply` prints them after `metadata.name: Invalid value: `.
const char* kDns1035Rule =
    "a multi-node run (spec.nodes > 1) must have a name that is a DNS-1035 label (lowercase letters, digits and '-', "
    "starting with a letter and ending with a letter or digit): its Pods find each other through a headless Service of "
    "that name";

// A multi-node run's Pods are found through a headless Service named after it (a DNS-1035 label)
// and have hostnames <run>-<rank>; every Pod carries the label berth.dev/run=<run> (63 characters
// at most); every Pod tolerates berth.dev/fleet=<fleet> (a label value too). The API server refuses
// names those cannot carry when the object is applied, with the rule's message, and stores nothing
// (before the rules a multi-node run named "1train" was placed and then waited for a Service the
// API server would never create).
TEST_F(Validation, CelRulesRefuseNamesThePodsCouldNotCarry) {
  const std::string l60(60, 'l'), l58(58, 'l');
  struct Case {
    std::string what, kind, name, yaml, want;
  };
  const std::vector<Case> refused = {
      {"multi-node run named with a leading digit", "Run", "1train", RunYaml("1train", 2),
       "The Run \"1train\" is invalid: metadata.name: Invalid value: " + std::string(kDns1035Rule)},
      {"multi-node run named with a dot", "Run", "train.v2", RunYaml("train.v2", 3),
       "The Run \"train.v2\" is invalid: metadata.name: Invalid value: " + std::string(kDns1035Rule)},
      {"run name longer than 63 characters", "Run", std::string(64, 'l'), RunYaml(std::string(64, 'l'), 1),
       "The Run \"" + std::string(64, 'l') + "\" is invalid: metadata.name: Invalid value: a Run's name must be no more "
       "than 63 characters: it is the value of the label berth.dev/run on its Pods"},
      // Rank 100's hostname would be 64 characters.
      {"multi-node run name too long for its last rank's hostname", "Run", l60, RunYaml(l60, 101),
       "The Run \"" + l60 + "\" is invalid: metadata.name: Invalid value: a multi-node run's name must leave room for "
       "its Pods' hostnames <name>-<rank>, 63 characters at most (a name of up to 58 characters fits any number of nodes)"},
      {"fleet name longer than 63 characters", "Fleet", std::string(64, 'f'), FleetYaml(std::string(64, 'f')),
       "The Fleet \"" + std::string(64, 'f') + "\" is invalid: metadata.name: Invalid value: a Fleet's name must be no "
       "more than 63 characters: it is the value of the taint berth.dev/fleet its nodes may carry and of the toleration "
       "its runs' Pods get"},
  };
  for (const Case& c : refused) {
    SCOPED_TRACE(c.what);
    CommandResult r = Kubectl({"apply", "-f", "-"}, c.yaml);
    EXPECT_NE(r.exit_code, 0) << "accepted: " << r.out;
    EXPECT_NE(r.err.find(c.want), std::string::npos) << "expected\n  " << c.want << "\nin\n  " << r.err;
    auto got = client()->Get(c.kind == "Run" ? kRuns.Path(ns_, c.name) : kFleets.Path("", c.name));
    EXPECT_TRUE(got.status().IsNotFound()) << "stored: " << got.status().ToString();
  }
  // What the rules let through: a single-node run has no Service; the longest names that fit.
  const std::vector<std::pair<std::string, std::string>> accepted = {
      {"single-node run named with a leading digit", RunYaml("1train", 1)},
      {"multi-node run named with a DNS-1035 label", RunYaml("train-2", 2)},
      {"60 characters for 100 nodes (rank 99: 63 characters)", RunYaml(l60, 100)},
      {"58 characters for 5000 nodes", RunYaml(l58, 5000)},
      {"run name of 63 characters", RunYaml(std::string(63, 'l'), 1)},
      {"fleet name of 63 characters", FleetYaml(std::string(63, 'f'))},
  };
  for (const auto& [what, yaml] : accepted) {
    CommandResult r = Kubectl({"apply", "--dry-run=server", "-f", "-"}, yaml);
    EXPECT_EQ(r.exit_code, 0) << what << ": " << r.err;
  }
  // A change that breaks a rule is refused too; other changes of the same run are not.
  Apply(RunYaml("1single", 1));
  CommandResult k = Kubectl({"patch", "run", "1single", "--type", "merge", "-p", R"({"spec":{"nodes":2}})"});
  EXPECT_NE(k.exit_code, 0);
  EXPECT_NE(k.err.find("The Run \"1single\" is invalid: metadata.name: Invalid value: " + std::string(kDns1035Rule)),
            std::string::npos)
      << k.err;
  k = Kubectl({"patch", "run", "1single", "--type", "merge", "-p", R"({"spec":{"priority":80}})"});
  EXPECT_EQ(k.exit_code, 0) << k.err;
  json::Document stored = GetRun("1single");
  ASSERT_FALSE(stored.IsNull());
  EXPECT_EQ(json::GetInt(*json::Find(stored, {"spec"}), "nodes"), 1);
  EXPECT_EQ(json::GetInt(*json::Find(stored, {"spec"}), "priority"), 80);
}

// Runs stored before the CRD had its rules (an upgrade of berth) keep working: berth can still
// write their status and remove their finalizer, users can patch them and delete them; only a
// change that breaks a rule (here: spec.nodes) is refused.
TEST_F(Validation, RunsStoredBeforeTheRulesCanStillBeWrittenAndDeleted) {
  std::ifstream in(kSource + "/deploy/crds/berth.dev_runs.yaml");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string crd = buf.str();
  const size_t from = crd.find("        x-kubernetes-validations:\n");
  const size_t to = crd.find("        properties:\n", from);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  const std::string without_rules = crd.substr(0, from) + crd.substr(to);
  // The rules are in force when a multi-node run named "1probe" is refused.
  auto rules_in_force = [&] { return Kubectl({"apply", "--dry-run=server", "-f", "-"}, RunYaml("1probe", 2)).exit_code != 0; };
  ASSERT_TRUE(rules_in_force());
  // The CRD as deploy/crds/ has it again when the test ends, however it ends.
  struct Finally {
    std::function<void()> f;
    ~Finally() { f(); }
  } restore{[&] {
    cp().Kubectl({"apply", "-f", "-"}, crd);
    EXPECT_TRUE(Eventually(rules_in_force)) << "the CRD's rules are not back";
  }};
  CommandResult r = cp().Kubectl({"apply", "-f", "-"}, without_rules);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Eventually([&] { return !rules_in_force(); })) << "the CRD without rules never took effect";
  Apply(RunYaml("1legacy", 2));
  r = Kubectl({"patch", "run", "1legacy", "--type", "merge", "-p", R"({"metadata":{"finalizers":["berth.dev/run-cleanup"]}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = cp().Kubectl({"apply", "-f", "-"}, crd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(Eventually(rules_in_force)) << "the CRD's rules never took effect";

  // What berth writes: its status (the /status subresource) ...
  auto st = client()->MergePatch(kRuns.Path(ns_, "1legacy", "status"), R"({"status":{"phase":"Pending","reason":"NoCapacity"}})");
  EXPECT_TRUE(st.ok()) << st.status().ToString();
  // ... what a user writes ...
  r = Kubectl({"patch", "run", "1legacy", "--type", "merge", "-p", R"({"spec":{"priority":70}})"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // ... except a change that breaks a rule.
  r = Kubectl({"patch", "run", "1legacy", "--type", "merge", "-p", R"({"spec":{"nodes":3}})"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(kDns1035Rule), std::string::npos) << r.err;
  // Deleting it: the finalizer holds it until berth removes the finalizer.
  r = Kubectl({"delete", "run", "1legacy", "--wait=false"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto fin = client()->MergePatch(kRuns.Path(ns_, "1legacy"), R"({"metadata":{"finalizers":null}})");
  EXPECT_TRUE(fin.ok()) << fin.status().ToString();
  EXPECT_TRUE(Eventually([&] { return client()->Get(kRuns.Path(ns_, "1legacy")).status().IsNotFound(); }))
      << "the legacy run was not deleted";
}

// ---- Part 2: what the schema cannot catch, through a real berth-controller ----

class BadInputEngine : public EngineTest {
 protected:
  struct Expect {
    std::string run, phase, reason;
    std::vector<std::string> message;  // substrings of status.message
  };

  // Applies a Run with a full spec (YAML at 2-space indent, template included).
  void RawRun(const std::string& name, const std::string& spec) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n" + spec);
  }

  void Check(const Expect& e) {
    SCOPED_TRACE(e.run);
    ASSERT_TRUE(Eventually([&] { return Phase(e.run) == e.phase && Reason(e.run) == e.reason; }))
        << e.run << ": want " << e.phase << "/" << e.reason << ", is " << Phase(e.run) << "/" << Reason(e.run) << ": "
        << Message(e.run);
    const std::string msg = Message(e.run);
    for (const auto& m : e.message) EXPECT_NE(msg.find(m), std::string::npos) << e.run << ": " << msg;
    // One human sentence: not empty, no raw JSON, no C++ exception text.
    EXPECT_GT(msg.size(), 20u) << e.run;
    EXPECT_EQ(msg.find('{'), std::string::npos) << e.run << ": " << msg;
    EXPECT_EQ(msg.find("std::"), std::string::npos) << e.run << ": " << msg;
  }

  std::string FleetJsonStatus(const std::string& fleet) {
    auto f = client()->Get(kFleets.Path("", FleetName(fleet)));
    const json::Value* st = f.ok() ? json::Find(*f, {"status"}) : nullptr;
    return st != nullptr ? json::Serialize(*st) : "";
  }
  std::string InstanceField(const std::string& fleet, const std::string& node, const char* field) {
    auto f = client()->Get(kFleets.Path("", FleetName(fleet)));
    const json::Value* inst = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
    if (inst == nullptr || !inst->IsArray()) return "";
    for (auto& i : inst->GetArray()) {
      if (json::GetString(i, "node") == node) return json::GetString(i, field);
    }
    return "";
  }
  std::string Condition(const std::string& fleet, const std::string& type, const char* field) {
    auto f = client()->Get(kFleets.Path("", FleetName(fleet)));
    const json::Value* c = f.ok() ? json::Find(*f, {"status", "conditions"}) : nullptr;
    if (c == nullptr || !c->IsArray()) return "";
    for (auto& i : c->GetArray()) {
      if (json::GetString(i, "type") == type) return json::GetString(i, field);
    }
    return "";
  }
};

// A batch of runs the schema lets through but berth cannot or must not run: each ends with a
// clear phase, reason and message; the controller is the same process throughout, and good runs
// submitted after them are placed.
TEST_F(BadInputEngine, RunsTheSchemaCannotCatchFailOrWaitWithAClearReason) {
  Nodes("g", 2, "8", "32Gi", 8);
  Fleet("g", "g", "  blocks: 4\n  placement: cluster\n");
  Nodes("c", 1, "4", "8Gi");
  Fleet("c", "c");
  const std::string g = FleetName("g"), c = FleetName("c");
  const int pid = controller_->pid();
  const std::string tmpl = "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  const std::string queued = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";

  std::vector<Expect> expect;
  // Values that match the schema's patterns but do not fit berth's int64 arithmetic.
  RawRun("dur-overflow", "  maxDuration: 9999999999999h\n" + tmpl);
  expect.push_back({"dur-overflow", "Failed", "InvalidSpec",
                    {"spec.maxDuration: invalid duration \"9999999999999h\": too long (the maximum is about 292 years)"}});
  RawRun("retry-overflow", "  retry: {duration: 99999999999999999999s}\n" + tmpl);
  expect.push_back({"retry-overflow", "Failed", "InvalidSpec", {"spec.retry.duration: invalid duration \"99999999999999999999s\""}});
  RawRun("cpu-overflow", "  resources: {cpu: \"1e100\"}\n" + tmpl);
  expect.push_back({"cpu-overflow", "Failed", "InvalidSpec", {"spec.resources.cpu: invalid quantity \"1e100\""}});
  RawRun("memory-overflow", "  resources: {memory: 9999999999Ei}\n" + tmpl);
  expect.push_back({"memory-overflow", "Failed", "InvalidSpec", {"spec.resources.memory: invalid quantity \"9999999999Ei\""}});
  // Runs no fleet could ever hold: Unschedulable (failed without retry, waiting with it).
  RawRun("cpu-too-big", "  resources: {cpu: \"64\"}\n" + tmpl);
  expect.push_back({"cpu-too-big", "Failed", "Unschedulable", {}});
  RawRun("cpu-too-big-queued", "  resources: {cpu: \"64\"}\n" + queued + tmpl);
  expect.push_back({"cpu-too-big-queued", "Pending", "Unschedulable", {}});
  RawRun("memory-too-big", "  resources: {memory: 1Ti}\n" + tmpl);
  expect.push_back({"memory-too-big", "Failed", "Unschedulable", {}});
  RawRun("gpus-too-many", "  resources: {gpu: 16}\n" + tmpl);
  expect.push_back({"gpus-too-many", "Failed", "Unschedulable", {}});
  RawRun("gpu-on-cpu-fleet", "  resources: {gpu: 1}\n  fleets: [" + c + "]\n" + tmpl);
  expect.push_back({"gpu-on-cpu-fleet", "Failed", "Unschedulable", {}});
  RawRun("missing-fleet", "  fleets: [no-such-fleet]\n" + tmpl);
  expect.push_back({"missing-fleet", "Failed", "Unschedulable", {"no-such-fleet"}});
  RawRun("missing-fleet-queued", "  fleets: [no-such-fleet]\n" + queued + tmpl);
  expect.push_back({"missing-fleet-queued", "Pending", "Unschedulable", {"no-such-fleet"}});
  RawRun("too-many-nodes", "  nodes: 5\n  fleets: [" + g + "]\n" + tmpl);
  expect.push_back({"too-many-nodes", "Failed", "Unschedulable", {}});
  RawRun("gang-on-any-fleet", "  nodes: 2\n  fleets: [" + c + "]\n" + tmpl);
  expect.push_back({"gang-on-any-fleet", "Failed", "Unschedulable", {"cluster"}});
  // Pod templates the API server refuses when berth creates the Pod: a permanent error, so the
  // run fails with the API server's message instead of retrying the create forever.
  RawRun("bad-restart-policy", "  fleets: [" + g + "]\n  template:\n    spec:\n      restartPolicy: Sometimes\n"
                               "      containers: [{name: main, image: busybox}]\n");
  expect.push_back({"bad-restart-policy", "Failed", "InvalidSpec",
                    {"the API server refused the Pod for rank 0", "spec.restartPolicy: Unsupported value: \"Sometimes\""}});
  RawRun("bad-port", "  fleets: [" + g + "]\n  template:\n    spec:\n"
                     "      containers: [{name: main, image: busybox, ports: [{containerPort: 70000}]}]\n");
  expect.push_back({"bad-port", "Failed", "InvalidSpec",
                    {"the API server refused the Pod for rank 0", "spec.containers[0].ports[0].containerPort: Invalid value: 70000"}});
  RawRun("missing-volume", "  fleets: [" + g + "]\n  template:\n    spec:\n"
                           "      containers: [{name: main, image: busybox, volumeMounts: [{name: data, mountPath: /data}]}]\n");
  expect.push_back({"missing-volume", "Failed", "InvalidSpec", {"spec.containers[0].volumeMounts[0].name: Not found: \"data\""}});
  RawRun("bad-pod-label", "  fleets: [" + g + "]\n  template:\n    metadata: {labels: {\"bad key!\": x}}\n    spec:\n"
                          "      containers: [{name: main, image: busybox}]\n");
  expect.push_back({"bad-pod-label", "Failed", "InvalidSpec", {"metadata.labels: Invalid value: \"bad key!\""}});
  // Queued: the bad single-node runs above may still hold blocks of g when it is first considered.
  RawRun("gang-bad-template", "  nodes: 2\n  fleets: [" + g + "]\n" + queued + "  template:\n    spec:\n      restartPolicy: Sometimes\n"
                              "      containers: [{name: main, image: busybox}]\n");
  expect.push_back({"gang-bad-template", "Failed", "InvalidSpec", {"the API server refused the Pod for rank 0"}});

  for (const auto& e : expect) Check(e);
  const std::string log = controller_->Log();
  EXPECT_TRUE(controller_->Running()) << "the controller died\n" << log;
  EXPECT_EQ(controller_->pid(), pid);

  // Good runs after all the bad ones: placed, and the failed gang freed its instances.
  RawRun("good", "  resources: {cpu: \"1\"}\n  fleets: [" + c + "]\n" + tmpl);
  RawRun("good-gang", "  nodes: 2\n  fleets: [" + g + "]\n" + queued + tmpl);
  for (const char* r : {"good", "good-gang"}) {
    EXPECT_TRUE(Eventually([&] { return Phase(r) == "Scheduled" || Phase(r) == "Running"; }))
        << r << " is " << Phase(r) << "/" << Reason(r) << ": " << Message(r);
  }
  // Not a retry loop: the refused create was tried once, and the failure sticks (checked after
  // the good runs were placed: the controller has made many passes since the failures).
  for (const char* r : {"bad-restart-policy", "bad-port", "missing-volume", "gang-bad-template"}) {
    EXPECT_EQ(Phase(r), "Failed") << r;
    const std::string needle = "run " + ns_ + "/" + r + ": the API server refused";
    size_t count = 0;
    for (size_t at = controller_->Log().find(needle); at != std::string::npos; at = controller_->Log().find(needle, at + 1)) ++count;
    EXPECT_EQ(count, 1u) << r << " was created again and again";
    EXPECT_TRUE(PodsOf(r).empty()) << r << " left a pod";
  }

  EXPECT_TRUE(controller_->Running());
  EXPECT_EQ(controller_->pid(), pid);
  EXPECT_EQ(controller_->Log().find("terminate called"), std::string::npos);
}

// Fleets and Nodes berth cannot use are reported on the Fleet, and nothing else is disturbed.
TEST_F(BadInputEngine, BadFleetsAndGarbageNodesAreReportedNotFatal) {
  const int pid = controller_->pid();
  // GPUs that do not divide into the blocks: the instance is Invalid with a message.
  const std::string odd = Nodes("odd", 1, "8", "32Gi", 8).front();
  Fleet("odd", "odd", "  blocks: 3\n");
  // Too many blocks: 100000 CPUs with blocks auto.
  const std::string huge = Nodes("huge", 1, "100000", "32Gi").front();
  Fleet("huge", "huge", "  blocks: auto\n");
  // A quantity the API accepts but berth cannot hold (1e18 CPUs is 1e21 millicores), and an
  // expiry annotation that is not a time.
  const std::string overflow = Nodes("junk", 1, "1e18", "32Gi").front();
  const std::string badtime = Nodes("junk", 1, "4", "8Gi", 0, {}, {{"berth.dev/expires-at", "tomorrow"}}).back();
  Fleet("junk", "junk");
  // Two fleets matching one node: the older one owns it, the newer reports Conflict.
  const std::string shared = Nodes("shared", 1, "4", "8Gi").front();
  Fleet("first", "shared");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // creationTimestamp has 1 s resolution
  Fleet("second", "shared");
  // A good fleet to show the controller still places runs.
  Nodes("ok", 1, "4", "8Gi");
  Fleet("ok", "ok");

  EXPECT_TRUE(Eventually([&] { return InstanceField("odd", odd, "state") == "Invalid"; })) << FleetJsonStatus("odd");
  EXPECT_NE(InstanceField("odd", odd, "message").find("8 GPUs cannot be split into 3 blocks"), std::string::npos)
      << FleetJsonStatus("odd");
  EXPECT_TRUE(Eventually([&] { return InstanceField("huge", huge, "state") == "Invalid"; })) << FleetJsonStatus("huge");
  EXPECT_NE(InstanceField("huge", huge, "message").find("more than the supported maximum of 4096"), std::string::npos)
      << FleetJsonStatus("huge");
  EXPECT_TRUE(Eventually([&] { return InstanceField("junk", overflow, "state") == "NotReady"; })) << FleetJsonStatus("junk");
  EXPECT_NE(InstanceField("junk", overflow, "message").find("allocatable cpu cannot be used"), std::string::npos)
      << FleetJsonStatus("junk");
  EXPECT_TRUE(Eventually([&] { return InstanceField("junk", badtime, "state") == "NotReady"; })) << FleetJsonStatus("junk");
  EXPECT_NE(InstanceField("junk", badtime, "message").find("berth.dev/expires-at is not an RFC 3339 time: tomorrow"),
            std::string::npos)
      << FleetJsonStatus("junk");
  EXPECT_TRUE(Eventually([&] { return Condition("second", "Conflict", "status") == "True"; })) << FleetJsonStatus("second");
  EXPECT_NE(Condition("second", "Conflict", "message").find(shared), std::string::npos) << FleetJsonStatus("second");
  EXPECT_TRUE(Eventually([&] { return InstanceField("first", shared, "state") == "Idle"; })) << FleetJsonStatus("first");

  // Runs aimed at the unusable fleets wait with a reason; a good run is placed.
  Run("on-odd", "  fleets: [" + FleetName("odd") + "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  Run("on-junk", "  resources: {cpu: \"1\"}\n  fleets: [" + FleetName("junk") + "]\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  Run("good", "  fleets: [" + FleetName("ok") + "]\n");
  EXPECT_TRUE(WaitPhase("good", "Scheduled")) << Phase("good") << ": " << Message("good");
  EXPECT_TRUE(Eventually([&] { return Phase("on-odd") == "Pending" && !Reason("on-odd").empty(); }));
  EXPECT_TRUE(Eventually([&] { return Phase("on-junk") == "Pending" && !Reason("on-junk").empty(); }));
  std::printf("on-odd: %s: %s\non-junk: %s: %s\n", Reason("on-odd").c_str(), Message("on-odd").c_str(),
              Reason("on-junk").c_str(), Message("on-junk").c_str());
  EXPECT_TRUE(controller_->Running()) << controller_->Log();
  EXPECT_EQ(controller_->pid(), pid);
}

// Issue 44 (5): the bounds on what a tenant writes, each refused by `kubectl apply` with the API
// server's own message (docs/api.md lists them), nothing stored; an object at each bound is
// accepted (server-side dry run).
TEST_F(Validation, TenantBoundsAreRefusedByKubectlApplyWithTheApiServersMessage) {
  const std::string team = "bounds-" + ns_;
  const std::string fleet = "bounds-" + ns_;
  auto run = [](const std::string& name, const std::string& spec_lines) {
    return "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n" + spec_lines +
           "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  };
  std::string fleets65 = "[";
  for (int i = 0; i < 65; ++i) fleets65 += (i ? ",f" : "f") + std::to_string(i);
  fleets65 += "]";
  const std::string fleets64 = fleets65.substr(0, fleets65.rfind(',')) + "]";
  const std::string long_duration = std::string(64, '1') + "s";        // 65 characters, matches the pattern
  const std::string long_quantity = std::string(65, '1');              // 65 digits, matches the pattern
  struct Case {
    std::string what, yaml, expect;
  };
  const std::vector<Case> cases = {
      {"65 fleets", run("many-fleets", "  fleets: " + fleets65 + "\n"),
       "spec.fleets: Too many: 65: must have at most 64 items"},
      {"4097 GPUs", run("many-gpus", "  resources: {gpu: 4097}\n"),
       "spec.resources.gpu: Invalid value: 4097: spec.resources.gpu in body should be less than or equal to 4096"},
      {"a 65-character cpu", run("long-cpu", "  resources: {cpu: \"" + long_quantity + "\"}\n"),
       "spec.resources.cpu: Too long: may not be more than 64 bytes"},
      {"a 65-character memory", run("long-memory", "  resources: {memory: \"" + long_quantity + "\"}\n"),
       "spec.resources.memory: Too long: may not be more than 64 bytes"},
      {"a 65-character maxDuration", run("long-max", "  maxDuration: \"" + long_duration + "\"\n"),
       "spec.maxDuration: Too long: may not be more than 64 bytes"},
      {"a 65-character startTimeout", run("long-start", "  startTimeout: \"" + long_duration + "\"\n"),
       "spec.startTimeout: Too long: may not be more than 64 bytes"},
      {"a 65-character retry.duration", run("long-retry", "  retry: {duration: \"" + long_duration + "\"}\n"),
       "spec.retry.duration: Too long: may not be more than 64 bytes"},
      {"maxRunsPerInstance 100001",
       "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet + "}\nspec:\n  nodeSelector: {pool: x}\n"
       "  maxRunsPerInstance: 100001\n",
       "spec.maxRunsPerInstance: Invalid value: 100001: spec.maxRunsPerInstance in body should be less than or equal to 100000"},
      {"a 65-character instanceLifetime",
       "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet + "}\nspec:\n  nodeSelector: {pool: x}\n"
       "  instanceLifetime: \"" + long_duration + "\"\n",
       "spec.instanceLifetime: Too long: may not be more than 64 bytes"},
      {"a 65-character preemption.minRuntime",
       "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet + "}\nspec:\n  nodeSelector: {pool: x}\n"
       "  preemption: {minRuntime: \"" + long_duration + "\"}\n",
       "spec.preemption.minRuntime: Too long: may not be more than 64 bytes"},
      {"a parent that is not a Team name",
       "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team + "}\nspec:\n  parent: \"Platform Team\"\n",
       "spec.parent: Invalid value: \"Platform Team\": spec.parent in body should match "
       "'^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$'"},
      {"a 65-character nominal cpu",
       "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team + "}\nspec:\n  shares:\n"
       "  - {fleet: a100, nominal: {cpu: \"" + long_quantity + "\"}}\n",
       "spec.shares[0].nominal.cpu: Too long: may not be more than 64 bytes"},
  };
  for (const Case& c : cases) {
    CommandResult r = Kubectl({"apply", "-f", "-"}, c.yaml);
    EXPECT_NE(r.exit_code, 0) << c.what << ": accepted\n" << c.yaml;
    EXPECT_NE(r.err.find(" is invalid: "), std::string::npos) << c.what << ": " << r.err;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.what << ": expected\n  " << c.expect << "\nin\n  " << r.err;
  }
  EXPECT_EQ(Kubectl({"get", "runs", "-o", "name"}).out, "") << "nothing was stored";
  EXPECT_NE(cp().Kubectl({"get", "fleet", fleet}).exit_code, 0) << "the Fleet was stored";
  EXPECT_NE(cp().Kubectl({"get", "team", team}).exit_code, 0) << "the Team was stored";

  // At each bound: accepted.
  CommandResult at = Kubectl(
      {"apply", "--dry-run=server", "-f", "-"},
      run("at-bounds", "  fleets: " + fleets64 + "\n  resources: {gpu: 4096, cpu: \"" + long_quantity.substr(1) +
                           "\", memory: \"" + long_quantity.substr(1) + "\"}\n  maxDuration: \"" + long_duration.substr(1) +
                           "\"\n") +
          "---\napiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet +
          "}\nspec:\n  nodeSelector: {pool: x}\n  maxRunsPerInstance: 100000\n---\napiVersion: berth.dev/v1alpha1\n"
          "kind: Team\nmetadata: {name: " + team + "}\nspec:\n  parent: platform.ml\n");
  EXPECT_EQ(at.exit_code, 0) << at.err;
}

// Issue 47 (3): Team.spec.budgets as the API server checks it (docs/api.md quotes these messages).
TEST_F(Validation, BudgetsOutOfBoundsAreRefusedWithTheApiServersMessageAndGoodOnesStored) {
  const std::string team = "budget-" + ns_;
  auto with = [&](const std::string& budget) {
    return "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team + "}\nspec:\n  budgets:\n  - " + budget + "\n";
  };
  struct Case {
    std::string budget, expect;
  };
  const std::vector<Case> cases = {
      {"{resource: gpu, hours: 10, period: 91d}", "spec.budgets[0].period: Invalid value: \"91d\": must be from 1h to 90d"},
      {"{resource: gpu, hours: 10, period: 2161h}", "spec.budgets[0].period: Invalid value: \"2161h\": must be from 1h to 90d"},
      {"{resource: gpu, hours: 10, period: 30m}", "spec.budgets[0].period: Invalid value: \"30m\": spec.budgets[0].period in body should match"},
      {"{resource: tpu, hours: 10, period: 1d}", "spec.budgets[0].resource: Unsupported value: \"tpu\""},
      {"{resource: gpu, hours: -1, period: 1d}", "spec.budgets[0].hours: Invalid value: -1: spec.budgets[0].hours in body should be greater than or equal to 0"},
      {"{resource: gpu, period: 1d}", "spec.budgets[0].hours: Required value"},
  };
  for (const Case& c : cases) {
    CommandResult r = Kubectl({"apply", "-f", "-"}, with(c.budget));
    EXPECT_NE(r.exit_code, 0) << c.budget << ": accepted";
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.budget << ": expected\n  " << c.expect << "\nin\n  " << r.err;
  }
  EXPECT_NE(cp().Kubectl({"get", "team", team}).exit_code, 0) << "the Team was stored";
  const CommandResult good = Kubectl({"apply", "-f", "-"}, with("{resource: gpu, hours: 0.5, period: 90d, fleet: h100}\n  - {resource: memory, hours: 5000, period: 1h}"));
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(cp().Kubectl({"get", "team", team, "-o", "jsonpath={.spec.budgets[0].hours} {.spec.budgets[1].period}"}).out, "0.5 1h");
  cp().Kubectl({"delete", "team", team});
}

}  // namespace
}  // namespace berth::testing
