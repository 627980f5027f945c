// Issue 5: the Helm chart deploy/helm/berth, rendered by hack/render-chart.sh (helm cannot be
// installed here) and applied to the real API server; and the Dockerfile's runtime stage checked
// against the built controller by hack/check-image-libs.sh. Issue 18: upgrades keep the webhook's
// certificate (lookup, or cert-manager), releases in two namespaces do not collide,
// values.schema.json, NOTES.txt, and the optional Grafana dashboard and PrometheusRule alerts
// (checked with promtool and against the metric families berth exports).

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
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
                                   "ServiceAccount/berth-controller",
                                   "Secret/berth-controller-webhook-cert",
                                   "ClusterRole/berth-controller.berth-system",
                                   "ClusterRoleBinding/berth-controller.berth-system",
                                   "Role/berth-controller",
                                   "RoleBinding/berth-controller",
                                   "Service/berth-controller",
                                   "Deployment/berth-controller",
                                   "MutatingWebhookConfiguration/berth-controller-runs.berth-system"};
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
      "|namespaces|get,list,watch",
      "|resourcequotas|list,watch",
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
  // Where the cluster does not serve prometheus-operator's API, no ServiceMonitor (it could not be
  // applied), and NOTES.txt says why.
  EXPECT_FALSE(Find(RenderDocs("prod", "queues", {"--set", "serviceMonitor.enabled=true"}), "ServiceMonitor").IsMap());
  CommandResult notes = Render("prod", "queues", {"--set", "serviceMonitor.enabled=true", "--notes-only"});
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
      {"logFormat=xml", "- logFormat: logFormat must be one of the following: \"json\", \"text\""},
      {"logLevel=loud", "- logLevel: logLevel must be one of the following: \"debug\", \"info\", \"warn\", \"error\""},
      {"image.repository=", "image.repository is required"},
      {"replicas=0", "- replicas: Must be greater than or equal to 1"},
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
  std::string release = "berth-" + ns_;
  std::string full = release + "-controller";
  std::string cluster_name = full + "." + ns_;
  CommandResult r = Render(release, ns_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult applied = cp().Kubectl({"apply", "-f", "-"}, r.out);
  ASSERT_EQ(applied.exit_code, 0) << applied.err << applied.out;
  for (const std::string& obj : {"serviceaccount/" + full, "role/" + full, "rolebinding/" + full, "service/" + full,
                                 "deployment/" + full, "secret/" + full + "-webhook-cert"}) {
    CommandResult got = Kubectl({"get", obj, "-o", "name"});
    EXPECT_EQ(got.exit_code, 0) << obj << ": " << got.err;
  }
  for (const std::string& obj : std::vector<std::string>{"clusterrole/" + cluster_name, "clusterrolebinding/" + cluster_name,
                                                        "mutatingwebhookconfiguration/" + full + "-runs." + ns_,
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

  // An upgrade with the same values, rendered the way `helm upgrade` renders it: lookup finds the
  // Secret the cluster holds, so the certificate and CA are written back unchanged and applying
  // changes nothing. kubectl 1.32 reports its no-op patch of the MutatingWebhookConfiguration as
  // "configured" against this 1.20 server, so that object is checked by its resourceVersion.
  CommandResult secret = Kubectl({"get", "secret", full + "-webhook-cert", "-o", "yaml"});
  ASSERT_EQ(secret.exit_code, 0) << secret.err;
  std::string fixture = cp().dir() + "/lookup-" + ns_ + ".yaml";
  std::ofstream(fixture) << secret.out;
  CommandResult upgrade = Render(release, ns_, {"--is-upgrade", "--lookup-objects", fixture});
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.err;
  auto mwc_rv = [&] {
    return cp().Kubectl({"get", "mutatingwebhookconfiguration", full + "-runs." + ns_, "-o", "jsonpath={.metadata.resourceVersion}"}).out;
  };
  std::string rv_before = mwc_rv();
  ASSERT_FALSE(rv_before.empty());
  CommandResult again = cp().Kubectl({"apply", "-f", "-"}, upgrade.out);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("secret/" + full + "-webhook-cert unchanged"), std::string::npos) << again.out;
  std::istringstream lines(again.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("mutatingwebhookconfiguration") != std::string::npos) continue;
    EXPECT_EQ(line.find("configured"), std::string::npos) << line;
  }
  EXPECT_EQ(mwc_rv(), rv_before);
  cp().Kubectl({"delete", "mutatingwebhookconfiguration", full + "-runs." + ns_, "--wait=false"});
  cp().Kubectl({"delete", "clusterrolebinding", cluster_name, "--wait=false"});
  cp().Kubectl({"delete", "clusterrole", cluster_name, "--wait=false"});
}

