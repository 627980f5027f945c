#include "reconcilers/writers/pod_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "k8s/objects.h"

namespace berth::reconcilers {
namespace {

namespace json = k8s::json;
using ::testing::HasSubstr;

using RunObj = Run;  // inside TEST bodies "Run" names testing::Test::Run
constexpr int64_t kGi = 1024LL * 1024 * 1024;

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? std::move(d).value() : json::Document();
}

// A Run "train" in namespace "ml" with `template_json` as spec.template.
Run MakeRun(const std::string& template_json, int64_t nodes = 1, int64_t resubmissions = 0) {
  Run r;
  r.meta.ns = "ml";
  r.meta.name = "train";
  r.meta.uid = "uid-123";
  r.spec.nodes = nodes;
  r.spec.template_json = template_json;
  r.status.resubmissions = resubmissions;
  return r;
}

RankAssignment Rank(int rank, const std::string& node, int blocks, int64_t cpu, int64_t mem, int64_t gpus) {
  RankAssignment a;
  a.rank = rank;
  a.node = node;
  a.blocks = blocks;
  a.resources.cpu_millis = cpu;
  a.resources.memory_bytes = mem;
  a.resources.gpus = gpus;
  return a;
}

// The pod for ranks[index], parsed; fails the test when BuildPod fails.
json::Document Build(const Run& run, const std::vector<RankAssignment>& ranks, size_t index,
                     const std::string& fleet = "a100", const std::string& gpu = "nvidia.com/gpu") {
  auto pod = BuildPod(run, fleet, gpu, ranks, index);
  EXPECT_TRUE(pod.ok()) << pod.status().message();
  if (!pod.ok()) return json::Document();
  return MustParse(*pod);
}

const json::Value& Containers(const json::Value& pod) {
  static const json::Value kEmpty(rapidjson::kArrayType);
  const json::Value* c = json::Find(pod, {"spec", "containers"});
  EXPECT_TRUE(c != nullptr && c->IsArray());
  return c != nullptr && c->IsArray() ? *c : kEmpty;
}

// name -> value of a container's env (valueFrom entries read as "<valueFrom>").
std::map<std::string, std::string> Env(const json::Value& container) {
  std::map<std::string, std::string> out;
  const json::Value* env = json::Find(container, {"env"});
  if (env == nullptr || !env->IsArray()) return out;
  for (const auto& e : env->GetArray()) {
    std::string name = json::GetString(e, "name");
    EXPECT_EQ(out.count(name), 0u) << "env var " << name << " appears twice";
    out[name] = e.HasMember("valueFrom") ? "<valueFrom>" : json::GetString(e, "value");
  }
  return out;
}

std::map<std::string, std::string> StringMap(const json::Value* obj) {
  std::map<std::string, std::string> out;
  if (obj == nullptr || !obj->IsObject()) return out;
  for (const auto& m : obj->GetObject()) out[m.name.GetString()] = m.value.IsString() ? m.value.GetString() : "<non-string>";
  return out;
}

constexpr const char* kSimpleTemplate = R"({"spec":{"containers":[{"name":"main","image":"busybox"}]}})";

// ---------------------------------------------------------------------------------------------
// PodName / RankAddress

TEST(PodNameTest, FirstAttemptAndRetries) {
  struct Case {
    std::string run;
    int64_t attempt;
    int rank;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"train", 0, 0, "train-0"},     {"train", 0, 7, "train-7"},       {"train", 1, 0, "train-0-r1"},
      {"train", 2, 5, "train-5-r2"},  {"train", 12, 11, "train-11-r12"}, {"a-b", -1, 1, "a-b-1"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(PodName(c.run, c.attempt, c.rank), c.want) << c.run << " attempt " << c.attempt << " rank " << c.rank;
  }
}

TEST(PodNameTest, AttemptsNeverCollide) {
  // "x-1" of attempt 0 and the pods of later attempts must be distinct names.
  std::set<std::string> names;
  for (int64_t attempt = 0; attempt < 4; ++attempt) {
    for (int rank = 0; rank < 12; ++rank) EXPECT_TRUE(names.insert(PodName("x", attempt, rank)).second);
  }
}

// Issue 29: no two runs of a namespace produce the same Pod name, whatever their names, attempts
// and ranks (run a's retry 1 rank 0 and run a-r1's rank 0 were both a-r1-0).
TEST(PodNameTest, RunsNeverCollide) {
  std::map<std::string, std::string> seen;  // name -> who made it
  for (const std::string run : {"a", "a-r1", "a-0", "a-0-r1", "a-1", "a-r1-0", "a-r", "r1", "a-1-r1", "x-r2-3"}) {
    for (int64_t attempt = 0; attempt < 4; ++attempt) {
      for (int rank = 0; rank < 12; ++rank) {
        const std::string who = run + " attempt " + std::to_string(attempt) + " rank " + std::to_string(rank);
        auto [it, fresh] = seen.emplace(PodName(run, attempt, rank), who);
        EXPECT_TRUE(fresh) << PodName(run, attempt, rank) << ": " << who << " and " << it->second;
      }
    }
  }
  EXPECT_NE(PodName("a", 1, 0), PodName("a-r1", 0, 0));
}

TEST(RankAddressTest, DnsNameOfTheRankInTheHeadlessService) {
  RunObj run = MakeRun(kSimpleTemplate, 3);
  EXPECT_EQ(RankAddress(run, 0), "train-0.train.ml.svc");
  EXPECT_EQ(RankAddress(run, 2), "train-2.train.ml.svc");
}

// ---------------------------------------------------------------------------------------------
// BuildPod: metadata

TEST(BuildPodTest, SingleNodeMetadata) {
  RunObj run = MakeRun(R"({"metadata":{"name":"ignored","namespace":"elsewhere",
                        "labels":{"app":"train","berth.dev/rank":"9"},
                        "annotations":{"team":"vision","sidecar.istio.io/inject":"false"}},
                        "spec":{"containers":[{"name":"main","image":"busybox"}]}})");
  std::vector<RankAssignment> ranks = {Rank(0, "n1", 2, 4000, 16 * kGi, 1)};
  json::Document pod = Build(run, ranks, 0);

  EXPECT_EQ(json::GetString(pod, "apiVersion"), "v1");
  EXPECT_EQ(json::GetString(pod, "kind"), "Pod");
  const json::Value* meta = json::Find(pod, {"metadata"});
  ASSERT_NE(meta, nullptr);
  EXPECT_EQ(json::GetString(*meta, "name"), "train-0");
  EXPECT_EQ(json::GetString(*meta, "namespace"), "ml");
  EXPECT_EQ(StringMap(json::Find(*meta, {"labels"})),
            (std::map<std::string, std::string>{{"app", "train"},
                                                {"berth.dev/run", "train"},
                                                {"berth.dev/rank", "0"},  // berth's value wins over the template's
                                                {"berth.dev/attempt", "0"}}));
  EXPECT_EQ(StringMap(json::Find(*meta, {"annotations"})),
            (std::map<std::string, std::string>{
                {"team", "vision"}, {"sidecar.istio.io/inject", "false"}, {"berth.dev/blocks", "2"}}));
}

