// Issue 33: start-time estimates end to end through the real API server (a berth-controller
// process, simulated nodes, the test plays the kubelet): a waiting run shows status.estimatedStartAt
// behind a run with a maxDuration, and the estimate moves when the run ahead finishes early.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "engine_fixture.h"
#include "k8s/timefmt.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using std::chrono::minutes;
using std::chrono::seconds;

const std::string kQueue = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";

class Estimates : public EngineTest {
 protected:
  Estimates() { controller_args_ = {"--estimate-interval=1s"}; }

  std::optional<k8s::TimePoint> StatusTime(const std::string& run, const char* field) {
    auto d = RunDoc(run);
    if (!d.IsObject()) return std::nullopt;
    auto at = k8s::ParseRfc3339(json::GetString(json::Find(d, {"status", field})));
    return at.ok() ? std::optional<k8s::TimePoint>(*at) : std::nullopt;
  }
  std::optional<k8s::TimePoint> Estimate(const std::string& run) { return StatusTime(run, "estimatedStartAt"); }
};

TEST_F(Estimates, AWaitingRunShowsItsEstimatedStartWhichMovesWhenTheRunAheadFinishesEarly) {
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");
  Run("long", "  maxDuration: 30m\n" + kQueue);
  ASSERT_TRUE(WaitPhase("long", "Scheduled"));
  StartRun("long");
  const std::optional<k8s::TimePoint> started = StatusTime("long", "startedAt");
  ASSERT_TRUE(started.has_value());
  Run("w1", "  priority: 60\n  maxDuration: 1h\n" + kQueue);
  Run("w2", "  priority: 40\n  maxDuration: 1h\n" + kQueue);
  ASSERT_TRUE(Eventually([&] { return Estimate("w1") && Estimate("w2"); }, seconds(60)))
      << Kubectl({"get", "runs", "-o", "yaml"}).out;
  EXPECT_EQ(*Estimate("w1"), *started + minutes(30)) << "when the run ahead reaches its maxDuration";
  EXPECT_EQ(*Estimate("w2"), *started + minutes(90)) << "after w1's hour";
  EXPECT_EQ(Message("w1").find("estimated start unknown"), std::string::npos) << Message("w1");

  FinishRun("long");
  ASSERT_TRUE(WaitPhase("w1", "Scheduled"));
  EXPECT_TRUE(Eventually([&] { return !Estimate("w1"); })) << "only a Pending run shows one";
  const std::optional<k8s::TimePoint> w1_placed = StatusTime("w1", "scheduledAt");
  ASSERT_TRUE(w1_placed.has_value());
  ASSERT_TRUE(Eventually([&] { return Estimate("w2") && *Estimate("w2") < *started + minutes(90); }, seconds(60)))
      << Kubectl({"get", "runs", "-o", "yaml"}).out;
  EXPECT_EQ(*Estimate("w2"), *w1_placed + minutes(60)) << "after w1's hour, from when w1 was placed";
  EXPECT_EQ(Phase("w2"), "Pending");
}

}  // namespace
}  // namespace berth::testing
