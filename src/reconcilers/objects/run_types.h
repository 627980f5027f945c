#pragma once
// The engine's names for the Run API (api/v1alpha1: the typed Run, its enums and codec) and the
// few things the engine's components ask of a Run alike.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "api/v1alpha1/codec.h"
#include "k8s/json.h"

namespace berth::reconcilers {

namespace api = berth::api::v1alpha1;

using api::Condition;
using api::ConditionKind;
using api::ConditionStatus;
using api::ConditionType;
using api::IsPendingPhase;
using api::IsPlacedPhase;
using api::IsPodPhase;
using api::IsTerminalPhase;
using api::kGroupVersion;
using api::kMaxRunNodes;
using api::kMaxTemplateBytes;
using api::kMaxTtlSeconds;
using api::Phase;
using api::PhaseName;
using api::PlacementEntry;
using api::PodPhase;
using api::Reason;
using api::ReasonCode;
using api::RetrySpec;
using api::Run;
using api::RunKey;
using api::RunSpec;
using api::RunStatus;
using api::SetCondition;
using api::FormatTime;
using api::TemplateTooLarge;
using api::Time;
using api::ToApi;

inline constexpr const char* kFinalizer = api::kRunFinalizer;

// Issue 47: who submitted a Run (or a workload, and so its ticket): the creating request's user,
// set by the chart's admission (docs/concepts.md#usage); a run without it counts as kUnknownSubmitter.
inline constexpr const char* kSubmittedByAnnotation = "berth.dev/submitted-by";
inline constexpr const char* kUnknownSubmitter = "unknown";
// The submitter an object's annotations name (kUnknownSubmitter without one).
inline std::string SubmitterOf(const k8s::ObjectMeta& meta) {
  std::string who = meta.Annotation(kSubmittedByAnnotation);
  return who.empty() ? kUnknownSubmitter : who;
}

// Templates up to this size are kept in the engine's cache (issue 29); of a larger one the cached
// Run keeps only its size and hash (Run::template_bytes, template_hash) and it is read again from
// the API server when the run's Pods are made (RunWrites::ReadTemplate), so a cached run costs
// about the same whatever its template.
inline constexpr size_t kKeptTemplateBytes = 8 * 1024;
// What the engine's cache keeps of a Run's labels and annotations: only berth's (a Run's own are
// read by nobody in berth; kubectl apply's last-applied-configuration annotation alone is a second
// copy of the whole Run).
inline constexpr const char* kKeptMetaPrefix = "berth.dev/";

// The informer's decoder: the typed Run as the engine keeps it (its template up to
// kKeptTemplateBytes, only berth.dev/ labels and annotations), nullptr when there is none (no name).
std::shared_ptr<const Run> DecodeRun(const k8s::json::Value& obj);
// A status alone, read as DecodeRun reads it (a field berth cannot read left at its default).
inline RunStatus DecodeRunStatus(const k8s::json::Value& status) { return api::DecodeRunStatusLeniently(status); }

// resourceVersions are etcd revisions: compared numerically to know whether the cache caught up
// with a write. 0 when `rv` is not a number.
uint64_t RvNumber(const std::string& rv);
// The TimePoint of a status time, nullopt when unset.
inline std::optional<k8s::TimePoint> PointOf(const std::optional<Time>& t) {
  return t ? std::optional<k8s::TimePoint>(t->point()) : std::nullopt;
}

}  // namespace berth::reconcilers
