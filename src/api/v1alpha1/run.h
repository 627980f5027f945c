#pragma once
// The Run custom resource (docs/api.md "Run"): spec and status as typed values. codec.h reads and
// writes them; nothing else spells their JSON.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/meta.h"
#include "base/boxed.h"
#include "base/priority.h"
#include "k8s/objects.h"

namespace berth::api::v1alpha1 {

inline constexpr const char* kRunFinalizer = "berth.dev/run-cleanup";

// The most nodes one run may ask for (the CRD's spec.nodes maximum, deploy/crds/berth.dev_runs.yaml;
// Kubernetes' own limit of a cluster's size). DecodeRun refuses more, so the scheduler's 32-bit
// node counts always hold the value.
inline constexpr int64_t kMaxRunNodes = 5000;
// spec.ttlSecondsAfterFinished's maximum (an int32, as in Jobs; the CRD's maximum).
inline constexpr int64_t kMaxTtlSeconds = 2147483647;

// How large a Run's spec.template may be (issue 29; docs/api.md#how-large-a-run-may-be): its JSON
// at most kMaxTemplateBytes (256 KiB, what kubectl apply can store of an object in its
// last-applied annotation). The webhook refuses a larger one; DecodeRun names it in
// invalid_message (TemplateTooLarge), so the controller fails it InvalidSpec at once.
inline constexpr size_t kMaxTemplateBytes = 256 * 1024;
// The sentence for a template of `bytes` bytes over kMaxTemplateBytes.
std::string TemplateTooLarge(size_t bytes);
// A template's hash as status.templateHash spells it (issue 44): 16 lowercase hex digits of
// Run::template_hash (FNV-1a over the template's JSON as the API server serves it: the same in
// every build, so a hash written by one controller is read by the next).
std::string TemplateHashText(uint64_t hash);
// The sentence of a placed run whose spec.template no longer has the hash recorded at placement.
std::string TemplateChangedAfterPlacement(const std::string& placed_hash, const std::string& now_hash);

struct RetrySpec {
  bool on_no_capacity = false, on_interruption = false, on_error = false;
  std::optional<Duration> duration;  // nullopt = "off" (never give up)
  friend bool operator==(const RetrySpec&, const RetrySpec&) = default;
};

// spec.workloadRef (issue 45): the workload (a batch/v1 Job, ...) this Run is the ticket of. berth
// writes tickets; a ticket has no spec.template: the workload's own controller makes its Pods.
struct WorkloadRef {
  std::string api_version, kind, name, uid;
  friend bool operator==(const WorkloadRef&, const WorkloadRef&) = default;
};

struct RunSpec {
  // Defaults applied by the CRD; decoded defensively anyway.
  int64_t priority = base::kDefaultPriority;
  int64_t nodes = 1;
  // spec.wholeInstances (docs/api.md): nullopt = by nodes (1: a slice; more: whole instances of one
  // cluster fleet/domain); false = every Pod on a slice (a gang of slices when nodes > 1, Pods may
  // share an instance); true = every Pod on a whole instance (nodes 1 too).
  std::optional<bool> whole_instances;
  // spec.topology (issue 48): the level of the fleet's topology its nodes stay within, required
  // or preferred (at most one of them set; "" for none).
  std::string topology_required, topology_preferred;
  // spec.resources, per node: cpu in millicores, memory in bytes, GPUs of the fleet's gpuResource.
  int64_t cpu_milli = 0, memory_bytes = 0, gpus = 0;
  std::vector<std::string> fleets;
  std::optional<Duration> max_duration;  // nullopt = off
  // spec.startTimeout: unset = the controller's default; nullopt inside = "off".
  std::optional<std::optional<Duration>> start_timeout;
  std::optional<RetrySpec> retry;  // nullopt = no retry
  // spec.ttlSecondsAfterFinished (Jobs' field and meaning): delete the run this long after it
  // finished; 0 = as soon as it finished. nullopt = the controller's --finished-run-ttl.
  // May change at any time, also after the run finished.
  std::optional<int64_t> ttl_seconds_after_finished;
  // spec.stop: the user asked to end the run (kubectl berth stop): Failed with reason Stopped,
  // never resubmitted. Anything but a JSON boolean reads as false.
  bool stop = false;
  // spec.suspend (a Job's field and meaning; kubectl berth suspend/resume): out of the queue, its
  // Pods stopped, until it is false again. Anything but a JSON boolean reads as false.
  bool suspend = false;
  // spec.template, a PodTemplateSpec kept as JSON text (the CRD preserves unknown fields there:
  // every field a user writes reaches the Pods).
  std::string template_json;
  // spec.workloadRef: set on a ticket (exactly one of template and workloadRef).
  std::optional<WorkloadRef> workload_ref;
  friend bool operator==(const RunSpec&, const RunSpec&) = default;
};

struct PlacementEntry {
  int rank = 0;
  std::string node;
  int blocks = 0;
  std::string pod;
  friend bool operator==(const PlacementEntry&, const PlacementEntry&) = default;
};

struct RunStatus {
  std::optional<Phase> phase;  // nullopt: no status yet
  ReasonCode reason;
  std::string message;
  std::optional<int64_t> queue_position;
  std::optional<int64_t> effective_priority;
  // status.estimatedStartAt (issue 33): when berth expects to place this Pending run if nothing new
  // arrives (docs/scheduling.md "Start-time estimates"); nullopt: unknown (the message says why).
  std::optional<Time> estimated_start_at;
  // status.estimatedStartRange (issue 47): where the start will likely fall, the 10th and 90th
  // percentile ("Ranges" in docs/scheduling.md); nullopt with no estimate or no range.
  struct StartRange {
    Time earliest, latest;
    friend bool operator==(const StartRange&, const StartRange&) = default;
  };
  std::optional<StartRange> estimated_start_range;
  std::string fleet;
  std::vector<PlacementEntry> placement;
  // status.podUIDs (issue 44): the uids of the Pods berth made for the run (any attempt), written
  // right after each is created; a Pod claiming the run that is not listed is not the run's
  // (reconcilers/writers/pod_builder.h IsRunsPod).
  std::vector<std::string> pod_uids;
  std::optional<Time> submitted_at, scheduled_at, started_at, finished_at;
  int64_t resubmissions = 0;
  // A resubmitted run waits until retry_after before it is queued again; the delay was
  // retry_backoff_seconds (doubling per quick failure, see docs/concepts.md).
  std::optional<Time> retry_after;
  int64_t retry_backoff_seconds = 0;
  int64_t observed_generation = 0;
  std::vector<Condition> conditions;
  // status.preemption (issue 17): this pending run evicts some runs so that it can start on
  // `nodes` of `fleet`; those nodes are kept for it until it is placed. Written before any victim
  // is evicted, cleared when the run is placed or the plan no longer holds. The status is the
  // run's owner's to read, so it names only the victims of the run's own namespace (`victims`,
  // "namespace/name") and counts the others (`other_victims`, issue 44); `victim_uids` (every
  // victim's metadata.uid, an opaque id) is berth's record of whom it evicts, read back after a
  // restart (reconcilers/objects/preemptions.h). A record of an older berth has victims of any namespace
  // in `victims` and no uids.
  struct Preemption {
    std::string fleet;
    std::vector<std::string> nodes, victims;
    int64_t other_victims = 0;
    std::vector<std::string> victim_uids;
    // A reclaim (issue 31): the victims are other teams' runs beyond their nominal share, stopped
    // whatever their priority (reason Reclaimed).
    bool reclaim = false;
    friend bool operator==(const Preemption&, const Preemption&) = default;
  };
  std::optional<Preemption> preemption;
  // status.templateHash (issue 44): TemplateHashText of the spec.template the run was placed
  // with, written with the placement. While the run is placed berth makes Pods only from a
  // template of this hash; a changed template fails the run InvalidSpec when Pods are to be made.
  std::string template_hash;
  // Usage accounting (issue 47, docs/concepts.md "Usage"): the run's span of holding blocks.
  // held_since: when its blocks were taken (its admission); released_at: when berth saw them free
  // again (no placement, no Pod of it the kubelet still counts: time stopping included);
  // accounted_until: up to when the span is folded into its Team's usageHistory. held: what the
  // span holds (the blocks' resources on `fleet`), written with held_since. A new span begins
  // only once the last one is accounted (SpanAccounted, reconcilers/objects/usage_spans.h).
  std::optional<Time> held_since, released_at, accounted_until;
  struct Held {
    std::string fleet;
    int64_t gpus = 0, cpu_milli = 0, memory_bytes = 0;
    friend bool operator==(const Held&, const Held&) = default;
  };
  base::Boxed<Held> held;  // out of line: most runs in a queue never held blocks
  friend bool operator==(const RunStatus&, const RunStatus&) = default;
};

// The spec's values as the user wrote them (RunDecodeOptions::keep_spelling), for what kubectl
// berth describe shows: a quantity, a duration or a number as text ("8", "64Gi", "4h", "600"),
// "" when absent.
struct RunSpelling {
  std::string cpu, memory, gpu;
  std::string max_duration, start_timeout, ttl_seconds_after_finished;
  bool has_retry = false;              // spec.retry is an object
  std::vector<std::string> retry_on;   // spec.retry.onEvents in their order
  std::string retry_duration;
};

struct Run {
  k8s::ObjectMeta meta;
  RunSpec spec;
  RunStatus status;
  // spec.template as DecodeRun read it: the size of its JSON (0: no template) and a hash of that
  // JSON (a spec change is noticed by it). Set also when a decoder's RunDecodeOptions left
  // spec.template_json empty (a template larger than kept_template_bytes: read the run again for
  // it). Not set for a Run made in memory.
  size_t template_bytes = 0;
  uint64_t template_hash = 0;
  // The first problem of the spec, naming the field ("spec.maxDuration: ..."): a value the
  // schema should have refused or the engine cannot use (the run fails InvalidSpec). Empty when
  // the spec is usable.
  std::string invalid_message;
  // The first status field that could not be read (left at its default), naming it.
  std::string status_problem;
  // Set only with RunDecodeOptions::keep_spelling (the CLI's); out of line, 8 bytes in the engine's
  // hundred thousand cached runs instead of 264.
  base::Boxed<RunSpelling> spelling;
};

// A ticket Run (spec.workloadRef set): berth makes no Pods for it.
inline bool IsTicket(const Run& r) { return r.spec.workload_ref.has_value(); }

// "namespace/name": a run's key in the informer's cache, the queue and the writers.
std::string RunKey(const Run& r);
// Phase Pending (or none yet): a waiting run; Scheduled or Running: a placed run.
bool IsPendingPhase(const std::optional<Phase>& phase);
bool IsPlacedPhase(const std::optional<Phase>& phase);
// Succeeded or Failed: a run that has ended.
bool IsTerminalPhase(const std::optional<Phase>& phase);
// The phase's spelling, "" for none.
std::string_view PhaseName(const std::optional<Phase>& phase);

}  // namespace berth::api::v1alpha1
