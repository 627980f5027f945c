// Issue 5: the Helm chart deploy/helm/berth, rendered by hack/render-chart.sh (helm cannot be
// installed here) and applied to the real API server; and the Dockerfile's runtime stage checked
// against the built controller by hack/check-image-libs.sh.

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "harness.h"

namespace berth::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSource = BERTH_SOURCE_DIR;
const std::string kChart = kSource + "/deploy/helm/berth";

// hack/render-chart.sh CHART RELEASE NAMESPACE args...
CommandResult Render(const std::string& release, const std::string& ns, const std::vector<std::string>& args = {}) {
  std::vector<std::string> argv = {"bash", kSource + "/hack/render-chart.sh", kChart, release, ns};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
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

class HelmChart : public IntegrationTest {
 protected:
  std::vector<YAML::Node> RenderDocs(const std::string& release, const std::string& ns,
                                     const std::vector<std::string>& args = {}) {
    CommandResult r = Render(release, ns, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Documents(r.out);
  }
};

TEST_F(HelmChart, DefaultsRenderEveryObjectCrdsFirstInHelmInstallOrder) {
  auto docs = RenderDocs("berth", "berth-system");
  std::vector<std::string> kinds;
  for (const auto& d : docs) kinds.push_back(Kind(d) + "/" + Name(d));
  std::vector<std::string> want = {"CustomResourceDefinition/fleets.berth.dev", "CustomResourceDefinition/runs.berth.dev",
                                   "NetworkPolicy/berth-controller",
                                   "ServiceAccount/berth-controller",           "Secret/berth-controller-webhook-cert",
                                   "ClusterRole/berth-controller",              "ClusterRoleBinding/berth-controller",
                                   "Role/berth-controller",                     "RoleBinding/berth-controller",
                                   "Service/berth-controller",                  "Deployment/berth-controller",
                                   "MutatingWebhookConfiguration/berth-controller-runs"};
  EXPECT_EQ(kinds, want);
  for (const auto& d : docs) {
    std::string k = Kind(d);
    bool cluster_scoped = k == "CustomResourceDefinition" || k == "ClusterRole" || k == "ClusterRoleBinding" ||
                          k == "MutatingWebhookConfiguration";
    EXPECT_EQ(d["metadata"]["namespace"].as<std::string>(""), cluster_scoped ? "" : "berth-system") << k;
    if (!cluster_scoped) {
      EXPECT_EQ(d["metadata"]["labels"]["app.kubernetes.io/managed-by"].as<std::string>(""), "Helm") << k;
      EXPECT_EQ(d["metadata"]["labels"]["app.kubernetes.io/instance"].as<std::string>(""), "berth") << k;
    }
  }
  EXPECT_FALSE(Find(docs, "Namespace").IsMap()) << "the namespace belongs to helm --namespace/--create-namespace";
  EXPECT_FALSE(Find(docs, "ServiceMonitor").IsMap()) << "the ServiceMonitor is off by default";
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
                                        "--leader-election-renew-deadline=10s",
                                        "--leader-election-retry-period=2s",
                                        "--metrics-bind-address=:8080",
                                        "--health-probe-bind-address=:8081",
                                        "--http-read-timeout=10s",
                                        "--aging-interval=15m",
                                        "--log-format=json",
                                        "--log-level=info",
                                        "--webhook-bind-address=:9443",
                                        "--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs"};
  EXPECT_EQ(Strings(c["args"]), want_args);
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
      "|pods|create,delete,list,watch",
      "|pods/binding|create",
      "|nodes|list,watch",
      "|services|create,delete",
      "|events|create",
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
  };
  EXPECT_EQ(Rules(role), want_role);

  for (const char* kind : {"ClusterRoleBinding", "RoleBinding"}) {
    YAML::Node b = Find(docs, kind);
    ASSERT_TRUE(b.IsMap()) << kind;
    EXPECT_EQ(b["roleRef"]["kind"].as<std::string>(), std::string(kind) == "RoleBinding" ? "Role" : "ClusterRole");
    EXPECT_EQ(b["roleRef"]["name"].as<std::string>(), "berth-controller");
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
  CommandResult r = Render("berth", "berth-system");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& f : deploy) {
    EXPECT_NE(r.out.find("# Source: berth/crds/" + f + "\n" + ReadFile(kSource + "/deploy/crds/" + f)), std::string::npos) << f;
  }
  CommandResult skip = Render("berth", "berth-system", {"--skip-crds"});
  ASSERT_EQ(skip.exit_code, 0) << skip.err;
  EXPECT_FALSE(Find(Documents(skip.out), "CustomResourceDefinition").IsMap());
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
                          "--set", "leaderElection.leaseDuration=30s,leaderElection.renewDeadline=20s",
                          "--set", "leaderElection.retryPeriod=4s", "--set", "serviceMonitor.enabled=true",
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
                           "--leader-election-lease-duration=30s", "--leader-election-renew-deadline=20s",
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
  ASSERT_EQ(rules.size(), 3u);
  ASSERT_TRUE(rules.count(8080) && rules.count(8081) && rules.count(9443));
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
  struct Case {
    std::string set, message;
  } cases[] = {
      {"logFormat=xml", "logFormat must be json or text"},
      {"logLevel=loud", "logLevel must be debug, info, warn or error"},
      {"image.repository=", "image.repository is required"},
      {"replicas=0", "replicas must be at least 1"},
      {"bindAddress.metrics=8080", "bindAddress.metrics must be HOST:PORT or :PORT"},
      {"bindAddress.webhook=:94a3", "bindAddress.webhook must be HOST:PORT or :PORT"},
      {"bindAddress.probes=127.0.0.1:8081", "bindAddress.probes must be reachable on the Pod IP"},
      {"networkPolicy.apiServerFrom=null", "networkPolicy.apiServerFrom must list the API server's addresses"},
  };
  for (const auto& c : cases) {
    CommandResult r = Render("berth", "berth-system", {"--set", c.set});
    EXPECT_NE(r.exit_code, 0) << c.set;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.set << ": " << r.err;
  }
  CommandResult old_kube = Render("berth", "berth-system", {"--kube-version", "v1.19.0"});
  EXPECT_NE(old_kube.exit_code, 0) << "Chart.yaml's kubeVersion is >=1.20";
  EXPECT_NE(old_kube.err.find("incompatible with Kubernetes v1.19.0"), std::string::npos) << old_kube.err;
  CommandResult bad = Render("berth", "berth-system", {"--set", "novalue"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("novalue"), std::string::npos) << bad.err;
}

TEST_F(HelmChart, RenderedChartIsAppliedToTheApiServer) {
  // A release per test namespace: cluster-scoped names (ClusterRole, Binding) stay unique.
  std::string release = "berth-" + ns_;
  std::string full = release + "-controller";
  CommandResult r = Render(release, ns_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult applied = cp().Kubectl({"apply", "-f", "-"}, r.out);
  ASSERT_EQ(applied.exit_code, 0) << applied.err << applied.out;
  for (const std::string& obj : {"serviceaccount/" + full, "role/" + full, "rolebinding/" + full, "service/" + full,
                                 "deployment/" + full}) {
    CommandResult got = Kubectl({"get", obj, "-o", "name"});
    EXPECT_EQ(got.exit_code, 0) << obj << ": " << got.err;
  }
  for (const std::string& obj : std::vector<std::string>{"clusterrole/" + full, "clusterrolebinding/" + full,
                                                        "crd/runs.berth.dev", "crd/fleets.berth.dev"}) {
    CommandResult got = cp().Kubectl({"get", obj, "-o", "name"});
    EXPECT_EQ(got.exit_code, 0) << obj << ": " << got.err;
  }
  // The server kept every hardening field (none was dropped as unknown to Kubernetes 1.20).
  CommandResult dep = Kubectl({"get", "deployment", full, "-o", "yaml"});
  ASSERT_EQ(dep.exit_code, 0) << dep.err;
  YAML::Node d = YAML::Load(dep.out);
  EXPECT_EQ(d["spec"]["replicas"].as<int>(), 2);
  YAML::Node sc = Container(d)["securityContext"];
  EXPECT_EQ(sc["seccompProfile"]["type"].as<std::string>(""), "RuntimeDefault");
  EXPECT_TRUE(sc["readOnlyRootFilesystem"].as<bool>(false));
  EXPECT_FALSE(sc["allowPrivilegeEscalation"].as<bool>(true));
  EXPECT_EQ(Strings(sc["capabilities"]["drop"]), std::vector<std::string>{"ALL"});
  EXPECT_EQ(d["spec"]["template"]["spec"]["securityContext"]["runAsUser"].as<int>(0), 65532);
  EXPECT_EQ(Container(d)["readinessProbe"]["httpGet"]["path"].as<std::string>(""), "/readyz");
  // Applying again (an upgrade with the same values) changes nothing. kubectl 1.32 reports its
  // no-op patch of the MutatingWebhookConfiguration as "configured" against this 1.20 server, so
  // that object is checked by its resourceVersion instead.
  auto mwc_rv = [&] {
    return cp().Kubectl({"get", "mutatingwebhookconfiguration", full + "-runs", "-o", "jsonpath={.metadata.resourceVersion}"}).out;
  };
  std::string rv_before = mwc_rv();
  ASSERT_FALSE(rv_before.empty());
  CommandResult again = cp().Kubectl({"apply", "-f", "-"}, r.out);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  std::istringstream lines(again.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("mutatingwebhookconfiguration") != std::string::npos) continue;
    EXPECT_EQ(line.find("configured"), std::string::npos) << line;
  }
  EXPECT_EQ(mwc_rv(), rv_before);
  cp().Kubectl({"delete", "mutatingwebhookconfiguration", full + "-runs", "--wait=false"});

  cp().Kubectl({"delete", "clusterrolebinding", full, "--wait=false"});
  cp().Kubectl({"delete", "clusterrole", full, "--wait=false"});
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
