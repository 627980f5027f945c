// Issue 5: metrics, probes and leader election against the real API server.

#include <gtest/gtest.h>

#include <fstream>
#include <regex>

#include "engine_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;

// Value of the sample `name{labels}` in Prometheus text, or -1.
double Sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

class Ops : public EngineTest {
 protected:
  Ops() {
    metrics_port_ = FreePort();
    probe_port_ = FreePort();
    controller_args_ = {"--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_),
                        "--health-probe-bind-address=127.0.0.1:" + std::to_string(probe_port_), "--queue-auth=false"};
  }
  std::string Metrics() { return HttpGet("http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics"); }
  int metrics_port_, probe_port_;
};

TEST_F(Ops, MetricsProbesAndQueueAfterAKnownScenario) {
  int code = 0;
  ASSERT_TRUE(Eventually([&] {
    HttpGet("http://127.0.0.1:" + std::to_string(probe_port_) + "/readyz", &code);
    return code == 200;
  }));
  EXPECT_EQ(HttpGet("http://127.0.0.1:" + std::to_string(probe_port_) + "/healthz", &code), "ok\n");
  EXPECT_EQ(code, 200);

  Nodes("m", 1, "4", "8Gi");
  Fleet("m", "m", "  blocks: 2\n");
  const std::string f = FleetName("m");
  const std::string q = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";
  Run("a", "  resources: {cpu: \"1\"}\n");
  Run("b", "  resources: {cpu: \"1\"}\n");
  ASSERT_TRUE(WaitPhase("a", "Scheduled"));
  ASSERT_TRUE(WaitPhase("b", "Scheduled"));
  Run("c", "  resources: {cpu: \"1\"}\n" + q);
  Run("d", "  resources: {cpu: \"1\"}\n");
  ASSERT_TRUE(WaitPhase("d", "Failed"));
  StartRun("a");
  FinishRun("a");
  ASSERT_TRUE(WaitPhase("c", "Scheduled"));
  // Nothing waits (a ended, b and c placed, d failed): the oldest wait is 0.
  std::string m;
  ASSERT_TRUE(Eventually([&] {
    m = Metrics();
    return Sample(m, "berth_oldest_pending_run_wait_seconds") == 0;
  })) << m;
  Run("e", "  resources: {cpu: \"1\"}\n" + q);
  ASSERT_TRUE(Eventually([&] { return Reason("e") == "NoCapacity"; }));

  ASSERT_TRUE(Eventually([&] {
    m = Metrics();
    return Sample(m, "berth_runs_admitted_total") == 3 &&
           Sample(m, "berth_pending_runs{fleet=\"" + f + "\",reason=\"NoCapacity\"}") == 1 &&
           Sample(m, "berth_oldest_pending_run_wait_seconds") > 0;
  })) << m;
  EXPECT_EQ(Sample(m, "berth_runs_finished_total{phase=\"Succeeded\",reason=\"Succeeded\"}"), 1) << m;
  EXPECT_EQ(Sample(m, "berth_runs_failed_total{reason=\"NoCapacity\"}"), 1) << m;
  EXPECT_EQ(Sample(m, "berth_fleet_blocks{fleet=\"" + f + "\",state=\"busy\"}"), 2) << m;
  EXPECT_EQ(Sample(m, "berth_fleet_blocks{fleet=\"" + f + "\",state=\"idle\"}"), 0) << m;
  EXPECT_EQ(Sample(m, "berth_instances{fleet=\"" + f + "\",state=\"Full\"}"), 1) << m;
  EXPECT_EQ(Sample(m, "berth_admission_wait_seconds_count"), 3) << m;
  EXPECT_GT(Sample(m, "berth_scheduling_cycle_duration_seconds_count"), 0) << m;
  EXPECT_GT(Sample(m, "berth_api_requests_total{code=\"200\",verb=\"PATCH\"}"), 0) << m;
  EXPECT_GT(Sample(m, "berth_api_requests_total{code=\"201\",verb=\"POST\"}"), 0) << m;
  EXPECT_EQ(Sample(m, "berth_leader"), 1) << m;
  EXPECT_GE(Sample(m, "berth_workqueue_depth"), 0) << m;

  std::string queue = HttpGet("http://127.0.0.1:" + std::to_string(metrics_port_) + "/queue?namespace=" + ns_, nullptr,
                              cp().AdminToken());
  auto doc = json::Parse(queue);
  ASSERT_TRUE(doc.ok()) << queue;
  const json::Value* items = json::Find(*doc, {"items"});
  ASSERT_TRUE(items != nullptr && items->IsArray() && items->Size() == 1) << queue;
  EXPECT_EQ(json::GetString((*items)[0], "name"), "e");
  EXPECT_EQ(json::GetInt((*items)[0], "position"), 1);
  EXPECT_EQ(json::GetString((*items)[0], "reason"), "NoCapacity");

  // e is placed once b ends: nothing waits, and the gauge says so.
  StartRun("b");
  FinishRun("b");
  ASSERT_TRUE(WaitPhase("e", "Scheduled"));
  ASSERT_TRUE(Eventually([&] {
    m = Metrics();
    return Sample(m, "berth_oldest_pending_run_wait_seconds") == 0;
  })) << m;
}

