// An admission taken into a pass' list whose write the KeyedWriter refuses when it is carried out
// (a decision that replaced a refresh a worker took meanwhile): its `refused` undoes it as a
// refused Dispatch did, so the blocks are not held by a write that never went out.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/state/admissions.h"
#include "unit/reconcilers/api_fixture.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;

class PassWritesRefusedTest : public ApiFixture {
 protected:
  PassWritesRefusedTest()
      : admissions_(client_, clock_, events_, [this](reconcilers::PassWrite w) {
          taken_.push_back(std::move(w));  // a pass' list: nothing carried out
          return true;
        }) {}
  static sched::Placement OnNode(const std::string& node) {
    sched::Placement p;
    p.run_id = "ns/a";
    p.fleet = "gpu";
    p.ranks.push_back(sched::RankPlacement{0, node, 1, {}});
    return p;
  }
  std::vector<PassWrite> taken_;
  Admissions admissions_;
};

TEST_F(PassWritesRefusedTest, AnAdmissionRefusedWhenCarriedOutFreesItsBlocksInTheNextPass) {
  auto run = CreateRun("a");
  ASSERT_TRUE(run);
  WorkingSet working;
  working.BeginPass();
  RunMemo& memo = working.MemoOf("ns/a");
  ASSERT_TRUE(admissions_.Admit(*run, OnNode("n0"), 0, memo, clock_.Now()));
  ASSERT_EQ(taken_.size(), 1u);
  EXPECT_EQ(taken_[0].kind, WriteKind::kAdmission);
  EXPECT_EQ(taken_[0].target, "ns/a");
  ASSERT_TRUE(taken_[0].body);
  EXPECT_NE(taken_[0].body().find("\"Scheduled\""), std::string::npos) << taken_[0].body();
  ASSERT_TRUE((memo.assumed() != nullptr)) << "held while the write is on its way";
  ASSERT_TRUE(taken_[0].refused);
  taken_[0].refused();  // the KeyedWriter refused it
  const Admissions::News news = admissions_.TakeNews();
  EXPECT_EQ(news.Count("ns/a", WriteAnswer::kRefused), 1u);
  Admissions::ApplyNews(news, working);
  EXPECT_TRUE(memo.assumed() == nullptr) << "not applied: its blocks are free again";
}

TEST_F(PassWritesRefusedTest, AVerificationRefusedWhenCarriedOutIsMarkedAgain) {
  auto run = CreateRun("a");
  ASSERT_TRUE(run);
  WorkingSet working;
  working.BeginPass();
  RunMemo& memo = working.MemoOf("ns/a");
  ASSERT_TRUE(admissions_.Admit(*run, OnNode("n0"), 0, memo, clock_.Now()));
  // Its answer lost: Unknown, marked for a verifying read.
  memo.admission.Finish(memo.admission.ticket, WriteAnswer::kUnknown, 5);
  ASSERT_TRUE(memo.admission.Expire(clock_.Now()));
  ASSERT_TRUE(admissions_.Verify(*run, memo.admission.ticket, memo.unconfirmed_rv()));
  ASSERT_EQ(taken_.size(), 2u);
  EXPECT_EQ(taken_[1].kind, WriteKind::kVerify);
  ASSERT_TRUE(taken_[1].refused);
  taken_[1].refused();
  Admissions::ApplyNews(admissions_.TakeNews(), working);
  EXPECT_TRUE((memo.assumed() != nullptr)) << "still Unknown: may have been applied";
  EXPECT_TRUE(memo.admission.Expire(clock_.Now())) << "marked again for the next verifying read";
}

}  // namespace
}  // namespace berth::reconcilers
