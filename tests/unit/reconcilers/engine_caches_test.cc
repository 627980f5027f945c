#include "reconcilers/state/engine_caches.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "fakes/fake_api.h"
#include "unit/reconcilers/api_fixture.h"
#include "reconcilers/objects/namespace_policy.h"

namespace berth::reconcilers {
namespace {

using k8s::resources::kNamespaces;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using testing::FakeApi;

class EngineCachesTest : public ApiFixture {
 protected:
  EngineCachesTest()
      : caches_(client_) {}
  ~EngineCachesTest() override { caches_.Stop(); }

  // Waits (on real time, at most 30 s) until `done` holds: the informers fill the caches on their
  // own threads.
  static bool Eventually(const std::function<bool()>& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
  void Create(const std::string& path, const std::string& body) {
    auto r = client_->Create(path, body);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  // The ticket of Job ns/train (uid job-uid) placed on n0 (rank 0).
  static ::berth::api::v1alpha1::Run JobTicket() {
    ::berth::api::v1alpha1::Run ticket;
    ticket.meta.ns = "ns";
    ticket.meta.name = "job-train";
    ticket.spec.workload_ref = ::berth::api::v1alpha1::WorkloadRef{"batch/v1", "Job", "train", "job-uid"};
    ticket.status.placement = {PlacementEntry{0, "n0", 1, ""}};
    return ticket;
  }

  // The reads go through the pass' snapshot, taken now (EngineCaches::UpdateSnapshot).
  const PassSnapshot& Snap() {
    caches_.UpdateSnapshot(snapshot_);
    return snapshot_;
  }

  EngineCaches caches_;
  PassSnapshot snapshot_;
};

TEST_F(EngineCachesTest, TheQueuesPriorityIsTheRunsWithinItsNamespacesCap) {
  Create(kNamespaces.Path(), R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"capped","labels":{")" +
                                 std::string(kMaxPriorityLabel) + R"(":"10"}}})");
  Create(kRuns.Path("capped"), R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"a"},)"
                               R"("spec":{"priority":50,"template":{"spec":{"containers":[]}}}})");
  caches_.Start();
  ASSERT_TRUE(Eventually([&] { return caches_.HasSynced(); }));
  auto run = caches_.runs().Get("capped/a");
  ASSERT_TRUE(run);
  EXPECT_EQ(Snap().QueuePriority(*run), 10);
  std::optional<PriorityCap> cap;
  EXPECT_TRUE(caches_.CachedCapOf("capped", cap));
  ASSERT_TRUE(cap.has_value());
  EXPECT_EQ(cap->cap, 10);
  EXPECT_FALSE(caches_.CachedCapOf("elsewhere", cap)) << "not in the cache: the webhook asks the API server";
  EXPECT_FALSE(Snap().CapOf("elsewhere").has_value());
}

