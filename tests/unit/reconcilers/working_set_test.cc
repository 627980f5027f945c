#include "reconcilers/state/working_set.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace berth::reconcilers {
namespace {

const k8s::TimePoint kT0 = k8s::TimePoint(std::chrono::milliseconds(1'767'323'045'000));

class WorkingSetTest : public ::testing::Test {
 protected:
  void Put(const std::string& key, const std::string& rv) {
    auto run = std::make_shared<reconcilers::Run>();
    run->meta.ns = key.substr(0, key.find('/'));
    run->meta.name = key.substr(key.find('/') + 1);
    run->meta.resource_version = rv;
    run->meta.created = kT0;
    cache_[key] = run;
  }
  // A pass in which `touched` changed (the engine notes changes once the pass began).
  const Keyed& Pass(k8s::TimePoint now = kT0, const std::vector<std::string>& touched = {}) {
    set_.BeginPass();
    for (const auto& key : touched) set_.Touch(key);
    return set_.Make(
        now,
        [this](const std::string& key) -> std::shared_ptr<const reconcilers::Run> {
          ++reads_;
          auto it = cache_.find(key);
          return it != cache_.end() ? it->second : nullptr;
        },
        [this] { ++news_; }, 2);
  }
  static std::vector<std::string> Keys(const Keyed& keyed) {
    std::vector<std::string> out;
    for (const auto& k : keyed) out.push_back(k.key);
    return out;
  }

