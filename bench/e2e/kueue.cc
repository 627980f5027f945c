#include "kueue.h"

#include <sstream>

namespace berth::bench {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

size_t Indent(const std::string& line) {
  const size_t n = line.find_first_not_of(' ');
  return n == std::string::npos ? line.size() : n;
}

// Kept: webhooks of batch/v1 Jobs and of Kueue's own kinds (the integrations the benchmark enables).
bool Kept(const std::string& path) {
  return path.find("-batch-v1-job") != std::string::npos || path.find("-kueue-x-k8s-io-") != std::string::npos;
}

// One webhook entry ("- admissionReviewVersions: ..." up to the next entry) with its
// clientConfig.service replaced by url + caBundle; "" when it is not kept.
std::string RewriteEntry(const std::vector<std::string>& entry, int port, const std::string& ca) {
  std::string path;
  for (const std::string& l : entry) {
    const size_t at = l.find("path: ");
    if (at != std::string::npos && Indent(l) == at) path = l.substr(at + 6);
  }
  if (path.empty() || !Kept(path)) return {};
  std::string out;
  for (size_t i = 0; i < entry.size(); ++i) {
    const std::string& l = entry[i];
    if (l.find_first_not_of(' ') != std::string::npos && l.substr(Indent(l)) == "service:") {
      const size_t indent = Indent(l);
      while (i + 1 < entry.size() && Indent(entry[i + 1]) > indent) ++i;
      const std::string pad(indent, ' ');
      out += pad + "url: https://127.0.0.1:" + std::to_string(port) + path + "\n";
      out += pad + "caBundle: " + ca + "\n";
      continue;
    }
    out += l + "\n";
  }
  return out;
}

}  // namespace

std::string KueueWebhooks(const std::string& manifests, int port, const std::string& ca_bundle_b64) {
  std::string out;
  std::vector<std::string> header, entry;
  std::string entries;
  bool in_webhooks = false;
  auto flush_entry = [&] {
    if (!entry.empty()) entries += RewriteEntry(entry, port, ca_bundle_b64);
    entry.clear();
  };
  auto flush_doc = [&] {
    flush_entry();
    if (!entries.empty()) {
      out += "---\n";
      for (const std::string& h : header) out += h + "\n";
      out += "webhooks:\n" + entries;
    }
    header.clear();
    entries.clear();
    in_webhooks = false;
  };
  for (const std::string& l : Lines(manifests)) {
    if (l == "---") {
      flush_doc();
    } else if (!in_webhooks && l == "webhooks:") {
      in_webhooks = true;
    } else if (!in_webhooks) {
      if (l == "  name: mutating-webhook-configuration") {
        header.push_back("  name: kueue-mutating");
      } else if (l == "  name: validating-webhook-configuration") {
        header.push_back("  name: kueue-validating");
      } else {
        header.push_back(l);
      }
    } else {
      if (l.rfind("- ", 0) == 0) flush_entry();
      entry.push_back(l);
    }
  }
  flush_doc();
  return out;
}

std::string KueueConfiguration(const KueueProcessConfig& c) {
  std::string y =
      "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
      "kind: Configuration\n"
      "namespace: kueue-system\n"
      "health:\n"
      "  healthProbeBindAddress: 127.0.0.1:" + std::to_string(c.health_port) + "\n"
      "metrics:\n"
      "  bindAddress: 127.0.0.1:" + std::to_string(c.metrics_port) + "\n"
      "webhook:\n"
      "  host: 127.0.0.1\n"
      "  port: " + std::to_string(c.webhook_port) + "\n"
      "  certDir: " + c.cert_dir + "\n"
      "leaderElection:\n"
      "  leaderElect: false\n"
      "internalCertManagement:\n"
      "  enable: false\n"
      "controller:\n"
      "  groupKindConcurrency:\n"
      "    Job.batch: 5\n"
      "    Pod: 5\n"
      "    Workload.kueue.x-k8s.io: 5\n"
      "    LocalQueue.kueue.x-k8s.io: 1\n"
      "    Cohort.kueue.x-k8s.io: 1\n"
      "    ClusterQueue.kueue.x-k8s.io: 1\n"
      "    ResourceFlavor.kueue.x-k8s.io: 1\n"
      "  cacheSyncTimeout: 900000000000\n"  // 15m (nanoseconds); the default 2m is too short at 100,000 Workloads
      "clientConnection:\n"
      "  qps: 5000\n"
      "  burst: 5000\n"
      "integrations:\n"
      "  frameworks:\n"
      "  - batch/job\n"
      "featureGates:\n"
      "  VisibilityOnDemand: false\n";
  if (c.wait_for_pods_ready) {
    y += "waitForPodsReady:\n"
         "  timeout: 5m\n"
         "  blockAdmission: true\n";
  }
  return y;
}

