// Stage "reserve" (scheduling/reserve.h) on its own: when instances free up and which the
// reservation of a waiting run takes, on a hand-made cluster state.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fixtures.h"
#include "scheduling/reserve.h"

namespace berth::scheduling::internal {
namespace {

namespace t = berth::scheduling::testing;

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kMinute = 60'000;

// A cluster state of fleet f (4 blocks per instance) with the given instances, and the busy
// entries of the runs holding blocks on them (applied to the instances as the cycle does).
struct Cluster {
  ClusterSnapshot snapshot;  // the state points into it
  ClusterState state;
  std::vector<BusyEntry> running;
  std::vector<int32_t> candidates{0};
  std::vector<int32_t> need;
  std::vector<FleetFilter::LevelUse> levels;

  explicit Cluster(const std::vector<std::string>& names, PlacementPolicy placement = PlacementPolicy::kAny)
      : snapshot(Snapshot(names, placement)), state(snapshot, kNow) {
    need.assign(state.pools.size(), 1);
    levels.assign(state.fleets.size(), FleetFilter::LevelUse{});
  }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  static ClusterSnapshot Snapshot(const std::vector<std::string>& names, PlacementPolicy placement) {
    ClusterSnapshot s;
    s.fleets = {t::Fleet("f", BlocksSetting::Count(4), placement)};
    for (const std::string& n : names) s.instances.push_back(t::Instance(n, "f", t::Cpus(16)));
    return s;
  }
  void Hold(std::string_view instance, int32_t blocks, int64_t end) {
    const int32_t i = state.FindInstance(instance);
    running.push_back(BusyEntry{i, end, blocks});
    state.instances[i].busy += blocks;
    state.instances[i].free -= blocks;
  }
  std::optional<ReservationChoice> Choose(const PendingRun& run) const {
    const Timeline timeline(state, running, {});
    return EarliestReservation(ReserveInput{state, timeline, candidates, need, levels}, run);
  }
  std::vector<std::string_view> Names(const ReservationChoice& c) const {
    std::vector<std::string_view> names;
    for (int32_t i : c.instances) names.push_back(state.instance_names[i]);
    return names;
  }
};

TEST(ReserveStage, TimelineFreesBlocksAsTheRunsHoldingThemEnd) {
  Cluster c({"n0", "n1"});
  c.Hold("n0", 2, kNow + 10 * kMinute);
  c.Hold("n0", 1, kNow + 5 * kMinute);
  c.Hold("n1", 1, kUnknownTime);
  const Timeline timeline(c.state, c.running, {BusyEntry{0, kNow + 20 * kMinute, 1}});
  EXPECT_EQ(timeline.TimeWithFree(0, 1), kNow);  // one block free now
  EXPECT_EQ(timeline.TimeWithFree(0, 2), kNow + 5 * kMinute);
  EXPECT_EQ(timeline.TimeWithFree(0, 3), kNow + 10 * kMinute);
  EXPECT_EQ(timeline.TimeWhollyFree(0), kNow + 20 * kMinute);  // this cycle's placement ends last
  EXPECT_EQ(timeline.TimeWithFree(1, 3), kNow);
  EXPECT_EQ(timeline.TimeWithFree(1, 4), kUnknownTime);  // held by a run without a known end
  EXPECT_EQ(timeline.TimeWhollyFree(1), kUnknownTime);
}

TEST(ReserveStage, ASingleNodeRunReservesTheInstanceThatFreesSoonest) {
  Cluster c({"n0", "n1", "n2"});
  c.Hold("n0", 4, kNow + 30 * kMinute);
  c.Hold("n1", 4, kNow + 10 * kMinute);
  c.Hold("n2", 4, kNow + 10 * kMinute);
  c.need = {2};
  const std::optional<ReservationChoice> choice = c.Choose(t::Pending("ns/r"));
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->start, kNow + 10 * kMinute);
  EXPECT_EQ(c.Names(*choice), (std::vector<std::string_view>{"n1"}));  // n1 and n2 tie: name order
  EXPECT_EQ(choice->fleet, 0);
}

TEST(ReserveStage, AnInstanceThatExpiresBeforeTheRunWouldEndIsNotReserved) {
  Cluster c({"n0", "n1"});
  c.Hold("n0", 4, kNow + 10 * kMinute);
  c.Hold("n1", 4, kNow + 20 * kMinute);
  c.state.instances[0].expiry = kNow + 30 * kMinute;  // the run needs an hour from its start
  PendingRun run = t::Pending("ns/r");
  run.max_duration = std::chrono::hours(1);
  const std::optional<ReservationChoice> choice = c.Choose(run);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(c.Names(*choice), (std::vector<std::string_view>{"n1"}));
  EXPECT_FALSE(LifetimeAllows(c.state.instances[0], kNow + 10 * kMinute, run));
  EXPECT_TRUE(LifetimeAllows(c.state.instances[0], kNow + 10 * kMinute, t::Pending("ns/no-limit")));
}

TEST(ReserveStage, AnInstanceKeptForAPreemptorIsNotReservedAndAnUnknownEndGivesAnUnknownStart) {
  Cluster c({"n0", "n1"});
  c.Hold("n0", 4, kUnknownTime);
  c.Hold("n1", 4, kNow + kMinute);
  c.state.instances[1].held_for = 0;
  const std::optional<ReservationChoice> choice = c.Choose(t::Pending("ns/r"));
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(c.Names(*choice), (std::vector<std::string_view>{"n0"}));
  EXPECT_EQ(choice->start, kUnknownTime);
}

TEST(ReserveStage, NothingIsReservedWhenNoInstanceOutlivesTheRun) {
  Cluster c({"n0"});
  c.Hold("n0", 4, kUnknownTime);
  c.state.instances[0].expiry = kNow + kMinute;  // and its start is unknown
  EXPECT_FALSE(c.Choose(t::Pending("ns/r")).has_value());
}

TEST(ReserveStage, AMultiNodeRunReservesWholeInstancesOfOneFleetWhenTheLastOfThemFrees) {
  Cluster c({"n0", "n1", "n2"}, PlacementPolicy::kCluster);
  c.Hold("n0", 1, kNow + 40 * kMinute);
  c.Hold("n1", 4, kNow + 10 * kMinute);
  c.Hold("n2", 2, kNow + 20 * kMinute);
  const std::optional<ReservationChoice> choice = c.Choose(t::Pending("ns/gang", 50, t::kT0, /*nodes=*/2));
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->start, kNow + 20 * kMinute);
  EXPECT_EQ(c.Names(*choice), (std::vector<std::string_view>{"n1", "n2"}));
}

TEST(ReserveStage, AGangOfSlicesCountsEverySliceAnInstanceCanHold) {
  Cluster c({"n0", "n1"});
  c.Hold("n0", 4, kNow + 10 * kMinute);
  c.Hold("n1", 4, kNow + 30 * kMinute);
  c.need = {2};  // two slices per instance
  PendingRun run = t::Pending("ns/slices", 50, t::kT0, /*nodes=*/2);
  run.whole_instances = false;
  const std::optional<ReservationChoice> choice = c.Choose(run);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->start, kNow + 10 * kMinute);  // both slices on n0
  EXPECT_EQ(c.Names(*choice), (std::vector<std::string_view>{"n0"}));
}

}  // namespace
}  // namespace berth::scheduling::internal