TEST(BuildPodTest, TemplateWithoutMetadataGetsBerthLabelsOnly) {
  RunObj run = MakeRun(kSimpleTemplate);
  json::Document pod = Build(run, {Rank(0, "n1", 1, 0, 0, 0)}, 0);
  EXPECT_EQ(StringMap(json::Find(pod, {"metadata", "labels"})),
            (std::map<std::string, std::string>{
                {"berth.dev/run", "train"}, {"berth.dev/rank", "0"}, {"berth.dev/attempt", "0"}}));
  // Only berth's own annotation: the blocks the Pod holds until it is gone.
  EXPECT_EQ(StringMap(json::Find(pod, {"metadata", "annotations"})),
            (std::map<std::string, std::string>{{"berth.dev/blocks", "1"}}));
}

TEST(BuildPodTest, OwnerReferenceIsTheRunAsController) {
  RunObj run = MakeRun(kSimpleTemplate);
  json::Document pod = Build(run, {Rank(0, "n1", 1, 0, 0, 0)}, 0);
  const json::Value* owners = json::Find(pod, {"metadata", "ownerReferences"});
  ASSERT_NE(owners, nullptr);
  ASSERT_TRUE(owners->IsArray());
  ASSERT_EQ(owners->Size(), 1u);
  const json::Value& o = (*owners)[0];
  EXPECT_EQ(json::GetString(o, "apiVersion"), "berth.dev/v1alpha1");
  EXPECT_EQ(json::GetString(o, "kind"), "Run");
  EXPECT_EQ(json::GetString(o, "name"), "train");
  EXPECT_EQ(json::GetString(o, "uid"), "uid-123");
  EXPECT_TRUE(json::GetBool(o, "controller"));
  EXPECT_TRUE(json::GetBool(o, "blockOwnerDeletion"));
}

TEST(BuildPodTest, NameAndAttemptLabelFollowResubmissions) {
  for (int64_t resub : {0, 1, 3}) {
    RunObj run = MakeRun(kSimpleTemplate, 2, resub);
    std::vector<RankAssignment> ranks = {Rank(0, "n1", 1, 0, 0, 0), Rank(1, "n2", 1, 0, 0, 0)};
    json::Document pod = Build(run, ranks, 1);
    EXPECT_EQ(json::GetString(*json::Find(pod, {"metadata"}), "name"), PodName("train", resub, 1));
    EXPECT_EQ(json::GetString(json::Find(pod, {"metadata", "labels", "berth.dev/attempt"})), std::to_string(resub));
    EXPECT_EQ(json::GetString(json::Find(pod, {"metadata", "labels", "berth.dev/rank"})), "1");
  }
}

// ---------------------------------------------------------------------------------------------
// BuildPod: spec

TEST(BuildPodTest, SchedulerNameNodeNameAndRestartPolicy) {
  struct Case {
    std::string name, spec_extra;
    std::string want_restart;
  };
  const std::vector<Case> cases = {
      {"plain template", "", "Never"},
      {"template nodeName is replaced by the rank's node", R"("nodeName":"pinned-node",)", "Never"},
      {"template scheduler is replaced", R"("schedulerName":"default-scheduler",)", "Never"},
      {"template restartPolicy is kept", R"("restartPolicy":"OnFailure",)", "OnFailure"},
      {"all together", R"("nodeName":"x","schedulerName":"volcano","restartPolicy":"Always",)", "Always"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(R"({"spec":{)" + c.spec_extra + R"("containers":[{"name":"main","image":"busybox"}]}})");
    json::Document pod = Build(run, {Rank(0, "n1", 1, 0, 0, 0)}, 0);
    const json::Value* spec = json::Find(pod, {"spec"});
    ASSERT_NE(spec, nullptr);
    // Created bound to the placement's node (no pods/binding write), whatever the template says.
    EXPECT_EQ(json::GetString(*spec, "nodeName"), "n1");
    EXPECT_EQ(json::GetString(*spec, "schedulerName"), "berth");
    EXPECT_EQ(json::GetString(*spec, "restartPolicy"), c.want_restart);
  }
}

TEST(BuildPodTest, OtherSpecFieldsAreKept) {
  RunObj run = MakeRun(R"({"spec":{"serviceAccountName":"trainer","priorityClassName":"high",
                        "volumes":[{"name":"data","emptyDir":{}}],
                        "containers":[{"name":"main","image":"busybox"}]}})");
  json::Document pod = Build(run, {Rank(0, "n1", 1, 0, 0, 0)}, 0);
  EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "serviceAccountName"})), "trainer");
  EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "priorityClassName"})), "high");
  const json::Value* vols = json::Find(pod, {"spec", "volumes"});
  ASSERT_NE(vols, nullptr);
  ASSERT_EQ(vols->Size(), 1u);
  EXPECT_EQ(json::GetString((*vols)[0], "name"), "data");
}

TEST(BuildPodTest, FleetTolerationIsAppended) {
  struct Case {
    std::string name, tolerations;  // "" = no tolerations field
    size_t want_size;
  };
  const std::vector<Case> cases = {
      {"no tolerations", "", 1},
      {"empty list", R"("tolerations":[],)", 1},
      {"existing ones kept", R"("tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],)", 2},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(R"({"spec":{)" + c.tolerations + R"("containers":[{"name":"main","image":"busybox"}]}})");
    json::Document pod = Build(run, {Rank(0, "n1", 1, 0, 0, 0)}, 0, "h100-pool");
    const json::Value* tol = json::Find(pod, {"spec", "tolerations"});
    ASSERT_NE(tol, nullptr);
    ASSERT_TRUE(tol->IsArray());
    ASSERT_EQ(tol->Size(), c.want_size);
    if (c.want_size == 2) {
      EXPECT_EQ(json::GetString((*tol)[0], "key"), "gpu");
      EXPECT_EQ(json::GetString((*tol)[0], "operator"), "Exists");
    }
    const json::Value& ours = (*tol)[tol->Size() - 1];
    EXPECT_EQ(json::GetString(ours, "key"), "berth.dev/fleet");
    EXPECT_EQ(json::GetString(ours, "operator"), "Equal");
    EXPECT_EQ(json::GetString(ours, "value"), "h100-pool");
    EXPECT_FALSE(ours.HasMember("effect")) << "the toleration must match any effect";
  }
}

