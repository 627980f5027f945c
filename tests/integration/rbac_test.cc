// Issue 5: least-privilege RBAC. The chart's ServiceAccount, ClusterRole(Binding) and Role(Binding)
// are rendered by real Helm (helm template) and applied; berth-controller then runs with a token
// of that ServiceAccount and nothing more, with leader election on, and the core scenario still
// works; the same token cannot read Secrets or modify Nodes.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "harness.h"
#include "k8s/json.h"

extern char** environ;

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kFleets;
using k8s::resources::kNodes;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using k8s::resources::kServices;

const std::string kSource = BERTH_SOURCE_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  return s;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The documents of a render whose top-level kind is one of `kinds` (each starts "# Source: ...").
std::string SelectKinds(const std::string& rendered, const std::vector<std::string>& kinds) {
  std::string out;
  size_t pos = 0;
  while (pos < rendered.size()) {
    size_t next = rendered.find("\n---\n", pos);
    std::string doc = rendered.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    pos = next == std::string::npos ? rendered.size() : next + 1;
    for (const auto& k : kinds) {
      if (doc.find("\nkind: " + k + "\n") != std::string::npos) {
        if (doc.rfind("---\n", 0) != 0) doc = "---\n" + doc;
        out += doc + "\n";
        break;
      }
    }
  }
  return out;
}

