#pragma once
// The forecaster (issue 33): start-time estimates for the waiting runs (status.estimatedStartAt),
// made off the hot path. docs/scheduling.md "Start-time estimates" says what they mean.
//
// Threads. The loop thread hands a forecast over (Hand) at most every `interval` and only when
// the previous one is done: a copy of the pass' input (the view's ClusterSnapshot, the queued
// runs, each run's expected runtime: ForecastInput). The forecaster's own worker thread runs
// scheduling::EstimateStarts on it, publishes the estimates (run key -> StartEstimate) under its
// mutex and calls `wake` (Done: the loop makes a pass, which takes them: Take, Of). Stepped (tests:
// SetStepped before the first Hand), no thread: RunQueued runs the forecast handed over on the
// caller's thread.
// Learn feeds the learned runtimes (scheduling::RuntimeHistory) on the loop thread, once per
// finished run (its uid); the loop thread is their only owner, so a forecast's input carries
// the runtimes already predicted.
// Depth: the input holds the first EstimateOptions::max_runs queued runs (10,000), so that a
// forecast's copies and cycles stay bounded however long the queue (100,000 pending: the copies
// held the controller's RSS ~170 MB higher); a run further back shows kQueueDepth (Of).
// Ranges (issue 47): each estimate's sampled range is widened by an EstimateCalibration
// (scheduling/estimate.h) that the loop thread feeds: the first estimate each run was shown is
// kept (key -> when, start, sampled range; at most the forecast's depth) and, when the run is
// admitted (NoteStarted), scored against its placement time; the worker widens with a copy of the
// calibration handed over with the input. A restart forgets both (ranges are the sampled ones
// until kMinObservations runs started again).
// Cost on the loop thread: copying the snapshot and the first max_runs queued runs, and one
// prediction per copied and running run, once per forecast; Learn O(1) per finished run visited.
// EstimateStarts' own cost (scheduling/estimate.h) is on the worker thread.

#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "k8s/clock.h"
#include "reconcilers/objects/run_types.h"
#include "scheduling/estimate.h"
#include "scheduling/run_queue.h"
#include "scheduling/runtime_history.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

// The forecast's input from a pass' (loop thread): a copy of `snapshot` and of the first
// `max_runs` queued runs in queue order (the rest counted in left_out), each queued run's expected
// runtime (a learned one, else its maxDuration) and each running run's learned end (given how long
// it has run). `run_of` finds a run by key (nullptr: unknown), `team_of` a namespace's team ("" for
// none).
scheduling::EstimateInput ForecastInput(
    const scheduling::ClusterSnapshot& snapshot, const scheduling::RunQueue& queue,
    const scheduling::RuntimeHistory& history,
    const std::function<std::shared_ptr<const Run>(const std::string& key)>& run_of,
    const std::function<std::string(const std::string& ns)>& team_of, k8s::TimePoint now,
    size_t max_runs = scheduling::EstimateOptions{}.max_runs);

// A finished run's record for the history: its runtime from placement (scheduledAt, else
// startedAt) to finishedAt; nullopt for a run not finished or never placed.
std::optional<scheduling::FinishedRun> FinishedRecord(const Run& run, const std::string& team);

// The write budget of an estimate (docs/scheduling.md): whether a status showing `shown` is
// rewritten to show `fresh` at `now`: when one is absent and the other not, or when they are more
// than max(1 minute, 10 % of the time from `now` to `fresh`) apart.
bool MovedMaterially(std::optional<k8s::TimePoint> shown, std::optional<k8s::TimePoint> fresh, k8s::TimePoint now);

// What a waiting run's message adds for its estimate: why it is unknown ("estimated start
// unknown: ..."), or the "would start now with maxDuration ≤ 25m" hint; "" for neither.
std::string EstimateNote(const scheduling::StartEstimate& e);

class Forecaster {
 public:
  // Called on the thread that made a forecast once it is published, with how many runs it
  // estimated and how long EstimateStarts took: the engine wakes its loop.
  using Done = std::function<void(size_t runs, std::chrono::microseconds took)>;
  // interval 0: disabled (never Due: no run shows an estimate).
  Forecaster(std::chrono::milliseconds interval, Done wake,
             scheduling::EstimateOptions options = {});
  ~Forecaster();
  Forecaster(const Forecaster&) = delete;
  Forecaster& operator=(const Forecaster&) = delete;

