#include "reconcilers/writers/workqueue.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "k8s/clock.h"

namespace berth::reconcilers {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

// Takes a key that the test knows is ready (Len() > 0), so Get cannot block.
std::string TakeReady(WorkQueue& q) {
  EXPECT_GT(q.Len(), 0u);
  std::optional<std::string> key = q.Get();
  EXPECT_TRUE(key.has_value());
  return key.value_or("");
}

TEST(WorkQueueTest, HandsOutKeysInOrderAndOnceEach) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.Add("ns/a");
  q.Add("ns/b");
  q.Add("ns/a");
  q.Add("ns/c");
  q.Add("ns/b");
  EXPECT_EQ(q.Len(), 3u);
  EXPECT_EQ(TakeReady(q), "ns/a");
  EXPECT_EQ(TakeReady(q), "ns/b");
  EXPECT_EQ(TakeReady(q), "ns/c");
  EXPECT_EQ(q.Len(), 0u);
  q.Done("ns/a");
  q.Done("ns/b");
  q.Done("ns/c");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsQueuedAgainAfterDone) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  EXPECT_EQ(TakeReady(q), "a");
  q.Add("a");
  q.Add("a");
  EXPECT_EQ(q.Len(), 0u) << "a key being processed must not be handed to a second worker";
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(TakeReady(q), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, DoneWithoutGetIsIgnored) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.Done("never-taken");
  q.Add("a");
  q.Done("a");  // queued, not being processed: must not queue a second copy
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(TakeReady(q), "a");
  q.Done("a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, GetBlocksUntilAKeyIsAdded) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  q.Add("a");
  worker.join();
  EXPECT_EQ(got, "a");
}

TEST(WorkQueueTest, NoKeyIsEverProcessedByTwoWorkersAtOnce) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  constexpr int kKeys = 8;
  constexpr int kWorkers = 4;
  constexpr int kProducers = 2;
  constexpr int kAddsPerProducer = 4000;
  std::array<std::atomic<bool>, kKeys> in_flight{};
  std::array<std::atomic<int>, kKeys> adds{};      // producer adds, counted before each Add
  std::array<std::atomic<int>, kKeys> max_seen{};  // largest `adds` a worker saw after Get
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      std::minstd_rand rng(static_cast<unsigned>(w));
      while (std::optional<std::string> key = q.Get()) {
        const int k = std::stoi(*key);
        if (in_flight[k].exchange(true)) ++overlaps;
        const int seen = adds[k].load();
        int prev = max_seen[k].load();
        while (prev < seen && !max_seen[k].compare_exchange_weak(prev, seen)) {
        }
        if (rng() % 4 == 0) q.Add(*key);  // re-add while holding it
        std::this_thread::yield();
        in_flight[k] = false;
        ++processed;
        q.Done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      std::minstd_rand rng(static_cast<unsigned>(100 + p));
      for (int i = 0; i < kAddsPerProducer; ++i) {
        const int k = static_cast<int>(rng() % kKeys);
        ++adds[k];
        q.Add(std::to_string(k));
        if (i % 64 == 0) std::this_thread::yield();
      }
    });
  }
  for (std::thread& t : producers) t.join();
  q.ShutDownWithDrain();
  for (std::thread& t : workers) t.join();

  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(processed.load(), 0);
  for (int k = 0; k < kKeys; ++k) {
    // Every key's last Add was followed by a Get of that key.
    EXPECT_EQ(max_seen[k].load(), adds[k].load()) << "key " << k;
  }
  EXPECT_EQ(q.Len(), 0u);
}

