// Issue 47: Team.status.usageHistory through the real API server: the CRD keeps what the codec
// writes (api::TeamUsagePatch) at the size bound, refuses what it must, and berth's own Team
// status writes (TeamKeeper) leave it alone.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/user_usage.h"
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

// Issue 47, the fold: what each run's status records as its span (heldSince, held, releasedAt),
// and the Team's usageHistory, read together from the API.
class UsageFold : public Usage {
 protected:
  UsageFold() {
    metrics_port_ = FreePort();
    controller_args_ = {"--team-status-interval=1s", "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_)};
  }
  int metrics_port_ = 0;

  api::RunStatus Status(const std::string& run) {
    json::Document d = RunDoc(run);
    const json::Value* s = d.IsObject() ? json::Find(d, {"status"}) : nullptr;
    return s != nullptr ? api::DecodeRunStatusLeniently(*s) : api::RunStatus{};
  }
  static bool Accounted(const api::RunStatus& s) {
    return s.released_at && s.accounted_until && *s.accounted_until >= *s.released_at;
  }
  // The runs' spans up to `until` (a span still open counts up to it), in GPU-, CPU- and
  // memory-GiB-seconds.
  static sched::UsageHours Expected(const std::vector<api::RunStatus>& runs, base::TimePoint until) {
    sched::UsageHours out;
    for (const auto& s : runs) {
      if (!s.held_since || !s.held) continue;
      const base::TimePoint end = s.released_at ? std::min(s.released_at->point(), until) : until;
      const double secs = std::max(0.0, std::chrono::duration<double>(end - s.held_since->point()).count());
      out.gpu += static_cast<double>(s.held->gpus) * secs;
      out.cpu += static_cast<double>(s.held->cpu_milli) / 1000.0 * secs;
      out.memory_gib += static_cast<double>(s.held->memory_bytes) / double(int64_t{1} << 30) * secs;
    }
    return out;
  }
  // The team's history for this test's namespace and fleet, in resource-seconds, and its watermark.
  std::pair<sched::UsageHours, std::optional<api::Time>> Recorded(const std::string& fleet) {
    sched::UsageHours out;
    auto read = client()->Get(kTeams.Path("", team_));
    if (!read.ok()) return {out, std::nullopt};
    auto team = api::DecodeTeam(*read);
    if (!team.ok()) return {out, std::nullopt};
    for (const auto& day : team->status.usage_history) {
      if (day.fleet != fleet) continue;
      auto n = day.by_namespace.find(ns_);
      if (n == day.by_namespace.end()) continue;
      out.gpu += n->second.gpu * 3600;
      out.cpu += n->second.cpu * 3600;
      out.memory_gib += n->second.memory_gib * 3600;
    }
    return {out, team->status.usage_folded_until};
  }
  // Recorded equals the spans of `runs` up to the watermark, to the second (read until a Team
  // and the runs' statuses agree: the runs are read after the Team, so a fold in between shows).
  void ExpectRecordedEqualsSpans(const std::vector<std::string>& runs, const std::string& fleet) {
    std::string last;
    const bool same = Eventually([&] {
      auto [recorded, until] = Recorded(fleet);
      if (!until) return false;
      std::vector<api::RunStatus> statuses;
      for (const auto& r : runs) statuses.push_back(Status(r));
      const sched::UsageHours want = Expected(statuses, until->point());
      last = "recorded " + std::to_string(recorded.gpu) + " GPU-s, " + std::to_string(recorded.cpu) + " CPU-s, " +
             std::to_string(recorded.memory_gib) + " GiB-s; spans " + std::to_string(want.gpu) + ", " +
             std::to_string(want.cpu) + ", " + std::to_string(want.memory_gib);
      return want.gpu > 0 && std::abs(recorded.gpu - want.gpu) < 0.01 && std::abs(recorded.cpu - want.cpu) < 0.01 &&
             std::abs(recorded.memory_gib - want.memory_gib) < 0.01;
    }, std::chrono::seconds(60));
    EXPECT_TRUE(same) << last;
  }
};

// Runs finished and running on a fleet: the Team's usageHistory for the namespace equals the
// spans their statuses record (the blocks' resources from admission until berth saw them free),
// to the second; a finished run's span is accounted (accountedUntil) before anything else may
// remove it. The controller is then killed (SIGKILL) in the middle of a run and another started:
// after it, still equal (no second lost, none counted twice); the metric counts what it folded.
TEST_F(UsageFold, TheHistoryEqualsTheRunsSpansAcrossAKilledController) {
  team_ = "usage-" + ns_;
  CommandResult made = cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team_ +
                                                              "}\nspec:\n  namespaces: [" + ns_ + "]\n");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  Nodes("u", 2, "16", "64Gi", 8);
  Fleet("u", "u", "  blocks: 8\n");  // a block: 1 GPU, 2 CPUs, 8 GiB
  const std::string fleet = FleetName("u");

