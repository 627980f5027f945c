// Issue 33: start-time estimates end to end through the real API server (a berth-controller
// process, simulated nodes, the test plays the kubelet): a waiting run shows status.estimatedStartAt
// behind a run with a maxDuration, the plugin (`kubectl berth queue`'s ETA, `describe`) and the
// dashboard's queue show it, and it moves when the run ahead finishes early.

#include <gtest/gtest.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

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
  Estimates() {
    port_ = FreePort();
    controller_args_ = {"--estimate-interval=1s", "--metrics-bind-address=127.0.0.1:" + std::to_string(port_), "--queue-auth=false"};
  }
  int port_;

  // The dashboard's queue item of `run` (GET api/queue with a token): its estimatedStartAt and
  // startsInSeconds ("" and -1 when absent).
  std::pair<std::string, int64_t> DashboardEstimate(const std::string& run) {
    const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/api/queue?namespace=" + ns_;
    auto doc = json::Parse(HttpGet(url, nullptr, cp().AdminToken()));
    const json::Value* items = doc.ok() ? json::Find(*doc, {"items"}) : nullptr;
    if (items == nullptr || !items->IsArray()) return {"", -1};
    for (const auto& it : items->GetArray()) {
      if (json::GetString(it, "name") == run) return {json::GetString(it, "estimatedStartAt"), json::GetInt(it, "startsInSeconds", -1)};
    }
    return {"", -1};
  }

  // `kubectl berth ARGS... -n NS` as the user runs it (the controller runs outside the cluster:
  // the queue comes from the runs' status).
  CommandResult Plugin(std::vector<std::string> args) {
    const std::string bin = BERTH_CONTROLLER_BIN;
    args.insert(args.begin(), bin.substr(0, bin.rfind("/src/controller/")) + "/src/cli/kubectl-berth");
    for (const std::string& a : {std::string("-n"), ns_, std::string("--kubeconfig"), cp().kubeconfig()}) args.push_back(a);
    return RunCommand(args);
  }
  // "~29m" -> 29; -1 when the text is not "~" and whole minutes.
  static int Minutes(const std::string& eta) {
    if (eta.size() < 3 || eta[0] != '~' || eta.back() != 'm') return -1;
    const std::string digits = eta.substr(1, eta.size() - 2);
    if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(digits);
  }
  // The ETA column of `run`'s row in `kubectl berth queue`; "" when it has no row.
  std::string QueueEta(const std::string& run) {
    CommandResult r = Plugin({"queue"});
    std::istringstream lines(r.out);
    std::string line;
    size_t eta = std::string::npos;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::vector<std::string> cols;
      for (std::string w; words >> w;) cols.push_back(w);
      if (cols.empty()) continue;
      if (cols[0] == "POSITION") {
        for (size_t i = 0; i < cols.size(); ++i) eta = cols[i] == "ETA" ? i : eta;
      } else if (cols.size() > 1 && cols[1] == run && eta < cols.size()) {
        return cols[eta];
      }
    }
    return "";
  }

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

  // The plugin: the ETA column ("~29m": a whole number of minutes up to 30 from now), and describe.
  EXPECT_GE(Minutes(QueueEta("w1")), 25) << Plugin({"queue"}).out;
  EXPECT_LE(Minutes(QueueEta("w1")), 30) << Plugin({"queue"}).out;
  EXPECT_GE(Minutes(QueueEta("w2")), 85) << Plugin({"queue"}).out;
  EXPECT_LE(Minutes(QueueEta("w2")), 90) << Plugin({"queue"}).out;
  CommandResult described = Plugin({"describe", "w1"});
  EXPECT_NE(described.out.find("Estimate:     " + k8s::FormatRfc3339(*started + minutes(30)) + " (in "), std::string::npos)
      << described.out;
  // The dashboard's queue: the same time, and the seconds to it.
  auto [at, in] = DashboardEstimate("w1");
  EXPECT_EQ(at, k8s::FormatRfc3339(*started + minutes(30)));
  EXPECT_GT(in, 25 * 60);
  EXPECT_LE(in, 30 * 60);

  FinishRun("long");
  ASSERT_TRUE(WaitPhase("w1", "Scheduled"));
  EXPECT_TRUE(Eventually([&] { return !Estimate("w1"); })) << "only a Pending run shows one";
  const std::optional<k8s::TimePoint> w1_placed = StatusTime("w1", "scheduledAt");
  ASSERT_TRUE(w1_placed.has_value());
  ASSERT_TRUE(Eventually([&] { return Estimate("w2") && *Estimate("w2") < *started + minutes(90); }, seconds(60)))
      << Kubectl({"get", "runs", "-o", "yaml"}).out;
  EXPECT_EQ(*Estimate("w2"), *w1_placed + minutes(60)) << "after w1's hour, from when w1 was placed";
  EXPECT_EQ(Phase("w2"), "Pending");
  EXPECT_GE(Minutes(QueueEta("w2")), 55) << Plugin({"queue"}).out;
  EXPECT_LE(Minutes(QueueEta("w2")), 60) << Plugin({"queue"}).out;
  EXPECT_TRUE(Eventually([&] { return DashboardEstimate("w2").first == k8s::FormatRfc3339(*w1_placed + minutes(60)); }))
      << DashboardEstimate("w2").first;
  EXPECT_EQ(QueueEta("w1"), "") << "a placed run leaves the queue";
}

}  // namespace
}  // namespace berth::testing
