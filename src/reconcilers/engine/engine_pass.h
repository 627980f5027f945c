#pragma once
// EnginePass (issue 46): the engine's decision, without its edge. It owns what a pass reads and
// decides with: the snapshot (PassSnapshot), the queue, the working set and the runs' memos, the
// pass' writes (PassWrites), the queue view, and the decide components (admissions, the run
// writes, positions, waiting statuses, the cluster view, the sweeps, preemptions, set-aside
// reports, Fleet and Team statuses, the forecaster). It reads no informer and starts no write: it
// is in berth_engine_decide, which does not link the informers.
//
// A pass, as RunController (the edge: informers, loop, KeyedWriter, tickets) drives it:
//   Begin(gate, changes, now)      what the writers and the informers noted since the last pass
//                                  (the KeyedWriter's state, EngineLoop::Changes); from here on
//                                  the components' writes are collected, not dispatched
//   <edge updates snapshot()>      EngineCaches::UpdateSnapshot (or a test fills it by hand:
//                                  reconcilers/state/snapshot.h, PassSnapshot::Fill)
//   Decide(now, set_aside, phases) the whole decision on that snapshot -> the pass' writes, in the
//                                  order to carry them out (a run's status before its Pods)
//   <edge carries the list out>    KeyedWriter::Dispatch for each, `refused` when it refuses
//   Finish(now, resync_at)         what the next pass keeps of this one; deadline() is when the
//                                  next pass is due at the latest (the edge tells EngineLoop)
// Outside a pass (writer threads, TicketSync) a component's write goes straight to the edge
// (Hooks::dispatch_now). Threads: the loop thread only, but queue_view() (its own lock).

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/events.h"
#include "k8s/store.h"
#include "reconcilers/engine/engine_api.h"
#include "reconcilers/engine/engine_loop.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/engine/forecaster.h"
#include "reconcilers/engine/pass_summary.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/engine/run_sweep.h"
#include "reconcilers/objects/preemptions.h"
#include "reconcilers/objects/run_reconciler.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/objects/set_aside.h"
#include "reconcilers/objects/team_keeper.h"
#include "reconcilers/objects/usage_keeper.h"
#include "reconcilers/state/admissions.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/cluster_view_keeper.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/state/working_set.h"
#include "reconcilers/views/queue_view.h"
#include "reconcilers/writers/fleet_status_writer.h"
#include "reconcilers/writers/position_writer.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/writers/waiting_status.h"
#include "scheduling/cycle_result.h"
#include "scheduling/instance_state.h"
#include "scheduling/run_queue.h"

namespace berth::reconcilers {

class EnginePass {
 public:
  // What the pass asks of its edge. Every member is set (a test hands in its own).
  struct Hooks {
    // A write outside a pass (a writer thread's follow-up): KeyedWriter::Dispatch; false: refused.
    std::function<bool(const std::string& key, std::function<bool()> write, bool background)> dispatch_now;
    // KeyedWriter::Busy / BackgroundQueued, read outside a pass (inside, the pass' PassWrites answers).
    std::function<bool(const std::string& key)> writer_busy;
    std::function<size_t()> background_queued;
    std::function<void()> wake;   // another pass soon (a forecast published, periodic looks left)
    std::function<void()> nudge;  // the queue view has news (EngineLoop::Nudge)
    // The queue's priority of a queued run as the live cache has it (a priority patch shows in
    // the queue view before the next pass); nullopt: gone or deleting.
    std::function<std::optional<int32_t>(const std::string& key)> view_priority;
  };

  EnginePass(k8s::ClientPtr client, const k8s::Clock& clock, const EngineOptions& options, k8s::EventRecorder& events,
             Hooks hooks);

  // ---- one pass (the header's order) ----
  void Begin(PassWrites::Gate gate, EngineLoop::Changes changes, k8s::TimePoint now);
  PassSnapshot& snapshot() { return snapshot_; }
  PassWrites Decide(k8s::TimePoint now, const std::map<std::string, k8s::SetAsideObject>& set_aside,
                    PassPhases& phases);
  void Finish(k8s::TimePoint now, k8s::TimePoint resync_at);
  // The next pass is due by then at the latest (this pass' deadlines; reset by Begin).
  const std::optional<k8s::TimePoint>& deadline() const { return deadline_; }

