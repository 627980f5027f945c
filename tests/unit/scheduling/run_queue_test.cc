#include "scheduling/run_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace berth::scheduling {
namespace {

using std::chrono::minutes;

const TimePoint kT0 = TimePoint(Duration(1'700'000'000'000));

PendingRun Pending(std::string id, int32_t priority, TimePoint submitted) {
  PendingRun r;
  r.id = std::move(id);
  r.priority = priority;
  r.submitted_at = submitted;
  return r;
}

std::vector<std::string> Order(const RunQueue& q) {
  std::vector<std::string> out;
  for (RunQueue::Item item : q) out.push_back(item.run.id);
  return out;
}

TEST(RunQueue, OrdersByPriorityThenSubmissionThenId) {
  RunQueue q(Duration(0));
  q.Upsert(Pending("ns/dev", 30, kT0));
  q.Upsert(Pending("ns/train", 50, kT0 + minutes(1)));
  q.Upsert(Pending("ns/ab", 70, kT0 + minutes(2)));
  q.Upsert(Pending("ns/hotfix", 90, kT0 + minutes(3)));
  q.Upsert(Pending("ns/b-same", 50, kT0 + minutes(1)));
  q.Upsert(Pending("ns/early", 50, kT0 - minutes(1)));
  q.AdvanceTo(kT0 + minutes(5));
  EXPECT_EQ(Order(q), (std::vector<std::string>{"ns/hotfix", "ns/ab", "ns/early", "ns/b-same",
                                                "ns/train", "ns/dev"}));
  EXPECT_EQ(q.Position("ns/hotfix"), 1);
  EXPECT_EQ(q.Position("ns/b-same"), 4);
  EXPECT_EQ(q.Position("ns/dev"), 6);
  EXPECT_EQ(q.Position("ns/missing"), std::nullopt);
}

TEST(RunQueue, PriorityChangeMovesRunAtOnce) {
  RunQueue q(minutes(15));
  q.AdvanceTo(kT0);
  for (int i = 0; i < 5; ++i) q.Upsert(Pending("ns/r" + std::to_string(i), 50, kT0 + minutes(i)));
  EXPECT_EQ(q.Position("ns/r4"), 5);
  ASSERT_TRUE(q.SetPriority("ns/r4", 90));
  EXPECT_EQ(q.Position("ns/r4"), 1);
  EXPECT_EQ(q.EffectivePriority("ns/r4"), 90);
  ASSERT_TRUE(q.SetPriority("ns/r4", 10));
  EXPECT_EQ(q.Position("ns/r4"), 5);
  EXPECT_FALSE(q.SetPriority("ns/none", 1));
}

TEST(RunQueue, PriorityIsClampedAndNodesAtLeastOne) {
  RunQueue q(Duration(0));
  PendingRun r = Pending("ns/x", 250, kT0);
  r.nodes = 0;
  q.Upsert(r);
  EXPECT_EQ(q.Find("ns/x")->priority, 100);
  EXPECT_EQ(q.Find("ns/x")->nodes, 1);
  q.SetPriority("ns/x", -3);
  EXPECT_EQ(q.EffectivePriority("ns/x"), 0);
}

TEST(RunQueue, AgingRaisesEffectivePriorityByElapsedIntervals) {
  RunQueue q(minutes(15));
  q.Upsert(Pending("ns/a", 30, kT0));
  q.AdvanceTo(kT0 + minutes(14));
  EXPECT_EQ(q.EffectivePriority("ns/a"), 30);
  q.AdvanceTo(kT0 + minutes(15));
  EXPECT_EQ(q.EffectivePriority("ns/a"), 31);
  q.AdvanceTo(kT0 + minutes(15 * 40 + 3));  // a jump over many intervals at once
  EXPECT_EQ(q.EffectivePriority("ns/a"), 70);
  q.AdvanceTo(kT0 + minutes(15 * 500));
  EXPECT_EQ(q.EffectivePriority("ns/a"), 100);  // capped
  EXPECT_EQ(q.NextChangeAt(), std::nullopt);
}

// EffectiveAt: what Upsert would give a run, queued or not (the engine shows a priority patch in
// its queue view with it before the pass re-places the run).
TEST(RunQueue, EffectiveAtIsWhatUpsertGives) {
  RunQueue q(minutes(15));
  q.AdvanceTo(kT0 + minutes(15 * 3 + 2));
  EXPECT_EQ(q.EffectiveAt(30, kT0), 33);
  EXPECT_EQ(q.EffectiveAt(99, kT0), 100);
  EXPECT_EQ(q.EffectiveAt(250, kT0), 100);  // clamped
  EXPECT_EQ(q.EffectiveAt(-5, kT0), 3);
  EXPECT_EQ(q.EffectiveAt(30, kT0 + minutes(60)), 30);  // submitted in the future: no aging
  q.Upsert(Pending("ns/a", 42, kT0 + minutes(1)));
  EXPECT_EQ(q.EffectivePriority("ns/a"), q.EffectiveAt(42, kT0 + minutes(1)));
  RunQueue off(Duration(0));
  off.AdvanceTo(kT0 + minutes(15 * 1000));
  EXPECT_EQ(off.EffectiveAt(30, kT0), 30);
}

TEST(RunQueue, AgingOffKeepsBasePriority) {
  RunQueue q(Duration(0));
  q.Upsert(Pending("ns/a", 30, kT0));
  q.AdvanceTo(kT0 + minutes(15 * 1000));
  EXPECT_EQ(q.EffectivePriority("ns/a"), 30);
  EXPECT_EQ(q.NextChangeAt(), std::nullopt);
}

// The case a static sort key gets wrong: the two runs swap places every interval.
TEST(RunQueue, AgingFlipsOrderBetweenDifferentBasePriorities) {
  RunQueue q(minutes(15));
  q.Upsert(Pending("ns/p50", 50, kT0));
  q.Upsert(Pending("ns/p51", 51, kT0 + minutes(14)));
  const std::vector<std::string> p51_first = {"ns/p51", "ns/p50"};
  const std::vector<std::string> p50_first = {"ns/p50", "ns/p51"};
  q.AdvanceTo(kT0 + minutes(14));
  EXPECT_EQ(Order(q), p51_first);  // 51 vs 50
  q.AdvanceTo(kT0 + minutes(15));
  EXPECT_EQ(Order(q), p50_first);  // 51 vs 51: earlier submission wins
  q.AdvanceTo(kT0 + minutes(29));
  EXPECT_EQ(Order(q), p51_first);  // 52 vs 51
  q.AdvanceTo(kT0 + minutes(30));
  EXPECT_EQ(Order(q), p50_first);  // 52 vs 52
}

TEST(RunQueue, NextChangeAtIsTheEarliestStepBoundary) {
  RunQueue q(minutes(15));
  q.AdvanceTo(kT0);
  q.Upsert(Pending("ns/a", 30, kT0 - minutes(20)));  // effective 31, next step at +10m
  q.Upsert(Pending("ns/b", 30, kT0));                // next step at +15m
  EXPECT_EQ(q.EffectivePriority("ns/a"), 31);
  EXPECT_EQ(q.NextChangeAt(), kT0 + minutes(10));
}

TEST(RunQueue, ClockGoingBackIsIgnored) {
  RunQueue q(minutes(15));
  q.Upsert(Pending("ns/a", 30, kT0));
  q.AdvanceTo(kT0 + minutes(30));
  q.AdvanceTo(kT0);
  EXPECT_EQ(q.now(), kT0 + minutes(30));
  EXPECT_EQ(q.EffectivePriority("ns/a"), 32);
}

TEST(RunQueue, SubmittedInTheFutureHasNotWaited) {
  RunQueue q(minutes(15));
  q.AdvanceTo(kT0);
  q.Upsert(Pending("ns/a", 30, kT0 + minutes(60)));
  EXPECT_EQ(q.EffectivePriority("ns/a"), 30);
  q.AdvanceTo(kT0 + minutes(75));
  EXPECT_EQ(q.EffectivePriority("ns/a"), 31);
}

TEST(RunQueue, UpsertReplacesFieldsAndReordersOnlyWhenNeeded) {
  RunQueue q(Duration(0));
  q.Upsert(Pending("ns/a", 50, kT0));
  q.Upsert(Pending("ns/b", 50, kT0 + minutes(1)));
  PendingRun a = Pending("ns/a", 50, kT0);
  a.nodes = 4;
  a.fleets = {"a100"};
  q.Upsert(a);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(*q.Find("ns/a"), a);
  EXPECT_EQ(q.Position("ns/a"), 1);
  a.submitted_at = kT0 + minutes(2);  // e.g. a corrected creation time
  q.Upsert(a);
  EXPECT_EQ(q.Position("ns/a"), 2);
}

TEST(RunQueue, RemoveForgetsTheRun) {
  RunQueue q(minutes(15));
  q.Upsert(Pending("ns/a", 50, kT0));
  q.Upsert(Pending("ns/b", 40, kT0));
  EXPECT_TRUE(q.Remove("ns/a"));
  EXPECT_FALSE(q.Remove("ns/a"));
  EXPECT_FALSE(q.Contains("ns/a"));
  EXPECT_EQ(q.Find("ns/a"), nullptr);
  EXPECT_EQ(q.Position("ns/b"), 1);
  q.AdvanceTo(kT0 + minutes(60));  // the removed run's aging event must be gone too
  EXPECT_EQ(Order(q), std::vector<std::string>{"ns/b"});
}

// Random operations against a brute-force model: after every step the order, every position
// and every effective priority equal a full sort from scratch.
// version() tells a caller whether a cycle over the queue would see the same queue: it moves with
// every change that can move a run or change what it asks for, and with nothing else.
TEST(RunQueue, VersionMovesWithEveryChangeAndOnlyThen) {
  RunQueue q(minutes(15));
  const uint64_t v0 = q.version();
  q.Upsert(Pending("ns/a", 50, kT0));
  q.Upsert(Pending("ns/b", 40, kT0));
  const uint64_t v1 = q.version();
  EXPECT_GT(v1, v0) << "inserts";
  // Reads and no-ops leave it.
  q.AdvanceTo(kT0 + minutes(1));  // no run crosses an aging step
  EXPECT_EQ(q.Position("ns/a"), 1);
  EXPECT_NE(q.Find("ns/b"), nullptr);
  EXPECT_TRUE(q.SetPriority("ns/a", 50));
  EXPECT_FALSE(q.Remove("ns/none"));
  EXPECT_EQ(q.version(), v1);
  // A priority change, a change of what the run asks for, an aging step, a removal: each moves it.
  uint64_t before = q.version();
  q.SetPriority("ns/b", 45);
  EXPECT_GT(q.version(), before) << "priority";
  before = q.version();
  PendingRun bigger = *q.Find("ns/a");
  bigger.nodes = 4;
  q.Upsert(bigger);
  EXPECT_GT(q.version(), before) << "request";
  before = q.version();
  q.AdvanceTo(kT0 + minutes(16));  // both runs gain a priority
  EXPECT_GT(q.version(), before) << "aging";
  before = q.version();
  EXPECT_TRUE(q.Remove("ns/a"));
  EXPECT_GT(q.version(), before) << "removal";
}

TEST(RunQueueProperty, MatchesBruteForceSort) {
  struct Model {
    PendingRun run;
  };
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    std::mt19937 rng(seed);
    const Duration interval = seed % 2 == 0 ? Duration(0) : minutes(15);
    RunQueue q(interval);
    std::vector<PendingRun> model;
    TimePoint now = kT0;
    q.AdvanceTo(now);
    auto effective = [&](const PendingRun& r) {
      if (interval.count() == 0 || now <= r.submitted_at) return r.priority;
      return static_cast<int32_t>(
          std::min<int64_t>(100, r.priority + (now - r.submitted_at) / interval));
    };
    for (int step = 0; step < 600; ++step) {
      const int op = std::uniform_int_distribution<int>(0, 9)(rng);
      if (op <= 3 || model.empty()) {
        PendingRun r = Pending("ns/r" + std::to_string(rng() % 200),
                           std::uniform_int_distribution<int>(0, 100)(rng),
                           now - minutes(std::uniform_int_distribution<int>(0, 120)(rng)));
        auto it = std::find_if(model.begin(), model.end(),
                               [&](const PendingRun& m) { return m.id == r.id; });
        if (it == model.end()) {
          model.push_back(r);
        } else {
          *it = r;
        }
        q.Upsert(r);
      } else if (op <= 5) {
        PendingRun& m = model[rng() % model.size()];
        m.priority = std::uniform_int_distribution<int>(0, 100)(rng);
        ASSERT_TRUE(q.SetPriority(m.id, m.priority));
      } else if (op <= 7) {
        const size_t i = rng() % model.size();
        ASSERT_TRUE(q.Remove(model[i].id));
        model.erase(model.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        now += Duration(std::uniform_int_distribution<int64_t>(0, 40 * 60'000)(rng));
        q.AdvanceTo(now);
      }

      std::vector<std::tuple<int32_t, TimePoint, std::string>> expected;
      for (const PendingRun& m : model) expected.emplace_back(-effective(m), m.submitted_at, m.id);
      std::sort(expected.begin(), expected.end());
      ASSERT_EQ(q.size(), expected.size());
      std::vector<std::string> got = Order(q);
      for (size_t i = 0; i < expected.size(); ++i) {
        const std::string& id = std::get<2>(expected[i]);
        ASSERT_EQ(got[i], id) << "seed " << seed << " step " << step;
        ASSERT_EQ(q.Position(id), static_cast<int64_t>(i + 1));
        ASSERT_EQ(q.EffectivePriority(id), -std::get<0>(expected[i]));
      }
    }
  }
}

}  // namespace
}  // namespace berth::scheduling
