#pragma once
// A workload berth did not write (docs/api.md "Workloads berth did not write", issue 45): a
// batch/v1 Job (job.h), a JobSet (jobset.h); Pod groups slot in as a further WorkloadKind. Every workload
// enters berth's queue as a ticket Run (spec.workloadRef) that sync keeps equal to the workload's
// labels; what differs per kind is only this interface (Kueue: jobframework.GenericJob):
//   recognise + ticket spec   Decode (the fields berth reads), TicketSpecOf (shared, below)
//   hold                      HoldPatch: the workload waits (a Job: spec.suspend true); its Pods
//                             carry the scheduling gate berth.dev/admission from creation
//   release                   ReleasePatch: the workload's controller may make its Pods, which
//                             berth pins one by one to the ranks of the placement (PinOf)
//   stop                      HoldPatch again; the workload's controller deletes its Pods (the
//                             Job controller's way, counted as no failure), and the ticket's
//                             blocks stay taken until they are gone
//   state                     Workload::finished (the workload's own terminal condition)
// Pure: no I/O, no clock, no JSON of its own (src/k8s/workload_objects.h reads and patches the
// objects). The engine's writers send the patches (reconcilers/writers/ticket_writes.h).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/v1alpha1/run.h"
#include "k8s/client.h"
#include "k8s/json.h"
#include "k8s/workload_objects.h"
#include "k8s/objects.h"

