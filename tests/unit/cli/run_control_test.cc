// kubectl berth stop | suspend | resume: which runs each applies to, the patch, and when the
// controller has carried it out (runops/run_control.h, shared with the dashboard), against a
// scripted transport.

#include "runops/run_control.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "fake_transport.h"
#include "k8s/client.h"

namespace berth::cli {
namespace {

using ::testing::HasSubstr;
using runops::ApplyControl;
using runops::CheckControl;
using runops::Control;
using runops::ControlDone;
using runops::ControlPatch;
using runops::StatusLine;
using testing::FakeTransport;
using testing::StatusBody;

std::string RunJson(const std::string& spec_extra, const std::string& status, const std::string& rv = "10",
                    int generation = 1, const std::string& meta_extra = "") {
  return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"train","namespace":"ml","resourceVersion":")" +
         rv + R"(","generation":)" + std::to_string(generation) + meta_extra + R"(},"spec":{"priority":50)" + spec_extra +
         R"(},"status":)" + status + "}";
}

k8s::json::Document Parse(const std::string& s) { return std::move(k8s::json::Parse(s)).value(); }

TEST(RunControlTest, WhichRunsEachCommandAppliesTo) {
  struct Case {
    std::string name;
    Control c;
    std::string spec_extra, status, meta_extra;
    std::string error;  // "" = applies
  };
  const std::vector<Case> cases = {
      {"stop a running run", Control::kStop, "", R"({"phase":"Running"})", "", ""},
      {"stop a pending run", Control::kStop, "", R"({"phase":"Pending"})", "", ""},
      {"stop a run berth has not seen yet", Control::kStop, "", "{}", "", ""},
      {"stop a suspended run", Control::kStop, R"(,"suspend":true)", R"({"phase":"Pending","reason":"Suspended"})", "", ""},
      {"stop an ended run", Control::kStop, "", R"({"phase":"Succeeded","reason":"Succeeded"})", "",
       "run \"train\" has already ended (Succeeded); there is nothing to stop (kubectl berth apply -f FILE runs it again)"},
      {"stop a stopped run", Control::kStop, R"(,"stop":true)", R"({"phase":"Failed","reason":"Stopped"})", "",
       "run \"train\" has already ended (Failed, Stopped); there is nothing to stop"},
      {"stop a run being stopped", Control::kStop, R"(,"stop":true)", R"({"phase":"Running"})", "",
       "run \"train\" is already being stopped (spec.stop is true)"},
      {"stop a run being deleted", Control::kStop, "", R"({"phase":"Running"})",
       R"(,"deletionTimestamp":"2026-11-24T10:00:00Z")", "run \"train\" is being deleted; there is nothing to stop"},
      {"suspend a running run", Control::kSuspend, "", R"({"phase":"Running"})", "", ""},
      {"suspend a pending run", Control::kSuspend, R"(,"suspend":false)", R"({"phase":"Pending"})", "", ""},
      {"suspend twice", Control::kSuspend, R"(,"suspend":true)", R"({"phase":"Pending","reason":"Suspended"})", "",
       "run \"train\" is already suspended (spec.suspend is true); kubectl berth resume train queues it again"},
      {"suspend an ended run", Control::kSuspend, "", R"({"phase":"Failed","reason":"PodFailed"})", "",
       "run \"train\" has already ended (Failed, PodFailed); there is nothing to suspend"},
      {"resume a suspended run", Control::kResume, R"(,"suspend":true)", R"({"phase":"Pending","reason":"Suspended"})", "", ""},
      {"resume a run that is not suspended", Control::kResume, "", R"({"phase":"Running"})", "",
       "run \"train\" is not suspended (spec.suspend is not true)"},
      {"resume an ended run", Control::kResume, R"(,"suspend":true)", R"({"phase":"Succeeded"})", "",
       "run \"train\" has already ended (Succeeded); there is nothing to resume"},
  };
  for (const auto& tc : cases) {
    auto run = Parse(RunJson(tc.spec_extra, tc.status, "10", 1, tc.meta_extra));
    k8s::Status s = CheckControl(tc.c, run);
    if (tc.error.empty()) {
      EXPECT_TRUE(s.ok()) << tc.name << ": " << s.message();
    } else {
      EXPECT_FALSE(s.ok()) << tc.name;
      EXPECT_THAT(s.message(), HasSubstr(tc.error)) << tc.name;
    }
  }
}

TEST(RunControlTest, PatchesAreGuardedByTheResourceVersion) {
  EXPECT_EQ(ControlPatch(Control::kStop, "7"), R"({"metadata":{"resourceVersion":"7"},"spec":{"stop":true}})");
  EXPECT_EQ(ControlPatch(Control::kSuspend, "7"), R"({"metadata":{"resourceVersion":"7"},"spec":{"suspend":true}})");
  EXPECT_EQ(ControlPatch(Control::kResume, "7"), R"({"metadata":{"resourceVersion":"7"},"spec":{"suspend":false}})");
}

TEST(RunControlTest, DoneWhenTheStatusShowsIt) {
  auto done = [](Control c, const std::string& status, int generation) {
    return ControlDone(c, Parse(RunJson("", status, "10", 2)), generation);
  };
  EXPECT_TRUE(done(Control::kStop, R"({"phase":"Failed","reason":"Stopped","observedGeneration":2})", 2));
  EXPECT_TRUE(done(Control::kStop, R"({"phase":"Succeeded","observedGeneration":1})", 2));  // ended anyway
  EXPECT_FALSE(done(Control::kStop, R"({"phase":"Running","observedGeneration":1})", 2));
  EXPECT_TRUE(done(Control::kSuspend, R"({"phase":"Pending","reason":"Suspended","observedGeneration":2})", 2));
  EXPECT_FALSE(done(Control::kSuspend, R"({"phase":"Running","observedGeneration":2})", 2));
  EXPECT_FALSE(done(Control::kSuspend, R"({"phase":"Pending","reason":"Suspended","observedGeneration":1})", 2));
  EXPECT_TRUE(done(Control::kResume, R"({"phase":"Pending","reason":"Resumed","observedGeneration":3})", 3));
  EXPECT_FALSE(done(Control::kResume, R"({"phase":"Pending","reason":"Suspended","observedGeneration":3})", 3));
  EXPECT_FALSE(done(Control::kResume, R"({"phase":"Pending","reason":"NoCapacity","observedGeneration":2})", 3));
}

TEST(RunControlTest, StatusLine) {
  EXPECT_EQ(StatusLine(Parse(RunJson("", R"j({"phase":"Failed","reason":"Stopped","message":"stopped (spec.stop)"})j"))),
            "Failed (Stopped): stopped (spec.stop)");
  EXPECT_EQ(StatusLine(Parse(RunJson("", R"({"phase":"Pending","reason":"NoCapacity","queuePosition":2,"message":"m"})"))),
            "Pending (NoCapacity), position 2 in the queue: m");
  EXPECT_EQ(StatusLine(Parse(RunJson("", "{}"))), "no status yet");
}

class ApplyControlTest : public ::testing::Test {
 protected:
  ApplyControlTest() : transport_(std::make_shared<FakeTransport>()), client_(k8s::ClientConfig{}, transport_) {
    client_.SetMaxRetries(0);
  }
  std::shared_ptr<FakeTransport> transport_;
  k8s::Client client_;
};

TEST_F(ApplyControlTest, ReadsChecksAndPatchesRetryingOnConflict) {
  transport_->Push(200, RunJson("", R"({"phase":"Running"})", "10", 1));
  transport_->Push(409, StatusBody(409, "Conflict", "the object has been modified"));
  transport_->Push(200, RunJson("", R"({"phase":"Running"})", "11", 2));
  transport_->Push(200, RunJson(R"(,"stop":true)", R"({"phase":"Running"})", "12", 3));
  auto c = ApplyControl(client_, "ml", "train", Control::kStop);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->generation, 3);
  EXPECT_EQ(c->phase, "Running");
  EXPECT_EQ(c->conflicts, 1);
  ASSERT_EQ(transport_->requests.size(), 4u);
  EXPECT_EQ(transport_->requests[1].method, "PATCH");
  EXPECT_EQ(transport_->requests[1].body, R"({"metadata":{"resourceVersion":"10"},"spec":{"stop":true}})");
  EXPECT_EQ(transport_->requests[3].body, R"({"metadata":{"resourceVersion":"11"},"spec":{"stop":true}})");
  EXPECT_EQ(transport_->requests[3].path, "/apis/berth.dev/v1alpha1/namespaces/ml/runs/train");
}

TEST_F(ApplyControlTest, RefusedRunsAreNotPatched) {
  transport_->Push(200, RunJson("", R"({"phase":"Succeeded"})"));
  auto c = ApplyControl(client_, "ml", "train", Control::kSuspend);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("has already ended (Succeeded)"));
  EXPECT_EQ(transport_->requests.size(), 1u);
}

TEST_F(ApplyControlTest, UnknownRunAndForbiddenPatch) {
  transport_->Push(404, StatusBody(404, "NotFound", "runs.berth.dev \"nope\" not found"));
  auto c = ApplyControl(client_, "ml", "nope", Control::kStop);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "run \"nope\" not found in namespace \"ml\"");

  transport_->Push(200, RunJson("", R"({"phase":"Running"})"));
  transport_->Push(403, StatusBody(403, "Forbidden", "runs.berth.dev \"train\" is forbidden: User \"bob\" cannot patch"));
  auto f = ApplyControl(client_, "ml", "train", Control::kSuspend);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr("cannot patch"));
}

}  // namespace
}  // namespace berth::cli
