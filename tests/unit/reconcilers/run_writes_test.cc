#include "reconcilers/writers/run_writes.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/api_fixture.h"
#include "k8s/informer.h"

namespace berth::reconcilers {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using testing::FakeApi;

class RunWritesTest : public ApiFixture {
 protected:
  RunWritesTest()
      : admissions_(client_, clock_, events_, [](reconcilers::PassWrite w) { return w.write(); }),
        writes_(
            client_, clock_, events_, admissions_, options_,
            [this](reconcilers::PassWrite w) {
              keys_.push_back(w.key + (w.background ? " (background)" : ""));
              last_ok_ = w.write();  // a writer thread's work, done at once
              return true;
            },
            [this](const reconcilers::Run&) { return pods_; }) {
    options_.retry_backoff = std::chrono::seconds(10);
    options_.max_retry_backoff = std::chrono::seconds(30);
    CreateRun("a", R"("retry":{"onInterruption":true},)");
  }
  std::shared_ptr<const reconcilers::Run> Fetch() { return GetRun("a"); }
  // A Pod of the run's attempt `attempt` in the API and in the "cache" the writes read.
  void PodOf(const std::string& name, int attempt) {
    auto r = client_->Create(kPods.Path("ns"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
                                                   R"(","labels":{"berth.dev/run":"a","berth.dev/attempt":")" +
                                                   std::to_string(attempt) + R"("}},"spec":{"containers":[]}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    pods_.push_back(k8s::DecodePod(*r));
  }
  bool PodExists(const std::string& name) { return client_->Get(kPods.Path("ns", name)).ok(); }

  EngineOptions options_;
  Admissions admissions_;
  std::vector<std::shared_ptr<const k8s::Pod>> pods_;
  std::vector<std::string> keys_;
  bool last_ok_ = false;
  RunWrites writes_;
};

// Rank 0 of a one-node run: one block on node n0.
RankAssignment RankZero() {
  RankAssignment rank;
  rank.rank = 0;
  rank.node = "n0";
  rank.blocks = 1;
  return rank;
}

TEST_F(RunWritesTest, AnInterruptedRunThatRetriesGoesBackToTheQueueStatusFirstThenItsPodsGo) {
  PodOf("a-0-0", 0);
  auto run = Fetch();
  writes_.FailOrRetry(*run, /*interruption=*/true, "node lost", clock_.Now());
  ASSERT_EQ(keys_, (std::vector<std::string>{"ns/a"}));
  EXPECT_TRUE(last_ok_);
  auto now = Fetch();
  EXPECT_EQ(now->status.phase, Phase::kPending);
  EXPECT_EQ(now->status.reason.api(), "Interrupted");
  EXPECT_EQ(now->status.resubmissions, 1);
  EXPECT_EQ(now->status.retry_backoff_seconds, 10);
  EXPECT_FALSE(PodExists("a-0-0"));
  // What it wrote is awaited in the next pass.
  EXPECT_EQ(admissions_.TakeNews().written.at("ns/a"), RvNumber(now->meta.resource_version));
}

// Issue 45 (4): a preempted ticket of a Job goes back to the queue and its Job is suspended, but
// berth deletes none of the Job's Pods: the Job controller deletes the Pods of a suspended Job
// without counting them as failures (a Pod berth deleted would count toward backoffLimit).
TEST_F(RunWritesTest, APreemptedJobTicketSuspendsItsJobAndLeavesItsPodsToTheJobController) {
  auto job = client_->Create("/apis/batch/v1/namespaces/ns/jobs",
                             R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"train"},"spec":{"suspend":false}})");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const std::string uid = k8s::DecodeMeta(*job).uid;
  auto ticket = CreateRun("job-train", R"("workloadRef":{"apiVersion":"batch/v1","kind":"Job","name":"train","uid":")" + uid +
                                           R"("},"retry":{"onEvents":["no-capacity"]},)",
                          R"({"phase":"Running","placement":[{"rank":0,"node":"n0"}]})");
  ASSERT_NE(ticket, nullptr);
  ASSERT_TRUE(api::IsTicket(*ticket));
  auto pod = client_->Create(kPods.Path("ns"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-abc","labels":)"
                                               R"({"berth.dev/ticket":"job-train","berth.dev/rank":"0"}},"spec":{"nodeName":"n0","containers":[]}})");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  pods_ = {k8s::DecodePod(*pod)};
  writes_.FailOrRetry(*ticket, /*interruption=*/true, "preempted by x", clock_.Now(), Reason::kPreempted, /*stopped=*/false,
                      /*preempted=*/true);
  EXPECT_TRUE(last_ok_);
  EXPECT_EQ(GetRun("job-train")->status.phase, Phase::kPending);
  auto held = client_->Get("/apis/batch/v1/namespaces/ns/jobs/train");
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(json::GetBool(*json::Find(*held, {"spec"}), "suspend", false)) << "the Job was not suspended";
  auto left = client_->Get(kPods.Path("ns", "train-abc"));
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(json::Find(*left, {"metadata", "deletionTimestamp"}), nullptr) << "berth deleted a Pod of the Job itself";
}