  // ---- what the edge reads of the last pass ----
  // The metrics' summary of the pass just decided (the edge adds its writer's and events' counters).
  EngineObserver::PassSummary Summarize(std::chrono::microseconds took, k8s::TimePoint now) const;
  // One line on where a slow pass spent its time.
  std::string SlowLine(std::chrono::microseconds took, const PassPhases& phases) const;
  // The queue view (its own lock: any thread) and the between-passes steps the loop calls.
  QueueView& queue_view() { return queue_view_; }
  const QueueView& queue_view() const { return queue_view_; }
  void ShowPriorityNews();
  void MakeView() { PublishQueue(last_result_); }
  Forecaster& forecaster() { return forecaster_; }
  RunWrites& writes() { return writes_; }
  const scheduling::RunQueue& queue() const { return queue_; }
  void SetObserver(EngineObserver* observer) {
    observer_ = observer;
    admissions_.SetObserver(observer);
    writes_.SetObserver(observer);
    usage_.SetCounted([observer](const std::vector<UsageIncrement>& counted) {
      for (const UsageIncrement& c : counted) observer->OnUsageCounted(c.team, c.ns, c.fleet, c.seconds);
    });
  }
  int64_t unreadable() const { return set_aside_.unreadable(); }
  // Issue 47: where the per-user usage is kept (UsageKeeper::SetUsersNamespace). Before the start.
  void SetUsersNamespace(std::string ns) { usage_.SetUsersNamespace(std::move(ns)); }

 private:
  void NoteDeadline(k8s::TimePoint at) {
    if (!deadline_ || at < *deadline_) deadline_ = at;
  }
  // A component's write: into the pass' list while one is collecting on this thread, else the edge.
  bool Dispatch(PassWrite write);
  bool WriterBusy(const std::string& key) const;
  size_t BackgroundQueued() const;
  // Takes what the writers reported (failed, unconfirmed and confirmed admissions, failed Fleet
  // and Team writes) and what changed into the memos and the working set; returns the keys with
  // a write queued or in flight.
  std::unordered_set<std::string> TakeNews(std::unordered_set<std::string> busy, EngineLoop::Changes changes);
  // The working set of this pass, on the snapshot (after Begin and the snapshot's update).
  const Keyed& MakeWorkingSet(const std::map<std::string, k8s::SetAsideObject>& set_aside, k8s::TimePoint now);
  // The pass' view of the cluster: placed runs (RunSweep::BlockHolders), holds, the core's
  // snapshot; kept from the last pass (ClusterViewKeeper) while what it is made of is unchanged.
  ClusterView& PassView(const Keyed& keyed, std::vector<std::shared_ptr<const PlacedRun>>& placed, k8s::TimePoint now);
  std::unordered_set<std::string> ReconcileAll(const Keyed& keyed, const ClusterView& view, k8s::TimePoint now);
  // The core's decision (false when the last result stands: CoreResultStands).
  bool Schedule(const ClusterView& view, k8s::TimePoint now);
  std::optional<k8s::TimePoint> CarryOutResult(const Keyed& keyed, const ClusterView& view,
                                               const scheduling::CycleResult& result,
                                               std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                               PassPhases& phases);
  std::optional<k8s::TimePoint> CarryOutWaiting(const Keyed& keyed, const scheduling::CycleResult& result,
                                                std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                                PassPhases& phases);
  void Forecast(const ClusterView& view, k8s::TimePoint now);
  void Admit(const Run& run, const scheduling::Placement& placement, k8s::TimePoint now);
  void PublishQueue(const scheduling::CycleResult& result);
  void MakeViewIfWanted(const scheduling::CycleResult& result);
  std::optional<int32_t> ViewPriority(const std::string& key) const { return hooks_.view_priority(key); }
  // Whether the last core cycle's result is this pass' too (see run_controller.h's history:
  // same queue version and view generation, nothing placed or preempted, before core_until_).
  bool CoreResultStands(k8s::TimePoint now) const;
  const scheduling::CycleResult& result() const { return decided_ ? fresh_ : last_result_; }

  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  const EngineOptions options_;
  k8s::EventRecorder& events_;
  const Hooks hooks_;
  EngineObserver* observer_ = nullptr;

