#include "cli/priority.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "fake_transport.h"
#include "k8s/client.h"

namespace berth::cli {
namespace {

using ::testing::HasSubstr;
using testing::FakeTransport;
using testing::StatusBody;

TEST(PriorityTest, ParseAcceptsWholeNumbersFrom0To100) {
  for (const auto& [text, want] : std::vector<std::pair<std::string, int>>{
           {"0", 0}, {"1", 1}, {"50", 50}, {"100", 100}, {"007", 7}, {"0100", 100}}) {
    auto v = ParsePriority(text);
    ASSERT_TRUE(v.ok()) << text << ": " << v.status().message();
    EXPECT_EQ(*v, want) << text;
  }
}

TEST(PriorityTest, ParseRefusesEverythingElseWithASentence) {
  for (const std::string text : {"", "abc", "101", "-1", "-0", "+5", "5.0", " 5", "5 ", "1e2", "99999999999", "0x10", "-"}) {
    auto v = ParsePriority(text);
    ASSERT_FALSE(v.ok()) << "accepted \"" << text << "\"";
    EXPECT_EQ(v.status().message(),
              "invalid priority \"" + text + "\": it must be a whole number from 0 (lowest) to 100 (highest)");
  }
}

std::string RunJson(int priority, const std::string& rv, int generation, const std::string& status = "{}") {
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"train","namespace":"ml","resourceVersion":")" +
         rv + R"(","generation":)" + std::to_string(generation) + R"(},"spec":{"priority":)" + std::to_string(priority) +
         R"(},"status":)" + status + "}";
}

class ChangePriorityTest : public ::testing::Test {
 protected:
  ChangePriorityTest() : transport_(std::make_shared<FakeTransport>()), client_(k8s::ClientConfig{}, transport_) {
    client_.SetMaxRetries(0);
  }
  std::shared_ptr<FakeTransport> transport_;
  k8s::Client client_;
};

TEST_F(ChangePriorityTest, PatchIsGuardedByTheReadResourceVersion) {
  transport_->Push(200, RunJson(50, "100", 1));
  transport_->Push(200, RunJson(90, "101", 2));
  auto c = ChangePriority(client_, "ml", "train", 90);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->old_priority, 50);
  EXPECT_EQ(c->new_priority, 90);
  EXPECT_EQ(c->generation, 2);
  EXPECT_TRUE(c->changed);
  EXPECT_EQ(c->conflicts, 0);
  ASSERT_EQ(transport_->requests.size(), 2u);
  EXPECT_EQ(transport_->requests[0].method, "GET");
  EXPECT_EQ(transport_->requests[0].path, "/apis/berth.dev/v1alpha1/namespaces/ml/runs/train");
  EXPECT_EQ(transport_->requests[1].method, "PATCH");
  EXPECT_EQ(transport_->requests[1].content_type, "application/merge-patch+json");
  EXPECT_EQ(transport_->requests[1].body, R"({"metadata":{"resourceVersion":"100"},"spec":{"priority":90}})");
}

TEST_F(ChangePriorityTest, ConflictRereadsAndRetries) {
  transport_->Push(200, RunJson(50, "100", 1));
  transport_->Push(409, StatusBody(409, "Conflict", "the object has been modified"));
  transport_->Push(200, RunJson(60, "105", 2));  // someone else changed it meanwhile
  transport_->Push(200, RunJson(10, "106", 3));
  auto c = ChangePriority(client_, "ml", "train", 10);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->old_priority, 60);  // what it was when our write won
  EXPECT_EQ(c->generation, 3);
  EXPECT_EQ(c->conflicts, 1);
  ASSERT_EQ(transport_->requests.size(), 4u);
  EXPECT_EQ(transport_->requests[3].body, R"({"metadata":{"resourceVersion":"105"},"spec":{"priority":10}})");
}

