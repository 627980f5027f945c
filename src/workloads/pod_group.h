#pragma once
// Pods as workloads (issue 45, docs/api.md "Pod groups"): a single Pod labelled
// berth.dev/queue "true" (ticket pod-<name>, kind Pod), and a Pod group: the Pods labelled
// berth.dev/pod-group NAME with annotation berth.dev/pod-group-size "N" (ticket podgroup-<NAME>,
// kind PodGroup), queued by the label berth.dev/queue "true" on its Pods or by a namespace
// labelled berth.dev/queue-all. Unlike a Job, a Pod group is no object of its own: it is the Pods
// that carry its name, so its "workload" is made here from them (PodGroupOf).
//
// Decisions (docs/concepts.md "Pods and Pod groups"):
//   - All or nothing: the group is admitted only once all N Pods exist; until then its ticket
//     waits and says how many exist ("2 of 4 Pods of the group exist").
//   - Each Pod is held by the scheduling gate berth.dev/admission (the chart's admission adds it
//     at creation) until berth pins it to its own booked node; a Pod cannot be re-gated, so a Pod
//     that got past admission ungated is not held (on 1.35 without the webhook: docs/install.md).
//   - The group's spec comes from its first Pod (oldest, then by name): its labels
//     berth.dev/priority, berth.dev/fleet, berth.dev/whole-instances and annotation
//     berth.dev/max-duration; every Pod gets a block that holds the largest request of any Pod
//     of the group (so each fits whichever block it is pinned to).
//   - Ending: Succeeded when N Pods succeeded; Failed as soon as one Pod failed (nothing
//     re-creates a bare Pod, so the gang cannot complete: its other Pods are stopped and the
//     blocks freed). Kueue's pod groups end the same way once no replacement Pod is made. A Pod
//     that fails while it is being deleted (its containers killed) does not fail the group.
//   - A Pod controlled by a Job is never a workload of its own (the Job is queued, not its Pods);
//     neither is berth's own Pod (label berth.dev/run).
//   - In a queue-all namespace every Pod group is queued; a bare Pod (no berth.dev/pod-group)
//     only with the label berth.dev/queue "true" (Kueue's manageJobsWithoutQueueName does not
//     take plain Pods either: a namespace's every Pod would otherwise wait, Deployments' too).
//     Only the Pods berth held from creation: a group that ran before the namespace got the label
//     is not touched (Kueue manages only the Pods its webhook gated).
// Pure: no I/O, no clock.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/pod_group_objects.h"
#include "workloads/workload.h"

namespace berth::workloads {

inline constexpr const char* kPodGroupLabel = "berth.dev/pod-group";
inline constexpr const char* kPodGroupSizeAnnotation = "berth.dev/pod-group-size";
// The largest group berth takes (the ticket's spec.nodes bound).
inline constexpr int64_t kMaxPodGroupSize = 10000;

// A single queued Pod (kind "Pod") and a Pod group (kind "PodGroup") as WorkloadKinds: their
// objects are Pods, read by the engine's group Pod caches (Decode answers null: a group is made
// by PodGroupOf); held by their scheduling gate from creation (no hold patch: "{}").
class PodKind final : public WorkloadKind {
 public:
  explicit PodKind(bool group) : group_(group) {}
  const k8s::Resource& Resource() const override;
  std::string_view ApiVersion() const override { return "v1"; }
  std::string_view Kind() const override { return group_ ? "PodGroup" : "Pod"; }
  std::string_view TicketPrefix() const override { return group_ ? "podgroup" : "pod"; }
  std::shared_ptr<const Workload> Decode(const k8s::json::Value&) const override { return nullptr; }
  std::string HoldPatch() const override { return "{}"; }
  std::string ReleasePatch() const override { return "{}"; }
  // A queued Pod: itself; a group's Pod: the group (its uid is none: no object of its own).
  // Neither kind is one of ObjectKinds() (no informer of objects: the engine reads their Pods
  // through reconcilers/objects/pod_group_tickets.h), so the engine calls neither of these two.
  PodOwner WorkloadOfPod(const k8s::Pod& pod) const override;
  std::string PodSelector(const std::string& name, const std::string& uid) const override;

 private:
  bool group_;
};
const PodKind& SinglePods();
const PodKind& PodGroups();
// Whether `kind` (a workloadRef's) is one of the two above.
bool IsPodKind(std::string_view kind);

// The workload a Pod is part of: {"Pod", its name} or {"PodGroup", the group's name}.
struct PodWorkloadId {
  std::string kind, name;
  bool operator==(const PodWorkloadId&) const = default;
};
// Null when the Pod is not queued as a Pod (not labelled, controlled by a Job, berth's own). A
// group's Pod without the label berth.dev/queue, queued only by its namespace's berth.dev/queue-all,
// is berth's only when `held`: berth held it from its creation (the gate berth.dev/admission) or
// has pinned it (label berth.dev/ticket). One that ran before its namespace was labelled (or got
// past admission ungated) is left alone, as Kueue leaves the Pods it did not gate at creation:
// nothing of it is queued, booked, pinned or deleted (docs/concepts.md, Pods and Pod groups).
std::optional<PodWorkloadId> PodWorkloadOf(const k8s::ObjectMeta& pod, bool namespace_queues_all, bool held);
// The same for a Pod as the engine caches it: held when gated or pinned.
std::optional<PodWorkloadId> PodWorkloadOf(const k8s::GroupPod& pod, bool namespace_queues_all);
// Its ticket's name (pod-<name>, podgroup-<name>: TicketName).
std::string PodTicketName(const PodWorkloadId& id);

// A Pod workload as its Pods make it.
struct PodGroupState {
  Workload workload;    // kind Pod/PodGroup, name the group's, uid the first Pod's; pods: N
  int64_t size = 1;     // N (a single Pod: 1)
  int64_t live = 0;     // Pods of it that exist and are not being deleted
  // Why it cannot be admitted yet ("" : it can): fewer than N Pods ("2 of 4 Pods of the group
  // exist"), or more.
  std::string waiting;
  // The annotation berth.dev/pod-group-size unreadable or not the same on every Pod ("": fine).
  std::string problem;
};
// `pods`: every Pod of the workload berth knows of (finished ones too), none null, at least one.
PodGroupState PodGroupOf(const PodWorkloadId& id, const std::vector<const k8s::GroupPod*>& pods);

}  // namespace berth::workloads
