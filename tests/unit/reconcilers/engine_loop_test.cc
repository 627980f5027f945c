#include "reconcilers/engine/engine_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fakes/fake_api.h"
#include "reconcilers/state/engine_caches.h"
#include "unit/reconcilers/api_fixture.h"

namespace berth::reconcilers {
namespace {

using namespace std::chrono_literals;

// The loop on a fake clock with hooks that record what it did. Every wait of the test is on the
// loop's own steps (a condition variable its hooks notify, or the loop asleep on the clock), never
// on time: "the loop looked" (Looked) is a view asked for and made, which the loop thread does
// only between its other steps.
class EngineLoopTest : public ::testing::Test {
 protected:
  static constexpr std::chrono::seconds kRefresh{60};

  ~EngineLoopTest() override { loop_.Stop(); }

  EngineLoop::Hooks Hooks() {
    return EngineLoop::Hooks{
        .synced = [this] { return synced_.load(); },
        .started = [this] { ++started_; },
        .pass = [this](k8s::TimePoint now) { Passed(now); },
        .news = [this] { return news_.load(); },
        .show_news =
            [this] {
              if (news_.exchange(false)) Count(shown_);
            },
        .view_wanted = [this] { return wanted_.load(); },
        .make_view =
            [this] {
              wanted_ = false;
              Count(views_);
            },
    };
  }
  // What a pass does with the loop: resets its deadline, takes the changes, notes deadlines.
  void Passed(k8s::TimePoint now) {
    loop_.ResetDeadline();
    EngineLoop::Changes c = loop_.TakeChanges();
    if (on_pass_) on_pass_(now);
    std::lock_guard<std::mutex> lock(mu_);
    changes_.push_back(std::move(c));
    at_.push_back(now);
    cv_.notify_all();
  }
  void Count(int& counter) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counter;
    cv_.notify_all();
  }
  // The waits below end on the loop's steps; their bound (kNever, far beyond any step under load)
  // only turns a loop that never takes the step into a failure instead of a hang.
  // (Thrown: the test fails there and then, whatever helper waited.)
  static constexpr std::chrono::seconds kNever{120};
  void Await(std::unique_lock<std::mutex>& lock, const std::function<bool()>& done, const std::string& what) {
    if (!cv_.wait_for(lock, kNever, done)) throw std::runtime_error("the loop never " + what);
  }
  void WaitPasses(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    Await(lock, [&] { return changes_.size() >= n; }, "made pass " + std::to_string(n));
  }
  size_t Passes() {
    std::lock_guard<std::mutex> lock(mu_);
    return changes_.size();
  }
  // Returns once the loop thread has looked at the clock and its state since the last call:
  // twice a view is asked for and made (the second only after the loop went round its wait once
  // more, so a pass the clock made due would have come before it). Called before the clock is
  // moved after a pass: the loop notes when a pass ended after the pass hook returned.
  void Looked() {
    for (int i = 0; i < 2; ++i) {
      std::unique_lock<std::mutex> lock(mu_);
      const int before = views_;
      wanted_ = true;
      lock.unlock();
      loop_.Nudge();
      lock.lock();
      Await(lock, [&] { return views_ > before; }, "made the view asked for");
    }
  }
  void StartSynced() {
    synced_ = true;
    loop_.Start();
    WaitPasses(1);
  }