TEST(BuildPodTest, FirstContainerRequestsAndLimitsAreTheRankResources) {
  struct Case {
    std::string name;
    int64_t cpu, mem, gpus;
    std::string gpu_resource;
    std::optional<std::string> want_cpu, want_mem, want_gpu;
  };
  const std::vector<Case> cases = {
      {"milli cpu", 1500, 16 * kGi, 1, "nvidia.com/gpu", "1500m", "16Gi", "1"},
      {"whole cpu", 2000, 16 * kGi, 8, "nvidia.com/gpu", "2", "16Gi", "8"},
      {"amd gpus", 32000, 512 * 1024LL * 1024 * 1024, 4, "amd.com/gpu", "32", "512Gi", "4"},
      {"odd memory", 250, 1536LL * 1024 * 1024, 2, "nvidia.com/gpu", "250m", "1536Mi", "2"},
      {"no gpus", 4000, 8 * kGi, 0, "nvidia.com/gpu", "4", "8Gi", std::nullopt},
      {"nothing at all", 0, 0, 0, "nvidia.com/gpu", std::nullopt, std::nullopt, std::nullopt},
      {"gpus only", 0, 0, 2, "amd.com/gpu", std::nullopt, std::nullopt, "2"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(kSimpleTemplate);
    json::Document pod = Build(run, {Rank(0, "n1", 1, c.cpu, c.mem, c.gpus)}, 0, "f", c.gpu_resource);
    const json::Value& first = Containers(pod)[0];
    for (const char* kind : {"requests", "limits"}) {
      SCOPED_TRACE(kind);
      std::map<std::string, std::string> want;
      if (c.want_cpu) want["cpu"] = *c.want_cpu;
      if (c.want_mem) want["memory"] = *c.want_mem;
      if (c.want_gpu) want[c.gpu_resource] = *c.want_gpu;
      EXPECT_EQ(StringMap(json::Find(first, {"resources", kind})), want);
    }
  }
}

TEST(BuildPodTest, TemplateResourcesOfTheFirstContainerAreReplaced) {
  RunObj run = MakeRun(R"({"spec":{"containers":[{"name":"main","image":"busybox",
      "resources":{"requests":{"cpu":"100m","memory":"1Gi","nvidia.com/gpu":"1","ephemeral-storage":"10Gi"},
                   "limits":{"cpu":"200m","nvidia.com/gpu":"1"}}}]}})");
  json::Document pod = Build(run, {Rank(0, "n1", 4, 6000, 64 * kGi, 4)}, 0);
  const json::Value& first = Containers(pod)[0];
  EXPECT_EQ(StringMap(json::Find(first, {"resources", "requests"})),
            (std::map<std::string, std::string>{
                {"cpu", "6"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "4"}, {"ephemeral-storage", "10Gi"}}));
  EXPECT_EQ(StringMap(json::Find(first, {"resources", "limits"})),
            (std::map<std::string, std::string>{{"cpu", "6"}, {"memory", "64Gi"}, {"nvidia.com/gpu", "4"}}));
}

TEST(BuildPodTest, OtherContainersKeepTheirResourcesAndGetTheEnvironment) {
  RunObj run = MakeRun(R"({"spec":{
      "initContainers":[{"name":"init","image":"busybox"}],
      "containers":[{"name":"main","image":"busybox"},
                    {"name":"sidecar","image":"envoy","resources":{"requests":{"cpu":"50m"}},
                     "env":[{"name":"LOG","value":"debug"}]}]}})");
  json::Document pod = Build(run, {Rank(0, "n1", 1, 2000, 4 * kGi, 1)}, 0);
  const json::Value& cs = Containers(pod);
  ASSERT_EQ(cs.Size(), 2u);
  const json::Value& sidecar = cs[1];
  EXPECT_EQ(json::GetString(sidecar, "name"), "sidecar");
  EXPECT_EQ(json::GetString(sidecar, "image"), "envoy");
  EXPECT_EQ(StringMap(json::Find(sidecar, {"resources", "requests"})), (std::map<std::string, std::string>{{"cpu", "50m"}}));
  EXPECT_EQ(json::Find(sidecar, {"resources", "limits"}), nullptr);
  auto env = Env(sidecar);
  EXPECT_EQ(env["LOG"], "debug");
  EXPECT_EQ(env["BERTH_RUN_NAME"], "train");
  EXPECT_EQ(env["BERTH_GPUS_PER_NODE"], "1");
  EXPECT_EQ(env.size(), 9u);
  // Init containers are not touched.
  const json::Value* init = json::Find(pod, {"spec", "initContainers"});
  ASSERT_NE(init, nullptr);
  EXPECT_FALSE((*init)[0].HasMember("env"));
  EXPECT_FALSE((*init)[0].HasMember("resources"));
}