TEST_F(EngineCachesTest, APlacedRunsQuotaIsPendingUntilAllItsPodsAreInTheCache) {
  Create(kPods.Path("ns"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a-0-0","labels":{"berth.dev/run":"a"}},)"
                           R"("spec":{"containers":[]}})");
  caches_.Start();
  ASSERT_TRUE(Eventually([&] { return caches_.HasSynced() && caches_.pods().Get("ns/a-0-0") != nullptr; }));
  EXPECT_FALSE(Snap().QuotaPending("ns", {PlacementEntry{0, "n0", 1, "a-0-0"}}));
  EXPECT_TRUE(Snap().QuotaPending("ns", {PlacementEntry{0, "n0", 1, "a-0-0"}, PlacementEntry{1, "n1", 1, "a-0-1"}}));
  EXPECT_TRUE(Snap().QuotaPending("ns", {PlacementEntry{0, "n0", 1, ""}}));
}

// Issue 45: a placed ticket's placement names no Pod; its Job's live Pods are in the
// ResourceQuota's status.used (the API server counts them from their creation), so the ticket is
// charged to the quota only while fewer of them are live than its placement has entries.
TEST_F(EngineCachesTest, APlacedTicketsQuotaIsPendingUntilItsJobsPodsAreInTheCache) {
  Create(kPods.Path("ns"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-x7k2p",)"
                           R"("labels":{"berth.dev/ticket":"job-train","berth.dev/rank":"0"},)"
                           R"("ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"train",)"
                           R"("uid":"job-uid","controller":true}]},)"
                           R"("spec":{"nodeName":"n0","containers":[]},"status":{"phase":"Running"}})");
  caches_.Start();
  ASSERT_TRUE(Eventually([&] { return caches_.HasSynced() && caches_.others().Size() == 1; }));
  ::berth::api::v1alpha1::Run ticket = JobTicket();
  EXPECT_FALSE(Snap().TicketQuotaPending(ticket));  // its one Pod is counted by the quota
  ticket.status.placement.push_back(PlacementEntry{1, "n1", 1, ""});
  EXPECT_TRUE(Snap().TicketQuotaPending(ticket));  // the second Pod is not created yet
  ticket.status.placement.pop_back();
  ticket.spec.workload_ref->uid = "another-job";  // a Job of that name, not the ticket's
  EXPECT_TRUE(Snap().TicketQuotaPending(ticket));
}

// Issue 45: a queued Pod group's Pods exist (gated) while its ticket waits and the API server's
// quota counts them from their creation; QuotaCountedOf says what they count, by quota key, so
// that the cycle does not count them twice. A finished Pod is no longer counted, nor is a Pod of
// another group; a Job's ticket has none (its Job waits suspended, without Pods).
TEST_F(EngineCachesTest, AWaitingPodGroupsPodsCountInItsNamespacesQuotaUsage) {
  auto group_pod = [&](const std::string& name, const std::string& group, const std::string& phase) {
    Create(kPods.Path("ns"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(",)"
                             R"("labels":{"berth.dev/queue":"true","berth.dev/pod-group":")" + group + R"("}},)"
                             R"("spec":{"schedulingGates":[{"name":"berth.dev/admission"}],"containers":[{"name":"c",)"
                             R"("image":"x","resources":{"requests":{"cpu":"500m","memory":"1Gi","nvidia.com/gpu":"4"}}}]}})");
    if (phase.empty()) return;
    auto w = client_->MergePatch(kPods.Path("ns", name, "status"), R"({"status":{"phase":")" + phase + R"("}})");
    ASSERT_TRUE(w.ok()) << w.status().ToString();
  };
  group_pod("train-0", "train", "");
  group_pod("train-1", "train", "");
  group_pod("train-old", "train", "Failed");
  group_pod("other-0", "other", "");
  caches_.Start();
  ASSERT_TRUE(Eventually([&] {
    auto old = caches_.group_pods().Get("ns/train-old");
    return caches_.HasSynced() && caches_.group_pods().Size() == 4 && old && old->pod.phase == "Failed";
  }));
  ::berth::api::v1alpha1::Run ticket;
  ticket.meta.ns = "ns";
  ticket.meta.name = "podgroup-train";
  ticket.spec.workload_ref = ::berth::api::v1alpha1::WorkloadRef{"v1", "PodGroup", "train", ""};
  const std::map<std::string, int64_t> want = {{"pods", 2}, {"requests.cpu", 1000}, {"requests.memory", 2 * (int64_t{1} << 30)},
                                               {"requests.nvidia.com/gpu", 8}};
  EXPECT_EQ(Snap().QuotaCountedOf(ticket), want);
  ticket.spec.workload_ref = ::berth::api::v1alpha1::WorkloadRef{"batch/v1", "Job", "train", "job-uid"};
  EXPECT_TRUE(Snap().QuotaCountedOf(ticket).empty());
}

// Issue 45: a Pod berth pinned for a ticket counts through the ticket's placement while that
// stands; once the ticket is back in the queue or ended (a Job suspended by a preemption: its
// controller deletes the Pods with their grace) the stopping Pod holds the blocks its requests
// cover, charged to its namespace like a Run's stopping Pod (blocks 0, NodeHold).
TEST_F(EngineCachesTest, AStoppingTicketPodHoldsBlocksOnceItsTicketNoLongerStands) {
  Create(kPods.Path("ns"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-x7k2p",)"
                           R"("labels":{"berth.dev/ticket":"job-train","berth.dev/rank":"0"},)"
                           R"("ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"train",)"
                           R"("uid":"job-uid","controller":true}]},)"
                           R"("spec":{"nodeName":"n0","containers":[{"name":"c","image":"x",)"
                           R"("resources":{"requests":{"nvidia.com/gpu":"8"}}}]},"status":{"phase":"Running"}})");
  caches_.Start();
  ASSERT_TRUE(Eventually([&] { return caches_.HasSynced() && caches_.others().Size() == 1; }));
  ::berth::api::v1alpha1::Run ticket = JobTicket();
  ticket.status.phase = ::berth::api::v1alpha1::Phase::kRunning;
  EXPECT_TRUE(Snap().Holds({{"ns/job-train", &ticket}}).empty());  // its placement counts it
  ticket.status.phase = ::berth::api::v1alpha1::Phase::kPending;  // preempted: back in the queue, placement gone
  ticket.status.placement.clear();
  for (const std::vector<NodeHold>& holds : {Snap().Holds({{"ns/job-train", &ticket}}), Snap().Holds({})}) {
    ASSERT_EQ(holds.size(), 1u);
    EXPECT_EQ(holds[0].node, "n0");
    EXPECT_EQ(holds[0].id, "ns/train-x7k2p");
    EXPECT_EQ(holds[0].blocks, std::optional<int32_t>(0));  // held as blocks by its requests, not an ordinary Pod
  }
}

TEST_F(EngineCachesTest, AnOrdinaryPodOnANodeHoldsItsRequests) {
  Create(kPods.Path("kube-system"), R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"daemon"},)"
                                    R"("spec":{"nodeName":"n0","containers":[{"name":"c","image":"x",)"
                                    R"("resources":{"requests":{"cpu":"1"}}}]}})");
  caches_.Start();
  ASSERT_TRUE(Eventually([&] { return caches_.HasSynced() && caches_.others().Size() == 1; }));
  const std::vector<NodeHold> holds = Snap().Holds({});
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].node, "n0");
  EXPECT_EQ(holds[0].id, "kube-system/daemon");
  EXPECT_FALSE(holds[0].blocks.has_value());
}

