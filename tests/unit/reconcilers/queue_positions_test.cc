#include "reconcilers/writers/queue_positions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace berth::reconcilers {
namespace {

using Shown = std::unordered_map<std::string, int64_t>;

// Applies `moves` one at a time as the writer does; fails the test when any intermediate state
// shows a place twice.
Shown Apply(Shown state, const std::vector<PositionMove>& moves) {
  for (const auto& m : moves) {
    if (m.to) {
      state[m.key] = *m.to;
    } else {
      state.erase(m.key);
    }
    std::map<int64_t, std::string> by_place;
    for (const auto& [key, pos] : state) {
      auto [it, fresh] = by_place.emplace(pos, key);
      EXPECT_TRUE(fresh) << "after " << m.key << " -> " << (m.to ? std::to_string(*m.to) : "none") << ": " << key
                         << " and " << it->second << " both show " << pos;
    }
  }
  return state;
}

std::string Describe(const std::vector<PositionMove>& moves) {
  std::string s;
  for (const auto& m : moves) s += m.key + "->" + (m.to ? std::to_string(*m.to) : "none") + " ";
  return s;
}

TEST(QueuePositions, NothingToDoWhenEveryRunShowsItsPlace) {
  PositionPlanInput in;
  in.top = {"a", "b", "c"};
  in.shown = {{"a", 1}, {"b", 2}, {"c", 3}};
  EXPECT_TRUE(PlanPositionMoves(in, 100).empty());
}

TEST(QueuePositions, NewRunsGetTheirPlacesTopFirst) {
  PositionPlanInput in;
  in.top = {"a", "b", "c"};
  EXPECT_EQ(Describe(PlanPositionMoves(in, 100)), "a->1 b->2 c->3 ");
}

// The head was admitted (its own write cleared its place): everyone moves up, from the top.
TEST(QueuePositions, HeadLeavesEveryoneMovesUpFromTheTop) {
  PositionPlanInput in;
  in.top = {"b", "c", "d"};
  in.shown = {{"b", 2}, {"c", 3}, {"d", 4}};
  EXPECT_EQ(Describe(PlanPositionMoves(in, 100)), "b->1 c->2 d->3 ");
}

// While the admitted head still shows place 1 (its write is in flight), nobody takes it.
TEST(QueuePositions, APlaceStillShownByARunThatIsLeavingStaysTaken) {
  PositionPlanInput in;
  in.top = {"b", "c"};
  in.shown = {{"head", 1}, {"b", 2}, {"c", 3}};
  EXPECT_TRUE(PlanPositionMoves(in, 100).empty());
}

// A run inserted at the head: everyone moves down, from the bottom; the last place beyond the
// limit is cleared first.
TEST(QueuePositions, InsertedRunMovesEveryoneDownFromTheBottom) {
  PositionPlanInput in;
  in.top = {"new", "a", "b"};
  in.clear = {"c"};
  in.shown = {{"a", 1}, {"b", 2}, {"c", 3}};
  EXPECT_EQ(Describe(PlanPositionMoves(in, 100)), "c->none b->3 a->2 new->1 ");
}

// A priority patch moves a run from 3 to 1: a cycle of three; its top member steps out first.
TEST(QueuePositions, ACycleIsBrokenByItsTopMemberSteppingOutFirst) {
  PositionPlanInput in;
  in.top = {"c", "a", "b"};
  in.shown = {{"a", 1}, {"b", 2}, {"c", 3}};
  auto moves = PlanPositionMoves(in, 100);
  EXPECT_EQ(Describe(moves), "c->none b->3 a->2 c->1 ");
  Shown end = Apply(in.shown, moves);
  EXPECT_EQ(end, (Shown{{"c", 1}, {"a", 2}, {"b", 3}}));
}

TEST(QueuePositions, AFrozenRunKeepsItsPlaceAndWhoeverNeedsItWaits) {
  PositionPlanInput in;
  in.top = {"b", "a"};
  in.shown = {{"a", 1}, {"b", 2}};
  in.frozen = {"a"};
  // b cannot take 1 while a shows it; a must not be written.
  EXPECT_TRUE(PlanPositionMoves(in, 100).empty());
  in.frozen.clear();
  EXPECT_EQ(Describe(PlanPositionMoves(in, 100)), "b->none a->2 b->1 ");
}

TEST(QueuePositions, DuplicatesLeftByAnOlderWriterAreRepaired) {
  PositionPlanInput in;
  in.top = {"a", "b", "c"};
  in.shown = {{"a", 1}, {"b", 1}, {"c", 1}};
  auto moves = PlanPositionMoves(in, 100);
  Shown end = in.shown;
  for (const auto& m : moves) end[m.key] = *m.to;
  EXPECT_EQ(end, (Shown{{"a", 1}, {"b", 2}, {"c", 3}})) << Describe(moves);
}

TEST(QueuePositions, TheBudgetCutsThePlanAndTheRestFollowsLater) {
  PositionPlanInput in;
  for (int i = 0; i < 10; ++i) {
    in.top.push_back("r" + std::to_string(i));
    in.shown["r" + std::to_string(i)] = i + 2;  // the head left: everyone moves up one
  }
  auto first = PlanPositionMoves(in, 4);
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(Describe(first), "r0->1 r1->2 r2->3 r3->4 ");
  in.shown = Apply(in.shown, first);
  auto rest = PlanPositionMoves(in, 100);
  EXPECT_EQ(rest.size(), 6u);
  in.shown = Apply(in.shown, rest);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(in.shown.at("r" + std::to_string(i)), i + 1);
}

// Random queues, random shown places, random frozen runs and budgets: every prefix of every plan
// keeps places unique, and repeated plans (frozen runs thawing) reach the true order.
TEST(QueuePositions, RandomReorderingsStayUniqueAndConverge) {
  std::mt19937 rng(14);
  for (int round = 0; round < 2000; ++round) {
    const int n = 1 + static_cast<int>(rng() % 30);
    const int limit = 1 + static_cast<int>(rng() % 25);
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back("k" + std::to_string(i));
    // Shown: a random injective assignment of places 1..n+3 to a random subset.
    std::vector<int64_t> places;
    for (int i = 1; i <= n + 3; ++i) places.push_back(i);
    std::shuffle(places.begin(), places.end(), rng);
    Shown shown;
    for (int i = 0; i < n; ++i) {
      if (rng() % 5 != 0) shown[keys[i]] = places[i];
    }
    // Some runs are leaving (not queued) and keep their place until their own write.
    std::vector<std::string> queued, leaving;
    for (const auto& k : keys) (rng() % 8 == 0 ? leaving : queued).push_back(k);
    std::shuffle(queued.begin(), queued.end(), rng);
    PositionPlanInput in;
    for (size_t i = 0; i < queued.size(); ++i) (static_cast<int>(i) < limit ? in.top : in.clear).push_back(queued[i]);
    for (const auto& k : keys) {
      if (rng() % 6 == 0) in.frozen.insert(k);
    }
    in.shown = shown;
    for (int step = 0; step < 50; ++step) {
      auto moves = PlanPositionMoves(in, 1 + rng() % 40);
      in.shown = Apply(in.shown, moves);
      if (step == 2) in.frozen.clear();
      if (step == 3) {
        for (const auto& k : leaving) in.shown.erase(k);  // their writes landed
      }
      if (moves.empty() && step > 3) break;
    }
    ASSERT_FALSE(::testing::Test::HasFailure()) << "round " << round;
    for (size_t i = 0; i < in.top.size(); ++i) {
      ASSERT_EQ(in.shown.count(in.top[i]), 1u) << "round " << round << " " << in.top[i];
      EXPECT_EQ(in.shown.at(in.top[i]), static_cast<int64_t>(i) + 1) << "round " << round;
    }
    for (const auto& k : in.clear) EXPECT_EQ(in.shown.count(k), 0u) << "round " << round;
  }
}

TEST(QueuePositions, BudgetRefillsAtItsRateUpToItsBurst) {
  k8s::TimePoint t0(std::chrono::seconds(1000));
  PositionBudget budget(50, 50);
  EXPECT_EQ(budget.Available(t0), 50u);
  budget.Spend(50);
  EXPECT_EQ(budget.Available(t0), 0u);
  EXPECT_EQ(budget.Available(t0 + std::chrono::milliseconds(100)), 5u);
  EXPECT_EQ(budget.Available(t0 + std::chrono::seconds(10)), 50u);
  // A clock that steps back gives nothing extra.
  budget.Spend(50);
  EXPECT_EQ(budget.Available(t0), 0u);
}

}  // namespace
}  // namespace berth::reconcilers