// The blocks are the whole Pod's budget as the kubelet counts it: the first container gets what
// the other containers leave.
TEST(BuildPodTest, FirstContainerGetsTheBlocksLessTheSidecars) {
  RunObj run = MakeRun(R"({"spec":{
      "initContainers":[{"name":"fetch","image":"busybox","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}],
      "containers":[{"name":"main","image":"busybox"},
                    {"name":"proxy","image":"envoy","resources":{"requests":{"cpu":"250m","memory":"256Mi"}}},
                    {"name":"logs","image":"fluent","resources":{"limits":{"cpu":"250m"}}}]}})");
  json::Document pod = Build(run, {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
  const json::Value& main = Containers(pod)[0];
  EXPECT_EQ(StringMap(json::Find(main, {"resources", "requests"})),
            (std::map<std::string, std::string>{{"cpu", "1500m"}, {"memory", "3840Mi"}, {"nvidia.com/gpu", "2"}}));
  EXPECT_EQ(StringMap(json::Find(main, {"resources", "limits"})),
            (std::map<std::string, std::string>{{"cpu", "1500m"}, {"memory", "3840Mi"}, {"nvidia.com/gpu", "2"}}));
}

TEST(BuildPodTest, OtherContainersThatDoNotFitTheBlocksAreErrors) {
  struct Case {
    std::string name, containers, init, want;
  };
  const std::vector<Case> cases = {
      {"sidecar takes all CPU", R"({"name":"s","resources":{"requests":{"cpu":"2"}}})", "", "other containers ask for 2 CPU"},
      {"sidecar memory", R"({"name":"s","resources":{"limits":{"memory":"8Gi"}}})", "", "ask for 8Gi memory"},
      {"init larger than the blocks", "", R"({"name":"i","resources":{"requests":{"cpu":"3"}}})",
       "init container i asks for 3 CPU, but the run's blocks on n1 hold 2 in all"},
      {"sidecar GPU", R"({"name":"s","resources":{"limits":{"nvidia.com/gpu":"1"}}})", "",
       "container s asks for nvidia.com/gpu: only the first container gets the run's GPUs"},
      {"init GPU", "", R"({"name":"i","resources":{"requests":{"nvidia.com/gpu":"1"}}})", "init container i asks"},
      {"unreadable", R"({"name":"s","resources":{"requests":{"cpu":"lots"}}})", "", "cannot read"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string tmpl = R"({"spec":{"containers":[{"name":"main","image":"busybox"})" +
                       (c.containers.empty() ? "" : "," + c.containers) + "]" +
                       (c.init.empty() ? "" : R"(,"initContainers":[)" + c.init + "]") + "}}";
    RunObj run = MakeRun(tmpl);
    auto pod = BuildPod(run, "a100", "nvidia.com/gpu", {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
    ASSERT_FALSE(pod.ok());
    EXPECT_NE(pod.status().message().find(c.want), std::string::npos) << pod.status().message();
  }
}

// ---------------------------------------------------------------------------------------------
// BuildPod: sidecars (restartable init containers), overhead and Pod-level resources, counted as
// kubelet 1.37 admits a Pod (k8s.io/component-helpers/resource PodRequests)

// The built Pod as the API server stores it (container requests defaulted from limits, Pod-level
// requests from Pod-level limits when unset) and as the kubelet then counts it.
k8s::PodRequests KubeletCounts(const std::string& pod_json) {
  json::Document pod = MustParse(pod_json);
  auto& a = pod.GetAllocator();
  for (const char* list : {"containers", "initContainers"}) {
    json::Value* cs = pod["spec"].HasMember(list) ? &pod["spec"][list] : nullptr;
    if (cs == nullptr) continue;
    for (auto& c : cs->GetArray()) {
      for (const char* kind : {"requests", "limits"}) {  // stored as strings: `cpu: 0.25` reads back "250m"
        const json::Value* list_of = json::Find(c, {"resources", kind});
        if (list_of == nullptr) continue;
        // Names first, through const iterators: comparing rapidjson's mutable member iterators is
        // ambiguous in C++20 (clang refuses it under -Werror).
        std::vector<std::string> names;
        for (const auto& q : list_of->GetObject()) names.emplace_back(q.name.GetString(), q.name.GetStringLength());
        for (const std::string& n : names) {
          json::Value& q = c["resources"][kind][n.c_str()];
          if (q.IsNumber()) q.SetString(json::Serialize(q).c_str(), a);
        }
      }
      if (!c.HasMember("resources") || !c["resources"].HasMember("limits")) continue;
      if (!c["resources"].HasMember("requests")) c["resources"].AddMember("requests", json::Value(rapidjson::kObjectType), a);
      const json::Value& limits = c["resources"]["limits"];
      for (const auto& l : limits.GetObject()) {
        if (!c["resources"]["requests"].HasMember(l.name)) {
          c["resources"]["requests"].AddMember(json::Value(l.name, a), json::Value(l.value, a), a);
        }
      }
    }
  }
  auto p = k8s::DecodePod(pod);
  EXPECT_NE(p, nullptr);
  return p != nullptr ? p->requests : k8s::PodRequests{};
}

std::string Template(const std::string& init, const std::string& others, const std::string& spec_extra = "") {
  return R"({"spec":{)" + spec_extra + (init.empty() ? "" : R"("initContainers":[)" + init + "],") +
         R"("containers":[{"name":"main","image":"busybox"})" + (others.empty() ? "" : "," + others) + "]}}";
}

// Sidecars run beside the first container: it gets the blocks less every sidecar (and the other
// containers, and the Pod's overhead), so the Pod as the kubelet counts it is exactly its blocks.
TEST(BuildPodTest, SidecarsAndOverheadComeOffTheFirstContainer) {
  struct Case {
    std::string name, init, others, spec_extra;
    std::string want_cpu, want_memory;  // the first container's requests and limits
  };
  const std::vector<Case> cases = {
      {"sidecar after a regular init container",
       R"({"name":"fetch","resources":{"requests":{"cpu":"1500m"}}},
          {"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m","memory":"512Mi"}}})",
       "", "", "1500m", "3584Mi"},
      {"sidecar before a regular init container",
       R"({"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m","memory":"512Mi"}}},
          {"name":"fetch","resources":{"requests":{"cpu":"1500m","memory":"3584Mi"}}})",
       "", "", "1500m", "3584Mi"},
      {"several sidecars, one with a limit only, one written as a number",
       R"({"name":"s1","restartPolicy":"Always","resources":{"limits":{"cpu":"250m"}}},
          {"name":"i1","image":"x"},
          {"name":"s2","restartPolicy":"Always","resources":{"requests":{"cpu":0.25,"memory":"1Gi"}}})",
       R"({"name":"log","resources":{"requests":{"cpu":"500m"}}})", "", "1", "3Gi"},
      {"overhead",
       R"({"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"400m"}}})", "",
       R"("overhead":{"cpu":"100m","memory":"64Mi"},)", "1500m", "4032Mi"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(Template(c.init, c.others, c.spec_extra));
    auto built = BuildPod(run, "a100", "nvidia.com/gpu", {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
    ASSERT_TRUE(built.ok()) << built.status().message();
    json::Document pod = MustParse(*built);
    const json::Value& main = Containers(pod)[0];
    for (const char* kind : {"requests", "limits"}) {
      EXPECT_EQ(StringMap(json::Find(main, {"resources", kind})),
                (std::map<std::string, std::string>{{"cpu", c.want_cpu}, {"memory", c.want_memory}, {"nvidia.com/gpu", "2"}}))
          << kind;
    }
    EXPECT_EQ(json::Find(pod, {"spec", "resources"}), nullptr) << "nothing at Pod level";
    // What the kubelet admits is the blocks, not more.
    k8s::PodRequests counted = KubeletCounts(*built);
    EXPECT_EQ(counted.cpu_milli, 2000);
    EXPECT_EQ(counted.memory_bytes, 4 * kGi);
    EXPECT_EQ(counted.Get("nvidia.com/gpu"), 2);
  }
}

