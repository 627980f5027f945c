// A Pod made from a user's template (k8s/pod_template.h): the template kept as written, read
// through its view, changed through the setters.

#include "k8s/pod_template.h"

#include <gtest/gtest.h>

#include "k8s/objects.h"

namespace berth::k8s {
namespace {

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return d.ok() ? std::move(d.value()) : json::Document();
}

constexpr const char* kTemplate = R"({"metadata":{"labels":{"team":"cv"},"annotations":{"note":"x"}},
 "spec":{"futureField":{"kept":true},"containers":[
   {"name":"main","image":"busybox","env":[{"name":"BERTH_BLOCKS","value":"old"},{"name":"KEEP","value":"1"}]},
   {"name":"side","resources":{"requests":{"cpu":"500m"},"limits":{"memory":2048}}}, "junk"],
  "initContainers":[{"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":{"bad":1}}}}],
  "overhead":{"cpu":"100m"},"resources":{"limits":{"memory":"1Gi"}}}})";

TEST(PodDraftTest, TheTemplateIsReadThroughItsView) {
  auto draft = PodDraft::FromTemplate(kTemplate);
  ASSERT_TRUE(draft.ok());
  const TemplateSpecView v = draft->ReadSpec();
  ASSERT_EQ(v.containers.size(), 3u);
  EXPECT_EQ(v.containers[1].name, "side");
  EXPECT_EQ(v.containers[1].requests.at("cpu"), "500m");
  EXPECT_EQ(v.containers[1].limits.at("memory"), "2048");  // a number as written
  EXPECT_FALSE(v.containers[2].is_object);
  ASSERT_EQ(v.init_containers.size(), 1u);
  EXPECT_TRUE(v.init_containers[0].restart_always);
  EXPECT_EQ(v.init_containers[0].requests.at("cpu"), "");  // neither string nor number
  EXPECT_EQ(v.overhead.at("cpu"), "100m");
  EXPECT_EQ(v.pod_limits.at("memory"), "1Gi");
  EXPECT_TRUE(v.pod_requests.empty());
  EXPECT_TRUE(v.pod_limits_settable);
}

TEST(PodDraftTest, SettersChangeOnlyWhatTheySayAndKeepTheRest) {
  auto draft = PodDraft::FromTemplate(kTemplate);
  ASSERT_TRUE(draft.ok());
  PodDraft& pod = *draft;
  pod.SetName("train-0", "ml");
  pod.SetLabel("berth.dev/run", "train");
  pod.SetAnnotation("berth.dev/blocks", "4");
  pod.SetControllerOwner("berth.dev/v1alpha1", "Run", "train", "u1");
  pod.SetSpecString("nodeName", "gpu-0");
  pod.DefaultSpecString("restartPolicy", "Never");
  pod.DefaultSpecString("nodeName", "ignored");
  pod.AddToleration("berth.dev/fleet", "Equal", "a100");
  ASSERT_TRUE(pod.HasContainers());
  ASSERT_TRUE(pod.FirstContainerIsObject());
  pod.SetFirstContainerQuantity("limits", "cpu", "3");
  pod.RemoveFirstContainerQuantity("requests", "nvidia.com/gpu");
  pod.SetPodLimit("cpu", "4");
  pod.SetEnvInEveryContainer("BERTH_BLOCKS", "4");
  auto doc = MustParse(pod.Json());
  EXPECT_EQ(json::GetString(doc, "kind"), "Pod");
  const ObjectMeta meta = DecodeMeta(doc);
  EXPECT_EQ(meta.name, "train-0");
  EXPECT_EQ(meta.ns, "ml");
  EXPECT_EQ(meta.Label("team"), "cv");
  EXPECT_EQ(meta.Label("berth.dev/run"), "train");
  EXPECT_EQ(meta.Annotation("note"), "x");
  EXPECT_EQ(meta.Annotation("berth.dev/blocks"), "4");
  ASSERT_NE(meta.ControllerRef(), nullptr);
  EXPECT_EQ(meta.ControllerRef()->uid, "u1");
  const json::Value& spec = *json::Find(doc, {"spec"});
  EXPECT_EQ(json::GetString(spec, "nodeName"), "gpu-0");
  EXPECT_EQ(json::GetString(spec, "restartPolicy"), "Never");
  EXPECT_NE(json::Find(spec, {"futureField", "kept"}), nullptr);
  EXPECT_EQ(json::GetString(json::Find(spec, {"resources", "limits", "cpu"})), "4");
  EXPECT_EQ(json::GetString(json::Find(spec, {"resources", "limits", "memory"})), "1Gi");
  const json::Value& main = spec["containers"][0];
  EXPECT_EQ(json::GetString(json::Find(main, {"resources", "limits", "cpu"})), "3");
  ASSERT_EQ(main["env"].Size(), 2u);  // replaced, not added
  EXPECT_EQ(json::GetString(main["env"][0], "value"), "4");
  EXPECT_EQ(json::GetString(main["env"][1], "name"), "KEEP");
  EXPECT_EQ(json::GetString(spec["containers"][1]["env"][0], "value"), "4");
  EXPECT_TRUE(spec["containers"][2].IsString());  // not a container: left alone
  EXPECT_EQ(json::GetString(spec["tolerations"][0], "value"), "a100");
}

TEST(PodDraftTest, WhatIsNotAnObjectIsSaid) {
  EXPECT_EQ(PodDraft::FromTemplate("").status().message(), "spec.template is not an object");
  EXPECT_EQ(PodDraft::FromTemplate("[]").status().message(), "spec.template is not an object");
  EXPECT_EQ(PodDraft::FromTemplate("{").status().message(), "spec.template is not an object");
  auto none = PodDraft::FromTemplate(R"({"spec":{"containers":[]}})");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->HasContainers());
  auto odd = PodDraft::FromTemplate(R"({"spec":{"containers":["x"],"resources":{"limits":"lots"}}})");
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(odd->HasContainers());
  EXPECT_FALSE(odd->FirstContainerIsObject());
  EXPECT_FALSE(odd->ReadSpec().pod_limits_settable);
}

}  // namespace
}  // namespace berth::k8s
