#pragma once
// The engine's settings (berth-controller's flags set them; tests set them directly). Read by the
// engine and its components on the loop thread; fixed once the engine is made.

#include <chrono>
#include <cstddef>
#include <optional>

#include "scheduling/run_queue.h"

namespace berth::reconcilers {

struct EngineOptions {
  std::chrono::milliseconds aging_interval{scheduling::kDefaultAgingInterval};
  int writers = 16;  // API writes in flight at most
  std::chrono::milliseconds status_refresh{5000};  // waiting runs' message, at most this often
  size_t position_limit = 100;                     // queuePosition kept for the first N places
  // Waiting runs' status writes (information, never a decision) queued for a writer at most; the
  // rest wait for a later pass (100,000 runs submitted at once are shown their status in queue
  // order as the API takes it, and the engine does not hold 100,000 writes and their keys).
  size_t waiting_writes_queued = 1000;
  // A resubmitted run queues again after this delay, doubled for each attempt in a row that ran
  // less than kBackoffResetAfter, up to max_retry_backoff. 0 = at once.
  std::chrono::milliseconds retry_backoff{10 * 1000};
  std::chrono::milliseconds max_retry_backoff{10 * 60 * 1000};
  // A run whose Pods have not all started this long after placement fails with StartTimeout (or
  // is resubmitted under retry on error); spec.startTimeout overrides it. 0 = off.
  std::chrono::milliseconds start_timeout{10 * 60 * 1000};
  // queuePosition writes per second at most (and at once): see reconcilers/writers/queue_positions.h.
  // 20: what the former per-run refresh (100 places, each at most every 5 s) could write.
  double position_writes_per_second = 20;
  // A finished run without spec.ttlSecondsAfterFinished is deleted this long after finishedAt.
  // nullopt = kept.
  std::optional<std::chrono::milliseconds> finished_run_ttl;
  // Runs a pass looks at only because their periodic look (status_refresh) came due, at most, of
  // each kind (quiet placed runs, waiting runs with a current status); the rest wait for the next
  // passes, which come at once. A deadline or a change is never put off.
  size_t refreshes_per_pass = 4096;
  // For tests: each pass that keeps the last cluster view (PassView) also builds it anew and
  // aborts the process if the two differ (the core's snapshot, the instances' records, the
  // conflicts and invalid fleets).
  bool verify_kept_view = false;
  // Teams (issue 31, reconcilers/objects/team_keeper.h): the half-life of past usage in the fair-share
  // order (--fair-share-half-life), and how often each Team's status (and the usage the core
  // orders borrowers by) is brought up to date at least (--team-status-interval).
  std::chrono::milliseconds fair_share_half_life{std::chrono::hours(7 * 24)};
  std::chrono::milliseconds team_status_interval{std::chrono::minutes(1)};
  // Start-time estimates (issue 33, reconcilers/engine/forecaster.h): a forecast is handed to the
  // forecaster's thread at most this often (--estimate-interval); 0: no estimates.
  std::chrono::milliseconds estimate_interval{std::chrono::seconds(30)};
  // The forecast looks at the first this many queued runs (scheduling::EstimateOptions::max_runs;
  // not a flag: docs/scheduling.md, "Depth").
  size_t estimate_depth = 10000;
  // Issue 44 (7): the priority cap of namespaces without the label berth.dev/max-priority
  // (--default-max-priority); 100: none.
  int32_t default_max_priority = 100;
};

// An attempt that ran at least this long resets the retry backoff.
inline constexpr std::chrono::minutes kBackoffResetAfter{10};

}  // namespace berth::reconcilers
