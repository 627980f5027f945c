#include "controller/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace berth::controller {
namespace {

using Labels = std::map<std::string, std::string>;
using PassSummary = reconcilers::EngineObserver::PassSummary;
using ::testing::HasSubstr;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// Parses the text exposition format: `name{k="v",...} value` lines; comments are skipped.
std::vector<Sample> Parse(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (i != std::string::npos && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        EXPECT_EQ(line[eq + 1], '"') << line;
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') ++j;
          value += line[j];
        }
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      ++i;  // '}'
    }
    std::string value = line.substr(line.find_first_not_of(' ', i));
    value = value.substr(0, value.find(' '));  // drop a timestamp, if any
    s.value = std::stod(value);
    out.push_back(std::move(s));
  }
  return out;
}

bool SameLabels(const Labels& got, const Labels& want) {
  if (got.size() != want.size()) return false;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) return false;
    if (k == "le") {
      if (std::stod(it->second) != std::stod(v)) return false;
    } else if (it->second != v) {
      return false;
    }
  }
  return true;
}

// The value of the sample `name{labels}`; nullopt when it is not exposed.
std::optional<double> Value(const std::string& text, const std::string& name, const Labels& labels = {}) {
  std::optional<double> found;
  for (const auto& s : Parse(text)) {
    if (s.name != name || !SameLabels(s.labels, labels)) continue;
    EXPECT_FALSE(found.has_value()) << "sample " << name << " appears twice";
    found = s.value;
  }
  return found;
}

TEST(MetricsTest, FreshRegistryExposesTheUnlabelledSeriesAtZero) {
  Metrics m;
  std::string text = m.Render();
  EXPECT_EQ(Value(text, "berth_runs_admitted_total"), 0.0);
  EXPECT_EQ(Value(text, "berth_leader"), 0.0);
  EXPECT_EQ(Value(text, "berth_workqueue_depth"), 0.0);
  EXPECT_EQ(Value(text, "berth_workqueue_retries_total"), 0.0);
  EXPECT_EQ(Value(text, "berth_oldest_pending_run_wait_seconds"), 0.0) << "a standby exports it at 0";
  EXPECT_EQ(Value(text, "berth_admission_wait_seconds_count"), 0.0);
  EXPECT_EQ(Value(text, "berth_scheduling_cycle_duration_seconds_count"), 0.0);
  EXPECT_EQ(Value(text, "berth_scheduling_passes_total", {{"core", "decided"}}), 0.0);
  EXPECT_EQ(Value(text, "berth_scheduling_passes_total", {{"core", "stood"}}), 0.0);
  // Families with labels have no samples until something happens.
  EXPECT_EQ(Value(text, "berth_api_requests_total", {{"verb", "GET"}, {"code", "200"}}), std::nullopt);
  EXPECT_THAT(text, HasSubstr("# TYPE berth_runs_admitted_total counter"));
  EXPECT_THAT(text, HasSubstr("# TYPE berth_leader gauge"));
  EXPECT_THAT(text, HasSubstr("# TYPE berth_admission_wait_seconds histogram"));
}

PassSummary FirstPass() {
  PassSummary s;
  s.duration = std::chrono::microseconds(1500);
  s.pending[{"a100", "NoCapacity"}] = 3;
  s.pending[{"none", "Unschedulable"}] = 1;
  s.fleets["a100"].busy_blocks = 6;
  s.fleets["a100"].idle_blocks = 2;
  s.fleets["a100"].unavailable_blocks = 8;
  s.fleets["a100"].instances_by_state = {{"Busy", 2}, {"Idle", 1}, {"NotReady", 1}};
  s.fleets["cpu"].idle_blocks = 64;
  s.fleets["cpu"].instances_by_state = {{"Idle", 2}};
  s.writes_queued = 4;
  s.oldest_pending_wait = std::chrono::milliseconds(5400250);  // 1.5 h and a quarter second
  return s;
}