TEST(BuildPodTest, SidecarsAndInitStepsThatDoNotFitTheBlocksAreErrors) {
  struct Case {
    std::string name, init, others, spec_extra, want;
  };
  const std::vector<Case> cases = {
      // 1600m alone fits 2 CPU; beside the sidecar started before it, it does not.
      {"init container after a sidecar",
       R"({"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}},
          {"name":"fetch","resources":{"requests":{"cpu":"1600m"}}})",
       "", "",
       "init container fetch and the sidecars started before it ask for 2100m CPU, but the run's blocks on n1 hold 2 in all"},
      {"sidecars take all the memory",
       R"({"name":"s1","restartPolicy":"Always","resources":{"requests":{"memory":"3Gi"}}},
          {"name":"s2","restartPolicy":"Always","resources":{"limits":{"memory":"1Gi"}}})",
       "", "", "the sidecars ask for 4Gi memory, but the run's blocks on n1 hold 4Gi in all, which leaves nothing for the first container"},
      {"containers, sidecars and overhead together",
       R"({"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}})",
       R"({"name":"log","resources":{"requests":{"cpu":"900m"}}})", R"("overhead":{"cpu":"100m"},)",
       "the other containers, the sidecars and the Pod's overhead ask for 2 CPU"},
      {"overhead makes the init step too big",
       R"({"name":"fetch","resources":{"requests":{"cpu":"2"}}})", "", R"("overhead":{"cpu":"100m"},)",
       "init container fetch asks for 2100m CPU (the Pod's overhead of 100m included)"},
      {"sidecar asks for a GPU",
       R"({"name":"s","restartPolicy":"Always","resources":{"limits":{"nvidia.com/gpu":"1"}}})", "", "",
       "sidecar s asks for nvidia.com/gpu: only the first container gets the run's GPUs"},
      {"unreadable overhead", "", "", R"("overhead":{"cpu":"much"},)",
       "spec.template.spec.overhead.cpu is a quantity berth cannot read"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(Template(c.init, c.others, c.spec_extra));
    auto pod = BuildPod(run, "a100", "nvidia.com/gpu", {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
    ASSERT_FALSE(pod.ok()) << *pod;
    EXPECT_THAT(pod.status().message(), HasSubstr(c.want));
  }
  // The same init container before the sidecar fits: order is what counts.
  RunObj ok = MakeRun(Template(R"({"name":"fetch","resources":{"requests":{"cpu":"1600m"}}},
      {"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}})", ""));
  auto pod = BuildPod(ok, "a100", "nvidia.com/gpu", {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
  ASSERT_TRUE(pod.ok()) << pod.status().message();
  EXPECT_EQ(KubeletCounts(*pod).cpu_milli, 2000);
}

// Pod-level resources (spec.resources, on by default since Kubernetes 1.34): the template's own
// figures are honoured when they fit the blocks; a Pod-level limit left out becomes the blocks'
// amount; the first container keeps what the template gives it for those resources.
TEST(BuildPodTest, PodLevelResourcesAreHonouredWithinTheBlocks) {
  struct Case {
    std::string name, pod_resources, main_resources;
    std::map<std::string, std::string> want_pod_requests, want_pod_limits, want_main_requests, want_main_limits;
    int64_t want_cpu, want_memory;  // as the kubelet counts the Pod
  };
  const std::vector<Case> cases = {
      {"requests only: limits become the blocks", R"({"requests":{"cpu":"1","memory":"2Gi"}})", "",
       {{"cpu", "1"}, {"memory", "2Gi"}}, {{"cpu", "2"}, {"memory", "4Gi"}},
       {{"nvidia.com/gpu", "2"}}, {{"nvidia.com/gpu", "2"}}, 1000, 2 * kGi},
      {"cpu at Pod level, memory on the first container", R"({"requests":{"cpu":"500m"},"limits":{"cpu":"1500m"}})", "",
       {{"cpu", "500m"}}, {{"cpu", "1500m"}},
       {{"memory", "4Gi"}, {"nvidia.com/gpu", "2"}}, {{"memory", "4Gi"}, {"nvidia.com/gpu", "2"}}, 500, 4 * kGi},
      {"the first container's own figures are kept", R"({"requests":{"cpu":"2","memory":"4Gi"},"limits":{"memory":"4Gi"}})",
       R"(,"resources":{"requests":{"cpu":"1500m","memory":"3Gi"},"limits":{"memory":"3Gi"}})",
       {{"cpu", "2"}, {"memory", "4Gi"}}, {{"cpu", "2"}, {"memory", "4Gi"}},
       {{"cpu", "1500m"}, {"memory", "3Gi"}, {"nvidia.com/gpu", "2"}}, {{"memory", "3Gi"}, {"nvidia.com/gpu", "2"}}, 2000, 4 * kGi},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(R"({"spec":{"resources":)" + c.pod_resources +
                         R"(,"containers":[{"name":"main","image":"busybox")" + c.main_resources + "}]}}");
    auto built = BuildPod(run, "a100", "nvidia.com/gpu", {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
    ASSERT_TRUE(built.ok()) << built.status().message();
    json::Document pod = MustParse(*built);
    EXPECT_EQ(StringMap(json::Find(pod, {"spec", "resources", "requests"})), c.want_pod_requests);
    EXPECT_EQ(StringMap(json::Find(pod, {"spec", "resources", "limits"})), c.want_pod_limits);
    const json::Value& main = Containers(pod)[0];
    EXPECT_EQ(StringMap(json::Find(main, {"resources", "requests"})), c.want_main_requests);
    EXPECT_EQ(StringMap(json::Find(main, {"resources", "limits"})), c.want_main_limits);
    k8s::PodRequests counted = KubeletCounts(*built);
    EXPECT_EQ(counted.cpu_milli, c.want_cpu);
    EXPECT_EQ(counted.memory_bytes, c.want_memory);
    EXPECT_EQ(counted.Get("nvidia.com/gpu"), 2);
  }
}

TEST(BuildPodTest, PodLevelResourcesAboveTheBlocksAreRefused) {
  struct Case {
    std::string name, pod_resources, spec_extra, want;
  };
  const std::vector<Case> cases = {
      {"request above the blocks", R"({"requests":{"cpu":"3"}})", "",
       "spec.template.spec.resources.requests.cpu is 3, more than the run's blocks on n1 hold (2): set "
       "spec.resources.cpu to at least 3 so that the run is given blocks that hold it"},
      {"limit above the blocks", R"({"requests":{"memory":"1Gi"},"limits":{"memory":"8Gi"}})", "",
       "spec.template.spec.resources.limits.memory is 8Gi, more than the run's blocks on n1 hold (4Gi): set "
       "spec.resources.memory to at least 8Gi"},
      {"request and overhead above the blocks", R"({"requests":{"cpu":"1950m"}})", R"("overhead":{"cpu":"100m"},)",
       "spec.template.spec.resources.requests.cpu is 1950m (2050m with the Pod's overhead of 100m), more than the run's "
       "blocks on n1 hold (2): set spec.resources.cpu to at least 2050m"},
      {"unreadable", R"({"requests":{"cpu":"two"}})", "", "spec.template.spec.resources.requests.cpu is a quantity berth cannot read"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(R"({"spec":{)" + c.spec_extra + R"("resources":)" + c.pod_resources +
                         R"(,"containers":[{"name":"main","image":"busybox"}]}})");
    auto pod = BuildPod(run, "a100", "nvidia.com/gpu", {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
    ASSERT_FALSE(pod.ok()) << *pod;
    EXPECT_THAT(pod.status().message(), HasSubstr(c.want));
  }
  // Exactly the blocks fits; with the overhead, the limit left out is the blocks less the overhead.
  RunObj run = MakeRun(R"({"spec":{"overhead":{"cpu":"100m"},"resources":{"requests":{"cpu":"1900m"}},
      "containers":[{"name":"main","image":"busybox"}]}})");
  auto built = BuildPod(run, "a100", "nvidia.com/gpu", {Rank(0, "n1", 2, 2000, 4 * kGi, 2)}, 0);
  ASSERT_TRUE(built.ok()) << built.status().message();
  json::Document pod = MustParse(*built);
  EXPECT_EQ(StringMap(json::Find(pod, {"spec", "resources", "limits"})), (std::map<std::string, std::string>{{"cpu", "1900m"}}));
  EXPECT_EQ(KubeletCounts(*built).cpu_milli, 2000);
}

TEST(BuildPodTest, SingleNodeEnvironmentAndNoHostname) {
  RunObj run = MakeRun(kSimpleTemplate);
  json::Document pod = Build(run, {Rank(0, "n1", 2, 8000, 32 * kGi, 2)}, 0);
  EXPECT_EQ(Env(Containers(pod)[0]), (std::map<std::string, std::string>{
                                         {"BERTH_RUN_NAME", "train"},
                                         {"BERTH_NODE_RANK", "0"},
                                         {"BERTH_NODES_NUM", "1"},
                                         {"BERTH_MASTER_NODE_ADDR", "localhost"},
                                         {"BERTH_NODES_ADDRS", "localhost"},
                                         {"BERTH_GPUS_PER_NODE", "2"},
                                         {"BERTH_GPUS_NUM", "2"},
                                         {"BERTH_BLOCKS", "2"},
                                     }));
  const json::Value* spec = json::Find(pod, {"spec"});
  EXPECT_FALSE(spec->HasMember("hostname"));
  EXPECT_FALSE(spec->HasMember("subdomain"));
}

TEST(BuildPodTest, MultiNodeRanks) {
  RunObj run = MakeRun(R"({"metadata":{"labels":{"app":"train"}},
                        "spec":{"hostname":"fixed","containers":[{"name":"main","image":"busybox"},{"name":"log","image":"x"}]}})",
                    3);
  std::vector<RankAssignment> ranks = {Rank(0, "n-a", 4, 32000, 256 * kGi, 4), Rank(1, "n-b", 4, 32000, 256 * kGi, 4),
                                       Rank(2, "n-c", 4, 32000, 256 * kGi, 4)};
  const std::string addrs = "train-0.train.ml.svc\ntrain-1.train.ml.svc\ntrain-2.train.ml.svc";
  for (size_t i = 0; i < ranks.size(); ++i) {
    SCOPED_TRACE("rank " + std::to_string(i));
    json::Document pod = Build(run, ranks, i);
    const std::string rank = std::to_string(i);
    EXPECT_EQ(json::GetString(*json::Find(pod, {"metadata"}), "name"), "train-" + rank);
    EXPECT_EQ(StringMap(json::Find(pod, {"metadata", "labels"})),
              (std::map<std::string, std::string>{
                  {"app", "train"}, {"berth.dev/run", "train"}, {"berth.dev/rank", rank}, {"berth.dev/attempt", "0"}}));
    EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "hostname"})), "train-" + rank);
    EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "subdomain"})), "train");
    EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "nodeName"})), ranks[i].node);
    const std::map<std::string, std::string> want_env = {
        {"BERTH_RUN_NAME", "train"},
        {"BERTH_NODE_RANK", rank},
        {"BERTH_NODES_NUM", "3"},
        {"BERTH_MASTER_NODE_ADDR", "train-0.train.ml.svc"},
        {"BERTH_NODES_ADDRS", addrs},
        {"BERTH_GPUS_PER_NODE", "4"},
        {"BERTH_GPUS_NUM", "12"},
        {"BERTH_BLOCKS", "4"},
    };
    const json::Value& cs = Containers(pod);
    ASSERT_EQ(cs.Size(), 2u);
    EXPECT_EQ(Env(cs[0]), want_env);
    EXPECT_EQ(Env(cs[1]), want_env);
    EXPECT_EQ(StringMap(json::Find(cs[0], {"resources", "limits"})),
              (std::map<std::string, std::string>{{"cpu", "32"}, {"memory", "256Gi"}, {"nvidia.com/gpu", "4"}}));
    EXPECT_FALSE(cs[1].HasMember("resources"));
  }
}

