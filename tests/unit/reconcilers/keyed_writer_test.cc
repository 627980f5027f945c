#include "reconcilers/writers/keyed_writer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "k8s/clock.h"

namespace berth::reconcilers {
namespace {

using std::chrono::milliseconds;
using Outcome = KeyedWriter::Outcome;

// Polls `pred` for up to 20 s of real time (the workers are real threads); no timing assertion.
bool Eventually(const std::function<bool()>& pred) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return pred();
}

// A gate a write can wait on, so a test holds a write in flight as long as it likes.
class Gate {
 public:
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

// Records every on_done call.
struct Done {
  std::mutex mu;
  std::vector<std::pair<std::string, Outcome>> calls;
  KeyedWriter::OnDone Fn() {
    return [this](const std::string& key, Outcome o) {
      std::lock_guard<std::mutex> lock(mu);
      calls.emplace_back(key, o);
    };
  }
  size_t Count(const std::string& key, Outcome o) {
    std::lock_guard<std::mutex> lock(mu);
    size_t n = 0;
    for (auto& [k, got] : calls) n += k == key && got == o;
    return n;
  }
};

KeyedWriter::Options Small(int decisions = 2, int background = 1) {
  return KeyedWriter::Options{decisions, background, BackoffPolicy{milliseconds(100), milliseconds(1000)}};
}

TEST(KeyedWriterTest, OneWritePerKeyQueuedOrInFlight) {
  k8s::FakeClock clock;
  Done done;
  KeyedWriter w(clock, Small(), done.Fn());
  w.Start();
  Gate gate;
  std::atomic<int> ran{0};
  ASSERT_TRUE(w.Dispatch("ns/a", [&] { gate.Wait(); ++ran; return true; }));
  EXPECT_TRUE(w.Busy("ns/a"));
  EXPECT_FALSE(w.Dispatch("ns/a", [&] { ++ran; return true; })) << "a second write for a busy key";
  EXPECT_FALSE(w.Dispatch("ns/a", [&] { ++ran; return true; }, /*background=*/true));
  std::atomic<bool> other{false};
  ASSERT_TRUE(w.Dispatch("ns/b", [&] { other = true; return true; })) << "another key is not held up";
  EXPECT_TRUE(Eventually([&] { return other.load(); }));
  gate.Open();
  EXPECT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kWritten) == 1; }));
  EXPECT_FALSE(w.Busy("ns/a"));
  EXPECT_EQ(ran.load(), 1);
  ASSERT_TRUE(w.Dispatch("ns/a", [&] { ++ran; return true; })) << "free again once written";
  EXPECT_TRUE(Eventually([&] { return ran.load() == 2; }));
}

TEST(KeyedWriterTest, AFailedWriteBacksOffWithTheWorkqueuesDoublingDelay) {
  k8s::FakeClock clock;
  Done done;
  KeyedWriter w(clock, Small(), done.Fn());
  w.Start();
  auto fail = [] { return false; };
  ASSERT_TRUE(w.Dispatch("ns/a", fail));
  ASSERT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kFailed) == 1; }));
  EXPECT_TRUE(w.BackingOff("ns/a"));
  EXPECT_FALSE(w.Busy("ns/a")) << "backing off is not a write in flight";
  EXPECT_FALSE(w.Dispatch("ns/a", [] { return true; })) << "refused while backing off";

  // First failure: 100 ms.
  clock.Advance(milliseconds(99));
  w.ProcessDue();
  EXPECT_TRUE(w.BackingOff("ns/a"));
  clock.Advance(milliseconds(1));
  w.ProcessDue();
  ASSERT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kBackoffOver) == 1; }));
  EXPECT_FALSE(w.BackingOff("ns/a"));

  // Second failure in a row: 200 ms.
  ASSERT_TRUE(w.Dispatch("ns/a", fail));
  ASSERT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kFailed) == 2; }));
  clock.Advance(milliseconds(150));
  w.ProcessDue();
  EXPECT_TRUE(w.BackingOff("ns/a"));
  EXPECT_EQ(done.Count("ns/a", Outcome::kBackoffOver), 1u);
  clock.Advance(milliseconds(50));
  w.ProcessDue();
  ASSERT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kBackoffOver) == 2; }));

  // A success resets the delay: the next failure backs off 100 ms again.
  ASSERT_TRUE(w.Dispatch("ns/a", [] { return true; }));
  ASSERT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kWritten) == 1; }));
  ASSERT_TRUE(w.Dispatch("ns/a", fail));
  ASSERT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kFailed) == 3; }));
  clock.Advance(milliseconds(100));
  w.ProcessDue();
  ASSERT_TRUE(Eventually([&] { return done.Count("ns/a", Outcome::kBackoffOver) == 3; }));
  EXPECT_TRUE(w.Dispatch("ns/a", [] { return true; }));
}