// Two controllers, 200 runs, the leader SIGKILLed mid-way: the standby takes over in time and
// nothing is lost or double-booked.
class LeaderElection : public EngineTest {
 protected:
  // The fixture's cleanup needs a controller to remove the runs' finalizers.
  void RestartPlainController() {
    controller_ = std::make_unique<ControllerProcess>(controller_args_);
    controller_->Start();
  }
  std::string Holder() {
    auto l = client()->Get(k8s::resources::kLeases.Path(ns_, "berth-controller"));
    return l.ok() ? json::GetString(json::Find(*l, {"spec", "holderIdentity"})) : "";
  }
};

TEST_F(LeaderElection, StandbyTakesOverWithinTheLeaseAndNothingIsLost) {
  controller_->Kill();  // the fixture's controller does not elect; two that do take its place
  std::vector<std::string> le = {"--leader-elect", "--leader-election-namespace=" + ns_,
                                 "--leader-election-lease-duration=7s", "--leader-election-renew-deadline=4s",
                                 "--leader-election-retry-period=1s"};
  auto first = std::make_unique<ControllerProcess>(le, "first");
  first->Start();
  ASSERT_TRUE(Eventually([&] { return !Holder().empty(); })) << first->Log();
  auto second = std::make_unique<ControllerProcess>(le, "second");
  second->Start();

  constexpr int kNodes = 50, kRunCount = 200;
  Nodes("le", kNodes, "4", "16Gi");
  Fleet("le", "le", "  blocks: 4\n");
  for (int i = 0; i < kRunCount; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "le%03d", i);
    auto r = client()->Create(kRuns.Path(ns_), std::string(R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")") +
                                                   name + R"("},"spec":{"resources":{"cpu":"1"},"retry":{"onEvents":["no-capacity"],"duration":"off"},"template":{"spec":{"containers":[{"name":"main","image":"busybox"}]}}}})");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  ASSERT_TRUE(Eventually([&] { return CountPhase("Scheduled") >= 50; }, std::chrono::seconds(60)));
  std::string old_holder = Holder();
  ControllerProcess* leader = first->Log().find("became the leader") != std::string::npos ? first.get() : second.get();
  ControllerProcess* standby = leader == first.get() ? second.get() : first.get();
  ASSERT_NE(standby->Log().find("trying to acquire"), std::string::npos);
  EXPECT_EQ(standby->Log().find("became the leader"), std::string::npos) << "two leaders";
  leader->Kill();
  auto killed_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually([&] { return standby->Log().find("became the leader") != std::string::npos; }, std::chrono::seconds(20)))
      << standby->Log();
  auto took = std::chrono::steady_clock::now() - killed_at;
  std::printf("standby took over %lld ms after the leader was killed\n",
              static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_NE(Holder(), old_holder);

  ASSERT_TRUE(Eventually([&] { return CountPhase("Scheduled") == kRunCount; }, std::chrono::seconds(120)));
  auto runs = client()->List(kRuns.Path(ns_));
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->items.size(), static_cast<size_t>(kRunCount));
  std::map<std::string, int> blocks;
  std::set<std::string> pods_expected;
  for (auto& run : runs->items) {
    const json::Value& p = (*json::Find(run, {"status", "placement"}))[0];
    blocks[json::GetString(p, "node")] += static_cast<int>(json::GetInt(p, "blocks"));
    pods_expected.insert(json::GetString(p, "pod"));
  }
  for (auto& [node, b] : blocks) EXPECT_LE(b, 4) << node;
  ASSERT_TRUE(Eventually([&] {
    auto pods = client()->List(kPods.Path(ns_));
    return pods.ok() && pods->items.size() == pods_expected.size();
  }, std::chrono::seconds(60)));
  auto pods = client()->List(kPods.Path(ns_));
  for (auto& p : pods->items) EXPECT_TRUE(pods_expected.count(json::GetString(json::Find(p, {"metadata", "name"}))));
  EXPECT_EQ(standby->Stop(), 0);
  RestartPlainController();
}

