#pragma once
// Views of the objects of workloads berth did not write (issue 45): a batch/v1 Job as berth reads
// it, a Job's Pod as the pinning reads it, and the patches that hold, release and pin them.
// src/workloads turns these into tickets; nothing outside src/k8s spells their JSON.

#include <memory>
#include <optional>
#include <string>

#include "k8s/json.h"
#include "k8s/objects.h"
#include "k8s/result.h"

namespace berth::k8s {

// The required node affinity that pins `pod` to `node` ({"nodeAffinity": ...}): the Pod's own
// nodeSelectorTerms, each with matchFields metadata.name In [node] added (one such term when it
// has none). PinPodPatch's; PodDraft::PinToNode's (issue 49).
json::Value PinnedAffinity(const json::Value& pod, const std::string& node, json::Document::AllocatorType& a);

struct JobView {
  ObjectMeta meta;             // labels and annotations under berth.dev/ only; every ownerReference
  int64_t pods_at_once = 1;    // spec.parallelism (default 1), at most spec.completions when set
  PodRequests requests;        // one Pod's (the template's spec read as a Pod's: DecodePod)
  bool suspended = false;      // spec.suspend
  std::optional<int64_t> completions;  // spec.completions (a Job; unset: none, and a JobSet's)
  bool indexed = false;        // spec.completionMode Indexed (a Job)
  // The Pod template's spec.terminationGracePeriodSeconds (Kubernetes' 30 when absent; a JobSet:
  // the longest of its replicated Jobs' that make Pods; 0 when none does): the grace period its
  // Pods get when their controller deletes them, which berth cannot cap (issue 44).
  int64_t grace_seconds = 30;
  // The Job's terminal condition: true Complete, false Failed (status True); nullopt: none yet.
  std::optional<bool> finished;
  std::string finish_reason, finish_message;
};
// Null when `obj` is not an object with a name.
std::shared_ptr<const JobView> DecodeJob(const json::Value& obj);
// A jobset.x-k8s.io/v1alpha2 JobSet read as one Job of all its Pods: pods_at_once the sum over
// spec.replicatedJobs of replicas x the Job template's Pods at once; requests, of each resource,
// the most one Pod of any replicated Job asks (so every Pod fits the block booked for it), and
// grace_seconds the longest;
// suspended spec.suspend; finished from its Completed / Failed condition. Null as DecodeJob.
std::shared_ptr<const JobView> DecodeJobSet(const json::Value& obj);

// A Pod of a workload as berth pins it.
struct WorkloadPodView {
  std::string name;
  std::string ticket, rank;  // labels berth.dev/ticket and berth.dev/rank ("" when absent)
  bool done = false;         // phase Succeeded or Failed
  bool deleting = false;
  bool gated = false;        // spec.schedulingGates holds `gate`
};
WorkloadPodView DecodeWorkloadPod(const json::Value& pod, const std::string& gate);

// The JSON merge patch that sets label `key` to `value`.
std::string LabelPatch(const std::string& key, const std::string& value);

// The JSON merge patch `patch` (an object) with metadata.uid `uid` as a precondition.
std::string WithUidPrecondition(const std::string& patch, const std::string& uid);

// The JSON merge patch that pins a gated Pod (`pod`: as the API served it) to `node`: a required
// node affinity to exactly that node (matchFields metadata.name, added to each of the Pod's own
// required terms: terms are ORed, so added to each it narrows them all, as a gated Pod's affinity
// may change), the toleration `toleration_key`=`toleration_value` (after the Pod's own), `labels`
// added, and the gate `gate` removed (the others kept). Guarded by the Pod's resourceVersion.
struct PinSpec {
  std::string node, gate, toleration_key, toleration_value;
  std::map<std::string, std::string> labels;
};
std::string PinPodPatch(const json::Value& pod, const PinSpec& pin);

// What PinPodPatch reads of a Pod, as a small JSON text kept in a cache instead of the Pod (issue
// 45: pinning from the engine's cache, not a LIST per Job): metadata.resourceVersion and
// spec.schedulingGates, .affinity and .tolerations. "" unless the Pod waits on `gate` and has a
// controller (a Job's; a bare Pod of a Pod group is pinned from the API, pod_group_tickets.h), so
// a cache keeps it only for the moment between a Job's release and its Pod's pin.
std::string PinSource(const json::Value& pod, const std::string& gate);
// PinPodPatch of a Pod known by its PinSource; "" when `source` is not one.
std::string PinPodPatch(const std::string& source, const PinSpec& pin);

// The JSON patch (RFC 6902) that holds a Job being created (`job`: the object of the admission
// request), exactly as the chart's MutatingAdmissionPolicy <fullname>-jobs does on 1.36+:
// spec.suspend true, and the scheduling gate `gate` added to spec.template.spec.schedulingGates
// (after the Job's own gates; not twice). Issue 45 (2): the 1.35 webhook answers it.
// An error when the Job has no spec.template.spec object (nothing to gate; the API server would
// refuse such a Job anyway).
Result<std::string> HoldJobPatch(const json::Value& job, const std::string& gate);

// Issue 45 (2), the 1.35 webhook for JobSets: the JSON patch that holds a JobSet being created as
// the chart's MutatingAdmissionPolicy <fullname>-jobsets does on 1.36+: spec.suspend true, and the
// gate in every replicated Job's Pod template (template.spec.template.spec.schedulingGates, after
// its own gates; not twice). A JobSet without replicatedJobs is only suspended (as the policy). An
// error (with a sentence) when spec is not an object, replicatedJobs is not a list, or one of them
// has no Pod template object (the API server would refuse such a JobSet anyway).
Result<std::string> HoldJobSetPatch(const json::Value& jobset, const std::string& gate);

// Whether a Pod being created is one the chart's MutatingAdmissionPolicy <fullname>-pod-groups
// gates, given that the webhook's selectors sent it (label berth.dev/queue "true", or label
// berth.dev/pod-group in a namespace labelled berth.dev/queue-all "true"): not berth's own Pod
// (label berth.dev/run), not a Pod whose controller is a batch/v1 Job, and labelled
// berth.dev/queue "true" or berth.dev/pod-group.
bool PodHeldAtCreation(const json::Value& pod);

// The JSON patch adding `gate` to a Pod being created that PodHeldAtCreation holds ("" when it is
// not held or is gated already). An error when a held Pod has no spec object.
Result<std::string> HoldPodPatch(const json::Value& pod, const std::string& gate);

}  // namespace berth::k8s
