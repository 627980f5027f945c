#pragma once
// The one codec of berth.dev/v1alpha1: JSON -> typed (Decode*), typed -> JSON (Encode*), and the
// merge patches berth writes (status, queue position, finalizers, spec controls). No other code
// spells these objects' JSON.
//
// Decoding. Decode* fails (a Status naming what is wrong) only when there is no object to speak
// of: not a JSON object, or no metadata.name. Everything else is read defensively, as the
// engine always did: a spec the engine cannot use is named in `invalid_message` (the first
// problem, "spec.maxDuration: ..."; the run then fails InvalidSpec), a status field that cannot
// be read is left at its default and named in `status_problem`. DecodeRunStatus alone is strict:
// its error names the first unreadable field. spec.template is kept as written (unknown fields
// included: the CRD preserves them).
//
// Encoding writes what is set (omitting empty optional fields); Decode(Encode(x)) == x for what
// the types hold. Patches are JSON merge patches (RFC 7386) for PATCH with
// application/merge-patch+json; those with a resourceVersion are refused (409) when the object
// changed since it was read.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/v1alpha1/fleet.h"
#include "api/v1alpha1/run.h"
#include "api/v1alpha1/team.h"
#include "k8s/json.h"
#include "k8s/result.h"

namespace berth::api::v1alpha1 {

// What DecodeRun keeps; the defaults keep everything. A cache keeps less (issue 29: the engine's
// Runs keep berth's own labels and annotations and templates up to 8 KiB,
// reconcilers::DecodeRun). A Run decoded with less kept must not be encoded or written back whole.
struct RunDecodeOptions {
  // Only the labels and annotations whose key starts with it (empty: all).
  std::string_view keep_meta_prefix;
  // spec.template_json is left empty when the template's JSON is larger (Run::template_bytes and
  // template_hash are set either way).
  size_t kept_template_bytes = SIZE_MAX;
  // Run::spelling: the spec's values as written (what kubectl berth describe shows).
  bool keep_spelling = false;
  // Of metadata.ownerReferences only the controller, of metadata.finalizers only berth's
  // (k8s::MetaKeep::only_needed): the engine's cache (issue 44). FinalizerPatch writes such a
  // run's finalizers without knowing the others.
  bool only_needed_meta = false;
  // false: a Run without metadata.name decodes too (the webhook sees a Run made with
  // generateName before the API server names it).
  bool name_required = true;
};

struct FleetDecodeOptions {
  // Fleet::spelling: the spec's values as written (what kubectl berth fleets shows).
  bool keep_spelling = false;
};

k8s::Result<Run> DecodeRun(const k8s::json::Value& obj, const RunDecodeOptions& options = {});
// For display and checks on one run (kubectl berth, the dashboard, the webhook): never fails; a
// value that is not an object reads as an empty Run, a missing name as "".
Run DecodeRunLeniently(const k8s::json::Value& obj, RunDecodeOptions options = {});
// A RunList's JSON text: each item decoded (items that are not a Run are left out). Errors: "the
// run list is not JSON: ...", "no \"items\" array in the run list".
k8s::Result<std::vector<Run>> DecodeRunList(std::string_view text, const RunDecodeOptions& options = {});
// spec.priority of a Run object, reading nothing else (a webhook's oldObject may nest deeper than
// DecodeRun reads): an integer, else the CRD's default (base::kDefaultPriority); the default for
// nullptr too.
int64_t RunPriorityOf(const k8s::json::Value* obj);
k8s::Result<RunStatus> DecodeRunStatus(const k8s::json::Value& status);
// The status as DecodeRun reads it: a field that cannot be read is left at its default (and the
// first such field named in `problem`, when given).
RunStatus DecodeRunStatusLeniently(const k8s::json::Value& status, std::string* problem = nullptr);
// A status kept as JSON text (k8s::SetAsideObject::status_json: a run berth cannot read otherwise),
// leniently; empty or not JSON: no status.
RunStatus DecodeRunStatusText(std::string_view text);
k8s::Result<Fleet> DecodeFleet(const k8s::json::Value& obj, const FleetDecodeOptions& options = {});
k8s::Result<Team> DecodeTeam(const k8s::json::Value& obj);

// Whole objects: apiVersion, kind, metadata (name, namespace, uid, resourceVersion, generation,
// creationTimestamp, labels, annotations, finalizers), spec and status.
std::string EncodeRun(const Run& run);
// A ticket Run (issue 45): name, namespace, labels and annotations of `meta`, an ownerReference to
// its workload `owner` (not controller), `spec` as berth keeps a ticket's spec.
// `owner` with an empty uid: no ownerReference (a Pod group's ticket).
std::string EncodeTicket(const k8s::ObjectMeta& meta, const k8s::OwnerRef& owner, const RunSpec& spec);
// A merge patch putting a ticket's spec back to `spec` (never spec.stop or spec.suspend) and
// setting `annotations` ("" as a value removes one), guarded by `resource_version`.
std::string TicketSpecPatch(const RunSpec& spec, const std::map<std::string, std::string>& annotations,
                            std::string_view resource_version);
std::string EncodeFleet(const Fleet& fleet);
std::string EncodeTeam(const Team& team);
std::string EncodeRunStatus(const RunStatus& status);
std::string EncodeFleetStatus(const FleetStatus& status);

// {"metadata":{"resourceVersion":rv},"status":{...every field, null for the empty ones...}}: the
// whole status, so a merge patch clears what is no longer set. An empty `resource_version`
// writes unconditionally.
std::string RunStatusPatch(const RunStatus& status, std::string_view resource_version);
// {"metadata":{"resourceVersion":rv},"status":{"queuePosition":n|null}}.
std::string QueuePositionPatch(std::optional<int64_t> position, std::string_view resource_version);
// {"status":{"reason":r,"message":m,"conditions":[c]}}: a run berth cannot otherwise read (too
// deep to decode, issue 29) is told why, unconditionally.
std::string ReasonPatch(const ReasonCode& reason, const std::string& message, const Condition& condition);
// {"metadata":{"resourceVersion":rv,"finalizers":[...]}}: `finalizers` in their order with berth's
// (kRunFinalizer) once at the end (`with_ours`) or left out (not `with_ours`); others are kept.
// berth's finalizer added (`with_ours`) or removed, for a Run as decoded (with only_needed_meta
// too: then a JSON patch that tests the resourceVersion and works at the kept finalizer's index,
// so the others stay as they are). `json_patch` tells which kind of patch it is.
std::string FinalizerPatch(const k8s::ObjectMeta& meta, bool with_ours, bool& json_patch);
std::string FinalizersPatch(std::string_view resource_version, const std::vector<std::string>& finalizers,
                            bool with_ours);
// {"metadata":{"resourceVersion":rv},"status":{...the whole Fleet status...}}.
std::string FleetStatusPatch(const FleetStatus& status, std::string_view resource_version);
// {"metadata":{"resourceVersion":rv},"status":{...the whole Team status...}}.
std::string TeamStatusPatch(const TeamStatus& status, std::string_view resource_version);
// Issue 47: a merge patch of status.usageHistory and status.usageFoldedUntil alone, guarded by
// `resource_version` (the fold that computed them read that version: a conflict means another
// fold, e.g. the last leader's, moved the watermark first). TeamStatusPatch leaves both alone.
std::string TeamUsagePatch(const base::UsageHistory& history, const Time& folded_until, std::string_view resource_version);
// Issue 47: {"metadata":{"resourceVersion":rv},"status":{"releasedAt":t,"accountedUntil":u}}, the
// fold's record of a run's span (released_at unset: left as it is).
std::string RunSpanPatch(const std::optional<Time>& released_at, const Time& accounted_until,
                         std::string_view resource_version);

// Spec patches of kubectl berth and the dashboard. `resource_version` empty: unconditional.
// {"metadata":{"resourceVersion":rv},"spec":{"priority":n}}
std::string PriorityPatch(int64_t priority, std::string_view resource_version);
// {"metadata":{"resourceVersion":rv},"spec":{"stop":true}} / {"spec":{"suspend":b}}
std::string StopPatch(std::string_view resource_version);
std::string SuspendPatch(bool suspend, std::string_view resource_version);

}  // namespace berth::api::v1alpha1
