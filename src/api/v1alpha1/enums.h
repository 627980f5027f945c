#pragma once
// A Run's phases and the reasons berth writes, as enums with their API spellings in one table
// each (docs/api.md, docs/concepts.md "A run's life"; the phase enum of the CRD,
// deploy/crds/berth.dev_runs.yaml). The one place of these spellings: the codec (codec.h), the
// engine, the CLI, runops and the dashboard all go through it. Also the Pod phases berth reads (the
// kubelet's, core/v1) and the condition types berth writes, so no spelling appears twice.
//
// ToApi gives the spelling; Parse* gives the enum, nullopt for a spelling berth does not know
// (a status written by something else: each caller handles that as it did the string before).

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace berth::api::v1alpha1 {

// status.phase of a Run. "" (no status yet) is no phase: ParsePhase("") is nullopt.
enum class Phase { kPending, kScheduled, kRunning, kSucceeded, kFailed };

// The reasons berth writes: status.reason of a Run, the reasons of its conditions and Events,
// and those of a Fleet's conditions.
enum class Reason {
  // A Run's status.reason (docs/concepts.md "A run's life").
  kNoCapacity,           // Pending (waits) or Failed (no retry on no-capacity)
  kUnschedulable,        // Pending (with retry) or Failed
  kQuotaExceeded,        // Pending: the namespace's ResourceQuota has no room
  kPreempting,           // Pending: evicting lower-priority runs to start on the nodes they free
  kPreempted,            // Pending again (retry on interruption) or Failed: evicted for a higher-priority run
  kTeamShare,            // Pending: its Team's share (borrowing or lending limits) has no room (issue 31)
  kReclaimed,            // Pending again (retry on interruption) or Failed: its team borrowed, the owner took it back
  kSuspended,            // Pending, out of the queue (spec.suspend)
  kResumed,              // Pending, the pass after spec.suspend went back to false
  kScheduled,            // Scheduled
  kRunning,              // Running
  kSucceeded,            // Succeeded
  kRetryLimitExceeded,   // Failed: still waiting when the retry duration passed
  kPodFailed,            // Failed, or Pending again on a retry
  kInterrupted,          // Failed, or Pending again on a retry
  kMaxDurationExceeded,  // Failed
  kStartTimeout,         // Failed, or Pending again on a retry
  kInvalidSpec,          // Failed; also a Fleet's Ready=False
  kStopped,              // Failed (spec.stop)
  kPodGroupIncomplete,   // Pending: a Pod group's ticket while fewer Pods than its size exist (issue 45)
  kGracePeriodTooLong,   // Pending: a workload's Pods' grace period above every fleet's maxGracePeriod
  kBudgetExhausted,      // Pending: its Team's budget (Team.spec.budgets) is spent (issue 47)
  // Condition Ready=False of a Run that succeeded.
  kFinished,
  // Events only.
  kStarted,
  kRetrying,
  kSpecChangeIgnored,
  kStrayPod,
  // A Fleet's conditions.
  kInstancesReady,
  kNoReadyInstances,
  kNodesClaimedByOlderFleet,
  kNoConflict,
  // A Team's condition Conflict=True.
  kNamespaceInAnotherTeam,
};

// status.phase of a Pod (core/v1 PodPhase) as the kubelet reports it. "" (not reported yet) is
// none of them.
enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// The condition types berth writes on Runs and Fleets.
enum class ConditionType { kScheduled, kReady, kFinished, kConflict };

// A condition's status (metav1.ConditionStatus; the CRDs' enum).
enum class ConditionStatus { kTrue, kFalse, kUnknown };

// The state of one instance in a Fleet's status.instances (docs/api.md; the scheduling core's
// scheduling::InstanceState, converted at the edge).
enum class InstanceState { kIdle, kBusy, kFull, kRetired, kExpired, kNotReady, kInvalid };

// A core/v1 Event's type.
enum class EventType { kNormal, kWarning };

// The tables: every enum value once, in declaration order (checked below).
inline constexpr std::array<std::pair<Phase, std::string_view>, 5> kPhaseNames{{
    {Phase::kPending, "Pending"},
    {Phase::kScheduled, "Scheduled"},
    {Phase::kRunning, "Running"},
    {Phase::kSucceeded, "Succeeded"},
    {Phase::kFailed, "Failed"},
}};

inline constexpr std::array<std::pair<Reason, std::string_view>, 32> kReasonNames{{
    {Reason::kNoCapacity, "NoCapacity"},
    {Reason::kUnschedulable, "Unschedulable"},
    {Reason::kQuotaExceeded, "QuotaExceeded"},
    {Reason::kPreempting, "Preempting"},
    {Reason::kPreempted, "Preempted"},
    {Reason::kTeamShare, "TeamShare"},
    {Reason::kReclaimed, "Reclaimed"},
    {Reason::kSuspended, "Suspended"},
    {Reason::kResumed, "Resumed"},
    {Reason::kScheduled, "Scheduled"},
    {Reason::kRunning, "Running"},
    {Reason::kSucceeded, "Succeeded"},
    {Reason::kRetryLimitExceeded, "RetryLimitExceeded"},
    {Reason::kPodFailed, "PodFailed"},
    {Reason::kInterrupted, "Interrupted"},
    {Reason::kMaxDurationExceeded, "MaxDurationExceeded"},
    {Reason::kStartTimeout, "StartTimeout"},
    {Reason::kInvalidSpec, "InvalidSpec"},
    {Reason::kStopped, "Stopped"},
    {Reason::kPodGroupIncomplete, "PodGroupIncomplete"},
    {Reason::kGracePeriodTooLong, "GracePeriodTooLong"},
    {Reason::kBudgetExhausted, "BudgetExhausted"},
    {Reason::kFinished, "Finished"},
    {Reason::kStarted, "Started"},
    {Reason::kRetrying, "Retrying"},
    {Reason::kSpecChangeIgnored, "SpecChangeIgnored"},
    {Reason::kStrayPod, "StrayPod"},
    {Reason::kInstancesReady, "InstancesReady"},
    {Reason::kNoReadyInstances, "NoReadyInstances"},
    {Reason::kNodesClaimedByOlderFleet, "NodesClaimedByOlderFleet"},
    {Reason::kNoConflict, "NoConflict"},
    {Reason::kNamespaceInAnotherTeam, "NamespaceInAnotherTeam"},
}};

inline constexpr std::array<std::pair<PodPhase, std::string_view>, 5> kPodPhaseNames{{
    {PodPhase::kPending, "Pending"},
    {PodPhase::kRunning, "Running"},
    {PodPhase::kSucceeded, "Succeeded"},
    {PodPhase::kFailed, "Failed"},
    {PodPhase::kUnknown, "Unknown"},
}};

inline constexpr std::array<std::pair<ConditionType, std::string_view>, 4> kConditionTypeNames{{
    {ConditionType::kScheduled, "Scheduled"},
    {ConditionType::kReady, "Ready"},
    {ConditionType::kFinished, "Finished"},
    {ConditionType::kConflict, "Conflict"},
}};

inline constexpr std::array<std::pair<ConditionStatus, std::string_view>, 3> kConditionStatusNames{{
    {ConditionStatus::kTrue, "True"},
    {ConditionStatus::kFalse, "False"},
    {ConditionStatus::kUnknown, "Unknown"},
}};

inline constexpr std::array<std::pair<InstanceState, std::string_view>, 7> kInstanceStateNames{{
    {InstanceState::kIdle, "Idle"},
    {InstanceState::kBusy, "Busy"},
    {InstanceState::kFull, "Full"},
    {InstanceState::kRetired, "Retired"},
    {InstanceState::kExpired, "Expired"},
    {InstanceState::kNotReady, "NotReady"},
    {InstanceState::kInvalid, "Invalid"},
}};

inline constexpr std::array<std::pair<EventType, std::string_view>, 2> kEventTypeNames{{
    {EventType::kNormal, "Normal"},
    {EventType::kWarning, "Warning"},
}};

namespace run_phase_internal {

template <typename E, size_t N>
constexpr bool InOrder(const std::array<std::pair<E, std::string_view>, N>& table) {
  for (size_t i = 0; i < N; ++i) {
    if (static_cast<size_t>(table[i].first) != i || table[i].second.empty()) return false;
  }
  return true;
}

template <typename E, size_t N>
constexpr std::optional<E> Parse(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [e, name] : table) {
    if (name == s) return e;
  }
  return std::nullopt;
}

}  // namespace run_phase_internal

