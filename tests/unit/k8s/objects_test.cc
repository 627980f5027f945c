#include "k8s/objects.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth::k8s {
namespace {

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? std::move(d).value() : json::Document();
}

TimePoint UnixSeconds(int64_t s) { return TimePoint(std::chrono::seconds(s)); }

// ---------------------------------------------------------------------------------------------
// DecodeMeta

constexpr const char* kFullMeta = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {
    "name": "train-0", "namespace": "team-a", "uid": "0f5c-uid", "resourceVersion": "12345",
    "generation": 3,
    "creationTimestamp": "2024-01-02T03:04:05Z",
    "deletionTimestamp": "2024-01-02T04:00:00Z",
    "labels": {"app": "train", "berth.dev/run": "r1", "ignored-number": 5},
    "annotations": {"note": "hello", "json": "{\"a\":1}"},
    "finalizers": ["berth.dev/run-cleanup", "kubernetes.io/pvc-protection", 7],
    "ownerReferences": [
      {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u-rs"},
      {"apiVersion": "berth.dev/v1alpha1", "kind": "Run", "name": "r1", "uid": "u-r1",
       "controller": true, "blockOwnerDeletion": true}
    ]
  }
})";

TEST(DecodeMetaTest, DecodesEveryField) {
  json::Document d = MustParse(kFullMeta);
  ObjectMeta m = DecodeMeta(d);
  EXPECT_EQ(m.name, "train-0");
  EXPECT_EQ(m.ns, "team-a");
  EXPECT_EQ(m.uid, "0f5c-uid");
  EXPECT_EQ(m.resource_version, "12345");
  EXPECT_EQ(m.generation, 3);
  EXPECT_EQ(m.created, UnixSeconds(1'704'164'645));  // 2024-01-02T03:04:05Z
  EXPECT_TRUE(m.deleting);

  EXPECT_EQ(m.labels, (std::map<std::string, std::string>{{"app", "train"}, {"berth.dev/run", "r1"}}));
  EXPECT_EQ(m.Label("berth.dev/run"), "r1");
  EXPECT_EQ(m.Label("missing"), "");
  EXPECT_EQ(m.annotations, (std::map<std::string, std::string>{{"note", "hello"}, {"json", R"({"a":1})"}}));
  EXPECT_EQ(m.Annotation("json"), R"({"a":1})");
  EXPECT_EQ(m.Annotation("missing"), "");

  EXPECT_EQ(m.finalizers, (std::vector<std::string>{"berth.dev/run-cleanup", "kubernetes.io/pvc-protection"}));
  EXPECT_TRUE(m.HasFinalizer("berth.dev/run-cleanup"));
  EXPECT_FALSE(m.HasFinalizer("berth.dev/other"));

  ASSERT_EQ(m.owners.size(), 2u);
  EXPECT_EQ(m.owners[0].api_version, "apps/v1");
  EXPECT_EQ(m.owners[0].kind, "ReplicaSet");
  EXPECT_EQ(m.owners[0].name, "rs");
  EXPECT_EQ(m.owners[0].uid, "u-rs");
  EXPECT_FALSE(m.owners[0].controller);
  EXPECT_TRUE(m.owners[1].controller);
  const OwnerRef* ctrl = m.ControllerRef();
  ASSERT_NE(ctrl, nullptr);
  EXPECT_EQ(ctrl->kind, "Run");
  EXPECT_EQ(ctrl->name, "r1");
  EXPECT_EQ(ctrl->uid, "u-r1");
  EXPECT_EQ(ctrl->api_version, "berth.dev/v1alpha1");
}

TEST(DecodeMetaTest, AbsentFieldsAreEmpty) {
  const std::vector<std::string> cases = {
      R"({})",
      R"({"metadata": null})",
      R"({"metadata": "oops"})",
      R"({"metadata": {}})",
      R"({"metadata": {"labels": null, "annotations": [], "finalizers": {}, "ownerReferences": "x",
                       "creationTimestamp": null, "generation": "3"}})",
  };
  for (const std::string& text : cases) {
    json::Document d = MustParse(text);
    ObjectMeta m = DecodeMeta(d);
    EXPECT_EQ(m.name, "") << text;
    EXPECT_EQ(m.ns, "") << text;
    EXPECT_EQ(m.uid, "") << text;
    EXPECT_EQ(m.resource_version, "") << text;
    EXPECT_EQ(m.generation, 0) << text;
    EXPECT_EQ(m.created, TimePoint{}) << text;
    EXPECT_FALSE(m.deleting) << text;
    EXPECT_TRUE(m.labels.empty()) << text;
    EXPECT_TRUE(m.annotations.empty()) << text;
    EXPECT_TRUE(m.finalizers.empty()) << text;
    EXPECT_TRUE(m.owners.empty()) << text;
    EXPECT_EQ(m.ControllerRef(), nullptr) << text;
  }
}