TEST(BackoffDelayTest, DoublesFromBaseUpToMax) {
  const BackoffPolicy policy;  // client-go's defaults
  EXPECT_EQ(policy.base, milliseconds(5));
  EXPECT_EQ(policy.max, seconds(1000));
  const std::vector<std::pair<int, milliseconds>> cases = {
      {-1, milliseconds(5)},       {0, milliseconds(5)},       {1, milliseconds(10)},
      {2, milliseconds(20)},       {3, milliseconds(40)},      {10, milliseconds(5120)},
      {17, milliseconds(655'360)}, {18, seconds(1000)},        {62, seconds(1000)},
      {63, seconds(1000)},         {1'000'000, seconds(1000)},
  };
  for (const auto& [requeues, want] : cases) {
    EXPECT_EQ(BackoffDelay(policy, requeues), want) << requeues;
  }
}

TEST(BackoffDelayTest, CustomPoliciesAndDegenerateOnes) {
  EXPECT_EQ(BackoffDelay({milliseconds(100), seconds(1)}, 3), milliseconds(800));
  EXPECT_EQ(BackoffDelay({milliseconds(100), seconds(1)}, 4), seconds(1));
  EXPECT_EQ(BackoffDelay({seconds(2), seconds(1)}, 0), seconds(1));  // max wins over base
  EXPECT_EQ(BackoffDelay({milliseconds(1), milliseconds::max()}, 62),
            milliseconds(int64_t{1} << 62));
  EXPECT_EQ(BackoffDelay({milliseconds(1), milliseconds::max()}, 63), milliseconds::max());
  EXPECT_EQ(BackoffDelay({milliseconds(3), milliseconds::max()}, 61),
            milliseconds(int64_t{3} << 61));
  EXPECT_EQ(BackoffDelay({milliseconds(3), milliseconds::max()}, 62), milliseconds::max());
  EXPECT_EQ(BackoffDelay({milliseconds(0), seconds(1)}, 5), milliseconds(0));
  EXPECT_EQ(BackoffDelay({milliseconds(-5), seconds(1)}, 5), milliseconds(0));
  EXPECT_EQ(BackoffDelay({milliseconds(5), milliseconds(0)}, 5), milliseconds(0));
}

// Waits for the key's next rate-limited add to come due and checks that it took exactly `delay`.
void ExpectDueAfter(WorkQueue& q, k8s::FakeClock& clock, const std::string& key,
                    milliseconds delay) {
  clock.Advance(delay - milliseconds(1));
  q.ProcessDue();
  EXPECT_EQ(q.Len(), 0u) << "due early; expected delay " << delay.count() << "ms";
  clock.Advance(milliseconds(1));
  q.ProcessDue();
  ASSERT_EQ(q.Len(), 1u) << "not due after " << delay.count() << "ms";
  EXPECT_EQ(TakeReady(q), key);
}

TEST(WorkQueueTest, RateLimitedAddsBackOffExponentiallyPerKey) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  EXPECT_EQ(TakeReady(q), "a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
  for (int i = 0; i < 6; ++i) {
    q.AddRateLimited("a");  // fails again
    EXPECT_EQ(q.NumRequeues("a"), i + 1);
    q.Done("a");
    ExpectDueAfter(q, clock, "a", milliseconds(5 << i));
  }
  // Another key has its own count.
  q.AddRateLimited("b");
  EXPECT_EQ(q.NumRequeues("b"), 1);
  ExpectDueAfter(q, clock, "b", milliseconds(5));
  q.Done("b");

  // Success: Forget resets the backoff.
  q.Forget("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
  q.AddRateLimited("a");
  q.Done("a");
  ExpectDueAfter(q, clock, "a", milliseconds(5));
  q.Done("a");
  EXPECT_EQ(q.NumRequeues("b"), 1);
}

TEST(WorkQueueTest, RateLimitedBackoffStopsAtMax) {
  k8s::FakeClock clock;
  WorkQueue q(clock, BackoffPolicy{milliseconds(100), milliseconds(250)});
  q.AddRateLimited("a");
  ExpectDueAfter(q, clock, "a", milliseconds(100));
  q.AddRateLimited("a");
  q.Done("a");
  ExpectDueAfter(q, clock, "a", milliseconds(200));
  q.AddRateLimited("a");
  q.Done("a");
  ExpectDueAfter(q, clock, "a", milliseconds(250));
  q.AddRateLimited("a");
  q.Done("a");
  ExpectDueAfter(q, clock, "a", milliseconds(250));
  EXPECT_EQ(q.NumRequeues("a"), 4);
}

TEST(WorkQueueTest, AddAfterWaitsForTheFakeClock) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", seconds(10));
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(seconds(9));
  q.ProcessDue();
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(seconds(1));
  EXPECT_EQ(q.Len(), 1u) << "a due key counts even before anything promotes it";
  EXPECT_EQ(TakeReady(q), "a");
  q.Done("a");
  clock.Advance(hours(1));
  q.ProcessDue();
  EXPECT_EQ(q.Len(), 0u) << "a delayed key is added once";
}

TEST(WorkQueueTest, AddAfterWakesABlockedWorkerOnProcessDue) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  q.AddAfter("a", hours(1));
  clock.Advance(hours(1));
  q.ProcessDue();
  worker.join();
  EXPECT_EQ(got, "a");
}

// Get waits for a delayed key on the injected clock: a FakeClock's Advance to the due time wakes
// it, without ProcessDue and without real time passing.
TEST(WorkQueueTest, ABlockedWorkerWaitsForADelayedKeyOnTheClock) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", hours(1));
  std::optional<std::string> got;
  std::thread worker([&] { got = q.Get(); });
  while (clock.Waiters() < 1) std::this_thread::yield();  // the worker sleeps on the clock
  clock.Advance(minutes(59));
  EXPECT_EQ(clock.Waiters(), 1) << "not due yet";
  clock.Advance(minutes(1));
  worker.join();
  EXPECT_EQ(got, "a");
}

