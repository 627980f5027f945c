#pragma once
// What every berth.dev/v1alpha1 type shares: the group version, times as the API stores them,
// conditions (metav1.Condition) and the one way to set one.

#include <chrono>
#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/v1alpha1/enums.h"
#include "base/time.h"

namespace berth::api::v1alpha1 {

using base::Duration;
using base::TimePoint;

inline constexpr const char* kGroupVersion = "berth.dev/v1alpha1";

// metav1.Time: a point in time at whole seconds, what the API stores and returns ("...:38Z").
// Made from a TimePoint truncated toward the past, so a status built in memory compares equal to
// the same status read back from the API.
class Time {
 public:
  Time() = default;
  explicit Time(TimePoint t) : t_(std::chrono::floor<std::chrono::seconds>(t)) {}
  TimePoint point() const { return t_; }
  friend auto operator<=>(const Time&, const Time&) = default;

 private:
  TimePoint t_{};
};

// "2026-11-21T19:37:38Z" (metav1.Time's spelling); "" when unset.
std::string FormatTime(const std::optional<Time>& t);

// A standard condition ({type, status, reason, message, lastTransitionTime, observedGeneration}).
struct Condition {
  ConditionKind type;
  ConditionStatus status = ConditionStatus::kUnknown;
  ReasonCode reason;
  std::string message;
  std::optional<Time> last_transition_time;
  int64_t observed_generation = 0;
  friend bool operator==(const Condition&, const Condition&) = default;
};

// Sets condition `type` (apimachinery's meta.SetStatusCondition): lastTransitionTime moves to
// `now` only when its status changes; a new condition is appended.
void SetCondition(std::vector<Condition>& conditions, ConditionKind type, ConditionStatus status, ReasonCode reason,
                  const std::string& message, int64_t generation, TimePoint now);
// The condition of `type`, or nullptr.
const Condition* FindCondition(const std::vector<Condition>& conditions, ConditionType type);

}  // namespace berth::api::v1alpha1