TEST(DecodeMetaTest, DeletionTimestamp) {
  struct Case {
    std::string meta;
    bool deleting;
  };
  const std::vector<Case> cases = {
      {R"({"name":"a"})", false},
      {R"({"name":"a","deletionTimestamp":"2024-01-02T04:00:00Z"})", true},
      // null is "not set": Go decodes it into a nil *Time.
      {R"({"name":"a","deletionTimestamp":null})", false},
  };
  for (const Case& c : cases) {
    json::Document d = MustParse(R"({"metadata":)" + c.meta + "}");
    EXPECT_EQ(DecodeMeta(d).deleting, c.deleting) << c.meta;
  }
}

TEST(DecodeMetaTest, CreationTimestamp) {
  struct Case {
    std::string value;  // JSON
    TimePoint want;
  };
  const std::vector<Case> cases = {
      {R"("1970-01-01T00:00:00Z")", UnixSeconds(0)},
      {R"("2024-01-02T03:04:05Z")", UnixSeconds(1'704'164'645)},
      {R"("2024-01-02T05:04:05+02:00")", UnixSeconds(1'704'164'645)},
      {R"("not a time")", TimePoint{}},
      {"null", TimePoint{}},  // `kubectl create --dry-run -o json` writes null
      {"12345", TimePoint{}},
  };
  for (const Case& c : cases) {
    json::Document d = MustParse(R"({"metadata":{"name":"a","creationTimestamp":)" + c.value + "}}");
    EXPECT_EQ(DecodeMeta(d).created, c.want) << c.value;
  }
}

TEST(DecodeMetaTest, ControllerRefIsTheFirstControllingOwner) {
  json::Document d = MustParse(R"({"metadata":{"name":"p","ownerReferences":[
      {"kind":"A","name":"a","controller":false},
      {"kind":"B","name":"b"},
      {"kind":"C","name":"c","controller":true},
      {"kind":"D","name":"d","controller":true}]}})");
  ObjectMeta m = DecodeMeta(d);
  ASSERT_EQ(m.owners.size(), 4u);
  ASSERT_NE(m.ControllerRef(), nullptr);
  EXPECT_EQ(m.ControllerRef()->name, "c");
}

// ---------------------------------------------------------------------------------------------
// DecodeNode

std::string NodeJson(const std::string& spec, const std::string& status, const std::string& name = "gpu-1") {
  return R"({"kind":"Node","metadata":{"name":")" + name + R"(","labels":{"berth.dev/fleet":"a100"}},"spec":)" +
         spec + R"(,"status":)" + status + "}";
}

// Issue 44: a cache keeps of an object's ownerReferences only the controller and of its
// finalizers only the one it names, however many a tenant writes.
TEST(DecodeMetaTest, OnlyNeededKeepsTheControllerAndOneFinalizerOfThousands) {
  std::string owners, finalizers;
  for (int i = 0; i < 5000; ++i) {
    if (i > 0) {
      owners += ",";
      finalizers += ",";
    }
    owners += R"({"apiVersion":"v1","kind":"ConfigMap","name":"cm-)" + std::to_string(i) + R"(","uid":"u-)" +
              std::to_string(i) + R"("})";
    if (i == 2500) {
      owners += R"(,{"apiVersion":"berth.dev/v1alpha1","kind":"Run","name":"r1","uid":"u-r1","controller":true})";
      owners += R"(,{"apiVersion":"berth.dev/v1alpha1","kind":"Run","name":"r2","uid":"u-r2","controller":true})";
      finalizers += R"("berth.dev/run-cleanup",)";
    }
    finalizers += R"("example.com/f-)" + std::to_string(i) + R"(")";
  }
  json::Document d = MustParse(R"({"metadata":{"name":"p","namespace":"ns","ownerReferences":[)" + owners +
                               R"(],"finalizers":[)" + finalizers + R"(]},"spec":{"nodeName":"n1"}})");
  ObjectMeta m = DecodeMeta(d, MetaKeep{.only_needed = true, .finalizer = "berth.dev/run-cleanup"});
  ASSERT_EQ(m.owners.size(), 1u);
  EXPECT_EQ(m.owners[0].uid, "u-r1");
  EXPECT_TRUE(m.owners[0].controller);
  EXPECT_EQ(m.owners_left_out, 5001);
  EXPECT_EQ(m.finalizers, (std::vector<std::string>{"berth.dev/run-cleanup"}));
  EXPECT_EQ(m.finalizers_left_out, 5000);
  EXPECT_EQ(m.kept_finalizer_index, 2500) << "its place in the object's list, for a patch that removes it";
  EXPECT_TRUE(m.HasFinalizer("berth.dev/run-cleanup"));

  // A Pod as the engine caches it: the same, no finalizer kept.
  auto pod = DecodePodKeeping(d, MetaKeep{.label_prefix = "berth.dev/", .only_needed = true});
  ASSERT_NE(pod, nullptr);
  EXPECT_EQ(pod->meta.owners.size(), 1u);
  EXPECT_TRUE(pod->meta.finalizers.empty());
  EXPECT_EQ(pod->meta.finalizers_left_out, 5001);
  EXPECT_EQ(pod->node_name, "n1");

  // Without only_needed everything is kept (the webhook, kubectl berth).
  ObjectMeta all = DecodeMeta(d);
  EXPECT_EQ(all.owners.size(), 5002u);
  EXPECT_EQ(all.finalizers.size(), 5001u);
  EXPECT_EQ(all.owners_left_out, 0);
}