TEST(MetricsTest, PassSamples) {
  Metrics m;
  m.OnPass(FirstPass());
  std::string text = m.Render();
  struct Want {
    std::string name;
    Labels labels;
    double value;
  };
  const std::vector<Want> wants = {
      {"berth_pending_runs", {{"fleet", "a100"}, {"reason", "NoCapacity"}}, 3},
      {"berth_pending_runs", {{"fleet", "none"}, {"reason", "Unschedulable"}}, 1},
      {"berth_fleet_blocks", {{"fleet", "a100"}, {"state", "busy"}}, 6},
      {"berth_fleet_blocks", {{"fleet", "a100"}, {"state", "idle"}}, 2},
      {"berth_fleet_blocks", {{"fleet", "a100"}, {"state", "unavailable"}}, 8},
      {"berth_fleet_blocks", {{"fleet", "cpu"}, {"state", "busy"}}, 0},
      {"berth_fleet_blocks", {{"fleet", "cpu"}, {"state", "idle"}}, 64},
      {"berth_instances", {{"fleet", "a100"}, {"state", "Busy"}}, 2},
      {"berth_instances", {{"fleet", "a100"}, {"state", "Idle"}}, 1},
      {"berth_instances", {{"fleet", "a100"}, {"state", "NotReady"}}, 1},
      {"berth_instances", {{"fleet", "cpu"}, {"state", "Idle"}}, 2},
      {"berth_workqueue_depth", {}, 4},
      {"berth_oldest_pending_run_wait_seconds", {}, 5400.25},
      {"berth_scheduling_cycle_duration_seconds_count", {}, 1},
      {"berth_scheduling_cycle_duration_seconds_bucket", {{"le", "0.001"}}, 0},
      {"berth_scheduling_cycle_duration_seconds_bucket", {{"le", "0.0025"}}, 1},
      {"berth_scheduling_cycle_duration_seconds_bucket", {{"le", "+Inf"}}, 1},
  };
  for (const auto& w : wants) {
    SCOPED_TRACE(w.name);
    EXPECT_EQ(Value(text, w.name, w.labels), w.value);
  }
  auto sum = Value(text, "berth_scheduling_cycle_duration_seconds_sum");
  ASSERT_TRUE(sum.has_value());
  EXPECT_NEAR(*sum, 0.0015, 1e-9);
  EXPECT_EQ(Value(text, "berth_instances", {{"fleet", "cpu"}, {"state", "Busy"}}), std::nullopt);
}