// Indexing by the enum's value is then exact (and a value added without its spelling, or out of
// order, does not compile).
static_assert(run_phase_internal::InOrder(kPhaseNames));
static_assert(run_phase_internal::InOrder(kReasonNames));
static_assert(run_phase_internal::InOrder(kPodPhaseNames));
static_assert(run_phase_internal::InOrder(kConditionTypeNames));
static_assert(run_phase_internal::InOrder(kConditionStatusNames));
static_assert(run_phase_internal::InOrder(kInstanceStateNames));
static_assert(run_phase_internal::InOrder(kEventTypeNames));
static_assert(kReasonNames.size() == static_cast<size_t>(Reason::kNamespaceInAnotherTeam) + 1);

constexpr std::string_view ToApi(Phase p) { return kPhaseNames[static_cast<size_t>(p)].second; }
constexpr std::string_view ToApi(Reason r) { return kReasonNames[static_cast<size_t>(r)].second; }
constexpr std::string_view ToApi(PodPhase p) { return kPodPhaseNames[static_cast<size_t>(p)].second; }
constexpr std::string_view ToApi(ConditionType t) { return kConditionTypeNames[static_cast<size_t>(t)].second; }
constexpr std::string_view ToApi(ConditionStatus s) { return kConditionStatusNames[static_cast<size_t>(s)].second; }
constexpr std::string_view ToApi(InstanceState s) { return kInstanceStateNames[static_cast<size_t>(s)].second; }
constexpr std::string_view ToApi(EventType t) { return kEventTypeNames[static_cast<size_t>(t)].second; }