TEST(DecodeMetaTest, KeepsTheLabelsOfASecondPrefix) {
  // Issue 45: the engine's Pod cache keeps berth's labels and annotations plus the JobSet
  // controller's jobset.sigs.k8s.io/jobset- labels, nothing else.
  json::Document d = MustParse(R"({"metadata":{"name":"p","labels":{"berth.dev/rank":"0","app":"x",
      "jobset.sigs.k8s.io/jobset-name":"ls","jobset.sigs.k8s.io/jobset-uid":"u9","jobset.sigs.k8s.io/job-index":"0"},
      "annotations":{"berth.dev/blocks":"1","jobset.sigs.k8s.io/jobset-uid":"u9","big":"y"}}})");
  ObjectMeta m = DecodeMeta(d, MetaKeep{.label_prefix = "berth.dev/", .also_label_prefix = "jobset.sigs.k8s.io/jobset-"});
  EXPECT_EQ(m.labels, (std::map<std::string, std::string>{{"berth.dev/rank", "0"},
                                                          {"jobset.sigs.k8s.io/jobset-name", "ls"},
                                                          {"jobset.sigs.k8s.io/jobset-uid", "u9"}}));
  EXPECT_EQ(m.annotations, (std::map<std::string, std::string>{{"berth.dev/blocks", "1"}}));
}

