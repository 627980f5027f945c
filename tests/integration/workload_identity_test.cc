// Issue 45, security of workloads: every component under its own identity, as in a cluster.
// berth-controller runs with a TokenRequest token of the chart's ServiceAccount, bound by the
// chart's ClusterRole/Role exactly as `helm template` renders them, and the chart's admission
// policies name that ServiceAccount; kube-controller-manager (Job controller, garbage collector,
// node lifecycle) runs as system:kube-controller-manager with --use-service-account-credentials
// (each controller then acts as its own kube-system ServiceAccount, e.g. job-controller);
// kube-scheduler as system:kube-scheduler (both with client certificates of the control plane's
// client CA, as kubeadm makes them); the JobSet controller as its ServiceAccount with the RBAC of
// its upstream manifests (config/components/rbac). Then through real kubelets a queued Job, a
// JobSet and a Pod group each run to Succeeded, and what each identity may not do is refused.

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "engine_fixture.h"
#include "k8s/json.h"
#include "real_nodes.h"
#include "workload_fixture.h"

namespace berth::testing {
namespace {

namespace json = k8s::json;
using k8s::resources::kPods;

// The audit log (hack/control-plane.sh BERTH_AUDIT) says who made each write.
[[maybe_unused]] const bool kAudit = [] { return setenv("BERTH_AUDIT", "1", 1) == 0; }();

const char* kNode0 = "ident-gpu-0";
const char* kNode1 = "ident-gpu-1";
const std::string kBerthSa = "system:serviceaccount:berth-system:berth-controller";
const std::string kJobController = "system:serviceaccount:kube-system:job-controller";

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The documents of a render whose top-level kind is one of `kinds`, each after a "---" line.
std::string DocumentsOfKinds(const std::string& rendered, const std::vector<std::string>& kinds) {
  std::string out;
  size_t pos = 0;
  while (pos < rendered.size()) {
    size_t next = rendered.find("\n---", pos);
    std::string doc = rendered.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    pos = next == std::string::npos ? rendered.size() : next + 4;
    for (const auto& k : kinds) {
      if (doc.find("\nkind: " + k + "\n") != std::string::npos) {
        out += "---\n" + doc + "\n";
        break;
      }
    }
  }
  return out;
}

// Starts `argv` in the background with its output in `log` and its pid in `pidfile`
// (hack/real-nodes.sh stop-all stops it by that file at the end of the binary).
void StartBackground(const std::vector<std::string>& argv, const std::string& log, const std::string& pidfile) {
  std::vector<std::string> sh = {"sh", "-c", "\"$0\" \"$@\" >>" + log + " 2>&1 </dev/null & echo $! > " + pidfile};
  sh.insert(sh.end(), argv.begin(), argv.end());
  CommandResult r = RunCommand(sh);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

// A kubeconfig for the user `cn` (groups `org`) with a client certificate of the control plane's
// client CA (what kubeadm gives kube-controller-manager and kube-scheduler).
std::string CertificateKubeconfig(const std::string& file, const std::string& cn) {
  ControlPlane& cp = ControlPlane::Get();
  const std::string base = cp.dir() + "/" + file;
  CommandResult key = RunCommand({"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", base + ".key", "-out",
                                  base + ".csr", "-subj", "/CN=" + cn});
  EXPECT_EQ(key.exit_code, 0) << key.err;
  CommandResult crt = RunCommand({"openssl", "x509", "-req", "-in", base + ".csr", "-CA", cp.dir() + "/client-ca.crt", "-CAkey",
                                  cp.dir() + "/client-ca.key", "-CAcreateserial", "-out", base + ".crt", "-days", "1"});
  EXPECT_EQ(crt.exit_code, 0) << crt.err;
  return cp.KubeconfigOf(file, "    client-certificate: " + base + ".crt\n    client-key: " + base + ".key\n");
}

// A kubeconfig with a TokenRequest token of ServiceAccount `ns`/`sa`.
std::string TokenKubeconfig(const std::string& ns, const std::string& sa) {
  ControlPlane& cp = ControlPlane::Get();
  CommandResult token = cp.Kubectl({"create", "token", sa, "-n", ns, "--duration=4h"});
  EXPECT_EQ(token.exit_code, 0) << token.err;
  return cp.KubeconfigOf("sa-" + ns + "-" + sa, "    token: " + Trim(token.out) + "\n");
}

// The kube-apiserver's audit log: who (user) made which successful write (verb, resource,
// subresource) in `ns`; one line each, "user verb resource[/subresource]".
std::multiset<std::string> AuditedWriters(const std::string& ns) {
  std::multiset<std::string> out;
  for (const AuditedWrite& w : AuditedWrites(ns)) {
    if (w.code == 0 || w.code >= 300) continue;
    out.insert(w.user + " " + w.verb + " " + w.resource + (w.subresource.empty() ? "" : "/" + w.subresource));
  }
  return out;
}

class WorkloadIdentityTest : public EngineTest {
 protected:
  WorkloadIdentityTest() { finish_deleted_pods_ = false; }  // the kubelets do it

  static std::string& BerthKubeconfig() {
    static std::string path;
    return path;
  }

  static void SetUpTestSuite() {
    ControlPlane& cp = ControlPlane::Get();
    ASSERT_NE(cp.Kubectl({"get", "--raw", "/apis/admissionregistration.k8s.io/v1"}).out.find("\"kind\":\"MutatingAdmissionPolicy\""),
              std::string::npos)
        << "this binary needs an API server that serves MutatingAdmissionPolicy (1.36+)";
    const std::string bin = Trim(RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/build-kube.sh", "--bin"}).out);
    ASSERT_FALSE(bin.empty());
    // The JobSet CRD first (the garbage collector learns the kind when it starts), then the
    // control plane's controllers under their own names, before hack/real-nodes.sh would start
    // them as admin: it leaves a running kube-controller-manager and kube-scheduler alone.
    ASSERT_NO_FATAL_FAILURE(StartJobSetController());
    const std::string kcm = CertificateKubeconfig("kube-controller-manager", "system:kube-controller-manager");
    ASSERT_NO_FATAL_FAILURE(StartBackground(
        {bin + "/kube-controller-manager", "--kubeconfig=" + kcm, "--leader-elect=false",
         "--controllers=nodelifecycle,taint-eviction-controller,podgc,job-controller,garbage-collector-controller",
         "--secure-port=0", "--node-monitor-period=2s", "--node-monitor-grace-period=16s", "--use-service-account-credentials=true"},
        cp.dir() + "/controller-manager.log", cp.dir() + "/controller-manager.pid"));
    const std::string sched = CertificateKubeconfig("kube-scheduler", "system:kube-scheduler");
    ASSERT_NO_FATAL_FAILURE(StartBackground({bin + "/kube-scheduler", "--kubeconfig=" + sched, "--leader-elect=false", "--secure-port=0"},
                                            cp.dir() + "/kube-scheduler.log", cp.dir() + "/kube-scheduler.pid"));
    RealNodes::Start({{kNode0, 8, "4Gi", {{"pool", "ident-gpu"}, {"zone", "z1"}}},
                      {kNode1, 8, "4Gi", {{"pool", "ident-gpu"}, {"zone", "z1"}}}},
                     /*workload_controllers=*/true);
    ASSERT_NO_FATAL_FAILURE(InstallTheChartsRbacAndPolicies());
  }

  // The JobSet controller as hack/real-nodes.sh starts it (CRD, webhooks, its configuration), then
  // started again by the same configuration with its own ServiceAccount's token instead of the
  // admin kubeconfig, bound by the RBAC of its upstream manifests (jobset-system, prefix jobset-).
  static void StartJobSetController() {
    ControlPlane& cp = ControlPlane::Get();
    const std::string dir = cp.dir();
    CommandResult js = RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/real-nodes.sh", "jobset", dir});
    ASSERT_EQ(js.exit_code, 0) << js.err;
    const std::string mod = Trim(RunCommand({std::string(BERTH_SOURCE_DIR) + "/hack/build-kube.sh", "--jobset-dir"}).out);
    const std::string kz = dir + "/jobset-rbac";
    ASSERT_EQ(RunCommand({"sh", "-c", "rm -rf \"$0\" && mkdir -p \"$0\" && cp -r \"$1/config/components/rbac\" \"$0/rbac\" && chmod -R u+w \"$0\"",
                          kz, mod})
                  .exit_code,
              0);
    std::ofstream(kz + "/kustomization.yaml") << "namespace: jobset-system\nnamePrefix: jobset-\nresources:\n- rbac\n";
    CommandResult rbac = cp.Kubectl({"kustomize", kz});
    ASSERT_EQ(rbac.exit_code, 0) << rbac.err;
    cp.Kubectl({"create", "namespace", "jobset-system"});
    CommandResult applied = cp.Kubectl({"apply", "-f", "-"}, rbac.out);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    const std::string kubeconfig = TokenKubeconfig("jobset-system", "jobset-controller-manager");
    const std::string pid = Trim(ReadFile(dir + "/jobset.pid"));
    ASSERT_FALSE(pid.empty());
    RunCommand({"kill", pid});
    ASSERT_TRUE(Eventually([&] { return RunCommand({"kill", "-0", pid}).exit_code != 0; }, std::chrono::seconds(30)));
    const std::string tools = std::string(std::getenv("HOME")) + "/.cache/berth/tools/bin";
    ASSERT_NO_FATAL_FAILURE(StartBackground({tools + "/jobset", "--config=" + dir + "/jobset/config.yaml", "--kubeconfig=" + kubeconfig,
                                             "--zap-devel=false"},
                                            dir + "/jobset.log", dir + "/jobset.pid"));
  }

  // helm template of the chart for release berth in berth-system on this API server: its
  // ServiceAccount, ClusterRole(Binding), Role(Binding) and every admission policy, applied as
  // rendered (the policies name system:serviceaccount:berth-system:berth-controller).
  static void InstallTheChartsRbacAndPolicies() {
    ControlPlane& cp = ControlPlane::Get();
    CommandResult version = cp.Kubectl({"version", "-o", "json"});
    auto doc = json::Parse(version.out);
    ASSERT_TRUE(doc.ok()) << version.out;
    CommandResult r = RunCommand({"helm", "template", "berth", std::string(BERTH_SOURCE_DIR) + "/deploy/helm/berth", "--namespace",
                                  "berth-system", "--kube-version", json::GetString(json::Find(*doc, {"serverVersion", "gitVersion"})),
                                  "--set", "admissionPolicies=true", "--api-versions",
                                  "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy", "--api-versions",
                                  "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy"},
                                 {}, {"HELM_CONFIG_HOME=" + cp.dir() + "/helm/config", "HELM_CACHE_HOME=" + cp.dir() + "/helm/cache",
                                      "HELM_DATA_HOME=" + cp.dir() + "/helm/data"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string docs = DocumentsOfKinds(
        r.out, {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "MutatingAdmissionPolicy",
                "MutatingAdmissionPolicyBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"});
    ASSERT_NE(docs.find("name: berth-controller-jobs.berth-system"), std::string::npos) << r.out;
    ASSERT_NE(docs.find(kBerthSa), std::string::npos) << docs;
    cp.Kubectl({"create", "namespace", "berth-system"});
    CommandResult applied = cp.Kubectl({"apply", "-f", "-"}, docs);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    BerthKubeconfig() = TokenKubeconfig("berth-system", "berth-controller");
    // A policy takes effect a moment after it is created: a labelled Job (dry run) comes back held.
    const std::string probe = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: probe, namespace: default, labels: "
                              "{berth.dev/queue: \"true\"}}\nspec:\n  template:\n    spec:\n      restartPolicy: Never\n"
                              "      containers: [{name: main, image: busybox}]\n";
    ASSERT_TRUE(Eventually([&] {
      CommandResult p = cp.Kubectl({"create", "--dry-run=server", "-f", "-", "-o", "jsonpath={.spec.suspend}"}, probe);
      return p.exit_code == 0 && p.out == "true";
    }, std::chrono::seconds(60))) << "the chart's MutatingAdmissionPolicy for Jobs never took effect";
  }

  void SetUp() override {
    controller_kubeconfig_ = BerthKubeconfig();
    // As the chart's Deployment runs it: leader election by the Lease of the release namespace.
    controller_args_ = {"--leader-elect", "--leader-election-namespace=berth-system", "--leader-election-id=berth-controller"};
    EngineTest::SetUp();
  }

  void TearDown() override {
    if (HasFailure()) {
      std::printf("---- jobsets, jobs, pods, runs ----\n%s\n%s\n%s\n%s\n", Kubectl({"get", "jobsets", "-o", "yaml"}).out.c_str(),
                  Kubectl({"get", "jobs", "-o", "yaml"}).out.c_str(), Kubectl({"get", "pods", "-o", "wide", "--show-labels"}).out.c_str(),
                  Kubectl({"get", "runs", "-o", "yaml"}).out.c_str());
      std::printf("---- events ----\n%s\n", Kubectl({"get", "events"}).out.c_str());
    }
    Kubectl({"delete", "jobsets", "--all", "--wait=false", "--cascade=background"});
    Kubectl({"delete", "jobs", "--all", "--wait=false", "--cascade=background"});
    EXPECT_TRUE(Eventually([&] {
      auto l = client()->List("/apis/jobset.x-k8s.io/v1alpha2/namespaces/" + ns_ + "/jobsets");
      auto j = client()->List("/apis/batch/v1/namespaces/" + ns_ + "/jobs");
      return l.ok() && l->items.empty() && j.ok() && j->items.empty();
    }, std::chrono::seconds(90)));
    EngineTest::TearDown();
    EXPECT_TRUE(Eventually([&] {
      auto l = client()->List(kPods.Path(ns_));
      return l.ok() && l->items.empty();
    }, std::chrono::seconds(90))) << "pods of " << ns_ << " were not gone 90 s after the test";
  }

  void RealFleet(const std::string& name) {
    Apply("apiVersion: berth.dev/v1alpha1\nkind: Fleet\nmetadata: {name: " + FleetName(name) + "}\nspec:\n  nodeSelector: {pool: ident-gpu}\n");
    created_fleets_.push_back(FleetName(name));
    ASSERT_TRUE(Eventually([&] {
      auto f = client()->Get(k8s::resources::kFleets.Path("", FleetName(name)));
      const json::Value* list = f.ok() ? json::Find(*f, {"status", "instances"}) : nullptr;
      return list != nullptr && list->IsArray() && list->Size() == 2;
    }, std::chrono::seconds(60))) << controller_->Log();
  }

  // The impersonated user "tenant" may work with Jobs, JobSets and Pods (and bind Pods) in the
  // test's namespace, and nothing else.
  void GrantTenantWorkloadRights() {
    GrantTenantNamespaceRights();
    Apply(TenantRole("tenant-workloads", AllVerbsOn("batch", "[jobs]") + AllVerbsOn("jobset.x-k8s.io", "[jobsets]") +
                                             "- apiGroups: [\"\"]\n  resources: [pods/binding]\n  verbs: [create]\n"));
  }

  static std::string Container(const std::string& indent, const std::string& script, int gpus) {
    return indent + "restartPolicy: Never\n" + indent + "terminationGracePeriodSeconds: 1\n" + indent + "containers:\n" + indent +
           "- name: main\n" + indent + "  image: " + RealNodes::kBusybox + "\n" + indent + "  command: [sh, -c, " + json::Quote(script) +
           "]\n" + indent + "  resources: {requests: {nvidia.com/gpu: " + std::to_string(gpus) + "}, limits: {nvidia.com/gpu: " +
           std::to_string(gpus) + "}}\n";
  }
  // A Job (`metadata_extra`: more metadata lines at 2-space indent) whose one Pod runs `script`.
  std::string JobYaml(const std::string& name, const std::string& metadata_extra, const std::string& script, int gpus) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n" + metadata_extra +
           "spec:\n  backoffLimit: 0\n  template:\n    spec:\n" + Container("      ", script, gpus);
  }
  std::string JobSetYaml(const std::string& name, const std::string& labels, const std::string& script, int gpus) {
    return "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata:\n  name: " + name + "\n  labels:\n" + labels +
           "spec:\n  replicatedJobs:\n  - name: r0\n    replicas: 1\n    template:\n      spec:\n        backoffLimit: 0\n"
           "        template:\n          spec:\n" +
           Container("            ", script, gpus);
  }
  std::string PodYaml(const std::string& name, const std::string& labels, const std::string& annotations, const std::string& script,
                      int gpus) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\n  labels:\n" + labels +
           (annotations.empty() ? "" : "  annotations:\n" + annotations) + "spec:\n" + Container("  ", script, gpus);
  }

  json::Document Get(const std::string& path) {
    auto d = client()->Get(path);
    return d.ok() ? std::move(*d) : json::Document();
  }
  std::string JobsPath(const std::string& name = {}) { return "/apis/batch/v1/namespaces/" + ns_ + "/jobs" + (name.empty() ? "" : "/" + name); }
  std::string JobSetPath(const std::string& name) { return "/apis/jobset.x-k8s.io/v1alpha2/namespaces/" + ns_ + "/jobsets/" + name; }
  std::map<std::string, PodRow> Pods(const std::string& selector) { return PodsIn(*client(), ns_, selector); }
  // Every Pod of `selector` (at least `count`) Succeeded, labelled with `ticket`, on a node of its placement.
  void ExpectRanThroughTicket(const std::string& selector, size_t count, const std::string& ticket) {
    auto pods = Pods(selector);
    EXPECT_EQ(pods.size(), count) << selector;
    const std::vector<std::string> placement = PlacementNodes(ticket);
    for (const auto& [name, p] : pods) {
      EXPECT_EQ(p.phase, "Succeeded") << name;
      EXPECT_EQ(p.ticket, ticket) << name << " was not pinned by berth";
      EXPECT_NE(std::find(placement.begin(), placement.end(), p.node), placement.end()) << name << " ran on " << p.node;
    }
  }
  // The names of the tickets (Runs with spec.workloadRef) of the test's namespace.
  std::set<std::string> Tickets() { return TicketsIn(*client(), ns_); }
  // kubectl as the impersonated tenant in the test's namespace.
  CommandResult AsTenant(std::vector<std::string> args, const std::string& input = {}) {
    args.insert(args.end(), {"--as=tenant"});
    return Kubectl(args, input);
  }
  CommandResult With(const std::string& kubeconfig, std::vector<std::string> args, const std::string& input = {}) {
    std::vector<std::string> argv = {"kubectl", "--kubeconfig", kubeconfig, "-n", ns_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, input);
  }
};

// A queued Job, a queued JobSet and a queued Pod group of two run at once on the two machines,
// each admitted by berth (its ServiceAccount), its Pods made by their controllers (each its own
// identity), bound by kube-scheduler, to Succeeded. The audit log shows who did what, and berth's
// log shows no request the chart's RBAC refused.
TEST_F(WorkloadIdentityTest, QueuedJobJobSetAndPodGroupSucceedWithEveryComponentUnderItsOwnIdentity) {
  ASSERT_NO_FATAL_FAILURE(RealFleet("gpus"));
  const std::string fleet = "    berth.dev/fleet: " + FleetName("gpus") + "\n";
  Apply(JobYaml("train", "  labels:\n    berth.dev/queue: \"true\"\n" + fleet, "echo job", 4));
  Apply(JobSetYaml("sweep", "    berth.dev/queue: \"true\"\n" + fleet, "echo jobset", 4));
  for (const char* p : {"pair-a", "pair-b"}) {
    Apply(PodYaml(p, "    berth.dev/queue: \"true\"\n    berth.dev/pod-group: pair\n" + fleet, "    berth.dev/pod-group-size: \"2\"\n",
                  "echo pod", 4));
  }
  for (const char* t : {"job-train", "jobset-sweep", "podgroup-pair"}) {
    EXPECT_TRUE(WaitPhase(t, "Succeeded", std::chrono::seconds(120))) << t << " is " << Phase(t) << ": " << Message(t) << "\n"
                                                                       << controller_->Log();
  }
  EXPECT_TRUE(Eventually([&] { return HasTrueCondition(Get(JobsPath("train")), "Complete"); }, std::chrono::seconds(60)));
  EXPECT_TRUE(Eventually([&] { return HasTrueCondition(Get(JobSetPath("sweep")), "Completed"); }, std::chrono::seconds(60)))
      << ReadFile(cp().dir() + "/jobset.log").substr(0, 4000);
  ExpectRanThroughTicket("job-name=train", 1, "job-train");
  ExpectRanThroughTicket("jobset.sigs.k8s.io/jobset-name=sweep", 1, "jobset-sweep");
  ExpectRanThroughTicket("berth.dev/pod-group=pair", 2, "podgroup-pair");

  // Who wrote what (the audit log): berth made the tickets, released the Job and JobSet and pinned
  // their Pods; the Job controller (its own ServiceAccount) made the Job's Pods; kube-scheduler
  // bound them; berth's user and the admin made nothing else of these.
  const std::multiset<std::string> w = AuditedWriters(ns_);
  auto wrote = [&](const std::string& line) { return w.count(line) > 0; };
  EXPECT_TRUE(wrote(kBerthSa + " create runs")) << "berth created no ticket as its ServiceAccount";
  EXPECT_TRUE(wrote(kBerthSa + " patch jobs")) << "berth did not release the Job as its ServiceAccount";
  EXPECT_TRUE(wrote(kBerthSa + " patch jobsets")) << "berth did not release the JobSet as its ServiceAccount";
  EXPECT_TRUE(wrote(kBerthSa + " patch pods")) << "berth pinned no Pod as its ServiceAccount";
  EXPECT_TRUE(wrote(kJobController + " create pods")) << "no Pod was made by the Job controller's own ServiceAccount";
  EXPECT_TRUE(wrote("system:serviceaccount:jobset-system:jobset-controller-manager create jobs"))
      << "the JobSet controller did not make its Job as its ServiceAccount";
  size_t bindings = 0;
  for (const auto& line : w) {
    const std::string binding = " create pods/binding";
    if (line.size() > binding.size() && line.compare(line.size() - binding.size(), binding.size(), binding) == 0) {
      ++bindings;
      EXPECT_EQ(line, "system:kube-scheduler create pods/binding");
    }
  }
  EXPECT_EQ(bindings, 4u) << "one binding of each of the 4 Pods";
  // The test's admin made the Pod group's Pods and wrote no other Pod (the kubelets, which run
  // with the control plane's admin kubeconfig, write their Pods' status).
  for (const auto& line : w) {
    if (line.rfind("admin ", 0) == 0 && line.find(" pods") != std::string::npos && line != "admin patch pods/status") {
      EXPECT_EQ(line, "admin create pods");
    }
  }
  // A refusal is logged as "403 Forbidden: ..." (or "HTTP 403" without a reason); a bare "403"
  // would also match a timestamp's milliseconds (".403Z") or a resourceVersion.
  EXPECT_EQ(controller_->Log().find(" 403 "), std::string::npos) << "the chart's RBAC refused berth a request:\n" << controller_->Log();
  EXPECT_EQ(controller_->Log().find("HTTP 403"), std::string::npos) << "the chart's RBAC refused berth a request:\n" << controller_->Log();
  EXPECT_EQ(controller_->Log().find("orbidden"), std::string::npos) << "the chart's RBAC refused berth a request:\n" << controller_->Log();
}

// What each identity may not do. The Job controller's own ServiceAccount (which may update every
// Job) cannot unsuspend a queued Job; a user with rights in the namespace cannot take the queue
// label off it, nor lift the gate of a queued Pod, bind it or create it with spec.nodeName; berth's
// ServiceAccount cannot read Secrets (it has none to read, in any namespace).
TEST_F(WorkloadIdentityTest, EachIdentityIsRefusedWhatIsNotItsToDo) {
  ASSERT_NO_FATAL_FAILURE(RealFleet("gpus"));
  GrantTenantWorkloadRights();
  // A queued Job that waits: it asks for more GPUs than a machine has.
  Apply(JobYaml("big", "  labels:\n    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("gpus") + "\n", "true", 9));
  ASSERT_TRUE(Eventually([&] { return Phase("job-big") == "Pending"; }, std::chrono::seconds(60))) << controller_->Log();

  const std::string job_controller = TokenKubeconfig("kube-system", "job-controller");
  ASSERT_EQ(With(job_controller, {"auth", "can-i", "patch", "jobs"}).exit_code, 0) << "the test needs a Job controller that may patch Jobs";
  CommandResult unsuspend = With(job_controller, {"patch", "job", "big", "--type", "merge", "-p", R"({"spec":{"suspend":false}})"});
  EXPECT_NE(unsuspend.exit_code, 0);
  EXPECT_NE(unsuspend.err.find("berth unsuspends it when it admits it"), std::string::npos) << unsuspend.err;

  CommandResult unlabel = AsTenant({"label", "job", "big", "berth.dev/queue-"});
  EXPECT_NE(unlabel.exit_code, 0);
  EXPECT_NE(unlabel.err.find("the label berth.dev/queue cannot be removed from a queued Job"), std::string::npos) << unlabel.err;

  // A queued Pod, gated at creation (the chart's policy), waiting (9 GPUs).
  CommandResult created = AsTenant({"apply", "-f", "-"}, PodYaml("solo", "    berth.dev/queue: \"true\"\n", "", "true", 9));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  ASSERT_TRUE(Eventually([&] { return Pods("!berth.dev/run,!job-name")["solo"].scheduled_reason == "SchedulingGated"; }))
      << "the queued Pod was not gated";
  CommandResult lift = AsTenant({"patch", "pod", "solo", "--type", "json", "-p", R"([{"op":"remove","path":"/spec/schedulingGates"}])"});
  EXPECT_NE(lift.exit_code, 0);
  EXPECT_NE(lift.err.find("only berth removes it"), std::string::npos) << lift.err;
  CommandResult bind = AsTenant({"create", "--raw", "/api/v1/namespaces/" + ns_ + "/pods/solo/binding", "-f", "-"},
                                R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"solo"},"target":{"apiVersion":"v1","kind":"Node","name":")" +
                                    std::string(kNode0) + R"("}})");
  EXPECT_NE(bind.exit_code, 0) << "the tenant bound a gated Pod: " << bind.out;
  CommandResult pinned =
      AsTenant({"apply", "-f", "-"}, PodYaml("pinned", "    berth.dev/queue: \"true\"\n", "", "true", 1) + "  nodeName: " + kNode0 + "\n");
  EXPECT_NE(pinned.exit_code, 0) << "a queued Pod was created with spec.nodeName";
  EXPECT_NE(pinned.err.find("schedulingGates"), std::string::npos) << pinned.err;
  EXPECT_EQ(Pods("!berth.dev/run,!job-name")["solo"].node, "");

  // berth's ServiceAccount and Secrets.
  Apply("apiVersion: v1\nkind: Secret\nmetadata: {name: private}\nstringData: {key: value}\n");
  CommandResult secret = With(BerthKubeconfig(), {"get", "secret", "private"});
  EXPECT_NE(secret.exit_code, 0) << "berth's ServiceAccount read a Secret of " << ns_ << ": " << secret.out;
  EXPECT_NE(secret.err.find("forbidden"), std::string::npos) << secret.err;
  for (const char* ns : {"kube-system", "default", "jobset-system"}) {
    CommandResult can = RunCommand({"kubectl", "--kubeconfig", BerthKubeconfig(), "auth", "can-i", "list", "secrets", "-n", ns});
    EXPECT_EQ(Trim(can.out), "no") << ns << ": " << can.err;
  }
  EXPECT_EQ(Phase("job-big"), "Pending");
}

// Issue 45: a controller ownerReference to a JobSet can be written by anyone. A user's Job in a
// queue-all namespace that claims the user's own queued JobSet (its real uid) is not left out of
// the queue: its Pods carry the gate from creation (the Job policy), so nothing of it runs that
// berth did not admit. Without the change the policy left such a Job alone and its Pod ran at once.
TEST_F(WorkloadIdentityTest, AJobForgingAJobSetOwnerReferenceDoesNotRunUnqueued) {
  ASSERT_NO_FATAL_FAILURE(RealFleet("gpus"));
  GrantTenantWorkloadRights();
  Kubectl({"label", "namespace", ns_, "berth.dev/queue-all=true"});
  // The decoy: the user's JobSet, queued (the namespace queues all), admitted and running.
  CommandResult decoy = AsTenant({"apply", "-f", "-"}, JobSetYaml("decoy", "    berth.dev/fleet: " + FleetName("gpus") + "\n", "sleep 3600", 1));
  ASSERT_EQ(decoy.exit_code, 0) << decoy.err;
  ASSERT_TRUE(Eventually([&] { return Phase("jobset-decoy") == "Running"; }, std::chrono::seconds(90)))
      << Phase("jobset-decoy") << ": " << Message("jobset-decoy") << "\n" << controller_->Log();
  const std::string uid = json::GetString(json::Find(Get(JobSetPath("decoy")), {"metadata", "uid"}));
  ASSERT_FALSE(uid.empty());
  const std::string owner = "  ownerReferences:\n  - {apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: decoy, uid: " + uid +
                            ", controller: true}\n";
  CommandResult forged = AsTenant({"apply", "-f", "-"}, JobYaml("forged", owner + "  labels:\n    berth.dev/fleet: " + FleetName("gpus") + "\n", "echo ran", 1));
  ASSERT_EQ(forged.exit_code, 0) << forged.err;
  // The Job controller makes its Pod (the Job is not suspended: a JobSet's Job never is on its
  // own), and kube-scheduler finds it gated: the fleet has room, but it is not bound.
  ASSERT_TRUE(Eventually([&] {
    auto pods = Pods("job-name=forged");
    for (const auto& [name, p] : pods) {
      if (p.scheduled_reason == "SchedulingGated" && p.node.empty() && p.gated) return true;
    }
    return false;
  }, std::chrono::seconds(60))) << "the forged Job's Pod was not held by the gate: " << Kubectl({"get", "pods", "-o", "wide"}).out;
  for (const auto& [name, p] : Pods("job-name=forged")) {
    EXPECT_EQ(p.node, "") << name << " ran outside berth's queue";
    EXPECT_NE(p.phase, "Succeeded") << name << " ran outside berth's queue";
  }
  EXPECT_EQ(Phase("jobset-decoy"), "Running");
  EXPECT_EQ(Tickets(), (std::set<std::string>{"jobset-decoy"})) << "the forged Job has a ticket of its own";
  // The running JobSet deleted: its ticket goes too (berth, as its ServiceAccount, takes its
  // finalizer off a placed ticket: the chart's policy for placed runs let it, a ticket has no template).
  ASSERT_EQ(AsTenant({"delete", "jobset", "decoy", "--wait=false"}).exit_code, 0);
  EXPECT_TRUE(Eventually([&] { return Tickets().count("jobset-decoy") == 0; }, std::chrono::seconds(60)))
      << "the ticket of the deleted JobSet stayed\n" << controller_->Log();

  // Nor can the user take the gate off such a Job's template while it is suspended (the only time
  // the API lets a Job's Pod template change), e.g. one that claims a JobSet that waits in the
  // queue (9 GPUs: more than a machine has), whose controller keeps it suspended.
  ASSERT_EQ(AsTenant({"apply", "-f", "-"}, JobSetYaml("waiting", "    berth.dev/fleet: " + FleetName("gpus") + "\n", "true", 9)).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return Phase("jobset-waiting") == "Pending"; }, std::chrono::seconds(60))) << controller_->Log();
  const std::string waiting = json::GetString(json::Find(Get(JobSetPath("waiting")), {"metadata", "uid"}));
  std::string held = JobYaml("forged-held",
                             "  ownerReferences:\n  - {apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: waiting, uid: " + waiting +
                                 ", controller: true}\n",
                             "echo ran", 1);
  held.replace(held.find("spec:\n  backoffLimit"), 5, "spec:\n  suspend: true\n");
  CommandResult made = AsTenant({"apply", "-f", "-"}, held);
  ASSERT_EQ(made.exit_code, 0) << made.err;
  CommandResult lift = AsTenant({"patch", "job", "forged-held", "--type", "json", "-p",
                                 R"([{"op":"remove","path":"/spec/template/spec/schedulingGates"}])"});
  EXPECT_NE(lift.exit_code, 0);
  EXPECT_NE(lift.err.find("only berth removes it"), std::string::npos) << lift.err;
}

// A labelled Job whose controller ownerReference names a JobSet that berth does not queue (here the
// user's unlabelled JobSet, running outside the queue) is not that JobSet's: berth queues it as a
// Job (ticket job-<name>), holds it and runs it on its placement. Before, berth left every Job
// claiming a JobSet to that JobSet, and this one's gated Pod waited for ever.
TEST_F(WorkloadIdentityTest, AJobClaimingAJobSetBerthDoesNotQueueIsQueuedAsAJob) {
  ASSERT_NO_FATAL_FAILURE(RealFleet("gpus"));
  GrantTenantWorkloadRights();
  ASSERT_EQ(AsTenant({"apply", "-f", "-"}, JobSetYaml("free", "    app: free\n", "sleep 3600", 0)).exit_code, 0);
  ASSERT_TRUE(Eventually([&] { return !Pods("jobset.sigs.k8s.io/jobset-name=free").empty(); }, std::chrono::seconds(60)));
  const std::string uid = json::GetString(json::Find(Get(JobSetPath("free")), {"metadata", "uid"}));
  ASSERT_FALSE(uid.empty());
  CommandResult made = AsTenant(
      {"apply", "-f", "-"},
      JobYaml("claims", "  labels:\n    berth.dev/queue: \"true\"\n    berth.dev/fleet: " + FleetName("gpus") +
                            "\n  ownerReferences:\n  - {apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: free, uid: " + uid +
                            ", controller: true}\n",
              "echo ran", 1));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_TRUE(WaitPhase("job-claims", "Succeeded", std::chrono::seconds(90)))
      << "job-claims is " << Phase("job-claims") << ": " << Message("job-claims") << "\n" << controller_->Log();
  ExpectRanThroughTicket("job-name=claims", 1, "job-claims");
  EXPECT_EQ(Tickets(), (std::set<std::string>{"job-claims"}));
}

}  // namespace
}  // namespace berth::testing