// Dispatches a refresh of ns/x that holds a writer's only background worker until `gate` opens,
// and waits until it does.
void HoldTheBackgroundWorker(KeyedWriter& w, Gate& gate) {
  auto started = std::make_shared<std::atomic<bool>>(false);
  ASSERT_TRUE(w.Dispatch("ns/x", [started, &gate] { *started = true; gate.Wait(); return true; }, true));
  ASSERT_TRUE(Eventually([&] { return started->load(); }));
}

// Also what BackgroundQueued counts: refreshes no worker has taken yet.
TEST(KeyedWriterTest, BackgroundWritesNeverHoldUpDecisionsAndADecisionReplacesAWaitingOne) {
  k8s::FakeClock clock;
  Done done;
  KeyedWriter w(clock, Small(/*decisions=*/1, /*background=*/1), done.Fn());
  w.Start();
  Gate gate;
  // The only background worker is held by a refresh of ns/x ...
  ASSERT_NO_FATAL_FAILURE(HoldTheBackgroundWorker(w, gate));
  EXPECT_EQ(w.BackgroundQueued(), 0u) << "taken by the worker: in flight, not queued";
  // ... so a refresh of ns/a waits for it.
  std::atomic<bool> refresh_ran{false}, decision_ran{false};
  ASSERT_TRUE(w.Dispatch("ns/a", [&] { refresh_ran = true; return true; }, true));
  EXPECT_FALSE(w.Dispatch("ns/a", [&] { refresh_ran = true; return true; }, true)) << "one refresh per key";
  EXPECT_EQ(w.BackgroundQueued(), 1u);
  // A decision for ns/b runs at once on the decision worker.
  std::atomic<bool> b_ran{false};
  ASSERT_TRUE(w.Dispatch("ns/b", [&] { b_ran = true; return true; }));
  EXPECT_TRUE(Eventually([&] { return b_ran.load(); }));
  // A decision for ns/a replaces its waiting refresh and does not wait for the background worker.
  ASSERT_TRUE(w.Dispatch("ns/a", [&] { decision_ran = true; return true; }));
  EXPECT_EQ(w.BackgroundQueued(), 0u) << "the replaced refresh is no longer queued";
  EXPECT_TRUE(Eventually([&] { return decision_ran.load(); }));
  gate.Open();
  EXPECT_TRUE(Eventually([&] { return done.Count("ns/x", Outcome::kWritten) == 1; }));
  w.Stop();
  EXPECT_FALSE(refresh_ran.load()) << "the replaced refresh must not run";
  EXPECT_EQ(done.Count("ns/a", Outcome::kWritten), 1u);
}

TEST(KeyedWriterTest, StopCarriesOutWhatIsQueuedThenRefusesEverything) {
  k8s::FakeClock clock;
  Done done;
  KeyedWriter w(clock, Small(/*decisions=*/1, /*background=*/1), done.Fn());
  std::atomic<int> ran{0};
  // Queued before the workers start: they wait for Start.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(w.Dispatch("ns/r" + std::to_string(i), [&] { ++ran; return true; }));
  EXPECT_EQ(w.BusyCount(), 20u);
  w.Start();
  w.Stop();
  EXPECT_EQ(ran.load(), 20);
  EXPECT_EQ(w.BusyCount(), 0u);
  EXPECT_FALSE(w.Dispatch("ns/late", [&] { ++ran; return true; }));
  w.Stop();  // idempotent
}