TEST(DecodeNodeTest, DecodesAllocatable) {
  json::Document d = MustParse(NodeJson("{}", R"({"allocatable":{
      "cpu":"7500m","memory":"16Gi","nvidia.com/gpu":"8","ephemeral-storage":"100G","pods":"110"}})"));
  auto n = DecodeNode(d);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->meta.name, "gpu-1");
  EXPECT_EQ(n->meta.Label("berth.dev/fleet"), "a100");
  EXPECT_EQ(n->cpu_milli, 7500);
  EXPECT_EQ(n->memory_bytes, 17'179'869'184);  // 16 * 2^30
  EXPECT_EQ(n->Allocatable("nvidia.com/gpu"), 8);
  EXPECT_EQ(n->Allocatable("ephemeral-storage"), 100'000'000'000);
  EXPECT_EQ(n->Allocatable("pods"), 110);
  EXPECT_EQ(n->Allocatable("amd.com/gpu"), 0);
}

TEST(DecodeNodeTest, AllocatableQuantityForms) {
  struct Case {
    std::string cpu, memory;
    int64_t cpu_milli, memory_bytes;
  };
  const std::vector<Case> cases = {
      {"8", "32Gi", 8000, 34'359'738'368},
      {"7500m", "16Gi", 7500, 17'179'869'184},
      {"0.5", "1536Mi", 500, 1'610'612'736},
      {"96", "500M", 96'000, 500'000'000},
      {"bogus", "lots", 0, 0},  // unreadable quantities are left at zero
  };
  for (const Case& c : cases) {
    json::Document d =
        MustParse(NodeJson("{}", R"({"allocatable":{"cpu":")" + c.cpu + R"(","memory":")" + c.memory + R"("}})"));
    auto n = DecodeNode(d);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->cpu_milli, c.cpu_milli) << c.cpu;
    EXPECT_EQ(n->memory_bytes, c.memory_bytes) << c.memory;
  }
}

// A quantity the API server accepts but berth cannot hold (outside int64 at its scale) is left at
// zero and remembered with the reason, so the instance can say why it takes no runs.
TEST(DecodeNodeTest, UnreadableAllocatableIsRemembered) {
  json::Document d = MustParse(NodeJson("{}", R"({"allocatable":{"cpu":"1e18","memory":"16Gi","nvidia.com/gpu":"99999999999999999999"}})"));
  auto n = DecodeNode(d);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->cpu_milli, 0);
  EXPECT_EQ(n->memory_bytes, 17'179'869'184);
  EXPECT_EQ(n->Allocatable("nvidia.com/gpu"), 0);
  ASSERT_EQ(n->unreadable.size(), 2u);
  EXPECT_FALSE(n->unreadable.at("cpu").empty());
  EXPECT_FALSE(n->unreadable.at("nvidia.com/gpu").empty());
  EXPECT_EQ(n->unreadable.count("memory"), 0u);
}

TEST(DecodeNodeTest, ReadyCondition) {
  struct Case {
    std::string name, conditions;
    bool ready;
  };
  const std::vector<Case> cases = {
      {"True", R"([{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}])", true},
      {"False", R"([{"type":"Ready","status":"False","reason":"KubeletNotReady"}])", false},
      {"Unknown", R"([{"type":"Ready","status":"Unknown"}])", false},
      {"missing", R"([{"type":"DiskPressure","status":"False"}])", false},
      {"no conditions", "[]", false},
      {"other condition True", R"([{"type":"NetworkUnavailable","status":"True"}])", false},
  };
  for (const Case& c : cases) {
    json::Document d = MustParse(NodeJson("{}", R"({"conditions":)" + c.conditions + "}"));
    auto n = DecodeNode(d);
    ASSERT_NE(n, nullptr) << c.name;
    EXPECT_EQ(n->ready, c.ready) << c.name;
  }
  // No status at all.
  json::Document bare = MustParse(R"({"metadata":{"name":"n"}})");
  auto n = DecodeNode(bare);
  ASSERT_NE(n, nullptr);
  EXPECT_FALSE(n->ready);
  EXPECT_FALSE(n->unschedulable);
  EXPECT_EQ(n->cpu_milli, 0);
  EXPECT_EQ(n->memory_bytes, 0);
}

TEST(DecodeNodeTest, Unschedulable) {
  struct Case {
    std::string spec;
    bool unschedulable;
  };
  const std::vector<Case> cases = {
      {"{}", false},
      {R"({"unschedulable":true})", true},
      {R"({"unschedulable":false})", false},
      {R"({"unschedulable":"true"})", false},  // not a boolean
      {R"({"unschedulable":null})", false},
      {"null", false},
  };
  for (const Case& c : cases) {
    json::Document d = MustParse(NodeJson(c.spec, "{}"));
    auto n = DecodeNode(d);
    ASSERT_NE(n, nullptr) << c.spec;
    EXPECT_EQ(n->unschedulable, c.unschedulable) << c.spec;
  }
}

// ---------------------------------------------------------------------------------------------
// DecodePod

TEST(DecodePodTest, DecodesSpecAndStatus) {
  json::Document d = MustParse(R"({"kind":"Pod",
      "metadata":{"name":"train-0","namespace":"team-a","uid":"u1"},
      "spec":{"nodeName":"gpu-1","schedulerName":"berth","containers":[{"name":"c","image":"busybox"}]},
      "status":{"phase":"Failed","reason":"Evicted","message":"The node was low on resource: memory."}})");
  auto p = DecodePod(d);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->meta.name, "train-0");
  EXPECT_EQ(p->meta.ns, "team-a");
  EXPECT_EQ(p->meta.uid, "u1");
  EXPECT_EQ(p->node_name, "gpu-1");
  EXPECT_EQ(p->scheduler_name, "berth");
  EXPECT_EQ(p->phase, "Failed");
  EXPECT_EQ(p->reason, "Evicted");
  EXPECT_EQ(p->message, "The node was low on resource: memory.");
}

TEST(DecodePodTest, Phases) {
  for (const std::string phase : {"Pending", "Running", "Succeeded", "Failed", "Unknown"}) {
    json::Document d = MustParse(R"({"metadata":{"name":"p"},"status":{"phase":")" + phase + R"("}})");
    auto p = DecodePod(d);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->phase, phase);
    EXPECT_EQ(p->reason, "");
  }
}

TEST(DecodePodTest, UnscheduledPodWithoutStatus) {
  json::Document d = MustParse(R"({"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[]}})");
  auto p = DecodePod(d);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->node_name, "");
  EXPECT_EQ(p->scheduler_name, "");
  EXPECT_EQ(p->phase, "");
  EXPECT_EQ(p->reason, "");
  EXPECT_EQ(p->message, "");
}