TEST(WorkQueueTest, AddAfterKeepsTheSoonerTime) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", seconds(10));
  q.AddAfter("a", seconds(5));
  q.AddAfter("a", seconds(20));
  clock.Advance(milliseconds(4'999));
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(milliseconds(1));
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(TakeReady(q), "a");
  q.Done("a");
  clock.Advance(seconds(60));
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, AddAfterWithAnEnormousDelayNeverComesDue) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", milliseconds::max());
  clock.Advance(hours(24 * 365 * 100));  // a century (monotonic time counts nanoseconds: ~292 years in all)
  q.ProcessDue();
  EXPECT_EQ(q.Len(), 0u);
  q.AddAfter("a", seconds(1));  // sooner wins
  clock.Advance(seconds(1));
  EXPECT_EQ(q.Len(), 1u);
}

TEST(WorkQueueTest, AddAfterWithoutDelayAddsNow) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", milliseconds(0));
  q.AddAfter("b", milliseconds(-5));
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(TakeReady(q), "a");
  EXPECT_EQ(TakeReady(q), "b");
}

TEST(WorkQueueTest, DueKeysComeOutInDueOrderAndDedupWithQueuedOnes) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("late", seconds(3));
  q.AddAfter("early", seconds(1));
  q.AddAfter("tie-1", seconds(2));
  q.AddAfter("tie-2", seconds(2));
  q.Add("tie-2");  // already queued when its delay ends: still handed out once
  clock.Advance(seconds(3));
  q.ProcessDue();
  EXPECT_EQ(q.Len(), 4u);
  EXPECT_EQ(TakeReady(q), "tie-2");
  EXPECT_EQ(TakeReady(q), "early");
  EXPECT_EQ(TakeReady(q), "tie-1");
  EXPECT_EQ(TakeReady(q), "late");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, DelayedKeyComingDueWhileProcessingWaitsForDone) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  EXPECT_EQ(TakeReady(q), "a");
  q.AddAfter("a", seconds(1));
  clock.Advance(seconds(1));
  q.ProcessDue();
  EXPECT_EQ(q.Len(), 0u);
  q.Done("a");
  EXPECT_EQ(TakeReady(q), "a");
}

TEST(WorkQueueTest, GetWakesForADelayedKeyOnARealClock) {
  k8s::SystemClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", milliseconds(2));
  EXPECT_EQ(q.Get(), "a");  // no ProcessDue: Get's own timer notices
}