TEST_F(ChangePriorityTest, GivesUpAfterTooManyConflicts) {
  for (int i = 0; i < 3; ++i) {
    transport_->Push(200, RunJson(50, std::to_string(100 + i), 1));
    transport_->Push(409, StatusBody(409, "Conflict", "the object has been modified"));
  }
  auto c = ChangePriority(client_, "ml", "train", 10, /*attempts=*/3);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("kept changing"));
  EXPECT_EQ(transport_->requests.size(), 6u);
}

TEST_F(ChangePriorityTest, SamePriorityWritesNothing) {
  transport_->Push(200, RunJson(70, "100", 4));
  auto c = ChangePriority(client_, "ml", "train", 70);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->changed);
  EXPECT_EQ(c->generation, 4);
  EXPECT_EQ(transport_->requests.size(), 1u);
}

TEST_F(ChangePriorityTest, Errors) {
  transport_->Push(404, StatusBody(404, "NotFound", "runs.berth.dev \"nope\" not found"));
  auto missing = ChangePriority(client_, "ml", "nope", 10);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), "run \"nope\" not found in namespace \"ml\"");

  const std::string forbidden =
      "runs.berth.dev \"train\" is forbidden: User \"bob\" cannot patch resource \"runs\" in API group \"berth.dev\" in "
      "the namespace \"ml\"";
  transport_->Push(200, RunJson(50, "100", 1));
  transport_->Push(403, StatusBody(403, "Forbidden", forbidden));
  auto denied = ChangePriority(client_, "ml", "train", 10);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().message(), forbidden);

  transport_->PushNoAnswer("request to https://k:6443 failed: connection refused");
  auto down = ChangePriority(client_, "ml", "train", 10);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().message(), "request to https://k:6443 failed: connection refused");
}

TEST(PriorityTest, ObservedAndPlace) {
  struct Case {
    std::string status;
    std::string place;
  };
  const std::vector<Case> cases = {
      {R"({"phase":"Pending","queuePosition":3,"observedGeneration":2})", "position 3 in the queue"},
      {R"({"phase":"Pending","observedGeneration":2})", "pending, not in the top 100 of the queue"},
      {R"({"phase":"Pending","queuePosition":null,"observedGeneration":2})", "pending, not in the top 100 of the queue"},
      {R"({"phase":"Scheduled"})", "admitted (Scheduled)"},
      {R"({"phase":"Running","queuePosition":null})", "admitted (Running)"},
      {R"({"phase":"Succeeded"})", "finished (Succeeded)"},
      {R"({"phase":"Failed"})", "finished (Failed)"},
      {R"({})", "pending, not placed in the queue yet"},
  };
  for (const auto& c : cases) {
    auto doc = k8s::json::Parse(RunJson(50, "1", 2, c.status));
    ASSERT_TRUE(doc.ok());
    EXPECT_EQ(DescribePlace(*doc), c.place) << c.status;
  }
  auto seen = k8s::json::Parse(RunJson(50, "1", 2, R"({"observedGeneration":2})"));
  auto behind = k8s::json::Parse(RunJson(50, "1", 2, R"({"observedGeneration":1})"));
  auto none = k8s::json::Parse(RunJson(50, "1", 2));
  EXPECT_TRUE(Observed(*seen, 2));
  EXPECT_TRUE(Observed(*seen, 1));
  EXPECT_FALSE(Observed(*behind, 2));
  EXPECT_FALSE(Observed(*none, 1));
  for (const auto& [status, queued] : std::vector<std::pair<std::string, bool>>{
           {"{}", true}, {R"({"phase":"Pending"})", true}, {R"({"phase":"Scheduled"})", false},
           {R"({"phase":"Running"})", false}, {R"({"phase":"Succeeded"})", false}, {R"({"phase":"Failed"})", false}}) {
    auto doc = k8s::json::Parse(RunJson(50, "1", 2, status));
    EXPECT_EQ(Queued(*doc), queued) << status;
  }
}

}  // namespace
}  // namespace berth::cli
