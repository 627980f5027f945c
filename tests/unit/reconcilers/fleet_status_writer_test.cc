#include "reconcilers/writers/fleet_status_writer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/api_fixture.h"

namespace berth::reconcilers {
namespace {

namespace json = k8s::json;
using k8s::resources::kFleets;
using testing::FakeApi;

class FleetStatusWriterTest : public ApiFixture {
 protected:
  FleetStatusWriterTest()
      : // A writer thread's work, done at once.
        writer_(client_, [this](reconcilers::PassWrite w) {
          keys_.push_back(w.key);
          last_ok_ = w.write();
          return take_;
        }) {
    auto r = client_->Create(kFleets.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"gpu"},)"
                                             R"("spec":{"nodeSelector":{"pool":"gpu"},"blocks":1}})");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }

  // The view of the Fleet as the API has it now, with one Node.
  ClusterView View() {
    auto got = client_->Get(kFleets.Path("", "gpu"));
    EXPECT_TRUE(got.ok());
    auto node = std::make_shared<k8s::Node>();
    node->meta.name = "n0";
    node->meta.uid = "n0-uid";
    node->meta.labels["pool"] = "gpu";
    node->cpu_milli = 8000;
    node->memory_bytes = 1LL << 35;
    node->ready = true;
    return BuildSharedClusterView({DecodeFleet(*got)}, {node}, {}, clock_.Now());
  }
  std::string StatusOfFleet() {
    auto got = client_->Get(kFleets.Path("", "gpu"));
    const json::Value* status = got.ok() ? json::Find(*got, {"status"}) : nullptr;
    return status != nullptr ? json::Serialize(*status) : "";
  }

  std::vector<std::string> keys_;
  bool take_ = true;
  bool last_ok_ = false;
  FleetStatusWriter writer_;
};

TEST_F(FleetStatusWriterTest, WritesEachFleetOnceUntilItsStatusChanges) {
  ClusterView view = View();
  const auto& described = writer_.Update(view, 1, clock_.Now());
  ASSERT_EQ(described.size(), 1u);
  EXPECT_EQ(described[0].name, "n0");
  ASSERT_EQ(keys_, (std::vector<std::string>{"fleet:gpu"}));
  EXPECT_TRUE(last_ok_);
  EXPECT_NE(StatusOfFleet().find("n0"), std::string::npos) << StatusOfFleet();
  // The same view, a new generation of it and the same time: nothing new to write.
  writer_.Update(view, 1, clock_.Now());
  writer_.Update(View(), 2, clock_.Now());
  EXPECT_EQ(keys_.size(), 1u);
}

TEST_F(FleetStatusWriterTest, AFailedWriteIsMadeAgainByTheNextPass) {
  api_->FailNext(FakeApi::Match{"PATCH", "", {}}, 1, 503);
  ClusterView view = View();
  writer_.Update(view, 1, clock_.Now());
  ASSERT_EQ(keys_.size(), 1u);
  EXPECT_FALSE(last_ok_);
  writer_.Update(view, 1, clock_.Now());
  EXPECT_EQ(keys_.size(), 1u) << "written again only once the failure is taken in";
  writer_.TakeFailures();
  writer_.Update(view, 1, clock_.Now());
  ASSERT_EQ(keys_.size(), 2u);
  EXPECT_TRUE(last_ok_);
}

TEST_F(FleetStatusWriterTest, AWriteTheWriterDidNotTakeIsQueuedAgain) {
  take_ = false;
  ClusterView view = View();
  writer_.Update(view, 1, clock_.Now());
  take_ = true;
  writer_.Update(view, 1, clock_.Now());
  EXPECT_EQ(keys_.size(), 2u);
  writer_.Update(view, 1, clock_.Now());
  EXPECT_EQ(keys_.size(), 2u);
}

}  // namespace
}  // namespace berth::reconcilers
