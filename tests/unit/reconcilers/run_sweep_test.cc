#include "reconcilers/engine/run_sweep.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fakes/fake_api.h"
#include "k8s/timefmt.h"
#include "unit/reconcilers/writes_fixture.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;
using namespace std::chrono_literals;

// The sweeps of passes over runs read from the API (the caches are not started: no Pods, no
// Namespaces, no quotas), each write done at once.
class RunSweepTest : public WritesFixture {
 protected:
  RunSweepTest()
      : reconciler_(snapshot_, writes_, working_, events_, clock_, options_,
                    [](const std::string&, const std::string&, k8s::TimePoint) {}),
        sweep_(RunSweep::Parts{snapshot_, options_, working_, queue_, admissions_, reconciler_, writes_, forecaster_},
               [this] { ++news_; }) {}

  // A pass' working set: the runs named changed (read from the API again), the others as kept.
  const Keyed& Pass(const std::vector<std::string>& changed) {
    working_.BeginPass();
    sweep_.BeginPass({}, false, false);
    for (const auto& name : changed) working_.Touch("ns/" + name);
    return working_.Make(
        clock_.Now(), [this](const std::string& key) { return GetRun(key.substr(3)); }, [] {}, 1000);
  }
  std::vector<std::string> Queued() {
    std::vector<std::string> ids;
    for (auto item : queue_) ids.push_back(item.run.id);
    return ids;
  }

  WorkingSet working_;
  RunReconciler reconciler_;
  Forecaster forecaster_{std::chrono::seconds(30), nullptr};
  sched::RunQueue queue_{options_.aging_interval};
  RunSweep sweep_;
  ClusterView view_;
  int news_ = 0;
};

TEST_F(RunSweepTest, PendingRunsGoIntoTheQueueAndARunNoLongerPendingLeavesIt) {
  CreateRun("a", R"("priority":70,)", "{}");
  CreateRun("b", "", "{}");
  auto swept = sweep_.ReconcileAll(Pass({"a", "b"}), view_, clock_.Now());
  EXPECT_TRUE(swept.frozen.empty());
  EXPECT_FALSE(swept.refresh_left);
  EXPECT_EQ(Queued(), (std::vector<std::string>{"ns/a", "ns/b"}));
  ASSERT_NE(queue_.Find("ns/a"), nullptr);
  EXPECT_EQ(queue_.Find("ns/a")->priority, 70);
  EXPECT_EQ(queue_.Find("ns/a")->owner, static_cast<const void*>(working_.Find("ns/a"))) << "its memo owns the entry";
  EXPECT_TRUE(keys_.empty());

  ASSERT_TRUE(client_->MergePatch(k8s::resources::kRuns.Path("ns", "b"), R"({"spec":{"stop":true}})").ok());
  sweep_.ReconcileAll(Pass({"b"}), view_, clock_.Now());
  EXPECT_EQ(keys_, (std::vector<std::string>{"ns/b"})) << "b stopped: its Failed status written";
  EXPECT_EQ(Queued(), (std::vector<std::string>{"ns/a"})) << "a kept its entry without a change";
}

TEST_F(RunSweepTest, AnAdmittedRunHoldsBlocksWithItsRecordKeptWhileItIsUnchanged) {
  const k8s::TimePoint started = clock_.Now() - 10min;
  CreateRun("a", R"("maxDuration":"1h",)",
            R"({"phase":"Running","fleet":"gpu","startedAt":")" + k8s::FormatRfc3339(started) +
                R"(","placement":[{"rank":0,"node":"n0","blocks":1,"pod":"a-0"}]})");
  CreateRun("p", "", "{}");
  auto placed = sweep_.BlockHolders(Pass({"a", "p"}));
  ASSERT_EQ(placed.size(), 1u) << "the pending run holds nothing";
  EXPECT_EQ(placed[0]->key, "ns/a");
  EXPECT_EQ(placed[0]->fleet, "gpu");
  ASSERT_EQ(placed[0]->placement.size(), 1u);
  EXPECT_EQ(placed[0]->placement[0].node, "n0");
  EXPECT_EQ(placed[0]->expected_end, started + 1h);
  EXPECT_EQ(placed[0]->priority, 50);

  auto again = sweep_.BlockHolders(Pass({}));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0], placed[0]) << "the same record: nothing it is made of changed";
  auto changed = sweep_.BlockHolders(Pass({"a"}));
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_NE(changed[0], placed[0]) << "made anew for a run that changed";
}

TEST_F(RunSweepTest, AFinishedRunLeavesTheWorkingSetUntilItsTtlThenIsDeleted) {
  const k8s::TimePoint finished = clock_.Now();
  CreateRun("a", R"("ttlSecondsAfterFinished":60,)",
            R"({"phase":"Succeeded","finishedAt":")" + k8s::FormatRfc3339(finished) + R"("})");
  const Keyed& keyed = Pass({"a"});
  ASSERT_EQ(keyed.size(), 1u);
  EXPECT_EQ(sweep_.ExpiryOf(*keyed[0].run), finished + 60s);
  sweep_.Settle(keyed, {}, clock_.Now());
  EXPECT_TRUE(keys_.empty());
  EXPECT_EQ(working_.NextExpiry(), finished + 60s);
  EXPECT_TRUE(Pass({}).empty()) << "out of the working set";

  clock_.Advance(60s);
  const Keyed& due = Pass({});
  ASSERT_EQ(due.size(), 1u) << "back when its TTL came due";
  sweep_.Settle(due, {}, clock_.Now());
  EXPECT_EQ(keys_, (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(GetRun("a"), nullptr) << "deleted, like a Job by its TTL controller";
}

TEST_F(RunSweepTest, AFinishedRunWithoutATtlIsNeverDueAndOneBusyStaysVisited) {
  CreateRun("a", "", R"({"phase":"Failed","finishedAt":")" + k8s::FormatRfc3339(clock_.Now()) + R"("})");
  const Keyed& keyed = Pass({"a"});
  ASSERT_EQ(keyed.size(), 1u);
  EXPECT_EQ(sweep_.ExpiryOf(*keyed[0].run), std::nullopt);
  sweep_.Settle(keyed, /*busy=*/{"ns/a"}, clock_.Now());
  EXPECT_EQ(Pass({}).size(), 1u) << "a write of it in flight: visited again";
}

}  // namespace
}  // namespace berth::reconcilers