TEST(KeyedWriterTest, ManyThreadsNeverRunTwoWritesOfOneKeyAtOnce) {
  k8s::FakeClock clock;
  KeyedWriter w(clock, Small(/*decisions=*/4, /*background=*/2), nullptr);
  w.Start();
  constexpr int kKeys = 5;
  std::atomic<int> in_flight[kKeys];
  std::atomic<int> overlaps{0}, writes{0};
  for (auto& f : in_flight) f = 0;
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const int k = (i + t) % kKeys;
        (void)w.Dispatch("ns/k" + std::to_string(k), [&, k] {
          if (in_flight[k].fetch_add(1) != 0) ++overlaps;
          std::this_thread::yield();
          in_flight[k].fetch_sub(1);
          ++writes;
          return true;
        }, /*background=*/i % 3 == 0);
      }
    });
  }
  for (auto& c : callers) c.join();
  w.Stop();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(writes.load(), 0);
  EXPECT_EQ(w.BusyCount(), 0u);
}

// Without workers (a stepped engine), RunQueued carries the writes out on the caller's thread,
// decisions before background writes, under the same contract: a failed write backs off on the
// clock and its key takes no write until the clock passes the backoff; on_done is called as by
// the workers. With workers started it leaves the writes to them.
TEST(KeyedWriterTest, RunQueuedCarriesOutTheWritesOnTheCallersThread) {
  k8s::FakeClock clock;
  Done done;
  KeyedWriter w(clock, Small(), done.Fn());
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::string> order;
  auto write = [&](const std::string& name, bool ok) {
    return [&, name, ok] {
      EXPECT_EQ(std::this_thread::get_id(), caller);
      order.push_back(name);
      return ok;
    };
  };
  ASSERT_TRUE(w.Dispatch("refresh", write("refresh", true), /*background=*/true));
  ASSERT_TRUE(w.Dispatch("admit", write("admit", true)));
  ASSERT_TRUE(w.Dispatch("fails", write("fails", false)));
  EXPECT_EQ(w.RunQueued(), 3u);
  EXPECT_EQ(order, (std::vector<std::string>{"admit", "fails", "refresh"}));
  EXPECT_EQ(w.BusyCount(), 0u);
  EXPECT_TRUE(w.BackingOff("fails"));
  EXPECT_EQ(done.Count("fails", Outcome::kFailed), 1u);
  EXPECT_FALSE(w.Dispatch("fails", write("fails", true)));
  EXPECT_EQ(w.RunQueued(), 0u) << "the clock has not moved";
  EXPECT_TRUE(w.BackingOff("fails"));
  clock.Advance(milliseconds(100));
  EXPECT_EQ(w.RunQueued(), 0u);  // ends the backoff, runs nothing
  EXPECT_FALSE(w.BackingOff("fails"));
  EXPECT_EQ(done.Count("fails", Outcome::kBackoffOver), 1u);
  ASSERT_TRUE(w.Dispatch("fails", write("fails", true)));
  EXPECT_EQ(w.RunQueued(), 1u);
  EXPECT_EQ(done.Count("fails", Outcome::kWritten), 1u);

  w.Start();
  Gate gate;
  ASSERT_TRUE(w.Dispatch("threaded", [&] {
    gate.Wait();
    return true;
  }));
  EXPECT_EQ(w.RunQueued(), 0u) << "the workers' write";
  gate.Open();
  w.Stop();
  EXPECT_EQ(done.Count("threaded", Outcome::kWritten), 1u);
}

}  // namespace
}  // namespace berth::reconcilers
