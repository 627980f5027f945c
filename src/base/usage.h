#pragma once
// Issue 47: a team's recorded usage as the API shows it (Team.status.usageHistory, docs/api.md) and
// the scheduling core folds it (scheduling/usage.h): one definition for both.

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace berth::base {

// Resource-hours.
struct UsageHours {
  double gpu = 0, cpu = 0, memory_gib = 0;
  UsageHours& operator+=(const UsageHours& o) {
    gpu += o.gpu;
    cpu += o.cpu;
    memory_gib += o.memory_gib;
    return *this;
  }
  friend bool operator==(const UsageHours&, const UsageHours&) = default;
};

inline constexpr const char* kOthers = "others";
inline constexpr size_t kNamedNamespaces = 20;
inline constexpr int kHistoryDays = 90;

// One UTC day on one fleet.
struct UsageDay {
  std::string day;  // "YYYY-MM-DD" (UTC)
  std::string fleet;
  UsageHours total;
  std::map<std::string, UsageHours> by_namespace;  // at most kNamedNamespaces named + kOthers
  // Per UTC hour of the day (0..23): kept for the days the caller asks (FoldOptions), else empty.
  std::map<int, UsageHours> hourly;
  friend bool operator==(const UsageDay&, const UsageDay&) = default;
};

// Days in order (day, then fleet).
using UsageHistory = std::vector<UsageDay>;

}  // namespace berth::base
