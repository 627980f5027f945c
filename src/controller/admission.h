#pragma once
// A mutating admission webhook for Runs: adds berth's finalizer when a Run is created, so that
// admitting it later needs no separate metadata write (the finalizer cannot ride on the /status
// write that records the admission). Optional: without it the controller adds the finalizer
// itself at admission.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "k8s/result.h"
#include "reconcilers/objects/namespace_policy.h"

namespace berth::controller {

// Answers an admission.k8s.io/v1 AdmissionReview request (the POST body) with the
// AdmissionReview response to send back: always allowed; a JSON patch adding the finalizer when
// the Run does not carry it yet. A malformed request is an error (HTTP 400).
// The largest AdmissionReview body the webhook reads (413 above it): a Run is at most 1.5 MiB in
// etcd, and a review carries the object (and, on updates, the old object) plus a small envelope.
inline constexpr size_t kMaxAdmissionReviewBytes = 4 * 1024 * 1024;

// The priority cap of a namespace (label berth.dev/max-priority), nullopt without one.
using CapLookup = std::function<std::optional<reconcilers::PriorityCap>(const std::string& ns)>;

// With `caps` (issue 17): a CREATE whose spec.priority is above its namespace's cap, or an UPDATE
// that changes spec.priority to a value above it, is refused (403 Forbidden) with a message that
// names the cap. An UPDATE that leaves the priority as it was is allowed whatever the cap (a run
// created before the label can still be stopped, suspended or deleted).
// A CREATE, or an UPDATE that changes spec.template, whose template is larger than
// reconcilers::kMaxTemplateBytes as JSON is refused (422 Invalid, reconcilers::TemplateTooLarge).
// Issue 44 (2): an UPDATE that changes spec.template of a run whose old object is placed (phase
// Scheduled or Running) is refused (422 Invalid, PlacedTemplateChange); a pending run's template
// may change.
// Issue 47: a CREATE also records the request's user (request.userInfo.username) in the
// annotation berth.dev/submitted-by unless the Run names a submitter already (the chart's
// ValidatingAdmissionPolicy <fullname>-submitted-by decides whether that name may stand); the
// Job, JobSet and Pod webhooks below do the same in the patch that holds the workload.
k8s::Result<std::string> ReviewRun(const std::string& request_body, const CapLookup& caps = {});

// Issue 45 (2), the webhook that holds Jobs on Kubernetes 1.35 (1.36+: the chart's
// MutatingAdmissionPolicy <fullname>-jobs, which does the same in CEL). The chart's
// MutatingWebhookConfiguration sends it the CREATE of every Job labelled berth.dev/queue "true"
// (objectSelector) and of every Job of a namespace labelled berth.dev/queue-all "true"
// (namespaceSelector): the selectors choose, so every Job created that reaches it is held.
// Allowed with the JSON patch of k8s::HoldJobPatch (spec.suspend true, the scheduling gate
// berth.dev/admission in the Pod template); another operation is allowed unchanged. A Job without
// a Pod template is refused (422, with the sentence); a malformed request is an error (HTTP 400).
// failurePolicy Fail: either way the Job is not created unheld.
k8s::Result<std::string> ReviewJob(const std::string& request_body);

// Issue 45 (2), the webhook that holds JobSets on Kubernetes 1.35 (1.36+: the chart's
// MutatingAdmissionPolicy <fullname>-jobsets). As ReviewJob, with k8s::HoldJobSetPatch: the
// selectors choose, every JobSet created that reaches it is held; one berth cannot hold is refused
// (422, with the sentence); a malformed request is an error (HTTP 400).
k8s::Result<std::string> ReviewJobSet(const std::string& request_body);

// Issue 45 (3), the webhook that gates queued Pods and Pod groups' Pods on Kubernetes 1.35 (1.36+:
// the chart's MutatingAdmissionPolicy <fullname>-pod-groups). The chart sends the CREATE of Pods
// labelled berth.dev/queue "true", and of Pods labelled berth.dev/pod-group in a namespace
// labelled berth.dev/queue-all "true"; the policy's exclusions are applied here
// (k8s::PodHeldAtCreation: not berth's own Pods, not a Job's Pods, which are allowed unchanged).
// A held Pod gets the gate berth.dev/admission (k8s::HoldPodPatch); another operation is allowed
// unchanged; a malformed request is an error (HTTP 400).
k8s::Result<std::string> ReviewPod(const std::string& request_body);

// "spec.template cannot change while the run is placed (phase Running): ..." (the chart's
// admission policy says the same).
std::string PlacedTemplateChange(const std::string& phase);

}  // namespace berth::controller
