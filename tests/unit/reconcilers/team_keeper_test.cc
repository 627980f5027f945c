// Teams in the engine (issue 31): the decayed usage rule of reconcilers/objects/team_keeper.h.

#include "reconcilers/objects/team_keeper.h"

#include <gtest/gtest.h>

namespace berth::reconcilers {
namespace {

using Seconds = std::chrono::duration<double>;
const Seconds kHour{3600};
const Seconds kWeek{7 * 24 * 3600};

TEST(DecayedUsage, PastUsageHalvesEveryHalfLife) {
  EXPECT_DOUBLE_EQ(DecayedUsage(340, 0, kWeek, kWeek), 170);
  EXPECT_DOUBLE_EQ(DecayedUsage(340, 0, 2 * kWeek, kWeek), 85);
}

TEST(DecayedUsage, RunningRunsAddTheirResourcesTimesTime) {
  // 16 GPUs for one hour, with a half-life of a week: almost 16 GPU-hours (the first minutes
  // decay a little already).
  const double one_hour = DecayedUsage(0, 16, kHour, kWeek);
  EXPECT_GT(one_hour, 15.9);
  EXPECT_LT(one_hour, 16);
  // Steps of any size give the same result (the rule integrates exactly).
  double stepped = 0;
  for (int i = 0; i < 60; ++i) stepped = DecayedUsage(stepped, 16, Seconds(60), kWeek);
  EXPECT_NEAR(stepped, one_hour, 1e-9);
}

TEST(DecayedUsage, NoTimeNoChange) {
  EXPECT_DOUBLE_EQ(DecayedUsage(12.5, 8, Seconds(0), kWeek), 12.5);
  EXPECT_DOUBLE_EQ(DecayedUsage(12.5, 8, Seconds(-5), kWeek), 12.5) << "a clock that went back charges nothing";
}

}  // namespace
}  // namespace berth::reconcilers