// ---------------------------------------------------------------------------------------------
// Objects without a name

TEST(DecodeObjectsTest, ObjectsWithoutANameDecodeToNull) {
  const std::vector<std::string> cases = {
      R"({})",
      R"({"metadata":{}})",
      R"({"metadata":{"name":""}})",
      R"({"metadata":{"name":5,"namespace":"ns"}})",
      R"({"metadata":{"generateName":"train-","namespace":"ns"},"spec":{"nodeName":"n"}})",
      R"({"kind":"Status","status":"Failure","code":410})",
      R"([])",
  };
  for (const std::string& text : cases) {
    json::Document d = MustParse(text);
    EXPECT_EQ(DecodeNode(d), nullptr) << text;
    EXPECT_EQ(DecodePod(d), nullptr) << text;
  }
}


// The effective request the kubelet admits: sum over containers, each init container alone if it
// is larger, plus the Pod's overhead.
TEST(DecodePodTest, EffectiveRequestsAsTheKubeletCountsThem) {
  json::Document d = MustParse(R"({"metadata":{"name":"p"},"spec":{
      "containers":[
        {"name":"main","resources":{"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"2"}}},
        {"name":"sidecar","resources":{"requests":{"cpu":"250m","memory":"128Mi"}}},
        {"name":"bare"}],
      "initContainers":[
        {"name":"fetch","resources":{"requests":{"cpu":"2","memory":"64Mi"}}},
        {"name":"warm","resources":{"requests":{"nvidia.com/gpu":"1"}}}],
      "overhead":{"cpu":"100m","memory":"10Mi"}}})");
  auto p = DecodePod(d);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->requests.cpu_milli, 2000 + 100);                              // init 2 > 1.25
  EXPECT_EQ(p->requests.memory_bytes, (1024 + 128 + 10) * 1024 * 1024LL);  // containers > init
  EXPECT_EQ(p->requests.Get("nvidia.com/gpu"), 2);
  EXPECT_EQ(p->requests.Get("amd.com/gpu"), 0);
}