TEST(MetricsTest, PassesCountWhetherTheCoreDecidedAgain) {
  Metrics m;
  PassSummary decided = FirstPass();
  decided.decided = true;
  m.OnPass(decided);
  m.OnPass(FirstPass());  // its last result stood
  m.OnPass(FirstPass());
  const std::string text = m.Render();
  EXPECT_EQ(Value(text, "berth_scheduling_passes_total", {{"core", "decided"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_scheduling_passes_total", {{"core", "stood"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_scheduling_cycle_duration_seconds_count"), 3.0) << "every pass is timed";
}

TEST(MetricsTest, LabelSetsGoneInTheNextPassReadZero) {
  Metrics m;
  m.OnPass(FirstPass());
  PassSummary next;
  next.duration = std::chrono::microseconds(200);
  next.pending[{"a100", "NoCapacity"}] = 5;  // still there, new value
  next.fleets["a100"].busy_blocks = 8;
  next.fleets["a100"].instances_by_state = {{"Busy", 3}};
  // "cpu" fleet deleted, the unschedulable run gone, queue drained.
  m.OnPass(next);
  std::string text = m.Render();
  struct Want {
    std::string name;
    Labels labels;
    double value;
  };
  const std::vector<Want> wants = {
      {"berth_pending_runs", {{"fleet", "a100"}, {"reason", "NoCapacity"}}, 5},
      {"berth_pending_runs", {{"fleet", "none"}, {"reason", "Unschedulable"}}, 0},
      {"berth_fleet_blocks", {{"fleet", "a100"}, {"state", "busy"}}, 8},
      {"berth_fleet_blocks", {{"fleet", "a100"}, {"state", "idle"}}, 0},
      {"berth_fleet_blocks", {{"fleet", "a100"}, {"state", "unavailable"}}, 0},
      {"berth_fleet_blocks", {{"fleet", "cpu"}, {"state", "idle"}}, 0},
      {"berth_instances", {{"fleet", "a100"}, {"state", "Busy"}}, 3},
      {"berth_instances", {{"fleet", "a100"}, {"state", "Idle"}}, 0},
      {"berth_instances", {{"fleet", "a100"}, {"state", "NotReady"}}, 0},
      {"berth_instances", {{"fleet", "cpu"}, {"state", "Idle"}}, 0},
      {"berth_workqueue_depth", {}, 0},
      {"berth_oldest_pending_run_wait_seconds", {}, 0},  // each pass sets it; nothing is kept
      {"berth_scheduling_cycle_duration_seconds_count", {}, 2},
  };
  for (const auto& w : wants) {
    SCOPED_TRACE(testing::Message() << w.name << " " << testing::PrintToString(w.labels));
    EXPECT_EQ(Value(text, w.name, w.labels), w.value);
  }
  // And back again: a label set that returns is set to its new value.
  m.OnPass(FirstPass());
  text = m.Render();
  EXPECT_EQ(Value(text, "berth_pending_runs", {{"fleet", "none"}, {"reason", "Unschedulable"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_instances", {{"fleet", "cpu"}, {"state", "Idle"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_pending_runs", {{"fleet", "a100"}, {"reason", "NoCapacity"}}), 3.0);
}

TEST(MetricsTest, AdmissionsAndAdmissionWait) {
  Metrics m;
  m.OnAdmitted(std::chrono::seconds(90));
  m.OnAdmitted(std::chrono::milliseconds(300));
  m.OnAdmitted(std::chrono::hours(2));
  std::string text = m.Render();
  EXPECT_EQ(Value(text, "berth_runs_admitted_total"), 3.0);
  EXPECT_EQ(Value(text, "berth_admission_wait_seconds_count"), 3.0);
  auto sum = Value(text, "berth_admission_wait_seconds_sum");
  ASSERT_TRUE(sum.has_value());
  EXPECT_NEAR(*sum, 90 + 0.3 + 7200, 1e-6);
  struct Bucket {
    std::string le;
    double want;
  };
  for (const Bucket& b : std::vector<Bucket>{{"0.1", 0}, {"0.5", 1}, {"60", 1}, {"300", 2}, {"3600", 2}, {"14400", 3},
                                             {"86400", 3}, {"+Inf", 3}}) {
    EXPECT_EQ(Value(text, "berth_admission_wait_seconds_bucket", {{"le", b.le}}), b.want) << "le=" << b.le;
  }
}

// Issue 47: each admitted run's first estimate's error, signed: -0.5 started later than said.
TEST(MetricsTest, EstimateErrorRatioIsAHistogramFromTheStart) {
  Metrics m;
  EXPECT_EQ(Value(m.Render(), "berth_estimate_error_ratio_count"), 0.0) << "the series exists before any run";
  m.OnEstimateError(-0.5);
  m.OnEstimateError(0.2);
  m.OnEstimateError(3);
  const std::string text = m.Render();
  EXPECT_EQ(Value(text, "berth_estimate_error_ratio_count"), 3.0);
  EXPECT_EQ(Value(text, "berth_estimate_error_ratio_bucket", {{"le", "-1"}}), 0.0);
  EXPECT_EQ(Value(text, "berth_estimate_error_ratio_bucket", {{"le", "-0.5"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_estimate_error_ratio_bucket", {{"le", "0.25"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_estimate_error_ratio_bucket", {{"le", "4"}}), 3.0);
}

TEST(MetricsTest, FinishedAndFailedRuns) {
  Metrics m;
  m.OnFinished("Succeeded", "Completed");
  m.OnFinished("Failed", "PodFailed");
  m.OnFinished("Failed", "PodFailed");
  m.OnFinished("Failed", "MaxDurationExceeded");
  std::string text = m.Render();
  EXPECT_EQ(Value(text, "berth_runs_finished_total", {{"phase", "Succeeded"}, {"reason", "Completed"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_runs_finished_total", {{"phase", "Failed"}, {"reason", "PodFailed"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_runs_finished_total", {{"phase", "Failed"}, {"reason", "MaxDurationExceeded"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_runs_failed_total", {{"reason", "PodFailed"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_runs_failed_total", {{"reason", "MaxDurationExceeded"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_runs_failed_total", {{"reason", "Completed"}}), std::nullopt)
      << "a success is not a failure";
}

TEST(MetricsTest, PreemptionsByFleet) {
  Metrics m;
  EXPECT_EQ(Value(m.Render(), "berth_preemptions_total", {{"fleet", "a100"}}), std::nullopt);
  m.OnPreempted("a100");
  m.OnPreempted("a100");
  m.OnPreempted("h100");
  std::string text = m.Render();
  EXPECT_EQ(Value(text, "berth_preemptions_total", {{"fleet", "a100"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_preemptions_total", {{"fleet", "h100"}}), 1.0);
}

TEST(MetricsTest, TeamsByTeamFleetAndResourceAndReclaimsByFleetAndTeam) {
  Metrics m;
  reconcilers::EngineObserver::PassSummary s;
  s.teams[{"vision", "a100", "gpu"}] = {16, 24, 8, 0};
  m.OnPass(s);
  m.OnReclaimed("a100", "audio");
  m.OnReclaimed("a100", "audio");
  m.OnReclaimed("a100", "");
  m.OnReclaimed("h100", "audio");
  std::string text = m.Render();
  const std::map<std::string, std::string> at = {{"team", "vision"}, {"fleet", "a100"}, {"resource", "gpu"}};
  auto with = [&](const char* state) {
    auto l = at;
    l["state"] = state;
    return l;
  };
  EXPECT_EQ(Value(text, "berth_team_resources", with("nominal")), 16.0);
  EXPECT_EQ(Value(text, "berth_team_resources", with("used")), 24.0);
  EXPECT_EQ(Value(text, "berth_team_resources", with("borrowed")), 8.0);
  EXPECT_EQ(Value(text, "berth_team_resources", with("lent")), 0.0);
  EXPECT_EQ(Value(text, "berth_reclaims_total", {{"fleet", "a100"}, {"team", "audio"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_reclaims_total", {{"fleet", "a100"}, {"team", ""}}), 1.0)
      << "a stopped run of no Team counts under team=\"\"";
  EXPECT_EQ(Value(text, "berth_reclaims_total", {{"fleet", "h100"}, {"team", "audio"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_preemptions_total", {{"fleet", "a100"}}), std::nullopt) << "a reclaim is not a preemption";
  // A team gone by the next pass reads 0.
  m.OnPass(reconcilers::EngineObserver::PassSummary{});
  EXPECT_EQ(Value(m.Render(), "berth_team_resources", with("used")), 0.0);
}

TEST(MetricsTest, WriteFailuresAndApiRequests) {
  Metrics m;
  m.OnWriteFailed("pod");
  m.OnWriteFailed("pod");
  m.OnWriteFailed("run-status");
  m.OnApiRequest("GET", 200);
  m.OnApiRequest("GET", 200);
  m.OnApiRequest("PATCH", 409);
  m.OnApiRequest("POST", 0);
  std::string text = m.Render();
  EXPECT_EQ(Value(text, "berth_reconcile_errors_total", {{"kind", "pod"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_reconcile_errors_total", {{"kind", "run-status"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_workqueue_retries_total"), 3.0);
  EXPECT_EQ(Value(text, "berth_api_requests_total", {{"verb", "GET"}, {"code", "200"}}), 2.0);
  EXPECT_EQ(Value(text, "berth_api_requests_total", {{"verb", "PATCH"}, {"code", "409"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_api_requests_total", {{"verb", "POST"}, {"code", "0"}}), 1.0);
  EXPECT_EQ(Value(text, "berth_api_requests_total", {{"verb", "GET"}, {"code", "409"}}), std::nullopt);
}

TEST(MetricsTest, Leader) {
  Metrics m;
  const std::vector<std::pair<bool, double>> steps = {{true, 1}, {true, 1}, {false, 0}, {true, 1}};
  for (const auto& [leader, want] : steps) {
    m.SetLeader(leader);
    EXPECT_EQ(Value(m.Render(), "berth_leader"), want);
  }
}

TEST(MetricsTest, EveryFamilyHasHelpAndTypeOnceUsed) {
  Metrics m;
  m.OnPass(FirstPass());
  m.OnAdmitted(std::chrono::seconds(1));
  m.OnFinished("Failed", "PodFailed");
  m.OnWriteFailed("pod");
  m.OnApiRequest("GET", 200);
  m.SetLeader(true);
  const std::string text = m.Render();
  struct Family {
    std::string name, type;
  };
  const std::vector<Family> families = {
      {"berth_pending_runs", "gauge"},
      {"berth_oldest_pending_run_wait_seconds", "gauge"},
      {"berth_runs_admitted_total", "counter"},
      {"berth_runs_finished_total", "counter"},
      {"berth_runs_failed_total", "counter"},
      {"berth_admission_wait_seconds", "histogram"},
      {"berth_scheduling_cycle_duration_seconds", "histogram"},
      {"berth_estimate_error_ratio", "histogram"},
      {"berth_scheduling_passes_total", "counter"},
      {"berth_fleet_blocks", "gauge"},
      {"berth_instances", "gauge"},
      {"berth_reconcile_errors_total", "counter"},
      {"berth_api_requests_total", "counter"},
      {"berth_workqueue_depth", "gauge"},
      {"berth_unreadable_objects", "gauge"},
      {"berth_workqueue_retries_total", "counter"},
      {"berth_leader", "gauge"},
      {"berth_events_total", "counter"},
  };
  for (const auto& f : families) {
    EXPECT_THAT(text, HasSubstr("# HELP " + f.name + " ")) << f.name;
    EXPECT_THAT(text, HasSubstr("# TYPE " + f.name + " " + f.type + "\n")) << f.name;
  }
  // Every sample belongs to one of these families.
  for (const auto& s : Parse(text)) {
    bool known = false;
    for (const auto& f : families) known = known || s.name.rfind(f.name, 0) == 0;
    EXPECT_TRUE(known) << s.name;
  }
}

TEST(MetricsTest, ConcurrentUpdatesAreAllCounted) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m, t] {
      for (int i = 0; i < 500; ++i) {
        m.OnApiRequest("GET", 200);
        if (t == 0 && i % 50 == 0) m.OnPass(FirstPass());
        if (t == 1 && i % 50 == 0) (void)m.Render();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(Value(m.Render(), "berth_api_requests_total", {{"verb", "GET"}, {"code", "200"}}), 2000.0);
}

}  // namespace
}  // namespace berth::controller
