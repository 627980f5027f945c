#include "controller/admission.h"

#include <gtest/gtest.h>

#include "k8s/config.h"
#include "k8s/json.h"

namespace berth::controller {
namespace {

namespace json = k8s::json;

std::string Review(const std::string& operation, const std::string& metadata) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":")" + operation +
         R"(","object":{"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":)" + metadata + "}}}";
}

// The decoded JSON patch of an answer ("" when it has none).
std::string Patch(const std::string& answer) {
  auto doc = json::Parse(answer);
  EXPECT_TRUE(doc.ok()) << answer;
  EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "uid"})), "u-1");
  EXPECT_TRUE(json::Find(*doc, {"response", "allowed"})->GetBool());
  std::string b64 = json::GetString(json::Find(*doc, {"response", "patch"}));
  if (b64.empty()) return "";
  EXPECT_EQ(json::GetString(json::Find(*doc, {"response", "patchType"})), "JSONPatch");
  return k8s::Base64Decode(b64).value();
}

TEST(AdmissionTest, AddsTheFinalizerToNewRuns) {
  EXPECT_EQ(Patch(ReviewRun(Review("CREATE", R"({"name":"r"})")).value()),
            R"([{"op":"add","path":"/metadata/finalizers","value":["berth.dev/run-cleanup"]}])");
  EXPECT_EQ(Patch(ReviewRun(Review("CREATE", R"({"name":"r","finalizers":["other"]})")).value()),
            R"([{"op":"add","path":"/metadata/finalizers/-","value":"berth.dev/run-cleanup"}])");
  EXPECT_EQ(Patch(ReviewRun(Review("CREATE", R"({"name":"r","finalizers":["berth.dev/run-cleanup"]})")).value()), "");
  EXPECT_EQ(Patch(ReviewRun(Review("UPDATE", R"({"name":"r"})")).value()), "");
}

TEST(AdmissionTest, RefusesWhatIsNotAnAdmissionReview) {
  for (const char* body : {"", "[]", "{}", R"({"request":{}})", "not json"}) {
    EXPECT_FALSE(ReviewRun(body).ok()) << body;
  }
}

// Regression: the webhook parsed any body with RapidJSON's recursive parser; a deep one
// overflowed the stack.
TEST(AdmissionTest, RefusesDeeplyNestedBodiesWithoutCrashing) {
  for (const std::string open : {"[", "{\"request\":"}) {
    std::string deep;
    for (int i = 0; i < 1 << 20; ++i) deep += open;
    auto r = ReviewRun(deep);
    EXPECT_FALSE(r.ok()) << open;
  }
  // A real review nests far less than the cap.
  EXPECT_TRUE(ReviewRun(Review("CREATE", R"({"name":"r","labels":{"a":"b"}})")).ok());
}

TEST(AdmissionTest, Base64RoundTrips) {
  for (const std::string s : {"", "a", "ab", "abc", "abcd", "hello, berth\n"}) {
    EXPECT_EQ(k8s::Base64Decode(k8s::Base64Encode(s)).value(), s);
  }
  EXPECT_EQ(k8s::Base64Encode("abcd"), "YWJjZA==");
}

}  // namespace
}  // namespace berth::controller