class Rbac : public IntegrationTest {
 protected:
  void SetUp() override {
    IntegrationTest::SetUp();
    // The chart's cluster-scoped names include the namespace; a release name per test namespace
    // too keeps the Lease and ServiceAccount names recognisable in logs.
    release_ = "berth-" + ns_;
    full_ = release_ + "-controller";
    // helm template for the API server's version (Chart.yaml's kubeVersion is checked against it;
    // helm's own default is the Kubernetes it was built for); no --include-crds: the harness
    // installed the CRDs.
    CommandResult version = cp().Kubectl({"version", "-o", "json"});
    auto doc = json::Parse(version.out);
    ASSERT_TRUE(doc.ok()) << version.out << version.err;
    std::string server = json::GetString(json::Find(*doc, {"serverVersion", "gitVersion"}));
    ASSERT_FALSE(server.empty()) << version.out;
    CommandResult r = RunCommand({"helm", "template", release_, kSource + "/deploy/helm/berth", "-n", ns_, "--kube-version",
                                  server},
                                 {}, {"HELM_CONFIG_HOME=" + cp().dir() + "/helm/config", "HELM_CACHE_HOME=" + cp().dir() + "/helm/cache",
                                      "HELM_DATA_HOME=" + cp().dir() + "/helm/data"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::string rbac = SelectKinds(r.out, {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"});
    ASSERT_NE(rbac.find("kind: ClusterRoleBinding"), std::string::npos) << r.out;
    CommandResult applied = cp().Kubectl({"apply", "-f", "-"}, rbac);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    applied_ = true;

    // A token for the ServiceAccount from the TokenRequest API, and a kubeconfig with only it.
    CommandResult token = Kubectl({"create", "token", full_, "--duration=1h"});
    ASSERT_EQ(token.exit_code, 0) << token.err;
    std::string port = Trim(ReadFile(cp().dir() + "/apiserver.port"));
    ASSERT_FALSE(port.empty());
    sa_kubeconfig_ = cp().dir() + "/kubeconfig-" + ns_;
    std::ofstream(sa_kubeconfig_) << "apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n"
                                  << "    server: https://127.0.0.1:" << port << "\n"
                                  << "    certificate-authority: " << cp().dir() << "/certs/apiserver.crt\n"
                                  << "users:\n- name: berth\n  user:\n    token: " << Trim(token.out) << "\n"
                                  << "contexts:\n- name: berth\n  context: {cluster: local, user: berth, namespace: " << ns_
                                  << "}\ncurrent-context: berth\n";
    CommandResult who = SaKubectl({"get", "runs.berth.dev", "-A"});
    ASSERT_EQ(who.exit_code, 0) << "the ServiceAccount's token does not work: " << who.err;
  }

  void TearDown() override {
    if (controller_ && controller_->Running()) controller_->Stop();
    // Runs carry berth's finalizer; without a controller it is removed by hand.
    cp().Kubectl({"-n", ns_, "delete", "runs", "--all", "--wait=false"});
    auto l = client()->List(kRuns.Path(ns_));
    if (l.ok()) {
      for (auto& item : l->items) {
        (void)client()->MergePatch(kRuns.Path(ns_, json::GetString(json::Find(item, {"metadata", "name"}))),
                                   R"({"metadata":{"finalizers":null}})");
      }
    }
    cp().Kubectl({"-n", ns_, "delete", "pods", "--all", "--grace-period=0", "--force", "--wait=false"});
    if (!fleet_.empty()) (void)client()->Delete(kFleets.Path("", fleet_));
    for (const auto& n : nodes_) (void)client()->Delete(kNodes.Path("", n));
    if (applied_) {
      cp().Kubectl({"delete", "clusterrolebinding", full_ + "." + ns_, "--wait=false"});
      cp().Kubectl({"delete", "clusterrole", full_ + "." + ns_, "--wait=false"});
    }
    IntegrationTest::TearDown();
  }

  // kubectl with the ServiceAccount's kubeconfig only.
  CommandResult SaKubectl(const std::vector<std::string>& args, const std::string& input = {}) {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", sa_kubeconfig_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, input);
  }
  // The API server's answer (SelfSubjectAccessReview): exactly "yes" (exit 0) or "no" (exit 1);
  // anything else (a kubectl or API error, a typo in a resource) fails the test instead of
  // reading as "no".
  bool SaCan(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"auth", "can-i"};
    argv.insert(argv.end(), args.begin(), args.end());
    CommandResult r = SaKubectl(argv);
    const std::string answer = Trim(r.out);
    const bool yes = r.exit_code == 0 && answer == "yes";
    const bool no = r.exit_code == 1 && answer == "no";
    EXPECT_TRUE(yes || no) << "can-i " << ::testing::PrintToString(args) << ": exit " << r.exit_code << ", out \""
                           << r.out << "\", err \"" << r.err << "\"";
    EXPECT_EQ(r.err.find("doesn't have a resource type"), std::string::npos)
        << "can-i " << ::testing::PrintToString(args) << " asked about a resource the API does not have: " << r.err;
    return yes;
  }

  // Two Ready nodes (no kubelet: status is set on create, the not-ready taint removed) and a
  // cluster-placement Fleet over them, created by the admin.
  void FleetOfTwo() {
    std::string pool = ns_ + "-rbac";
    for (int i = 0; i < 2; ++i) {
      std::string name = pool + "-" + std::to_string(i);
      std::string res = R"({"cpu":"4","memory":"8Gi","pods":"110"})";
      std::string body = R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name + R"(","labels":{"pool":")" + pool +
                         R"("}},"status":{"capacity":)" + res + R"(,"allocatable":)" + res +
                         R"(,"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}]}})";
      auto r = client()->Create(kNodes.Path(), body);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      (void)client()->JsonPatch(kNodes.Path("", name), R"([{"op":"remove","path":"/spec/taints"}])");
      nodes_.push_back(name);
    }
    fleet_ = "rbac-" + ns_;
    CommandResult f = cp().Kubectl({"apply", "-f", "-"}, "apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + fleet_ +
                                                             "}\nspec:\n  nodeSelector: {pool: " + pool +
                                                             "}\n  placement: cluster\n");
    ASSERT_EQ(f.exit_code, 0) << f.err;
  }

  void StartController(const std::vector<std::string>& extra = {}) {
    // Only the ServiceAccount's token: nothing of the admin kubeconfig.
    std::vector<std::string> args = {"--leader-elect", "--leader-election-namespace=" + ns_, "--leader-election-id=" + full_};
    args.insert(args.end(), extra.begin(), extra.end());
    controller_ = std::make_unique<ControllerProcess>(args, "controller-" + ns_, sa_kubeconfig_);
    controller_->Start();
  }

  std::string RunField(const std::string& run, std::initializer_list<std::string_view> path) {
    auto r = client()->Get(kRuns.Path(ns_, run));
    return r.ok() ? json::GetString(json::Find(*r, path)) : "";
  }

  std::map<std::string, std::string> PodNodes(const std::string& run) {
    std::map<std::string, std::string> out;
    k8s::ListOptions lo;
    lo.label_selector = "berth.dev/run=" + run;
    auto l = client()->List(kPods.Path(ns_), lo);
    if (!l.ok()) return out;
    for (auto& p : l->items) {
      if (json::Find(p, {"metadata", "deletionTimestamp"}) != nullptr) continue;
      out[json::GetString(json::Find(p, {"metadata", "name"}))] = json::GetString(json::Find(p, {"spec", "nodeName"}));
    }
    return out;
  }

  void SetPodsPhase(const std::string& run, const std::string& phase) {
    for (const auto& [pod, node] : PodNodes(run)) {
      auto r = client()->MergePatch(kPods.Path(ns_, pod, "status"), R"({"status":{"phase":")" + phase + R"("}})");
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }

  std::string LeaseHolder() {
    CommandResult r = Kubectl({"get", "lease", full_, "-o", "jsonpath={.spec.holderIdentity}"});
    return r.exit_code == 0 ? Trim(r.out) : "<" + Trim(r.err) + ">";
  }

  std::string release_, full_, sa_kubeconfig_, fleet_;
  std::vector<std::string> nodes_;
  bool applied_ = false;
  std::unique_ptr<ControllerProcess> controller_;
};