TEST_F(LeaderElection, APausedLeaderDoesNotWriteWhenItWakesUp) {
  controller_->Kill();
  std::vector<std::string> le = {"--leader-elect", "--leader-election-namespace=" + ns_,
                                 "--leader-election-lease-duration=5s", "--leader-election-renew-deadline=3s",
                                 "--leader-election-retry-period=1s"};
  ControllerProcess a(le, "a");
  a.Start();
  ASSERT_TRUE(Eventually([&] { return a.Log().find("became the leader") != std::string::npos; }));
  ControllerProcess b(le, "b");
  b.Start();
  a.Pause();
  ASSERT_TRUE(Eventually([&] { return b.Log().find("became the leader") != std::string::npos; }, std::chrono::seconds(20)));
  Nodes("p", 1, "4", "8Gi");
  Fleet("p", "p");
  a.Resume();  // wakes with a stale belief that it leads
  ASSERT_TRUE(Eventually([&] { return !a.Running(); }, std::chrono::seconds(10))) << a.Log();
  EXPECT_TRUE(a.Log().find("exiting") != std::string::npos) << a.Log();
  Run("after", "");
  ASSERT_TRUE(WaitPhase("after", "Scheduled"));  // the new leader works
  EXPECT_EQ(b.Stop(), 0);
  RestartPlainController();
}

}  // namespace
}  // namespace berth::testing

namespace berth::testing {
namespace {

// The dashboard's write path (kubectl berth dashboard, the user's kubeconfig; issue 44): cross-site
// protection (the CSRF header, an Origin of its own address, no other Host) before anything is sent.
TEST_F(Ops, DashboardPriorityChangeNeedsTheCsrfHeaderAndItsOwnOrigin) {
  Run("target", "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  ASSERT_TRUE(Eventually([&] { return !Phase("target").empty(); }));
  const int port = FreePort();
  auto dashboard = ControllerProcess::LocalDashboard(cp().kubeconfig(), port, "dashboard-ops");
  ASSERT_TRUE(dashboard->StartServing()) << dashboard->Log();
  const std::string base = ControllerProcess::LocalDashboardUrl(port);
  auto post = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {"curl", "-s", "-m", "30", "-o", "/dev/stdout", "-w", "\n%{http_code}", "-X", "POST",
                                     "--data", R"({"priority":77})", "-H", "Content-Type: application/json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(base + "api/runs/" + ns_ + "/target/priority");
    CommandResult r = RunCommand(argv);
    auto nl = r.out.rfind('\n');
    return std::make_pair(std::stoi(r.out.substr(nl + 1)), r.out.substr(0, nl));
  };
  auto [c1, b1] = post({});
  EXPECT_EQ(c1, 403) << b1;
  EXPECT_NE(b1.find("X-Berth-CSRF"), std::string::npos) << b1;
  auto [c2, b2] = post({"-H", "X-Berth-CSRF: 1", "-H", "Origin: http://evil.example"});
  EXPECT_EQ(c2, 403) << b2;
  auto [c3, b3] = post({"-H", "X-Berth-CSRF: 1", "-H", "Host: evil.example:" + std::to_string(port)});
  EXPECT_EQ(c3, 403) << b3;
  EXPECT_EQ(Kubectl({"get", "run", "target", "-o", "jsonpath={.spec.priority}"}).out, "50");
  auto [c4, b4] = post({"-H", "X-Berth-CSRF: 1", "-H", "Origin: http://127.0.0.1:" + std::to_string(port)});
  EXPECT_EQ(c4, 200) << b4;
  EXPECT_EQ(Kubectl({"get", "run", "target", "-o", "jsonpath={.spec.priority}"}).out, "77");
  int code = 0;
  std::string page = HttpGet(base, &code);
  EXPECT_EQ(code, 200);
  EXPECT_NE(page.find("<html"), std::string::npos);
}

}  // namespace
}  // namespace berth::testing