TEST(BuildPodTest, RankNumbersComeFromTheAssignmentNotTheIndex) {
  RunObj run = MakeRun(kSimpleTemplate, 2);
  // Ranks listed out of order: the pod of index 0 is rank 1.
  std::vector<RankAssignment> ranks = {Rank(1, "n-b", 1, 0, 0, 2), Rank(0, "n-a", 1, 0, 0, 2)};
  json::Document pod = Build(run, ranks, 0);
  EXPECT_EQ(json::GetString(*json::Find(pod, {"metadata"}), "name"), "train-1");
  auto env = Env(Containers(pod)[0]);
  EXPECT_EQ(env["BERTH_NODE_RANK"], "1");
  EXPECT_EQ(env["BERTH_GPUS_NUM"], "4");
  EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "hostname"})), "train-1");
}

TEST(BuildPodTest, ExistingEnvWithTheSameNameIsReplaced) {
  RunObj run = MakeRun(R"({"spec":{"containers":[{"name":"main","image":"busybox","env":[
      {"name":"KEEP","value":"1"},
      {"name":"BERTH_NODE_RANK","value":"42"},
      {"name":"BERTH_RUN_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
      {"name":"FROM_SECRET","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]}]}})");
  json::Document pod = Build(run, {Rank(0, "n1", 1, 0, 0, 0)}, 0);
  const json::Value& c = Containers(pod)[0];
  auto env = Env(c);  // also fails on duplicates
  EXPECT_EQ(env["KEEP"], "1");
  EXPECT_EQ(env["BERTH_NODE_RANK"], "0");
  EXPECT_EQ(env["BERTH_RUN_NAME"], "train");
  EXPECT_EQ(env["FROM_SECRET"], "<valueFrom>");
  EXPECT_EQ(env.size(), 10u);
  // The template's order is kept: replaced entries stay where they were.
  const json::Value& list = *json::Find(c, {"env"});
  EXPECT_EQ(json::GetString(list[0], "name"), "KEEP");
  EXPECT_EQ(json::GetString(list[1], "name"), "BERTH_NODE_RANK");
  EXPECT_EQ(json::GetString(list[2], "name"), "BERTH_RUN_NAME");
}

TEST(BuildPodTest, BadTemplatesAreErrors) {
  struct Case {
    std::string name, tmpl, want_message;
  };
  const std::vector<Case> cases = {
      {"empty", "", "not an object"},
      {"not json", "{bad", "not an object"},
      {"array", "[]", "not an object"},
      {"string", R"("pod")", "not an object"},
      {"no spec", R"({"metadata":{}})", "at least one container"},
      {"spec without containers", R"({"spec":{"restartPolicy":"Never"}})", "at least one container"},
      {"empty containers", R"({"spec":{"containers":[]}})", "at least one container"},
      {"containers not a list", R"({"spec":{"containers":{"name":"main"}}})", "at least one container"},
      {"first container not an object", R"({"spec":{"containers":["main"]}})", "containers[0]"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(c.tmpl);
    auto pod = BuildPod(run, "f", "nvidia.com/gpu", {Rank(0, "n1", 1, 1000, kGi, 1)}, 0);
    ASSERT_FALSE(pod.ok());
    EXPECT_THAT(pod.status().message(), HasSubstr(c.want_message));
  }
}

TEST(BuildPodTest, SpecialCharactersInValuesStayValidJson) {
  RunObj run = MakeRun(R"({"metadata":{"annotations":{"note":"say \"hi\"\n\\ok"}},
                        "spec":{"containers":[{"name":"main","image":"busybox","args":["a\"b"]}]}})");
  auto pod = BuildPod(run, "fleet\"x", "nvidia.com/gpu", {Rank(0, "n1", 1, 0, 0, 0)}, 0);
  ASSERT_TRUE(pod.ok());
  json::Document d = MustParse(*pod);
  EXPECT_EQ(json::GetString(json::Find(d, {"metadata", "annotations", "note"})), "say \"hi\"\n\\ok");
  EXPECT_EQ(json::GetString((*json::Find(d, {"spec", "tolerations"}))[0], "value"), "fleet\"x");
}

