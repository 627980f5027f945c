// The codec's writer helpers (api/v1alpha1/json_io.h): members written and left out, a whole
// object, a merge patch with and without its precondition.

#include "api/v1alpha1/json_io.h"

#include <gtest/gtest.h>

#include "k8s/timefmt.h"

namespace berth::api::v1alpha1::io {
namespace {

TEST(WriterMembers, WriteKeyThenValue) {
  Writer w;
  w.raw().StartObject();
  w.StringMember("name", "train");
  w.IntMember("nodes", 4);
  w.NumberMember("gpuHours", 1.5);
  w.BoolMember("stop", false);
  w.raw().EndObject();
  EXPECT_EQ(w.Take(), R"({"name":"train","nodes":4,"gpuHours":1.5,"stop":false})");
}

TEST(WriterMembers, IfSetLeavesOutEmptyAndUnsetValues) {
  const Time at(k8s::ParseRfc3339("2026-01-02T03:04:05Z").value());
  Writer w;
  w.raw().StartObject();
  w.StringMemberIfSet("message", "");
  w.IntMemberIfSet("queuePosition", std::nullopt);
  w.TimeMemberIfSet("expiresAt", std::nullopt);
  w.StringMemberIfSet("fleet", "a100");
  w.IntMemberIfSet("priority", 0);  // set, though zero
  w.TimeMemberIfSet("startedAt", at);
  w.raw().EndObject();
  EXPECT_EQ(w.Take(), R"({"fleet":"a100","priority":0,"startedAt":"2026-01-02T03:04:05Z"})");
}

TEST(WriterMembers, EncodeObjectWritesHeadSpecAndStatus) {
  k8s::ObjectMeta meta;
  meta.name = "a100";
  meta.ns = "ml";
  const std::string text = EncodeObject(
      "Fleet", meta, [](Writer& w) { w.Int(1); }, [](Writer& w) { w.Null(); });
  EXPECT_EQ(text, R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"a100","namespace":"ml"},)"
                  R"("spec":1,"status":null})");
}

TEST(WriterMembers, MergePatchHasThePreconditionOnlyWithAResourceVersion) {
  auto status = [](Writer& w) {
    w.raw().StartObject();
    w.IntMember("queuePosition", 3);
    w.raw().EndObject();
  };
  EXPECT_EQ(MergePatch("42", "status", status), R"({"metadata":{"resourceVersion":"42"},"status":{"queuePosition":3}})");
  EXPECT_EQ(MergePatch("", "status", status), R"({"status":{"queuePosition":3}})");
}

}  // namespace
}  // namespace berth::api::v1alpha1::io
