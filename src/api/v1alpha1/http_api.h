#pragma once
// berth-controller's HTTP API bodies (docs/api.md "The queue endpoint", the dashboard): one page of
// GET /queue (written by the controller, read by kubectl berth queue) and the dashboard's request
// bodies. Like codec.h, the one place that spells them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/v1alpha1/team.h"
#include "k8s/result.h"

namespace berth::api::v1alpha1 {

// One run of the queue, in the order the scheduler would take them.
struct QueueItem {
  int64_t position = 0;  // global, 1-based (a namespace filter leaves gaps)
  std::string ns, name;
  int64_t priority = 0, effective_priority = 0;
  int64_t nodes = 1;
  std::vector<std::string> fleets;  // empty: any fleet
  std::string submitted_at;         // RFC 3339
  int64_t wait_seconds = 0;
  std::string reason, message;
  std::string team;  // the run's Team ("": no Team holds its namespace); written only when set
  // Start-time estimate (issue 33): "estimatedStartAt" (RFC 3339) and "startsInSeconds" (from
  // generatedAt, 0 when due now), both written only when known; empty / nullopt: unknown.
  std::string estimated_start_at;
  std::optional<int64_t> starts_in_seconds;
  // Issue 47: "estimatedStartRange": {"earliest", "latest"} (RFC 3339) and "startsInRangeSeconds":
  // [earliest, latest] (from generatedAt, 0 when due now), written only with a range.
  std::string earliest_start_at, latest_start_at;
  std::optional<std::pair<int64_t, int64_t>> starts_in_range_seconds;
  // Issue 45: "kind": "Run", or for a ticket the kind of the workload it stands for ("Job"), and
  // "workload": that workload's name (written only for a ticket). A page without "kind" reads as Run.
  std::string kind = "Run";
  std::string workload;
};

// {"generatedAt", "leader", "total", "items": [...], "continue"}.
struct QueuePage {
  std::optional<bool> leader;  // "leader": false marks a standby replica, which has no queue
  std::string generated_at;
  int64_t total = 0;
  std::vector<QueueItem> items;
  std::string continue_token;  // "continue": more items follow
};

// Errors: not JSON ("not JSON: ..."), or no "items" array. Missing fields read as zero/empty
// (effectivePriority as priority, nodes as 1, total as the number of items).
k8s::Result<QueuePage> DecodeQueuePage(std::string_view body);
// "leader" only when set, "continue" only when not empty.
std::string EncodeQueuePage(const QueuePage& page);
// The items as an indented JSON array and a newline (kubectl berth queue -o json).
std::string EncodeQueueItemsPretty(const std::vector<QueueItem>& items);

// GET /api/teams, the dashboard's Teams page, in the order given:
//   {"items": [{"name", "parent" ("" at the top), "weight",
//               "fleets": [{"fleet", "nominal", "used", "borrowed", "lent", "borrowingLimit"?, "lendingLimit"?}],
//               "usage": {"gpuHours", "cpuHours", "updatedAt" (null until first counted)},
//               "conditions": [...]}]}
// Amounts as in Team status ({"gpu": 8, "cpu": "64", "memory": "256Gi"}, keys absent when not
// named); the fleets are those of the Team's status, the limits those of its share of that fleet
// (absent: no limit). The Teams' namespaces are not shown: the page needs no token.
std::string EncodeTeamsPage(const std::vector<Team>& teams);

// The queue API's usage answer (controller/usage_api.h), as kubectl berth usage reads it:
//   {"kind": "Usage", "by", "from", "to", "rows": [{"name", "gpuHours", "weightedGpuHours", "share",
//    "cpuHours", "memoryGiBHours", "runs", "medianWait": {"fromSeconds", "underSeconds"} or null, ...}]}
struct UsageRow {
  std::string name;
  double gpu_hours = 0, weighted_gpu_hours = 0, share = 0, cpu_hours = 0, memory_gib_hours = 0;
  int64_t runs = 0;
  // The bucket of the median wait in seconds: from, under (-1: no upper bound); nullopt: no runs.
  std::optional<std::pair<int64_t, int64_t>> median_wait;
};
struct UsageAnswer {
  std::string by, from, to;
  std::vector<UsageRow> rows;
  bool runs_known = false;  // the answer counts runs (a row or the total has "runs")
};
// Errors: not a Usage object, or no "rows" array. Missing numbers read as 0.
k8s::Result<UsageAnswer> DecodeUsageAnswer(std::string_view body);
// The sentence of an error answer {"error": "..."} (the dashboard's and the CLI's forwarded
// errors); `body` itself when it is not one.
std::string ErrorSentenceOf(std::string_view body);

// The dashboard's POST bodies. stop, suspend, resume: exactly the empty object {}.
bool IsEmptyObjectBody(std::string_view body);
// {"priority": N}: `is_object` false when the body is not a JSON object; `priority` set when its
// "priority" is an integer (any value: the caller checks the range).
struct PriorityBody {
  bool is_object = false;
  std::optional<int64_t> priority;
};
PriorityBody DecodePriorityBody(std::string_view body);

}  // namespace berth::api::v1alpha1
