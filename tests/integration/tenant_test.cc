// Issue 29, "a tenant cannot harm the others": each case is played by a user who holds only
// namespace rights (a Role in the test namespace over Runs, Pods and Services, impersonated with
// `kubectl --as`), against the real API server and a real berth-controller. Each test shows that
// the harm the tenant could do before is gone (docs/reliability.md, "What a tenant cannot do").

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine_fixture.h"
#include "run_size.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using k8s::resources::kServices;

class Tenant : public EngineTest {
 public:  // the helpers are used by scope guards inside the tests too
  void SetUp() override {
    EngineTest::SetUp();
    if (HasFatalFailure()) return;
    GrantTenantNamespaceRights();
    // The tenant cannot act outside its namespace (the premise of every test here).
    CommandResult r = cp().Kubectl({"auth", "can-i", "create", "runs", "-n", "default", "--as=tenant"});
    ASSERT_EQ(Trim(r.out), "no") << r.out << r.err;
    r = cp().Kubectl({"auth", "can-i", "list", "nodes", "--as=tenant"});
    ASSERT_EQ(Trim(r.out), "no") << r.out << r.err;
  }

  static std::string Trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  // kubectl as the tenant, in the test namespace.
  CommandResult AsTenant(std::vector<std::string> args, const std::string& input = {}) {
    args.insert(args.begin(), {"--as=tenant", "-n", ns_});
    return cp().Kubectl(args, input);
  }
  // `kubectl apply -f -` as the tenant; fails the test on error.
  void TenantApply(const std::string& yaml) {
    CommandResult r = AsTenant({"apply", "-f", "-"}, yaml);
    ASSERT_EQ(r.exit_code, 0) << r.err << "\n" << yaml;
  }
  // A Run applied by the tenant (extra spec lines at 2-space indent).
  void TenantRun(const std::string& name, const std::string& extra_spec = {}) {
    TenantApply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n" + extra_spec +
                "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  }
  // The Runs CRD as installed now (JSON), and a replace of it with `crd_json`.
  std::string RunsCrd() { return cp().Kubectl({"get", "crd", "runs.berth.dev", "-o", "json"}).out; }
  void ReplaceRunsCrd(const std::string& crd_json) {
    CommandResult r = cp().Kubectl({"replace", "-f", "-"}, crd_json);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
};

// Item 7: a controller whose leader-election timings would let two leaders write at once refuses
// to start, with a sentence that names the flags (exit code 2, nothing contacted).
TEST_F(Tenant, LeaderElectionTimingsThatOverlapStopTheControllerAtStartUp) {
  // `timeout`: a controller that accepted the flags would run until stopped (exit code 124).
  CommandResult r = RunCommand({"timeout", "60", BERTH_CONTROLLER_BIN, "--kubeconfig=" + cp().kubeconfig(), "--leader-elect",
                                "--leader-election-namespace=" + ns_, "--leader-election-lease-duration=15s",
                                "--leader-election-renew-deadline=10s", "--metrics-bind-address=0",
                                "--health-probe-bind-address=0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("berth-controller: --leader-election-renew-deadline (10s) plus --request-timeout (5s) must stay "
                       "below --leader-election-lease-duration (15s) by at least a tenth of it (1s500ms)"),
            std::string::npos)
      << r.err;
  auto lease = client()->Get(k8s::resources::kLeases.Path(ns_, "berth-controller"));
  EXPECT_TRUE(lease.status().IsNotFound()) << "a refused controller took the Lease";
  // The defaults (the chart's: 15s, 8s, 2s) start and lead.
  ControllerProcess ok({"--leader-elect", "--leader-election-namespace=" + ns_}, "leader-defaults");
  ok.Start();
  EXPECT_TRUE(Eventually([&] { return ok.Log().find("became the leader") != std::string::npos; }, std::chrono::seconds(60)))
      << ok.Log();
  EXPECT_EQ(ok.Stop(), 0) << ok.Log();
}


// Item 8, as issue 44 (4, 11) closes it: the queue shows a caller only the runs of the namespaces
// it may list runs in, and berth never receives the caller's credential. The queue is an
// aggregated API (APIService v1alpha1.queue.berth.dev): the API server authenticates the caller and
// proxies with its front-proxy certificate and the caller's name; berth asks SubjectAccessReviews
// about that name. The metrics port's /queue, /api/queue, /api/fleets and /api/teams answer 401
// (they named every namespace's runs and, in Teams' Conflict messages, namespaces to anyone).
class TenantQueue : public Tenant {
 protected:
  void SetUp() override {
    Tenant::SetUp();
    if (HasFatalFailure()) return;
    other_ = ns_ + "-other";
    ASSERT_EQ(cp().Kubectl({"create", "namespace", other_}).exit_code, 0);
    queue_api_ = std::make_unique<QueueApiRegistration>(ns_);
    metrics_ = FreePort();
    controller_->Stop();
    std::vector<std::string> args = queue_api_->ControllerArgs();
    args.insert(args.end(), {"--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_), "--health-probe-bind-address=0"});
    controller_ = std::make_unique<ControllerProcess>(args, "controller-queue");
    controller_->Start();
    ASSERT_TRUE(queue_api_->Register()) << cp().Kubectl({"get", "apiservice", "v1alpha1.queue.berth.dev", "-o", "yaml"}).out
                                        << controller_->Log();
  }
  void TearDown() override {
    queue_api_.reset();
    cp().Kubectl({"delete", "runs", "--all", "-n", other_, "--wait=true", "--timeout=60s"});
    cp().Kubectl({"delete", "namespace", other_, "--wait=false"});
    cp().Kubectl({"delete", "clusterrolebinding,clusterrole", "run-lister-" + ns_, "--ignore-not-found"});
    Tenant::TearDown();
  }

  // One busy slot; the tenant's run and another namespace's (ahead of it) wait.
  void TwoWaitingRuns() {
    Nodes("slot", 1, "4", "8Gi");
    Fleet("slot", "slot");
    Run("blocker");
    ASSERT_TRUE(WaitPhase("blocker", "Scheduled"));
    const std::string queued = "  retry: {onEvents: [no-capacity], duration: \"off\"}\n";
    TenantRun("tenant-secret-run", queued);
    CommandResult theirs = cp().Kubectl({"apply", "-n", other_, "-f", "-"},
                                        "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: other-secret-run}\nspec:\n"
                                        "  priority: 90\n" + queued +
                                        "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
    ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
    // An auditor who may list runs (and teams) in every namespace, nothing else.
    CommandResult cluster = cp().Kubectl({"apply", "-f", "-"}, R"(apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: run-lister-)" + ns_ + R"(}
rules: [{apiGroups: [berth.dev], resources: [runs, teams], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: run-lister-)" + ns_ + R"(}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: run-lister-)" + ns_ + R"(}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: auditor}]
)");
    ASSERT_EQ(cluster.exit_code, 0) << cluster.err;
  }

  // namespace/name of the runs of the two namespaces in a queue answer, in order.
  std::vector<std::string> Names(const std::string& body) {
    std::vector<std::string> out;
    auto doc = json::Parse(body);
    const json::Value* items = doc.ok() ? json::Find(*doc, {"items"}) : nullptr;
    if (items == nullptr || !items->IsArray()) return out;
    for (const auto& it : items->GetArray()) {
      const std::string n = json::GetString(it, "namespace");
      if (n == ns_ || n == other_) out.push_back(n + "/" + json::GetString(it, "name"));
    }
    return out;
  }

  std::string other_;
  int metrics_ = 0;
  std::unique_ptr<QueueApiRegistration> queue_api_;
};

// Through the API server, as each user (kubectl --as: the API server authenticates; berth sees
// only the name it passes on): the tenant sees its own run at its global position, 403 for the
// other namespace; a cluster-wide lister sees both; the admin too.
TEST_F(TenantQueue, TheQueueShowsEachCallerOnlyTheRunsItMayList) {
  TwoWaitingRuns();
  if (HasFatalFailure()) return;
  const std::vector<std::string> both = {other_ + "/other-secret-run", ns_ + "/tenant-secret-run"};
  ASSERT_TRUE(Eventually([&] { return Names(queue_api_->GetRaw("/queue").out) == both; }))
      << queue_api_->GetRaw("/queue").err << controller_->Log();
  for (const std::string& path : std::vector<std::string>{"/queue", "/namespaces/" + ns_ + "/queue"}) {
    SCOPED_TRACE(path);
    CommandResult tenant = queue_api_->GetRaw(path, {"--as=tenant"});
    EXPECT_EQ(tenant.exit_code, 0) << tenant.err;
    EXPECT_EQ(Names(tenant.out), std::vector<std::string>{ns_ + "/tenant-secret-run"}) << tenant.out;
    EXPECT_EQ(tenant.out.find("other-secret-run"), std::string::npos) << tenant.out;
    EXPECT_EQ(tenant.out.find(other_), std::string::npos) << tenant.out;
    auto doc = json::Parse(tenant.out);
    ASSERT_TRUE(doc.ok()) << tenant.out;
    EXPECT_EQ(json::GetInt(*json::Find(*doc, {"items"})->GetArray().Begin(), "position"), 2) << "a global position";
  }
  // The other namespace by name: 403, naming it.
  CommandResult theirs = queue_api_->GetRaw("/namespaces/" + other_ + "/queue", {"--as=tenant"});
  EXPECT_NE(theirs.exit_code, 0);
  EXPECT_NE(theirs.err.find("tenant may not list runs.berth.dev in namespace " + other_), std::string::npos) << theirs.err;
  EXPECT_EQ(theirs.err.find("other-secret-run"), std::string::npos) << theirs.err;
  // Cluster-wide list: every run, for the auditor and the admin.
  EXPECT_EQ(Names(queue_api_->GetRaw("/queue", {"--as=auditor"}).out), both);
  EXPECT_EQ(Names(queue_api_->GetRaw("/namespaces/" + other_ + "/queue", {"--as=auditor"}).out),
            std::vector<std::string>{other_ + "/other-secret-run"});
  EXPECT_EQ(Names(queue_api_->GetRaw("/queue").out), both);
  // Item 11: the teams and fleets summaries too (Teams' Conflict messages name namespaces): the
  // tenant may not list teams or fleets: 403; the auditor may list teams.
  for (const std::string path : {"/teams", "/fleets"}) {
    CommandResult r = queue_api_->GetRaw(path, {"--as=tenant"});
    EXPECT_NE(r.exit_code, 0) << path << ": " << r.out;
    EXPECT_NE(r.err.find("tenant may not list " + path.substr(1) + ".berth.dev"), std::string::npos) << r.err;
  }
  CommandResult teams = queue_api_->GetRaw("/teams", {"--as=auditor"});
  EXPECT_EQ(teams.exit_code, 0) << teams.err;
  EXPECT_NE(teams.out.find("\"items\""), std::string::npos) << teams.out;
  CommandResult fleets = queue_api_->GetRaw("/fleets");
  EXPECT_EQ(fleets.exit_code, 0) << fleets.err;
  EXPECT_NE(fleets.out.find("\"slot-" + ns_ + "\""), std::string::npos) << fleets.out;

  // The metrics port takes no token and shows no queue, team or fleet any more: 401 with a
  // sentence, with or without a token.
  const std::string base = "http://127.0.0.1:" + std::to_string(metrics_);
  for (const std::string route : {"/queue", "/api/queue", "/api/teams", "/api/fleets"}) {
    SCOPED_TRACE(route);
    int code = 0;
    std::string body = HttpGet(base + route, &code);
    EXPECT_EQ(code, 401) << body;
    EXPECT_NE(body.find("through the Kubernetes API server"), std::string::npos) << body;
    body = HttpGet(base + route, &code, cp().AdminToken());
    EXPECT_EQ(code, 401) << body;
    EXPECT_EQ(body.find("secret-run"), std::string::npos) << body;
    EXPECT_EQ(body.find(other_), std::string::npos) << body;
  }
  // Nor a page that asks for a token, nor a route that acts with one: the dashboard is kubectl
  // berth dashboard's (issue 44).
  {
    int code = 0;
    std::string page = HttpGet(base + "/", &code);
    EXPECT_EQ(code, 404) << page;
    EXPECT_NE(page.find("kubectl berth dashboard"), std::string::npos) << page;
    HttpGet(base + "/api/runs/" + ns_ + "/tenant-secret-run", &code, cp().AdminToken());
    EXPECT_EQ(code, 404);
  }
  int code = 0;
  std::string metrics = HttpGet(base + "/metrics", &code);
  EXPECT_EQ(code, 200);
  EXPECT_EQ(metrics.find("secret-run"), std::string::npos);
}

// berth's queue API port answers only the API server's proxy: a request straight to it, without a
// client certificate, with a certificate of another CA (the cluster's client CA: an admin's
// certificate), or with one the front-proxy CA signed for a name that is not allowed, is a 401,
// whatever X-Remote-User / X-Remote-Group it forges. (A positive control: the API server's own
// proxy certificate with the same headers is believed.)
TEST_F(TenantQueue, ARequestStraightToBerthWithForgedFrontProxyHeadersIs401) {
  TwoWaitingRuns();
  if (HasFatalFailure()) return;
  ASSERT_TRUE(Eventually([&] { return !Names(queue_api_->GetRaw("/queue").out).empty(); }));
  // The serving certificate names the Service (berth-queue.NS.svc): curl is told its address.
  const std::string name = "berth-queue." + ns_ + ".svc", port = std::to_string(queue_api_->port());
  const std::string url = "https://" + name + ":" + port + "/apis/queue.berth.dev/v1alpha1/queue";
  const std::string dir = cp().dir();
  // A certificate the front-proxy CA signed for another name.
  CommandResult made = RunCommand(
      {"bash", "-c",
       "set -e; cd \"$0\"; openssl req -newkey rsa:2048 -nodes -keyout intruder.key -out intruder.csr -subj /CN=intruder "
       "2>/dev/null; printf 'extendedKeyUsage=clientAuth\\n' > intruder.ext; openssl x509 -req -in intruder.csr -CA "
       "front-proxy-ca.crt -CAkey front-proxy-ca.key -CAcreateserial -out intruder.crt -days 1 -extfile intruder.ext 2>/dev/null",
       dir});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  auto curl = [&](const std::vector<std::string>& cert) {
    std::vector<std::string> argv = {"curl", "-s", "-m", "30", "--cacert", queue_api_->dir() + "/ca.crt",
                                     "--resolve", name + ":" + port + ":" + queue_api_->host(), "-w", "\n%{http_code}",
                                     "-H", "X-Remote-User: admin", "-H", "X-Remote-Group: system:masters", url};
    argv.insert(argv.end(), cert.begin(), cert.end());
    return RunCommand(argv).out;
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> refused = {
      {"no client certificate", {}},
      {"the cluster client CA's admin certificate", {"--cert", dir + "/client.crt", "--key", dir + "/client.key"}},
      {"a front-proxy certificate for a name not allowed", {"--cert", dir + "/intruder.crt", "--key", dir + "/intruder.key"}},
  };
  for (const auto& [what, cert] : refused) {
    SCOPED_TRACE(what);
    const std::string out = curl(cert);
    EXPECT_NE(out.find("\n401"), std::string::npos) << out;
    EXPECT_EQ(out.find("secret-run"), std::string::npos) << out;
  }
  // The same headers with the API server's proxy certificate: believed (the admin sees both).
  const std::string proxied = curl({"--cert", dir + "/front-proxy-client.crt", "--key", dir + "/front-proxy-client.key"});
  EXPECT_NE(proxied.find("\n200"), std::string::npos) << proxied;
  EXPECT_NE(proxied.find("tenant-secret-run"), std::string::npos) << proxied;
}

// No user credential reaches berth on the queue path: the controller logs (debug) the names of the
// header fields of every queue API request and who the API server said asked. Asked through the
// API server with a ServiceAccount token as bearer (the credential kubectl berth queue used to send
// as X-Berth-Token), what arrived names the ServiceAccount and holds no Authorization header, no
// X-Berth-Token, and the token nowhere in the log.
TEST_F(TenantQueue, NoUserCredentialReachesTheController) {
  TwoWaitingRuns();
  if (HasFatalFailure()) return;
  Apply(R"(apiVersion: v1
kind: ServiceAccount
metadata: {name: tenant}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant-sa}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects: [{kind: ServiceAccount, name: tenant}]
)");
  CommandResult t = Kubectl({"create", "token", "tenant"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::string token = Trim(t.out);
  const std::string user = "system:serviceaccount:" + ns_ + ":tenant";
  std::string out;
  ASSERT_TRUE(Eventually([&] {
    CommandResult r = queue_api_->GetRaw("/namespaces/" + ns_ + "/queue", {"--token=" + token});
    out = r.out + r.err;
    return Names(r.out) == std::vector<std::string>{ns_ + "/tenant-secret-run"};
  })) << out;
  const std::string log = controller_->Log();
  size_t at = log.find("queue API: GET /apis/queue.berth.dev/v1alpha1/namespaces/" + ns_ + "/queue as " + user);
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("x-remote-user"), std::string::npos) << line;
  EXPECT_EQ(line.find("authorization"), std::string::npos) << line;
  EXPECT_EQ(line.find("x-berth-token"), std::string::npos) << line;
  EXPECT_EQ(log.find(token), std::string::npos) << "the token reached the controller's log";
  EXPECT_EQ(log.find(token.substr(0, 12)), std::string::npos);
}

// Item 4: a multi-node run whose name is not a DNS-1035 label cannot have its headless Service.
// The CRD's CEL rule refuses it at admission; with a CRD installed without that rule (an older
// one), it is failed InvalidSpec at once, before it holds anything: another run that needs every
// node of the fleet is placed.
TEST_F(Tenant, MultiNodeRunWithAnUnusableNameFailsAtOnceHoldingNothing) {
  Nodes("gang", 2, "4", "8Gi");
  Fleet("gang", "gang", "  placement: cluster\n");
  const std::string bad = "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: 1b-llama}\nspec:\n  nodes: 2\n"
                          "  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n";
  // Admission refuses it (the CRD of this repository).
  CommandResult r = AsTenant({"apply", "-f", "-"}, bad);
  EXPECT_NE(r.exit_code, 0) << "accepted: " << r.out;
  EXPECT_NE(r.err.find("must have a name that is a DNS-1035 label"), std::string::npos) << r.err;

  // The same CRD without the rule.
  const std::string original = RunsCrd();
  auto crd = json::Parse(original);
  ASSERT_TRUE(crd.ok()) << original;
  json::Value* schema = const_cast<json::Value*>(json::Find((*crd)["spec"]["versions"][0], {"schema", "openAPIV3Schema"}));
  ASSERT_NE(schema, nullptr);
  json::Value& rules = (*schema)["x-kubernetes-validations"];
  bool removed = false;
  for (rapidjson::SizeType i = 0; i < rules.Size(); ++i) {
    if (json::GetString(rules[i], "rule").find("matches(") != std::string::npos) {
      rules.Erase(rules.Begin() + i);
      removed = true;
      break;
    }
  }
  ASSERT_TRUE(removed) << original;
  crd->RemoveMember("status");
  (*crd)["metadata"].RemoveMember("resourceVersion");
  ReplaceRunsCrd(json::Serialize(*crd));
  struct Restore {
    Tenant* t;
    std::string crd;
    ~Restore() {
      auto d = json::Parse(crd);
      if (!d.ok()) return;
      d->RemoveMember("status");
      (*d)["metadata"].RemoveMember("resourceVersion");
      t->ReplaceRunsCrd(json::Serialize(*d));
      // Other tests of this binary meet the rule again.
      EXPECT_TRUE(Eventually([&] {
        return t->AsTenant({"apply", "--dry-run=server", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Run\n"
                           "metadata: {name: 2b-x}\nspec:\n  nodes: 2\n  template:\n    spec:\n      containers: "
                           "[{name: main, image: busybox}]\n").exit_code != 0;
      }));
    }
  } restore{this, original};
  // The API server applies a changed CRD's rules a moment later.
  ASSERT_TRUE(Eventually([&] { return AsTenant({"apply", "--dry-run=server", "-f", "-"}, bad).exit_code == 0; }));
  TenantApply(bad);
  ASSERT_TRUE(WaitPhase("1b-llama", "Failed")) << Phase("1b-llama");
  EXPECT_EQ(Reason("1b-llama"), "InvalidSpec");
  EXPECT_NE(Message("1b-llama").find("must have a name that is a DNS-1035 label"), std::string::npos)
      << Message("1b-llama");
  auto doc = RunDoc("1b-llama");
  EXPECT_EQ(json::Find(doc, {"status", "scheduledAt"}), nullptr) << "it was placed: " << json::Serialize(doc);
  EXPECT_TRUE(PodsOf("1b-llama").empty());
  // It holds nothing: a run that needs both nodes is placed.
  TenantRun("llama", "  nodes: 2\n");
  ASSERT_TRUE(WaitPhase("llama", "Scheduled")) << Phase("llama") << " " << Message("llama");
}


// Item 2: anyone who may create Pods may label one berth.dev/run. Such a Pod, put on both nodes of
// a fleet by a tenant (1m CPU each, one without an owner, one whose ownerReference names a Run of
// the tenant with a made-up uid), used to hold each whole instance (a berth Pod without the blocks
// annotation): no run could be placed. Now it is an ordinary Pod whose requests come off the node.
TEST_F(Tenant, PodsLabelledAsBerthsButNotOwnedByARunHoldOnlyTheirRequests) {
  auto nodes = Nodes("squat", 2, "4", "8Gi");
  Fleet("squat", "squat", "  blocks: 4\n");
  // The squatters name a run that does not exist (issue 44: Pods that claim an existing run but
  // that berth did not make are deleted; see APodThatClaimsTheTenantsOwnRunIsDeleted...).
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string owner = i == 0 ? "" : "  ownerReferences: [{apiVersion: berth.dev/v1alpha1, kind: Run, name: ghost, "
                                            "uid: 00000000-0000-0000-0000-000000000000, controller: true}]\n";
    TenantApply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: squat-" + std::to_string(i) +
                "\n  labels: {berth.dev/run: ghost, berth.dev/attempt: \"0\"}\n" + owner + "spec:\n  nodeName: " + nodes[i] +
                "\n  containers: [{name: c, image: busybox, resources: {requests: {cpu: 1m}}}]\n");
  }
  // Another team's run asks for most of a node (3 of its 4 CPUs).
  Run("train", "  resources: {cpu: \"3\"}\n" + std::string("  retry: {onEvents: [no-capacity], duration: \"off\"}\n"));
  ASSERT_TRUE(WaitPhase("train", "Scheduled")) << Phase("train") << " " << Reason("train") << " " << Message("train");
  // The squatters' 1m came off the node before it was cut into blocks: 4 blocks of 999m (3999m
  // divided by 4, rounded down), and 3 CPU takes all four.
  ASSERT_TRUE(Eventually([&] { return PodsOf("train").size() == 1; }));
  auto pods = PodsOf("train");
  const json::Value& c0 = pods.begin()->second["spec"]["containers"][0];
  EXPECT_EQ(json::GetString(json::Find(c0, {"resources", "requests", "cpu"})), "3996m") << json::Serialize(c0);
}

// Issue 44 item 3: a Pod that claims the tenant's own Run. The tenant labels Pods berth.dev/run=<its
// run>, gives them a controller ownerReference with the Run's real uid and binds them to the
// fleet's machine: one with berth.dev/blocks "0" asking for 3 of the machine's 4 CPUs, one without
// the annotation asking for 1m. Before, the first counted as nothing (another run was placed on the
// CPUs it used: double-booked) and the second as the whole machine, and both stayed for the rest of
// the run and forever on a Succeeded one. Now a Pod is the run's only if berth made it (its uid in
// status.podUIDs): each is deleted with a Warning Event StrayPod naming it, whatever the run's
// phase (Pending, Running, Succeeded), and until it is gone it counts as the kubelet counts it.
// No admission policy is installed here: the controller alone holds.
TEST_F(Tenant, APodThatClaimsTheTenantsOwnRunIsDeletedAndNeverCountsAsTheRuns) {
  auto nodes = Nodes("claim", 1, "4", "8Gi");
  Fleet("claim", "claim", "  blocks: 4\n");
  TenantRun("mine", "  resources: {cpu: \"1\"}\n");
  ASSERT_TRUE(WaitPhase("mine", "Scheduled")) << Phase("mine") << " " << Message("mine");
  StartRun("mine");
  ASSERT_TRUE(WaitPhase("mine", "Running")) << Phase("mine") << " " << Message("mine");
  TenantRun("waiting", "  suspend: true\n");
  ASSERT_TRUE(Eventually([&] { return Reason("waiting") == "Suspended"; })) << Reason("waiting");
  auto uid_of = [&](const std::string& run) { return json::GetString(json::Find(RunDoc(run), {"metadata", "uid"})); };
  // berth recorded the uid of the Pod it made.
  const json::Value* recorded = json::Find(RunDoc("mine"), {"status", "podUIDs"});
  EXPECT_TRUE(recorded != nullptr && recorded->IsArray() && recorded->Size() == 1) << "status.podUIDs";
  auto claim = [&](const std::string& pod, const std::string& run, const std::string& annotation, const std::string& cpu) {
    TenantApply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + pod + "\n  labels: {berth.dev/run: " + run +
                ", berth.dev/attempt: \"0\"}\n" + annotation +
                "  ownerReferences: [{apiVersion: berth.dev/v1alpha1, kind: Run, name: " + run + ", uid: " + uid_of(run) +
                ", controller: true}]\nspec:\n  nodeName: " + nodes[0] +
                "\n  containers: [{name: c, image: busybox, resources: {requests: {cpu: \"" + cpu + "\"}}}]\n");
  };
  auto gone = [&](const std::string& pod) {
    auto p = client()->Get(kPods.Path(ns_, pod));
    return p.status().IsNotFound() || (p.ok() && json::Find(*p, {"metadata", "deletionTimestamp"}) != nullptr);
  };
  auto warned = [&](const std::string& run, const std::string& pod) {
    CommandResult e = Kubectl({"get", "events", "--field-selector", "involvedObject.name=" + run + ",reason=StrayPod", "-o",
                               "jsonpath={range .items[*]}{.type}: {.message}{\"\\n\"}{end}"});
    return e.out.find("Warning: Pod " + pod + " claims this run") != std::string::npos;
  };

  // Running: another team's run asking for 3 CPUs waits while the "0" Pod uses them (never placed
  // beside it), and is placed once the strays are gone (nothing holds the whole machine).
  claim("zero", "mine", "  annotations: {berth.dev/blocks: \"0\"}\n", "3");
  claim("none", "mine", "", "1m");
  Run("other", "  resources: {cpu: \"3\"}\n  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  bool double_booked = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const bool other_placed = !PlacementNodes("other").empty();
    auto z = client()->Get(kPods.Path(ns_, "zero"));  // after reading `other`: placed while it was there
    if (other_placed && z.ok()) double_booked = true;
    if (other_placed && !z.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(double_booked) << "other was placed on the CPUs the Pod \"zero\" asked for";
  EXPECT_FALSE(PlacementNodes("other").empty()) << Phase("other") << " " << Message("other");
  for (const char* pod : {"zero", "none"}) {
    EXPECT_TRUE(Eventually([&] { return gone(pod); })) << pod << " was not deleted";
    EXPECT_TRUE(Eventually([&] { return warned("mine", pod); })) << "no Warning Event naming " << pod;
  }
  EXPECT_EQ(Phase("mine"), "Running") << "the strays never count as the run's Pods: " << Message("mine");

  // Pending (suspended) and Succeeded: the same.
  claim("pending-claim", "waiting", "", "1m");
  FinishRun("mine");
  ASSERT_TRUE(WaitPhase("mine", "Succeeded")) << Phase("mine");
  claim("after-success", "mine", "  annotations: {berth.dev/blocks: \"0\"}\n", "1m");
  for (auto [pod, run] : {std::pair<const char*, const char*>{"pending-claim", "waiting"}, {"after-success", "mine"}}) {
    EXPECT_TRUE(Eventually([&] { return gone(pod); })) << pod << " was not deleted";
    EXPECT_TRUE(Eventually([&] { return warned(run, pod); })) << "no Warning Event naming " << pod;
  }
  EXPECT_EQ(Phase("mine"), "Succeeded");
}

// Item 3: berth never changes or deletes what it did not create. Another user's Service `web` and
// Pod `solo-0` exist in the namespace; the tenant's multi-node run `web` and single-node run `solo`
// would need those names. Before, the run took the Service as its own (AlreadyExists was success)
// and deleted it when the run went; a Pod of another owner counted as the run's rank. Now each run
// fails InvalidSpec naming the object, which is left as it was, also after the runs are deleted.
TEST_F(Tenant, RunsNamedLikeObjectsTheyDidNotCreateNeverAdoptOrDeleteThem) {
  // Three instances: `web` takes two whole ones, `solo` the third, whichever is placed first (with
  // two, `solo` could meet both held by `web` and fail NoCapacity instead; seen beside load).
  Nodes("own", 3, "4", "8Gi");
  Fleet("own", "own", "  placement: cluster\n");
  Apply("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n  selector: {app: web}\n  ports: [{port: 80}]\n"
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: solo-0, labels: {app: solo}}\nspec:\n"
        "  containers: [{name: c, image: busybox}]\n");
  auto svc = client()->Get(kServices.Path(ns_, "web"));
  auto pod = client()->Get(kPods.Path(ns_, "solo-0"));
  ASSERT_TRUE(svc.ok() && pod.ok());
  const std::string svc_uid = json::GetString(json::Find(*svc, {"metadata", "uid"}));
  const std::string pod_uid = json::GetString(json::Find(*pod, {"metadata", "uid"}));

  TenantRun("web", "  nodes: 2\n");
  TenantRun("solo");
  ASSERT_TRUE(WaitPhase("web", "Failed")) << Phase("web") << " " << Message("web");
  EXPECT_EQ(Reason("web"), "InvalidSpec");
  EXPECT_NE(Message("web").find("a Service named web already exists in namespace " + ns_ + " and is not this run's"),
            std::string::npos)
      << Message("web");
  ASSERT_TRUE(WaitPhase("solo", "Failed")) << Phase("solo") << " " << Message("solo");
  EXPECT_EQ(Reason("solo"), "InvalidSpec");
  EXPECT_NE(Message("solo").find("a Pod named solo-0 already exists in namespace " + ns_ + " and is not this run's"),
            std::string::npos)
      << Message("solo");
  // The tenant deletes its runs: the objects it did not create stay, unchanged.
  ASSERT_EQ(AsTenant({"delete", "run", "web", "solo", "--wait=true", "--timeout=60s"}).exit_code, 0);
  svc = client()->Get(kServices.Path(ns_, "web"));
  ASSERT_TRUE(svc.ok()) << "the Service was deleted: " << svc.status().ToString();
  EXPECT_EQ(json::GetString(json::Find(*svc, {"metadata", "uid"})), svc_uid);
  EXPECT_EQ(json::Find(*svc, {"metadata", "ownerReferences"}), nullptr);
  pod = client()->Get(kPods.Path(ns_, "solo-0"));
  ASSERT_TRUE(pod.ok()) << "the Pod was deleted: " << pod.status().ToString();
  EXPECT_EQ(json::GetString(json::Find(*pod, {"metadata", "uid"})), pod_uid);
  EXPECT_EQ(json::Find(*pod, {"metadata", "deletionTimestamp"}), nullptr);

  // A run's own Service is the run's: made owned by it, deleted with it.
  TenantRun("gang", "  nodes: 2\n");
  ASSERT_TRUE(WaitPhase("gang", "Scheduled")) << Phase("gang") << " " << Message("gang");
  ASSERT_TRUE(Eventually([&] { return client()->Get(kServices.Path(ns_, "gang")).ok(); }));
  auto own = client()->Get(kServices.Path(ns_, "gang"));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ(json::GetString((*json::Find(*own, {"metadata", "ownerReferences"}))[0], "uid"),
            json::GetString(json::Find(RunDoc("gang"), {"metadata", "uid"})));
  ASSERT_EQ(AsTenant({"delete", "run", "gang", "--wait=false"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return client()->Get(kServices.Path(ns_, "gang")).status().IsNotFound(); }));
}


// Item 1: a Run berth cannot read stops nothing. The tenant creates a Run whose template nests
// 200 levels deep (the template keeps unknown fields; the API server stores it). Before, the JSON
// reader's cap (128 levels) failed the Run informer's every list page and watch event: nothing was
// placed for anyone, and after a restart /readyz never turned ready. Now the Run is set aside (a
// Warning Event, reason InvalidSpec with a condition that says why, berth_unreadable_objects
// counts it) and the other runs are placed, also after a controller restart.
TEST_F(Tenant, ARunBerthCannotReadIsSetAsideAndStopsNothing) {
  Nodes("deep", 1, "4", "8Gi");
  Fleet("deep", "deep");
  std::string nested = "1";
  for (int i = 0; i < 200; ++i) nested = R"({"x":)" + nested + "}";
  const std::string deep = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"deep"},)"
                           R"("spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox","x":)" +
                           nested + "}]}}}}";
  CommandResult r = AsTenant({"create", "-f", "-"}, deep);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto jsonpath = [&](const std::string& run, const std::string& path) {
    return Trim(AsTenant({"get", "run", run, "-o", "jsonpath={" + path + "}"}).out);
  };
  ASSERT_EQ(jsonpath("deep", ".metadata.name"), "deep") << "the API server did not store it";
  TenantRun("after");
  ASSERT_TRUE(WaitPhase("after", "Scheduled")) << Phase("after") << " " << Message("after");
  // The deep run's status and Event say why it is set aside.
  ASSERT_TRUE(Eventually([&] { return jsonpath("deep", ".status.reason") == "InvalidSpec"; })) << controller_->Log();
  EXPECT_NE(jsonpath("deep", ".status.message").find("berth cannot read this Run: its JSON nests deeper than 128 levels"),
            std::string::npos)
      << jsonpath("deep", ".status.message");
  EXPECT_EQ(jsonpath("deep", ".status.conditions[?(@.type==\"Ready\")].reason"), "InvalidSpec");
  EXPECT_NE(jsonpath("deep", ".status.conditions[?(@.type==\"Ready\")].message").find("set aside"), std::string::npos);
  EXPECT_TRUE(Eventually([&] {
    CommandResult e = Kubectl({"get", "events", "--field-selector", "involvedObject.name=deep", "-o",
                                "jsonpath={range .items[*]}{.type}/{.reason}{\"\\n\"}{end}"});
    return e.out.find("Warning/InvalidSpec") != std::string::npos;
  }));
  FinishRun("after");

  // A restart lists the deep run among the others: the caches sync, the next run is placed.
  const int metrics = FreePort(), probes = FreePort();
  controller_->Stop();
  controller_ = std::make_unique<ControllerProcess>(
      std::vector<std::string>{"--metrics-bind-address=127.0.0.1:" + std::to_string(metrics),
                               "--health-probe-bind-address=127.0.0.1:" + std::to_string(probes)},
      "controller-restarted");
  controller_->Start();
  EXPECT_TRUE(Eventually([&] {
    int code = 0;
    HttpGet("http://127.0.0.1:" + std::to_string(probes) + "/readyz", &code);
    return code == 200;
  })) << controller_->Log();
  TenantRun("after-restart");
  ASSERT_TRUE(WaitPhase("after-restart", "Scheduled")) << Phase("after-restart") << " " << Message("after-restart");
  EXPECT_TRUE(Eventually([&] {
    return HttpGet("http://127.0.0.1:" + std::to_string(metrics) + "/metrics").find("berth_unreadable_objects{kind=\"Run\"} 1") !=
           std::string::npos;
  })) << HttpGet("http://127.0.0.1:" + std::to_string(metrics) + "/metrics");
  // Deleted, it is no longer counted (its finalizer, added at admission, was never added).
  ASSERT_EQ(AsTenant({"delete", "run", "deep", "--wait=true", "--timeout=60s"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] {
    return HttpGet("http://127.0.0.1:" + std::to_string(metrics) + "/metrics").find("berth_unreadable_objects{kind=\"Run\"} 0") !=
           std::string::npos;
  }));
}

// Item 6: a Run's size is bounded where the API allows (docs/api.md#how-large-a-run-may-be). The
// issue's case, a Run with a 1.4 MiB env value, is refused by the CRD schema with a sentence
// naming the field. A template over 256 KiB in total made of strings the schema allows (no
// webhook here: without it, or under the admission policies, the API server stores it) fails
// InvalidSpec at once saying the bound, and holds nothing: the run created after it is placed.
TEST_F(Tenant, ARunOverTheSizeBoundIsRefusedOrFailsSayingTheBound) {
  Nodes("size", 1, "4", "8Gi");
  Fleet("size", "size");
  auto run_json = [](const std::string& name, const std::string& tmpl) {
    return R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":")" + name +
           R"("},"spec":{"template":)" + tmpl + "}}";
  };
  // (a) 1.4 MiB in one env value (the template's 13th, env[12]), as the issue's user applied it.
  CommandResult huge = AsTenant({"apply", "-f", "-"}, run_json("huge", SizedTemplate(1468006, 1)));
  EXPECT_NE(huge.exit_code, 0);
  EXPECT_NE(huge.err.find("spec.template.spec.containers[0].env[12].value: Too long: may not be more than 262144 bytes"),
            std::string::npos)
      << huge.err.substr(0, 2000);
  EXPECT_FALSE(GetRun("huge").IsObject()) << "the API server stored the 1.4 MiB Run";

  // (b) Six env values of 50,000 characters: each within the schema's bound, 300 KB together.
  // `kubectl create`: `kubectl apply` would keep a copy in its last-applied-configuration
  // annotation, which the API server bounds at 256 KiB itself.
  std::string env;
  for (int i = 0; i < 6; ++i) {
    env += std::string(i == 0 ? "" : ",") + R"({"name":"PART)" + std::to_string(i) + R"(","value":")" +
           std::string(50000, static_cast<char>('a' + i)) + R"("})";
  }
  const std::string wide = R"({"spec":{"containers":[{"name":"main","image":"busybox","env":[)" + env + "]}]}}";
  ASSERT_GT(wide.size(), 262144u);
  CommandResult created = AsTenant({"create", "-f", "-"}, run_json("wide", wide));
  ASSERT_EQ(created.exit_code, 0) << created.err.substr(0, 2000);
  ASSERT_TRUE(Eventually([&] { return Phase("wide") == "Failed"; })) << Phase("wide") << " " << Message("wide");
  EXPECT_EQ(Reason("wide"), "InvalidSpec");
  const std::string message = Message("wide");
  EXPECT_EQ(message.rfind("spec.template is ", 0), 0u) << message;
  EXPECT_NE(message.find(" bytes as JSON; berth takes templates of at most 262144 bytes (256 KiB): put large data in a "
                         "ConfigMap or Secret and mount it, or pass it with envFrom"),
            std::string::npos)
      << message;
  EXPECT_TRUE(PodsOf("wide").empty()) << "a Pod was made for the run over the bound";
  TenantRun("after");
  EXPECT_TRUE(WaitPhase("after", "Scheduled")) << Phase("after") << " " << Message("after");
}