// The pass' snapshot (reconcilers/state/snapshot.h) is the caches at its update: it does not move
// while the informers do, answers the reads as the live caches do once updated, and an update
// applies only what changed since the last one.
TEST_F(EngineCachesTest, TheSnapshotIsTheCachesAtItsLastUpdateAndAnUpdateCostsWhatChanged) {
  const auto pod = [](const std::string& name) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name + R"(","labels":{"berth.dev/run":"a"}},)"
           R"("spec":{"containers":[]}})";
  };
  Create(kPods.Path("ns"), pod("a-0-0"));
  caches_.Start();
  ASSERT_TRUE(Eventually([&] { return caches_.HasSynced() && caches_.pods().Size() == 1; }));
  Snap();
  EXPECT_EQ(snapshot_.pods().Size(), 1u);
  EXPECT_EQ(snapshot_.pods().Get("ns/a-0-0").get(), caches_.pods().Get("ns/a-0-0").get()) << "the cache's object, not a copy";
  Snap();
  EXPECT_EQ(snapshot_.LastApplied(), 0u) << "nothing changed: nothing applied";
  Create(kPods.Path("ns"), pod("a-0-1"));
  ASSERT_TRUE(Eventually([&] { return caches_.pods().Size() == 2; }));
  EXPECT_EQ(snapshot_.pods().Size(), 1u) << "the snapshot does not move during a pass";
  EXPECT_TRUE(snapshot_.QuotaPending("ns", {PlacementEntry{0, "n0", 1, "a-0-0"}, PlacementEntry{1, "n1", 1, "a-0-1"}}));
  EXPECT_EQ(snapshot_.pods().ByIndex("run", "ns/a").size(), 1u);
  Snap();
  EXPECT_EQ(snapshot_.LastApplied(), 1u) << "the one Pod added";
  EXPECT_FALSE(snapshot_.QuotaPending("ns", {PlacementEntry{0, "n0", 1, "a-0-0"}, PlacementEntry{1, "n1", 1, "a-0-1"}}));
  EXPECT_EQ(snapshot_.pods().ByIndex("run", "ns/a").size(), caches_.live().pods().ByIndex("run", "ns/a").size());
  EXPECT_EQ(snapshot_.pods().Version(), caches_.pods().Version());
}

}  // namespace
}  // namespace berth::reconcilers
