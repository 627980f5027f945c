#include "reconcilers/state/cluster_view_keeper.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "fakes/fake_api.h"
#include "reconcilers/state/engine_caches.h"
#include "unit/reconcilers/api_fixture.h"

namespace berth::reconcilers {
namespace {

using k8s::resources::kFleets;
using k8s::resources::kNodes;
using testing::FakeApi;

class ClusterViewKeeperTest : public ApiFixture {
 protected:
  ClusterViewKeeperTest()
      : caches_(client_),
        keeper_(snapshot_, /*verify=*/true, [this](const ClusterView&) { ++made_; }) {
    const std::string res = R"({"cpu":"8","memory":"32Gi","pods":"110"})";
    EXPECT_TRUE(client_
                    ->Create(kNodes.Path(), R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n0","labels":{"pool":"gpu"}},)"
                                            R"("status":{"capacity":)" + res + R"(,"allocatable":)" + res +
                                                R"(,"conditions":[{"type":"Ready","status":"True"}]}})")
                    .ok());
    EXPECT_TRUE(client_
                    ->Create(kFleets.Path(), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Fleet","metadata":{"name":"gpu"},)"
                                             R"("spec":{"nodeSelector":{"pool":"gpu"},"blocks":1}})")
                    .ok());
    caches_.Start();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(caches_.HasSynced() && caches_.nodes().Size() == 1 && caches_.fleets().Size() == 1) &&
           std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ~ClusterViewKeeperTest() override { caches_.Stop(); }

  ClusterView& Pass(std::optional<k8s::TimePoint>& pause_ends) {
    caches_.UpdateSnapshot(snapshot_);  // a pass' start
    return keeper_.Update(keeper_.CurrentInputs(), keyed_, {}, clock_.Now(), pause_ends);
  }

  EngineCaches caches_;
  PassSnapshot snapshot_;
  ClusterViewKeeper keeper_;
  Keyed keyed_;
  int made_ = 0;
};

TEST_F(ClusterViewKeeperTest, TheViewIsKeptWhileWhatItIsMadeOfIsUnchanged) {
  std::optional<k8s::TimePoint> pause_ends;
  ClusterView& view = Pass(pause_ends);
  ASSERT_EQ(view.snapshot.instances.size(), 1u);
  const uint64_t gen = keeper_.gen();
  EXPECT_EQ(made_, 1);
  Pass(pause_ends);  // kept (and checked against one made anew: verify)
  EXPECT_EQ(keeper_.gen(), gen);
  EXPECT_EQ(made_, 2) << "the verifying copy";
  keeper_.SetNominations(view, {scheduling::Nomination{"ns/a", "gpu", {"n0"}, {}, false}});
  EXPECT_EQ(keeper_.gen(), gen + 1);
  keeper_.SetNominations(view, {scheduling::Nomination{"ns/a", "gpu", {"n0"}, {}, false}});
  EXPECT_EQ(keeper_.gen(), gen + 1) << "the same nominations";
}

TEST_F(ClusterViewKeeperTest, AnInstanceWhoseKubeletRefusedAPodPausesUntilItsSituationChangesOrTheMaximum) {
  std::optional<k8s::TimePoint> pause_ends;
  Pass(pause_ends);
  keeper_.NoteRefusal("n0", "the kubelet refused the Pod: OutOfcpu", clock_.Now());
  ClusterView& paused = Pass(pause_ends);
  ASSERT_EQ(paused.snapshot.instances.size(), 1u);
  EXPECT_FALSE(paused.snapshot.instances[0].ready);
  EXPECT_NE(paused.instances.at("n0").node_problem.find("OutOfcpu"), std::string::npos);
  EXPECT_EQ(pause_ends, clock_.Now() + ClusterViewKeeper::kRefusalMaxPause);
  clock_.Advance(ClusterViewKeeper::kRefusalMaxPause);
  pause_ends.reset();
  ClusterView& back = Pass(pause_ends);
  EXPECT_TRUE(back.snapshot.instances[0].ready);
  EXPECT_EQ(pause_ends, std::nullopt);
}

TEST_F(ClusterViewKeeperTest, TheSituationNamesWhatTheKubeletsAdmissionReadsAndNotHeartbeats) {
  auto node = caches_.nodes().Get("n0");
  ASSERT_TRUE(node);
  const std::string before = ClusterViewKeeper::Situation("n0", {node}, {});
  EXPECT_EQ(before, ClusterViewKeeper::Situation("n0", {node}, {}));
  EXPECT_NE(before, ClusterViewKeeper::Situation("n0", {node}, {NodeHold{"n0", "kube-system/p", {}, std::nullopt}}));
  EXPECT_EQ(ClusterViewKeeper::Situation("gone", {node}, {}), "gone");
}

}  // namespace
}  // namespace berth::reconcilers
