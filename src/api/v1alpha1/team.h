#pragma once
// The Team custom resource (docs/api.md "Team", issue 31): spec and status as typed values. The
// scheduling core keeps its own pure scheduling::TeamSpec; the engine converts at the edge.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/meta.h"
#include "base/usage.h"
#include "k8s/objects.h"

namespace berth::api::v1alpha1 {

// Amounts keyed as Run.spec.resources: cpu (millicores), memory (bytes), gpu (count). A key
// absent is nullopt (not limited, or not named by the share).
struct ResourceAmounts {
  std::optional<int64_t> cpu_milli, memory_bytes, gpus;
  friend bool operator==(const ResourceAmounts&, const ResourceAmounts&) = default;
};

struct TeamShare {
  std::string fleet;
  ResourceAmounts nominal;                        // guaranteed to the team
  std::optional<ResourceAmounts> borrowing_limit;  // nullopt: no limit
  std::optional<ResourceAmounts> lending_limit;    // nullopt: lends all its idle nominal share
  friend bool operator==(const TeamShare&, const TeamShare&) = default;
};

// Issue 47 (3): one of Team.spec.budgets: `hours` of `resource` ("gpu", "cpu" or "memory": GiB-
// hours) over a rolling window of `period` (1h to 90d), on `fleet` ("": all fleets). A fleet's
// hours count spec.costWeight times.
struct TeamBudget {
  std::string resource;
  double hours = 0;
  std::string period;                 // as written, e.g. "30d"
  std::chrono::milliseconds period_ms{0};  // parsed
  std::string fleet;
  friend bool operator==(const TeamBudget&, const TeamBudget&) = default;
};

// The longest and shortest budget period: the usage history berth keeps is 90 days (hourly).
inline constexpr std::chrono::hours kMaxBudgetPeriod{24 * 90};
inline constexpr std::chrono::hours kMinBudgetPeriod{1};

struct TeamSpec {
  std::vector<std::string> namespaces;
  std::string parent;  // "" at the top; two levels at most
  int64_t weight = 1;  // fair-share weight among siblings
  std::vector<TeamShare> shares;
  std::vector<TeamBudget> budgets;  // issue 47
  friend bool operator==(const TeamSpec&, const TeamSpec&) = default;
};

struct TeamFleetStatus {
  std::string fleet;
  ResourceAmounts nominal, used, borrowed, lent;
  friend bool operator==(const TeamFleetStatus&, const TeamFleetStatus&) = default;
};

// Issue 47 (3): one entry of Team.status.budgets: a budget of the spec as the engine measured it at
// the last status interval: `used` of `hours` in the window ending then; `refills_at` when spent
// and a refill is known (its usage falls back under `hours` if the team starts nothing more).
struct TeamBudgetStatus {
  std::string resource;
  std::string period;  // as the spec writes it
  std::string fleet;   // "": all fleets
  double hours = 0, used = 0;
  std::optional<Time> refills_at;
  friend bool operator==(const TeamBudgetStatus&, const TeamBudgetStatus&) = default;
};

struct TeamStatus {
  std::vector<TeamFleetStatus> fleets;
  double gpu_hours = 0, cpu_hours = 0;  // status.usage: decayed past usage
  std::optional<Time> usage_updated_at;  // status.usage.updatedAt: when those values were true
  int64_t observed_generation = 0;
  std::vector<Condition> conditions;
  // Issue 47: status.usageHistory (per UTC day and fleet, docs/api.md) and status.usageFoldedUntil
  // (every run's usage up to then is in it): written only by the usage fold (TeamUsagePatch).
  base::UsageHistory usage_history;
  std::optional<Time> usage_folded_until;
  // Issue 47 (7): status.usage.weightedGpuHours/weightedCpuHours: the decayed usage with each
  // fleet's hours times its costWeight (what fair share compares); nullopt when absent (then the
  // raw values stand for them).
  std::optional<double> weighted_gpu_hours, weighted_cpu_hours;
  std::vector<TeamBudgetStatus> budgets;  // issue 47 (3): status.budgets, in spec order
  friend bool operator==(const TeamStatus&, const TeamStatus&) = default;
};

struct Team {
  k8s::ObjectMeta meta;
  TeamSpec spec;
  TeamStatus status;
  std::string invalid_message;  // the first unusable spec field, named
  std::string status_problem;   // the first unreadable status field, named
};

}  // namespace berth::api::v1alpha1
