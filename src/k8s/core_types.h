#pragma once
// Small typed views of the core Kubernetes objects berth reads or writes outside its caches
// (objects.h holds those): the Pods and Events kubectl berth and the dashboard show, a Lease
// (leader election), a ResourceQuota (namespace quotas), a SelfSubjectAccessReview and an
// AdmissionReview (the webhook). Decoders read defensively (a missing or mistyped field reads as
// empty) and never recurse; builders write the JSON. With codec.h of src/api these are the only
// places outside src/k8s that spell object JSON (hack/check-json-access.sh).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/json.h"
#include "k8s/objects.h"
#include "k8s/result.h"

namespace berth::k8s {

// The members of a list's "items" (an object list as the API returns it); empty when none.
std::vector<const json::Value*> ListItems(const json::Value& list);
// "items" of a list as JSON text ("[]" when there is none).
std::string ListItemsJson(const json::Value& list);
// The object as JSON without metadata.annotations and metadata.managedFields (what other tools
// stored; bulk), for showing it; removes them from `obj`.
std::string JsonWithoutBulkMetadata(json::Value& obj);

// One entry of status.containerStatuses.
struct ContainerStatusView {
  std::string name;
  bool running = false, terminated = false;  // state.running / state.terminated present
  int64_t exit_code = 0;                     // state.terminated.exitCode
  bool waiting = false;                      // state.waiting present
  std::string waiting_reason, waiting_message;
};

// A Pod as kubectl berth describe/logs and the dashboard read it.
struct PodView {
  ObjectMeta meta;
  std::string phase, reason;               // status.phase, status.reason
  std::vector<std::string> containers;     // spec.containers' names, in order
  std::vector<ContainerStatusView> statuses;
};
PodView DecodePodView(const json::Value& obj);
std::vector<PodView> DecodePodViews(const json::Value& list);
// A Pod's JSON text (the API's answer) decoded; the error is JSON's (not JSON, too deep).
Result<PodView> ParsePodView(std::string_view text);

// An Event as kubectl berth describe shows it.
struct EventView {
  std::string name, type, reason, message;
  int64_t count = 1;  // "count" (1 when absent)
  // lastTimestamp, else eventTime, else firstTimestamp, else metadata.creationTimestamp (RFC 3339
  // as written).
  std::string time;
};
EventView DecodeEventView(const json::Value& obj);
std::vector<EventView> DecodeEventViews(const json::Value& list);

// coordination.k8s.io/v1 Lease.
struct Lease {
  std::string name, ns, resource_version;
  std::string holder;                         // spec.holderIdentity
  std::optional<int64_t> duration_seconds;    // spec.leaseDurationSeconds
  std::string acquire_time, renew_time;       // RFC 3339 with microseconds, as written
  int64_t transitions = 0;                    // spec.leaseTransitions
};
Lease DecodeLease(const json::Value& obj);
// The whole Lease (for create, and update when `resource_version` is set).
std::string EncodeLease(const Lease& lease);
// {"metadata":{"resourceVersion":rv},"spec":{"holderIdentity":"","leaseDurationSeconds":1,
// "renewTime":now}}: hands the Lease over at once.
std::string LeaseReleasePatch(std::string_view resource_version, std::string_view renew_time);

// A ResourceQuota's amounts as written (resource name -> quantity text), string values only.
struct ResourceQuotaView {
  ObjectMeta meta;
  bool scoped = false;  // spec.scopes not empty, or a spec.scopeSelector
  std::map<std::string, std::string> spec_hard, status_hard, status_used;
};
ResourceQuotaView DecodeResourceQuotaView(const json::Value& obj);

// authorization.k8s.io/v1 SelfSubjectAccessReview asking about one resource (`ns` empty: all
// namespaces), and whether the answer allows it (status.allowed true).
std::string SelfSubjectAccessReviewBody(std::string_view group, std::string_view resource, std::string_view verb,
                                        std::string_view ns);
bool AccessReviewAllowed(const json::Value& answer);

// A ConfigMap's data (its string values; none when absent), and a value that holds a JSON array of
// strings ("[\"X-Remote-User\"]", as kube-system/extension-apiserver-authentication keeps its
// header lists; non-strings skipped, empty when it is not an array). Issue 44: the queue API.
std::map<std::string, std::string> DecodeConfigMapData(const json::Value& config_map);
std::vector<std::string> DecodeStringArray(std::string_view text);

// A headless Service (clusterIP None, publishNotReadyAddresses: peers find each other before
// they are ready) named `name` in `ns`, labelled with and selecting `label`=`value`, controlled by
// `owner` (blockOwnerDeletion).
std::string HeadlessServiceJson(const std::string& name, const std::string& ns, const std::string& label,
                                const std::string& value, const OwnerRef& owner);

// admission.k8s.io/v1 AdmissionReview: the request berth's webhook reads, and its answers.
struct AdmissionRequest {
  std::string uid, operation, ns;
  const json::Value* object = nullptr;      // into the review; nullptr when absent
  const json::Value* old_object = nullptr;
  // `object` nests deeper than json::kMaxDepth: nothing recursive may touch it.
  bool object_too_deep = false;
  // request.userInfo.username: the user the API server authenticated ("" when the review has none).
  std::string username;
};
// Errors: "the body is not an AdmissionReview", "the AdmissionReview has no request", "the
// AdmissionReview request has no uid".
Result<AdmissionRequest> DecodeAdmissionRequest(const json::Value& review);
// A review parsed (nesting up to `max_depth`, iteratively) and its request decoded; the document
// owns what `request` points into. Errors: as DecodeAdmissionRequest (text that is not JSON: "the
// body is not an AdmissionReview").
struct AdmissionReview {
  json::Document doc;
  AdmissionRequest request;
};
Result<std::unique_ptr<AdmissionReview>> ParseAdmissionReview(std::string_view body, int max_depth);
// allowed, with a JSON patch (base64-encoded into the answer) when `json_patch` is not empty.
std::string AdmissionAllowed(std::string_view uid, std::string_view json_patch);
// refused with status {code, reason, message}.
std::string AdmissionRefused(std::string_view uid, int code, std::string_view reason, std::string_view message);
// The JSON patch adding annotation `key` = `value` to `object` (an object being created): "" when
// `value` is empty, `object` is not an object, or it carries that annotation already (any value).
std::string AnnotationAddPatch(const json::Value* object, std::string_view key, std::string_view value);
// Two JSON patches ("" or a list of operations) as one list.
std::string JoinPatches(const std::string& a, const std::string& b);

}  // namespace berth::k8s