TEST_F(Rbac, ControllerWithOnlyTheChartsServiceAccountRunsTheCoreScenario) {
  ASSERT_NO_FATAL_FAILURE(FleetOfTwo());
  QueueApiRegistration queue_api(ns_);  // issue 44: the queue API too, with the chart's rights only
  StartController(queue_api.ControllerArgs());
  // Leader election works with the Role: the Lease in the release namespace is created and held.
  ASSERT_TRUE(Eventually([&] { return !LeaseHolder().empty() && LeaseHolder()[0] != '<'; }))
      << "lease: " << LeaseHolder() << "\n" << controller_->Log();
  // The queue API: the request-header CA read (the kube-system RoleBinding), the caller's rights
  // asked with SubjectAccessReviews (the ClusterRole): the admin's queue and fleets through the
  // API server.
  ASSERT_TRUE(queue_api.Register()) << controller_->Log();
  CommandResult queue = queue_api.GetRaw("/namespaces/" + ns_ + "/queue");
  EXPECT_EQ(queue.exit_code, 0) << queue.err << controller_->Log();
  EXPECT_NE(queue.out.find("\"items\""), std::string::npos) << queue.out;
  CommandResult fleets = queue_api.GetRaw("/fleets");
  EXPECT_EQ(fleets.exit_code, 0) << fleets.err;
  EXPECT_NE(fleets.out.find(fleet_), std::string::npos) << fleets.out;

  // The Fleet's status is written (fleets/status) with both instances.
  ASSERT_TRUE(Eventually([&] {
    auto f = client()->Get(kFleets.Path("", fleet_));
    const json::Value* ready = f.ok() ? json::Find(*f, {"status", "readyInstances"}) : nullptr;
    return ready != nullptr && ready->IsInt64() && ready->GetInt64() == 2;
  })) << controller_->Log();

  // A two-node run: admitted, a headless Service (services create), two pods created and bound.
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: gang}\nspec:\n  nodes: 2\n  fleets: [" + fleet_ +
        "]\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  ASSERT_TRUE(Eventually([&] {
    std::string phase = RunField("gang", {"status", "phase"});
    return phase == "Scheduled" || phase == "Running";
  })) << "phase " << RunField("gang", {"status", "phase"}) << ": " << RunField("gang", {"status", "message"}) << "\n"
      << controller_->Log();
  EXPECT_EQ(RunField("gang", {"status", "fleet"}), fleet_);
  ASSERT_TRUE(Eventually([&] {
    auto pods = PodNodes("gang");
    return pods.size() == 2 && std::all_of(pods.begin(), pods.end(), [](const auto& p) { return !p.second.empty(); });
  })) << controller_->Log();
  auto pods = PodNodes("gang");
  std::vector<std::string> bound;
  for (const auto& [pod, node] : pods) bound.push_back(node);
  std::sort(bound.begin(), bound.end());
  EXPECT_EQ(bound, nodes_) << "one pod bound to each instance";
  EXPECT_TRUE(client()->Get(kServices.Path(ns_, "gang")).ok()) << "the headless Service of a multi-node run";

  // Lifecycle through pods' status (the test plays the kubelet): Running, then Succeeded.
  SetPodsPhase("gang", "Running");
  EXPECT_TRUE(Eventually([&] { return RunField("gang", {"status", "phase"}) == "Running"; }))
      << RunField("gang", {"status", "phase"});
  SetPodsPhase("gang", "Succeeded");
  EXPECT_TRUE(Eventually([&] { return RunField("gang", {"status", "phase"}) == "Succeeded"; }))
      << RunField("gang", {"status", "phase"});

  // Events about the run were recorded by the ServiceAccount (events create).
  CommandResult ev = Kubectl({"get", "events", "--field-selector", "involvedObject.name=gang", "-o",
                              "jsonpath={range .items[*]}{.reason}{\"\\n\"}{end}"});
  EXPECT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_FALSE(Trim(ev.out).empty()) << "no events for run gang";

  // Deleting the run: the controller deletes its pods and removes its finalizer (runs patch).
  ASSERT_EQ(Kubectl({"delete", "run", "gang", "--wait=false"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return client()->Get(kRuns.Path(ns_, "gang")).status().IsNotFound(); }))
      << "run gang was not finalized\n" << controller_->Log();
  EXPECT_TRUE(Eventually([&] { return PodNodes("gang").empty(); })) << "pods of gang were not deleted";

  // Not one request was refused.
  std::string log = controller_->Log();
  EXPECT_EQ(Lower(log).find("forbidden"), std::string::npos) << log;

  // A graceful stop hands the Lease over (patch of the Lease, allowed by the Role).
  EXPECT_EQ(controller_->Stop(), 0) << controller_->Log();
  EXPECT_EQ(LeaseHolder(), "") << controller_->Log();
}

