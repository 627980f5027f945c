// Issue 6: the dashboard, driven in Debian's headless Chromium against a real controller and API
// server (tests/dashboard/drive.mjs), then the API state re-checked from here. The page is served
// as users get it (issue 44): `kubectl berth dashboard` with each user's own kubeconfig, the queue,
// fleets and teams read through berth's aggregated queue API.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include "engine_fixture.h"
#include "k8s/timefmt.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;

const std::string kSource = BERTH_SOURCE_DIR;

class Dashboard : public EngineTest {
 protected:
  Dashboard() {
    port_ = FreePort();
    // The controller's own queue, fleets and teams routes open (issue 44: by default they answer
    // 401 and are read through the API server; kubectl berth dashboard is cli_test's).
    controller_args_ = {"--metrics-bind-address=127.0.0.1:" + std::to_string(port_), "--queue-auth=false"};
  }
  std::string Url(const std::string& path = "") const { return "http://127.0.0.1:" + std::to_string(port_) + "/" + path; }

  void WaitServing() {
    int code = 0;
    ASSERT_TRUE(Eventually([&] {
      HttpGet(Url("api/queue"), &code, cp().AdminToken());
      return code == 200;
    })) << controller_->Log();
  }

  // tests/dashboard/fleet-cell.mjs in Chromium: the Fleets page of the admin's `kubectl berth
  // dashboard` (the controller restarted with the queue API registered) shows `text` under
  // `column` in `node`'s row of `fleet`'s instances. Its output is printed.
  CommandResult DriveFleetCell(const std::string& fleet, const std::string& node, const std::string& column,
                               const std::string& text, const std::string& shot) {
    QueueApiRegistration queue_api(ns_);
    if (!RestartServingTheQueueApi(queue_api)) {
      return CommandResult{.exit_code = 1, .out = "", .err = "queue API not registered\n" + controller_->Log()};
    }
    const int port = FreePort();
    auto dashboard = ControllerProcess::LocalDashboard(cp().kubeconfig(), port, "dashboard-" + shot);
    if (!dashboard->StartServing()) return CommandResult{.exit_code = 1, .out = "", .err = dashboard->Log()};
    std::string modules;
    if (CommandResult setup = BrowserModules(modules); setup.exit_code != 0) return setup;
    CommandResult drive = RunCommand({"node", kSource + "/tests/dashboard/fleet-cell.mjs", "--modules=" + modules,
                                      "--url=" + ControllerProcess::LocalDashboardUrl(port), "--fleet=" + fleet,
                                      "--node=" + node, "--column=" + column, "--text=" + text, "--shot=" + shot});
    std::printf("---- tests/dashboard/fleet-cell.mjs ----\n%s%s", drive.out.c_str(), drive.err.c_str());
    return drive;
  }

  // The controller restarted with `queue_api`'s flags (its in-memory series start then), the
  // APIService registered; false when the API server never found it available.
  bool RestartServingTheQueueApi(QueueApiRegistration& queue_api) {
    controller_->Stop();
    const std::vector<std::string> queue_args = queue_api.ControllerArgs();
    controller_args_.insert(controller_args_.end(), queue_args.begin(), queue_args.end());
    controller_ = std::make_unique<ControllerProcess>(controller_args_, "controller-queue-api");
    controller_->Start();
    return queue_api.Register();
  }

  // tests/dashboard/setup.sh: the folder whose node_modules has playwright-core, in `modules`.
  static CommandResult BrowserModules(std::string& modules) {
    CommandResult setup = RunCommand({"bash", kSource + "/tests/dashboard/setup.sh"});
    modules = setup.out;
    while (!modules.empty() && (modules.back() == '\n' || modules.back() == ' ')) modules.pop_back();
    return setup;
  }

  int64_t SpecPriority(const std::string& run) {
    auto d = RunDoc(run);
    const json::Value* v = d.IsObject() ? json::Find(d, {"spec", "priority"}) : nullptr;
    return v != nullptr && v->IsInt64() ? v->GetInt64() : -1;
  }

  // Names of the queued runs of this namespace in the controller's order, e.g. "a,b,c".
  std::string QueueOrder() {
    auto doc = json::Parse(HttpGet(Url("api/queue?namespace=" + ns_), nullptr, cp().AdminToken()));
    if (!doc.ok()) return "?";
    const json::Value* items = json::Find(*doc, {"items"});
    std::string out;
    if (items == nullptr || !items->IsArray()) return "?";
    for (auto& it : items->GetArray()) out += (out.empty() ? "" : ",") + json::GetString(it, "name");
    return out;
  }