  PassSnapshot snapshot_;      // what every step of a pass reads (reconcilers/state/snapshot.h)
  scheduling::RunQueue queue_;
  WorkingSet working_;         // the runs the passes visit and each one's memo
  PassWrites pass_writes_;     // the writes this pass decided
  std::optional<PassWrites::Collecting> collecting_;  // from Begin to the end of Decide
  std::unordered_set<std::string> busy_;              // keys busy at the pass' start (Begin)
  std::optional<k8s::TimePoint> deadline_;            // this pass' deadlines
  bool refresh_left_ = false;  // this pass put periodic looks off

  scheduling::CycleResult last_result_;  // the last core cycle's result
  scheduling::CycleResult fresh_;        // this pass' when it decided
  bool decided_ = false;
  uint64_t core_view_gen_ = 0;
  uint64_t core_queue_version_ = 0;
  std::optional<k8s::TimePoint> core_until_;  // nullopt: no cycle yet
  // The waiting runs of result() by (fleet, reason) (CycleResult::CountWaiting), counted again only
  // when the core decides (100,000 waiting runs cost ~1 ms a pass; a standing result has the
  // same): for Summarize. Nullopt: not counted yet.
  std::optional<std::map<std::pair<std::string, std::string>, int64_t>> pending_counts_;
  // The pass just decided, for Summarize and SlowLine.
  size_t visited_ = 0;
  std::optional<k8s::TimePoint> oldest_waiting_;
  const std::vector<scheduling::InstanceStatus>* described_ = nullptr;  // FleetStatusWriter's

  QueueView queue_view_{clock_, [this] { hooks_.nudge(); }};
  Admissions admissions_{client_, clock_, events_, [this](PassWrite w) { return Dispatch(std::move(w)); }};
  RunWrites writes_{client_,
                    clock_,
                    events_,
                    admissions_,
                    options_,
                    [this](PassWrite w) { return Dispatch(std::move(w)); },
                    [this](const Run& run) { return snapshot_.PodsOf(run); }};
  PositionWriter positions_{client_, options_, admissions_, writes_,
                            [this](PassWrite w) { return Dispatch(std::move(w)); },
                            [this] { return WriterBusy(PositionWriter::kKey); }};
  Forecaster forecaster_{options_.estimate_interval,
                         [this](size_t runs, std::chrono::microseconds took) {
                           if (observer_ != nullptr) observer_->OnForecast(runs, took);
                           hooks_.wake();
                         },
                         scheduling::EstimateOptions{.max_runs = options_.estimate_depth}};
  WaitingStatusWriter waiting_{snapshot_, writes_, events_, options_, [this] { return BackgroundQueued(); },
                               &forecaster_};
  ClusterViewKeeper view_keeper_{snapshot_, options_.verify_kept_view,
                                 [this](const ClusterView& view) { waiting_.NoteUnavailable(view); }};
  RunReconciler reconciler_{snapshot_, writes_, working_, events_, clock_, options_,
                            [this](const std::string& node, const std::string& why, k8s::TimePoint now) {
                              view_keeper_.NoteRefusal(node, why, now);
                            }};
  RunSweep sweep_{RunSweep::Parts{snapshot_, options_, working_, queue_, admissions_, reconciler_, writes_, forecaster_},
                  [this] { ShowPriorityNews(); }};
  Preemptions preemptions_{snapshot_, writes_};
  SetAsideReporter set_aside_{
      client_, events_,
      [this](PassWrite w) { return Dispatch(std::move(w)); },
      [this](const Run& run) { return snapshot_.PodsToStop(run); },
      [this](const std::string& ns, const std::vector<PodRef>& pods) { return writes_.DeletePods(ns, pods); }};
  FleetStatusWriter fleet_status_{client_, [this](PassWrite w) { return Dispatch(std::move(w)); }};
  TeamKeeper teams_{client_, snapshot_, options_.fair_share_half_life, options_.team_status_interval,
                    [this](PassWrite w) { return Dispatch(std::move(w)); }};
  UsageKeeper usage_{client_, snapshot_, options_.team_status_interval, [this](PassWrite w) { return Dispatch(std::move(w)); }};
};

}  // namespace berth::reconcilers
