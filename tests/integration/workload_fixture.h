#pragma once
// The shared fixture of the workload suites on real nodes (issue 45: jobs_test, jobsets_test,
// podgroups_test; workload_identity_test, which runs each component under its own identity, uses
// its free functions): two 8-GPU real machines <pool>-0 and <pool>-1 (labels pool=<pool>,
// zone=z1) with the workload controllers (Job controller, garbage collector, kube-scheduler:
// hack/real-nodes.sh controller-manager --workloads), the chart's admission documents for the
// suite's workloads rendered by real Helm for this API server (workload_webhooks.h; on 1.35 the
// webhooks, served by each test's berth-controller), and the helpers every such suite repeated:
// a fleet over the machines, a shell Run, the plugin, the Pods of a workload, a tenant's Role, the
// audit log, and a TearDown that deletes the workloads first and waits until the kubelets have
// stopped every container of the test.

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine_fixture.h"
#include "real_nodes.h"
#include "workload_webhooks.h"

namespace berth::testing {

// The names of the tickets (Runs with spec.workloadRef) of namespace `ns`.
std::set<std::string> TicketsIn(k8s::Client& client, const std::string& ns);
// Whether object `obj` (a Job, a JobSet: as the API served it) has condition `type` with status "True".
bool HasTrueCondition(const k8s::json::Value& obj, const std::string& type);

// A Pod as a user reads it (kubectl get pods): its node ("" while not bound), its phase, berth's
// labels berth.dev/rank and berth.dev/ticket, whether berth's gate berth.dev/admission holds it,
// whether it is being deleted, and the reason of its PodScheduled condition (SchedulingGated).
struct PodRow {
  std::string node, phase, rank, ticket, scheduled_reason;
  bool gated = false, deleting = false;
};
// The Pods of namespace `ns` with label selector `selector`, by name (none when the API cannot be read).
std::map<std::string, PodRow> PodsIn(k8s::Client& client, const std::string& ns, const std::string& selector);

// A Role `name` with `rules` (YAML list items at column 0; AllVerbsOn) and its RoleBinding to the
// impersonated user "tenant" (`kubectl --as=tenant`), as YAML to apply in the test's namespace.
std::string TenantRole(const std::string& name, const std::string& rules);
// A rule of TenantRole: every verb on `resources` (YAML list) of API group `group` ("" for core).
std::string AllVerbsOn(const std::string& group, const std::string& resources);

// One write of the API server's audit log (ResponseComplete, with the request's body). The binary's
// API server keeps one when BERTH_AUDIT=1 is set before it starts (hack/control-plane.sh).
struct AuditedWrite {
  std::string verb, resource, subresource, name, user, at;  // at: stageTimestamp (RFC 3339 µs, sorts as text)
  std::string agent;  // userAgent (berth-controller/..., kube-controller-manager/.../job-controller)
  int64_t code = 0;   // responseStatus.code (0 when absent)
  k8s::json::Document body;  // requestObject (null when the policy logged none)
};
// The writes of the binary's audit log (<control plane dir>/audit.log) in namespace `ns`, in order.
std::vector<AuditedWrite> AuditedWrites(const std::string& ns);

class RealWorkloadTest : public EngineTest {
 protected:
  RealWorkloadTest() { finish_deleted_pods_ = false; }  // the kubelets do it

  // Once per binary (SetUpTestSuite): starts the two machines of `pool` with the workload
  // controllers, applies the chart's documents `policies` as rendered for this API server and
  // waits until `held` (a dry-run create of a queued probe workload) says they hold it. On 1.35
  // (no MutatingAdmissionPolicy) the chart renders webhook configurations instead: each of
  // `routes` (configuration name, path) is rendered too and pointed at the berth-controller each
  // test starts; then each test's SetUp waits for `held`.
  static void StartWorkloads(const std::string& pool, std::vector<std::string> policies,
                             const std::vector<std::pair<std::string, std::string>>& routes, std::function<bool()> held);
  static WorkloadWebhooks& Hooks();

  void SetUp() override;
  void TearDown() override;

  // What TearDown does before the fixture's own (set in the constructor): on failure prints
  // `kubectl get` of each of `dump_` (argument lists); deletes every object of each kind of
  // `delete_first_` (background cascade, their tickets go with them); waits up to 90 s until no
  // object of the kinds of `wait_gone_` is left.
  std::vector<std::vector<std::string>> dump_;
  std::vector<std::string> delete_first_, wait_gone_;

  // Fleet FleetName(name) over both machines (`hostname` empty) or the one named, with extra spec
  // lines (YAML, 2-space indent); returns once berth has written its instances.
  void RealFleet(const std::string& name, const std::string& extra_spec, const std::string& hostname = {});
  // A Run whose container runs `script` in busybox's sh (1 s grace period: `sleep` ignores SIGTERM).
  void ShellRun(const std::string& name, const std::string& extra_spec, const std::string& script);
  // `kubectl-berth ARGS -n <test namespace>`.
  CommandResult Berth(std::vector<std::string> args);
  // The names of the tickets (Runs with spec.workloadRef) of the test's namespace.
  std::set<std::string> Tickets();
  // The Pods of the test's namespace with label selector `selector`, by name (PodsIn).
  std::map<std::string, PodRow> Pods(const std::string& selector) { return PodsIn(*client(), ns_, selector); }
  // `kubectl --as=tenant ARGS -n <test namespace>` (rights: GrantTenantNamespaceRights, TenantRole).
  CommandResult AsTenant(std::vector<std::string> args, const std::string& input = {});
  // The messages of the test namespace's Events of reason `reason` about object `name`, joined.
  std::string EventMessages(const std::string& name, const std::string& reason);

  // Issue 31's reclaim over fleet FleetName(fleet): team "owner-<ns>" of namespace OwnerNamespace()
  // (made here) has 16 GPUs of it as its nominal share and runs nothing; team "borrower-<ns>" is the
  // test's namespace, with no share. TearDown deletes both Teams and the owner's namespace once the
  // Pods of its runs are gone.
  void ReclaimTeams(const std::string& fleet);
  std::string OwnerNamespace() const { return ns_ + "-owner"; }
  std::string OwnerTeam() const { return "owner-" + ns_; }
  // Of `tickets`, those the owner's team reclaimed: reason Reclaimed, back in the queue (Pending)
  // with an Event Retrying that names the team. Each other one is expected still Running.
  std::vector<std::string> Reclaimed(const std::vector<std::string>& tickets);
  // Waits until `ticket` waits Pending, reason GracePeriodTooLong, for Pods of grace `grace`
  // (seconds) on fleet `fleet` whose maxGracePeriod is `longest` ("10m"); its message (returned)
  // names both.
  std::string WaitsForGracePeriod(const std::string& ticket, int64_t grace, const std::string& longest,
                                  const std::string& fleet);
  // Run `name` of the owner's team: 8 GPUs, priority 10 (a reclaim needs no priority), sleeps.
  void OwnerRun(const std::string& name);
  std::string OwnerPhase(const std::string& name);
  // A directory of this machine that every real node sees (for a hostPath volume), removed after
  // the test: a Pod's first attempt leaves a mark there that a later attempt tells apart.
  std::string Marks();

 private:
  bool reclaim_teams_ = false, marks_ = false;
};

}  // namespace berth::testing