TEST(WorkQueueTest, ShutDownUnblocksEveryGet) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  std::vector<std::optional<std::string>> got(3, std::string("unset"));
  std::vector<std::thread> workers;
  for (size_t i = 0; i < got.size(); ++i) workers.emplace_back([&, i] { got[i] = q.Get(); });
  q.ShutDown();
  for (std::thread& t : workers) t.join();
  for (const auto& g : got) EXPECT_EQ(g, std::nullopt);
  EXPECT_TRUE(q.ShuttingDown());
  EXPECT_EQ(q.Get(), std::nullopt);
}

TEST(WorkQueueTest, ShutDownUnblocksAGetWaitingForADelayedKey) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", hours(1));
  std::optional<std::string> got = "unset";
  std::thread worker([&] { got = q.Get(); });
  q.ShutDown();
  worker.join();
  EXPECT_EQ(got, std::nullopt);
  clock.Advance(hours(2));
  EXPECT_EQ(q.Len(), 0u) << "delayed keys are dropped on shutdown";
}

TEST(WorkQueueTest, AfterShutDownQueuedKeysDrainAndNewKeysAreIgnored) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  EXPECT_FALSE(q.ShuttingDown());
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(TakeReady(q), "a");
  q.Add("a");  // marked while processing
  q.ShutDown();
  q.ShutDown();  // idempotent
  q.Add("c");
  q.AddAfter("d", milliseconds(0));
  q.AddRateLimited("e");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "b");
  q.Done("b");
  q.Done("a");  // the earlier re-add still counts
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  EXPECT_EQ(q.Get(), std::nullopt);
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForKeysInFlight) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  EXPECT_EQ(TakeReady(q), "a");
  std::atomic<bool> returned{false};
  std::thread closer([&] {
    q.ShutDownWithDrain();
    returned = true;
  });
  // Once shutdown has begun, Add is ignored; wait for that without sleeping for long.
  while (!q.ShuttingDown()) std::this_thread::yield();
  EXPECT_FALSE(returned.load()) << "returned while a key was still being processed";
  q.Done("a");
  closer.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(q.Get(), std::nullopt);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForQueuedAndReaddedKeys) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(TakeReady(q), "a");
  q.Add("a");  // re-added while processing
  std::atomic<bool> returned{false};
  std::thread closer([&] {
    q.ShutDownWithDrain();
    returned = true;
  });
  while (!q.ShuttingDown()) std::this_thread::yield();
  std::vector<std::string> order;
  q.Done("a");
  while (std::optional<std::string> key = q.Get()) {
    EXPECT_FALSE(returned.load());
    order.push_back(*key);
    q.Done(*key);
  }
  closer.join();
  EXPECT_TRUE(returned.load());
  EXPECT_EQ(order, (std::vector<std::string>{"b", "a"}));
}

TEST(WorkQueueTest, ShutDownWithDrainReturnsAtOnceWhenIdle) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  q.AddAfter("a", seconds(1));  // waiting keys are dropped, not waited for
  q.ShutDownWithDrain();
  EXPECT_TRUE(q.ShuttingDown());
  EXPECT_EQ(q.Get(), std::nullopt);
}

// TryGet (a caller that drives the queue itself) never blocks: a ready key, else nothing; a
// delayed key once the clock passes its time; the key is held until Done as with Get.
TEST(WorkQueueTest, TryGetHandsOutReadyKeysWithoutBlocking) {
  k8s::FakeClock clock;
  WorkQueue q(clock);
  EXPECT_EQ(q.TryGet(), std::nullopt);
  q.Add("a");
  q.AddAfter("later", seconds(1));
  EXPECT_EQ(q.TryGet(), "a");
  EXPECT_EQ(q.TryGet(), std::nullopt) << "later is not due";
  q.Add("a");  // while held: handed out again after Done
  EXPECT_EQ(q.TryGet(), std::nullopt);
  q.Done("a");
  EXPECT_EQ(q.TryGet(), "a");
  q.Done("a");
  clock.Advance(seconds(1));
  EXPECT_EQ(q.TryGet(), "later");
  q.Done("later");
  EXPECT_EQ(q.TryGet(), std::nullopt);
}

}  // namespace
}  // namespace berth::reconcilers
