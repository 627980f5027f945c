// The quota and team share as the place stage asks them (scheduling/room_filter.h), on their own:
// a hand-made namespace quota and team book, no cycle.

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "fixtures.h"
#include "scheduling/room_filter.h"

namespace berth::scheduling::internal {
namespace {

namespace t = berth::scheduling::testing;

// Fleets "a100" (nvidia.com/gpu) and "mi" (amd.com/gpu), one 4-GPU instance each; team vision
// (namespace vision) has a nominal share of 4 GPUs on a100 and may borrow none.
ClusterSnapshot TwoGpuKinds() {
  ClusterSnapshot s;
  s.fleets = {t::Fleet("a100", BlocksSetting::Count(4)), t::Fleet("mi", BlocksSetting::Count(4))};
  s.fleets[1].gpu_resource = "amd.com/gpu";
  s.instances = {t::Instance("n0", "a100", t::Cpus(16, 64, 4)), t::Instance("m0", "mi", t::Cpus(16, 64, 4))};
  s.teams.resize(1);
  TeamSpec& vision = s.teams[0];
  vision.name = "vision";
  vision.namespaces = {"vision"};
  vision.shares.resize(1);
  vision.shares[0].fleet = "a100";
  vision.shares[0].nominal.gpus = 4;
  vision.shares[0].borrowing_limit.gpus = 0;
  return s;
}

// 6 of 8 nvidia GPUs used in the namespace.
NamespaceQuota NvidiaQuota() {
  return NamespaceQuota{"vision", {{"requests.nvidia.com/gpu", QuotaLimit{6, 8, "gpus"}}}};
}

QuotaUse Gpus(int64_t gpus, int64_t pods = 1) { return QuotaUse{Resources{0, 0, gpus}, pods}; }

TEST(RoomFilter, TheQuotaOfTheFleetsGpuResourceRefusesWhatDoesNotFit) {
  const ClusterSnapshot s = TwoGpuKinds();
  const ClusterState state(s, 0);
  const TeamBook teams(s);
  const NamespaceQuota quota = NvidiaQuota();
  const QuotaAndShare room(state, &quota, teams, -1, true);
  EXPECT_TRUE(room.limits());
  const RoomVerdict refused = room.Check(state.FindFleet("a100"), Gpus(4));
  ASSERT_TRUE(refused.quota.has_value());
  EXPECT_FALSE(refused.allowed());
  EXPECT_EQ(refused.quota->resource, "requests.nvidia.com/gpu");
  EXPECT_EQ(refused.quota->needed, 4);
  EXPECT_EQ(refused.quota->hard, 8);
  EXPECT_TRUE(room.Check(state.FindFleet("a100"), Gpus(2)).allowed());
  EXPECT_TRUE(room.Check(state.FindFleet("mi"), Gpus(4)).allowed()) << "amd GPUs: not in this quota";
  const QuotaAndShare none(state, nullptr, teams, -1, true);
  EXPECT_FALSE(none.limits());
  EXPECT_TRUE(none.Check(state.FindFleet("a100"), Gpus(400)).allowed());
}

TEST(RoomFilter, TheTeamsShareRefusesBeyondItsLimitsAndTheQuotaIsAskedFirst) {
  const ClusterSnapshot s = TwoGpuKinds();
  const ClusterState state(s, 0);
  const TeamBook teams(s);
  const int32_t vision = teams.TeamOf("vision/r");
  ASSERT_GE(vision, 0);
  const QuotaAndShare share(state, nullptr, teams, vision, true);
  EXPECT_TRUE(share.limits());
  EXPECT_TRUE(share.Check(state.FindFleet("a100"), Gpus(4)).allowed());
  const RoomVerdict beyond = share.Check(state.FindFleet("a100"), Gpus(5));
  ASSERT_TRUE(beyond.share.has_value());
  EXPECT_FALSE(beyond.quota.has_value());
  EXPECT_EQ(beyond.share->verdict, ShareCheck::kBorrowingLimit);
  EXPECT_EQ(beyond.share->needed, 5);

  const NamespaceQuota quota = NvidiaQuota();
  const QuotaAndShare both(state, &quota, teams, vision, true);
  const RoomVerdict refused = both.Check(state.FindFleet("a100"), Gpus(5));
  EXPECT_TRUE(refused.quota.has_value());
  EXPECT_FALSE(refused.share.has_value()) << "the quota refused first";
}

TEST(RoomFilter, ARequestNeedsRoomInTheQuotaOfSomeCandidateFleet) {
  const ClusterSnapshot s = TwoGpuKinds();
  const ClusterState state(s, 0);
  const NamespaceQuota quota = NvidiaQuota();
  PendingRun run = t::Pending("vision/r", 50, t::kT0, 2, Resources{0, 0, 3});  // 2 nodes x 3 GPUs
  const std::optional<QuotaShortfall> on_a100 = RequestShortfall(run, &quota, state, {state.FindFleet("a100")});
  ASSERT_TRUE(on_a100.has_value());
  EXPECT_EQ(on_a100->needed, 6);
  EXPECT_FALSE(RequestShortfall(run, &quota, state, {state.FindFleet("a100"), state.FindFleet("mi")}).has_value());
  EXPECT_FALSE(RequestShortfall(run, nullptr, state, {state.FindFleet("a100")}).has_value());
  run.nodes = 1;  // one node of 2 GPUs fits the 2 left
  run.resources.gpus = 2;
  EXPECT_FALSE(RequestShortfall(run, &quota, state, {state.FindFleet("a100")}).has_value());
}

}  // namespace
}  // namespace berth::scheduling::internal