TEST_F(RunWritesTest, RetryBackoffDoublesForShortAttemptsUpToTheMaximumAndPreemptionWaitsNone) {
  reconcilers::Run run = *Fetch();
  run.status.retry_backoff_seconds = 10;
  EXPECT_EQ(writes_.RetryStatus(run, Reason::kInterrupted, "why", clock_.Now(), false).retry_backoff_seconds, 20);
  run.status.retry_backoff_seconds = 20;
  EXPECT_EQ(writes_.RetryStatus(run, Reason::kInterrupted, "why", clock_.Now(), false).retry_backoff_seconds, 30);
  const RunStatus preempted = writes_.RetryStatus(run, Reason::kPreempted, "why", clock_.Now(), true);
  EXPECT_EQ(preempted.retry_backoff_seconds, 0);
  EXPECT_TRUE(preempted.retry_after.has_value()) << "its wait counts from its return to the queue";
}

TEST_F(RunWritesTest, TheSameStatusIsNotWrittenAndAConflictLeavesTheRunAloneWithoutBackoff) {
  auto run = Fetch();
  writes_.WriteStatus(*run, run->status);
  EXPECT_TRUE(keys_.empty());
  RunStatus next = run->status;
  next.message = "refreshed";
  api_->FailNext(FakeApi::Match{"PATCH", kRuns.Path("ns", "a", "status"), {}}, 1, 409);
  writes_.WriteStatus(*run, next, {}, /*background=*/true);
  ASSERT_EQ(keys_, (std::vector<std::string>{"ns/a (background)"}));
  EXPECT_TRUE(last_ok_) << "a conflict is no failure";
  EXPECT_EQ(admissions_.TakeNews().written.at("ns/a"), RvNumber(run->meta.resource_version) + 1);
}

TEST_F(RunWritesTest, APodTheApiServerRefusesFailsTheRunAsInvalidSpec) {
  auto run = Fetch();
  api_->FailNext(FakeApi::Match{"POST", kPods.Path("ns"), {}}, 1, 422);
  EXPECT_TRUE(writes_.CreatePods(*run, {RankZero()}, "nvidia.com/gpu", {}));
  auto now = Fetch();
  EXPECT_EQ(now->status.phase, Phase::kFailed);
  EXPECT_EQ(now->status.reason.api(), "InvalidSpec");
}

TEST_F(RunWritesTest, AStatusWriteOfARunDeletedMeanwhileBacksOffWithoutAwaitingIt) {
  auto run = Fetch();
  ASSERT_TRUE(client_->Delete(kRuns.Path("ns", "a")).ok());
  RunStatus next = run->status;
  next.message = "refreshed";
  writes_.WriteStatus(*run, next);
  ASSERT_EQ(keys_, (std::vector<std::string>{"ns/a"}));
  EXPECT_FALSE(last_ok_) << "gone: the key backs off until the informer drops the run";
  EXPECT_EQ(admissions_.TakeNews().written.count("ns/a"), 0u) << "nothing written to wait for";
}

TEST_F(RunWritesTest, AStatusWriteTheApiServerFailsBacksOffAndChangesNothing) {
  auto run = Fetch();
  RunStatus next = run->status;
  next.message = "refreshed";
  api_->FailNext(FakeApi::Match{"PATCH", kRuns.Path("ns", "a", "status"), {}}, 1, 503);
  writes_.WriteStatus(*run, next);
  EXPECT_FALSE(last_ok_);
  EXPECT_EQ(admissions_.TakeNews().written.count("ns/a"), 0u);
  EXPECT_EQ(Fetch()->status.message, run->status.message);
}

TEST_F(RunWritesTest, APodNameTakenBySomeoneElsesPodFailsTheRunAndLeavesThatPodAlone) {
  auto run = Fetch();
  ASSERT_TRUE(client_->Create(kPods.Path("ns"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a-0"},"spec":{"containers":[]}})").ok());
  EXPECT_TRUE(writes_.CreatePods(*run, {RankZero()}, "nvidia.com/gpu", {}));
  auto now = Fetch();
  EXPECT_EQ(now->status.phase, Phase::kFailed);
  EXPECT_EQ(now->status.reason.api(), "InvalidSpec");
  EXPECT_NE(now->status.message.find("a Pod named a-0 already exists"), std::string::npos) << now->status.message;
  EXPECT_TRUE(PodExists("a-0"));
}

TEST_F(RunWritesTest, APodCreateTheApiServerFailsIsTriedAgainWithBackoff) {
  auto run = Fetch();
  api_->FailNext(FakeApi::Match{"POST", kPods.Path("ns"), {}}, 1, 500);
  EXPECT_FALSE(writes_.CreatePods(*run, {RankZero()}, "nvidia.com/gpu", {}));
  EXPECT_EQ(Fetch()->status.phase, run->status.phase) << "no verdict on the run";
  EXPECT_TRUE(writes_.CreatePods(*run, {RankZero()}, "nvidia.com/gpu", {})) << "the next try makes it";
  EXPECT_TRUE(PodExists("a-0"));
}

}  // namespace
}  // namespace berth::reconcilers
