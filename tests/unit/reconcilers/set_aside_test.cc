#include "reconcilers/set_aside.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/api_fixture.h"
#include "reconcilers/run_types.h"

namespace berth::reconcilers {
namespace {

using k8s::resources::kRuns;
using testing::FakeApi;

class SetAsideTest : public ApiFixture {
 protected:
  SetAsideTest()
      : reporter_(client_, events_, [this](const std::string& key, std::function<bool()> write) {
          keys_.push_back(key);
          last_ok_ = write();  // a writer thread's work, done at once
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

}  // namespace
}  // namespace berth::reconcilers