  int port_;
};

// The page as users get it (kubectl berth dashboard, the admin's kubeconfig here; issue 44): the
// controller serves none of it any more.
TEST_F(Dashboard, ServesThePageAndItsFilesWithNothingFromOutside) {
  WaitServing();
  int code = 0;
  const std::string moved = HttpGet(Url(), &code);
  EXPECT_EQ(code, 404);
  EXPECT_NE(moved.find("kubectl berth dashboard"), std::string::npos) << moved;
  const int port = FreePort();
  auto dashboard = ControllerProcess::LocalDashboard(cp().kubeconfig(), port, "dashboard-files");
  ASSERT_TRUE(dashboard->StartServing()) << dashboard->Log();
  auto Local = [&](const std::string& path = "") { return ControllerProcess::LocalDashboardUrl(port) + path; };
  std::string index = HttpGet(Local(), &code);
  EXPECT_EQ(code, 200);
  EXPECT_NE(index.find("<script src=\"static/app.js\"></script>"), std::string::npos) << index;
  EXPECT_NE(index.find("href=\"static/style.css\""), std::string::npos) << index;
  for (const char* file : {"app.js", "teams.js", "format.js", "style.css", "favicon.svg"}) {
    std::string body = HttpGet(Local(std::string("static/") + file), &code);
    EXPECT_EQ(code, 200) << file;
    EXPECT_FALSE(body.empty()) << file;
  }
  // Relative URLs only and no external resource, so the page works under any proxy prefix.
  for (const std::string& body :
       {index, HttpGet(Local("static/app.js")), HttpGet(Local("static/teams.js")), HttpGet(Local("static/format.js")),
        HttpGet(Local("static/style.css"))}) {
    for (const char* bad : {"src=\"/", "href=\"/", "src=\"http", "href=\"http", "url(http", "@import", "fetch('/", "fetch(\"/"}) {
      EXPECT_EQ(body.find(bad), std::string::npos) << bad;
    }
  }
  HttpGet(Local("static/nothing.js"), &code);
  EXPECT_EQ(code, 404);
}

TEST_F(Dashboard, QueuePriorityChangesFleetsAndRunDetailInChromium) {
  // The editor may read and patch runs (and read events and logs) in this namespace; the reader (a
  // ServiceAccount) may read the same but patch nothing; the viewer may do nothing.
  Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: run-editor}
rules:
- apiGroups: [berth.dev]
  resources: [runs]
  verbs: [get, list, patch]
- apiGroups: [""]
  resources: [events, pods]
  verbs: [get, list]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: run-reader}
rules:
- apiGroups: [berth.dev]
  resources: [runs]
  verbs: [get, list]
- apiGroups: [""]
  resources: [events, pods]
  verbs: [get, list]
- apiGroups: [""]
  resources: [pods/log]
  verbs: [get]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: reader}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader-reads-runs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: run-reader}
