#include "kueue.h"

#include <gtest/gtest.h>

#include <string>

namespace berth::bench {
namespace {

// The shape of Kueue's config/components/webhook/manifests.yaml (kustomize output), cut down: one
// webhook the benchmark keeps in each configuration and one it leaves out.
const char* const kManifests = R"(---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-batch-v1-job
  failurePolicy: Fail
  name: mjob.kb.io
  rules:
  - apiGroups:
    - batch
    operations:
    - CREATE
    resources:
    - jobs
  sideEffects: None
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate--v1-pod
  failurePolicy: Fail
  name: mpod.kb.io
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-apps-v1-deployment
  name: vdeployment.kb.io
  sideEffects: None
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /validate-kueue-x-k8s-io-v1beta2-clusterqueue
  failurePolicy: Fail
  name: vclusterqueue.kb.io
  sideEffects: None
)";

TEST(KueueWebhooksTest, KeepsJobAndKueueWebhooksPointedAtTheProcess) {
  const std::string out = KueueWebhooks(kManifests, 9443, "Q0E=");
  EXPECT_NE(out.find("  name: kueue-mutating\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  name: kueue-validating\n"), std::string::npos) << out;
  EXPECT_NE(out.find("    url: https://127.0.0.1:9443/mutate-batch-v1-job\n    caBundle: Q0E=\n"), std::string::npos) << out;
  EXPECT_NE(out.find("    url: https://127.0.0.1:9443/validate-kueue-x-k8s-io-v1beta2-clusterqueue\n"), std::string::npos) << out;
  EXPECT_NE(out.find("  name: mjob.kb.io\n  rules:\n  - apiGroups:\n    - batch\n"), std::string::npos) << "rules kept: " << out;
  // Webhooks of integrations kueue does not run here would answer 404: left out.
  EXPECT_EQ(out.find("mpod.kb.io"), std::string::npos) << out;
  EXPECT_EQ(out.find("vdeployment.kb.io"), std::string::npos) << out;
  EXPECT_EQ(out.find("service:"), std::string::npos) << out;
  EXPECT_EQ(out.find("webhook-service"), std::string::npos) << out;
}

TEST(KueueWebhooksTest, SomethingElseGivesNothing) {
  EXPECT_EQ(KueueWebhooks("apiVersion: v1\nkind: ConfigMap\n", 1, "x"), "");
  EXPECT_EQ(KueueWebhooks("", 1, "x"), "");
}

TEST(KueueObjectsTest, QueueAndJobAsKueuesDocsWriteThem) {
  const std::string q = KueueQueues("gpu", "bench", 32000, 256000, 4000);
  EXPECT_NE(q.find("kind: ResourceFlavor\nmetadata: {name: pool}\nspec:\n  nodeLabels: {pool: gpu}\n"), std::string::npos) << q;
  EXPECT_NE(q.find("{name: nvidia.com/gpu, nominalQuota: \"4000\"}"), std::string::npos) << q;
  EXPECT_NE(q.find("{name: memory, nominalQuota: 256000Gi}"), std::string::npos) << q;
  EXPECT_NE(q.find("kind: LocalQueue\nmetadata: {name: lq, namespace: bench}\nspec:\n  clusterQueue: cq\n"), std::string::npos) << q;
  EXPECT_NE(q.find("kind: WorkloadPriorityClass\nmetadata: {name: high}\nvalue: 90\n"), std::string::npos) << q;
  const std::string j = KueueJob("j1", R"({"containers":[]})", 4, "high");
  EXPECT_EQ(j, R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j1","labels":{"kueue.x-k8s.io/queue-name":"lq",)"
               R"("kueue.x-k8s.io/priority-class":"high"}},"spec":{"parallelism":4,"completions":4,"suspend":true,)"
               R"("backoffLimit":0,"template":{"spec":{"containers":[]}}}})");
}

// Issue 45: berth's Job path gets the same manifest as Kueue's; only the queue and priority labels differ.
TEST(KueueObjectsTest, BerthJobIsKueuesJobButForTheLabels) {
  const std::string pod = R"({"containers":[]})";
  const std::string k = KueueJob("g1", pod, 4, "low", "", kKueueQueue, /*indexed=*/true);
  const std::string b = BerthJob("g1", pod, 4, 10, /*indexed=*/true);
  EXPECT_EQ(b, R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"g1","labels":{"berth.dev/queue":"true",)"
               R"("berth.dev/priority":"10"}},"spec":{"parallelism":4,"completions":4,"completionMode":"Indexed",)"
               R"("suspend":true,"backoffLimit":0,"template":{"spec":{"containers":[]}}}})");
  EXPECT_EQ(k.substr(k.find(R"(}},"spec":)")), b.substr(b.find(R"(}},"spec":)")));
  EXPECT_EQ(BerthJob("j", pod).find("berth.dev/priority"), std::string::npos);
  EXPECT_EQ(BerthJob("j", pod).find("completionMode"), std::string::npos);
}

TEST(KueueObjectsTest, QuotaPreemptionAndTopologyWhenAsked) {
  KueueQueueSpec spec{.pool = "gpu", .ns = "bench", .cpu = 64, .memory_gi = 512, .gpus = 8, .preempt_lower_priority = true, .topology_label = "zone"};
  const std::string q = KueueQueues(spec);
  EXPECT_NE(q.find("kind: Topology\nmetadata: {name: zones}\nspec:\n  levels:\n  - nodeLabel: zone\n"
                   "  - nodeLabel: kubernetes.io/hostname\n"), std::string::npos) << q;
  EXPECT_NE(q.find("  nodeLabels: {pool: gpu}\n  topologyName: zones\n"), std::string::npos) << q;
  EXPECT_NE(q.find("  preemption: {withinClusterQueue: LowerPriority}\n"), std::string::npos) << q;
  EXPECT_NE(q.find("{name: nvidia.com/gpu, nominalQuota: \"8\"}"), std::string::npos) << q;
  // The defaults: neither preemption nor a Topology.
  const std::string plain = KueueQueues("gpu", "bench", 64, 512, 8);
  EXPECT_EQ(plain.find("preemption"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("Topology"), std::string::npos) << plain;
  // A second queue of other names, without the cluster's priority classes again.
  const std::string small = KueueQueues(KueueQueueSpec{.pool = "small", .ns = "bench", .cpu = 64, .memory_gi = 512, .gpus = 8,
                                                       .suffix = "-small", .priority_classes = false});
  EXPECT_NE(small.find("kind: LocalQueue\nmetadata: {name: lq-small, namespace: bench}\nspec:\n  clusterQueue: cq-small\n"),
            std::string::npos) << small;
  EXPECT_NE(small.find("    flavors:\n    - name: pool-small\n"), std::string::npos) << small;
  EXPECT_EQ(small.find("WorkloadPriorityClass"), std::string::npos) << small;
  EXPECT_NE(KueueJob("s", "{}", 1, "", "", "lq-small").find(R"("kueue.x-k8s.io/queue-name":"lq-small")"), std::string::npos);
  const std::string j = KueueJob("g", R"({"containers":[]})", 2, "", "zone");
  EXPECT_NE(j.find(R"("template":{"metadata":{"annotations":{"kueue.x-k8s.io/podset-required-topology":"zone"}},"spec":)"),
            std::string::npos) << j;
}

// Issue 48: the topology benchmark's Topology of several levels, outermost first, hostname last.
TEST(KueueObjectsTest, TopologyOfSeveralLevels) {
  KueueQueueSpec spec{.pool = "topo", .ns = "bench", .cpu = 64, .memory_gi = 512, .gpus = 8,
                      .topology_levels = {"example.com/spine", "example.com/rack"}};
  const std::string q = KueueQueues(spec);
  EXPECT_NE(q.find("kind: Topology\nmetadata: {name: zones}\nspec:\n  levels:\n  - nodeLabel: example.com/spine\n"
                   "  - nodeLabel: example.com/rack\n  - nodeLabel: kubernetes.io/hostname\n---\n"), std::string::npos) << q;
  EXPECT_NE(q.find("  nodeLabels: {pool: topo}\n  topologyName: zones\n"), std::string::npos) << q;
}

// Issue 48: one gang of the stream to each queue: the same Job spec and template (runtime
// annotations for kwok and berth-kubelet-sim), only the queue's labels and topology annotations
// differ: Kueue's on the template (podset-*-topology), berth's on the Job (with max-duration).
TEST(KueueObjectsTest, TopologyGangTheSameToBothQueuesButTheirLabelsAndAnnotations) {
  const std::string pod = R"({"containers":[]})";
  const TopologyGang g{.name = "g7", .nodes = 16, .level = "example.com/rack", .required = true, .runtime_s = 45};
  const std::string k = KueueTopologyJob(g, pod);
  const std::string b = BerthTopologyJob(g, pod, 60);
  EXPECT_EQ(k, R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"g7","labels":{"kueue.x-k8s.io/queue-name":"lq"}},)"
               R"("spec":{"parallelism":16,"completions":16,"completionMode":"Indexed","suspend":true,"backoffLimit":0,)"
               R"("template":{"metadata":{"annotations":{"kueue.x-k8s.io/podset-required-topology":"example.com/rack",)"
               R"("bench.berth.dev/runtime":"45s","berth.dev/sim-seconds":"45"}},"spec":{"containers":[]}}}})");
  EXPECT_EQ(b, R"({"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"g7","labels":{"berth.dev/queue":"true",)"
               R"("berth.dev/whole-instances":"true"},"annotations":{"berth.dev/topology-required":"example.com/rack",)"
               R"("berth.dev/max-duration":"60s"}},"spec":{"parallelism":16,"completions":16,"completionMode":"Indexed",)"
               R"("suspend":true,"backoffLimit":0,"template":{"metadata":{"annotations":{"bench.berth.dev/runtime":"45s",)"
               R"("berth.dev/sim-seconds":"45"}},"spec":{"containers":[]}}}})");
  TopologyGang p = g;
  p.required = false;
  p.level = "example.com/spine";
  EXPECT_NE(KueueTopologyJob(p, pod).find(R"("kueue.x-k8s.io/podset-preferred-topology":"example.com/spine")"), std::string::npos);
  EXPECT_NE(BerthTopologyJob(p, pod, 0).find(R"("annotations":{"berth.dev/topology-preferred":"example.com/spine"}})"),
            std::string::npos);
  EXPECT_EQ(BerthTopologyJob(p, pod, 0).find("max-duration"), std::string::npos);
}

TEST(KueueConfigurationTest, UnthrottledSingleReplicaWithGangsOnlyWhenAsked) {
  KueueProcessConfig c;
  c.webhook_port = 1;
  c.metrics_port = 2;
  c.health_port = 3;
  c.cert_dir = "/d";
  const std::string y = KueueConfiguration(c);
  EXPECT_NE(y.find("clientConnection:\n  qps: 5000\n  burst: 5000\n"), std::string::npos) << y;
  EXPECT_NE(y.find("leaderElection:\n  leaderElect: false\n"), std::string::npos) << y;
  EXPECT_NE(y.find("  port: 1\n  certDir: /d\n"), std::string::npos) << y;
  EXPECT_EQ(y.find("waitForPodsReady"), std::string::npos) << y;
  c.wait_for_pods_ready = true;
  EXPECT_NE(KueueConfiguration(c).find("waitForPodsReady:\n  timeout: 5m\n  blockAdmission: true\n"), std::string::npos);
  EXPECT_NE(KueueFlags(c).find("waitForPodsReady"), std::string::npos);
}

}  // namespace
}  // namespace berth::bench
