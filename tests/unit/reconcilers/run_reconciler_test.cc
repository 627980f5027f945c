#include "reconcilers/objects/run_reconciler.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/writes_fixture.h"
#include "k8s/informer.h"
#include "k8s/timefmt.h"

namespace berth::reconcilers {
namespace {

using k8s::resources::kRuns;
using testing::FakeApi;

class RunReconcilerTest : public WritesFixture {
 protected:
  RunReconcilerTest()
      : reconciler_(snapshot_, writes_, working_, events_, clock_, options_,
                    [this](const std::string& node, const std::string&, k8s::TimePoint) { refused_.push_back(node); }) {
  }

  std::shared_ptr<const reconcilers::Run> Submit(const std::string& name, const std::string& spec,
                                                 const std::string& status = "") {
    return CreateRun(name, spec, status);
  }
  std::shared_ptr<const reconcilers::Run> Fetch(const std::string& name) { return GetRun(name); }

  WorkingSet working_;
  RunReconciler reconciler_;
  ClusterView view_;
  std::vector<std::string> refused_;
};

TEST_F(RunReconcilerTest, APendingRunWithNothingToDoBelongsInTheQueue) {
  auto run = Submit("a", "", "{}");
  EXPECT_TRUE(reconciler_.Reconcile(*run, view_, clock_.Now(), /*busy=*/false));
  EXPECT_TRUE(keys_.empty());
  EXPECT_EQ(reconciler_.TakeDeadline(), std::nullopt);
}

TEST_F(RunReconcilerTest, AStoppedPendingRunFailsWithReasonStoppedAndLeavesTheQueue) {
  auto run = Submit("a", R"("stop":true,)");
  EXPECT_FALSE(reconciler_.Reconcile(*run, view_, clock_.Now(), false));
  ASSERT_EQ(keys_, (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(Fetch("a")->status.phase, Phase::kFailed);
  EXPECT_EQ(Fetch("a")->status.reason.api(), "Stopped");
}

TEST_F(RunReconcilerTest, ARunBackingOffWaitsOutOfTheQueueAndNotesWhenItsBackoffEnds) {
  const k8s::TimePoint after = clock_.Now() + std::chrono::seconds(30);
  auto run = Submit("a", "", R"({"phase":"Pending","reason":"Interrupted","resubmissions":1,"retryAfter":")" +
                                 k8s::FormatRfc3339(after) + R"("})");
  ASSERT_EQ(FormatTime(run->status.retry_after), k8s::FormatRfc3339(after));
  EXPECT_FALSE(reconciler_.Reconcile(*run, view_, clock_.Now(), false));
  EXPECT_TRUE(keys_.empty());
  EXPECT_EQ(reconciler_.TakeDeadline(), after);
  EXPECT_EQ(reconciler_.TakeDeadline(), std::nullopt) << "taken";
}

TEST_F(RunReconcilerTest, ABusyRunIsNotDecidedAgain) {
  auto run = Submit("a", R"("stop":true,)");
  EXPECT_FALSE(reconciler_.Reconcile(*run, view_, clock_.Now(), /*busy=*/true));
  EXPECT_TRUE(keys_.empty()) << "its write in flight decides first";
}

}  // namespace
}  // namespace berth::reconcilers