subjects: [{kind: ServiceAccount, name: reader}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: editor-edits-runs}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: run-editor}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: editor}]
)");

  // Tools first (Debian chromium, playwright-core from the npm registry), while the scene is set.
  CommandResult setup = RunCommand({"bash", kSource + "/tests/dashboard/setup.sh"});
  ASSERT_EQ(setup.exit_code, 0) << setup.out << setup.err;
  std::string modules = setup.out;
  while (!modules.empty() && (modules.back() == '\n' || modules.back() == ' ')) modules.pop_back();

  // One fleet with one slot, held by a running blocker (maxDuration 2h: a's estimated start is its
  // end); a, b, c queue behind it with the same priority.
  std::string node = Nodes("slot", 1, "2", "4Gi").front();
  Fleet("slot", "slot");
  Run("blocker", "  maxDuration: 2h\n");
  ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
  StartRun("blocker");
  const std::string queued = "  priority: 50\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n";
  for (const char* name : {"a", "b", "c"}) {
    Run(name, queued);
    ASSERT_TRUE(Eventually([&] { return Reason(name) == "NoCapacity"; })) << name << ": " << Message(name);
  }
  WaitServing();
  ASSERT_TRUE(Eventually([&] { return QueueOrder() == "a,b,c"; })) << QueueOrder();

  // Each user's dashboard, with a kubeconfig of their own token. The queue, fleets and teams come
  // through the aggregated queue API (served by this test's controller); the editor may list
  // fleets and teams.
  QueueApiRegistration queue_api(ns_);
  controller_->Stop();
  std::vector<std::string> args = controller_args_;
  for (const auto& a : queue_api.ControllerArgs()) args.push_back(a);
  controller_ = std::make_unique<ControllerProcess>(args, "controller-queue-api");
  controller_->Start();
  ASSERT_TRUE(queue_api.Register()) << controller_->Log();
  Apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: dashboard-editor-" + ns_ +
        "}\nrules: [{apiGroups: [berth.dev], resources: [fleets, teams], verbs: [get, list]}]\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: dashboard-editor-" + ns_ +
        "}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: dashboard-editor-" + ns_ +
        "}\nsubjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: editor}]\n");
  struct DropClusterRbac {
    std::string name;
    ~DropClusterRbac() { ControlPlane::Get().Kubectl({"delete", "clusterrolebinding,clusterrole", name, "--ignore-not-found"}); }
  } drop_rbac{"dashboard-editor-" + ns_};
  CommandResult reader = Kubectl({"create", "token", "reader"});
  ASSERT_EQ(reader.exit_code, 0) << reader.err;
  std::string reader_token = reader.out;
  while (!reader_token.empty() && (reader_token.back() == '\n' || reader_token.back() == ' ')) reader_token.pop_back();
  std::map<std::string, std::string> tokens = {
      {"editor", cp().TokenOf("editor")}, {"viewer", cp().TokenOf("viewer")}, {"reader", reader_token}};
  std::map<std::string, std::unique_ptr<ControllerProcess>> dashboards;
  std::map<std::string, std::string> urls;
  for (const auto& [who, token] : tokens) {
    const int port = FreePort();
    dashboards[who] = ControllerProcess::LocalDashboard(cp().KubeconfigOf(who + "-" + ns_, "    token: " + token + "\n"),
                                                        port, "dashboard-" + who);
    ASSERT_TRUE(dashboards[who]->StartServing()) << dashboards[who]->Log();
    urls[who] = ControllerProcess::LocalDashboardUrl(port);
  }

  const char* artifacts_env = std::getenv("BERTH_TEST_ARTIFACTS");
  std::string artifacts = artifacts_env != nullptr && *artifacts_env ? artifacts_env : kSource + "/build/test-artifacts/dashboard";
  std::vector<std::string> argv = {"node",
                                   kSource + "/tests/dashboard/drive.mjs",
                                   "--modules=" + modules,
                                   "--editor-url=" + urls["editor"],
                                   "--viewer-url=" + urls["viewer"],
                                   "--reader-url=" + urls["reader"],
                                   "--namespace=" + ns_,
                                   "--fleet=" + FleetName("slot"),
                                   "--node=" + node,
                                   "--artifacts=" + artifacts};
  if (const char* docs = std::getenv("BERTH_UPDATE_DOCS_IMAGES"); docs != nullptr && std::string(docs) == "1") {
    argv.push_back("--docs-images=" + kSource + "/docs/images");
  }
  CommandResult drive = RunCommand(argv);
  std::printf("---- tests/dashboard/drive.mjs ----\n%s%s", drive.out.c_str(), drive.err.c_str());
  ASSERT_EQ(drive.exit_code, 0) << "the browser checks failed; screenshots in " << artifacts;

  // The API agrees with what the page showed: only the editor's changes happened. The blocker
  // was stopped (by the editor; the reader was refused), b suspended and resumed keeping its place,
  // and c, first in the queue, got the freed slot.
  EXPECT_EQ(SpecPriority("c"), 90);
  EXPECT_EQ(SpecPriority("a"), 50);
  EXPECT_EQ(SpecPriority("b"), 50);
  EXPECT_EQ(Phase("blocker"), "Failed");
  EXPECT_EQ(Reason("blocker"), "Stopped");
  EXPECT_TRUE(WaitPhase("c", "Scheduled")) << Phase("c") << ": " << Message("c");
  EXPECT_TRUE(Eventually([&] { return QueueOrder() == "a,b"; })) << QueueOrder();
  for (const char* name : {"a", "b"}) EXPECT_EQ(Phase(name), "Pending") << name;
  const json::Value* suspend = json::Find(RunDoc("b"), {"spec", "suspend"});
  EXPECT_TRUE(suspend != nullptr && suspend->IsBool() && !suspend->GetBool()) << "b was resumed";
  // The editor's dashboard made the changes (its log says so); the reader's made none; no user's
  // token is in any log.
  for (auto& [who, d] : dashboards) d->Stop();
  const std::string log = dashboards["editor"]->Log();
  EXPECT_NE(log.find("priority of run " + ns_ + "/c set to 90"), std::string::npos) << log;
  EXPECT_EQ(log.find("priority of run " + ns_ + "/a set to"), std::string::npos) << log;
  EXPECT_NE(log.find("stop of run " + ns_ + "/blocker requested"), std::string::npos) << log;
  EXPECT_NE(log.find("suspend of run " + ns_ + "/b requested"), std::string::npos) << log;
  EXPECT_NE(log.find("resume of run " + ns_ + "/b requested"), std::string::npos) << log;
  EXPECT_EQ(dashboards["reader"]->Log().find("requested"), std::string::npos) << dashboards["reader"]->Log();
  for (const auto& [who, token] : tokens) {
    ASSERT_FALSE(token.empty()) << who;
    EXPECT_EQ(controller_->Log().find(token), std::string::npos) << who << "'s token is in the controller's log";
    for (auto& [name, d] : dashboards) {
      EXPECT_EQ(d->Log().find(token), std::string::npos) << who << "'s token is in " << name << "'s dashboard log";
    }
  }
}

