#pragma once
// What the scenarios of berth-e2e-bench share (defined in e2e_bench.cc): flags, the local control
// plane, the processes the benchmark starts beside it (kube-scheduler, the Job controller, Kueue).

#include <sys/types.h>

#include <array>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "../../tests/integration/harness.h"
#include "k8s/client.h"

namespace berth::bench::e2e {

// --NAME N on the command line, or `def`.
int Flag(const std::string& name, int def);
// Runs `fn(i)` for i in [0, n) on `threads` threads.
void Parallel(int n, int threads, const std::function<void(int)>& fn);
// The admin client of the control plane.
k8s::ClientPtr Client();
// Creates the object (an existing one is fine); exits when the API server keeps refusing.
void MustCreate(const std::string& path, const std::string& body);
// kubectl on the control plane; exits with its error when it fails.
void Kubectl(const std::vector<std::string>& args, const std::string& input = {});
// A process killed with the driver; its output in `log`. SIGTERM and reap with StopProcess.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log);
void StopProcess(pid_t pid);
// The Kubernetes binary `name` of this run's version.
std::string KubeBin(const std::string& name);
// A fresh control plane (with kwok when --kwok 1); stopping it stops kwok and hollow nodes too.
void StartControlPlane();
void StopControlPlane();
// kube-scheduler (unthrottled, no leader election), and kube-controller-manager running the Job
// controller only; both on the current control plane.
pid_t StartKubeScheduler();
pid_t StartJobController();
std::vector<std::string> JobControllerFlags();
// The scheduler flags every anchor runs with.
extern const std::vector<std::string> kSchedulerFlags;

struct KueueRun {
  pid_t pid = -1;
  std::string flags;
  std::vector<std::string> args;  // how it was started
  std::string log, health, metrics, ca_file;
};
// Installs and starts Kueue on the current control plane (bench/e2e/kueue.h says how) with the
// queues of `queues_yaml`, or (empty) one ClusterQueue of the whole capacity of the nodes labelled
// pool=POOL and a LocalQueue in `ns`.
KueueRun StartKueue(const std::string& pool, const std::string& ns, bool wait_for_pods_ready,
                    const std::string& queues_yaml = {});
std::string KueueVersion();
// Kueue answers /readyz.
bool KueueReady(const KueueRun& k);
// Stops Kueue and starts it again as it was (its log: LOG.restarted); does not wait.
void RestartKueue(KueueRun& k);
// Kueue's /metrics page (read with the admin token, as Kueue's metrics authorization wants).
std::string KueueMetrics(const KueueRun& k);
// Ready bare Node objects POOL-0.. of 64 CPUs, 512Gi and 8 GPUs labelled pool=POOL (see e2e_bench.cc);
// `labels(i)`, when given: more labels of node i as JSON members (not for hollow nodes).
void MakeNodes(const std::string& pool, int count, const std::function<std::string(int)>& labels = {});
// The JSON of Run `name` with a busybox template; `spec`: more spec fields, each followed by a comma.
std::string RunBody(const std::string& name, const std::string& spec);
// Sum over the label sets of `name`'s samples on a Prometheus page (those whose labels contain
// `label`, e.g. status="active", when it is not empty).
double SumSamples(const std::string& page, const std::string& name, const std::string& label = "");
// VmRSS of a process in KiB (-1 when unknown).
long RssKiB(int pid);

// The scenarios defined outside e2e_bench.cc.
int Behaviour();  // behaviour.cc
// The chart's admission policies applied and in effect (e2e_bench.cc); `jobs`: its Jobs' too.
void SetUpPolicies(bool jobs = false);
int Reclaim();    // reclaim.cc
int Topology();   // topology.cc (issue 48)
// The words joined by spaces (flags as the tables print them).
std::string Join(const std::vector<std::string>& v);
// --kwok 1: kwok-managed nodes (StartControlPlane starts kwok) with these flags.
bool Kwok();
std::vector<std::string> KwokFlags();
// Scale through Kueue: 100,000 pending Jobs on 10,000 nodes (kueue_scale.cc); prints its table.
struct ScaleFigures {
  double rss_max_mb = -1, first_admission_s = -1, decision_ms = -1;
};
int KueueScale(int nodes, int pending, int seconds, ScaleFigures* figures);
// How long KueueScale waits for the first admission after Kueue's restart (--kueue-restart-window).
int KueueRestartWindow();
// The Kubernetes version of this run (v1.37.2).
std::string KubeVersion();

}  // namespace berth::bench::e2e
