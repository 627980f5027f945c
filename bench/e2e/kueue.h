#pragma once
// Kueue (sigs.k8s.io/kueue, built by hack/build-kube.sh kueue) as a benchmark anchor: the text of
// what the benchmark applies to a fresh control plane before it starts the kueue process. Pure
// (strings in, strings out); the driver (e2e_bench.cc) does the I/O.
//
// How Kueue is run, and why (docs/performance.md "Kueue beside berth"):
// - as a process on this machine, like berth's controller in these benchmarks, against the same
//   API server; its webhooks are registered by URL (https://127.0.0.1:PORT/...) with a serving
//   certificate the benchmark makes, as cert-manager would hand it one. Kueue's internal
//   certificate management writes its certificate into a Secret that a Pod mounts; a process has
//   no such mount, so it is off (internalCertManagement.enable: false); Kueue then reads its
//   metrics certificate from the fixed path /etc/kueue/metrics/certs, where the benchmark copies
//   the same certificate. The on-demand visibility API (an aggregated API server inside kueue
//   whose certificate is read from the fixed path /visibility) is off: no scenario reads it.
// - with the webhooks Kueue's own manifests (config/components/webhook/manifests.yaml of the
//   module) register for the integrations it runs (batch/job) and its own kinds, unchanged but for
//   the client configuration (a URL instead of the in-cluster Service);
// - configured as its docs recommend for one pool of nodes: one ResourceFlavor for the pool, one
//   ClusterQueue whose nominal quota is the pool's capacity, one LocalQueue in the namespace of
//   the jobs; its client unthrottled (clientConnection qps/burst 5000), leader election off (one
//   replica, as every anchor here), everything else at its defaults (groupKindConcurrency as
//   the module's controller_manager_config.yaml).

#include <string>
#include <vector>

namespace berth::bench {

inline constexpr const char* kKueueQueue = "lq";          // the LocalQueue in the jobs' namespace
inline constexpr const char* kKueueClusterQueue = "cq";
inline constexpr const char* kKueueFlavor = "pool";

// Kueue's webhook configurations (the module's manifests.yaml) with only the webhooks whose path
// serves a batch/v1 Job or one of Kueue's own kinds, each pointed at https://127.0.0.1:PORT<path>
// with `ca_bundle_b64`, and the configurations renamed kueue-mutating/kueue-validating. Returns ""
// when the text does not look like the manifests (no webhook kept).
std::string KueueWebhooks(const std::string& manifests, int port, const std::string& ca_bundle_b64);

struct KueueProcessConfig {
  int webhook_port = 0, metrics_port = 0, health_port = 0;
  std::string cert_dir;        // tls.crt and tls.key
  bool wait_for_pods_ready = false;  // gangs: all-or-nothing admission (waitForPodsReady)
};

// The Configuration file (config.kueue.x-k8s.io/v1beta2) kueue runs with.
std::string KueueConfiguration(const KueueProcessConfig& c);

// The settings of KueueConfiguration that differ from Kueue's defaults, for the results table.
std::string KueueFlags(const KueueProcessConfig& c);

inline constexpr const char* kKueueTopology = "zones";

struct KueueQueueSpec {
  std::string pool, ns;
  long long cpu = 0, memory_gi = 0, gpus = 0;  // the ClusterQueue's nominal quota
  bool preempt_lower_priority = false;  // preemption.withinClusterQueue: LowerPriority
  // Non-empty: Topology-Aware Scheduling (Kueue's way to keep a gang in one domain): a Topology
  // kKueueTopology with levels [this node label, kubernetes.io/hostname] on the flavor.
  std::string topology_label = {};
  // Appended to the names of the flavor, the ClusterQueue and the LocalQueue (several queues).
  std::string suffix = {};
  bool priority_classes = true;  // the WorkloadPriorityClasses too (once per cluster)
  // Non-empty (issue 48): the Topology's levels, outermost first, then kubernetes.io/hostname
  // (in place of topology_label).
  std::vector<std::string> topology_levels = {};
};

// ResourceFlavor kKueueFlavor (nodes labelled pool=POOL; with the Topology when asked),
// ClusterQueue kKueueClusterQueue with the spec's nominal quota (cpu, memory, nvidia.com/gpu) and
// preemption, LocalQueue kKueueQueue in `ns`, and WorkloadPriorityClasses low (10), normal (50),
// high (90) and top (100).
std::string KueueQueues(const KueueQueueSpec& spec);

// The same with a quota of the pool's capacity, no preemption, no topology.
std::string KueueQueues(const std::string& pool, const std::string& ns, long long cpu, long long memory_gi,
                        long long gpus);

// A batch/v1 Job for Kueue's LocalQueue (kueue.x-k8s.io/queue-name): `parallelism` = completions
// Pods of `pod_spec` (a JSON PodSpec), optionally with a WorkloadPriorityClass and a required
// topology level for its Pods (annotation kueue.x-k8s.io/podset-required-topology: all in one
// domain of that node label).
// `indexed`: completionMode Indexed (the gangs scenario's Indexed Jobs).
std::string KueueJob(const std::string& name, const std::string& pod_spec, int parallelism = 1,
                     const std::string& priority_class = {}, const std::string& required_topology = {},
                     const std::string& queue = kKueueQueue, bool indexed = false);

// The same batch/v1 Job, suspended, for no queue at all: the benchmark's own releaser unsuspends
// it (the floor of any queue that holds Jobs suspended until it admits them; issue 45).
std::string HeldJob(const std::string& name, const std::string& pod_spec);

// The same batch/v1 Job for berth's queue (issue 45): only the labels differ, berth.dev/queue "true"
// in place of kueue.x-k8s.io/queue-name and, when `priority` >= 0, berth.dev/priority in place of
// the WorkloadPriorityClass label. Written suspended as Kueue's is (the chart's
// MutatingAdmissionPolicy would suspend it anyway, and gates its Pods).
std::string BerthJob(const std::string& name, const std::string& pod_spec, int parallelism = 1, int priority = -1,
                     bool indexed = false);

// Issue 48 (bench/e2e/topology.cc): one gang of the topology benchmark's stream, the same to both
// queues: an Indexed Job of `nodes` Pods (parallelism = completions), each Pod a whole 8-GPU node,
// all in one domain of the node label `level` (required) or preferably so (preferred); each Pod
// runs `runtime_s` seconds once Running (kwok's pod-complete stage of bench/e2e/kwok-stages.yaml
// reads the template's kRuntimeAnnotation; berth-kubelet-sim its berth.dev/sim-seconds).
struct TopologyGang {
  std::string name;
  int nodes = 1;
  std::string level;
  bool required = false;
  int runtime_s = 60;
};
inline constexpr const char* kRuntimeAnnotation = "bench.berth.dev/runtime";

// For Kueue: label kueue.x-k8s.io/queue-name kKueueQueue; the Pods' template annotated
// kueue.x-k8s.io/podset-required-topology or podset-preferred-topology: LEVEL (Kueue's TAS).
std::string KueueTopologyJob(const TopologyGang& g, const std::string& pod_spec);

// For berth: labels berth.dev/queue "true" and berth.dev/whole-instances "true" (each Pod on a
// whole instance: a multi-node run), the Job annotated berth.dev/topology-required or
// berth.dev/topology-preferred: LEVEL (an annotation: the key holds a `/`) and, when
// `max_duration_s` > 0, berth.dev/max-duration (the limit its reservation and backfill use).
// The spec, and the template with its runtime annotations, as Kueue's.
std::string BerthTopologyJob(const TopologyGang& g, const std::string& pod_spec, int max_duration_s);

}  // namespace berth::bench