// ---- upgrades, two releases, values.schema.json, NOTES.txt (issue 18) ------------------------

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

TEST_F(HelmChart, UpgradeWithTheExistingSecretKeepsTheWebhookCertificateAndCa) {
  CommandResult install = Render("berth", "berth-system");
  ASSERT_EQ(install.exit_code, 0) << install.err;
  auto docs = Documents(install.out);
  YAML::Node secret = Find(docs, "Secret");
  YAML::Node mwc = Find(docs, "MutatingWebhookConfiguration");
  ASSERT_TRUE(secret.IsMap() && mwc.IsMap());
  std::string ca = secret["data"]["ca.crt"].as<std::string>(""), crt = secret["data"]["tls.crt"].as<std::string>(""),
              key = secret["data"]["tls.key"].as<std::string>("");
  ASSERT_FALSE(ca.empty() || crt.empty() || key.empty()) << YAML::Dump(secret);
  EXPECT_EQ(mwc["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>(""), ca)
      << "the API server trusts the CA kept in the Secret";
  // The serving certificate is signed by that CA and names the Service.
  std::string ca_pem = DecodeTo("ca.crt", ca), crt_pem = DecodeTo("tls.crt", crt);
  CommandResult verify = RunCommand({"openssl", "verify", "-CAfile", ca_pem, crt_pem});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  CommandResult san = RunCommand({"openssl", "x509", "-in", crt_pem, "-noout", "-ext", "subjectAltName"});
  EXPECT_NE(san.out.find("DNS:berth-controller.berth-system.svc"), std::string::npos) << san.out << san.err;

  // helm upgrade: .Release.IsUpgrade, and lookup finds the Secret of the install (here the whole
  // first render stands for the cluster).
  std::string fixture = WriteTemp("install.yaml", install.out);
  CommandResult upgrade = Render("berth", "berth-system", {"--is-upgrade", "--lookup-objects", fixture});
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.err;
  auto up = Documents(upgrade.out);
  YAML::Node up_secret = Find(up, "Secret");
  ASSERT_TRUE(up_secret.IsMap());
  EXPECT_EQ(up_secret["data"]["ca.crt"].as<std::string>(""), ca) << "the CA rotated on upgrade";
  EXPECT_EQ(up_secret["data"]["tls.crt"].as<std::string>(""), crt) << "the serving certificate rotated on upgrade";
  EXPECT_EQ(up_secret["data"]["tls.key"].as<std::string>(""), key);
  EXPECT_EQ(Find(up, "MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>(""), ca);
  CommandResult notes = Render("berth", "berth-system", {"--is-upgrade", "--lookup-objects", fixture, "--notes-only"});
  EXPECT_NE(notes.out.find("berth 0.1.0 is upgraded as berth-controller in berth-system."), std::string::npos) << notes.out;

  // Without the Secret (helm template, or a first install) a new pair is made: the fixture is
  // what keeps the certificate.
  auto fresh = Documents(Render("berth", "berth-system", {"--is-upgrade"}).out);
  EXPECT_NE(Find(fresh, "Secret")["data"]["tls.crt"].as<std::string>(""), crt);
  // A Secret of another release or namespace is not taken.
  auto other_ns = Documents(Render("berth", "other", {"--is-upgrade", "--lookup-objects", fixture}).out);
  EXPECT_NE(Find(other_ns, "Secret")["data"]["tls.crt"].as<std::string>(""), crt);
  // An upgrade from chart 0.1.0: its Secret has no ca.crt, and its webhook configuration (named
  // "<fullname>-runs" then) holds the CA. Both are kept.
  YAML::Node old_secret = YAML::Clone(secret);
  old_secret["data"].remove("ca.crt");
  YAML::Node old_mwc = YAML::Clone(mwc);
  old_mwc["metadata"]["name"] = "berth-controller-runs";
  std::string old_release = WriteTemp("old-release.yaml", YAML::Dump(old_secret) + "\n---\n" + YAML::Dump(old_mwc));
  auto from_old = Documents(Render("berth", "berth-system", {"--is-upgrade", "--lookup-objects", old_release}).out);
  EXPECT_EQ(Find(from_old, "Secret")["data"]["tls.crt"].as<std::string>(""), crt);
  EXPECT_EQ(Find(from_old, "Secret")["data"]["ca.crt"].as<std::string>(""), ca);
  EXPECT_EQ(Find(from_old, "MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>(""), ca);
  // Without the CA anywhere, the old pair cannot be trusted: a complete new pair.
  auto no_ca = Documents(Render("berth", "berth-system",
                                {"--is-upgrade", "--lookup-objects", WriteTemp("old-secret.yaml", YAML::Dump(old_secret))})
                             .out);
  YAML::Node renewed = Find(no_ca, "Secret");
  EXPECT_NE(renewed["data"]["tls.crt"].as<std::string>(""), crt);
  EXPECT_FALSE(renewed["data"]["ca.crt"].as<std::string>("").empty());
  EXPECT_EQ(Find(no_ca, "MutatingWebhookConfiguration")["webhooks"][0]["clientConfig"]["caBundle"].as<std::string>(""),
            renewed["data"]["ca.crt"].as<std::string>(""));
}

TEST_F(HelmChart, CertManagerIssuesTheWebhookCertificateAndInjectsTheCa) {
  CommandResult no_api = Render("berth", "berth-system", {"--set", "webhook.certManager.enabled=true"});
  EXPECT_NE(no_api.exit_code, 0) << "cert-manager enabled where its API is not served";
  EXPECT_NE(no_api.err.find("webhook.certManager.enabled needs cert-manager"), std::string::npos) << no_api.err;

  auto docs = RenderDocs("berth", "berth-system",
                         {"--set", "webhook.certManager.enabled=true", "--api-versions", "cert-manager.io/v1"});
  EXPECT_FALSE(Find(docs, "Secret").IsMap()) << "cert-manager writes the Secret, the chart does not";
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
         kind == "MutatingWebhookConfiguration";
}

TEST_F(HelmChart, ReleasesOfOneNameInTwoNamespacesDoNotCollide) {
  std::string ns_b = ns_ + "-b";
  ASSERT_TRUE(client()
                  ->Create(k8s::resources::kNamespaces.Path(),
                           R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns_b + R"("}})")
                  .ok());
  std::set<std::string> names_a, names_b;
  std::string out_a, out_b;
  for (auto [ns, names, out] : {std::tuple{ns_, &names_a, &out_a}, std::tuple{ns_b, &names_b, &out_b}}) {
    CommandResult r = Render("berth", ns, {"--skip-crds"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    *out = r.out;
    for (const auto& d : Documents(r.out)) {
      if (ClusterScoped(Kind(d))) names->insert(Kind(d) + "/" + Name(d));
    }
  }
  ASSERT_EQ(names_a.size(), 3u);  // ClusterRole, ClusterRoleBinding, MutatingWebhookConfiguration
  ASSERT_EQ(names_b.size(), 3u);
  for (const auto& n : names_a) EXPECT_EQ(names_b.count(n), 0u) << n << " is in both releases";

  // Both apply (the CRDs are the chart's crds/, shared by both releases), and each release's
  // ClusterRoleBinding still binds its own ServiceAccount.
  ASSERT_EQ(cp().Kubectl({"apply", "-f", kChart + "/crds/"}).exit_code, 0);
  for (const std::string* out : {&out_a, &out_b}) {
    CommandResult applied = cp().Kubectl({"apply", "-f", "-"}, *out);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    EXPECT_EQ(applied.out.find("configured"), std::string::npos) << "the second release changed the first's objects:\n"
                                                                  << applied.out;
  }
  for (const auto& ns : {ns_, ns_b}) {
    CommandResult crb = cp().Kubectl({"get", "clusterrolebinding", "berth-controller." + ns, "-o",
                                      "jsonpath={.subjects[0].namespace}/{.subjects[0].name} {.roleRef.name}"});
    EXPECT_EQ(crb.out, ns + "/berth-controller berth-controller." + ns) << crb.err;
    CommandResult mwc = cp().Kubectl({"get", "mutatingwebhookconfiguration", "berth-controller-runs." + ns, "-o",
                                      "jsonpath={.webhooks[0].clientConfig.service.namespace}"});
    EXPECT_EQ(mwc.out, ns) << mwc.err;
  }
  for (const auto& ns : {ns_, ns_b}) {
    cp().Kubectl({"delete", "mutatingwebhookconfiguration", "berth-controller-runs." + ns, "--wait=false"});
    cp().Kubectl({"delete", "clusterrolebinding", "berth-controller." + ns, "--wait=false"});
    cp().Kubectl({"delete", "clusterrole", "berth-controller." + ns, "--wait=false"});
  }
  (void)client()->Delete(k8s::resources::kNamespaces.Path("", ns_b));
}

TEST_F(HelmChart, ValuesSchemaRefusesUnknownKeysAndWrongTypesNamingThePath) {
  CommandResult defaults = Render("berth", "berth-system");
  EXPECT_EQ(defaults.exit_code, 0) << "the chart's own defaults pass its schema: " << defaults.err;

  CommandResult typo = Render("berth", "berth-system", {"--set", "replica=3"});
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_TRUE(typo.out.empty()) << "nothing is rendered";
  EXPECT_NE(typo.err.find("values don't meet the specifications of the schema(s) in the following chart(s):\nberth:\n"
                          "- (root): Additional property replica is not allowed"),
            std::string::npos)
      << typo.err;

  std::string values = WriteTemp("bad-values.yaml", "webhook:\n  enabled: \"false\"\n");
  for (const auto& args : std::vector<std::vector<std::string>>{{"--set-string", "webhook.enabled=false"}, {"-f", values}}) {
    CommandResult wrong = Render("berth", "berth-system", args);
    EXPECT_NE(wrong.exit_code, 0) << args[0];
    EXPECT_NE(wrong.err.find("- webhook.enabled: Invalid type. Expected: boolean, given: string"), std::string::npos)
        << args[0] << ": " << wrong.err;
  }
  // Nested typos too (additionalProperties: false below the top level).
  CommandResult nested = Render("berth", "berth-system", {"--set", "networkPolicy.enable=false"});
  EXPECT_NE(nested.exit_code, 0);
  EXPECT_NE(nested.err.find("- networkPolicy: Additional property enable is not allowed"), std::string::npos) << nested.err;
  // Every error is listed, not just the first.
  CommandResult two = Render("berth", "berth-system", {"--set", "replica=3,service.port=http"});
  EXPECT_NE(two.err.find("Additional property replica"), std::string::npos) << two.err;
  EXPECT_NE(two.err.find("- service.port: Invalid type. Expected: integer, given: string"), std::string::npos) << two.err;
}

TEST_F(HelmChart, SetStringIsAppliedAfterEverySetWhateverTheOrderAsHelmDoes) {
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
  CommandResult notes = Render(release, ns_, {"--notes-only"});
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
  m.OnPass(pass);
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