// Issue 49: a DRA fleet's instance shows its devices and the run whose ResourceClaim holds them in
// the Fleets page, in Chromium (tests/dashboard/fleet-cell.mjs). The node is simulated: its
// ResourceSlice (4 devices of a driver of this test's own, in a complete pool) is written here as a
// driver's kubelet plugin publishes it, and the run's claim is allocated here as kube-scheduler's
// DRA plugin allocates it (this binary runs no kube-scheduler; dra_test does it on real nodes).
TEST_F(Dashboard, ADraFleetShowsItsDevicesAndTheRunHoldingThemInChromium) {
  const std::string node = Nodes("dra", 1, "4", "8Gi").front();
  const std::string driver = ns_ + ".example.com";
  const std::string cls = "dash-" + ns_;
  struct DropClusterObjects {
    std::string cls;
    ~DropClusterObjects() { ControlPlane::Get().Kubectl({"delete", "deviceclass,resourceslice", cls, "--ignore-not-found"}); }
  } drop{cls};
  Apply("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: " + cls + "}\nspec:\n  selectors:\n"
        "  - cel: {expression: \"device.driver == '" + driver + "'\"}\n---\n"
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: " + cls + "}\nspec:\n  driver: " + driver +
        "\n  nodeName: " + node + "\n  pool: {name: " + node + ", generation: 1, resourceSliceCount: 1}\n"
        "  devices: [{name: gpu-0}, {name: gpu-1}, {name: gpu-2}, {name: gpu-3}]\n");
  Fleet("dra", "dra", "  blocks: 4\n  devices: {deviceClassName: " + cls + "}\n");
  Run("train", "  resources: {gpu: 2}\n");
  ASSERT_TRUE(WaitPhase("train", "Scheduled")) << Phase("train") << ": " << Message("train");
  // kube-scheduler's part: the claim berth made for rank 0 gets two of the node's devices.
  std::string results;
  for (const char* device : {"gpu-0", "gpu-1"}) {
    results += std::string(results.empty() ? "" : ",") + R"({"request":"gpus","driver":")" + driver + R"(","pool":")" +
               node + R"(","device":")" + device + R"("})";
  }
  CommandResult allocated;
  ASSERT_TRUE(Eventually([&] {
    allocated = Kubectl({"patch", "resourceclaim", "train-0-gpus", "--subresource=status", "--type=merge", "-p",
                         R"({"status":{"allocation":{"devices":{"results":[)" + results + "]}}}}"});
    return allocated.exit_code == 0;
  })) << allocated.err;
  const std::string want = "4 devices of " + cls + "; run " + ns_ + "/train holds 2";
  std::string shown;
  ASSERT_TRUE(Eventually([&] {
    shown = Kubectl({"get", "fleet", FleetName("dra"), "-o", "jsonpath={.status.instances[0].devices}"}).out;
    return shown == want;
  })) << shown;

  // The page through the queue API, in the admin's kubectl berth dashboard.
  const CommandResult drive = DriveFleetCell(FleetName("dra"), node, "Devices", want, "fleets-dra");
  EXPECT_EQ(drive.exit_code, 0) << "the browser did not show the instance's devices";
}

