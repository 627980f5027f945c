// Namespace ResourceQuotas in the scheduling cycle (issue 17): a run whose Pods would exceed its
// namespace's quota waits with QuotaExceeded and the numbers, is skipped like a run that does not
// fit, and never holds the reservation.

#include <gtest/gtest.h>

#include "fixtures.h"
#include "scheduling/quota.h"

namespace berth::scheduling::testing {
namespace {

using Names = std::vector<std::string>;

NamespaceQuota Quota(std::string ns, std::map<std::string, QuotaLimit> limits) {
  return NamespaceQuota{std::move(ns), std::move(limits)};
}

// Two 8-GPU machines split into 8 blocks (1 GPU, 4 CPUs, 16Gi each).
class QuotaTest : public ::testing::Test {
 protected:
  QuotaTest() : queue(Duration(0)) {
    cluster.fleets = {Fleet("a100", BlocksSetting::Count(8))};
    cluster.instances = {Instance("n0", "a100", Cpus(32, 128, 8)), Instance("n1", "a100", Cpus(32, 128, 8))};
  }
  CycleResult Cycle() { return Schedule(cluster, queue, kT0); }
  ClusterSnapshot cluster;
  RunQueue queue;
};

TEST(QuotaCheck, ChecksGpusCpuMemoryAndPodsAgainstWhatIsLeft) {
  const NamespaceQuota q = Quota("ml", {{"requests.nvidia.com/gpu", {24, 32, "gpus"}},
                                        {kQuotaCpu, {1000, 4000, "cpu"}},
                                        {kQuotaPods, {9, 10, "pods"}}});
  EXPECT_FALSE(CheckQuota(&q, QuotaUse{Resources{3000, 0, 8}, 1}, "nvidia.com/gpu"));  // exactly full is fine
  auto gpu = CheckQuota(&q, QuotaUse{Resources{0, 0, 9}, 1}, "nvidia.com/gpu");
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->resource, "requests.nvidia.com/gpu");
  EXPECT_EQ(ExplainQuota("ml", *gpu), "needs 9 GPUs; namespace ml uses 24 of 32 GPUs (requests.nvidia.com/gpu, ResourceQuota gpus)");
  // Another fleet's GPU resource is not limited by this quota.
  EXPECT_FALSE(CheckQuota(&q, QuotaUse{Resources{0, 0, 9}, 1}, "amd.com/gpu"));
  auto cpu = CheckQuota(&q, QuotaUse{Resources{3500, 0, 0}, 1}, "nvidia.com/gpu");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(ExplainQuota("ml", *cpu), "needs 3500m CPU; namespace ml uses 1 of 4 CPUs (requests.cpu, ResourceQuota cpu)");
  auto pods = CheckQuota(&q, QuotaUse{Resources{}, 2}, "nvidia.com/gpu");
  ASSERT_TRUE(pods);
  EXPECT_EQ(pods->resource, "pods");
  // No quota: unlimited. Asking for nothing of a resource fits even a quota over its limit.
  EXPECT_FALSE(CheckQuota(nullptr, QuotaUse{Resources{0, 0, 1000}, 1000}, "nvidia.com/gpu"));
  const NamespaceQuota over = Quota("ml", {{"requests.nvidia.com/gpu", {40, 32, "gpus"}}});
  EXPECT_FALSE(CheckQuota(&over, QuotaUse{Resources{1000, 0, 0}, 1}, "nvidia.com/gpu"));
}

TEST(QuotaCheck, NamesAndAmounts) {
  EXPECT_EQ(NamespaceOf("ml/train"), "ml");
  EXPECT_EQ(FormatQuotaAmount(kQuotaMemory, 16 * kGi), "16Gi memory");
  EXPECT_EQ(FormatQuotaAmount(kQuotaPods, 1), "1 Pod");
  auto s = QuotaShortfall{"requests.nvidia.com/gpu", "q", 40, 0, 32};
  EXPECT_EQ(ExplainQuota("ml", s),
            "needs 40 GPUs; namespace ml uses 0 of 32 GPUs (requests.nvidia.com/gpu, ResourceQuota q); more than the "
            "quota allows at all");
}

TEST_F(QuotaTest, ARunOverItsNamespaceQuotaWaitsAndOthersArePlaced) {
  cluster.quotas = {Quota("ml", {{"requests.nvidia.com/gpu", {24, 32, "gpus"}}})};
  queue.Upsert(Pending("ml/big", 90, kT0, 1, Cpus(0, 0, 8)));  // room for 8 on n0, quota has 8 left
  queue.Upsert(Pending("ml/more", 80, kT0, 1, Cpus(0, 0, 1)));  // quota used up by big
  queue.Upsert(Pending("cv/small", 10, kT0, 1, Cpus(0, 0, 4)));
  const CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ml/big"), Names{"n0"});
  const WaitingRun* more = FindWaiting(r, "ml/more");
  ASSERT_NE(more, nullptr);
  EXPECT_EQ(more->reason.code, WaitCode::kQuotaExceeded);
  EXPECT_EQ(ApiReason(more->reason.code), "QuotaExceeded");
  EXPECT_FALSE(more->unschedulable());
  EXPECT_EQ(Explain(r, "ml/more"), "needs 1 GPU; namespace ml uses 32 of 32 GPUs (requests.nvidia.com/gpu, ResourceQuota gpus)");
  EXPECT_EQ(PlacedOn(r, "cv/small"), Names{"n1"});  // another namespace is not blocked behind it
  EXPECT_FALSE(r.reservation.has_value());
}

TEST_F(QuotaTest, AHigherPriorityRunAtItsQuotaNeverHoldsTheReservation) {
  cluster.quotas = {Quota("ml", {{"requests.nvidia.com/gpu", {32, 32, "gpus"}}})};
  cluster.running = {Running("x/a", {{"n0", 8}}), Running("x/b", {{"n1", 6}})};
  queue.Upsert(Pending("ml/hot", 100, kT0, 1, Cpus(0, 0, 8)));
  queue.Upsert(Pending("cv/wide", 50, kT0, 1, Cpus(0, 0, 4)));
  queue.Upsert(Pending("cv/fits", 10, kT0, 1, Cpus(0, 0, 2)));
  const CycleResult r = Cycle();
  EXPECT_EQ(FindWaiting(r, "ml/hot")->reason.code, WaitCode::kQuotaExceeded);
  ASSERT_TRUE(r.reservation.has_value());
  EXPECT_EQ(r.reservation->run_id, "cv/wide");  // the first blocked run that could use it
  EXPECT_EQ(r.reservation->instances, Names{"n0"});
  EXPECT_EQ(PlacedOn(r, "cv/fits"), Names{"n1"});
}

TEST_F(QuotaTest, WhatThePodGetsCountsNotJustTheRequest) {
  // A 1-GPU request takes one block: 4 CPUs and 16Gi. The quota allows 2 CPUs.
  cluster.quotas = {Quota("ml", {{kQuotaCpu, {0, 2000, "cpu"}}})};
  queue.Upsert(Pending("ml/r", 50, kT0, 1, Cpus(0, 0, 1)));
  const CycleResult r = Cycle();
  EXPECT_EQ(FindWaiting(r, "ml/r")->reason.code, WaitCode::kQuotaExceeded);
  EXPECT_EQ(Explain(r, "ml/r"), "needs 4 CPUs; namespace ml uses 0 of 2 CPUs (requests.cpu, ResourceQuota cpu); more than the quota "
            "allows at all");
}

TEST_F(QuotaTest, PlacementsWhosePodsAreNotCreatedYetCount) {
  cluster.quotas = {Quota("ml", {{"requests.nvidia.com/gpu", {0, 8, "gpus"}}})};
  RunningRun placed = Running("ml/placed", {{"n0", 6}});
  placed.quota_pending = true;  // its Pods are not in the quota's usage yet
  RunningRun counted = Running("ml/counted", {{"n1", 1}});  // already in `used` (0 here: ignored)
  cluster.running = {placed, counted};
  queue.Upsert(Pending("ml/r", 50, kT0, 1, Cpus(0, 0, 3)));
  queue.Upsert(Pending("ml/s", 50, kT0 + Duration(1), 1, Cpus(0, 0, 2)));
  const CycleResult r = Cycle();
  EXPECT_EQ(Explain(r, "ml/r"), "needs 3 GPUs; namespace ml uses 6 of 8 GPUs (requests.nvidia.com/gpu, ResourceQuota gpus)");
  EXPECT_EQ(PlacedOn(r, "ml/s"), Names{"n0"});  // 6 + 2 of 8
}

TEST_F(QuotaTest, GangsAreCheckedWhole) {
  cluster.fleets = {Fleet("a100", BlocksSetting::Count(8), PlacementPolicy::kCluster)};
  cluster.quotas = {Quota("ml", {{"requests.nvidia.com/gpu", {0, 12, "gpus"}}, {kQuotaPods, {0, 10, "pods"}}})};
  queue.Upsert(Pending("ml/gang", 50, kT0, 2, Cpus(0, 0, 8)));
  CycleResult r = Cycle();
  EXPECT_EQ(Explain(r, "ml/gang"), "needs 16 GPUs; namespace ml uses 0 of 12 GPUs (requests.nvidia.com/gpu, ResourceQuota gpus); more than the quota allows at all");
  cluster.quotas[0].limits["requests.nvidia.com/gpu"].hard = 16;
  r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ml/gang"), (Names{"n0", "n1"}));
}

TEST_F(QuotaTest, OnlyTheRunsNamespaceIsLimited) {
  cluster.quotas = {Quota("ml", {{kQuotaPods, {10, 10, "pods"}}})};
  queue.Upsert(Pending("ml/r"));
  queue.Upsert(Pending("mlx/r"));
  const CycleResult r = Cycle();
  EXPECT_EQ(FindWaiting(r, "ml/r")->reason.code, WaitCode::kQuotaExceeded);
  EXPECT_EQ(PlacedOn(r, "mlx/r").size(), 1u);
}

// Issue 45: a queued Pod's Pods exist (gated) while it waits, and the API server's quota counts
// them from their creation (quota_counted). The cycle takes them out of the usage for that run
// alone: it is placed on a quota its own Pods fill (not "needs 8; uses 8 of 8"), and the
// namespace's other runs still see them.
TEST_F(QuotaTest, AQueuedPodsOwnPodsInTheUsageAreCountedOnce) {
  cluster.quotas = {Quota("ml", {{"requests.nvidia.com/gpu", {8, 8, "gpus"}}, {kQuotaPods, {1, 10, "pods"}}})};
  PendingRun pod = Pending("ml/pod", 50, kT0, 1, Cpus(0, 0, 8));
  pod.quota_counted = {{"requests.nvidia.com/gpu", 8}, {kQuotaPods, 1}, {kQuotaCpu, 500}};  // no cpu quota: ignored
  queue.Upsert(pod);
  queue.Upsert(Pending("ml/job", 40, kT0, 1, Cpus(0, 0, 8)));
  CycleResult r = Cycle();
  EXPECT_EQ(PlacedOn(r, "ml/pod"), Names{"n0"});
  // Once placed, its placement is what is charged (8 of 8), its Pods not again.
  EXPECT_EQ(Explain(r, "ml/job"), "needs 8 GPUs; namespace ml uses 8 of 8 GPUs (requests.nvidia.com/gpu, ResourceQuota gpus)");

  // A run ahead of it in the queue sees the gated Pods that hold the quota (as the API server
  // would refuse its Pods) and waits; the queued Pod is placed all the same.
  queue.Upsert(Pending("ml/job", 90, kT0, 1, Cpus(0, 0, 8)));
  r = Cycle();
  EXPECT_EQ(Explain(r, "ml/job"), "needs 8 GPUs; namespace ml uses 8 of 8 GPUs (requests.nvidia.com/gpu, ResourceQuota gpus)");
  EXPECT_EQ(PlacedOn(r, "ml/pod"), Names{"n0"});
}

}  // namespace
}  // namespace berth::scheduling::testing