// Sidecars (restartable init containers) and Pod-level resources, counted as kubelet 1.37 and
// kube-scheduler count them (k8s.io/component-helpers/resource PodRequests). Every expectation
// here is what PodRequests of k8s.io/component-helpers v0.37.2 returns for the same Pod.
TEST(DecodePodTest, SidecarsAndPodLevelResourcesAsKubernetes137CountsThem) {
  constexpr int64_t kMi = 1024 * 1024LL, kGi = 1024 * kMi;
  struct Case {
    std::string name, spec;
    int64_t cpu_milli, memory, gpus;
    int64_t hugepages = 0;
  };
  const std::vector<Case> cases = {
      // A sidecar after a regular init container does not run beside it: the init container
      // alone (2 CPU) is more than the containers plus the sidecar (1.5 CPU).
      {"sidecar after a regular init container",
       R"({"initContainers":[{"name":"fetch","resources":{"requests":{"cpu":"2","memory":"1Gi"}}},
          {"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m","memory":"256Mi"}}}],
          "containers":[{"name":"main","resources":{"requests":{"cpu":"1","memory":"2Gi"}}}]})",
       2000, 2 * kGi + 256 * kMi, 0},
      // A sidecar before it runs beside it: 2 + 0.5 CPU. The sidecar is also summed with the
      // containers (memory: 2Gi + 256Mi, more than the init step's 1Gi + 256Mi).
      {"sidecar before a regular init container",
       R"({"initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m","memory":"256Mi"}}},
          {"name":"fetch","resources":{"requests":{"cpu":"2","memory":"1Gi"}}}],
          "containers":[{"name":"main","resources":{"requests":{"cpu":"1","memory":"2Gi"}}}]})",
       2500, 2 * kGi + 256 * kMi, 0},
      // Several sidecars: each init step stands on every sidecar started before it. cpu: steps
      // 1, 1+1, 1+2, 2.5+3 = 5.5 against containers 1 + sidecars 3 = 4. memory: the containers
      // and all three sidecars (1 + 1 + 1 + 2 Gi) against the largest step (1 + 2 Gi).
      {"several sidecars",
       R"({"initContainers":[{"name":"s1","restartPolicy":"Always","resources":{"requests":{"cpu":"1","memory":"1Gi"}}},
          {"name":"i1","resources":{"requests":{"cpu":"1","memory":"512Mi"}}},
          {"name":"s2","restartPolicy":"Always","resources":{"requests":{"cpu":"2","memory":"1Gi"}}},
          {"name":"i2","resources":{"requests":{"cpu":"2500m","memory":"1Gi"}}},
          {"name":"s3","restartPolicy":"Always","resources":{"requests":{"memory":"2Gi"}}}],
          "containers":[{"name":"main","resources":{"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"2"}}}]})",
       5500, 5 * kGi, 2},
      // An init container with another restartPolicy is a regular one.
      {"restartPolicy other than Always",
       R"({"initContainers":[{"name":"a","restartPolicy":"OnFailure","resources":{"requests":{"cpu":"1"}}},
          {"name":"b","resources":{"requests":{"cpu":"1"}}}],
          "containers":[{"name":"main","resources":{"requests":{"cpu":"500m"}}}]})",
       1000, 0, 0},
      // The overhead comes on top of the larger figure.
      {"sidecar and overhead",
       R"({"initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}},
          {"name":"fetch","resources":{"requests":{"cpu":"2"}}}],
          "containers":[{"name":"main","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}],
          "overhead":{"cpu":"250m","memory":"64Mi"}})",
       2750, kGi + 64 * kMi, 0},
      // Pod-level requests replace the containers' figure for cpu, memory and hugepages; GPUs
      // still come from the containers; the overhead is added to the Pod-level figure.
      {"pod-level requests",
       R"({"resources":{"requests":{"cpu":"4","memory":"8Gi","hugepages-2Mi":"4Mi"}},
          "initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}}],
          "containers":[{"name":"main","resources":{"requests":{"cpu":"1","nvidia.com/gpu":"2"}}},
                        {"name":"side","resources":{"requests":{"memory":"1Gi"}}}],
          "overhead":{"cpu":"100m"}})",
       4100, 8 * kGi, 2, 4 * kMi},
      // Only the resources set at Pod level are replaced: memory is the containers' sum.
      {"pod-level cpu only",
       R"({"resources":{"requests":{"cpu":"1500m"},"limits":{"cpu":"2"}},
          "containers":[{"name":"main","resources":{"requests":{"memory":"3Gi","nvidia.com/gpu":"1"}}},
                        {"name":"b","resources":{"requests":{"cpu":"200m","memory":"1Gi"}}}]})",
       1500, 4 * kGi, 1},
      // Pod-level limits are not requests (the API server defaults the requests of a Pod it
      // stores; a Pod read back always has them).
      {"pod-level limits alone",
       R"({"resources":{"limits":{"cpu":"2"}},"containers":[{"name":"main","resources":{"requests":{"cpu":"500m"}}}]})",
       500, 0, 0},
      // A Pod-level GPU request (the API server refuses it) does not replace the containers' GPUs,
      // and a Pod-level quantity that cannot be read leaves the containers' figure.
      {"pod-level GPU and unreadable pod-level quantity",
       R"({"resources":{"requests":{"nvidia.com/gpu":"8","memory":"lots"}},
          "containers":[{"name":"main","resources":{"requests":{"memory":"1Gi","nvidia.com/gpu":"1"}}}]})",
       0, kGi, 1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    json::Document d = MustParse(R"({"metadata":{"name":"p"},"spec":)" + c.spec + "}");
    auto p = DecodePod(d);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->requests.cpu_milli, c.cpu_milli);
    EXPECT_EQ(p->requests.memory_bytes, c.memory);
    EXPECT_EQ(p->requests.Get("nvidia.com/gpu"), c.gpus);
    EXPECT_EQ(p->requests.Get("hugepages-2Mi"), c.hugepages);
  }
}