std::string KueueFlags(const KueueProcessConfig& c) {
  std::string f = "kueue --config (v1beta2 Configuration): clientConnection qps=5000 burst=5000, leaderElect=false, "
                  "internalCertManagement off (webhook by URL), integrations [batch/job], groupKindConcurrency as shipped, "
                  "controller.cacheSyncTimeout 15m, "
                  "featureGates VisibilityOnDemand=false";
  if (c.wait_for_pods_ready) f += ", waitForPodsReady {timeout: 5m, blockAdmission: true}";
  return f;
}

std::string KueueQueues(const KueueQueueSpec& q) {
  const std::string flavor = kKueueFlavor + q.suffix, cq = kKueueClusterQueue + q.suffix, lq = kKueueQueue + q.suffix;
  std::string y;
  std::string flavor_spec = "spec:\n  nodeLabels: {pool: " + q.pool + "}\n";
  std::vector<std::string> levels = q.topology_levels;
  if (levels.empty() && !q.topology_label.empty()) levels = {q.topology_label};
  if (!levels.empty()) {
    y += "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: " + std::string(kKueueTopology) +
         "}\nspec:\n  levels:\n";
    for (const std::string& l : levels) y += "  - nodeLabel: " + l + "\n";
    y += "  - nodeLabel: kubernetes.io/hostname\n---\n";
    flavor_spec += "  topologyName: " + std::string(kKueueTopology) + "\n";
  }
  y += "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: " + flavor + "}\n" +
       flavor_spec +
       "---\n"
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " + cq + "}\n"
       "spec:\n  namespaceSelector: {}\n";
  if (q.preempt_lower_priority) y += "  preemption: {withinClusterQueue: LowerPriority}\n";
  y += "  resourceGroups:\n  - coveredResources: [cpu, memory, nvidia.com/gpu]\n"
       "    flavors:\n    - name: " + flavor + "\n      resources:\n"
       "      - {name: cpu, nominalQuota: \"" + std::to_string(q.cpu) + "\"}\n"
       "      - {name: memory, nominalQuota: " + std::to_string(q.memory_gi) + "Gi}\n"
       "      - {name: nvidia.com/gpu, nominalQuota: \"" + std::to_string(q.gpus) + "\"}\n"
       "---\n"
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: " + lq + ", namespace: " + q.ns +
       "}\nspec:\n  clusterQueue: " + cq + "\n";
  if (!q.priority_classes) return y;
  for (const auto& [name, value] : std::vector<std::pair<std::string, int>>{{"low", 10}, {"normal", 50}, {"high", 90}, {"top", 100}}) {
    y += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: " + name +
         "}\nvalue: " + std::to_string(value) + "\n";
  }
  return y;
}

std::string KueueQueues(const std::string& pool, const std::string& ns, long long cpu, long long memory_gi,
                        long long gpus) {
  return KueueQueues(KueueQueueSpec{.pool = pool, .ns = ns, .cpu = cpu, .memory_gi = memory_gi, .gpus = gpus});
}

