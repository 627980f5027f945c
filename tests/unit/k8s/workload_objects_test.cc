// Issue 45: the views of a Job and its Pods (k8s/workload_objects.h) and the pin patch.
#include "k8s/workload_objects.h"

#include <gtest/gtest.h>

namespace berth::k8s {
namespace {

json::Document Parse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return std::move(*d);
}

TEST(DecodeJob, PodsAtOnceRequestsAsTheKubeletCountsThemAndTheTerminalCondition) {
  auto j = DecodeJob(Parse(R"({"metadata":{"name":"train","namespace":"ml","uid":"u1",
      "labels":{"berth.dev/queue":"true","app":"x"}},
    "spec":{"parallelism":4,"completions":3,"suspend":true,"template":{"spec":{
      "initContainers":[{"name":"i","resources":{"requests":{"cpu":"3"}}}],
      "containers":[{"name":"a","resources":{"requests":{"cpu":"1","nvidia.com/gpu":"2"}}},
                    {"name":"b","resources":{"requests":{"cpu":"500m","memory":"1Gi"}}}],
      "overhead":{"cpu":"100m"}}}},
    "status":{"conditions":[{"type":"SuccessCriteriaMet","status":"True"},
                            {"type":"Complete","status":"True","reason":"CompletionsReached","message":"done"}]}})"));
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->pods_at_once, 3);  // parallelism bounded by completions
  EXPECT_TRUE(j->suspended);
  EXPECT_EQ(j->requests.cpu_milli, 3100);  // max(1.5 summed, 3 init) + 0.1 overhead
  EXPECT_EQ(j->requests.memory_bytes, 1024ll * 1024 * 1024);
  EXPECT_EQ(j->requests.Get("nvidia.com/gpu"), 2);
  ASSERT_TRUE(j->finished.has_value());
  EXPECT_TRUE(*j->finished);
  EXPECT_EQ(j->finish_reason, "CompletionsReached");
  EXPECT_EQ(j->meta.Label("berth.dev/queue"), "true");
  EXPECT_EQ(j->meta.Label("app"), "") << "only berth's labels are kept";
}

TEST(DecodeJob, DefaultsAndAFailedJob) {
  auto j = DecodeJob(Parse(R"({"metadata":{"name":"j"},"spec":{"template":{"spec":{"containers":[{"name":"a"}]}}},
    "status":{"conditions":[{"type":"Failed","status":"True","reason":"BackoffLimitExceeded","message":"too many"}]}})"));
  ASSERT_NE(j, nullptr);
  EXPECT_EQ(j->pods_at_once, 1);
  EXPECT_FALSE(j->suspended);
  ASSERT_TRUE(j->finished.has_value());
  EXPECT_FALSE(*j->finished);
  EXPECT_EQ(j->finish_message, "too many");
  EXPECT_EQ(DecodeJob(Parse(R"({"spec":{}})")), nullptr) << "no name";
}

TEST(PinPodPatch, NarrowsEveryOwnTermKeepsOtherGatesAndTolerations) {
  json::Document pod = Parse(R"({"metadata":{"name":"p","resourceVersion":"42"},"spec":{
    "schedulingGates":[{"name":"other"},{"name":"berth.dev/admission"}],
    "tolerations":[{"key":"k","operator":"Exists"}],
    "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]},
      {"matchExpressions":[{"key":"zone","operator":"In","values":["b"]}]}]}}}}})");
  PinSpec pin{.node = "n1", .gate = "berth.dev/admission", .toleration_key = "berth.dev/fleet", .toleration_value = "a100",
              .labels = {{"berth.dev/ticket", "job-x"}, {"berth.dev/rank", "1"}}};
  json::Document patch = Parse(PinPodPatch(pod, pin));
  EXPECT_EQ(json::GetString(json::Find(patch, {"metadata", "resourceVersion"})), "42");
  EXPECT_EQ(json::GetString(json::Find(patch, {"metadata", "labels", "berth.dev/rank"})), "1");
  const json::Value* gates = json::Find(patch, {"spec", "schedulingGates"});
  ASSERT_TRUE(gates != nullptr && gates->IsArray());
  ASSERT_EQ(gates->Size(), 1u);
  EXPECT_EQ(json::GetString((*gates)[0], "name"), "other");
  const json::Value* terms = json::Find(patch, {"spec", "affinity", "nodeAffinity",
                                                "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  ASSERT_TRUE(terms != nullptr && terms->IsArray());
  ASSERT_EQ(terms->Size(), 2u);
  for (const auto& t : terms->GetArray()) {
    EXPECT_EQ(json::GetString(t["matchFields"][0], "key"), "metadata.name");
    EXPECT_EQ(std::string(t["matchFields"][0]["values"][0].GetString()), "n1");
    EXPECT_EQ(t["matchExpressions"].Size(), 1u) << "the Pod's own expression stays";
  }
  const json::Value* tols = json::Find(patch, {"spec", "tolerations"});
  ASSERT_TRUE(tols != nullptr && tols->IsArray());
  ASSERT_EQ(tols->Size(), 2u);
  EXPECT_EQ(json::GetString((*tols)[1], "value"), "a100");
}

TEST(PinSource, KeptOnlyForAControlledGatedPodAndPinsAsThePodItself) {
  const char* text = R"({"metadata":{"name":"p","resourceVersion":"42","labels":{"big":"x"},
    "ownerReferences":[{"kind":"Job","name":"j","uid":"u","controller":true}]},"spec":{
    "containers":[{"name":"c","image":"i"}],
    "schedulingGates":[{"name":"other"},{"name":"berth.dev/admission"}],
    "tolerations":[{"key":"k","operator":"Exists"}],
    "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[
      {"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}}}})";
  json::Document pod = Parse(text);
  const std::string source = PinSource(pod, "berth.dev/admission");
  ASSERT_FALSE(source.empty());
  EXPECT_EQ(source.find("containers"), std::string::npos) << "only what the pin reads is kept: " << source;
  EXPECT_EQ(source.find("big"), std::string::npos) << source;
  PinSpec pin{.node = "n1", .gate = "berth.dev/admission", .toleration_key = "berth.dev/fleet", .toleration_value = "a100",
              .labels = {{"berth.dev/ticket", "job-x"}, {"berth.dev/rank", "0"}}};
  EXPECT_EQ(PinPodPatch(source, pin), PinPodPatch(pod, pin)) << "the cached source pins exactly as the Pod would";

  EXPECT_EQ(PinSource(pod, "another-gate"), "") << "not waiting on the gate";
  json::Document bare = Parse(R"({"metadata":{"name":"p","resourceVersion":"1"},"spec":{"schedulingGates":[{"name":"berth.dev/admission"}]}})");
  EXPECT_EQ(PinSource(bare, "berth.dev/admission"), "") << "a bare Pod (a Pod group's) is pinned from the API";
  EXPECT_EQ(PinPodPatch(std::string("{not json"), pin), "");
}

TEST(WithUidPrecondition, AddsTheUidToTheMetadata) {
  json::Document d = Parse(WithUidPrecondition(R"({"spec":{"suspend":true}})", "u-1"));
  EXPECT_EQ(json::GetString(json::Find(d, {"metadata", "uid"})), "u-1");
  EXPECT_TRUE(json::Find(d, {"spec", "suspend"})->GetBool());
}

}  // namespace
}  // namespace berth::k8s