TEST_F(Rbac, TheServiceAccountCannotReadSecretsOrModifyNodes) {
  ASSERT_NO_FATAL_FAILURE(FleetOfTwo());
  const std::string user = "system:serviceaccount:" + ns_ + ":" + full_;

  CommandResult secrets = SaKubectl({"get", "secrets", "-A"});
  EXPECT_NE(secrets.exit_code, 0);
  EXPECT_NE(secrets.err.find("Forbidden"), std::string::npos) << secrets.err;
  EXPECT_NE(secrets.err.find(user), std::string::npos) << secrets.err;
  CommandResult own_secrets = SaKubectl({"get", "secrets", "-n", ns_});
  EXPECT_NE(own_secrets.exit_code, 0) << "not even in its own namespace";
  EXPECT_NE(own_secrets.err.find("Forbidden"), std::string::npos) << own_secrets.err;

  CommandResult label = SaKubectl({"label", "node", nodes_[0], "foo=bar"});
  EXPECT_NE(label.exit_code, 0);
  EXPECT_NE(label.err.find("Forbidden"), std::string::npos) << label.err;
  CommandResult del = SaKubectl({"delete", "node", nodes_[0], "--wait=false"});
  EXPECT_NE(del.exit_code, 0);
  EXPECT_NE(del.err.find("Forbidden"), std::string::npos) << del.err;
  auto node = client()->Get(kNodes.Path("", nodes_[0]));
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(json::Find(*node, {"metadata", "labels", "foo"}), nullptr) << "the node was modified";

  // What the identity may do, asked of the API server (SelfSubjectAccessReview).
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"watch", "runs.berth.dev", "-A"},
           {"patch", "runs.berth.dev", "-A"},
           {"patch", "runs.berth.dev", "--subresource=status", "-A"},
           {"get", "runs.berth.dev", "-A"},
           {"list", "fleets.berth.dev"},
           {"patch", "fleets.berth.dev", "--subresource=status"},
           {"watch", "teams.berth.dev"},
           {"patch", "teams.berth.dev", "--subresource=status"},
           {"create", "pods", "-A"},
           {"delete", "pods", "-A"},
           {"create", "pods", "--subresource=binding", "-A"},
           {"watch", "nodes"},
           {"get", "namespaces"},
           {"watch", "namespaces"},
           {"watch", "resourcequotas", "-A"},
           {"create", "services", "-A"},
           {"delete", "services", "-A"},
           // Issue 29: an existing Pod or Service under a run's name is read to check its owner.
           {"get", "pods", "-A"},
           {"get", "services", "-A"},
           {"create", "events", "-A"},
           {"create", "leases.coordination.k8s.io", "-n", ns_},
           {"update", "leases.coordination.k8s.io/" + full_, "-n", ns_},
           // Issue 44: the queue API asks about the user the API server names, and reads the
           // request-header CA (the bootstrap Role extension-apiserver-authentication-reader).
           {"create", "subjectaccessreviews.authorization.k8s.io"},
           {"get", "configmaps/extension-apiserver-authentication", "-n", "kube-system"},
           // Issue 45: tickets of queued Jobs; the Jobs held and released, their Pods pinned.
           {"create", "runs.berth.dev", "-A"},
           {"delete", "runs.berth.dev", "-A"},
           {"watch", "jobs.batch", "-A"},
           {"patch", "jobs.batch", "-A"},
           {"patch", "pods", "-A"},
       }) {
    EXPECT_TRUE(SaCan(args)) << "can-i " << ::testing::PrintToString(args) << " should be yes";
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"get", "secrets", "-A"},
           {"list", "configmaps", "-A"},
           {"get", "configmaps/kube-root-ca.crt", "-n", "kube-system"},
           {"create", "tokenreviews.authentication.k8s.io"},
           {"update", "nodes"},
           {"patch", "nodes"},
           {"delete", "nodes"},
           {"create", "nodes"},
           {"patch", "nodes", "--subresource=status"},
           {"patch", "namespaces"},
           {"update", "resourcequotas", "-A"},
           {"patch", "resourcequotas", "--subresource=status", "-A"},
           {"update", "fleets.berth.dev"},
           {"delete", "fleets.berth.dev"},
           {"update", "pods", "-A"},
           {"update", "jobs.batch", "-A"},
           {"create", "jobs.batch", "-A"},
           {"create", "pods", "--subresource=exec", "-A"},
           {"create", "serviceaccounts", "--subresource=token", "-A"},
           {"list", "services", "-A"},
           // Verbs berth-controller never sends (its caches come from list + watch; its writes
           // are creates, merge patches and deletes): not granted.
           {"update", "runs.berth.dev", "-A"},
           {"update", "runs.berth.dev", "--subresource=status", "-A"},
           {"get", "runs.berth.dev", "--subresource=status", "-A"},
           {"get", "fleets.berth.dev"},
           {"update", "fleets.berth.dev", "--subresource=status"},
           {"get", "fleets.berth.dev", "--subresource=status"},
           {"get", "nodes"},
           {"patch", "events", "-A"},
           {"create", "leases.coordination.k8s.io", "-n", "default"},
           {"update", "leases.coordination.k8s.io/someone-else", "-n", ns_},
           {"create", "clusterrolebindings"},
           {"escalate", "clusterroles"},
           {"*", "*", "-A"},
       }) {
    EXPECT_FALSE(SaCan(args)) << "can-i " << ::testing::PrintToString(args) << " should be no";
  }
  CommandResult list = SaKubectl({"auth", "can-i", "--list", "-n", ns_});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find("runs.berth.dev"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("secrets"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("[*]"), std::string::npos) << "no wildcard verbs\n" << list.out;
}

