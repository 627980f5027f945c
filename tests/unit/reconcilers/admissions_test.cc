#include "reconcilers/state/admissions.h"

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
namespace sched = scheduling;
using k8s::resources::kRuns;
using testing::FakeApi;

// ---- StillHeld: what the cache shows decides an assumption (no API) ----

RunMemo Assumed(uint64_t unconfirmed_rv = 0, uint64_t awaiting_rv = 0) {
  RunMemo memo;
  PlacedRun pr;
  pr.key = "ns/a";
  pr.assumed = true;
  memo.admission.Assume(pr, /*ticket=*/1, /*base_rv=*/unconfirmed_rv);
  if (unconfirmed_rv != 0) memo.admission.Finish(1, WriteAnswer::kUnknown, unconfirmed_rv);
  if (awaiting_rv != 0) memo.status_write.Wrote(awaiting_rv);
  return memo;
}

Run Cached(const std::string& rv, const std::string& phase = "Pending", bool deleting = false) {
  Run run;
  run.meta.ns = "ns";
  run.meta.name = "a";
  run.meta.resource_version = rv;
  run.meta.deleting = deleting;
  run.status.phase = api::ParsePhase(phase);
  return run;
}

TEST(AdmissionsStillHeld, AnAssumptionHoldsWhileTheCacheShowsTheRunPendingAndNothingProvesItFailed) {
  RunMemo memo = Assumed();
  EXPECT_TRUE(Admissions::StillHeld(memo, Cached("10")));
  EXPECT_TRUE((memo.assumed() != nullptr));
  RunMemo none;
  EXPECT_FALSE(Admissions::StillHeld(none, Cached("10")));
}

TEST(AdmissionsStillHeld, ALaterPendingVersionProvesAnUnconfirmedWriteWasNotApplied) {
  RunMemo memo = Assumed(/*unconfirmed_rv=*/10);
  EXPECT_TRUE(Admissions::StillHeld(memo, Cached("10")));
  EXPECT_FALSE(Admissions::StillHeld(memo, Cached("11")));
  EXPECT_FALSE((memo.assumed() != nullptr));
  EXPECT_EQ(memo.unconfirmed_rv(), 0u);
}

TEST(AdmissionsStillHeld, ARunBeingDeletedKeepsItsBlocksOnlyWhileItsAdmissionMayHaveBeenApplied) {
  RunMemo settled = Assumed();
  EXPECT_FALSE(Admissions::StillHeld(settled, Cached("10", "Pending", /*deleting=*/true)));
  RunMemo unconfirmed = Assumed(/*unconfirmed_rv=*/10);
  EXPECT_TRUE(Admissions::StillHeld(unconfirmed, Cached("10", "Pending", true)));
  RunMemo behind = Assumed(0, /*awaiting_rv=*/12);
  EXPECT_TRUE(Admissions::StillHeld(behind, Cached("11", "Pending", true)));
}

TEST(AdmissionsStillHeld, ARunNoLongerPendingEndsTheAssumption) {
  RunMemo memo = Assumed();
  EXPECT_FALSE(Admissions::StillHeld(memo, Cached("12", "Failed")));
  EXPECT_FALSE((memo.assumed() != nullptr));
}

// ---- the writer side against an in-memory API ----

class AdmissionsTest : public ApiFixture {
 protected:
  AdmissionsTest()
      : admissions_(client_, clock_, events_, [this](reconcilers::PassWrite w) {
          keys_.push_back(w.key);
          last_ok_ = w.write();  // a writer thread's work, done at once
          return true;
        }) {
    CreateRun("a");
  }
  std::shared_ptr<const reconcilers::Run> Fetch() { return GetRun("a"); }
  // Admits `run` in a new pass of `working` with the API server applying its status write but its
  // answer lost (the write's outcome unknown); the memo it was admitted into.
  RunMemo& AdmitWithoutAnAnswer(const reconcilers::Run& run, WorkingSet& working) {
    api_->DropReplyAfterApply(FakeApi::Match{"PATCH", kRuns.Path("ns", "a", "status"), {}}, 1);
    working.BeginPass();
    RunMemo& memo = working.MemoOf("ns/a");
    admitted_ = admissions_.Admit(run, OnNode("n0"), 0, memo, clock_.Now());
    return memo;
  }
  bool admitted_ = false;
  static sched::Placement OnNode(const std::string& node) {
    sched::Placement p;
    p.run_id = "ns/a";
    p.fleet = "gpu";
    p.ranks.push_back(sched::RankPlacement{0, node, 1, {}});
    return p;
  }

  std::vector<std::string> keys_;
  bool last_ok_ = false;
  Admissions admissions_;
};

