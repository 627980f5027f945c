#include "reconcilers/objects/preemptions.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fakes/fake_api.h"
#include "unit/reconcilers/writes_fixture.h"

namespace berth::reconcilers {
namespace {

namespace sched = scheduling;

// How the preemptor's record names its victim.
enum class Named {
  kUid,        // victimUIDs (and by name: the same namespace), as berth writes it (issue 44)
  kUidOnly,    // victimUIDs only, as for a victim of another namespace
  kNameOnly,   // victims by name, no uids: a record of an older berth
};

// A preemptor "high" (pending, its record in status.preemption naming "low" on node n0 of fleet
// gpu) and its victim "low" (Running there), in the API and the caches as a pass sees them.
class PreemptionsTest : public WritesFixture {
 protected:
  PreemptionsTest() : preemptions_(snapshot_, writes_) {}

  void Make(int victim_priority, bool reclaim = false, Named named = Named::kUid) {
    auto victim = CreateRun("low", R"("priority":)" + std::to_string(victim_priority) + ",",
                         R"({"phase":"Running","fleet":"gpu","placement":[{"rank":0,"node":"n0","blocks":1,"pod":"low-0"}]})");
    ASSERT_NE(victim, nullptr);
    const std::string by_name = named == Named::kUidOnly ? R"("victims":[],"otherVictims":1,)" : R"("victims":["ns/low"],)";
    const std::string by_uid = named == Named::kNameOnly ? "" : R"("victimUIDs":[")" + victim->meta.uid + R"("],)";
    CreateRun("high", R"("priority":90,)",
              R"({"phase":"Pending","reason":"Preempting","preemption":{"fleet":"gpu","nodes":["n0"],)" + by_name + by_uid +
              R"("reclaim":)" + std::string(reclaim ? "true" : "false") + "}}");
    caches_.Start();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(caches_.HasSynced() && caches_.runs().Size() == 2) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(caches_.runs().Size(), 2u);
    Snap();
    working_.BeginPass();
    working_.Touch("ns/high");
    working_.Touch("ns/low");
    keyed_ = &working_.Make(
        clock_.Now(), [this](const std::string& key) { return caches_.runs().Get(key); }, [] {}, 1000);
    sched::PendingRun pr;
    pr.id = "ns/high";
    pr.priority = 90;
    queue_.Upsert(std::move(pr));
    auto low = std::make_shared<PlacedRun>();
    low->key = "ns/low";
    low->uid = caches_.runs().Get("ns/low")->meta.uid;
    low->fleet = "gpu";
    low->placement = caches_.runs().Get("ns/low")->status.placement;
    placed_.push_back(low);
  }
  std::vector<sched::Nomination> Nominations(const std::unordered_set<std::string>& frozen = {}) {
    return preemptions_.Nominations(*keyed_, placed_, view_, queue_, frozen, clock_.Now());
  }
  std::shared_ptr<const reconcilers::Run> Low() { return GetRun("low"); }

  Preemptions preemptions_;
  WorkingSet working_;
  const Keyed* keyed_ = nullptr;
  sched::RunQueue queue_{std::chrono::minutes(10)};
  std::vector<std::shared_ptr<const PlacedRun>> placed_;
  ClusterView view_;
};

TEST_F(PreemptionsTest, AVictimStillPlacedOfLowerPriorityIsEvictedAndTheNomineeWaitsForIt) {
  Make(/*victim_priority=*/10);
  const auto n = Nominations();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].run_id, "ns/high");
  EXPECT_EQ(n[0].fleet, "gpu");
  EXPECT_EQ(n[0].instances, (std::vector<std::string>{"n0"}));
  EXPECT_EQ(n[0].victims, (std::vector<std::string>{"ns/low"}));
  EXPECT_TRUE(n[0].victims_stopping);
  EXPECT_EQ(keys_, (std::vector<std::string>{"ns/low"}));
  EXPECT_EQ(Low()->status.reason.api(), "Preempted");
  EXPECT_NE(Low()->status.message.find("preempted by ns/high (priority 90) on fleet gpu"), std::string::npos)
      << Low()->status.message;
}

// Issue 44: the record of a victim of another namespace gives only its uid (the preemptor's
// owner reads the record); the engine finds the victim by it, also after a restart.
TEST_F(PreemptionsTest, AVictimNamedOnlyByItsUidIsFoundAndEvicted) {
  Make(/*victim_priority=*/10, /*reclaim=*/false, Named::kUidOnly);
  const auto n = Nominations();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].victims, (std::vector<std::string>{"ns/low"}));
  EXPECT_TRUE(n[0].victims_stopping);
  EXPECT_EQ(keys_, (std::vector<std::string>{"ns/low"}));
  EXPECT_EQ(Low()->status.reason.api(), "Preempted");
}

// A record an older berth wrote (every victim by name, no uids) is still carried out.
TEST_F(PreemptionsTest, AnOlderRecordNamingItsVictimsIsStillCarriedOut) {
  Make(/*victim_priority=*/10, /*reclaim=*/false, Named::kNameOnly);
  const auto n = Nominations();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].victims, (std::vector<std::string>{"ns/low"}));
  EXPECT_EQ(Low()->status.reason.api(), "Preempted");
}

TEST_F(PreemptionsTest, ARecordWhoseVictimIsNoLongerOfLowerPriorityIsDropped) {
  Make(/*victim_priority=*/90);
  EXPECT_TRUE(Nominations().empty()) << "the core plans again";
  EXPECT_TRUE(keys_.empty());
  EXPECT_EQ(Low()->status.phase, Phase::kRunning);
}

TEST_F(PreemptionsTest, AReclaimStopsItsVictimWhateverItsPriority) {
  Make(/*victim_priority=*/95, /*reclaim=*/true);
  const auto n = Nominations();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_TRUE(n[0].victims_stopping);
  EXPECT_EQ(Low()->status.reason.api(), "Reclaimed");
  EXPECT_NE(Low()->status.message.find("reclaimed by team"), std::string::npos) << Low()->status.message;
}

TEST_F(PreemptionsTest, AVictimWithAWriteNotSeenYetIsNotEvictedAndStillCountsAsStopping) {
  Make(/*victim_priority=*/10);
  const auto n = Nominations(/*frozen=*/{"ns/low"});
  ASSERT_EQ(n.size(), 1u);
  EXPECT_TRUE(n[0].victims_stopping);
  EXPECT_TRUE(keys_.empty());
}

TEST_F(PreemptionsTest, AVictimThatHoldsNothingAndHasNoPodLeftIsNoLongerStopping) {
  Make(/*victim_priority=*/10);
  placed_.clear();  // its placement released (the view's runs no longer hold it)
  const auto n = Nominations();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_FALSE(n[0].victims_stopping) << "the core may place the nominee now";
  EXPECT_TRUE(keys_.empty());
}

TEST_F(PreemptionsTest, ARecordOfARunNoLongerQueuedIsNoNomination) {
  Make(/*victim_priority=*/10);
  queue_.Remove("ns/high");
  EXPECT_TRUE(Nominations().empty());
  EXPECT_TRUE(keys_.empty());
}

}  // namespace
}  // namespace berth::reconcilers