  Run("done", "  resources: {gpu: 2}\n");
  Run("going", "  resources: {gpu: 3, cpu: \"5\"}\n");  // 3 blocks (CPU 5 fits in 3 blocks' 6)
  ASSERT_TRUE(WaitPhase("done", "Scheduled"));
  ASSERT_TRUE(WaitPhase("going", "Scheduled"));
  StartRun("done");
  StartRun("going");
  // The span's resources are its blocks'.
  const api::RunStatus going = Status("going");
  ASSERT_TRUE(going.held_since.has_value());
  ASSERT_TRUE(going.held.has_value());
  EXPECT_EQ(going.held->fleet, fleet);
  EXPECT_EQ(going.held->gpus, 3);
  EXPECT_EQ(going.held->cpu_milli, 6000);
  EXPECT_EQ(going.held->memory_bytes, int64_t{24} << 30);
  // Let the spans grow past a few folds, then finish one run.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  FinishRun("done");
  ASSERT_TRUE(Eventually([&] { return Accounted(Status("done")); }, std::chrono::seconds(60))) << "done's span never accounted";
  const api::RunStatus done = Status("done");
  EXPECT_EQ(done.held->gpus, 2);
  EXPECT_GE(done.released_at->point(), done.held_since->point());
  EXPECT_FALSE(Accounted(Status("going")));
  ExpectRecordedEqualsSpans({"done", "going"}, fleet);

  // SIGKILL mid-run; the next controller folds on from the Team's watermark.
  controller_->Kill();
  const auto [before_kill, kill_until] = Recorded(fleet);
  ASSERT_TRUE(kill_until.has_value());
  controller_ = std::make_unique<ControllerProcess>(controller_args_);
  controller_->Start();
  ASSERT_TRUE(Eventually([&] {
    auto [recorded, until] = Recorded(fleet);
    return until && until->point() > kill_until->point() + std::chrono::seconds(2);
  }, std::chrono::seconds(60))) << "the new controller did not fold";
  ExpectRecordedEqualsSpans({"done", "going"}, fleet);
  FinishRun("going");
  ASSERT_TRUE(Eventually([&] { return Accounted(Status("going")); }, std::chrono::seconds(60))) << "going's span never accounted";
  ExpectRecordedEqualsSpans({"done", "going"}, fleet);
  // Nothing more is folded once every span is accounted: the history stays as the spans say.
  const auto [final_recorded, final_until] = Recorded(fleet);
  ASSERT_TRUE(Eventually([&] {
    auto [recorded, until] = Recorded(fleet);
    return until && final_until && until->point() > final_until->point();
  }, std::chrono::seconds(60)));
  EXPECT_NEAR(Recorded(fleet).first.gpu, final_recorded.gpu, 0.01);

  // The new controller's counter: what it folded of this namespace since it started (> 0, no more
  // than the whole).
  const std::string metrics = HttpGet("http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics", nullptr, cp().AdminToken());
  std::optional<double> counted;
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("berth_usage_resource_seconds_total{", 0) != 0) continue;
    bool ours = true;
    for (const std::string& label : {"fleet=\"" + fleet + "\"", "namespace=\"" + ns_ + "\"", std::string("resource=\"gpu\""),
                                     "team=\"" + team_ + "\""}) {
      ours = ours && line.find(label) != std::string::npos;
    }
    if (ours) counted = std::stod(line.substr(line.rfind(' ') + 1));
  }
  ASSERT_TRUE(counted.has_value()) << metrics.substr(0, 3000);
  EXPECT_GT(*counted, 0);
  EXPECT_LE(*counted, final_recorded.gpu + 0.01);
}