namespace berth::workloads {

// The labels and annotation a user puts on a workload.
inline constexpr const char* kQueueLabel = "berth.dev/queue";                 // "true": queued
inline constexpr const char* kQueueAllLabel = "berth.dev/queue-all";          // on a Namespace
inline constexpr const char* kFleetLabel = "berth.dev/fleet";
inline constexpr const char* kPriorityLabel = "berth.dev/priority";
inline constexpr const char* kWholeInstancesLabel = "berth.dev/whole-instances";
inline constexpr const char* kMaxDurationAnnotation = "berth.dev/max-duration";
// The ticket's spec.topology (issue 48): a level's label key, as a label (a key without a prefix,
// "rack": a label value holds no "/") or as an annotation of the same name (any key,
// "example.com/rack"; it wins over the label).
inline constexpr const char* kTopologyRequiredLabel = "berth.dev/topology-required";
inline constexpr const char* kTopologyPreferredLabel = "berth.dev/topology-preferred";
// What berth puts on a pinned Pod of a ticket, and the gate that holds every Pod of a queued workload.
inline constexpr const char* kTicketLabel = "berth.dev/ticket";
inline constexpr const char* kRankLabel = "berth.dev/rank";
inline constexpr const char* kAdmissionGate = "berth.dev/admission";

// A workload as berth caches it (labels and annotations under berth.dev/ only).
struct Workload {
  k8s::ObjectMeta meta;
  std::string kind;        // "Job"
  // Part of another workload, never queued on its own (a Job whose controller is a JobSet: the
  // JobSet is queued, and a queue-all namespace must not queue its Jobs twice).
  bool part_of_other = false;
  int64_t pods = 1;        // Pods that run at once (a Job: parallelism, bounded by completions)
  k8s::PodRequests requests;  // one Pod's requests as the kubelet counts them
  // The longest terminationGracePeriodSeconds one of its Pods has (a Job's template's, Kubernetes'
  // 30 when absent; a JobSet's longest; a Pod group's longest over its Pods): its controller stops
  // them with it, so berth places it only on fleets whose maxGracePeriod is at least this (issue 44).
  int64_t grace_seconds = 30;
  bool suspended = false;
  // A Job's spec.completions (unset: none) and whether its completion mode is Indexed; a JobSet
  // has neither (PodsShowJobDone reads them).
  std::optional<int64_t> completions;
  bool indexed = false;
  // The workload's own terminal condition: true Complete, false Failed; nullopt: not finished.
  std::optional<bool> finished;
  std::string finish_reason, finish_message;
};

// The workload a Pod belongs to: its name and uid ("" when the Pod is none of the kind's).
struct PodOwner {
  std::string name, uid;
};

// The Workload of a decoded object (k8s::DecodeJob's, k8s::DecodeJobSet's: the same field names).
template <typename Decoded>
std::shared_ptr<Workload> WorkloadFrom(const Decoded& d, std::string kind) {
  auto w = std::make_shared<Workload>();
  w->meta = d.meta;
  w->kind = std::move(kind);
  w->pods = d.pods_at_once;
  w->requests = d.requests;
  w->grace_seconds = d.grace_seconds;
  w->suspended = d.suspended;
  w->completions = d.completions;
  w->indexed = d.indexed;
  w->finished = d.finished;
  w->finish_reason = d.finish_reason;
  w->finish_message = d.finish_message;
  return w;
}

class WorkloadKind {
 public:
  virtual ~WorkloadKind() = default;
  virtual const k8s::Resource& Resource() const = 0;
  virtual std::string_view ApiVersion() const = 0;  // "batch/v1"
  virtual std::string_view Kind() const = 0;        // "Job"
  virtual std::string_view TicketPrefix() const = 0;  // "job": the ticket of Job x is job-x
  // The fields berth reads; null when `obj` is not one of this kind.
  virtual std::shared_ptr<const Workload> Decode(const k8s::json::Value& obj) const = 0;
  // JSON merge patches of the workload: hold it (nothing of it runs) and release it.
  virtual std::string HoldPatch() const = 0;
  virtual std::string ReleasePatch() const = 0;
  // The workload of this kind a Pod belongs to, as the engine's Pod cache keeps the Pod (its
  // controller ownerReference and berth.dev/ and jobset.sigs.k8s.io/jobset- labels: kPodLabelsKept);
  // an empty name when none.
  virtual PodOwner WorkloadOfPod(const k8s::Pod& pod) const = 0;
  // The label selector that lists the Pods of workload `name` with uid `uid` from the API.
  virtual std::string PodSelector(const std::string& name, const std::string& uid) const = 0;
  // The label selector of the batch/v1 Jobs the workload's controller makes ("" : none, a Job).
  // Holding the workload holds them too at once (its controller suspends them only later): the
  // Job controller then deletes their Pods without counting them as failures.
  virtual std::string ChildJobSelector(const std::string& uid) const {
    (void)uid;
    return {};
  }
};

// The registry: every kind berth queues that is an object of its own with an informer in the
// engine (Job, then JobSet); KindOf finds one by its Kind ("Job"), null when berth has none.
const std::vector<const WorkloadKind*>& ObjectKinds();
const WorkloadKind* KindOf(std::string_view kind);
// How many ObjectKinds() there are (EngineCaches counts an informer for each).
inline constexpr size_t kObjectKindCount = 2;
// The labels the engine's cache of other Pods keeps besides berth.dev/ (WorkloadOfPod reads them).
inline constexpr const char* kPodLabelsKept = "jobset.sigs.k8s.io/jobset-";

// Whether a workload is in berth's queue: label berth.dev/queue "true", or created in a
// namespace labelled berth.dev/queue-all "true".
bool IsQueued(const k8s::ObjectMeta& meta, bool namespace_queues_all);

// The ticket's name: "<prefix>-<name>", shortened to 63 characters with a hash of the full name
// when longer (a ticket's name is the value of its Pods' berth.dev/ticket label).
std::string TicketName(std::string_view prefix, std::string_view name);

// The ticket's spec as the workload's labels say (docs/api.md): `problem` names the first label
// or annotation berth cannot read ("" when all are good); the spec then keeps that field's default
// and the ticket reports the problem instead of running on a silent default.
struct TicketSpec {
  api::v1alpha1::RunSpec spec;
  std::string problem;
};
TicketSpec TicketSpecOf(const WorkloadKind& kind, const Workload& w, const std::string& gpu_resource);
// A ticket's spec.topology put back to `want` (issue 48), unless its labels have a problem (then
// `next` keeps the ticket's own).
void PutTopology(const TicketSpec& want, api::v1alpha1::RunSpec& next);

// How a gated Pod of ticket `ticket` is pinned to rank `rank` on `node` of fleet `fleet`
// (k8s::PinPodPatch): the node, the fleet's toleration, labels berth.dev/ticket and berth.dev/rank,
// the gate berth.dev/admission lifted.
k8s::PinSpec PinOf(const std::string& ticket, int rank, const std::string& node, const std::string& fleet);

}  // namespace berth::workloads
