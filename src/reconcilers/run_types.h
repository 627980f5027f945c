#pragma once
// The Run and Fleet custom resources, decoded from the API into typed values.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "k8s/objects.h"
#include "base/priority.h"
#include "api/v1alpha1/enums.h"

namespace berth::reconcilers {

// Phases, reasons and condition types with their API spellings: api/v1alpha1/enums.h's one table.
using api::v1alpha1::ConditionType;
using api::v1alpha1::IsConditionType;
using api::v1alpha1::IsPhase;
using api::v1alpha1::IsPodPhase;
using api::v1alpha1::IsReason;
using api::v1alpha1::IsTerminalPhase;
using api::v1alpha1::ParsePhase;
using api::v1alpha1::ParseReason;
using api::v1alpha1::Phase;
using api::v1alpha1::PodPhase;
using api::v1alpha1::Reason;
using api::v1alpha1::ToApi;

inline constexpr const char* kGroupVersion = "berth.dev/v1alpha1";
inline constexpr const char* kFinalizer = "berth.dev/run-cleanup";

struct RetrySpec {
  bool on_no_capacity = false, on_interruption = false, on_error = false;
  std::optional<std::chrono::milliseconds> duration;  // nullopt = "off" (never give up)
};

struct Condition {
  std::string type, status, reason, message, last_transition_time;
  int64_t observed_generation = 0;
};

struct PlacementEntry {
  int rank = 0;
  std::string node;
  int blocks = 0;
  std::string pod;
};

struct RunStatus {
  std::string phase, reason, message;
  std::optional<int64_t> queue_position;
  std::optional<int64_t> effective_priority;
  std::string fleet;
  std::vector<PlacementEntry> placement;
  std::string submitted_at, scheduled_at, started_at, finished_at;
  int64_t resubmissions = 0;
  // A resubmitted run waits until retry_after (RFC 3339) before it is queued again; the delay was
  // retry_backoff_seconds (doubling per quick failure, see docs/concepts.md).
  std::string retry_after;
  int64_t retry_backoff_seconds = 0;
  int64_t observed_generation = 0;
  std::vector<Condition> conditions;
  // status.preemption (issue 17): this pending run evicts `victims` ("namespace/name") so that it
  // can start on `nodes` of `fleet`; those nodes are kept for it until it is placed. Written
  // before any victim is evicted, cleared when the run is placed or the plan no longer holds.
  struct Preemption {
    std::string fleet;
    std::vector<std::string> nodes, victims;
    friend bool operator==(const Preemption&, const Preemption&) = default;
  };
  std::optional<Preemption> preemption;
};

// The most nodes one run may ask for (the CRD's spec.nodes maximum, deploy/crds/berth.dev_runs.yaml;
// Kubernetes' own limit of a cluster's size). DecodeRun refuses more, so the scheduler's 32-bit
// node counts always hold the value.
inline constexpr int64_t kMaxRunNodes = 5000;

// spec.ttlSecondsAfterFinished's maximum (an int32, as in Jobs; the CRD's maximum).
inline constexpr int64_t kMaxTtlSeconds = 2147483647;

struct Run {
  k8s::ObjectMeta meta;
  // spec (defaults applied by the CRD; decoded defensively anyway)
  int64_t priority = base::kDefaultPriority;
  int64_t nodes = 1;
  int64_t cpu_milli = 0, memory_bytes = 0, gpus = 0;
  std::vector<std::string> fleets;
  std::optional<std::chrono::milliseconds> max_duration;  // nullopt = off
  // spec.startTimeout: unset = the controller's default; nullopt inside = "off".
  std::optional<std::optional<std::chrono::milliseconds>> start_timeout;
  std::optional<RetrySpec> retry;                         // nullopt = no retry
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
  std::string template_json;                              // spec.template as JSON
  // Set when the spec cannot be used (a quantity or duration the core cannot read).
  std::string invalid_message;
  RunStatus status;
};

std::shared_ptr<const Run> DecodeRun(const k8s::json::Value& obj);
RunStatus DecodeRunStatus(const k8s::json::Value& status);

// What the engine's components ask of a Run alike.
// "namespace/name": the run's key in the informer's cache, the queue and the writers.
std::string RunKey(const Run& r);
// Phase Pending (or none yet): a waiting run; Scheduled or Running: a placed run.
bool IsPendingPhase(const std::string& phase);
bool IsPlacedPhase(const std::string& phase);
// resourceVersions are etcd revisions: compared numerically to know whether the cache caught up
// with a write. 0 when `rv` is not a number.
uint64_t RvNumber(const std::string& rv);
// An RFC 3339 time of a status field; nullopt when empty or unreadable.
std::optional<k8s::TimePoint> ParseStatusTime(const std::string& s);

}  // namespace berth::reconcilers
