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

#include <cstddef>
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
  // Sampled forecasts: with spreads in the input, this many forecasts are made, each with every
  // run's runtime (and running run's end) drawn at its own stratified quantile of its spread, and
  // each run's estimate is the median of its starts (see EstimateStarts). 1: one forecast on the
  // medians. Costs `samples` forecasts.
  int samples = 5;
  // The forecast's depth: the engine hands over the first max_runs queued runs in queue order
  // (reconcilers::ForecastInput); a run further back is kQueueDepth. It bounds the forecast's copy
  // of the queue and its cycles' work at 100,000 pending (docs/scheduling.md).
  size_t max_runs = 10000;
};

enum class EstimateUnknown : uint8_t {
  kNone,            // `start` holds the estimate
  kUnschedulable,   // no fleet as it is could ever hold it
  kNoKnownEnd,      // the capacity it waits for is held by runs without an expected end
  kQuota,           // it waits for its namespace's ResourceQuota
  kTeamShare,       // it waits for its team's share and no forecast end frees it
  kBeyondHorizon,   // it would start after now + horizon
  kBudget,          // the forecast stopped at max_cycles before it started
  kQueueDepth,      // more runs wait ahead of it than the forecast looks at (max_runs)
};

// A sentence for a user ("waits behind runs without a known end (no maxDuration)").
std::string_view ExplainUnknown(EstimateUnknown why);

// The spread of a run's sampled starts (issue 47, "Estimate ranges"): their 10th and 90th
// percentile.
struct StartRange {
  TimePoint earliest, latest;
  friend bool operator==(const StartRange&, const StartRange&) = default;
};

struct StartEstimate {
  std::string run_id;
  std::optional<TimePoint> start;  // set when unknown == kNone
  EstimateUnknown unknown = EstimateUnknown::kNone;
  // It would start at `now` with a maxDuration of at most this (backfill or lifetime).
  std::optional<Duration> start_now_bound;
  // Sampled forecasts only (a spread in the input and samples > 1): the 10th and 90th percentile
  // of the run's starts over the forecasts (Percentile), a start unknown in a forecast counting as
  // later than every known one; nullopt when `start` is unknown, when the 90th percentile falls on
  // an unknown start, or when the input has no spread (one forecast: nothing to spread).
  std::optional<StartRange> range = std::nullopt;
  // kNoKnownEnd (issue 47, "unknown says why"): the run ahead without a known end that holds the
  // capacity it waits for (on one of its fleets), "" when none is (instances that never come back).
  std::string no_end_run = std::string();
};

// ExplainUnknown(e.unknown), naming the run without a known end where there is one: "train-llm
// has no maxDuration and no finished runs like it"; a run of another namespace is not named (issue
// 44: a status names no run of another namespace).
std::string ExplainEstimate(const StartEstimate& e);

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
  // Optional: what `runtime` and `running_end` are the medians of (RuntimePrediction::spread),
  // sorted, by id. A run with a spread of two or more values is drawn from it in sampled forecasts.
  std::map<std::string, std::vector<Duration>> runtime_spread;
  std::map<std::string, std::vector<TimePoint>> running_end_spread;
  TimePoint now{};
  // How many queued runs behind `queued` were left out of it (EstimateOptions::max_runs): their
  // estimates are kQueueDepth (the engine's, reconcilers::Forecaster::Of).
  size_t left_out = 0;
};

// The q-th quantile (0 <= q <= 1) of `n` sorted values of which `sorted` holds the first (the
// rest are later than any: unknown starts), interpolated linearly between the two nearest ranks
// (as NumPy's default); nullopt when it needs one of the unknown ones.
std::optional<TimePoint> Percentile(const std::vector<TimePoint>& sorted, size_t n, double q);

// What the estimates' own errors teach (issue 47, "Estimate ranges"). The sampled forecasts spread
// a run's start over what the learned runtimes leave open, but they assume no new arrivals (a run
// of higher priority that arrives later starts first), so alone their 10th-90th percentile holds
// the actual start of less than half the runs that wait (bench/estimate_accuracy.cc). The
// calibration widens them by what the last `window` runs that started teach (conformalized
// quantile regression): each one's score is how far its actual start fell outside the range it
// was shown (negative inside), relative to its estimated wait; a new range is widened on both
// sides by the 80th percentile of the scores times the run's estimated wait. On a cluster whose
// future resembles its recent past, 80 % of starts then fall inside. Pure; the caller feeds it.
class EstimateCalibration {
 public:
  static constexpr size_t kMinObservations = 20;  // fewer: ranges are the sampled ones alone
  // `coverage`: the share of starts a range should hold (0.8: the 10th to the 90th percentile).
  explicit EstimateCalibration(size_t window = 500, double coverage = 0.8) : window_(window), coverage_(coverage) {}
  // A run estimated at `at` to start at `start` with sampled range `sampled` (the point when none)
  // started at `actual`. An estimated wait under a minute says nothing and is not kept.
  void Observe(TimePoint at, TimePoint start, const std::optional<StartRange>& sampled, TimePoint actual);
  size_t size() const { return scores_.size(); }
  // How far ranges are widened on each side, relative to the estimated wait; nullopt under
  // kMinObservations.
  std::optional<double> Margin() const { return margin_; }
  // The range of a run estimated at `now` to start at `start`: `sampled` (the point when none)
  // widened by Margin() x the estimated wait, never before `now`; `sampled` alone under
  // kMinObservations; nullopt for a start at `now` (it starts now: no range to show).
  std::optional<StartRange> Range(TimePoint now, TimePoint start, const std::optional<StartRange>& sampled) const;

 private:
  size_t window_;
  double coverage_;
  std::vector<double> scores_;  // a ring of the last window_ scores
  size_t next_ = 0;
  std::optional<double> margin_;
};

// One estimate per queued run, in queue order at `now`. Without spreads (or options.samples <= 1)
// one forecast on `runtime` and `running_end`. Else `samples` forecasts: in forecast k each run with
// a spread takes its value at quantile frac(u + (k + 0.5) / samples), u a fixed hash of its id in
// [0, 1) (so each run's draws cover its spread evenly and runs are drawn independently of each
// other: "the soonest of many uncertain ends" comes out as it would); a run's start is the median
// of its starts over the forecasts (the point estimate with the least expected absolute error),
// unknown when it is unknown in half of them or more (then for the first forecast's reason); its
// range the 10th and 90th percentile of its starts. The "would start now" bound is the first
// cycle's, the same in every forecast.
std::vector<StartEstimate> EstimateStarts(EstimateInput input, const EstimateOptions& options = {});

}  // namespace berth::scheduling