TEST(DecodePodTest, WaitingReasonOfAContainerThatCannotStart) {
  json::Document d = MustParse(R"({"metadata":{"name":"p"},"status":{"phase":"Pending","containerStatuses":[
      {"name":"a","state":{"waiting":{"reason":"ContainerCreating"}}},
      {"name":"b","state":{"waiting":{"reason":"ErrImagePull","message":"pull access denied"}}}]}})");
  auto p = DecodePod(d);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->waiting, "ErrImagePull: pull access denied");
  json::Document ok = MustParse(R"({"metadata":{"name":"p"},"status":{"containerStatuses":[
      {"name":"a","state":{"running":{}}}]}})");
  EXPECT_EQ(DecodePod(ok)->waiting, "");
}

TEST(DecodePodTest, StartedWhenAnyContainerRunsOrHasRun) {
  EXPECT_FALSE(DecodePod(MustParse(R"({"metadata":{"name":"p"},"status":{"phase":"Pending"}})"))->started);
  EXPECT_FALSE(DecodePod(MustParse(R"({"metadata":{"name":"p"},"status":{"containerStatuses":[
      {"name":"a","state":{"waiting":{"reason":"ImagePullBackOff"}}}]}})"))->started);
  EXPECT_TRUE(DecodePod(MustParse(R"({"metadata":{"name":"p"},"status":{"containerStatuses":[
      {"name":"a","state":{"waiting":{"reason":"ContainerCreating"}}},{"name":"b","state":{"running":{}}}]}})"))->started);
  EXPECT_TRUE(DecodePod(MustParse(R"({"metadata":{"name":"p"},"status":{"initContainerStatuses":[
      {"name":"i","state":{"terminated":{"exitCode":0}}}],"containerStatuses":[
      {"name":"a","state":{"waiting":{"reason":"ErrImagePull"}}}]}})"))->started);
  // A container in back-off after it ran once has a process history: its last state counts.
  EXPECT_TRUE(DecodePod(MustParse(R"({"metadata":{"name":"p"},"status":{"containerStatuses":[
      {"name":"a","state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"exitCode":1}}}]}})"))->started);
}

}  // namespace
}  // namespace berth::k8s