  std::map<std::string, std::shared_ptr<const reconcilers::Run>> cache_;
  WorkingSet set_;
  int reads_ = 0, news_ = 0;
};

TEST_F(WorkingSetTest, APassVisitsTheTouchedRunsInKeyOrderAndReadsEachOnce) {
  Put("ns/b", "1");
  Put("ns/a", "2");
  const Keyed& keyed = Pass(kT0, {"ns/b", "ns/a"});
  EXPECT_EQ(Keys(keyed), (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(reads_, 2);
  EXPECT_EQ(news_, 1);  // every second run
  EXPECT_EQ(keyed[0].memo->run->meta.resource_version, "2");
  EXPECT_TRUE(set_.Touched(*keyed[0].memo));
  // The next pass: the same runs, read again only when touched.
  Put("ns/a", "3");
  const Keyed& again = Pass(kT0, {"ns/a"});
  EXPECT_EQ(&again, &keyed);  // the last pass' list
  EXPECT_EQ(reads_, 3);
  EXPECT_EQ(again[0].memo->run->meta.resource_version, "3");
  EXPECT_TRUE(set_.Touched(*again[0].memo));
  EXPECT_FALSE(set_.Touched(*again[1].memo));
}

TEST_F(WorkingSetTest, ARunGoneFromTheCacheLeavesTheSetWithItsMemo) {
  Put("ns/a", "1");
  Put("ns/b", "1");
  set_.Touch("ns/a");
  set_.Touch("ns/b");
  Pass();
  cache_.erase("ns/a");
  set_.Touch("ns/a");
  EXPECT_EQ(Keys(Pass()), (std::vector<std::string>{"ns/b"}));
  EXPECT_EQ(set_.Find("ns/a"), nullptr);
  EXPECT_EQ(set_.memos(), 1u);
}

TEST_F(WorkingSetTest, AFinishedRunLeavesUntilItsTtlComesDue) {
  Put("ns/a", "1");
  set_.Touch("ns/a");
  const Keyed& keyed = Pass();
  set_.Leave(keyed[0].key, kT0 + std::chrono::minutes(5));
  EXPECT_EQ(set_.NextExpiry(), kT0 + std::chrono::minutes(5));
  EXPECT_TRUE(Pass(kT0 + std::chrono::minutes(4)).empty());
  EXPECT_EQ(Keys(Pass(kT0 + std::chrono::minutes(5))), (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(set_.NextExpiry(), std::nullopt);
}

TEST_F(WorkingSetTest, PassFlagsHoldForThePassTheyWereSetIn) {
  Put("ns/a", "1");
  set_.Touch("ns/a");
  const Keyed& keyed = Pass();
  RunMemo& memo = *keyed[0].memo;
  set_.MarkBusy({"ns/a", "ns/unknown"});
  scheduling::CycleResult result;
  result.waiting.push_back(scheduling::WaitingRun{"ns/a", {}, 5, &memo});
  set_.MarkWaiting(result);
  set_.MarkPositioned("ns/a");
  EXPECT_TRUE(set_.Busy(memo));
  EXPECT_TRUE(set_.Positioned(memo));
  EXPECT_EQ(set_.WaitingOf(memo), &result.waiting[0]);
  EXPECT_EQ(WorkingSet::OwnerOf(result.waiting[0].owner), &memo);
  Pass();
  EXPECT_FALSE(set_.Busy(memo));
  EXPECT_FALSE(set_.Touched(memo));
  EXPECT_FALSE(set_.Positioned(memo));
  EXPECT_EQ(set_.WaitingOf(memo), nullptr);
  // A memo made for a run not in the pass' list has no facts to set.
  RunMemo& elsewhere = set_.MemoOf("ns/elsewhere");
  set_.MarkBusy({"ns/elsewhere"});
  set_.MarkPositioned("ns/elsewhere");
  EXPECT_FALSE(set_.Busy(elsewhere));
  EXPECT_FALSE(set_.Positioned(elsewhere));
}

// A memo's facts are found by its place in the pass' list (RunMemo::slot), and only when that
// place holds it: another memo claiming the same place (one never in the list) has none.
TEST_F(WorkingSetTest, OnlyTheMemoAtItsPlaceInTheListHasThePassFacts) {
  Put("ns/a", "1");
  Put("ns/b", "1");
  const Keyed& keyed = Pass(kT0, {"ns/a", "ns/b"});
  RunMemo& b = *keyed[1].memo;
  set_.MarkBusy({"ns/b"});
  scheduling::CycleResult result;
  result.waiting.push_back(scheduling::WaitingRun{"ns/b", {}, 5, &b});
  set_.MarkWaiting(result);
  RunMemo stranger;
  stranger.slot = b.slot;
  EXPECT_TRUE(set_.Busy(b));
  EXPECT_TRUE(set_.Touched(b));
  EXPECT_EQ(set_.WaitingOf(b), &result.waiting[0]);
  EXPECT_FALSE(set_.Busy(stranger));
  EXPECT_FALSE(set_.Touched(stranger));
  EXPECT_EQ(set_.WaitingOf(stranger), nullptr);
  // Its entry in the result marks nothing either.
  result.waiting.push_back(scheduling::WaitingRun{"ns/b", {}, 5, &stranger});
  set_.MarkWaiting(result);
  EXPECT_EQ(set_.WaitingOf(b), &result.waiting[0]);
  EXPECT_EQ(set_.WaitingOf(stranger), nullptr);
}

// What every pass reads of each memo (100,000 quiet pending runs: the working set, the sweeps,
// the waiting statuses, the positions) lies in its first 128 bytes, so that a pass costs two or
// three cache lines a run, not one per field (RunMemo's "Layout").
TEST(RunMemoLayout, WhatEveryPassReadsOfARunLiesInTheMemosFirst128Bytes) {
  const RunMemo m;
  const auto end_of = [&m](const auto& field) {
    return static_cast<size_t>(reinterpret_cast<const char*>(&field) - reinterpret_cast<const char*>(&m)) +
           sizeof(field);
  };
  for (size_t end : {end_of(m.run), end_of(m.last_wait_write), end_of(m.has_preemption), end_of(m.shown_position),
                     end_of(m.wait_since), end_of(m.gives_up_at), end_of(m.ends_waiting_at), end_of(m.slot),
                     end_of(m.current), end_of(m.current_code), end_of(m.current_effective), end_of(m.queueable),
                     end_of(m.queued), end_of(m.touched), end_of(m.quiet), end_of(m.status_write.state)}) {
    EXPECT_LE(end, 128u);
  }
}

// A run deleted from the snapshot makes the list anew: the changes of the other runs noted
// before the list was found stale still count in that pass (and in no later one).
TEST_F(WorkingSetTest, ChangesNotedInAPassThatMakesTheListAnewStillCount) {
  Put("ns/a", "1");
  Put("ns/b", "1");
  Put("ns/c", "1");
  Pass(kT0, {"ns/a", "ns/b", "ns/c"});
  cache_.erase("ns/a");
  Put("ns/c", "2");
  const Keyed& keyed = Pass(kT0, {"ns/a", "ns/c"});
  ASSERT_EQ(Keys(keyed), (std::vector<std::string>{"ns/b", "ns/c"}));
  EXPECT_FALSE(set_.Touched(*keyed[0].memo));
  EXPECT_TRUE(set_.Touched(*keyed[1].memo));
  EXPECT_EQ(keyed[1].memo->run->meta.resource_version, "2");
  EXPECT_FALSE(set_.Touched(*Pass()[1].memo));
}

// What a pass decided at the object a memo holds (quiet, queueable, its waiting status current,
// its placed record) lasts while the object is not read again, and goes when it is (the run or
// its Pods changed: Touch); whether the last pass queued it stays.
TEST_F(WorkingSetTest, WhatWasDecidedAtAnObjectGoesWhenTheObjectIsReadAgain) {
  Put("ns/a", "1");
  RunMemo& memo = *Pass(kT0, {"ns/a"})[0].memo;
  memo.quiet = memo.queueable = memo.current = memo.queued = true;
  memo.placed.Set({}, std::make_shared<PlacedRun>());
  Pass();  // untouched: the same object
  EXPECT_TRUE(memo.quiet && memo.queueable && memo.current && memo.placed_record() != nullptr);
  Pass(kT0, {"ns/a"});  // its Pods changed: the object read again
  EXPECT_FALSE(memo.quiet || memo.queueable || memo.current || memo.placed_record() != nullptr);
  EXPECT_TRUE(memo.queued);
}

TEST_F(WorkingSetTest, MemosOfRunsThePassDidNotVisitAreDropped) {
  Put("ns/a", "1");
  set_.Touch("ns/a");
  const Keyed& keyed = Pass();
  set_.MemoOf("ns/elsewhere").preemption_announced = "x";  // a memo made for a run not in the set
  EXPECT_EQ(set_.memos(), 2u);
  set_.DropUnvisited(keyed);
  EXPECT_EQ(set_.memos(), 1u);
  EXPECT_NE(set_.Find("ns/a"), nullptr);
}

}  // namespace
}  // namespace berth::reconcilers