// Per-user figures across a Lease handover: two controllers elect a leader; runs of two users
// run; the leader is SIGKILLed mid-run and the other takes over; once the runs end, the queue
// API's by=user answer (of the new leader, asked as the API server asks: its front-proxy client
// certificate) gives each user their run's span to the second and one run each: nothing lost,
// nothing counted twice.
TEST_F(UsageFold, PerUserFiguresEqualTheSpansAcrossALeaseHandover) {
  controller_->Kill();  // the fixture's controller does not elect; two that do take its place
  team_ = "handover-" + ns_;
  ASSERT_EQ(cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team_ +
                                                    "}\nspec:\n  namespaces: [" + ns_ + "]\n").exit_code, 0);
  const std::string certs = cp().dir() + "/handover-certs-" + ns_;
  CommandResult made = RunCommand({"bash", "-c",
                                   "set -e; mkdir -p \"$0\"; cd \"$0\"; openssl req -x509 -newkey rsa:2048 -nodes -keyout tls.key "
                                   "-out tls.crt -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null",
                                   certs});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // The per-user stores go to the leader-election namespace: this test's.
  std::map<ControllerProcess*, int> port;
  std::vector<std::unique_ptr<ControllerProcess>> procs;
  for (const char* name : {"first", "second"}) {
    const int p = FreePort();
    procs.push_back(std::make_unique<ControllerProcess>(
        std::vector<std::string>{"--leader-elect", "--leader-election-namespace=" + ns_, "--leader-election-lease-duration=5s",
                                 "--leader-election-renew-deadline=3s", "--leader-election-retry-period=500ms",
                                 "--team-status-interval=1s", "--queue-api-bind-address=127.0.0.1:" + std::to_string(p),
                                 "--queue-api-cert-dir=" + certs},
        name));
    port[procs.back().get()] = p;
    procs.back()->Start();
  }
  auto leader = [&]() -> ControllerProcess* {
    for (auto& p : procs) {
      if (p->Running() && p->Log().find("became the leader") != std::string::npos) return p.get();
    }
    return nullptr;
  };
  ASSERT_TRUE(Eventually([&] { return leader() != nullptr; })) << procs[0]->Log() << procs[1]->Log();
  Nodes("h", 1, "16", "64Gi", 8);
  Fleet("h", "h", "  blocks: 8\n");  // a block: 1 GPU
  const std::string ann = "ann-" + ns_, ben = "ben-" + ns_;
  for (const auto& [run, user, gpus] : std::vector<std::tuple<std::string, std::string, int>>{{"ann-run", ann, 2}, {"ben-run", ben, 3}}) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata:\n  name: " + run + "\n  annotations: {berth.dev/submitted-by: " +
          user + "}\nspec:\n  resources: {gpu: " + std::to_string(gpus) +
          "}\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  }
  ASSERT_TRUE(WaitPhase("ann-run", "Scheduled")) << Message("ann-run");
  ASSERT_TRUE(WaitPhase("ben-run", "Scheduled")) << Message("ben-run");
  StartRun("ann-run");
  StartRun("ben-run");
  std::this_thread::sleep_for(std::chrono::seconds(3));  // a few folds of the first leader
  ControllerProcess* first = leader();
  ASSERT_NE(first, nullptr);
  first->Kill();
  ASSERT_TRUE(Eventually([&] { return leader() != nullptr; }, std::chrono::seconds(30))) << "no new leader";
  ControllerProcess* second = leader();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the new leader folds on
  FinishRun("ann-run");
  FinishRun("ben-run");
  for (const char* run : {"ann-run", "ben-run"}) {
    ASSERT_TRUE(Eventually([&] { return Accounted(Status(run)); }, std::chrono::seconds(60))) << run << " never accounted";
  }
  auto span = [&](const std::string& run) {
    const api::RunStatus s = Status(run);
    return static_cast<double>(s.held->gpus) * std::chrono::duration<double>(s.released_at->point() - s.held_since->point()).count();
  };
  const double ann_span = span("ann-run"), ben_span = span("ben-run");
  ASSERT_GT(ann_span, 0);
  ASSERT_GT(ben_span, 0);
  // The new leader's answer, as the API server would ask it for an admin.
  const std::string dir = cp().dir();
  std::map<std::string, std::pair<double, int64_t>> rows;  // user -> (GPU-seconds, runs)
  std::string body;
  const bool equal = Eventually([&] {
    body = RunCommand({"curl", "-s", "-m", "30", "-k", "--cert", dir + "/front-proxy-client.crt", "--key",
                       dir + "/front-proxy-client.key", "-H", "X-Remote-User: admin", "-H", "X-Remote-Group: system:masters",
                       "https://127.0.0.1:" + std::to_string(port[second]) +
                           "/apis/queue.berth.dev/v1alpha1/usage?by=user&since=1d"})
               .out;
    rows.clear();
    auto doc = json::Parse(body);
    if (!doc.ok() || json::Find(*doc, {"rows"}) == nullptr) return false;
    for (const auto& r : json::Find(*doc, {"rows"})->GetArray()) {
      rows[json::GetString(json::Find(r, {"name"}))] = {json::Find(r, {"gpuHours"})->GetDouble() * 3600, json::GetInt(r, "runs")};
    }
    return std::abs(rows[ann].first - ann_span) < 0.01 && std::abs(rows[ben].first - ben_span) < 0.01;
  }, std::chrono::seconds(60));
  EXPECT_TRUE(equal) << "ann's span " << ann_span << " GPU-s, ben's " << ben_span << "\n" << body;
  EXPECT_EQ(rows[ann].second, 1) << body;
  EXPECT_EQ(rows[ben].second, 1) << body;
  EXPECT_NE(first, second);
  // The fixture's cleanup needs a controller to remove the runs' finalizers.
  for (auto& p : procs) {
    if (p->Running()) p->Stop();
  }
  controller_ = std::make_unique<ControllerProcess>(controller_args_);
  controller_->Start();
  (void)client()->Delete("/api/v1/namespaces/" + ns_ + "/configmaps/" + api::UserUsageName(team_));
}

}  // namespace
}  // namespace berth::testing
