#pragma once
// Start-time estimates (issue 33, api.md "Start-time estimates"): when will each waiting run
// start? The scheduling rules themselves (Schedule, scheduler.h) run forward in time over the
// expected ends of the running runs, with aging and priorities as they are, assuming no new
// arrivals: every cycle places what fits at its instant, each run placed is assumed to run for
// its expected runtime (its maxDuration, or what the engine learned from comparable finished
// runs), and the next cycle happens when the next run ends. Pure and deterministic like the core.
//
// What the forecast does not know, it says rather than guesses (StartEstimate::unknown):
//  - a run that is Unschedulable;
//  - a run that waits behind capacity no known end will free (running runs without an expected
//    end, or instances that never come back);
//  - a run that waits for its namespace's ResourceQuota: quota usage is the API server's count,
//    which the forecast does not project;
//  - a start beyond the horizon or after the cycle budget (the cost bound).
//
// Also, from the cycle at `now`: "would start now with maxDuration <= X" where only the
// reservation (backfill: X = the reservation's earliest start - now) or instance lifetimes
// (X = the most lifetime any instance with room has left) hold the run back.
//
// Cost: at most `max_cycles` cycles of Schedule (each O(as scheduler.h says)). Cycles are at
// least max(`step`, `step_fraction` x the time from now) apart: ends closer than that are taken in
// one cycle, so an estimate is late by less than max(1 minute, 5 % of the wait) with the defaults,
// and the whole horizon (14 days) takes at most about 230 cycles, whatever the number of ends.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling {

struct EstimateOptions {
  Duration aging_interval = kDefaultAgingInterval;
  Duration step = std::chrono::minutes(1);
  double step_fraction = 0.05;  // the gap between cycles grows with the time from now
  Duration horizon = std::chrono::hours(24 * 14);
  int max_cycles = 400;
};

enum class EstimateUnknown : uint8_t {
  kNone,            // `start` holds the estimate
  kUnschedulable,   // no fleet as it is could ever hold it
  kNoKnownEnd,      // the capacity it waits for is held by runs without an expected end
  kQuota,           // it waits for its namespace's ResourceQuota
  kTeamShare,       // it waits for its team's share and no forecast end frees it
  kBeyondHorizon,   // it would start after now + horizon
  kBudget,          // the forecast stopped at max_cycles before it started
};

// A sentence for a user ("waits behind runs without a known end (no maxDuration)").
std::string_view ExplainUnknown(EstimateUnknown why);

struct StartEstimate {
  std::string run_id;
  std::optional<TimePoint> start;  // set when unknown == kNone
  EstimateUnknown unknown = EstimateUnknown::kNone;
  // It would start at `now` with a maxDuration of at most this (backfill or lifetime).
  std::optional<Duration> start_now_bound;
};

struct EstimateInput {
  ClusterSnapshot snapshot;      // the cluster at `now` (copied: the forecast changes its copy)
  std::vector<PendingRun> queued;  // the waiting runs, in any order
  // Expected runtime once started, by run id: its maxDuration, or a learned runtime. A run
  // without an entry, once started, holds its room for good (no known end).
  std::map<std::string, Duration> runtime;
  // Expected ends of running runs learned from comparable runs (RuntimeHistory, given how long
  // each has run so far), by id: the forecast ends those runs then instead of at
  // RunningRun::expected_end (start + maxDuration, a bound most runs end well before). The
  // scheduler's own decisions (the reservation, backfill) still rest on expected_end, as the
  // engine's do; a run started in the forecast gets start + maxDuration there, likewise.
  std::map<std::string, TimePoint> running_end;
  TimePoint now{};
};

// One estimate per queued run, in queue order at `now`.
std::vector<StartEstimate> EstimateStarts(EstimateInput input, const EstimateOptions& options = {});

}  // namespace berth::scheduling