// ---------------------------------------------------------------------------------------------
// BuildService

TEST(BuildServiceTest, HeadlessServiceSelectingTheRunPods) {
  RunObj run = MakeRun(kSimpleTemplate, 3);
  json::Document svc = MustParse(BuildService(run));
  EXPECT_EQ(json::GetString(svc, "apiVersion"), "v1");
  EXPECT_EQ(json::GetString(svc, "kind"), "Service");
  EXPECT_EQ(json::GetString(json::Find(svc, {"metadata", "name"})), "train");
  EXPECT_EQ(json::GetString(json::Find(svc, {"metadata", "namespace"})), "ml");
  EXPECT_EQ(StringMap(json::Find(svc, {"metadata", "labels"})),
            (std::map<std::string, std::string>{{"berth.dev/run", "train"}}));
  const json::Value* spec = json::Find(svc, {"spec"});
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(json::GetString(*spec, "clusterIP"), "None");
  EXPECT_TRUE(json::GetBool(*spec, "publishNotReadyAddresses"));
  EXPECT_EQ(StringMap(json::Find(*spec, {"selector"})), (std::map<std::string, std::string>{{"berth.dev/run", "train"}}));
  const json::Value* owners = json::Find(svc, {"metadata", "ownerReferences"});
  ASSERT_NE(owners, nullptr);
  ASSERT_EQ(owners->Size(), 1u);
  EXPECT_EQ(json::GetString((*owners)[0], "apiVersion"), "berth.dev/v1alpha1");
  EXPECT_EQ(json::GetString((*owners)[0], "kind"), "Run");
  EXPECT_EQ(json::GetString((*owners)[0], "name"), "train");
  EXPECT_EQ(json::GetString((*owners)[0], "uid"), "uid-123");
  EXPECT_TRUE(json::GetBool((*owners)[0], "controller"));
  EXPECT_TRUE(json::GetBool((*owners)[0], "blockOwnerDeletion"));
}