  void SetStepped() { stepped_ = true; }
  // Ends the worker thread (a forecast running finishes first; nothing more is published).
  void Stop();

  bool enabled() const { return interval_ > std::chrono::milliseconds::zero(); }
  // Loop thread: whether to hand a forecast over at `now`: enabled, the previous one done, and
  // `interval` passed since the last was handed over (or none was).
  bool Due(k8s::TimePoint now) const;
  // Loop thread: when the next is due, for input `stamp` (the queue's version and the view's
  // generation): nullopt when disabled, one is under way, or the input is the last one handed
  // over (then the passes that come anyway hand the next one over).
  std::optional<k8s::TimePoint> DueAt(uint64_t stamp) const;
  // Loop thread: hands `input` to the worker (starts it on the first call, unless stepped).
  void Hand(scheduling::EstimateInput input, uint64_t stamp = 0);
  // Stepped: runs the forecast handed over, if any, on the caller's thread; whether one ran.
  bool RunQueued();
  // Loop thread: takes the newest published forecast; true when it is new since the last Take.
  bool Take();
  // Loop thread: `key` was admitted at `at`: the first estimate it was shown feeds the ranges'
  // calibration, and is forgotten. Returns that estimate's error, (estimated start - `at`) / the
  // wait from the moment it was made to `at` (negative: it started later than said; what
  // berth_estimate_error_ratio observes); nullopt when it was shown none or waited under a minute
  // since.
  std::optional<double> NoteStarted(const std::string& key, k8s::TimePoint at);
  const scheduling::EstimateCalibration& calibration() const { return calibration_; }
  // Loop thread: `key`'s estimate in the last forecast taken; nullptr when it has none. A run it
  // does not hold whose queue place (`place`, 1-based) is beyond the runs that forecast looked at
  // (it left runs out: EstimateInput::left_out) is unknown, kQueueDepth.
  const scheduling::StartEstimate* Of(const std::string& key, std::optional<int64_t> place = std::nullopt) const;
  const scheduling::EstimateOptions& options() const { return options_; }
  // Loop thread: how many forecasts were taken so far.
  size_t taken() const { return taken_; }

  // Loop thread: learns a finished run's runtime (FinishedRecord), once per uid; `team_of` gives
  // its namespace's team.
  void Learn(const Run& run, const std::function<std::string(const std::string& ns)>& team_of);
  const scheduling::RuntimeHistory& history() const { return history_; }

  // How many uids Learn remembers (the oldest are forgotten first).
  static constexpr size_t kLearnedUids = 200000;

 private:
  struct Estimate {
    scheduling::StartEstimate shown;                  // its range widened by the calibration
    std::optional<scheduling::StartRange> sampled;    // the range of the sampled forecasts alone
  };
  struct Estimates {
    k8s::TimePoint now{};  // the forecast's
    std::unordered_map<std::string, Estimate> of;
  };
  struct Handed {
    scheduling::EstimateInput input;
    scheduling::EstimateCalibration calibration;
  };
  void Work();  // the worker thread
  void Compute(Handed handed);
  void NoteShown();  // Take: the first estimate of each run in current_

  // Loop thread only (ranges): the first estimate each run was shown, and the calibration.
  struct Shown {
    k8s::TimePoint at, start;
    std::optional<scheduling::StartRange> sampled;
  };
  std::unordered_map<std::string, Shown> first_shown_;
  scheduling::EstimateCalibration calibration_;

  const std::chrono::milliseconds interval_;
  const Done wake_;
  const scheduling::EstimateOptions options_;
  bool stepped_ = false;

  // Loop thread only.
  std::optional<k8s::TimePoint> last_handed_;
  uint64_t last_stamp_ = 0;
  bool under_way_ = false;  // handed over, not taken back yet
  std::shared_ptr<const Estimates> current_;
  std::optional<size_t> current_depth_;  // the runs current_ looked at, when it left runs out
  size_t taken_ = 0;
  scheduling::RuntimeHistory history_;
  std::unordered_set<std::string> learned_;
  std::deque<std::string> learned_order_;

  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::optional<Handed> handed_;
  std::shared_ptr<const Estimates> published_;
  std::optional<size_t> published_depth_;
  bool done_ = false;  // the forecast handed over is published
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace berth::reconcilers
