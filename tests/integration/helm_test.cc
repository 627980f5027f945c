// Issue 5: the Helm chart deploy/helm/berth, rendered by real Helm (helm template, helm lint) and
// installed, upgraded, rolled back and uninstalled by real Helm on the real API server; and the
// Dockerfile's runtime stage checked against the built controller by hack/check-image-libs.sh.
// Issue 18: upgrades keep the webhook's certificate (lookup, or cert-manager), releases in two
// namespaces do not collide, values.schema.json, NOTES.txt, and the optional Grafana dashboard and
// PrometheusRule alerts (checked with promtool and against the metric families berth exports).
// Issue 28: helm v3 (hack/build-kube.sh helm, first on the harness's PATH) replaces the project's
// own renderer.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "controller/metrics.h"
#include "harness.h"
#include "k8s/json.h"

namespace berth::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSource = BERTH_SOURCE_DIR;
const std::string kChart = kSource + "/deploy/helm/berth";

// helm with the control plane's kubeconfig, and Helm's own directories (repositories, cache,
// plugins) inside the control plane's directory, so nothing of the machine's Helm set-up is used.
CommandResult Helm(const std::vector<std::string>& args) {
  const std::string home = ControlPlane::Get().dir() + "/helm";
  std::vector<std::string> argv = {"helm", "--kubeconfig", ControlPlane::Get().kubeconfig()};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv, {},
                               {"HELM_CONFIG_HOME=" + home + "/config", "HELM_CACHE_HOME=" + home + "/cache",
                                "HELM_DATA_HOME=" + home + "/data"});
  EXPECT_EQ(r.err.find("cannot start helm"), std::string::npos)
      << "helm is missing: hack/build-kube.sh helm builds it into ~/.cache/berth/tools/bin";
  return r;
}

// The version the API server reports (e.g. v1.37.2). helm template renders for this version:
// without --kube-version it assumes the Kubernetes version it was built for, which Chart.yaml's
// kubeVersion (>=1.35) may refuse.
const std::string& ServerVersion() {
  static const std::string version = [] {
    CommandResult r = ControlPlane::Get().Kubectl({"version", "-o", "json"});
    auto doc = k8s::json::Parse(r.out);
    std::string v = doc.ok() ? k8s::json::GetString(k8s::json::Find(*doc, {"serverVersion", "gitVersion"})) : "";
    EXPECT_FALSE(v.empty()) << "kubectl version: " << r.out << r.err;
    return v;
  }();
  return version;
}