TEST(BuildServiceTest, SelectorMatchesThePodLabels) {
  // The Service's selector must select every pod of the run, whatever the attempt.
  RunObj run = MakeRun(kSimpleTemplate, 2, 3);
  json::Document svc = MustParse(BuildService(run));
  auto selector = StringMap(json::Find(svc, {"spec", "selector"}));
  json::Document pod = Build(run, {Rank(0, "a", 1, 0, 0, 0), Rank(1, "b", 1, 0, 0, 0)}, 1);
  auto labels = StringMap(json::Find(pod, {"metadata", "labels"}));
  ASSERT_FALSE(selector.empty());
  for (const auto& [k, v] : selector) EXPECT_EQ(labels[k], v) << k;
  // The pods' subdomain is the Service's name.
  EXPECT_EQ(json::GetString(json::Find(pod, {"spec", "subdomain"})), json::GetString(json::Find(svc, {"metadata", "name"})));
}

// ---------------------------------------------------------------------------------------------
// Issue 44: the grace period, and which Pods are the run's

// A Pod is created with the template's terminationGracePeriodSeconds (Kubernetes' 30 without one)
// capped at the fleet's maxGracePeriod: a year asked for is the cap.
TEST(BuildPodTest, TerminationGracePeriodIsCappedAtTheFleetsMaxGracePeriod) {
  struct Case {
    std::string name, spec_extra;
    int64_t cap, want;
  };
  const std::vector<Case> cases = {
      {"a year asked for, cap 5 s", R"("terminationGracePeriodSeconds":31536000,)", 5, 5},
      {"none asked for: Kubernetes' 30, under the default cap", "", kDefaultGraceCapSeconds, 30},
      {"none asked for, cap 5 s", "", 5, 5},
      {"less than the cap is kept", R"("terminationGracePeriodSeconds":10,)", 600, 10},
      {"0 is kept", R"("terminationGracePeriodSeconds":0,)", 600, 0},
      {"not a number: Kubernetes' 30 capped", R"("terminationGracePeriodSeconds":"x",)", 7, 7},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    RunObj run = MakeRun(R"({"spec":{)" + c.spec_extra + R"("containers":[{"name":"main","image":"busybox"}]}})");
    auto built = BuildPod(run, "a100", "nvidia.com/gpu", {Rank(0, "n1", 1, 0, 0, 0)}, 0, c.cap);
    ASSERT_TRUE(built.ok()) << built.status().message();
    json::Document pod = MustParse(*built);
    const json::Value* g = json::Find(pod, {"spec", "terminationGracePeriodSeconds"});
    ASSERT_NE(g, nullptr);
    ASSERT_TRUE(g->IsInt64());
    EXPECT_EQ(g->GetInt64(), c.want);
  }
}

TEST(GraceCapSecondsTest, WholeSecondsRoundedUpAndNeverZero) {
  using std::chrono::milliseconds;
  EXPECT_EQ(GraceCapSeconds(milliseconds(10 * 60 * 1000)), 600);
  EXPECT_EQ(GraceCapSeconds(milliseconds(3000)), 3);
  EXPECT_EQ(GraceCapSeconds(milliseconds(2500)), 3);
  EXPECT_EQ(GraceCapSeconds(milliseconds(0)), 1) << "0 on a delete would be a force delete";
  EXPECT_EQ(GraceCapSeconds(milliseconds(1)), 1);
}

// A Pod the Run controls (ownerReference with its uid) is the run's only when its uid is in
// status.podUIDs: a tenant can forge labels, annotations and ownerReference uids, not the status.
TEST(IsRunsPodTest, OnlyPodsWhoseUidTheStatusListsAreTheRuns) {
  RunObj run = MakeRun(kSimpleTemplate);
  run.status.phase = Phase::kRunning;
  run.status.resubmissions = 0;
  run.status.placement = {PlacementEntry{0, "n1", 1, "train-0"}};
  run.status.pod_uids = {"made-by-berth"};
  auto pod = [&](const std::string& name, const std::string& uid, const std::string& node) {
    k8s::Pod p;
    p.meta.ns = "ml";
    p.meta.name = name;
    p.meta.uid = uid;
    p.meta.labels = {{kRunLabel, "train"}, {kAttemptLabel, "0"}};
    p.meta.owners = {k8s::OwnerRef{"berth.dev/v1alpha1", "Run", "train", "uid-123", true}};
    p.node_name = node;
    return p;
  };
  const k8s::Pod berths = pod("train-0", "made-by-berth", "n1");
  const k8s::Pod forged = pod("squat", "tenant-made", "n1");
  EXPECT_TRUE(IsRunsPod(berths, &run));
  EXPECT_FALSE(IsStrayPodOf(berths, run));
  EXPECT_FALSE(IsRunsPod(forged, &run));
  EXPECT_TRUE(IsStrayPodOf(forged, run));
  // The same forged Pod in every phase of the run, and one that claims it by ownerReference only.
  for (Phase phase : {Phase::kPending, Phase::kScheduled, Phase::kRunning, Phase::kSucceeded, Phase::kFailed}) {
    run.status.phase = phase;
    EXPECT_TRUE(IsStrayPodOf(forged, run)) << PhaseName(phase);
    k8s::Pod unlabelled = forged;
    unlabelled.meta.labels.clear();
    EXPECT_TRUE(IsStrayPodOf(unlabelled, run)) << PhaseName(phase);
  }
  // A Pod of someone else's run or namespace is not this run's stray.
  k8s::Pod other = pod("x", "u", "n1");
  other.meta.labels[kRunLabel] = "another";
  other.meta.owners.clear();
  EXPECT_FALSE(IsStrayPodOf(other, run));
  // Crash between create and status write: the placement's Pod, of the current attempt, on the
  // placement's node, owned by the Run, is not a stray while the run is placed (berth records its
  // uid); the same Pod on another node, or of another attempt, is.
  run.status.phase = Phase::kScheduled;
  run.status.pod_uids.clear();
  const k8s::Pod unrecorded = pod("train-0", "lost-answer", "n1");
  EXPECT_FALSE(IsRunsPod(unrecorded, &run));
  EXPECT_TRUE(MayBeRunsUnrecordedPod(unrecorded, run));
  EXPECT_FALSE(IsStrayPodOf(unrecorded, run));
  EXPECT_TRUE(IsStrayPodOf(pod("train-0", "lost-answer", "n2"), run));
  k8s::Pod old_attempt = unrecorded;
  old_attempt.meta.labels[kAttemptLabel] = "1";
  EXPECT_TRUE(IsStrayPodOf(old_attempt, run));
}

}  // namespace
}  // namespace berth::reconcilers
