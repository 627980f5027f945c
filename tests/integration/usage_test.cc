// Issue 47: Team.status.usageHistory through the real API server: the CRD keeps what the codec
// writes (api::TeamUsagePatch) at the size bound, refuses what it must, and berth's own Team
// status writes (TeamKeeper) leave it alone.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "api/v1alpha1/codec.h"
#include "engine_fixture.h"
#include "scheduling/usage.h"

namespace berth::testing {
namespace {

namespace api = api::v1alpha1;
namespace sched = scheduling;
namespace json = k8s::json;
using k8s::resources::kTeams;
using std::chrono::hours;
using std::chrono::minutes;

class Usage : public EngineTest {
 protected:
  Usage() { controller_args_ = {"--team-status-interval=1s"}; }
  void TearDown() override {
    EngineTest::TearDown();
    if (!team_.empty()) (void)client()->Delete(kTeams.Path("", team_));
  }
  std::string team_;
};

// A year of 1000 namespaces on three fleets folded and written as the fold writes it (guarded
// by the Team's resourceVersion): stored and read back whole; the controller's own status writes
// (every second here) keep it; a stale resourceVersion is refused (a second fold of the same
// interval cannot land); an hour outside the day is refused by the schema.
TEST_F(Usage, TheTeamKeepsTheHistoryTheFoldWritesAndBerthsStatusWritesKeepIt) {
  team_ = "usage-" + ns_;
  CommandResult made = cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team_ +
                                                              "}\nspec:\n  namespaces: [" + ns_ + "]\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // Wait for berth's first status write (observedGeneration), so that later ones are its periodic ones.
  ASSERT_TRUE(Eventually([&] {
    auto t = client()->Get(kTeams.Path("", team_));
    return t.ok() && json::Find(*t, {"status", "observedGeneration"}) != nullptr;
  }));

  const base::TimePoint start(std::chrono::duration_cast<base::Duration>(std::chrono::seconds(1795824000)));
  sched::UsageHistory h;
  std::vector<sched::UsageSpan> spans;
  for (int i = 0; i < 1000; ++i) {
    spans.push_back({.ns = "namespace-" + std::to_string(i), .fleet = "fleet-" + std::to_string(i % 3), .start = start + minutes(i),
                     .end = std::nullopt, .gpus = 1 + i % 8, .cpu_milli = 500 + i, .memory_bytes = (int64_t{1} << 30) * (1 + i % 16)});
  }
  const base::TimePoint end = start + hours(24 * 365);
  for (base::TimePoint t = start; t < end; t += hours(12)) {
    sched::FoldUsage(h, spans, t, t + hours(12), {.hourly_since = t - hours(24 * 7), .max_bytes = sched::kMaxUsageBytes});
  }
  // Written as the fold writes it: read the version, write guarded by it, and on a conflict
  // (berth's own status write landed in between: every second here) read again and retry.
  std::string patch;
  k8s::Result<json::Document> written = k8s::Status::Error("not tried");
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto team = client()->Get(kTeams.Path("", team_));
    ASSERT_TRUE(team.ok());
    const std::string rv = json::GetString(json::Find(*team, {"metadata", "resourceVersion"}));
    patch = api::TeamUsagePatch(h, api::Time(end), rv);
    written = client()->MergePatch(kTeams.Path("", team_, "status"), patch);
    if (written.ok() || !written.status().IsConflict()) break;
  }
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  // The same fold from the same version again: refused (someone moved the watermark first).
  auto again = client()->MergePatch(kTeams.Path("", team_, "status"), patch);
  EXPECT_FALSE(again.ok());
  EXPECT_TRUE(again.status().IsConflict()) << again.status().ToString();

  // Stored whole, and still there after berth's own status write: a spec change makes berth
  // write the Team's status (observedGeneration 2).
  CommandResult changed = cp().Kubectl({"patch", "team", team_, "--type=merge", "-p", R"({"spec":{"weight":2}})"});
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  ASSERT_TRUE(Eventually([&] {
    auto t = client()->Get(kTeams.Path("", team_));
    const json::Value* g = t.ok() ? json::Find(*t, {"status", "observedGeneration"}) : nullptr;
    return g != nullptr && g->IsInt64() && g->GetInt64() == 2;
  }, std::chrono::seconds(30))) << "berth wrote no Team status after the usage";
  auto read = client()->Get(kTeams.Path("", team_));
  ASSERT_TRUE(read.ok());
  auto decoded = api::DecodeTeam(*read);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_EQ(decoded->status_problem, "");
  ASSERT_EQ(decoded->status.usage_history.size(), h.size());
  for (size_t i = 0; i < h.size(); ++i) {
    const auto &a = h[i], &b = decoded->status.usage_history[i];
    EXPECT_EQ(a.day + a.fleet, b.day + b.fleet);
    EXPECT_LT(std::abs(a.total.gpu - b.total.gpu) * 3600, 1e-3) << a.day;
    EXPECT_EQ(a.by_namespace.size(), b.by_namespace.size()) << a.day;
    EXPECT_EQ(a.hourly.size(), b.hourly.size()) << a.day;
  }
  ASSERT_TRUE(decoded->status.usage_folded_until.has_value());
  EXPECT_EQ(*decoded->status.usage_folded_until, api::Time(end));

  // The schema refuses an hour that is not one.
  CommandResult bad = cp().Kubectl({"patch", "team", team_, "--subresource=status", "--type=merge", "-p",
                                    R"({"status":{"usageHistory":[{"day":"2026-11-28","fleet":"f","hourly":[{"hour":24}]}]}})"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("hour"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace berth::testing
