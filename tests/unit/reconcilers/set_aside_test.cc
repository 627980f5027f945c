#include "reconcilers/objects/set_aside.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/api_fixture.h"
#include "reconcilers/objects/run_types.h"

namespace berth::reconcilers {
namespace {

using k8s::resources::kRuns;
using testing::FakeApi;

class SetAsideTest : public ApiFixture {
 protected:
  SetAsideTest()
      : reporter_(
            client_, events_,
            [this](reconcilers::PassWrite w) {
              keys_.push_back(w.key);
              last_ok_ = w.write();  // a writer thread's work, done at once
              return true;
            },
            [this](const reconcilers::Run& run) {
              seen_status_ = run.status;
              return pods_;
            },
            [this](const std::string& ns, const std::vector<PodRef>& pods) {
              // What the API shows when the Pods are deleted: the status is written first.
              phase_at_delete_ = std::string(PhaseName(GetRun("deep")->status.phase));
              deleted_.push_back(ns + ":" + std::to_string(pods.size()));
              return true;
            }) {
    CreateRun("deep");
    k8s::SetAsideObject o;
    o.ns = "ns";
    o.name = "deep";
    o.uid = "u1";
    o.generation = 1;
    o.why = "nested deeper than 64 levels";
    aside_["ns/deep"] = o;
  }
  std::string Reason() {
    auto run = GetRun("deep");
    return run ? run->status.reason.str() : "";
  }

  std::vector<std::string> keys_;
  bool last_ok_ = false;
  std::vector<PodRef> pods_;  // the set-aside run's Pods that still run
  RunStatus seen_status_;
  std::string phase_at_delete_;
  std::vector<std::string> deleted_;
  SetAsideReporter reporter_;
  std::map<std::string, k8s::SetAsideObject> aside_;
};

TEST_F(SetAsideTest, EachSetAsideRunIsReportedOncePerGeneration) {
  reporter_.Report(aside_, clock_.Now());
  EXPECT_EQ(reporter_.unreadable(), 1);
  ASSERT_EQ(keys_, (std::vector<std::string>{"ns/deep"}));
  EXPECT_TRUE(last_ok_);
  EXPECT_EQ(Reason(), "InvalidSpec");
  reporter_.Report(aside_, clock_.Now());
  EXPECT_EQ(keys_.size(), 1u);
  aside_["ns/deep"].generation = 2;  // changed, still unreadable
  reporter_.Report(aside_, clock_.Now());
  EXPECT_EQ(keys_.size(), 2u);
  reporter_.Report({}, clock_.Now());
  EXPECT_EQ(reporter_.unreadable(), 0);
}

TEST_F(SetAsideTest, AFailedReportIsMadeAgainByTheNextPass) {
  api_->FailNext(FakeApi::Match{"PATCH", "", {}}, 1, 503);
  reporter_.Report(aside_, clock_.Now());
  ASSERT_EQ(keys_.size(), 1u);
  EXPECT_FALSE(last_ok_);
  reporter_.Report(aside_, clock_.Now());
  ASSERT_EQ(keys_.size(), 2u);
  EXPECT_TRUE(last_ok_);
  EXPECT_EQ(Reason(), "InvalidSpec");
}

// Issue 44, item 2: a run made unreadable while placed is ended: Failed, InvalidSpec, written
// before its Pods are deleted; once, while its resourceVersion stays; then it is left ended.
TEST_F(SetAsideTest, APlacedRunMadeUnreadableIsEndedStatusBeforePods) {
  aside_["ns/deep"].status_json = R"({"phase":"Running","reason":"Running","fleet":"gpu","startedAt":"2026-01-01T00:00:00Z"})";
  aside_["ns/deep"].resource_version = GetRun("deep")->meta.resource_version;
  pods_ = {PodRef{"deep-0", "p1", true, "node-0", 30}};
  reporter_.Report(aside_, clock_.Now());
  ASSERT_EQ(keys_.size(), 1u);
  EXPECT_TRUE(last_ok_);
  EXPECT_EQ(seen_status_.phase, Phase::kRunning) << "the status is read without the spec";
  auto run = GetRun("deep");
  EXPECT_EQ(run->status.phase, Phase::kFailed);
  EXPECT_EQ(Reason(), "InvalidSpec");
  EXPECT_EQ(run->status.fleet, "gpu") << "the rest of the status is kept";
  EXPECT_NE(run->status.message.find("berth cannot read this Run any more: nested deeper than 64 levels"), std::string::npos)
      << run->status.message;
  EXPECT_EQ(phase_at_delete_, "Failed");
  EXPECT_EQ(deleted_, (std::vector<std::string>{"ns:1"}));
  reporter_.Report(aside_, clock_.Now());
  EXPECT_EQ(keys_.size(), 1u) << "ended once for a resourceVersion";
  // As the watch shows it next: Failed, its Pods being deleted (PodsToStop leaves those out).
  aside_["ns/deep"].status_json = R"({"phase":"Failed","reason":"InvalidSpec"})";
  aside_["ns/deep"].resource_version = GetRun("deep")->meta.resource_version;
  pods_.clear();
  reporter_.Report(aside_, clock_.Now());
  EXPECT_EQ(keys_.size(), 1u) << "an ended run is left as it is";
}

TEST_F(SetAsideTest, APendingRunWithoutPodsIsOnlySetAside) {
  aside_["ns/deep"].status_json = R"({"phase":"Pending","reason":"NoCapacity"})";
  reporter_.Report(aside_, clock_.Now());
  EXPECT_EQ(Reason(), "InvalidSpec");
  EXPECT_NE(GetRun("deep")->status.phase, Phase::kFailed);
  EXPECT_TRUE(deleted_.empty());
}

}  // namespace
}  // namespace berth::reconcilers
