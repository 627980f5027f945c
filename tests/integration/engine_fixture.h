#pragma once
// Shared fixture for tests of the controller's behaviour end to end: a fresh namespace, a
// berth-controller process, simulated Nodes and Fleets unique to the test, and helpers that play
// the kubelet (patch pod status) and read Run status through the API.

#include <atomic>
#include <map>
#include <thread>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "harness.h"
#include "k8s/json.h"

namespace berth::testing {

class EngineTest : public IntegrationTest {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Force-deletes this test's Pods on the nodes Nodes() made (no kubelet ends them).
  void ForceDeletePodsOnApiOnlyNodes();

  // Extra controller flags for this test (set before SetUp runs, e.g. in the constructor).
  std::vector<std::string> controller_args_;
  // The controller's kubeconfig (empty: the control plane's admin; workload_identity_test: the chart's ServiceAccount).
  std::string controller_kubeconfig_;
  std::unique_ptr<ControllerProcess> controller_;
  // Leave the test's runs in place at the end (tests with thousands of runs in a binary of their
  // own: the control plane goes away with the binary).
  bool keep_runs_ = false;

  // What a team gets in its own namespace (the tenant suites, issues 29 and 44): Runs, Pods and
  // Services, nothing cluster-wide, for the impersonated user "tenant" (`kubectl --as=tenant`).
  void GrantTenantNamespaceRights() {
    Apply(R"(apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: tenant}
rules:
- apiGroups: [berth.dev]
  resources: [runs]
  verbs: [get, list, watch, create, update, patch, delete]
- apiGroups: [""]
  resources: [pods, services]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: tenant}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: tenant}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: tenant}]
)");
  }

  // A label value unique to this test, so fleets of other tests never match its nodes.
  std::string Pool(const std::string& name) const { return ns_ + "-" + name; }
  // Fleet names are cluster-wide: suffixed with the namespace.
  std::string FleetName(const std::string& name) const { return name + "-" + ns_; }

  // Creates `count` Ready nodes "<fleet>-<ns>-<i>" labelled pool=Pool(pool) plus `labels`.
  std::vector<std::string> Nodes(const std::string& pool, int count, const std::string& cpu, const std::string& memory,
                                 int gpus = 0, const std::map<std::string, std::string>& labels = {},
                                 const std::map<std::string, std::string>& annotations = {});
  // Creates Fleet FleetName(name) selecting pool=Pool(pool) with extra spec lines (YAML, 2-space indent).
  void Fleet(const std::string& name, const std::string& pool, const std::string& extra_spec = {});
  // Applies a Run named `name` with extra spec lines (YAML at 2-space indent).
  void Run(const std::string& name, const std::string& extra_spec = {});

  k8s::json::Document RunDoc(const std::string& name);
  std::string Phase(const std::string& name);
  std::string Reason(const std::string& name);
  std::string Message(const std::string& name);
  int64_t StatusInt(const std::string& name, const char* field);
  std::vector<std::string> PlacementNodes(const std::string& name);
  // Runs of the test namespace in `phase` (-1 when the API cannot be read).
  int CountPhase(const std::string& phase);
  // status.queuePosition of the pending runs (phase Pending, not being deleted) that show one,
  // from one List (one snapshot of the API); each position with the runs that show it.
  // nullopt when the API cannot be read.
  std::optional<std::map<int64_t, std::vector<std::string>>> PendingPositions();
  // True when the pending runs that show a position are exactly `in_order`, at 1, 2, 3, ...
  bool PositionsAre(const std::vector<std::string>& in_order);
  bool WaitPhase(const std::string& name, const std::string& phase, std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Pods of a run (all attempts), by name.
  std::map<std::string, k8s::json::Document> PodsOf(const std::string& run);
  // Plays the kubelet: sets every (bound) pod of `run` to `phase`.
  void SetPodsPhase(const std::string& run, const std::string& phase, const std::string& reason = {});
  void SetPodPhase(const std::string& pod, const std::string& phase, const std::string& reason = {});
  // Marks every bound pod of the run Running and waits for the run to be Running.
  void StartRun(const std::string& run);
  // Marks every pod of the run Succeeded and waits for the run to be Succeeded.
  void FinishRun(const std::string& run);

  std::vector<std::string> created_nodes_, created_fleets_;
  // Simulated nodes have no kubelet to confirm that a deleted Pod's containers stopped: a thread
  // plays that part of the kubelet and removes bound Pods being deleted (grace period 0), so their
  // blocks come free as on a real node. Tests on real nodes (realnodes_test) set this to false.
  bool finish_deleted_pods_ = true;

 private:
  std::atomic<bool> finisher_stop_{false};
  std::thread finisher_;
};

}  // namespace berth::testing
