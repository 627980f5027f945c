// kubectl berth teams (issue 31): one row per team and fleet, amounts as a user reads them.

#include "cli/team_view.h"

#include <gtest/gtest.h>

namespace berth::cli {
namespace {

namespace api = berth::api::v1alpha1;

api::Team Vision() {
  api::Team t;
  t.meta.name = "vision";
  t.spec.parent = "research";
  t.spec.weight = 2;
  api::TeamFleetStatus f;
  f.fleet = "a100";
  f.nominal.gpus = 16;
  f.used.gpus = 24;
  f.borrowed.gpus = 8;
  f.lent.gpus = 0;
  t.status.fleets = {f};
  t.status.gpu_hours = 340.24;
  t.status.cpu_hours = 1210.5;
  return t;
}

TEST(TeamView, OneRowPerTeamAndFleetWithUsage) {
  api::Team idle;
  idle.meta.name = "audio";
  const std::string out = FormatTeams({Vision(), idle});
  EXPECT_EQ(out,
            "TEAM     PARENT     WEIGHT   FLEET   NOMINAL   USED      BORROWED   LENT     USAGE\n"
            "audio    -          1        -       -         -         -          -        0.0 GPU-h, 0.0 CPU-h\n"
            "vision   research   2        a100    16 GPUs   24 GPUs   8 GPUs     0 GPUs   340.2 GPU-h, 1210.5 CPU-h\n");
}

TEST(TeamView, AmountsNameEachResource) {
  api::ResourceAmounts a;
  EXPECT_EQ(FormatAmounts(a), "-");
  a.gpus = 1;
  a.cpu_milli = 64000;
  a.memory_bytes = int64_t{256} << 30;
  EXPECT_EQ(FormatAmounts(a), "1 GPU, 64 CPUs, 256Gi");
}

// Issue 47 (7): the usage weighted by the fleets' costWeight shows beside the raw where it differs.
TEST(TeamView, WeightedUsageBesideTheRaw) {
  api::Team t = Vision();
  t.status.weighted_gpu_hours = 1020.6;
  t.status.weighted_cpu_hours = 1210.5;
  const std::string out = FormatTeams({t});
  EXPECT_NE(out.find("340.2 GPU-h (1020.6 weighted), 1210.5 CPU-h\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace berth::cli
