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
#include "k8s/clock.h"
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


// Issue 47 (4): a run waiting behind one whose runtime berth learned from finished runs like it
// shows the range of its start (status.estimatedStartRange: the 10th and 90th percentile of the
// sampled futures) around its point estimate; the plugin and the dashboard show it too. Runtimes
// must differ by minutes (a forecast's cycles are at least a minute apart), so the three finished
// runs are history: runs that never found their fleet, whose status the test then writes as a
// finished run's (placed, then Succeeded 10, 30 and 60 minutes later), as a previous controller
// would have left them. train-4 runs now; train-5 waits behind it.
TEST_F(Estimates, ARunWaitingBehindARunOfLearnedRuntimeShowsTheRangeOfItsStart) {
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");
  const k8s::TimePoint past = std::chrono::time_point_cast<std::chrono::seconds>(k8s::SystemClock().Now()) - std::chrono::hours(5);
  int n = 0;
  for (const minutes took : {minutes(10), minutes(30), minutes(60)}) {
    const std::string name = "train-" + std::to_string(++n);
    Run(name, "  fleets: [elsewhere]\n" + kQueue);
    const std::string placed = k8s::FormatRfc3339(past + minutes(70 * n)), ended = k8s::FormatRfc3339(past + minutes(70 * n) + took);
    const CommandResult patched = Kubectl({"patch", "run", name, "-n", ns_, "--subresource=status", "--type=merge", "-p",
                                           R"({"status":{"phase":"Succeeded","reason":"Succeeded","scheduledAt":")" + placed +
                                               R"(","startedAt":")" + placed + R"(","finishedAt":")" + ended + R"("}})"});
    ASSERT_EQ(patched.exit_code, 0) << patched.err;
  }
  Run("train-4", kQueue);
  ASSERT_TRUE(WaitPhase("train-4", "Scheduled"));
  StartRun("train-4");
  const std::optional<k8s::TimePoint> started = StatusTime("train-4", "scheduledAt");
  ASSERT_TRUE(started.has_value());
  Run("train-5", kQueue);

  // One status read: the estimate and the ends of its range as that status shows them.
  struct Shown {
    std::optional<k8s::TimePoint> at, earliest, latest;
  };
  auto shown = [&] {
    const json::Document d = RunDoc("train-5");
    auto time = [&](std::initializer_list<std::string_view> path) -> std::optional<k8s::TimePoint> {
      const json::Value* v = d.IsObject() ? json::Find(d, path) : nullptr;
      auto t = k8s::ParseRfc3339(json::GetString(v));
      return t.ok() ? std::optional<k8s::TimePoint>(*t) : std::nullopt;
    };
    return Shown{time({"status", "estimatedStartAt"}), time({"status", "estimatedStartRange", "earliest"}),
                 time({"status", "estimatedStartRange", "latest"})};
  };
  Shown s;
  ASSERT_TRUE(Eventually([&] {
    s = shown();
    return s.at && s.earliest && s.latest;
  }, seconds(60))) << Kubectl({"get", "runs", "-o", "yaml"}).out;
  const k8s::TimePoint at = *s.at, earliest = *s.earliest, latest = *s.latest;
  const std::string runs = Kubectl({"get", "runs", "-n", ns_, "-o", "yaml"}).out;
  EXPECT_LT(earliest, latest) << "train-4 may take what train-1, -2 or -3 took: 10, 30 or 60 minutes\n" << runs;
  EXPECT_LE(earliest, at) << runs;
  EXPECT_LE(at, latest) << runs;
  EXPECT_GE(earliest, *started + minutes(9)) << "train-4 takes at least what the quickest like it took\n" << runs;
  EXPECT_LE(latest, *started + minutes(62)) << "and at most what the slowest took\n" << runs;

  // The plugin's ETA shows the range ("~10s (2s–20s)"); describe says "likely between".
  const CommandResult queue = Plugin({"queue"});
  std::string row;
  std::istringstream lines(queue.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(" train-5 ") != std::string::npos) row = line;
  }
  EXPECT_NE(row.find("\u2013"), std::string::npos) << queue.out;
  EXPECT_NE(row.find(" ("), std::string::npos) << queue.out;
  const CommandResult described = Plugin({"describe", "train-5"});
  EXPECT_NE(described.out.find("likely between "), std::string::npos) << described.out;
  // The dashboard's queue item carries the range.
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/api/queue?namespace=" + ns_;
  auto dash = json::Parse(HttpGet(url, nullptr, cp().AdminToken()));
  ASSERT_TRUE(dash.ok());
  const json::Value* items = json::Find(*dash, {"items"});
  ASSERT_TRUE(items != nullptr && items->IsArray());
  bool in_dashboard = false;
  for (const auto& it : items->GetArray()) {
    if (json::GetString(it, "name") != "train-5") continue;
    in_dashboard = !json::GetString(json::Find(it, {"estimatedStartRange", "earliest"})).empty() &&
            !json::GetString(json::Find(it, {"estimatedStartRange", "latest"})).empty();
  }
  EXPECT_TRUE(in_dashboard) << HttpGet(url, nullptr, cp().AdminToken());
}

// Issue 47 (6): a waiting run whose estimate is unknown names the run ahead without a known end
// (no maxDuration, no finished runs like it) in its status message (which the dashboard's run
// page shows) and `kubectl berth describe`.
TEST_F(Estimates, AnUnknownEstimateNamesTheRunAheadThatHasNoKnownEnd) {
  Nodes("one", 1, "4", "8Gi");
  Fleet("one", "one");
  Run("train-llm", kQueue);
  ASSERT_TRUE(WaitPhase("train-llm", "Scheduled"));
  StartRun("train-llm");
  Run("next", "  maxDuration: 1h\n" + kQueue);
  const std::string why = "estimated start unknown: train-llm has no maxDuration and no finished runs like it";
  ASSERT_TRUE(Eventually([&] { return Message("next").find(why) != std::string::npos; }, seconds(60))) << Message("next");
  const CommandResult described = Plugin({"describe", "next"});
  EXPECT_NE(described.out.find("unknown: train-llm has no maxDuration and no finished runs like it"), std::string::npos)
      << described.out;
}

}  // namespace
}  // namespace berth::testing
