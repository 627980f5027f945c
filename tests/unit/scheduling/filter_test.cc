// Stage "filter" (scheduling/filter.h) on its own: a run's candidate fleets and whether it could
// ever fit them, on a hand-made cluster state.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fixtures.h"
#include "scheduling/filter.h"

namespace berth::scheduling::internal {
namespace {

namespace t = berth::scheduling::testing;

// Fleets "any" (2 instances, 4 blocks of 4 CPUs) and "near" (cluster placement, 3 instances).
ClusterSnapshot TwoFleets() {
  ClusterSnapshot s;
  s.fleets = {t::Fleet("any", BlocksSetting::Count(4)),
              t::Fleet("near", BlocksSetting::Count(4), PlacementPolicy::kCluster)};
  for (const char* n : {"a0", "a1"}) s.instances.push_back(t::Instance(n, "any", t::Cpus(16)));
  for (const char* n : {"c0", "c1", "c2"}) s.instances.push_back(t::Instance(n, "near", t::Cpus(16)));
  return s;
}

struct Filtered {
  bool fits = false;
  WaitReason reason;
  std::vector<int32_t> candidates;
  std::vector<int32_t> need;
};

Filtered Filter(const ClusterSnapshot& s, const PendingRun& run) {
  const ClusterState state(s, 0);
  FleetFilter filter(state);
  filter.Resolve(run);
  Filtered out;
  out.fits = filter.Fits(run, out.reason);
  out.candidates = filter.candidates;
  out.need = filter.need;
  return out;
}

PendingRun Asking(std::vector<std::string> fleets, int64_t cpus, int32_t nodes = 1) {
  PendingRun r = t::Pending("ns/r", 50, t::kT0, nodes, t::Cpus(cpus));
  r.fleets = std::move(fleets);
  return r;
}

TEST(FilterStage, CandidatesAreTheNamedFleetsThatExistElseEveryFleet) {
  const ClusterSnapshot s = TwoFleets();
  EXPECT_EQ(Filter(s, Asking({}, 4)).candidates, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(Filter(s, Asking({"near", "gone", "near"}, 4)).candidates, (std::vector<int32_t>{1}));
  const Filtered none = Filter(s, Asking({"gone", "lost", "gone"}, 4));
  EXPECT_FALSE(none.fits);
  EXPECT_EQ(none.reason.code, WaitCode::kFleetNotFound);
  EXPECT_EQ(none.reason.detail, "gone, lost");
  EXPECT_EQ(none.reason.needed, 2);
}

TEST(FilterStage, ARunFitsWhenSomeInstanceCouldHoldItAndNeedIsItsBlocks) {
  const ClusterSnapshot s = TwoFleets();
  const Filtered fits = Filter(s, Asking({"any"}, 6));
  EXPECT_TRUE(fits.fits);
  EXPECT_EQ(fits.need[0], 2);  // 6 CPUs: two blocks of 4
  const Filtered large = Filter(s, Asking({"any"}, 17));
  EXPECT_FALSE(large.fits);
  EXPECT_EQ(large.reason.code, WaitCode::kTooLarge);
  EXPECT_EQ(large.need[0], -1);
}

TEST(FilterStage, AMultiNodeRunNeedsAClusterFleetWithEnoughInstancesThatFit) {
  const ClusterSnapshot s = TwoFleets();
  EXPECT_TRUE(Filter(s, Asking({}, 4, 3)).fits);
  const Filtered spread = Filter(s, Asking({"any"}, 4, 2));
  EXPECT_FALSE(spread.fits);
  EXPECT_EQ(spread.reason.code, WaitCode::kNeedsClusterPlacement);
  const Filtered many = Filter(s, Asking({"near"}, 4, 4));
  EXPECT_FALSE(many.fits);
  EXPECT_EQ(many.reason.code, WaitCode::kTooManyNodes);
  EXPECT_EQ(many.reason.available, 3);
  EXPECT_EQ(many.reason.needed, 4);
}

TEST(FilterStage, AGangOfSlicesCountsTheSlicesAFleetHolds) {
  const ClusterSnapshot s = TwoFleets();
  PendingRun run = Asking({"any"}, 8, 4);  // 4 slices of 2 blocks: 2 instances hold 4
  run.whole_instances = false;
  EXPECT_TRUE(Filter(s, run).fits);
  run.nodes = 5;
  const Filtered many = Filter(s, run);
  EXPECT_FALSE(many.fits);
  EXPECT_EQ(many.reason.code, WaitCode::kTooManySlices);
  EXPECT_EQ(many.reason.slice_blocks, 2);
}

// Issue 44/45: a workload's Pods keep their own grace period when their controller deletes them,
// so a fleet whose maxGracePeriod is shorter is no candidate for it.
TEST(FilterStage, AFleetWhoseMaxGracePeriodIsShorterThanThePodsGraceIsNoCandidate) {
  ClusterSnapshot s = TwoFleets();
  s.fleets[0].max_grace_seconds = 60;    // any
  s.fleets[1].max_grace_seconds = 3600;  // near
  PendingRun run = Asking({}, 4);
  run.grace_seconds = 600;
  const Filtered one = Filter(s, run);
  EXPECT_TRUE(one.fits);
  EXPECT_EQ(one.candidates, (std::vector<int32_t>{1}));
  run.grace_seconds = 60;  // equal to the cap: fits
  EXPECT_EQ(Filter(s, run).candidates, (std::vector<int32_t>{0, 1}));
  run.grace_seconds = 0;  // a Run: berth caps its Pods itself
  EXPECT_EQ(Filter(s, run).candidates, (std::vector<int32_t>{0, 1}));
}

TEST(FilterStage, NoFleetWithALongEnoughMaxGracePeriodIsGracePeriodTooLong) {
  ClusterSnapshot s = TwoFleets();
  s.fleets[0].max_grace_seconds = 600;
  s.fleets[1].max_grace_seconds = 900;
  PendingRun run = Asking({}, 4);
  run.grace_seconds = 31536000;
  const Filtered none = Filter(s, run);
  EXPECT_FALSE(none.fits);
  EXPECT_TRUE(none.candidates.empty());
  EXPECT_EQ(none.reason.code, WaitCode::kGracePeriodTooLong);
  EXPECT_EQ(none.reason.needed, 31536000);
  EXPECT_EQ(none.reason.available, 900);  // the longest cap, of fleet "near"
  EXPECT_EQ(none.reason.fleet, 1);
  // Named fleets: only those count; one that does not exist is still kFleetNotFound.
  run.fleets = {"any"};
  const Filtered named = Filter(s, run);
  EXPECT_EQ(named.reason.code, WaitCode::kGracePeriodTooLong);
  EXPECT_EQ(named.reason.available, 600);
  EXPECT_EQ(named.reason.fleet, 0);
  run.fleets = {"gone"};
  EXPECT_EQ(Filter(s, run).reason.code, WaitCode::kFleetNotFound);
}

TEST(FilterStage, NoFleetAtAllIsNoFleet) {
  const ClusterSnapshot s;
  const Filtered none = Filter(s, Asking({}, 1));
  EXPECT_FALSE(none.fits);
  EXPECT_EQ(none.reason.code, WaitCode::kNoFleet);
}

}  // namespace
}  // namespace berth::scheduling::internal