  base::FakeClock clock_;
  std::atomic<bool> synced_{false}, news_{false}, wanted_{false};
  std::atomic<int> started_{0};
  std::function<void(k8s::TimePoint)> on_pass_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<EngineLoop::Changes> changes_;
  std::vector<k8s::TimePoint> at_;
  int views_ = 0, shown_ = 0;
  EngineLoop loop_{clock_, kRefresh, Hooks()};  // last: stopped before the fields its hooks use go
};

TEST_F(EngineLoopTest, TheFirstPassComesOnceTheCachesAreSyncedAndSeesFleetsAndNamespacesChanged) {
  loop_.Start();
  while (clock_.Waiters() == 0) std::this_thread::yield();  // asleep, waiting for the caches
  EXPECT_EQ(Passes(), 0u);
  EXPECT_EQ(started_.load(), 0);
  synced_ = true;
  loop_.Nudge();  // what each informer's first list does (Watch)
  WaitPasses(1);
  EXPECT_EQ(started_.load(), 1);
  EXPECT_TRUE(changes_[0].fleets);
  EXPECT_TRUE(changes_[0].namespaces);
  EXPECT_FALSE(loop_.PassDue());
}

TEST_F(EngineLoopTest, AChangeMakesAPassDueThatTakesItNoSoonerThanTheGapAfterTheLast) {
  StartSynced();
  loop_.Touch("ns/a");
  loop_.Touch("ns/b");
  loop_.NoteNodeChanged("n1");
  EXPECT_TRUE(loop_.PassDue());
  Looked();  // the loop waits for the gap after the last pass on the clock: no pass yet
  EXPECT_EQ(Passes(), 1u);
  clock_.Advance(EngineLoop::kCoalesce);
  WaitPasses(2);
  EXPECT_EQ(changes_[1].runs, (std::unordered_set<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(changes_[1].nodes, (std::unordered_set<std::string>{"n1"}));
  EXPECT_FALSE(changes_[1].fleets);
  EXPECT_FALSE(changes_[1].namespaces);
  loop_.NoteFleetsChanged();
  loop_.NoteNamespacesChanged();
  Looked();  // past the second pass (the gap counts from its end)
  clock_.Advance(EngineLoop::kCoalesce);
  WaitPasses(3);
  EXPECT_TRUE(changes_[2].fleets);
  EXPECT_TRUE(changes_[2].namespaces);
  EXPECT_TRUE(changes_[2].runs.empty());
}

TEST_F(EngineLoopTest, WithNothingChangingTheNextPassComesAtTheDeadlineOrOneStatusRefreshLater) {
  on_pass_ = [this](k8s::TimePoint now) {
    if (Passes() == 0) loop_.NoteDeadline(now + 10s);  // the first pass only
  };
  StartSynced();
  const k8s::TimePoint t0 = at_[0];
  Looked();
  clock_.Advance(9s);
  Looked();
  EXPECT_EQ(Passes(), 1u) << "before its deadline";
  clock_.Advance(1s);
  WaitPasses(2);
  EXPECT_EQ(at_[1], t0 + 10s);
  // The second pass noted no deadline: the next one comes one status_refresh after the loop
  // began to wait.
  Looked();
  clock_.Advance(kRefresh - 1s);
  Looked();
  EXPECT_EQ(Passes(), 2u);
  clock_.Advance(1s);
  WaitPasses(3);
  EXPECT_EQ(at_[2], t0 + 10s + kRefresh);
}

TEST_F(EngineLoopTest, ADeadlineAlreadyDueWaitsTheMinimumDelayInsteadOfSpinning) {
  on_pass_ = [this](k8s::TimePoint now) {
    if (Passes() == 0) loop_.NoteDeadline(now - 1s);
  };
  StartSynced();
  Looked();
  EXPECT_EQ(Passes(), 1u);
  clock_.Advance(EngineLoop::kMinDeadlineDelay);
  WaitPasses(2);
  EXPECT_EQ(at_[1], at_[0] + EngineLoop::kMinDeadlineDelay);
}

TEST_F(EngineLoopTest, BetweenPassesItShowsNewsAndMakesAViewWithoutMakingAPass) {
  StartSynced();
  Looked();  // a view made while waiting for work
  EXPECT_EQ(Passes(), 1u);
  loop_.Touch("ns/a");  // a pass due, waiting for the gap after the last one
  news_ = true;
  loop_.Nudge();
  {
    std::unique_lock<std::mutex> lock(mu_);
    Await(lock, [&] { return shown_ == 1; }, "showed the news");
  }
  EXPECT_EQ(Passes(), 1u);
  clock_.Advance(EngineLoop::kCoalesce);
  WaitPasses(2);
}

TEST_F(EngineLoopTest, StopEndsEveryWaitAtOnceAndTheLoopMakesNoPassAfter) {
  StartSynced();
  Looked();
  loop_.Stop();  // asleep on the fake clock until a minute from now: returns without it moving
  EXPECT_TRUE(loop_.Stopping());
  loop_.Touch("ns/a");
  clock_.Advance(kRefresh * 2);
  EXPECT_EQ(Passes(), 1u);
  loop_.Stop();  // idempotent
}

TEST_F(EngineLoopTest, StopBeforeTheCachesSyncEndsTheWaitForThem) {
  loop_.Start();
  while (clock_.Waiters() == 0) std::this_thread::yield();  // asleep, waiting for the caches
  loop_.Stop();
  EXPECT_EQ(started_.load(), 0);
  EXPECT_EQ(Passes(), 0u);
}

// The caches' handlers (Watch) on an in-memory API: what a pass takes names what changed. The
// informers run on their own threads: this test waits for the loop's passes on the system clock.
class EngineLoopWatchTest : public ApiFixture {
 protected:
  EngineLoopWatchTest() : caches_(client_) {
    loop_.Watch(
        caches_,
        [this](const std::string& key) {
          std::lock_guard<std::mutex> lock(mu_);
          priority_changed_.insert(key);
        },
        [this] {
          std::lock_guard<std::mutex> lock(mu_);
          ++synced_calls_;
          cv_.notify_all();
        });
  }
  ~EngineLoopWatchTest() override {
    loop_.Stop();
    caches_.Stop();
  }
  EngineLoop::Hooks Hooks() {
    return EngineLoop::Hooks{
        .synced = [this] { return caches_.HasSynced(); },
        .started = [] {},
        .pass =
            [this](k8s::TimePoint) {
              EngineLoop::Changes c = loop_.TakeChanges();
              std::lock_guard<std::mutex> lock(mu_);
              runs_.insert(c.runs.begin(), c.runs.end());
              nodes_.insert(c.nodes.begin(), c.nodes.end());
              namespaces_ = namespaces_ || c.namespaces;
              cv_.notify_all();
            },
        .news = [] { return false; },
        .show_news = [] {},
        .view_wanted = [] { return false; },
        .make_view = [] {},
    };
  }
  // Waits (for a pass) until `seen` holds; false after 30 s.
  bool Until(const std::function<bool()>& seen) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 30s, seen);
  }

  k8s::SystemClock system_;
  EngineCaches caches_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> runs_, nodes_, priority_changed_;
  bool namespaces_ = false;
  int synced_calls_ = 0;  // under mu_
  EngineLoop loop_{system_, 60s, Hooks()};
};

TEST_F(EngineLoopWatchTest, TheCachesHandlersNoteRunsNodesNamespacesAndPriorityPatches) {
  loop_.Start();
  caches_.Start();
  ASSERT_TRUE(Until([&] { return namespaces_; })) << "the first pass after the caches synced";
  // An informer counts as synced before its handler runs, so the last handler may still be on
  // its way when that pass runs (seen under ASan in a stressed CI run: 7 of 8).
  const bool all_synced = Until([&] { return synced_calls_ >= static_cast<int>(EngineCaches::kInformers); });
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_TRUE(all_synced) << synced_calls_ << " of " << EngineCaches::kInformers << " informers said they synced";
  }
  CreateRun("a", R"("priority":10,)");
  ASSERT_TRUE(Until([&] { return runs_.count("ns/a") != 0; }));
  EXPECT_TRUE(priority_changed_.empty()) << "a new run is no priority patch";
  ASSERT_TRUE(client_->MergePatch(k8s::resources::kRuns.Path("ns", "a"), R"({"spec":{"priority":90}})").ok());
  ASSERT_TRUE(Until([&] { return priority_changed_.count("ns/a") != 0; }));
  const std::string res = R"({"cpu":"8","memory":"32Gi","pods":"110"})";
  ASSERT_TRUE(client_
                  ->Create(k8s::resources::kNodes.Path(),
                           R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n7"},"status":{"capacity":)" + res +
                               R"(,"allocatable":)" + res + "}}")
                  .ok());
  EXPECT_TRUE(Until([&] { return nodes_.count("n7") != 0; }));
}

}  // namespace
}  // namespace berth::reconcilers