// Issue 48: a fleet with topology levels shows each instance's domain in the Fleets page, in
// Chromium. The nodes are simulated, labelled as two racks under one spine.
TEST_F(Dashboard, AFleetWithLevelsShowsItsDomainsInChromium) {
  const std::string a = Nodes("levels", 1, "4", "8Gi", 0, {{"example.com/spine", "s1"}, {"example.com/rack", "a"}}).front();
  Nodes("levels", 1, "4", "8Gi", 0, {{"example.com/spine", "s1"}, {"example.com/rack", "b"}});
  Fleet("levels", "levels", "  placement: cluster\n  topology: [{key: example.com/spine}, {key: example.com/rack}]\n");
  std::string shown;
  ASSERT_TRUE(Eventually([&] {
    shown = Kubectl({"get", "fleet", FleetName("levels"), "-o", "jsonpath={.status.instances[*].domain}"}).out;
    return shown == "s1/a s1/b" || shown == "s1/b s1/a";
  })) << shown;
  const CommandResult drive = DriveFleetCell(FleetName("levels"), a, "Domain", "s1/a", "fleets-levels");
  EXPECT_EQ(drive.exit_code, 0) << "the browser did not show the instance's domain";
}

// Issue 48: a placed run on a fleet with topology levels shows on its page the domain holding its
// nodes, as kubectl berth describe's Domain: line says it (tests/dashboard/run-fact.mjs in
// Chromium, the admin's kubectl berth dashboard). A gang of two nodes in racks a and b of spine s1.
TEST_F(Dashboard, ARunOnAFleetWithLevelsShowsItsDomainOnItsPageInChromium) {
  Nodes("gang", 1, "4", "8Gi", 0, {{"example.com/spine", "s1"}, {"example.com/rack", "a"}});
  Nodes("gang", 1, "4", "8Gi", 0, {{"example.com/spine", "s1"}, {"example.com/rack", "b"}});
  Fleet("gang", "gang", "  placement: cluster\n  topology: [{key: example.com/spine}, {key: example.com/rack}]\n");
  Run("pair", "  nodes: 2\n");
  ASSERT_TRUE(WaitPhase("pair", "Scheduled")) << Phase("pair") << ": " << Message("pair");
  const std::string want = "s1 (example.com/spine)";
  CommandResult describe;
  ASSERT_TRUE(Eventually([&] {
    describe = RunPlugin(cp().kubeconfig(), {"describe", "pair", "-n", ns_});
    return describe.out.find(want) != std::string::npos;
  })) << describe.out << describe.err;
  const int port = FreePort();
  auto dashboard = ControllerProcess::LocalDashboard(cp().kubeconfig(), port, "dashboard-run-domain");
  ASSERT_TRUE(dashboard->StartServing()) << dashboard->Log();
  std::string modules;
  CommandResult setup = BrowserModules(modules);
  ASSERT_EQ(setup.exit_code, 0) << setup.out << setup.err;
  CommandResult drive = RunCommand({"node", kSource + "/tests/dashboard/run-fact.mjs", "--modules=" + modules,
                                    "--url=" + ControllerProcess::LocalDashboardUrl(port), "--namespace=" + ns_, "--run=pair",
                                    "--label=Domain", "--text=" + want, "--shot=run-domain"});
  std::printf("---- tests/dashboard/run-fact.mjs ----\n%s%s", drive.out.c_str(), drive.err.c_str());
  EXPECT_EQ(drive.exit_code, 0) << "the browser did not show the run's domain";
}

// Issue 31: the Teams page's endpoint and the team in the queue, through the controller's port.
// Team status brought up to date every second (the page shows the Team's status).
class DashboardTeams : public Dashboard {
 protected:
  DashboardTeams() { controller_args_.push_back("--team-status-interval=1s"); }
  void TearDown() override {
    Dashboard::TearDown();
    if (!team_.empty()) (void)client()->Delete(k8s::resources::kTeams.Path("", team_));
  }
  // The item of /api/teams named `name` (null when absent), from `doc`.
  static const json::Value* TeamItem(const json::Document& doc, const std::string& name) {
    const json::Value* items = doc.IsObject() ? json::Find(doc, {"items"}) : nullptr;
    if (items == nullptr || !items->IsArray()) return nullptr;
    for (const auto& it : items->GetArray()) {
      if (json::GetString(it, "name") == name) return &it;
    }
    return nullptr;
  }
  static int64_t Gpus(const json::Value& fleet, const char* part) {
    const json::Value* v = json::Find(fleet, {part, "gpu"});
    return v != nullptr && v->IsInt64() ? v->GetInt64() : -1;
  }
  std::string team_;
};