TEST_F(AdmissionsTest, AnAppliedAdmissionWritesTheFinalizerThenTheStatusAndIsAssumed) {
  auto run = Fetch();
  ASSERT_TRUE(run);
  RunMemo memo;
  ASSERT_TRUE(admissions_.Admit(*run, OnNode("n0"), 7, memo, clock_.Now()));
  EXPECT_EQ(keys_, (std::vector<std::string>{"ns/a"}));
  EXPECT_TRUE(last_ok_);
  ASSERT_TRUE((memo.assumed() != nullptr));
  EXPECT_EQ(memo.assumed()->placement.at(0).node, "n0");
  auto now = Fetch();
  EXPECT_EQ(now->status.phase, Phase::kScheduled);
  EXPECT_EQ(now->status.effective_priority, 7);
  EXPECT_TRUE(now->meta.HasFinalizer(kFinalizer));
  EXPECT_TRUE(admissions_.WrittenSinceTaken("ns/a"));
  const Admissions::News news = admissions_.TakeNews();
  EXPECT_EQ(news.written.at("ns/a"), RvNumber(now->meta.resource_version));
  EXPECT_EQ(news.Count("ns/a", WriteAnswer::kRefused), 0u);
  EXPECT_FALSE(admissions_.WrittenSinceTaken("ns/a"));
}

TEST_F(AdmissionsTest, ARefusedWriteRollsTheAssumptionBackInTheNextPass) {
  auto run = Fetch();
  api_->FailNext(FakeApi::Match{"PATCH", kRuns.Path("ns", "a", "status"), {}}, 1, 422);
  WorkingSet working;
  working.BeginPass();
  working.Touch("ns/a");
  RunMemo& memo = working.MemoOf("ns/a");
  ASSERT_TRUE(admissions_.Admit(*run, OnNode("n0"), 0, memo, clock_.Now()));
  ASSERT_TRUE((memo.assumed() != nullptr));
  const Admissions::News news = admissions_.TakeNews();
  EXPECT_EQ(news.Count("ns/a", WriteAnswer::kRefused), 1u);
  Admissions::ApplyNews(news, working);
  EXPECT_FALSE((memo.assumed() != nullptr));
  EXPECT_GT(memo.awaiting_rv(), RvNumber(run->meta.resource_version)) << "left alone until the cache moves on";
}

TEST_F(AdmissionsTest, AnAdmissionWithoutAnAnswerStaysAssumedUntilAGetSaysItWasApplied) {
  auto run = Fetch();
  WorkingSet working;
  RunMemo& memo = AdmitWithoutAnAnswer(*run, working);
  ASSERT_TRUE(admitted_);
  Admissions::News news = admissions_.TakeNews();
  ASSERT_EQ(news.Count("ns/a", WriteAnswer::kUnknown), 1u);
  Admissions::ApplyNews(news, working);
  ASSERT_NE(memo.unconfirmed_rv(), 0u);
  EXPECT_TRUE((memo.assumed() != nullptr));
  admissions_.Verify(*run, memo.admission.ticket, memo.unconfirmed_rv());
  news = admissions_.TakeNews();
  EXPECT_EQ(news.Count("ns/a", WriteAnswer::kWritten), 1u);
  Admissions::ApplyNews(news, working);
  EXPECT_EQ(memo.unconfirmed_rv(), 0u);
  EXPECT_TRUE((memo.assumed() != nullptr)) << "kept until the cache shows the run admitted";
}

TEST_F(AdmissionsTest, AVerifyingReadWithoutAnAnswerLeavesTheAdmissionUnknownToBeMarkedAgain) {
  auto run = Fetch();
  WorkingSet working;
  RunMemo& memo = AdmitWithoutAnAnswer(*run, working);
  ASSERT_TRUE(admitted_);
  Admissions::ApplyNews(admissions_.TakeNews(), working);
  ASSERT_EQ(memo.admission.state, WriteState::kUnknown);
  ASSERT_TRUE(memo.admission.Expire(clock_.Now()));
  api_->FailNext(FakeApi::Match{"GET", kRuns.Path("ns", "a"), {}}, 1, 503);
  EXPECT_TRUE(admissions_.Verify(*run, memo.admission.ticket, memo.unconfirmed_rv()));
  EXPECT_FALSE(last_ok_) << "backs off";
  const Admissions::News news = admissions_.TakeNews();
  EXPECT_EQ(news.Count("ns/a", WriteAnswer::kUnknown), 1u);
  Admissions::ApplyNews(news, working);
  EXPECT_EQ(memo.admission.state, WriteState::kUnknown);
  EXPECT_TRUE(memo.assumed() != nullptr) << "its blocks stay held";
  EXPECT_TRUE(memo.admission.Expire(clock_.Now())) << "asked again by the next pass";
}

}  // namespace
}  // namespace berth::reconcilers
