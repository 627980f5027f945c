#pragma once
// Issue 47: the queue API's usage resource (GET /apis/queue.berth.dev/v1alpha1/usage, queue_api.h;
// docs/api.md "The queue API"): the recorded usage of a window, per team, namespace, fleet or user,
// as kubectl berth usage and the dashboard read it. Team, namespace and fleet figures come from
// the Teams' status.usageHistory, per-user ones from each Team's per-user store (api::UserUsage, a
// ConfigMap in berth's own namespace). Pure: the caller reads the Teams, the Fleets and the stores,
// and decides who sees which user rows (queue_api.cc).
//
// The window: the UTC days that overlap [now - since, now), whole (the history is kept per day).
// Answer (JSON):
//   {"kind":"Usage","apiVersion":"queue.berth.dev/v1alpha1","by":"team","since":"7d",
//    "from":"YYYY-MM-DD","to":"YYYY-MM-DD","days":["YYYY-MM-DD",...],
//    "total":{"gpuHours","weightedGpuHours","cpuHours","memoryGiBHours","runs","medianWait"},
//                                                                              (every Team's runs)
//    "rows":[{"name","gpuHours","weightedGpuHours","cpuHours","memoryGiBHours","share","runs","medianWait",
//             "days":[{"day","gpuHours","weightedGpuHours","runs","medianWait"}]}]}  (largest GPU-hours first)
// weighted: each fleet's hours times its Fleet.spec.costWeight; share: the row's GPU-hours over the
// total's (0 when the total is 0). With by=user, `total` is still every Team's (the users' rows of a
// non-admin are their own only).
// runs: the runs that started (were admitted) in the window, from the per-user stores' run starts
// (api::UserUsage::starts); medianWait: the bucket of their median wait (base::MedianWait),
// {"fromSeconds", "underSeconds"} (no underSeconds in the last bucket), null without runs. Both
// left out when the stores could not be read (UsageInputs::runs_known).

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/v1alpha1/team.h"
#include "api/v1alpha1/user_usage.h"
#include "base/run_waits.h"
#include "base/time.h"
#include "controller/http_request.h"

namespace berth::controller {

inline constexpr const char* kUsageBys[] = {"team", "namespace", "user", "fleet"};

struct UsageQuery {
  std::string since = "7d";  // as asked
  std::chrono::milliseconds window{std::chrono::hours(24 * 7)};
  std::string by = "team";
};

// ?since= (a duration, 1h to 90d; default 7d) and ?by= (team, namespace, user, fleet; default
// team), each at most once: 0, or 400 with a sentence in `message`.
int ParseUsageQuery(const HttpRequestView& req, UsageQuery& out, std::string& message);

struct UsageInputs {
  std::vector<std::shared_ptr<const api::v1alpha1::Team>> teams;
  std::map<std::string, double> cost_weights;  // fleet -> Fleet.spec.costWeight (absent: 1)
  std::vector<api::v1alpha1::UserUsage> users;  // every Team's store (hours by=user, runs for every by)
  std::string only_user;                        // by=user: "" every user's row, else this user's alone
  bool runs_known = true;                       // false: `users` could not be read (no runs shown)
};

std::string UsageJson(const UsageQuery& query, const UsageInputs& in, base::TimePoint now);

}  // namespace berth::controller