// A team with 4 of the fleet's 8 GPUs as its nominal share runs 8 (borrowing 4); another run of it
// waits. GET api/teams answers without a token (like api/fleets) with its weight, parent, the
// fleet's nominal / used / borrowed / lent and its lending limit, its usage counted, and no
// namespace; the queue's item names the team.
TEST_F(DashboardTeams, TeamsEndpointShowsSharesUseAndUsageAndTheQueueTheTeam) {
  WaitServing();
  Nodes("g", 1, "16", "64Gi", 8);
  Fleet("g", "g", "  blocks: 8\n");
  team_ = "dash-" + ns_;
  CommandResult r = cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team_ +
                                                           "}\nspec:\n  namespaces: [" + ns_ + "]\n  weight: 3\n  shares:\n  - fleet: " +
                                                           FleetName("g") + "\n    nominal: {gpu: 4}\n    lendingLimit: {gpu: 2}\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Run("a", "  resources: {gpu: 8}\n");
  ASSERT_TRUE(WaitPhase("a", "Scheduled")) << Message("a");
  StartRun("a");
  Run("b", "  resources: {gpu: 8}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n");

  std::string body;
  int code = 0;
  auto shown = [&] {
    body = HttpGet(Url("api/teams"), &code);  // no token
    auto doc = json::Parse(body);
    if (code != 200 || !doc.ok()) return false;
    const json::Value* t = TeamItem(*doc, team_);
    const json::Value* fleets = t != nullptr ? json::Find(*t, {"fleets"}) : nullptr;
    const json::Value* gpu_hours = t != nullptr ? json::Find(*t, {"usage", "gpuHours"}) : nullptr;
    if (fleets == nullptr || !fleets->IsArray() || fleets->Size() != 1 || gpu_hours == nullptr || !gpu_hours->IsNumber()) return false;
    const json::Value& f = (*fleets)[0];
    return json::GetString(f, "fleet") == FleetName("g") && Gpus(f, "nominal") == 4 && Gpus(f, "used") == 8 &&
           Gpus(f, "borrowed") == 4 && Gpus(f, "lent") == 0 && Gpus(f, "lendingLimit") == 2 &&
           json::Find(f, {"borrowingLimit"}) == nullptr && gpu_hours->GetDouble() > 0;
  };
  EXPECT_TRUE(Eventually(shown, std::chrono::seconds(30))) << code << " " << body;
  auto doc = json::Parse(body);
  ASSERT_TRUE(doc.ok()) << body;
  const json::Value* t = TeamItem(*doc, team_);
  ASSERT_NE(t, nullptr) << body;
  EXPECT_EQ(json::GetInt(*t, "weight"), 3);
  EXPECT_EQ(json::GetString(*t, "parent"), "");
  EXPECT_NE(json::GetString(json::Find(*t, {"usage", "updatedAt"})), "") << body;
  EXPECT_EQ(body.find("\"" + ns_ + "\""), std::string::npos) << "no namespace on a page without a token: " << body;

  // The queue (with a token, as always) names b's team.
  EXPECT_TRUE(Eventually([&] { return QueueOrder() == "b"; })) << QueueOrder();
  auto queue = json::Parse(HttpGet(Url("api/queue?namespace=" + ns_), nullptr, cp().AdminToken()));
  ASSERT_TRUE(queue.ok());
  const json::Value* items = json::Find(*queue, {"items"});
  ASSERT_TRUE(items != nullptr && items->IsArray() && items->Size() == 1);
  EXPECT_EQ(json::GetString((*items)[0], "team"), team_);
}

// Issue 47: the Usage page. Two Teams (this namespace and a second one) run on a fleet of 32 GPUs
// (kubelet-sim ends each run after its seconds): a (16 GPUs, 20 s) and b1 (16, 40 s) start, b2
// (16, 20 s) waits for a's GPUs. Once every span is folded into the Teams' usage, `kubectl berth
// usage -o json` (the admin's) shows both teams, and tests/dashboard/usage.mjs, in Chromium, finds
// their GPU-hours and shares on the page as the CLI says, the stacked chart drawn with a series per
// team, and the queue's in-memory series of the controller that ran them: minutes with a waiting
// run and the three starts.
class DashboardUsage : public Dashboard {
 protected:
  DashboardUsage() { controller_args_.push_back("--team-status-interval=1s"); }

