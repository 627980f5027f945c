// What a write came to (reconcilers/writers/write_outcome.h), from the API's answers the fake API gives.

#include "reconcilers/writers/write_outcome.h"

#include <gtest/gtest.h>

#include "reconcilers/writers/status_patch.h"
#include "unit/reconcilers/api_fixture.h"

namespace berth::reconcilers {
namespace {

using k8s::resources::kPods;
using k8s::resources::kRuns;
using testing::FakeApi;

TEST(WriteOutcome, EachAnswerOfTheApiServerHasItsOutcome) {
  EXPECT_EQ(OutcomeOf(k8s::Status()), WriteOutcome::kWritten);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("changed", 409, "Conflict")), WriteOutcome::kConflict);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("taken", 409, "AlreadyExists")), WriteOutcome::kExists);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("no such run", 404, "NotFound")), WriteOutcome::kGone);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("bad body", 422, "Invalid")), WriteOutcome::kRefused);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("bad request", 400, "BadRequest")), WriteOutcome::kRefused);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("no answer")), WriteOutcome::kFailed);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("down", 503, "ServiceUnavailable")), WriteOutcome::kFailed);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("slow down", 429, "TooManyRequests")), WriteOutcome::kFailed);
  EXPECT_EQ(OutcomeOf(k8s::Status::Error("not yours", 403, "Forbidden")), WriteOutcome::kFailed);
  EXPECT_EQ(OutcomeName(WriteOutcome::kGone), "gone");
}

class StatusPatchTest : public ApiFixture {
 protected:
  std::string Path(const std::string& name) { return kRuns.Path("ns", name, "status"); }
  static std::string Patch(const std::string& rv = "") {
    return R"({"metadata":{"resourceVersion":")" + rv + R"("},"status":{"message":"hi"}})";
  }
};

TEST_F(StatusPatchTest, AWriteTheApiServerTakesIsWrittenAndShows) {
  CreateRun("a");
  const WriteResult w = PatchStatus(*client_, Path("a"), Patch());
  EXPECT_EQ(w.outcome, WriteOutcome::kWritten);
  EXPECT_TRUE(w.status.ok());
  EXPECT_EQ(GetRun("a")->status.message, "hi");
}

TEST_F(StatusPatchTest, AnObjectChangedSinceItWasReadIsAConflictAndKeepsItsStatus) {
  auto run = CreateRun("a");
  ASSERT_TRUE(client_->MergePatch(Path("a"), R"({"status":{"message":"newer"}})").ok());
  const WriteResult w = PatchStatus(*client_, Path("a"), Patch(run->meta.resource_version));
  EXPECT_EQ(w.outcome, WriteOutcome::kConflict);
  EXPECT_EQ(w.status.code(), 409);
  EXPECT_EQ(GetRun("a")->status.message, "newer");
}

TEST_F(StatusPatchTest, AnObjectDeletedMeanwhileIsGone) {
  const WriteResult w = PatchStatus(*client_, Path("never-made"), Patch());
  EXPECT_EQ(w.outcome, WriteOutcome::kGone);
  EXPECT_EQ(w.status.code(), 404);
}

TEST_F(StatusPatchTest, ABodyTheApiServerRefusesIsRefusedAndAnyOtherFailureFailed) {
  CreateRun("a");
  api_->FailNext(FakeApi::Match{"PATCH", Path("a"), {}}, 1, 422);
  EXPECT_EQ(PatchStatus(*client_, Path("a"), Patch()).outcome, WriteOutcome::kRefused);
  api_->FailNext(FakeApi::Match{"PATCH", Path("a"), {}}, 1, 500);
  EXPECT_EQ(PatchStatus(*client_, Path("a"), Patch()).outcome, WriteOutcome::kFailed);
  api_->FailNext(FakeApi::Match{"PATCH", Path("a"), {}}, 1, 0);  // no answer at all
  const WriteResult none = PatchStatus(*client_, Path("a"), Patch());
  EXPECT_EQ(none.outcome, WriteOutcome::kFailed);
  EXPECT_FALSE(none.status.ok());
  EXPECT_TRUE(GetRun("a")->status.message.empty()) << "none of them was applied";
}

TEST_F(StatusPatchTest, ACreateOfATakenNameFindsItExisting) {
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[]}})";
  EXPECT_EQ(ResultOf(client_->Create(kPods.Path("ns"), pod).status()).outcome, WriteOutcome::kWritten);
  EXPECT_EQ(ResultOf(client_->Create(kPods.Path("ns"), pod).status()).outcome, WriteOutcome::kExists);
}

}  // namespace
}  // namespace berth::reconcilers