// Issue 44 (3, 10): with the chart's policy on Pods installed, berth's ServiceAccount still creates
// its Pods (label berth.dev/run, a Run ownerReference, the fleet toleration), while the same Pod
// from anyone else (here the test's admin) is refused.
TEST_F(Rbac, TheChartsPodPolicyLetsOnlyBerthsServiceAccountMakeBerthsPods) {
  CommandResult r = RunCommand({"helm", "template", release_, kSource + "/deploy/helm/berth", "-n", ns_, "--set",
                                "admissionPolicies=false", "--show-only", "templates/admission-policies.yaml"},
                               {}, {"HELM_CONFIG_HOME=" + cp().dir() + "/helm/config", "HELM_CACHE_HOME=" + cp().dir() + "/helm/cache",
                                    "HELM_DATA_HOME=" + cp().dir() + "/helm/data"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string policy = YamlDocumentsNamed(r.out, {full_ + "-pods." + ns_});
  ASSERT_NE(policy.find("kind: ValidatingAdmissionPolicyBinding"), std::string::npos) << r.out;
  ASSERT_EQ(cp().Kubectl({"apply", "-f", "-"}, policy).exit_code, 0);
  struct Cleanup {
    std::string policy;
    ~Cleanup() { ControlPlane::Get().Kubectl({"delete", "-f", "-", "--ignore-not-found"}, policy); }
  } cleanup{policy};
  // In effect once a Pod with berth's label from the admin is refused (a server-side dry run).
  const std::string fake = "apiVersion: v1\nkind: Pod\nmetadata: {name: fake, labels: {berth.dev/run: gang}}\nspec:\n"
                           "  containers: [{name: main, image: busybox}]\n";
  CommandResult refused;
  ASSERT_TRUE(Eventually([&] {
    refused = Kubectl({"create", "--dry-run=server", "-f", "-"}, fake);
    return refused.exit_code != 0;
  }, std::chrono::seconds(60))) << refused.out;
  EXPECT_NE(refused.err.find("only berth sets it"), std::string::npos) << refused.err;

  ASSERT_NO_FATAL_FAILURE(FleetOfTwo());
  StartController();
  Apply("apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: gang}\nspec:\n  nodes: 2\n  fleets: [" + fleet_ +
        "]\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  ASSERT_TRUE(Eventually([&] {
    auto pods = PodNodes("gang");
    return pods.size() == 2 && std::all_of(pods.begin(), pods.end(), [](const auto& p) { return !p.second.empty(); });
  }, std::chrono::seconds(60))) << RunField("gang", {"status", "message"}) << "\n" << controller_->Log();
  EXPECT_EQ(Lower(controller_->Log()).find("denied request"), std::string::npos) << controller_->Log();
}

// Issue 47: the per-user usage stores are ConfigMaps in berth's own namespace: berth may read,
// list, make and update them there, and nothing of ConfigMaps elsewhere (nor delete them).
TEST_F(Rbac, TheServiceAccountKeepsPerUserUsageInItsOwnNamespaceOnly) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"get", "configmaps", "-n", ns_},
           {"list", "configmaps", "-n", ns_},
           {"create", "configmaps", "-n", ns_},
           {"update", "configmaps/berth-usage-vision", "-n", ns_},
       }) {
    EXPECT_TRUE(SaCan(args)) << "can-i " << ::testing::PrintToString(args) << " should be yes";
  }
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"get", "configmaps", "-n", "default"},
           {"create", "configmaps", "-n", "default"},
           {"update", "configmaps", "-n", "kube-system"},
           {"delete", "configmaps", "-n", ns_},
           {"patch", "configmaps", "-n", ns_},
           {"list", "configmaps", "-A"},
       }) {
    EXPECT_FALSE(SaCan(args)) << "can-i " << ::testing::PrintToString(args) << " should be no";
  }
}

}  // namespace
}  // namespace berth::testing