// Issue 44, item 2: a placed run that its tenant makes unreadable is ended. The tenant patches
// its running run's template 200 levels deep (no webhook here: as with the webhook down under
// failurePolicy Ignore, or under the admission policies, which cannot measure nesting). Before, the
// run was set aside out of the cache and its Pod ran on: its machine held beyond maxDuration,
// preemption, reclaim and its team's usage, the next run waiting for ever. Now it ends Failed,
// InvalidSpec saying why, its Pod is deleted and the next run is placed on the machine it held;
// deleted, it goes (berth removes its finalizer without reading it).
TEST_F(Tenant, APlacedRunMadeUnreadableIsEndedAndItsMachineGoesToTheNextRun) {
  auto nodes = Nodes("held", 1, "4", "8Gi");
  Fleet("held", "held");  // one block per machine: one run holds it
  auto jsonpath = [&](const std::string& run, const std::string& path) {
    return Trim(AsTenant({"get", "run", run, "-o", "jsonpath={" + path + "}"}).out);
  };
  TenantRun("held");
  ASSERT_TRUE(WaitPhase("held", "Scheduled")) << Phase("held") << " " << Message("held");
  StartRun("held");
  ASSERT_EQ(PodsOf("held").size(), 1u);
  EXPECT_EQ(jsonpath("held", ".status.templateHash").size(), 16u) << "the placed template's hash is in the status";
  TenantRun("next", "  retry: {onEvents: [no-capacity], duration: \"off\"}\n");
  ASSERT_TRUE(Eventually([&] { return Phase("next") == "Pending" && Reason("next") == "NoCapacity"; }))
      << Phase("next") << " " << Message("next");

  std::string nested = "1";
  for (int i = 0; i < 200; ++i) nested = R"({"x":)" + nested + "}";
  CommandResult r = AsTenant({"patch", "run", "held", "--type=merge", "-p",
                              R"({"spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox","x":)" +
                                  nested + "}]}}}}"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  ASSERT_TRUE(Eventually([&] { return jsonpath("held", ".status.phase") == "Failed"; }, std::chrono::seconds(60)))
      << jsonpath("held", ".status.phase") << " " << jsonpath("held", ".status.message") << "\n" << controller_->Log();
  EXPECT_EQ(jsonpath("held", ".status.reason"), "InvalidSpec");
  EXPECT_NE(jsonpath("held", ".status.message")
                .find("berth cannot read this Run any more: its JSON nests deeper than 128 levels (spec.template changed "
                      "after the run was placed)"),
            std::string::npos)
      << jsonpath("held", ".status.message");
  EXPECT_EQ(jsonpath("held", ".status.conditions[?(@.type==\"Finished\")].reason"), "InvalidSpec");
  EXPECT_TRUE(Eventually([&] { return PodsOf("held").empty(); })) << "the unreadable run's Pod still runs";
  ASSERT_TRUE(WaitPhase("next", "Scheduled", std::chrono::seconds(60))) << Phase("next") << " " << Message("next");
  EXPECT_EQ(PlacementNodes("next"), nodes) << "the next run is placed on the machine the ended run held";
  EXPECT_TRUE(Eventually([&] {
    CommandResult e = Kubectl({"get", "events", "--field-selector", "involvedObject.name=held", "-o",
                                "jsonpath={range .items[*]}{.type}/{.reason}: {.message}{\"\\n\"}{end}"});
    return e.out.find("Warning/InvalidSpec: berth cannot read this Run any more") != std::string::npos;
  }));
  // Deleted, it goes: berth removes its finalizer without reading it.
  EXPECT_EQ(AsTenant({"delete", "run", "held", "--wait=true", "--timeout=60s"}).exit_code, 0);
}

// Issue 44, item 2: a placed run keeps the template it was placed with. The tenant changes the
// image of its Scheduled run's template (admission would refuse it; there is none here) and deletes
// the run's Pod so that berth has to make it again. Before, berth made the new Pod from the changed
// template (the run ran what it was never placed with). Now the Pod already made is left as it was
// (a SpecChangeIgnored Event says so), and no Pod is made from the changed template: the run ends
// Failed, InvalidSpec, naming both templates' hashes.
TEST_F(Tenant, APlacedRunNeverMakesPodsFromATemplateChangedAfterItWasPlaced) {
  Nodes("tmpl", 1, "4", "8Gi");
  Fleet("tmpl", "tmpl");
  auto jsonpath = [&](const std::string& run, const std::string& path) {
    return Trim(AsTenant({"get", "run", run, "-o", "jsonpath={" + path + "}"}).out);
  };
  TenantRun("keep");
  ASSERT_TRUE(WaitPhase("keep", "Scheduled")) << Phase("keep") << " " << Message("keep");
  ASSERT_TRUE(Eventually([&] { return PodsOf("keep").size() == 1; }));
  const std::string placed = jsonpath("keep", ".status.templateHash");
  EXPECT_EQ(placed.size(), 16u) << placed;
  const std::string pod = PodsOf("keep").begin()->first;
  const std::string pod_uid = json::GetString(json::Find(PodsOf("keep").begin()->second, {"metadata", "uid"}));

  CommandResult r = AsTenant({"patch", "run", "keep", "--type=merge", "-p",
                              R"({"spec":{"template":{"spec":{"containers":[{"name":"main","image":"busybox:1.36"}]}}}})"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Eventually([&] {
    CommandResult e = Kubectl({"get", "events", "--field-selector", "involvedObject.name=keep", "-o",
                                "jsonpath={range .items[*]}{.type}/{.reason}{\"\\n\"}{end}"});
    return e.out.find("Warning/SpecChangeIgnored") != std::string::npos;
  }));
  auto pods = PodsOf("keep");
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(json::GetString(json::Find(pods.begin()->second, {"metadata", "uid"})), pod_uid) << "the Pod made was replaced";
  EXPECT_EQ(json::GetString(pods.begin()->second["spec"]["containers"][0], "image"), "busybox");

  ASSERT_EQ(AsTenant({"delete", "pod", pod, "--wait=false"}).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Phase("keep") == "Failed"; }, std::chrono::seconds(60)))
      << Phase("keep") << " " << Message("keep");
  EXPECT_EQ(Reason("keep"), "InvalidSpec");
  const std::string now = jsonpath("keep", ".status.templateHash");
  EXPECT_EQ(now, placed) << "the status keeps the hash of the template placed";
  EXPECT_NE(Message("keep").find("spec.template changed after the run was placed (placed with template " + placed + ", now "),
            std::string::npos)
      << Message("keep");
  for (const auto& [name, p] : PodsOf("keep")) {
    EXPECT_NE(json::GetString(p["spec"]["containers"][0], "image"), "busybox:1.36") << name << " was made from the changed template";
  }
  EXPECT_TRUE(Eventually([&] { return PodsOf("keep").empty(); }));
}

// Issue 44, item 11: a Lease duration of 0 cannot work (a retry period of 0 has a standby ask the
// API server for the Lease without pause): the controller refuses it at start-up, exit code 2, a
// sentence naming the flag, nothing contacted.
TEST_F(Tenant, ALeaseRetryPeriodOfZeroStopsTheControllerAtStartUp) {
  // `timeout`: a controller that accepted the flag would run until stopped (exit code 124).
  CommandResult r = RunCommand({"timeout", "60", BERTH_CONTROLLER_BIN, "--kubeconfig=" + cp().kubeconfig(), "--leader-elect",
                                "--leader-election-namespace=" + ns_, "--leader-election-retry-period=0",
                                "--metrics-bind-address=0", "--health-probe-bind-address=0"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("berth-controller: --leader-election-retry-period must be longer than 0 (it paces requests to "
                       "the API server: 0 would send them without pause)"),
            std::string::npos)
      << r.err;
  auto lease = client()->Get(k8s::resources::kLeases.Path(ns_, "berth-controller"));
  EXPECT_TRUE(lease.status().IsNotFound()) << "a refused controller took the Lease";
}

}  // namespace
}  // namespace berth::testing