constexpr std::optional<Phase> ParsePhase(std::string_view s) { return run_phase_internal::Parse(kPhaseNames, s); }
constexpr std::optional<Reason> ParseReason(std::string_view s) { return run_phase_internal::Parse(kReasonNames, s); }
constexpr std::optional<PodPhase> ParsePodPhase(std::string_view s) {
  return run_phase_internal::Parse(kPodPhaseNames, s);
}
constexpr std::optional<ConditionType> ParseConditionType(std::string_view s) {
  return run_phase_internal::Parse(kConditionTypeNames, s);
}
constexpr std::optional<ConditionStatus> ParseConditionStatus(std::string_view s) {
  return run_phase_internal::Parse(kConditionStatusNames, s);
}
constexpr std::optional<InstanceState> ParseInstanceState(std::string_view s) {
  return run_phase_internal::Parse(kInstanceStateNames, s);
}

// Parse* by type, for generic code (OpenEnum).
template <typename E>
constexpr std::optional<E> ParseApi(std::string_view s);
template <>
constexpr std::optional<Reason> ParseApi<Reason>(std::string_view s) { return ParseReason(s); }
template <>
constexpr std::optional<ConditionType> ParseApi<ConditionType>(std::string_view s) { return ParseConditionType(s); }

// Comparisons of a field as written (a std::string of RunStatus, Pod, Condition) with a value.
constexpr bool IsPhase(std::string_view phase, Phase p) { return phase == ToApi(p); }
constexpr bool IsReason(std::string_view reason, Reason r) { return reason == ToApi(r); }
constexpr bool IsPodPhase(std::string_view phase, PodPhase p) { return phase == ToApi(p); }
constexpr bool IsConditionType(std::string_view type, ConditionType t) { return type == ToApi(t); }
// Succeeded or Failed: a run that has ended.
constexpr bool IsTerminalPhase(std::string_view phase) {
  return IsPhase(phase, Phase::kSucceeded) || IsPhase(phase, Phase::kFailed);
}

// An open enum, as Kubernetes' string-typed reasons and condition types are (Go's
// `type Reason string` with constants): one of E's values, or a spelling berth does not know
// (written by a newer berth, another controller or by hand), kept as written so that a status
// read and written back does not lose it. Empty: no value ("" in the API).
template <typename E>
class OpenEnum {
 public:
  OpenEnum() = default;
  OpenEnum(E e) : known_(e) {}  // NOLINT(google-explicit-constructor): a known value is one
  static OpenEnum FromApi(std::string_view s) {
    OpenEnum out;
    if (auto e = ParseApi<E>(s)) {
      out.known_ = e;
    } else {
      out.other_ = std::string(s);
    }
    return out;
  }
  // The API spelling ("" when empty).
  std::string_view api() const { return known_ ? ToApi(*known_) : std::string_view(other_); }
  std::string str() const { return std::string(api()); }
  bool empty() const { return !known_ && other_.empty(); }
  // The value when berth knows the spelling.
  std::optional<E> known() const { return known_; }

  friend bool operator==(const OpenEnum& a, const OpenEnum& b) { return a.known_ == b.known_ && a.other_ == b.other_; }
  friend bool operator==(const OpenEnum& a, E e) { return a.known_ == e; }

 private:
  std::optional<E> known_;
  std::string other_;  // set only when known_ is not
};

using ReasonCode = OpenEnum<Reason>;
using ConditionKind = OpenEnum<ConditionType>;

}  // namespace berth::api::v1alpha1