namespace {

// A Job of `parallelism` = completions Pods of `pod_spec`, suspended, no retries; `labels` its
// labels as JSON members, `template_meta` its template's metadata member (with its comma) or "".
// `annotations`: the Job's annotations as JSON members ("" for none).
std::string JobBody(const std::string& name, const std::string& labels, const std::string& pod_spec, int parallelism,
                    const std::string& template_meta, bool indexed, const std::string& annotations = "") {
  const std::string p = std::to_string(parallelism);
  return R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":")" + name + R"(","labels":{)" + labels + "}" +
         (annotations.empty() ? "" : R"(,"annotations":{)" + annotations + "}") +
         R"(},"spec":{"parallelism":)" + p + R"(,"completions":)" + p + (indexed ? R"(,"completionMode":"Indexed")" : "") +
         R"(,"suspend":true,"backoffLimit":0,"template":{)" + template_meta + R"("spec":)" + pod_spec + "}}}";
}

}  // namespace

std::string KueueJob(const std::string& name, const std::string& pod_spec, int parallelism,
                     const std::string& priority_class, const std::string& required_topology,
                     const std::string& queue, bool indexed) {
  std::string labels = std::string(R"("kueue.x-k8s.io/queue-name":")") + queue + "\"";
  if (!priority_class.empty()) labels += R"(,"kueue.x-k8s.io/priority-class":")" + priority_class + "\"";
  const std::string template_meta =
      required_topology.empty()
          ? std::string()
          : R"("metadata":{"annotations":{"kueue.x-k8s.io/podset-required-topology":")" + required_topology + "\"}},";
  return JobBody(name, labels, pod_spec, parallelism, template_meta, indexed);
}

std::string HeldJob(const std::string& name, const std::string& pod_spec) {
  return JobBody(name, R"("bench.berth.dev/held":"true")", pod_spec, 1, "", false);
}

std::string BerthJob(const std::string& name, const std::string& pod_spec, int parallelism, int priority, bool indexed) {
  std::string labels = R"("berth.dev/queue":"true")";
  if (priority >= 0) labels += R"(,"berth.dev/priority":")" + std::to_string(priority) + "\"";
  return JobBody(name, labels, pod_spec, parallelism, "", indexed);
}

namespace {

std::string Member(const std::string& key, const std::string& value) { return "\"" + key + "\":\"" + value + "\""; }

// The template's metadata member of a topology gang: its runtime for kwok and for
// berth-kubelet-sim, and `more` annotations (JSON members) before them.
std::string GangTemplateMeta(const TopologyGang& g, const std::string& more) {
  return R"("metadata":{"annotations":{)" + more + (more.empty() ? "" : ",") +
         Member(kRuntimeAnnotation, std::to_string(g.runtime_s) + "s") + "," +
         Member("berth.dev/sim-seconds", std::to_string(g.runtime_s)) + "}},";
}

}  // namespace

std::string KueueTopologyJob(const TopologyGang& g, const std::string& pod_spec) {
  const std::string tas = g.required ? "kueue.x-k8s.io/podset-required-topology" : "kueue.x-k8s.io/podset-preferred-topology";
  return JobBody(g.name, Member("kueue.x-k8s.io/queue-name", kKueueQueue), pod_spec, g.nodes,
                 GangTemplateMeta(g, Member(tas, g.level)), /*indexed=*/true);
}

std::string BerthTopologyJob(const TopologyGang& g, const std::string& pod_spec, int max_duration_s) {
  std::string annotations = Member(g.required ? "berth.dev/topology-required" : "berth.dev/topology-preferred", g.level);
  if (max_duration_s > 0) annotations += "," + Member("berth.dev/max-duration", std::to_string(max_duration_s) + "s");
  return JobBody(g.name, Member("berth.dev/queue", "true") + "," + Member("berth.dev/whole-instances", "true"), pod_spec,
                 g.nodes, GangTemplateMeta(g, ""), /*indexed=*/true, annotations);
}

}  // namespace berth::bench