// helm template RELEASE deploy/helm/berth -n NAMESPACE args..., for the API server's version
// unless args give --kube-version. CRDs only with --include-crds; lookup finds nothing (helm
// template never reads the cluster).
CommandResult Render(const std::string& release, const std::string& ns, const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {"template", release, kChart, "-n", ns};
  if (std::find(args.begin(), args.end(), "--kube-version") == args.end()) {
    argv.insert(argv.end(), {"--kube-version", ServerVersion()});
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return Helm(argv);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<YAML::Node> Documents(const std::string& yaml) {
  std::vector<YAML::Node> out;
  for (const auto& d : YAML::LoadAll(yaml)) {
    if (d.IsMap()) out.push_back(d);
  }
  return out;
}

std::string Kind(const YAML::Node& d) { return d["kind"].as<std::string>(""); }
std::string Name(const YAML::Node& d) { return d["metadata"]["name"].as<std::string>(""); }

// The first document of `kind`; a null node (not IsMap()) when there is none.
YAML::Node Find(const std::vector<YAML::Node>& docs, const std::string& kind) {
  for (const auto& d : docs) {
    if (Kind(d) == kind) return d;
  }
  return YAML::Node();
}

std::vector<std::string> Strings(const YAML::Node& seq) {
  std::vector<std::string> out;
  if (!seq.IsSequence()) return out;
  for (const auto& s : seq) out.push_back(s.as<std::string>());
  return out;
}

// A rule as "apiGroups|resources|verbs" (with "|names" when it has resourceNames), for exact comparison.
std::set<std::string> Rules(const YAML::Node& role) {
  std::set<std::string> out;
  for (const auto& r : role["rules"]) {
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
      return s;
    };
    std::string rule = join(Strings(r["apiGroups"])) + "|" + join(Strings(r["resources"])) + "|" + join(Strings(r["verbs"]));
    if (r["resourceNames"]) rule += "|" + join(Strings(r["resourceNames"]));
    out.insert(rule);
  }
  return out;
}

YAML::Node Container(const YAML::Node& deployment) { return deployment["spec"]["template"]["spec"]["containers"][0]; }

// NOTES.txt as `helm install --dry-run=client` renders it with the control plane's capabilities
// (nothing is created): `out` is the text after "NOTES:", empty when there is none.
CommandResult DryRunNotes(const std::string& release, const std::string& ns, const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {"install", release, kChart, "-n", ns, "--dry-run=client"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = Helm(argv);
  size_t at = r.out.find("\nNOTES:\n");
  r.out = at == std::string::npos ? "" : r.out.substr(at + 8);
  return r;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ControlPlane::Get().dir() + "/" + name + "-" + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

// base64 -d of `b64` into a file; returns its path.
std::string DecodeTo(const std::string& name, const std::string& b64) {
  std::string path = WriteTemp(name, "");
  CommandResult r = RunCommand({"bash", "-c", "base64 -d > \"$0\"", path}, b64);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return path;
}

// The names the chart gives a release's objects (templates/_helpers.tpl, docs/install.md).
struct ReleaseNames {
  std::string full;     // every namespaced object, the Lease
  std::string cluster;  // ClusterRole, ClusterRoleBinding: "<full>.<namespace>"
  std::string webhook;  // MutatingWebhookConfiguration: "<full>-runs.<namespace>"
  std::string secret;   // the webhook's certificate: "<full>-webhook-cert"
  std::string jobs_webhook;  // issue 45, the 1.35 hold of queued Jobs: "<full>-jobs.<namespace>"
  std::string jobsets_webhook;  // issue 45, JobSets on 1.35: "<full>-jobsets.<namespace>"
  std::string pods_webhook;     // issue 45, queued Pods and Pod groups on 1.35: "<full>-pods.<namespace>"
};

ReleaseNames NamesOf(const std::string& release, const std::string& ns) {
  std::string full = release.find("berth") != std::string::npos ? release + "-controller" : release + "-berth-controller";
  return {full, full + "." + ns, full + "-runs." + ns, full + "-webhook-cert", full + "-jobs." + ns,
          full + "-jobsets." + ns, full + "-pods." + ns};
}

// The webhook's certificate as the cluster holds it: the Secret's data (base64) and the
// MutatingWebhookConfiguration's caBundle.
struct WebhookCert {
  std::string ca, crt, key, bundle;
};

class HelmChart : public IntegrationTest {
 protected:
  void TearDown() override {
    // Every release the test installed goes, with its cluster-scoped objects (the binary's tests
    // share the control plane), also when the test stopped half-way.
    for (const auto& [release, ns] : releases_) {
      Helm({"uninstall", release, "-n", ns, "--ignore-not-found"});
      ReleaseNames n = NamesOf(release, ns);
      cp().Kubectl({"delete", "clusterrole,clusterrolebinding", n.cluster, "--ignore-not-found", "--wait=false"});
      cp().Kubectl({"delete", "mutatingwebhookconfiguration", n.webhook, n.jobs_webhook, n.jobsets_webhook,
                    n.pods_webhook, "--ignore-not-found", "--wait=false"});
      if (ServesAdmissionPolicies()) {
        cp().Kubectl({"delete",
                      "mutatingadmissionpolicy,mutatingadmissionpolicybinding,validatingadmissionpolicy,"
                      "validatingadmissionpolicybinding",
                      n.webhook, "--ignore-not-found", "--wait=false"});
      }
    }
    for (const auto& obj : cluster_objects_) cp().Kubectl({"delete", obj, "--ignore-not-found", "--wait=false"});
    for (const auto& ns : namespaces_) (void)client()->Delete(k8s::resources::kNamespaces.Path("", ns));
    IntegrationTest::TearDown();
  }

  std::vector<YAML::Node> RenderDocs(const std::string& release, const std::string& ns,
                                     const std::vector<std::string>& args = {}) {
    CommandResult r = Render(release, ns, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Documents(r.out);
  }

  // helm install RELEASE deploy/helm/berth -n NS args... on the control plane. No --wait: there is
  // no controller image here (nor a kube-controller-manager to make Pods); nothing needs the Pods.
  CommandResult Install(const std::string& release, const std::string& ns, const std::vector<std::string>& args = {}) {
    releases_.emplace_back(release, ns);
    std::vector<std::string> argv = {"install", release, kChart, "-n", ns};
    argv.insert(argv.end(), args.begin(), args.end());
    return Helm(argv);
  }

  CommandResult Upgrade(const std::string& release, const std::string& ns, const std::vector<std::string>& args = {}) {
    std::vector<std::string> argv = {"upgrade", release, kChart, "-n", ns};
    argv.insert(argv.end(), args.begin(), args.end());
    return Helm(argv);
  }

  // An object as the API server has it (kubectl get -o yaml; `ns` empty: cluster-scoped); a null
  // node when it does not exist.
  YAML::Node Object(const std::string& ns, const std::string& kind, const std::string& name) {
    std::vector<std::string> args = {"get", kind, name, "-o", "yaml"};
    if (!ns.empty()) args.insert(args.end(), {"-n", ns});
    CommandResult r = cp().Kubectl(args);
    return r.exit_code == 0 ? YAML::Load(r.out) : YAML::Node();
  }

  WebhookCert CertOf(const std::string& release, const std::string& ns) {
    ReleaseNames n = NamesOf(release, ns);
    YAML::Node secret = Object(ns, "secret", n.secret);
    YAML::Node mwc = Object("", "mutatingwebhookconfiguration", n.webhook);
    WebhookCert c;
    if (secret.IsMap()) {
      c.ca = secret["data"]["ca.crt"].as<std::string>("");
      c.crt = secret["data"]["tls.crt"].as<std::string>("");
      c.key = secret["data"]["tls.key"].as<std::string>("");
    }
    if (mwc.IsMap()) c.bundle = mwc["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>("");
    return c;
  }

  // Whether the API server serves admission policies of both kinds as v1 (Kubernetes 1.36+).
  bool ServesAdmissionPolicies() {
    CommandResult r = cp().Kubectl({"get", "--raw", "/apis/admissionregistration.k8s.io/v1"});
    return r.out.find("\"kind\":\"MutatingAdmissionPolicy\"") != std::string::npos &&
           r.out.find("\"kind\":\"ValidatingAdmissionPolicy\"") != std::string::npos;
  }

  // The Deployment's pod template checksum of the webhook's certificate and its generation: a
  // changed checksum is a changed pod template, which rolls the Pods.
  std::pair<std::string, int64_t> CertChecksumOf(const std::string& release, const std::string& ns) {
    YAML::Node d = Object(ns, "deployment", NamesOf(release, ns).full);
    if (!d.IsMap()) return {"", 0};
    return {d["spec"]["template"]["metadata"]["annotations"]["checksum/webhook-certificate"].as<std::string>(""),
            d["metadata"]["generation"].as<int64_t>(0)};
  }

  // sha256 (hex) of the Secret's tls.crt as stored (base64), which is what the chart sums.
  static std::string Sha256(const std::string& text) {
    CommandResult r = RunCommand({"sha256sum"}, text);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out.substr(0, r.out.find(' '));
  }

  std::string ResourceVersion(const std::string& ns, const std::string& kind, const std::string& name) {
    return Object(ns, kind, name)["metadata"]["resourceVersion"].as<std::string>("");
  }

  std::vector<std::pair<std::string, std::string>> releases_;  // (release, namespace)
  std::vector<std::string> cluster_objects_;                   // KIND/NAME made with kubectl
  std::vector<std::string> namespaces_;                        // made by the test or by --create-namespace
};

TEST_F(HelmChart, DefaultsRenderEveryObjectCrdsFirstInHelmInstallOrder) {
  auto docs = RenderDocs("berth", "berth-system", {"--include-crds"});
  std::vector<std::string> kinds;
  for (const auto& d : docs) kinds.push_back(Kind(d) + "/" + Name(d));
  std::vector<std::string> want = {"CustomResourceDefinition/fleets.berth.dev", "CustomResourceDefinition/runs.berth.dev",
                                   "CustomResourceDefinition/teams.berth.dev",
                                   "NetworkPolicy/berth-controller",
                                   "ServiceAccount/berth-controller",
                                   "Secret/berth-controller-webhook-cert",
                                   "Secret/berth-controller-queue-api-tls",
                                   "ClusterRole/berth-controller.berth-system",
                                   "ClusterRole/berth-controller.berth-system-queue-reader",
                                   "ClusterRoleBinding/berth-controller.berth-system",
                                   "ClusterRoleBinding/berth-controller.berth-system-queue-reader",
                                   "Role/berth-controller",
                                   "RoleBinding/berth-controller",
                                   "RoleBinding/berth-controller.berth-system-auth-reader",
                                   "Service/berth-controller",
                                   // The queue API's Service selects the leader's Pod only.
                                   "Service/berth-controller-queue-api",
                                   "Deployment/berth-controller",
                                   "APIService/v1alpha1.queue.berth.dev",
                                   "MutatingWebhookConfiguration/berth-controller-runs.berth-system",
                                   // Issue 45: holds queued Jobs where the MutatingAdmissionPolicy is not served.
                                   "MutatingWebhookConfiguration/berth-controller-jobs.berth-system",
                                   // Issue 45: JobSets, and queued Pods and Pod groups, the same way.
                                   "MutatingWebhookConfiguration/berth-controller-jobsets.berth-system",
                                   "MutatingWebhookConfiguration/berth-controller-pods.berth-system",
                                   // Issue 44: rendered on every version (admission-policies.yaml).
                                   "ValidatingAdmissionPolicy/berth-controller-placed-runs.berth-system",
                                   "ValidatingAdmissionPolicy/berth-controller-pods.berth-system",
                                   "ValidatingAdmissionPolicy/berth-controller-teams.berth-system",
                                   // Issue 45: queued Jobs and their tickets.
                                   "ValidatingAdmissionPolicy/berth-controller-jobs.berth-system",
                                   "ValidatingAdmissionPolicy/berth-controller-jobsets.berth-system",
                                   // Issue 45 part 3: queued Pods and Pod groups.
                                   "ValidatingAdmissionPolicy/berth-controller-pod-groups.berth-system",
                                   "ValidatingAdmissionPolicy/berth-controller-tickets.berth-system",
                                   // Issue 47: berth.dev/submitted-by cannot be forged.
                                   "ValidatingAdmissionPolicy/berth-controller-submitted-by.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-placed-runs.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-pods.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-teams.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-jobs.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-jobsets.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-pod-groups.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-tickets.berth-system",
                                   "ValidatingAdmissionPolicyBinding/berth-controller-submitted-by.berth-system"};
  EXPECT_EQ(kinds, want);
  for (const auto& d : docs) {
    std::string k = Kind(d);
    bool cluster_scoped = k == "CustomResourceDefinition" || k == "ClusterRole" || k == "ClusterRoleBinding" ||
                          k == "MutatingWebhookConfiguration" || k == "ValidatingAdmissionPolicy" ||
                          k == "ValidatingAdmissionPolicyBinding" || k == "APIService";
    // The queue API's reader of the request-header CA is bound where that ConfigMap lives.
    const bool kube_system = Name(d) == "berth-controller.berth-system-auth-reader";
    EXPECT_EQ(d["metadata"]["namespace"].as<std::string>(""), cluster_scoped ? "" : kube_system ? "kube-system" : "berth-system")
        << k;
    if (!cluster_scoped) {
      EXPECT_EQ(d["metadata"]["labels"]["app.kubernetes.io/managed-by"].as<std::string>(""), "Helm") << k;
      EXPECT_EQ(d["metadata"]["labels"]["app.kubernetes.io/instance"].as<std::string>(""), "berth") << k;
    }
  }
  EXPECT_FALSE(Find(docs, "Namespace").IsMap()) << "the namespace belongs to helm --namespace/--create-namespace";
  EXPECT_FALSE(Find(docs, "ServiceMonitor").IsMap()) << "the ServiceMonitor is off by default";
  EXPECT_FALSE(Find(docs, "PrometheusRule").IsMap()) << "the alerts are off by default";
  EXPECT_FALSE(Find(docs, "ConfigMap").IsMap()) << "the Grafana dashboard is off by default";
}

TEST_F(HelmChart, DeploymentRunsTwoHardenedReplicasWithLeaderElectionAndProbes) {
  auto docs = RenderDocs("berth", "berth-system");
  YAML::Node dep = Find(docs, "Deployment");
  ASSERT_TRUE(dep.IsMap());
  EXPECT_EQ(dep["spec"]["replicas"].as<int>(), 2);
  YAML::Node pod = dep["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"].as<std::string>(), "berth-controller");
  // The selector selects the pod template, and the Service selects the same pods.
  for (const auto& kv : dep["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(dep["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
  YAML::Node c = Container(dep);
  EXPECT_EQ(c["image"].as<std::string>(), "berth:0.1.0") << "image tag defaults to the chart's appVersion";
  EXPECT_EQ(c["imagePullPolicy"].as<std::string>(), "IfNotPresent");
  std::vector<std::string> want_args = {"--leader-elect",
                                        "--leader-election-namespace=berth-system",
                                        "--leader-election-id=berth-controller",
                                        "--leader-election-lease-duration=15s",
                                        "--leader-election-renew-deadline=8s",
                                        "--leader-election-retry-period=2s",
                                        "--metrics-bind-address=:8080",
                                        "--health-probe-bind-address=:8081",
                                        "--http-read-timeout=10s",
                                        "--aging-interval=15m",
                                        "--fair-share-half-life=168h",
                                        "--log-format=json",
                                        "--log-level=info",
                                        "--webhook-bind-address=:9443",
                                        "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs",
                                        "--queue-api-bind-address=:8443",
                                        "--queue-api-cert-dir=/tmp/berth-queue-api/serving-certs",
                                        "--leader-pod=$(POD_NAMESPACE)/$(POD_NAME)"};
  EXPECT_EQ(Strings(c["args"]), want_args);
  ASSERT_EQ(c["env"].size(), 2u) << "POD_NAME and POD_NAMESPACE from the downward API, for --leader-pod";
  EXPECT_EQ(c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(), "metadata.name");
  EXPECT_EQ(c["env"][1]["valueFrom"]["fieldRef"]["fieldPath"].as<std::string>(), "metadata.namespace");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/healthz");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"].as<int>(), 8081);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/readyz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"].as<int>(), 8081);
  EXPECT_EQ(c["ports"][0]["name"].as<std::string>(), "http");
  EXPECT_EQ(c["ports"][0]["containerPort"].as<int>(), 8080);
  EXPECT_EQ(c["resources"]["requests"]["cpu"].as<std::string>(), "100m");
  EXPECT_EQ(c["resources"]["limits"]["memory"].as<std::string>(), "512Mi");

  YAML::Node psc = pod["securityContext"];
  EXPECT_TRUE(psc["runAsNonRoot"].as<bool>());
  EXPECT_EQ(psc["runAsUser"].as<int>(), 65532);
  EXPECT_EQ(psc["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
  YAML::Node sc = c["securityContext"];
  EXPECT_TRUE(sc["runAsNonRoot"].as<bool>());
  EXPECT_EQ(sc["runAsUser"].as<int>(), 65532);
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>());
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
  EXPECT_EQ(Strings(sc["capabilities"]["drop"]), std::vector<std::string>{"ALL"});
  EXPECT_FALSE(sc["capabilities"]["add"]);
  EXPECT_EQ(sc["seccompProfile"]["type"].as<std::string>(), "RuntimeDefault");
  EXPECT_FALSE(sc["privileged"] && sc["privileged"].as<bool>());

  YAML::Node svc = Find(docs, "Service");
  ASSERT_TRUE(svc.IsMap());
  EXPECT_EQ(Name(svc), "berth-controller");
  EXPECT_EQ(svc["spec"]["type"].as<std::string>(), "ClusterIP");
  EXPECT_EQ(svc["spec"]["ports"][0]["name"].as<std::string>(), "http");
  EXPECT_EQ(svc["spec"]["ports"][0]["port"].as<int>(), 8080);
  EXPECT_EQ(svc["spec"]["ports"][0]["targetPort"].as<std::string>(), "http");
  for (const auto& kv : svc["spec"]["selector"]) {
    EXPECT_EQ(dep["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>());
  }
}

TEST_F(HelmChart, ClusterRoleHasExactlyTheVerbsBerthUses) {
  auto docs = RenderDocs("berth", "berth-system");
  YAML::Node cr = Find(docs, "ClusterRole");
  ASSERT_TRUE(cr.IsMap());
  std::set<std::string> want = {
      "berth.dev|runs|get,list,watch,patch",
      "berth.dev|runs/status|patch",
      "berth.dev|fleets|list,watch",
      "berth.dev|fleets/status|patch",
      "berth.dev|teams|list,watch",
      "berth.dev|teams/status|patch",
      "|pods|get,create,delete,list,watch",
      // Issue 45: tickets of queued Jobs, the Jobs held and released, their Pods pinned.
      "berth.dev|runs|create,delete",
      "batch|jobs|get,list,watch,patch",
      "jobset.x-k8s.io|jobsets|get,list,watch,patch",  // issue 45 part 2: queued JobSets likewise
      "|pods|patch",
      "|pods/binding|create",
      "|nodes|list,watch",
      "|namespaces|get,list,watch",
      "|resourcequotas|list,watch",
      "|services|get,create,delete",
      // Issue 49: a DRA fleet's devices (its nodes' ResourceSlices, its DeviceClass, others' claims).
      "resource.k8s.io|resourceslices,deviceclasses,resourceclaims|list,watch",
      "resource.k8s.io|resourceclaims|create",  // a DRA run's Pods' claims
      "|events|create",
      "authorization.k8s.io|subjectaccessreviews|create",  // the queue API (issue 44)
  };
  EXPECT_EQ(Rules(cr), want);
  std::string text = YAML::Dump(cr["rules"]);
  EXPECT_EQ(text.find('*'), std::string::npos) << "no wildcards";
  EXPECT_EQ(text.find("secrets"), std::string::npos);

  YAML::Node role = Find(docs, "Role");
  ASSERT_TRUE(role.IsMap());
  std::set<std::string> want_role = {
      "coordination.k8s.io|leases|create",
      "coordination.k8s.io|leases|get,update,patch|berth-controller",
      "|events|create",
      "|pods|patch",  // --leader-pod: the leader labels its own Pod
      // Issue 47: per-user usage, a ConfigMap per Team in berth's own namespace only (no Secrets).
      "|configmaps|get,list,create,update",
  };
  EXPECT_EQ(Rules(role), want_role);

  for (const char* kind : {"ClusterRoleBinding", "RoleBinding"}) {
    YAML::Node b = Find(docs, kind);
    ASSERT_TRUE(b.IsMap()) << kind;
    bool cluster = std::string(kind) == "ClusterRoleBinding";
    EXPECT_EQ(b["roleRef"]["kind"].as<std::string>(), cluster ? "ClusterRole" : "Role");
    EXPECT_EQ(b["roleRef"]["name"].as<std::string>(), cluster ? Name(cr) : Name(role));
    ASSERT_EQ(b["subjects"].size(), 1u) << kind;
    EXPECT_EQ(b["subjects"][0]["kind"].as<std::string>(), "ServiceAccount");
    EXPECT_EQ(b["subjects"][0]["name"].as<std::string>(), "berth-controller");
    EXPECT_EQ(b["subjects"][0]["namespace"].as<std::string>(), "berth-system");
  }
}

TEST_F(HelmChart, ChartCrdsAreByteIdenticalToDeployCrdsAndRenderedAsTheyAre) {
  std::set<std::string> deploy, chart;
  for (const auto& e : fs::directory_iterator(kSource + "/deploy/crds")) deploy.insert(e.path().filename());
  for (const auto& e : fs::directory_iterator(kChart + "/crds")) chart.insert(e.path().filename());
  EXPECT_EQ(chart, deploy) << "deploy/helm/berth/crds/ must hold exactly the files of deploy/crds/";
  for (const auto& f : deploy) {
    EXPECT_EQ(ReadFile(kChart + "/crds/" + f), ReadFile(kSource + "/deploy/crds/" + f))
        << f << " differs: copy deploy/crds/" << f << " to deploy/helm/berth/crds/";
  }
  CommandResult r = Render("berth", "berth-system", {"--include-crds"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& f : deploy) {
    EXPECT_NE(r.out.find("# Source: berth/crds/" + f + "\n" + ReadFile(kSource + "/deploy/crds/" + f)), std::string::npos) << f;
  }
  // Without --include-crds (what --skip-crds asks for) helm template leaves crds/ out.
  CommandResult skip = Render("berth", "berth-system");
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_FALSE(Find(Documents(skip.out), "CustomResourceDefinition").IsMap());
  EXPECT_TRUE(Find(Documents(skip.out), "Deployment").IsMap());
}

TEST_F(HelmChart, SetAndValuesFilesOverrideDefaults) {
  std::string values_file = cp().dir() + "/helm-values-" + std::to_string(getpid()) + ".yaml";
  {
    std::ofstream out(values_file);
    out << "image:\n  repository: registry.example/berth\n  tag: v9\n"
           "resources:\n  requests: {cpu: 250m}\n"
           "serviceMonitor:\n  labels: {release: kube-prometheus}\n";
  }
  auto docs = RenderDocs("prod", "queues",
                         {"-f", values_file, "--set", "replicas=3,agingInterval=5m,logFormat=text",
                          "--set", "leaderElection.leaseDuration=30s,leaderElection.renewDeadline=18s",
                          "--set", "leaderElection.retryPeriod=4s", "--set", "serviceMonitor.enabled=true",
                          "--api-versions", "monitoring.coreos.com/v1",
                          "--set", "nodeSelector.pool=system", "--set", "image.pullPolicy=Always",
                          "--set", "resources.limits=null"});
  YAML::Node dep = Find(docs, "Deployment");
  ASSERT_TRUE(dep.IsMap());
  EXPECT_EQ(Name(dep), "prod-berth-controller");
  EXPECT_EQ(dep["spec"]["replicas"].as<int>(), 3);
  YAML::Node c = Container(dep);
  EXPECT_EQ(c["image"].as<std::string>(), "registry.example/berth:v9");
  EXPECT_EQ(c["imagePullPolicy"].as<std::string>(), "Always");
  std::vector<std::string> args = Strings(c["args"]);
  for (const char* want : {"--leader-election-namespace=queues", "--leader-election-id=prod-berth-controller",
                           "--leader-election-lease-duration=30s", "--leader-election-renew-deadline=18s",
                           "--leader-election-retry-period=4s", "--aging-interval=5m", "--log-format=text"}) {
    EXPECT_NE(std::find(args.begin(), args.end(), want), args.end()) << want;
  }
  EXPECT_EQ(c["resources"]["requests"]["cpu"].as<std::string>(), "250m") << "-f merges into the defaults";
  EXPECT_EQ(c["resources"]["requests"]["memory"].as<std::string>(), "128Mi") << "-f keeps the defaults it does not name";
  EXPECT_FALSE(c["resources"]["limits"]) << "--set k=null deletes a default";
  EXPECT_EQ(dep["spec"]["template"]["spec"]["nodeSelector"]["pool"].as<std::string>(), "system");

  YAML::Node role = Find(docs, "Role");
  ASSERT_TRUE(role.IsMap());
  EXPECT_EQ(Rules(role).count("coordination.k8s.io|leases|get,update,patch|prod-berth-controller"), 1u);

  YAML::Node sm = Find(docs, "ServiceMonitor");
  ASSERT_TRUE(sm.IsMap()) << "serviceMonitor.enabled=true renders a ServiceMonitor";
  EXPECT_EQ(sm["apiVersion"].as<std::string>(), "monitoring.coreos.com/v1");
  EXPECT_EQ(sm["metadata"]["namespace"].as<std::string>(), "queues");
  EXPECT_EQ(sm["metadata"]["labels"]["release"].as<std::string>(), "kube-prometheus");
  EXPECT_EQ(sm["spec"]["endpoints"][0]["port"].as<std::string>(), "http");
  EXPECT_EQ(sm["spec"]["endpoints"][0]["path"].as<std::string>(), "/metrics");
  EXPECT_EQ(Strings(sm["spec"]["namespaceSelector"]["matchNames"]), std::vector<std::string>{"queues"});
  YAML::Node svc = Find(docs, "Service");
  for (const auto& kv : sm["spec"]["selector"]["matchLabels"]) {
    EXPECT_EQ(svc["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""), kv.second.as<std::string>())
        << "the ServiceMonitor must select the Service";
  }
  // Where the cluster does not serve prometheus-operator's API, no ServiceMonitor (it could not be
  // applied), and NOTES.txt says why.
  EXPECT_FALSE(Find(RenderDocs("prod", "queues", {"--set", "serviceMonitor.enabled=true"}), "ServiceMonitor").IsMap());
  CommandResult notes = DryRunNotes("prod", "queues", {"--set", "serviceMonitor.enabled=true"});
  ASSERT_EQ(notes.exit_code, 0) << notes.err;
  EXPECT_NE(notes.out.find("serviceMonitor.enabled is true, but the cluster does not serve monitoring.coreos.com/v1"),
            std::string::npos)
      << notes.out;
  // A release whose name contains the chart's name is not repeated.
  EXPECT_EQ(Name(Find(RenderDocs("berth-staging", "x"), "Deployment")), "berth-staging-controller");
  EXPECT_EQ(Name(Find(RenderDocs("x", "x", {"--set", "fullnameOverride=queue-operator"}), "Deployment")), "queue-operator");
}

// Ports from .spec.ingress[i].ports[0].port, with the rule's peers as YAML.
std::map<int, YAML::Node> IngressByPort(const YAML::Node& policy) {
  std::map<int, YAML::Node> out;
  for (const auto& rule : policy["spec"]["ingress"]) {
    out.emplace(rule["ports"][0]["port"].as<int>(), static_cast<const YAML::Node&>(rule));
  }
  return out;
}

TEST_F(HelmChart, NetworkPolicyAdmitsTheApiServerToTheWebhookAndNamedNamespacesToMetrics) {
  auto docs = RenderDocs("berth", "berth-system");
  YAML::Node np = Find(docs, "NetworkPolicy");
  ASSERT_TRUE(np.IsMap()) << "on by default";
  EXPECT_EQ(np["apiVersion"].as<std::string>(), "networking.k8s.io/v1");
  EXPECT_EQ(Strings(np["spec"]["policyTypes"]), std::vector<std::string>{"Ingress"}) << "egress is untouched";
  YAML::Node dep = Find(docs, "Deployment");
  for (const auto& kv : np["spec"]["podSelector"]["matchLabels"]) {
    EXPECT_EQ(dep["spec"]["template"]["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>(""),
              kv.second.as<std::string>())
        << "the policy selects the controller's Pods";
  }
  auto rules = IngressByPort(np);
  ASSERT_EQ(rules.size(), 4u);
  ASSERT_TRUE(rules.count(8080) && rules.count(8081) && rules.count(9443) && rules.count(8443));
  // The queue API (issue 44): the API server's peers only, as the webhook.
  EXPECT_EQ(YAML::Dump(rules[8443]["from"]), YAML::Dump(rules[9443]["from"]));
  // Metrics/dashboard: only the named namespaces and the release's own, and the API server's
  // peers (its service proxy carries `kubectl berth queue`).
  YAML::Node metrics_from = rules[8080]["from"];
  ASSERT_EQ(metrics_from.size(), 1u + rules[9443]["from"].size());
  for (size_t i = 0; i < rules[9443]["from"].size(); ++i) {
    EXPECT_EQ(metrics_from[i + 1]["ipBlock"]["cidr"].as<std::string>(),
              rules[9443]["from"][i]["ipBlock"]["cidr"].as<std::string>());
  }
  YAML::Node expr = metrics_from[0]["namespaceSelector"]["matchExpressions"][0];
  EXPECT_EQ(expr["key"].as<std::string>(), "kubernetes.io/metadata.name");
  EXPECT_EQ(expr["operator"].as<std::string>(), "In");
  EXPECT_EQ(Strings(expr["values"]), (std::vector<std::string>{"monitoring", "berth-system"}));
  // Probes: from anywhere (the kubelet probes from the node).
  EXPECT_FALSE(rules[8081]["from"]) << "the probe port keeps working for the kubelet";
  // Webhook: only the configured peers (ipBlocks by default, no pod or namespace selector).
  YAML::Node webhook_from = rules[9443]["from"];
  ASSERT_TRUE(webhook_from.IsSequence());
  ASSERT_GT(webhook_from.size(), 0u);
  for (const auto& peer : webhook_from) {
    EXPECT_TRUE(peer["ipBlock"]["cidr"].IsScalar());
    EXPECT_FALSE(peer["podSelector"]);
  }

  // Values: the API server's address, more metrics peers, other ports; and off.
  auto set = RenderDocs("prod", "queues",
                        {"--set", "networkPolicy.apiServerFrom[0].ipBlock.cidr=10.0.0.10/32",
                         "--set", "networkPolicy.metricsNamespaces={monitoring,ingress}",
                         "--set", "networkPolicy.metricsFrom[0].podSelector.matchLabels.app=proxy",
                         "--set", "bindAddress.metrics=127.0.0.1:9090,bindAddress.probes=:9091,bindAddress.webhook=:9444",
                         "--set", "httpReadTimeout=3s"});
  YAML::Node c = Container(Find(set, "Deployment"));
  std::vector<std::string> args = Strings(c["args"]);
  for (const char* want : {"--metrics-bind-address=127.0.0.1:9090", "--health-probe-bind-address=:9091",
                           "--webhook-bind-address=:9444", "--http-read-timeout=3s"}) {
    EXPECT_NE(std::find(args.begin(), args.end(), want), args.end()) << want;
  }
  EXPECT_EQ(c["ports"][0]["containerPort"].as<int>(), 9090);
  EXPECT_EQ(c["ports"][1]["containerPort"].as<int>(), 9091);
  EXPECT_EQ(c["ports"][2]["containerPort"].as<int>(), 9444);
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["port"].as<int>(), 9091);
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["port"].as<int>(), 9091);
  auto set_rules = IngressByPort(Find(set, "NetworkPolicy"));
  ASSERT_TRUE(set_rules.count(9090) && set_rules.count(9091) && set_rules.count(9444));
  ASSERT_EQ(set_rules[9444]["from"].size(), 1u);
  EXPECT_EQ(set_rules[9444]["from"][0]["ipBlock"]["cidr"].as<std::string>(), "10.0.0.10/32");
  ASSERT_EQ(set_rules[9090]["from"].size(), 3u);
  EXPECT_EQ(Strings(set_rules[9090]["from"][0]["namespaceSelector"]["matchExpressions"][0]["values"]),
            (std::vector<std::string>{"monitoring", "ingress", "queues"}));
  EXPECT_EQ(set_rules[9090]["from"][1]["ipBlock"]["cidr"].as<std::string>(), "10.0.0.10/32");
  EXPECT_EQ(set_rules[9090]["from"][2]["podSelector"]["matchLabels"]["app"].as<std::string>(), "proxy");

  EXPECT_FALSE(Find(RenderDocs("berth", "berth-system", {"--set", "networkPolicy.enabled=false"}), "NetworkPolicy").IsMap());
  auto no_webhook = IngressByPort(Find(RenderDocs("berth", "berth-system", {"--set", "webhook.enabled=false"}), "NetworkPolicy"));
  EXPECT_EQ(no_webhook.count(9443), 0u) << "no webhook, no webhook port";
}

TEST_F(HelmChart, InvalidValuesFailTheRenderWithAMessage) {
  // Refused by values.schema.json (Helm names the path) or by the chart's `required` and `fail`
  // (Helm names the template; the message is the chart's). Nothing is rendered.
  struct Case {
    std::string set, message;
  } cases[] = {
      {"logFormat=xml", "- at '/logFormat': value must be one of 'json', 'text'"},
      {"logLevel=loud", "- at '/logLevel': value must be one of 'debug', 'info', 'warn', 'error'"},
      {"image.repository=", "): image.repository is required"},
      {"replicas=0", "- at '/replicas': minimum: got 0, want 1"},
      {"bindAddress.metrics=8080", "): bindAddress.metrics must be HOST:PORT or :PORT, not \"8080\""},
      {"bindAddress.webhook=:94a3", "): bindAddress.webhook must be HOST:PORT or :PORT, not \":94a3\""},
      {"bindAddress.probes=127.0.0.1:8081", "): bindAddress.probes must be reachable on the Pod IP, not \"127.0.0.1:8081\""},
      {"networkPolicy.apiServerFrom=null", "): networkPolicy.apiServerFrom must list the API server's addresses"},
  };
  for (const auto& c : cases) {
    CommandResult r = Render("berth", "berth-system", {"--set", c.set});
    EXPECT_NE(r.exit_code, 0) << c.set;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.set << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.set << ": nothing is rendered";
  }
  // Chart.yaml's kubeVersion: 1.35 and newer.
  CommandResult old_kube = Render("berth", "berth-system", {"--kube-version", "v1.34.0"});
  EXPECT_NE(old_kube.exit_code, 0) << "Chart.yaml's kubeVersion is >=1.35";
  EXPECT_NE(old_kube.err.find("chart requires kubeVersion: >=1.35.0-0 which is incompatible with Kubernetes v1.34.0"),
            std::string::npos)
      << old_kube.err;
  CommandResult oldest = Render("berth", "berth-system", {"--kube-version", "v1.35.0"});
  EXPECT_EQ(oldest.exit_code, 0) << "1.35 is supported: " << oldest.err;
  CommandResult bad = Render("berth", "berth-system", {"--set", "novalue"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("failed parsing --set data: key \"novalue\" has no value"), std::string::npos) << bad.err;
}

TEST_F(HelmChart, HelmLintPassesAndRefusesABadValuesFileNamingThePaths) {
  CommandResult ok = Helm({"lint", kChart, "--strict", "--kube-version", ServerVersion()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("1 chart(s) linted, 0 chart(s) failed"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("[ERROR]"), std::string::npos) << ok.out;
  EXPECT_EQ(ok.out.find("[WARNING]"), std::string::npos) << ok.out;

  std::string bad = WriteTemp("lint-values.yaml", "replica: 3\nwebhook:\n  enabled: \"false\"\n");
  CommandResult refused = Helm({"lint", kChart, "--strict", "--kube-version", ServerVersion(), "-f", bad});
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  EXPECT_NE(refused.out.find("[ERROR] values.yaml: "), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("- at '/webhook/enabled': got string, want boolean"), std::string::npos) << refused.out;
  EXPECT_NE(refused.out.find("- at '': additional properties 'replica' not allowed"), std::string::npos) << refused.out;
  EXPECT_NE(refused.err.find("1 chart(s) linted, 1 chart(s) failed"), std::string::npos) << refused.err;
}

// ---- real releases on the control plane: install, upgrade, rollback, uninstall (issue 28) -----

// `kubectl -o name` lines as "kind/name" (the group left out: "deployment.apps/x" -> "deployment/x").
std::set<std::string> KindNames(const std::string& out) {
  std::set<std::string> s;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    s.insert(line.substr(0, std::min(slash, line.find('.'))) + line.substr(slash));
  }
  return s;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

TEST_F(HelmChart, InstallUpgradeRollbackUninstallKeepTheCertificateAndLeaveOnlyTheCrds) {
  // The release goes into a namespace that helm makes (--create-namespace), so that what
  // uninstall leaves there can be checked.
  const std::string ns = ns_ + "-r";
  namespaces_.push_back(ns);
  const std::string release = "berth-" + ns_;
  const ReleaseNames n = NamesOf(release, ns);
  auto args = [&] { return Strings(Container(Object(ns, "deployment", n.full))["args"]); };
  auto has = [](const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); };

  // ---- helm install: every object, owned by the release, as the chart wrote it.
  // The webhook (admissionPolicies=false): on a cluster that serves admission policies "auto" picks
  // those instead (InstallUpgradeRollbackUninstallPickAdmissionPoliciesWhereServed).
  CommandResult install = Install(release, ns, {"--create-namespace", "--set", "grafana.dashboard.enabled=true", "--set",
                                                "admissionPolicies=false"});
  ASSERT_EQ(install.exit_code, 0) << install.err << install.out;
  EXPECT_NE(install.out.find("STATUS: deployed"), std::string::npos) << install.out;
  EXPECT_NE(install.out.find("REVISION: 1\n"), std::string::npos) << install.out;
  EXPECT_NE(install.out.find("berth 0.1.0 is installed as " + n.full + " in " + ns + "."), std::string::npos)
      << "NOTES.txt\n" << install.out;
  CommandResult manifest = Helm({"get", "manifest", release, "-n", ns});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  const auto docs = Documents(manifest.out);
  std::set<std::string> kinds, expected;
  for (const auto& d : docs) {
    kinds.insert(Kind(d));
    expected.insert(Lower(Kind(d)) + "/" + Name(d));
    YAML::Node o = Object(d["metadata"]["namespace"].as<std::string>(""), Kind(d), Name(d));
    ASSERT_TRUE(o.IsMap()) << Kind(d) << "/" << Name(d) << " was not created";
    EXPECT_EQ(o["metadata"]["annotations"]["meta.helm.sh/release-name"].as<std::string>(""), release) << Kind(d);
    EXPECT_EQ(o["metadata"]["annotations"]["meta.helm.sh/release-namespace"].as<std::string>(""), ns) << Kind(d);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"APIService", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment",
                                          "MutatingWebhookConfiguration", "NetworkPolicy", "Role", "RoleBinding", "Secret",
                                          "Service", "ServiceAccount", "ValidatingAdmissionPolicy",
                                          "ValidatingAdmissionPolicyBinding"}))
      << "the release's objects (Helm keeps crds/ out of the release)";
  EXPECT_EQ(expected.count("clusterrole/" + n.cluster), 1u);
  EXPECT_EQ(expected.count("mutatingwebhookconfiguration/" + n.webhook), 1u);
  EXPECT_EQ(expected.count("mutatingwebhookconfiguration/" + n.jobs_webhook), 1u);
  // Both webhook configurations trust the one CA (issue 45: the Jobs' failurePolicy is Fail).
  // So do those of JobSets and Pods (issue 45 on 1.35), each of two entries.
  for (const std::string& name : {n.jobs_webhook, n.jobsets_webhook, n.pods_webhook}) {
    YAML::Node mwc = Object("", "mutatingwebhookconfiguration", name);
    ASSERT_TRUE(mwc.IsMap()) << name;
    EXPECT_EQ(mwc["webhooks"].size(), 2u) << name;
    for (const auto& w : mwc["webhooks"]) {
      EXPECT_EQ(w["clientConfig"]["caBundle"].as<std::string>(""), CertOf(release, ns).bundle) << name;
      EXPECT_EQ(w["failurePolicy"].as<std::string>(""), "Fail") << name;
    }
  }
  EXPECT_TRUE(Object("", "crd", "runs.berth.dev").IsMap());
  EXPECT_TRUE(Object("", "crd", "fleets.berth.dev").IsMap());
  // The server kept every hardening field (none was dropped as unknown to it).
  YAML::Node d = Object(ns, "deployment", n.full);
  ASSERT_TRUE(d.IsMap());
  EXPECT_EQ(d["spec"]["replicas"].as<int>(), 2);
  YAML::Node sc = Container(d)["securityContext"];
  EXPECT_EQ(sc["seccompProfile"]["type"].as<std::string>(""), "RuntimeDefault");
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
  EXPECT_EQ(Strings(sc["capabilities"]["drop"]), std::vector<std::string>{"ALL"});
  EXPECT_EQ(d["spec"]["template"]["spec"]["securityContext"]["runAsUser"].as<int>(0), 65532);
  EXPECT_EQ(Container(d)["readinessProbe"]["httpGet"]["path"].as<std::string>(""), "/readyz");
  EXPECT_TRUE(has(args(), "--log-level=info"));
  // The webhook's certificate: a CA the API server trusts, and a serving certificate it signed
  // for the Service's name.
  const WebhookCert cert = CertOf(release, ns);
  ASSERT_FALSE(cert.ca.empty() || cert.crt.empty() || cert.key.empty());
  EXPECT_TRUE(cert.bundle == cert.ca) << "the API server trusts the CA kept in the Secret";
  std::string ca_pem = DecodeTo("ca.crt", cert.ca), crt_pem = DecodeTo("tls.crt", cert.crt);
  CommandResult verify = RunCommand({"openssl", "verify", "-CAfile", ca_pem, crt_pem});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  CommandResult san = RunCommand({"openssl", "x509", "-in", crt_pem, "-noout", "-ext", "subjectAltName"});
  EXPECT_NE(san.out.find("DNS:" + n.full + "." + ns + ".svc"), std::string::npos) << san.out << san.err;
  // The Pods carry a checksum of that certificate (issue 29, 9c): a new one rolls them.
  const auto [checksum, generation] = CertChecksumOf(release, ns);
  EXPECT_EQ(checksum, Sha256(cert.crt));

  // ---- helm upgrade with the same values: lookup finds the Secret, the chart writes it back as
  // it is, and Helm has nothing to change in the Secret or the webhook configuration (their
  // resourceVersions stay).
  const std::string secret_rv = ResourceVersion(ns, "secret", n.secret);
  const std::string mwc_rv = ResourceVersion("", "mutatingwebhookconfiguration", n.webhook);
  ASSERT_FALSE(secret_rv.empty() || mwc_rv.empty());
  CommandResult same = Upgrade(release, ns, {"--reuse-values"});
  ASSERT_EQ(same.exit_code, 0) << same.err << same.out;
  EXPECT_NE(same.out.find("REVISION: 2\n"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("berth 0.1.0 is upgraded as " + n.full + " in " + ns + "."), std::string::npos) << same.out;
  EXPECT_EQ(ResourceVersion(ns, "secret", n.secret), secret_rv) << "the upgrade rewrote the webhook's Secret";
  EXPECT_EQ(ResourceVersion("", "mutatingwebhookconfiguration", n.webhook), mwc_rv);
  EXPECT_EQ(CertChecksumOf(release, ns), std::make_pair(checksum, generation)) << "the same certificate rolled the Pods";

  // ---- helm upgrade with a changed value: the Deployment changes, the certificate does not.
  CommandResult changed = Upgrade(release, ns, {"--reuse-values", "--set", "logLevel=debug"});
  ASSERT_EQ(changed.exit_code, 0) << changed.err << changed.out;
  EXPECT_TRUE(has(args(), "--log-level=debug"));
  WebhookCert upgraded = CertOf(release, ns);
  EXPECT_TRUE(upgraded.ca == cert.ca) << "the CA rotated on upgrade";
  EXPECT_TRUE(upgraded.crt == cert.crt) << "the serving certificate rotated on upgrade";
  EXPECT_TRUE(upgraded.key == cert.key);
  EXPECT_TRUE(upgraded.bundle == cert.ca);
  EXPECT_EQ(ResourceVersion(ns, "secret", n.secret), secret_rv);
  EXPECT_EQ(CertChecksumOf(release, ns).first, checksum);
  CommandResult notes = Helm({"get", "notes", release, "-n", ns});
  EXPECT_NE(notes.out.find("berth 0.1.0 is upgraded as " + n.full + " in " + ns + "."), std::string::npos)
      << notes.out << notes.err;
  // helm template cannot look the Secret up: every render makes a new pair, --is-upgrade or not
  // (why GitOps renderers need cert-manager, docs/install.md).
  std::string t1 = Find(Documents(Render(release, ns, {"--is-upgrade"}).out), "Secret")["data"]["tls.crt"].as<std::string>("");
  std::string t2 = Find(Documents(Render(release, ns, {"--is-upgrade"}).out), "Secret")["data"]["tls.crt"].as<std::string>("");
  EXPECT_FALSE(t1.empty());
  EXPECT_TRUE(t1 != t2) << "helm template made the same pair twice";
  EXPECT_TRUE(t1 != cert.crt) << "helm template found the installed Secret";

  // ---- helm rollback to revision 1: its value is back, the certificate is the same.
  CommandResult rollback = Helm({"rollback", release, "1", "-n", ns});
  ASSERT_EQ(rollback.exit_code, 0) << rollback.err << rollback.out;
  EXPECT_NE(rollback.out.find("Rollback was a success"), std::string::npos) << rollback.out;
  EXPECT_TRUE(has(args(), "--log-level=info")) << "the value of revision 1 is back";
  EXPECT_FALSE(has(args(), "--log-level=debug"));
  WebhookCert rolled_back = CertOf(release, ns);
  EXPECT_TRUE(rolled_back.ca == cert.ca);
  EXPECT_TRUE(rolled_back.crt == cert.crt);
  EXPECT_TRUE(rolled_back.key == cert.key);
  EXPECT_TRUE(rolled_back.bundle == cert.ca);
  CommandResult history = Helm({"history", release, "-n", ns, "-o", "json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  YAML::Node revisions = YAML::Load(history.out);
  ASSERT_EQ(revisions.size(), 4u) << history.out;
  EXPECT_EQ(revisions[3]["revision"].as<int>(0), 4);
  EXPECT_EQ(revisions[3]["status"].as<std::string>(""), "deployed");
  EXPECT_EQ(revisions[3]["description"].as<std::string>(""), "Rollback to 1");
  CommandResult values = Helm({"get", "values", release, "-n", ns, "-o", "json"});
  EXPECT_EQ(values.exit_code, 0) << values.err;
  EXPECT_EQ(values.out.find("logLevel"), std::string::npos) << values.out;

  // ---- helm uninstall: nothing of the release is left, in the namespace or cluster-wide.
  // Every object of every kind the API server lists that carries the release's label:
  auto labelled = [&](bool namespaced) {
    CommandResult api = cp().Kubectl({"api-resources", "--verbs=list", std::string("--namespaced=") + (namespaced ? "true" : "false"),
                                      "-o", "name"});
    EXPECT_EQ(api.exit_code, 0) << api.err;
    std::string all;
    std::istringstream lines(api.out);
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) all += (all.empty() ? "" : ",") + line;
    }
    std::vector<std::string> get = {"get", all, "-l", "app.kubernetes.io/instance=" + release, "-o", "name"};
    // Every namespace: the queue API's reader of the request-header CA is bound in kube-system.
    if (namespaced) get.insert(get.end(), {"--all-namespaces"});
    CommandResult r = cp().Kubectl(get);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return KindNames(r.out);
  };
  std::set<std::string> found = labelled(true), found_cluster = labelled(false);
  found.insert(found_cluster.begin(), found_cluster.end());
  for (const auto& e : expected) EXPECT_EQ(found.count(e), 1u) << e << " is not found by its label";

  CommandResult uninstall = Helm({"uninstall", release, "-n", ns});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall.err << uninstall.out;
  EXPECT_NE(uninstall.out.find("release \"" + release + "\" uninstalled"), std::string::npos) << uninstall.out;
  for (const auto& doc : docs) {
    EXPECT_FALSE(Object(doc["metadata"]["namespace"].as<std::string>(""), Kind(doc), Name(doc)).IsMap())
        << Kind(doc) << "/" << Name(doc) << " was left behind";
  }
  EXPECT_EQ(labelled(true), std::set<std::string>{}) << "left in " << ns;
  EXPECT_EQ(labelled(false), std::set<std::string>{}) << "left cluster-wide";
  // Helm's own records of the release (Secrets sh.helm.release.v1.<release>.v<N>) are gone too.
  CommandResult records = cp().Kubectl({"get", "secrets", "-n", ns, "-l", "owner=helm,name=" + release, "-o", "name"});
  EXPECT_EQ(records.exit_code, 0) << records.err;
  EXPECT_EQ(records.out, "");
  EXPECT_EQ(Helm({"list", "-n", ns, "-a", "-q"}).out, "");
  // What docs/install.md says is left: the CRDs (Helm never deletes crds/, so every Run and Fleet
  // stays) and the namespace (Helm never deletes it, even one made by --create-namespace).
  EXPECT_TRUE(Object("", "crd", "runs.berth.dev").IsMap());
  EXPECT_TRUE(Object("", "crd", "fleets.berth.dev").IsMap());
  EXPECT_TRUE(Object("", "namespace", ns).IsMap());
}

// values admissionPolicies: "auto" (the default) installs admission policies where the cluster
// serves them (Kubernetes 1.36+: no webhook, no certificate, no call to berth on a create) and
// the webhook elsewhere (1.35, the compatibility group); switching by upgrade and rollback leaves
// no object of the other mechanism behind, and uninstall removes the policies.
TEST_F(HelmChart, InstallUpgradeRollbackUninstallPickAdmissionPoliciesWhereServed) {
  const std::string ns = ns_ + "-p";
  namespaces_.push_back(ns);
  const std::string release = "berth-" + ns_;
  const ReleaseNames n = NamesOf(release, ns);
  const bool served = ServesAdmissionPolicies();
  const std::vector<std::string> policy_kinds = {"mutatingadmissionpolicy", "mutatingadmissionpolicybinding",
                                                 "validatingadmissionpolicy", "validatingadmissionpolicybinding"};
  // What admits Runs now: "policies", "webhook", or "" (neither), checked object by object.
  auto mechanism = [&] {
    int policies = 0;
    if (served) {
      for (const auto& kind : policy_kinds) policies += Object("", kind, n.webhook).IsMap() ? 1 : 0;
    }
    const bool webhook = Object("", "mutatingwebhookconfiguration", n.webhook).IsMap();
    const bool jobs_webhook = Object("", "mutatingwebhookconfiguration", n.jobs_webhook).IsMap() &&  // issue 45
                              Object("", "mutatingwebhookconfiguration", n.jobsets_webhook).IsMap() &&
                              Object("", "mutatingwebhookconfiguration", n.pods_webhook).IsMap();
    const bool any_workload_webhook = Object("", "mutatingwebhookconfiguration", n.jobs_webhook).IsMap() ||
                                      Object("", "mutatingwebhookconfiguration", n.jobsets_webhook).IsMap() ||
                                      Object("", "mutatingwebhookconfiguration", n.pods_webhook).IsMap();
    const bool secret = Object(ns, "secret", n.secret).IsMap();
    std::vector<std::string> args = Strings(Container(Object(ns, "deployment", n.full))["args"]);
    const bool serving = std::any_of(args.begin(), args.end(), [](const std::string& a) {
      return a.rfind("--webhook-bind-address=", 0) == 0;
    });
    if (policies == 4 && !webhook && !any_workload_webhook && !secret && !serving) return std::string("policies");
    if (policies == 0 && webhook && jobs_webhook && secret && serving) return std::string("webhook");
    return "mixed: " + std::to_string(policies) + " policy objects, webhook configuration " + (webhook ? "yes" : "no") +
           ", Jobs'/JobSets'/Pods' webhook configurations " + (jobs_webhook ? "all" : any_workload_webhook ? "some" : "none") +
           ", Secret " + (secret ? "yes" : "no") + ", --webhook-bind-address " + (serving ? "yes" : "no");
  };
  if (!served) {
    // 1.35: asking for the policies fails the install with a sentence; "auto" is the webhook.
    CommandResult forced = Install(release, ns, {"--create-namespace", "--set", "admissionPolicies=true"});
    EXPECT_NE(forced.exit_code, 0) << forced.out;
    EXPECT_NE(forced.err.find("admissionPolicies: true needs admissionregistration.k8s.io/v1 MutatingAdmissionPolicy"),
              std::string::npos)
        << forced.err;
    ASSERT_EQ(Install(release, ns, {"--create-namespace"}).exit_code, 0);
    EXPECT_EQ(mechanism(), "webhook");
    return;
  }
  CommandResult install = Install(release, ns, {"--create-namespace"});
  ASSERT_EQ(install.exit_code, 0) << install.err << install.out;
  EXPECT_EQ(mechanism(), "policies");
  // The API server applies them: a new Run gets the finalizer, and a priority above the
  // namespace's cap is refused with the webhook's sentence (nothing of berth runs here).
  const std::string tenant = ns_ + "-t";
  namespaces_.push_back(tenant);
  ASSERT_EQ(cp().Kubectl({"create", "namespace", tenant}).exit_code, 0);
  ASSERT_EQ(cp().Kubectl({"label", "namespace", tenant, "berth.dev/max-priority=30"}).exit_code, 0);
  auto run = [&](const std::string& name, int priority) {
    return cp().Kubectl({"apply", "-n", tenant, "-f", "-"},
                        "apiVersion: berth.dev/v1alpha1\nkind: Run\nmetadata: {name: " + name + "}\nspec:\n  priority: " +
                            std::to_string(priority) + "\n  template:\n    spec:\n      containers: [{name: main, image: busybox}]\n");
  };
  // Policies take effect once the API server has loaded them (a second or so): retry until refused.
  CommandResult refused;
  int tries = 0;
  // (Until the API server has loaded the Run schema for the mutating policy, a create is refused
  // with 503 "Resource kind ... not found": that is not the refusal looked for.)
  EXPECT_TRUE(Eventually([&] {
    refused = run("high-" + std::to_string(tries++), 80);
    return refused.exit_code != 0 && refused.err.find("is forbidden") != std::string::npos;
  }, std::chrono::seconds(90))) << refused.err;
  EXPECT_NE(refused.err.find("spec.priority 80 is above 30, the highest priority runs in namespace " + tenant +
                             " may have (namespace label berth.dev/max-priority: \"30\")"),
            std::string::npos)
      << refused.err;
  ASSERT_TRUE(Eventually([&] { return run("low", 30).exit_code == 0; }, std::chrono::seconds(90)));
  EXPECT_EQ(cp().Kubectl({"get", "run", "low", "-n", tenant, "-o", "jsonpath={.metadata.finalizers}"}).out,
            R"(["berth.dev/run-cleanup"])");

  // helm upgrade to the webhook and back by rollback: one mechanism at a time.
  CommandResult to_webhook = Upgrade(release, ns, {"--reuse-values", "--set", "admissionPolicies=false"});
  ASSERT_EQ(to_webhook.exit_code, 0) << to_webhook.err << to_webhook.out;
  EXPECT_EQ(mechanism(), "webhook");
  CommandResult rollback = Helm({"rollback", release, "1", "-n", ns});
  ASSERT_EQ(rollback.exit_code, 0) << rollback.err << rollback.out;
  EXPECT_EQ(mechanism(), "policies");

  // helm uninstall: the policies go with the release (the Runs stay, with their finalizer for
  // berth to clean up when it runs again).
  ASSERT_EQ(Helm({"uninstall", release, "-n", ns}).exit_code, 0);
  for (const auto& kind : policy_kinds) EXPECT_FALSE(Object("", kind, n.webhook).IsMap()) << kind << " was left behind";
  // No berth runs here to remove its finalizer: the test does, so that the namespace can go.
  std::istringstream runs(cp().Kubectl({"get", "runs", "-n", tenant, "-o", "name"}).out);
  for (std::string r; std::getline(runs, r);) {
    cp().Kubectl({"patch", r, "-n", tenant, "--type", "merge", "-p", R"({"metadata":{"finalizers":null}})"});
  }
}

TEST_F(HelmChart, UpgradeFromChart010KeepsItsCaAndMakesANewPairOnlyWithoutOne) {
  const std::string release = "berth-" + ns_;
  const ReleaseNames n = NamesOf(release, ns_);
  CommandResult install = Install(release, ns_, {"--set", "admissionPolicies=false"});
  ASSERT_EQ(install.exit_code, 0) << install.err << install.out;
  const WebhookCert cert = CertOf(release, ns_);
  ASSERT_FALSE(cert.ca.empty() || cert.crt.empty());
  const auto [checksum, generation] = CertChecksumOf(release, ns_);
  EXPECT_EQ(checksum, Sha256(cert.crt));
  const std::string drop_ca = R"([{"op":"remove","path":"/data/ca.crt"}])";

  // What chart 0.1.0 left: a Secret without ca.crt, and the CA only in its webhook configuration,
  // named "<full>-runs" then (the current name does not exist yet).
  ASSERT_EQ(Kubectl({"patch", "secret", n.secret, "--type", "json", "-p", drop_ca}).exit_code, 0);
  ASSERT_EQ(cp().Kubectl({"delete", "mutatingwebhookconfiguration", n.webhook}).exit_code, 0);
  const std::string old_name = n.full + "-runs";
  cluster_objects_.push_back("mutatingwebhookconfiguration/" + old_name);
  CommandResult old = cp().Kubectl(
      {"apply", "-f", "-"},
      "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: " + old_name +
          "}\nwebhooks:\n  - name: runs.berth.dev\n    admissionReviewVersions: [v1]\n    sideEffects: None\n"
          "    failurePolicy: Ignore\n    clientConfig:\n      service: {name: " + n.full + ", namespace: " + ns_ +
          ", path: /mutate-runs, port: 443}\n      caBundle: " + cert.ca +
          "\n    rules:\n      - {apiGroups: [berth.dev], apiVersions: [v1alpha1], operations: [CREATE], resources: [runs]}\n");
  ASSERT_EQ(old.exit_code, 0) << old.err;
  ASSERT_TRUE(CertOf(release, ns_).ca.empty()) << "ca.crt is still in the Secret";
  CommandResult upgrade = Upgrade(release, ns_);
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.err << upgrade.out;
  WebhookCert kept = CertOf(release, ns_);
  EXPECT_TRUE(kept.ca == cert.ca) << "the CA of the old webhook configuration was not taken";
  EXPECT_TRUE(kept.crt == cert.crt);
  EXPECT_TRUE(kept.key == cert.key);
  EXPECT_TRUE(kept.bundle == cert.ca) << "the webhook configuration under its new name trusts the same CA";
  EXPECT_EQ(CertChecksumOf(release, ns_), std::make_pair(checksum, generation)) << "a kept pair rolled the Pods";
  ASSERT_EQ(cp().Kubectl({"delete", "mutatingwebhookconfiguration", old_name}).exit_code, 0);

  // Without the CA anywhere the old pair cannot be trusted: a complete new pair.
  ASSERT_EQ(Kubectl({"patch", "secret", n.secret, "--type", "json", "-p", drop_ca}).exit_code, 0);
  ASSERT_EQ(cp().Kubectl({"patch", "mutatingwebhookconfiguration", n.webhook, "--type", "json", "-p",
                          R"([{"op":"remove","path":"/webhooks/0/clientConfig/caBundle"}])"})
                .exit_code,
            0);
  ASSERT_EQ(Upgrade(release, ns_).exit_code, 0);
  WebhookCert renewed = CertOf(release, ns_);
  EXPECT_TRUE(renewed.crt != cert.crt);
  EXPECT_FALSE(renewed.ca.empty());
  EXPECT_TRUE(renewed.ca != cert.ca);
  EXPECT_TRUE(renewed.bundle == renewed.ca);
  // A new pair: the pod template changes (a new generation), which rolls the Pods.
  const auto renewed_checksum = CertChecksumOf(release, ns_);
  EXPECT_EQ(renewed_checksum.first, Sha256(renewed.crt));
  EXPECT_GT(renewed_checksum.second, generation) << "the Deployment did not roll on a new certificate";
  CommandResult verify = RunCommand({"openssl", "verify", "-CAfile", DecodeTo("renewed-ca.crt", renewed.ca),
                                     DecodeTo("renewed-tls.crt", renewed.crt)});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;

  // Rotating as docs/install.md says: delete the Secret and upgrade.
  ASSERT_EQ(Kubectl({"delete", "secret", n.secret}).exit_code, 0);
  ASSERT_EQ(Upgrade(release, ns_).exit_code, 0);
  WebhookCert rotated = CertOf(release, ns_);
  EXPECT_FALSE(rotated.crt.empty());
  EXPECT_TRUE(rotated.crt != renewed.crt);
  EXPECT_TRUE(rotated.ca != renewed.ca);
  EXPECT_TRUE(rotated.bundle == rotated.ca);
  EXPECT_EQ(CertChecksumOf(release, ns_).first, Sha256(rotated.crt));
  EXPECT_GT(CertChecksumOf(release, ns_).second, renewed_checksum.second);
}

// ---- cert-manager, two releases, values.schema.json, NOTES.txt (issue 18) ---------------------

TEST_F(HelmChart, CertManagerIssuesTheWebhookCertificateAndInjectsTheCa) {
  CommandResult no_api = Render("berth", "berth-system", {"--set", "webhook.certManager.enabled=true"});
  EXPECT_NE(no_api.exit_code, 0) << "cert-manager enabled where its API is not served";
  EXPECT_NE(no_api.err.find("webhook.certManager.enabled needs cert-manager"), std::string::npos) << no_api.err;

  auto docs = RenderDocs("berth", "berth-system",
                         {"--set", "webhook.certManager.enabled=true", "--api-versions", "cert-manager.io/v1"});
  // The webhook's Secret is cert-manager's; the only Secret the chart renders is the queue API's
  // (issue 44: its certificate is always the chart's).
  for (const auto& d : docs) {
    if (Kind(d) == "Secret") {
      EXPECT_EQ(Name(d), "berth-controller-queue-api-tls") << "cert-manager writes the webhook's Secret";
    }
  }
  YAML::Node issuer = Find(docs, "Issuer");
  YAML::Node cert = Find(docs, "Certificate");
  YAML::Node mwc = Find(docs, "MutatingWebhookConfiguration");
  ASSERT_TRUE(issuer.IsMap() && cert.IsMap() && mwc.IsMap());
  EXPECT_TRUE(issuer["spec"]["selfSigned"].IsMap());
  EXPECT_EQ(cert["apiVersion"].as<std::string>(), "cert-manager.io/v1");
  EXPECT_EQ(cert["spec"]["issuerRef"]["name"].as<std::string>(), Name(issuer));
  EXPECT_EQ(cert["spec"]["issuerRef"]["kind"].as<std::string>(), "Issuer");
  // The Secret cert-manager writes is the one the Pods mount, for the Service's name.
  YAML::Node volumes = Find(docs, "Deployment")["spec"]["template"]["spec"]["volumes"];
  EXPECT_EQ(cert["spec"]["secretName"].as<std::string>(), volumes[0]["secret"]["secretName"].as<std::string>(""));
  std::vector<std::string> dns = Strings(cert["spec"]["dnsNames"]);
  EXPECT_NE(std::find(dns.begin(), dns.end(), "berth-controller.berth-system.svc"), dns.end());
  // The CA comes from cert-manager's injector, not from the render.
  EXPECT_EQ(mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"].as<std::string>(""),
            "berth-system/" + Name(cert));
  EXPECT_FALSE(mwc["webhooks"][0]["clientConfig"]["caBundle"]);

  // An existing issuer instead of the chart's self-signed one.
  auto own = RenderDocs("berth", "berth-system",
                        {"--set", "webhook.certManager.enabled=true", "--set", "webhook.certManager.issuerRef.name=corp-ca",
                         "--set", "webhook.certManager.issuerRef.kind=ClusterIssuer", "--api-versions", "cert-manager.io/v1"});
  EXPECT_FALSE(Find(own, "Issuer").IsMap());
  EXPECT_EQ(Find(own, "Certificate")["spec"]["issuerRef"]["name"].as<std::string>(""), "corp-ca");
  EXPECT_EQ(Find(own, "Certificate")["spec"]["issuerRef"]["kind"].as<std::string>(""), "ClusterIssuer");
}

bool ClusterScoped(const std::string& kind) {
  return kind == "CustomResourceDefinition" || kind == "ClusterRole" || kind == "ClusterRoleBinding" ||
         kind == "MutatingWebhookConfiguration" || kind == "ValidatingAdmissionPolicy" ||
         kind == "ValidatingAdmissionPolicyBinding";
}

TEST_F(HelmChart, ReleasesOfOneNameInTwoNamespacesDoNotCollide) {
  const std::string ns_b = ns_ + "-b";
  namespaces_.push_back(ns_b);
  std::map<std::string, std::set<std::string>> names;  // namespace -> cluster-scoped KIND/NAME
  for (const auto& ns : {ns_, ns_b}) {
    // Helm refuses to install over an object another release owns: both installs succeed only
    // because no name is shared.
    // One release per cluster can serve the queue API (APIService v1alpha1.queue.berth.dev is
    // cluster-wide and names one Service): here neither does.
    CommandResult r = Install("berth", ns, {"--create-namespace", "--set", "admissionPolicies=false", "--set",
                                            "queueApi.enabled=false"});
    ASSERT_EQ(r.exit_code, 0) << ns << ": " << r.err << r.out;
    CommandResult m = Helm({"get", "manifest", "berth", "-n", ns});
    ASSERT_EQ(m.exit_code, 0) << m.err;
    for (const auto& d : Documents(m.out)) {
      if (ClusterScoped(Kind(d))) names[ns].insert(Kind(d) + "/" + Name(d));
    }
  }
  // ClusterRole, ClusterRoleBinding, MutatingWebhookConfiguration, 3 ValidatingAdmissionPolicies
  // and their bindings (issue 44), those of Jobs, JobSets, Pod groups and tickets and the Jobs'
  // MutatingWebhookConfiguration, and those of JobSets and Pods (issue 45), and the
  // ValidatingAdmissionPolicy of berth.dev/submitted-by and its binding (issue 47).
  ASSERT_EQ(names[ns_].size(), 22u);
  ASSERT_EQ(names[ns_b].size(), 22u);
  for (const auto& n : names[ns_]) EXPECT_EQ(names[ns_b].count(n), 0u) << n << " is in both releases";

  // Each release's ClusterRoleBinding binds its own ServiceAccount, each webhook calls its own
  // Service, and each release made its own certificate (the other namespace's Secret is not taken).
  for (const auto& ns : {ns_, ns_b}) {
    CommandResult crb = cp().Kubectl({"get", "clusterrolebinding", "berth-controller." + ns, "-o",
                                      "jsonpath={.subjects[0].namespace}/{.subjects[0].name} {.roleRef.name}"});
    EXPECT_EQ(crb.out, ns + "/berth-controller berth-controller." + ns) << crb.err;
    CommandResult mwc = cp().Kubectl({"get", "mutatingwebhookconfiguration", "berth-controller-runs." + ns, "-o",
                                      "jsonpath={.webhooks[0].clientConfig.service.namespace}"});
    EXPECT_EQ(mwc.out, ns) << mwc.err;
  }
  WebhookCert a = CertOf("berth", ns_), b = CertOf("berth", ns_b);
  EXPECT_FALSE(a.crt.empty() || b.crt.empty());
  EXPECT_TRUE(a.crt != b.crt);
  EXPECT_TRUE(a.ca != b.ca);

  // What a shared name would do: a release that names its objects like the first one is refused.
  CommandResult clash = Install("other", ns_, {"--set", "fullnameOverride=berth-controller"});
  EXPECT_NE(clash.exit_code, 0) << clash.out;
  EXPECT_NE(clash.err.find("exists and cannot be imported into the current release"), std::string::npos) << clash.err;
  EXPECT_NE(clash.err.find("\"meta.helm.sh/release-name\" must equal \"other\": current value is \"berth\""),
            std::string::npos)
      << clash.err;

  // Uninstalling the first release leaves the second one's cluster-scoped objects.
  CommandResult uninstall = Helm({"uninstall", "berth", "-n", ns_});
  ASSERT_EQ(uninstall.exit_code, 0) << uninstall.err;
  for (const auto& [ns, set] : names) {
    for (const auto& kn : set) {
      std::string kind = kn.substr(0, kn.find('/')), name = kn.substr(kn.find('/') + 1);
      EXPECT_EQ(Object("", kind, name).IsMap(), ns == ns_b) << kn;
    }
  }
}

TEST_F(HelmChart, ValuesSchemaRefusesUnknownKeysAndWrongTypesNamingThePath) {
  CommandResult defaults = Render("berth", "berth-system");
  EXPECT_EQ(defaults.exit_code, 0) << "the chart's own defaults pass its schema: " << defaults.err;

  CommandResult typo = Render("berth", "berth-system", {"--set", "replica=3"});
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_TRUE(typo.out.empty()) << "nothing is rendered";
  EXPECT_NE(typo.err.find("values don't meet the specifications of the schema(s) in the following chart(s):\nberth:\n"
                          "- at '': additional properties 'replica' not allowed"),
            std::string::npos)
      << typo.err;

  std::string values = WriteTemp("bad-values.yaml", "webhook:\n  enabled: \"false\"\n");
  for (const auto& args : std::vector<std::vector<std::string>>{{"--set-string", "webhook.enabled=false"}, {"-f", values}}) {
    CommandResult wrong = Render("berth", "berth-system", args);
    EXPECT_NE(wrong.exit_code, 0) << args[0];
    EXPECT_NE(wrong.err.find("- at '/webhook/enabled': got string, want boolean"), std::string::npos)
        << args[0] << ": " << wrong.err;
  }
  // Nested typos too (additionalProperties: false below the top level).
  CommandResult nested = Render("berth", "berth-system", {"--set", "networkPolicy.enable=false"});
  EXPECT_NE(nested.exit_code, 0);
  EXPECT_NE(nested.err.find("- at '/networkPolicy': additional properties 'enable' not allowed"), std::string::npos)
      << nested.err;
  // Every error is listed, not just the first.
  CommandResult two = Render("berth", "berth-system", {"--set", "replica=3,service.port=http"});
  EXPECT_NE(two.err.find("- at '': additional properties 'replica' not allowed"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("- at '/service/port': got string, want integer"), std::string::npos) << two.err;

  // helm install refuses the same values before it creates anything.
  const std::string release = "berth-" + ns_;
  CommandResult install = Install(release, ns_, {"--set", "replica=3"});
  EXPECT_NE(install.exit_code, 0);
  EXPECT_NE(install.err.find("- at '': additional properties 'replica' not allowed"), std::string::npos) << install.err;
  EXPECT_EQ(Helm({"list", "-n", ns_, "-a", "-q"}).out, "") << "no release is recorded";
  EXPECT_FALSE(Object(ns_, "deployment", NamesOf(release, ns_).full).IsMap());
  EXPECT_FALSE(Object("", "clusterrole", NamesOf(release, ns_).cluster).IsMap());
}

TEST_F(HelmChart, SetStringIsAppliedAfterEverySetWhateverTheOrder) {
  // helm applies -f files, then every --set, then every --set-string.
  auto docs = RenderDocs("berth", "berth-system",
                         {"--set-string", "image.tag=1.0", "--set", "image.tag=2", "--set", "image.repository=r"});
  EXPECT_EQ(Container(Find(docs, "Deployment"))["image"].as<std::string>(), "r:1.0");
  auto later = RenderDocs("berth", "berth-system", {"--set", "agingInterval=5m", "--set", "agingInterval=7m"});
  std::vector<std::string> args = Strings(Container(Find(later, "Deployment"))["args"]);
  EXPECT_NE(std::find(args.begin(), args.end(), "--aging-interval=7m"), args.end()) << "a later --set wins";
}

TEST_F(HelmChart, NotesPointAtTheLeaderThroughItsLease) {
  std::string release = "berth";
  CommandResult notes = DryRunNotes(release, ns_);
  ASSERT_EQ(notes.exit_code, 0) << notes.err;
  EXPECT_NE(notes.out.find("berth 0.1.0 is installed as berth-controller in " + ns_ + "."), std::string::npos) << notes.out;
  EXPECT_EQ(notes.out.find("svc/"), std::string::npos) << "a Service forwards to any replica, not to the leader";
  EXPECT_EQ(notes.out.find("WARNING"), std::string::npos) << notes.out;
  // The commands of the notes, run as a user would, find the Pod that holds the Lease.
  std::string find_leader, forward;
  std::istringstream lines(notes.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("leader=$(") != std::string::npos) find_leader = line;
    if (line.find("port-forward") != std::string::npos) forward = line;
  }
  ASSERT_FALSE(find_leader.empty()) << notes.out;
  ASSERT_FALSE(forward.empty()) << notes.out;
  Apply("apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: berth-controller\nspec:\n"
        "  holderIdentity: berth-controller-6f9d8c7b5-x2x4q_3e5c0d1a9b7f2e64\n  leaseDurationSeconds: 15\n");
  CommandResult leader = RunCommand({"bash", "-c", find_leader + "\necho \"$leader\""}, {},
                                    {"KUBECONFIG=" + cp().kubeconfig()});
  EXPECT_EQ(leader.out, "berth-controller-6f9d8c7b5-x2x4q\n") << leader.err;
  EXPECT_NE(forward.find("kubectl -n " + ns_ + " port-forward \"pod/$leader\" 8080:http"), std::string::npos) << forward;
  // ... on the Pods' port named http (the metrics address), which serves the dashboard.
  auto docs = RenderDocs(release, ns_);
  EXPECT_EQ(Container(Find(docs, "Deployment"))["ports"][0]["name"].as<std::string>(), "http");
}

// ---- Grafana dashboard and PrometheusRule alerts (issue 18) -------------------------------------

// The sample names berth's Metrics exports once every family has a sample: NAME for gauges and
// counters, NAME_bucket/_sum/_count for histograms.
std::set<std::string> ExportedSampleNames() {
  controller::Metrics m;
  reconcilers::EngineObserver::PassSummary pass;
  pass.pending[{"a100", "NoCapacity"}] = 1;
  pass.fleets["a100"].busy_blocks = 1;
  pass.fleets["a100"].instances_by_state = {{"Busy", 1}};
  pass.teams[{"vision", "a100", "gpu"}] = {16, 8, 0, 8};
  m.OnPass(pass);
  m.OnPreempted("a100");
  m.OnReclaimed("a100", "vision");
  m.OnUsageCounted("vision", "ml", "a100", {3600, 3600, 3600});
  m.OnAdmitted(std::chrono::seconds(1));
  m.OnFinished("Failed", "PodFailed");
  m.OnWriteFailed("run");
  m.OnApiRequest("GET", 200);
  m.SetLeader(true);
  std::set<std::string> out;
  std::istringstream text(m.Render());
  for (std::string line; std::getline(text, line);) {
    std::smatch mt;
    if (!std::regex_match(line, mt, std::regex(R"(# TYPE (\S+) (\S+))"))) continue;
    if (mt[2] == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) out.insert(mt[1].str() + suffix);
    } else {
      out.insert(mt[1]);
    }
  }
  return out;
}

std::set<std::string> MetricNamesIn(const std::string& expr) {
  std::set<std::string> out;
  std::regex name(R"(\bberth_[a-z0-9_]+)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator(); ++it) out.insert(it->str());
  return out;
}

TEST_F(HelmChart, GrafanaDashboardIsAConfigMapForTheSidecarUsingOnlyExportedMetrics) {
  std::set<std::string> exported = ExportedSampleNames();
  ASSERT_GE(exported.size(), 14u);
  auto docs = RenderDocs("berth", "berth-system", {"--set", "grafana.dashboard.enabled=true",
                                                   "--set", "grafana.dashboard.annotations.grafana_folder=Batch"});
  YAML::Node cm = Find(docs, "ConfigMap");
  ASSERT_TRUE(cm.IsMap());
  EXPECT_EQ(cm["metadata"]["labels"]["grafana_dashboard"].as<std::string>(""), "1") << "the sidecar's default label";
  EXPECT_EQ(cm["metadata"]["annotations"]["grafana_folder"].as<std::string>(""), "Batch");
  EXPECT_EQ(cm["metadata"]["namespace"].as<std::string>(""), "berth-system");
  std::string text = cm["data"]["berth.json"].as<std::string>("");
  EXPECT_EQ(text + "\n", ReadFile(kChart + "/dashboards/berth.json")) << "the ConfigMap carries the file as it is";
  auto parsed = k8s::json::Parse(text);
  ASSERT_TRUE(parsed.ok()) << "the dashboard is not JSON: " << parsed.status().ToString();
  const k8s::json::Value& dash = *parsed;
  EXPECT_EQ(k8s::json::GetString(dash, "title"), "berth");
  const k8s::json::Value* panels = k8s::json::Find(dash, {"panels"});
  ASSERT_TRUE(panels && panels->IsArray() && panels->Size() > 0);
  std::set<std::string> used;
  for (const auto& panel : panels->GetArray()) {
    std::string title = k8s::json::GetString(panel, "title");
    const k8s::json::Value* targets = k8s::json::Find(panel, {"targets"});
    ASSERT_TRUE(targets && targets->IsArray() && targets->Size() > 0) << title << " shows nothing";
    for (const auto& t : targets->GetArray()) {
      std::string expr = k8s::json::GetString(t, "expr");
      std::set<std::string> names = MetricNamesIn(expr);
      EXPECT_FALSE(names.empty()) << title << ": " << expr;
      for (const auto& n : names) {
        EXPECT_EQ(exported.count(n), 1u) << title << ": " << n << " is not a metric berth exports";
        used.insert(n);
      }
    }
  }
  // Each family berth exports has a panel (histograms through their buckets).
  for (const auto& n : exported) {
    if (n.ends_with("_sum") || n.ends_with("_count")) continue;
    EXPECT_EQ(used.count(n), 1u) << n << " has no panel";
  }
  auto elsewhere = RenderDocs("berth", "berth-system",
                              {"--set", "grafana.dashboard.enabled=true", "--set", "grafana.dashboard.namespace=monitoring"});
  EXPECT_EQ(Find(elsewhere, "ConfigMap")["metadata"]["namespace"].as<std::string>(""), "monitoring");
}

// Runs promtool with `args`; fails the test when it is missing (hack/deps.sh installs it).
CommandResult Promtool(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"promtool"};
  argv.insert(argv.end(), args.begin(), args.end());
  CommandResult r = RunCommand(argv);
  EXPECT_NE(r.exit_code, 127) << "promtool is missing: run hack/deps.sh (Debian package prometheus)";
  return r;
}

// The PrometheusRule's spec (its groups) as a Prometheus rule file.
std::string RuleFile(const std::vector<YAML::Node>& docs) {
  YAML::Node rule = Find(docs, "PrometheusRule");
  EXPECT_TRUE(rule.IsMap());
  YAML::Emitter out;
  out << rule["spec"];
  return WriteTemp("rules.yaml", out.c_str());
}

std::string Annotation(const std::vector<YAML::Node>& docs, const std::string& alert, const std::string& key) {
  for (const auto& r : Find(docs, "PrometheusRule")["spec"]["groups"][0]["rules"]) {
    if (r["alert"].as<std::string>("") == alert) return r["annotations"][key].as<std::string>("");
  }
  return "";
}

TEST_F(HelmChart, PrometheusRuleAlertsPassPromtoolAndFireOnTheirSeries) {
  auto no_api = RenderDocs("berth", "berth-system", {"--set", "prometheusRule.enabled=true"});
  EXPECT_FALSE(Find(no_api, "PrometheusRule").IsMap()) << "rendered only where monitoring.coreos.com/v1 is served";

  auto docs = RenderDocs("berth", "berth-system", {"--set", "prometheusRule.enabled=true", "--set",
                                                   "prometheusRule.labels.release=kube-prometheus", "--api-versions",
                                                   "monitoring.coreos.com/v1"});
  YAML::Node rule = Find(docs, "PrometheusRule");
  ASSERT_TRUE(rule.IsMap());
  EXPECT_EQ(rule["metadata"]["labels"]["release"].as<std::string>(""), "kube-prometheus");
  std::set<std::string> exported = ExportedSampleNames();
  std::set<std::string> alerts;
  for (const auto& r : rule["spec"]["groups"][0]["rules"]) {
    alerts.insert(r["alert"].as<std::string>());
    std::string expr = r["expr"].as<std::string>();
    for (const auto& n : MetricNamesIn(expr)) EXPECT_EQ(exported.count(n), 1u) << r["alert"] << ": " << n;
    EXPECT_NE(expr.find(R"(job="berth-controller",namespace="berth-system")"), std::string::npos)
        << "only this release's series: " << expr;
  }
  EXPECT_EQ(alerts, (std::set<std::string>{"BerthRunsWaiting", "BerthLeaderAbsent", "BerthWriteFailures",
                                           "BerthSlowSchedulingPass"}));
  std::string rules = RuleFile(docs);
  CommandResult check = Promtool({"check", "rules", rules});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_NE(check.out.find("SUCCESS: 4 rules found"), std::string::npos) << check.out;

  // Each alert fires on the series that mean trouble and stays quiet on healthy ones.
  const std::string sel = R"(job="berth-controller",namespace="berth-system")";
  auto expect_alert = [&](const std::string& name, const std::string& severity, const std::string& description) {
    return "          - exp_labels: {severity: " + severity + "}\n            exp_annotations:\n              summary: " +
           YAML::Dump(YAML::Node(Annotation(docs, name, "summary"))) + "\n              description: " +
           YAML::Dump(YAML::Node(description)) + "\n";
  };
  std::string tests =
      "rule_files: [" + rules + "]\nevaluation_interval: 1m\ntests:\n"
      // The leader goes away at 10m; the alert fires 5m later.
      "  - interval: 1m\n    input_series:\n"
      "      - series: 'berth_leader{" + sel + ",pod=\"a\"}'\n        values: '1x10 0x30'\n"
      "    alert_rule_test:\n"
      "      - {eval_time: 9m, alertname: BerthLeaderAbsent, exp_alerts: []}\n"
      "      - eval_time: 20m\n        alertname: BerthLeaderAbsent\n        exp_alerts:\n" +
      expect_alert("BerthLeaderAbsent", "critical", Annotation(docs, "BerthLeaderAbsent", "description")) +
      // Nothing scraped at all is as bad as no leader.
      "  - interval: 1m\n    input_series:\n"
      "      - series: 'up{job=\"other\"}'\n        values: '1x30'\n"
      "    alert_rule_test:\n"
      "      - eval_time: 10m\n        alertname: BerthLeaderAbsent\n        exp_alerts:\n"
      "          - exp_labels: {severity: critical, job: berth-controller, namespace: berth-system}\n"
      "            exp_annotations:\n              summary: " + YAML::Dump(YAML::Node(Annotation(docs, "BerthLeaderAbsent", "summary"))) +
      "\n              description: " + YAML::Dump(YAML::Node(Annotation(docs, "BerthLeaderAbsent", "description"))) + "\n" +
      // A run waits from 0m on (the gauge climbs a minute a minute): above 30m from 31m, and the
      // alert fires 5m later. A standby's 0 does not hide it.
      "  - interval: 1m\n    input_series:\n"
      "      - series: 'berth_oldest_pending_run_wait_seconds{" + sel + ",pod=\"a\"}'\n        values: '0+60x60'\n"
      "      - series: 'berth_oldest_pending_run_wait_seconds{" + sel + ",pod=\"b\"}'\n        values: '0x60'\n"
      "    alert_rule_test:\n"
      "      - {eval_time: 30m, alertname: BerthRunsWaiting, exp_alerts: []}\n"
      "      - {eval_time: 35m, alertname: BerthRunsWaiting, exp_alerts: []}\n"
      "      - eval_time: 40m\n        alertname: BerthRunsWaiting\n        exp_alerts:\n" +
      expect_alert("BerthRunsWaiting", "warning",
                   "The oldest run waiting in berth-system's queue has waited 40m 0s (threshold 30m). kubectl berth queue "
                   "says why each one waits (NoCapacity: the fleets are full; Unschedulable: no fleet can ever take it).") +
      // Runs wait all along but each is placed within 20 minutes: no alert.
      "  - interval: 1m\n    input_series:\n"
      "      - series: 'berth_oldest_pending_run_wait_seconds{" + sel + ",pod=\"a\"}'\n"
      "        values: '0+60x20 0+60x20 0+60x20 0+60x20 0+60x20'\n"
      "    alert_rule_test:\n"
      "      - {eval_time: 90m, alertname: BerthRunsWaiting, exp_alerts: []}\n"
      // Five failed writes a minute from 0m; the alert fires after 10m. One a minute is tolerated.
      "  - interval: 1m\n    input_series:\n"
      "      - series: 'berth_reconcile_errors_total{" + sel + ",kind=\"run\"}'\n        values: '0+5x40'\n"
      "      - series: 'berth_reconcile_errors_total{job=\"berth-controller\",namespace=\"quiet\",kind=\"run\"}'\n"
      "        values: '0+1x40'\n"
      "    alert_rule_test:\n"
      "      - eval_time: 25m\n        alertname: BerthWriteFailures\n        exp_alerts:\n" +
      expect_alert("BerthWriteFailures", "warning", Annotation(docs, "BerthWriteFailures", "description")) +
      // Every pass between 0.5 s and 1 s: slow. Every pass under 0.1 s: fine.
      "  - interval: 1m\n    input_series:\n"
      "      - series: 'berth_scheduling_cycle_duration_seconds_bucket{" + sel + ",le=\"0.1\"}'\n        values: '0x40'\n"
      "      - series: 'berth_scheduling_cycle_duration_seconds_bucket{" + sel + ",le=\"0.5\"}'\n        values: '0x40'\n"
      "      - series: 'berth_scheduling_cycle_duration_seconds_bucket{" + sel + ",le=\"1\"}'\n        values: '0+60x40'\n"
      "      - series: 'berth_scheduling_cycle_duration_seconds_bucket{" + sel + ",le=\"+Inf\"}'\n        values: '0+60x40'\n"
      "    alert_rule_test:\n"
      "      - eval_time: 25m\n        alertname: BerthSlowSchedulingPass\n        exp_alerts:\n" +
      expect_alert("BerthSlowSchedulingPass", "warning", Annotation(docs, "BerthSlowSchedulingPass", "description")) +
      "  - interval: 1m\n    input_series:\n"
      "      - series: 'berth_scheduling_cycle_duration_seconds_bucket{" + sel + ",le=\"0.1\"}'\n        values: '0+60x40'\n"
      "      - series: 'berth_scheduling_cycle_duration_seconds_bucket{" + sel + ",le=\"+Inf\"}'\n        values: '0+60x40'\n"
      "    alert_rule_test:\n"
      "      - {eval_time: 25m, alertname: BerthSlowSchedulingPass, exp_alerts: []}\n";
  CommandResult test = Promtool({"test", "rules", WriteTemp("rules-test.yaml", tests)});
  EXPECT_EQ(test.exit_code, 0) << test.out << test.err << "\n" << tests;

  // The thresholds are values.
  auto tuned = RenderDocs("berth", "berth-system",
                          {"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.runsWaitingFor=2h", "--set",
                           "prometheusRule.selector=app=\"berth\"", "--api-versions", "monitoring.coreos.com/v1"});
  YAML::Node waiting = Find(tuned, "PrometheusRule")["spec"]["groups"][0]["rules"][0];
  EXPECT_EQ(waiting["expr"].as<std::string>(""), R"(max(berth_oldest_pending_run_wait_seconds{app="berth"}) > 7200)");
  EXPECT_EQ(Find(RenderDocs("berth", "berth-system",
                            {"--set", "prometheusRule.enabled=true", "--set", "prometheusRule.runsWaitingFor=1h30m", "--api-versions",
                             "monitoring.coreos.com/v1"}),
                 "PrometheusRule")["spec"]["groups"][0]["rules"][0]["expr"]
                .as<std::string>(""),
            R"(max(berth_oldest_pending_run_wait_seconds{job="berth-controller",namespace="berth-system"}) > 5400)");
  EXPECT_EQ(Promtool({"check", "rules", RuleFile(tuned)}).exit_code, 0);
}

// ---- the Dockerfile ---------------------------------------------------------------------------

// The binaries the image ships: berth-controller, and kubectl-berth when the build tree has it.
std::vector<std::string> ImageBinaries() {
  std::string controller = BERTH_CONTROLLER_BIN;
  std::vector<std::string> out = {controller};
  std::string plugin = fs::path(controller).parent_path().parent_path() / "cli" / "kubectl-berth";
  if (fs::exists(plugin)) out.push_back(plugin);
  return out;
}

CommandResult CheckImageLibs(const std::string& dockerfile) {
  std::vector<std::string> argv = {"bash", kSource + "/hack/check-image-libs.sh", "--dockerfile", dockerfile};
  for (const auto& b : ImageBinaries()) argv.push_back(b);
  return RunCommand(argv);
}

std::string WriteVariant(const std::string& name, const std::string& from, const std::string& to) {
  std::string text = ReadFile(kSource + "/Dockerfile");
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "Dockerfile has no \"" << from << "\"";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  std::string path = ControlPlane::Get().dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(DockerImage, RuntimeStageProvidesEveryLibraryOfTheBuiltController) {
  CommandResult r = CheckImageLibs(kSource + "/Dockerfile");
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("libcpprest.so.2.10 <- libcpprest2.10"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ENTRYPOINT /usr/local/bin/berth-controller"), std::string::npos) << r.out;
  if (ImageBinaries().size() > 1) {
    EXPECT_NE(r.out.find("kubectl-berth: libcpprest.so.2.10 <- libcpprest2.10"), std::string::npos) << r.out;
  }
}

TEST(DockerImage, CheckFailsWhenANeededRuntimePackageIsMissing) {
  // libyaml-cpp0.7 is needed by the binary (kubeconfig parsing) and no other runtime package pulls it in.
  std::string path = WriteVariant("Dockerfile.no-yaml", "libyaml-cpp0.7 ", "");
  CommandResult r = CheckImageLibs(path);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("needs libyaml-cpp.so.0.7 from package libyaml-cpp0.7"), std::string::npos) << r.err;
}

TEST(DockerImage, CheckFailsForRootUserAnotherEntrypointAMissingBuildPackageOrAnUnknownPackage) {
  CommandResult root = CheckImageLibs(WriteVariant("Dockerfile.root", "USER 65532:65532", "USER root"));
  EXPECT_EQ(root.exit_code, 1);
  EXPECT_NE(root.err.find("USER is \"root\""), std::string::npos) << root.err;
  CommandResult zero = CheckImageLibs(WriteVariant("Dockerfile.zero", "USER 65532:65532", "USER 0:0"));
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_NE(zero.err.find("which is root"), std::string::npos) << zero.err;
  CommandResult entry = CheckImageLibs(
      WriteVariant("Dockerfile.sh", R"(ENTRYPOINT ["/usr/local/bin/berth-controller"])", R"(ENTRYPOINT ["/bin/sh"])"));
  EXPECT_EQ(entry.exit_code, 1);
  EXPECT_NE(entry.err.find("not berth-controller"), std::string::npos) << entry.err;
  CommandResult no_dev = CheckImageLibs(WriteVariant("Dockerfile.no-dev", "libyaml-cpp-dev ", ""));
  EXPECT_EQ(no_dev.exit_code, 1);
  EXPECT_NE(no_dev.err.find("build stage does not install libyaml-cpp-dev"), std::string::npos) << no_dev.err;
  CommandResult typo = CheckImageLibs(WriteVariant("Dockerfile.typo", "libfmt9", "libfmt99"));
  EXPECT_EQ(typo.exit_code, 1);
  EXPECT_NE(typo.err.find("package libfmt99, which Debian 12's archive does not have"), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace berth::testing
