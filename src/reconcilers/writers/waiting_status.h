#pragma once
// Waiting statuses: what each run the core left waiting shows (phase Pending, its reason, the
// core's sentence, its effective priority, a preemption's record) and when a waiting run fails
// instead (EndsWaiting: no retry on no-capacity, or its retry.duration passed).
//
// Threads: the engine's loop thread only; the writes go through RunWrites to the writers.
// Owns: this pass' preemption records (which preempting run's status carries which record) and
// why one unavailable instance per fleet takes no runs (for the sentences). Reads the memos, the
// caches and the queue positions the caller hands in.
//
// A waiting run's status is information, not a decision: it never delays an admission, a start
// or a failure (background writes), at most waiting_writes_queued wait for a writer at once and
// the next passes write the rest in queue order. A preemption's record is a decision: written
// before any victim is evicted. Periodic looks are spread: a run whose status an earlier pass
// found current (RunMemo::current) is looked at again after status_refresh, at most
// refreshes_per_pass a pass (the rest in the next passes; a run that ends waiting is never put
// off). A run that does not show its place yet is written by the position writer, whose last
// move carries its whole waiting status.
// Cost: O(waiting runs) a pass, most of them without a visit to their object (RunMemo::Read).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "k8s/events.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/engine/forecaster.h"
#include "reconcilers/writers/position_writer.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/state/working_set.h"
#include "scheduling/cycle_result.h"

namespace berth::reconcilers {

// The API reason of a run the core left waiting (scheduling::ApiReason's spelling, typed).
ReasonCode WaitingReason(scheduling::WaitCode code);

class WaitingStatusWriter {
 public:
  // How many background writes wait for a writer now (KeyedWriter::BackgroundQueued).
  using BackgroundQueued = std::function<size_t()>;
  // `forecast`: the start-time estimates (reconcilers/engine/forecaster.h; nullptr: none).
  WaitingStatusWriter(const PassSnapshot& snapshot, RunWrites& writes, k8s::EventRecorder& events,
                      const EngineOptions& options, BackgroundQueued background_queued,
                      const Forecaster* forecast = nullptr)
      : snapshot_(snapshot),
        writes_(writes),
        events_(events),
        options_(options),
        background_queued_(std::move(background_queued)),
        forecast_(forecast) {}

  // The status record of `run_id`'s preemption of `victims` (run ids): the victims of its own
  // namespace by name, the others counted, every victim's uid (api/v1alpha1/run.h, issue 44).
  RunStatus::Preemption Record(const std::string& run_id, const std::string& fleet,
                               const std::vector<std::string>& instances, const std::vector<std::string>& victims,
                               bool reclaim) const;
  // Which preemption record each preempting run's waiting status carries this pass: the cycle's
  // new plans (each announced by one Normal Event) and the nominations still preempting.
  void NotePreempting(const std::vector<scheduling::Nomination>& nominations, const scheduling::CycleResult& result,
                      WorkingSet& working);
  // Why one unavailable instance of each fleet takes no runs (a kubelet refusal, an unreadable
  // annotation), for the sentences.
  void NoteUnavailable(const ClusterView& view);
  // The core's sentence, and when it counted instances of the run's fleet as unavailable, why the
  // first of them takes no runs; a priority above its namespace's cap says so.
  std::string Explain(const scheduling::CycleResult& result, const scheduling::WaitingRun& w) const;
  // Explain's sentence and what the run's start-time estimate adds (EstimateNote): the message
  // of a waiting run's status, which shows queue place `place` (Forecaster::Of).
  std::string Sentence(const scheduling::CycleResult& result, const scheduling::WaitingRun& w,
                       std::optional<int64_t> place) const;
  // The estimatedStartAt a waiting run's status shows at `now`: the last forecast's where it
  // moved materially from what the status shows (MovedMaterially: the write budget), else what
  // the status shows (also before the first forecast, and for a run the forecast did not see);
  // none when estimates are off. `place`: the queue place the status shows (Forecaster::Of).
  // With its range (issue 47, status.estimatedStartRange): the forecast's range is shown with the
  // estimate it came with, and rewritten on its own only when one of its ends moved materially.
  struct Shown {
    std::optional<Time> at;
    std::optional<RunStatus::StartRange> range;
    friend bool operator==(const Shown&, const Shown&) = default;
  };
  Shown EstimateShown(const Run& run, std::optional<int64_t> place, k8s::TimePoint now) const;
  // The status of a run waiting with `reason`, showing `position` (and EstimateShown).
  RunStatus Status(const Run& run, const ReasonCode& reason, int32_t effective, std::optional<int64_t> position,
                   const std::string& message, k8s::TimePoint now) const;

  struct PassOutcome {
    std::optional<k8s::TimePoint> oldest;    // since when the longest-waiting run (not held by quota) waits
    std::optional<k8s::TimePoint> deadline;  // the first time a waiting run gives up
    bool refresh_left = false;               // periodic looks put off to the next passes
  };
  // Every waiting run's status (but the busy ones and those the position writer wrote this pass),
  // written when it differs. `news` is called every `news_every` runs.
  // A write refused as it is carried out is decided again by the next pass
  // (WorkingSet::NoteWaitWrite).
  PassOutcome CarryOut(const scheduling::CycleResult& result, WorkingSet& working, const PositionWriter& positions,
                   k8s::TimePoint now, const std::function<void()>& news, size_t news_every);

 private:
  // One waiting run: fails it when it ends waiting, else writes its status when it differs.
  void Apply(const Run& run, RunMemo& memo, WorkingSet& working, const scheduling::CycleResult& result,
             const scheduling::WaitingRun& w, const PositionWriter& positions, k8s::TimePoint now);
  void EndWaiting(const Run& run, const scheduling::CycleResult& result, const scheduling::WaitingRun& w,
                  k8s::TimePoint now);
  // Whether nothing but the sentence (or the place) could differ: checked without copying.
  static bool LooksCurrent(const Run& run, const scheduling::WaitingRun& w, const ReasonCode& reason);

  const PassSnapshot& snapshot_;
  RunWrites& writes_;
  k8s::EventRecorder& events_;
  const EngineOptions& options_;
  BackgroundQueued background_queued_;
  const Forecaster* forecast_;  // loop thread, as this
  std::unordered_map<std::string, RunStatus::Preemption> preempting_;
  std::map<std::string, std::string> unavailable_detail_;  // fleet -> "node: why"
};

}  // namespace berth::reconcilers