  // "heldSince releasedAt accountedUntil held.gpu" of run `name` in `ns`.
  static std::vector<std::string> Span(const std::string& ns, const std::string& name) {
    std::istringstream in(ControlPlane::Get().Kubectl({"get", "run", name, "-n", ns, "-o",
                          "jsonpath={.status.heldSince} {.status.releasedAt} {.status.accountedUntil} {.status.held.gpu}"}).out);
    std::vector<std::string> parts;
    for (std::string p; in >> p;) parts.push_back(p);
    return parts;
  }
  // GPU-seconds of the run's span once it is folded into its Team's usage; -1 before.
  static double FoldedGpuSeconds(const std::string& ns, const std::string& name) {
    const auto parts = Span(ns, name);
    if (parts.size() != 4) return -1;
    auto held = k8s::ParseRfc3339(parts[0]), released = k8s::ParseRfc3339(parts[1]), until = k8s::ParseRfc3339(parts[2]);
    if (!held.ok() || !released.ok() || !until.ok() || *until < *released) return -1;
    return std::stod(parts[3]) * std::chrono::duration<double>(*released - *held).count();
  }
};

TEST_F(DashboardUsage, UsagePageDrawsWhatTheCliSaysAndTheQueuesDayInChromium) {
  const std::string other = ns_ + "-b", team_a = "ua-" + ns_, team_b = "ub-" + ns_;
  struct Dropper {
    std::string other, teams;
    ~Dropper() {
      ControlPlane::Get().Kubectl({"delete", "team", teams, "--ignore-not-found"});
      ControlPlane::Get().Kubectl({"delete", "namespace", other, "--ignore-not-found", "--wait=false"});
    }
  } drop{other, team_a + " " + team_b};
  ASSERT_EQ(cp().Kubectl({"create", "namespace", other}).exit_code, 0);
  // The per-user store (the runs and their waits) lives in berth's namespace, the controller's
  // default --leader-election-namespace.
  cp().Kubectl({"create", "namespace", "berth-system"});  // (already there: fine)
  for (const auto& [team, ns] : {std::pair{team_a, ns_}, std::pair{team_b, other}}) {
    ASSERT_EQ(cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Team\nmetadata: {name: " + team +
                                                      "}\nspec:\n  namespaces: [" + ns + "]\n").exit_code, 0);
  }
  QueueApiRegistration queue_api(ns_);
  ASSERT_TRUE(RestartServingTheQueueApi(queue_api)) << controller_->Log();
  auto kubelet = ControllerProcess::KubeletSim("kubelet-sim-usage");
  kubelet->Start();
  Nodes("u", 2, "32", "128Gi", 16);
  Fleet("u", "u", "  blocks: 16\n");  // a block: 1 GPU
  auto submit = [&](const std::string& ns, const std::string& name, int seconds) {
    const std::string yaml = "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + ", namespace: " + ns +
                             "}\nspec:\n  resources: {gpu: 16}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n"
                             "  template:\n    metadata: {annotations: {berth.dev/sim-seconds: \"" + std::to_string(seconds) +
                             "\"}}\n    spec:\n      containers: [{name: main, image: busybox}]\n";
    CommandResult r = cp().Kubectl({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  submit(ns_, "a", 20);
  submit(other, "b1", 40);
  ASSERT_TRUE(WaitPhase("a", "Running")) << Message("a");
  submit(other, "b2", 20);  // waits for a's 16 GPUs

  // Every span folded; the CLI's figures are their sums (GPU-seconds to 0.01).
  std::map<std::string, double> folded;
  ASSERT_TRUE(Eventually([&] {
    folded = {{"a", FoldedGpuSeconds(ns_, "a")}, {"b1", FoldedGpuSeconds(other, "b1")}, {"b2", FoldedGpuSeconds(other, "b2")}};
    return folded["a"] > 0 && folded["b1"] > 0 && folded["b2"] > 0;
  }, std::chrono::seconds(150))) << "a " << folded["a"] << ", b1 " << folded["b1"] << ", b2 " << folded["b2"];
  CommandResult cli;
  std::map<std::string, double> rows;
  std::map<std::string, int64_t> runs;  // the runs that started, from the per-user store's fold
  ASSERT_TRUE(Eventually([&] {
    cli = RunPlugin(cp().kubeconfig(), {"usage", "-o", "json"});
    auto doc = json::Parse(cli.out);
    const json::Value* items = doc.ok() ? json::Find(*doc, {"rows"}) : nullptr;
    if (cli.exit_code != 0 || items == nullptr || !items->IsArray()) return false;
    for (const auto& r : items->GetArray()) {
      rows[json::GetString(r, "name")] = json::Find(r, {"gpuHours"})->GetDouble() * 3600;
      const json::Value* n = json::Find(r, {"runs"});
      runs[json::GetString(r, "name")] = n != nullptr && n->IsInt64() ? n->GetInt64() : 0;
    }
    return std::abs(rows[team_a] - folded["a"]) < 0.01 && std::abs(rows[team_b] - folded["b1"] - folded["b2"]) < 0.01 &&
           runs[team_a] == 1 && runs[team_b] == 2;
  }, std::chrono::seconds(60))) << cli.out << cli.err << "\nspans (GPU-seconds): a " << folded["a"] << ", b1 " << folded["b1"]
                                 << ", b2 " << folded["b2"];
  const std::string usage_file = std::string(std::getenv("BERTH_TEST_TMP") ? std::getenv("BERTH_TEST_TMP") : "/tmp") +
                                 "/usage-" + ns_ + ".json";
  std::ofstream(usage_file) << cli.out;
  // Its table too: the page's columns are checked cell for cell against it.
  CommandResult cli_table = RunPlugin(cp().kubeconfig(), {"usage"});
  ASSERT_EQ(cli_table.exit_code, 0) << cli_table.err;
  std::printf("---- kubectl berth usage ----\n%s", cli_table.out.c_str());
  const std::string table_file = usage_file + ".txt";
  std::ofstream(table_file) << cli_table.out;

  // The page, in the admin's kubectl berth dashboard.
  const int port = FreePort();
  auto dashboard = ControllerProcess::LocalDashboard(cp().kubeconfig(), port, "dashboard-usage");
  ASSERT_TRUE(dashboard->StartServing()) << dashboard->Log();
  std::string modules;
  CommandResult setup = BrowserModules(modules);
  ASSERT_EQ(setup.exit_code, 0) << setup.out << setup.err;
  std::vector<std::string> argv = {"node", kSource + "/tests/dashboard/usage.mjs", "--modules=" + modules,
                                   "--url=" + ControllerProcess::LocalDashboardUrl(port), "--usage=" + usage_file,
                                   "--table=" + table_file,
                                   "--teams=" + team_a + "," + team_b, "--starts=3"};
  if (const char* docs = std::getenv("BERTH_UPDATE_DOCS_IMAGES"); docs != nullptr && std::string(docs) == "1") {
    argv.push_back("--docs-images=" + kSource + "/docs/images");
  }
  CommandResult drive = RunCommand(argv);
  std::printf("---- tests/dashboard/usage.mjs ----\n%s%s", drive.out.c_str(), drive.err.c_str());
  EXPECT_EQ(drive.exit_code, 0) << "the browser checks of the Usage page failed";

  // The series is refused, naming the user, to one whom RBAC lets get the usage resource but who
  // may not list Teams (as the usage itself).
  const std::string user = "carol-" + ns_;
  Apply("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: " + user + "}\n"
        "rules:\n- {apiGroups: [queue.berth.dev], resources: [usage], verbs: [get]}\n---\n"
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: " + user + "}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: " + user + "}\n"
        "subjects:\n- {apiGroup: rbac.authorization.k8s.io, kind: User, name: " + user + "}\n");
  struct DropRbac {
    std::string name;
    ~DropRbac() { ControlPlane::Get().Kubectl({"delete", "clusterrole,clusterrolebinding", name, "--ignore-not-found"}); }
  } drop_rbac{user};
  CommandResult refused;
  EXPECT_TRUE(Eventually([&] {
    refused = queue_api.GetRaw("/usage/queue", {"--as", user});
    return refused.err.find(user + " may not list teams.berth.dev") != std::string::npos;
  })) << refused.out << refused.err;
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_EQ(refused.out.find("QueueHistory"), std::string::npos) << refused.out;
}

}  // namespace
}  // namespace berth::testing
