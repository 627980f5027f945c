#pragma once
// berth's engine: watches Runs, Fleets, Nodes and berth's Pods; one scheduling loop owns the
// queue and every decision; a bounded pool of writers carries the decisions to the API.
//
// Level-based and restart-safe: every decision is recomputed from what the API shows on each
// pass. A pass reads one snapshot of the caches (PassSnapshot, updated at its start by what changed:
// reconcilers/state/snapshot.h; the library of the pass' steps cannot include the informers).
// A pass' writes are data: its components hand each one (key, kind, target, body, closure) to the
// pass' PassWrites (reconcilers/engine/pass_writes.h), which answers what the KeyedWriter would
// from its state at the pass' start; once the pass has decided, CarryOutWrites hands the list to
// the KeyedWriter in the order decided (a run's status before its Pods).
// What the engine keeps between passes, and where (issue 46 is making this one place; until then
// it is these):
//   - its own writes in flight and their outcome (reconcilers/state/write_cache.h: WriteEntry /
//     WriteCache / LastWritten): a run's admission and its status write on the run's memo
//     (admissions.h: a block is never given twice while the watch catches up; rolled back only when
//     the write provably was not applied; ambiguous writes verified), the last Fleet and Team
//     statuses written (FleetStatusWriter, TeamKeeper);
//   - per run, what lets a pass skip what did not change (RunMemo's quiet / queued / placed fields:
//     reconcilers/state/run_memo.h, "Incremental passes"), when its waiting message was last
//     written (waiting_status.h), which runs a queue-position sequence in flight touches
//     (position_writer.h);
//   - the cluster view and paused instances (ClusterViewKeeper), the core's last result while its
//     input stands (CoreResultStands), learned runtimes and the estimates' calibration
//     (Forecaster), the queue view's news (QueueView), each team's decayed usage (TeamKeeper).
//
// RunController owns the queue (scheduling::RunQueue, loop thread only) and the components; a
// pass (Pass(now): thread-free, a test steps it with StartStepped, DrainWrites) is a short
// orchestration of them, each with its contract in its own header (docs/development.md draws them):
//   EngineLoop           engine_loop.h          the loop thread, what wakes it, what changed since
//                                               the last pass, the pass' deadlines
//   EngineCaches         engine_caches.h        the informers, their live reads, the snapshot's update
//   PassSnapshot         snapshot.h             what every step of a pass reads (cache_reads.h)
//   WorkingSet, RunMemo  working_set.h          which runs a pass visits ("Incremental passes"),
//                        run_memo.h             what is kept of each run between passes
//   ClusterViewKeeper    cluster_view_keeper.h  the cluster view kept between passes, paused
//                                               instances after a kubelet refusal
//   RunSweep             run_sweep.h            the sweeps over the visited runs: block holders,
//                                               lifecycles and the queue, quiet runs, settling
//   RunReconciler        run_reconciler.h       one run's lifecycle carried out
//   Preemptions          preemptions.h          preemption records as nominations, evictions
//   Admissions           admissions.h           admission order, assume / confirm / roll back,
//                                               ambiguous writes, what the writers wrote
//   RunWrites            run_writes.h           the writes of a run's decisions; ending a run
//   PositionWriter       position_writer.h      queuePosition writes, one sequence at a time
//   WaitingStatusWriter  waiting_status.h       waiting runs' statuses, preemption records
//   FleetStatusWriter    fleet_status_writer.h  Fleet statuses (admission step 3)
//   TeamKeeper           team_keeper.h          Teams for the core, usage, Team statuses
//   QueueView            queue_view.h           /queue and the dashboard, priority news
//   SetAsideReporter     set_aside.h            runs berth cannot read, reported once each
//   PassWrites           pass_writes.h          the pass' writes as a list, carried out after it
//   KeyedWriter          keyed_writer.h         the writer threads (one write per key)
//   TicketSync           tickets.h              tickets of queued Jobs (issue 45)
//   PassPhases, SummarizePass  pass_summary.h   where a pass spent its time, the metrics' summary
// The core decides again only when its input (the queue's version, the view's generation)
// changed since its last cycle or the time may change its answer (CoreResultStands); otherwise
// the pass carries on with the last result. What the controller sees of the engine is
// reconcilers/engine/engine_api.h.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/events.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "reconcilers/state/admissions.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/cluster_view_keeper.h"
#include "reconcilers/state/engine_caches.h"
#include "reconcilers/engine/engine_api.h"
#include "reconcilers/engine/engine_loop.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/writers/fleet_status_writer.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/engine/forecaster.h"
#include "reconcilers/writers/keyed_writer.h"
#include "reconcilers/engine/pass_summary.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/writers/position_writer.h"
#include "reconcilers/objects/preemptions.h"
#include "reconcilers/writers/queue_positions.h"
#include "reconcilers/views/queue_view.h"
#include "reconcilers/state/run_memo.h"
#include "reconcilers/objects/run_reconciler.h"
#include "reconcilers/engine/run_sweep.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/objects/set_aside.h"
#include "reconcilers/objects/team_keeper.h"
#include "reconcilers/objects/tickets.h"
#include "reconcilers/writers/waiting_status.h"
#include "reconcilers/state/working_set.h"
#include "reconcilers/objects/run_types.h"
#include "scheduling/cycle_result.h"
#include "scheduling/instance_state.h"
#include "scheduling/run_queue.h"

namespace berth::reconcilers {

class RunController final : public EngineApi {
 public:
  RunController(k8s::ClientPtr client, const k8s::Clock& clock, EngineOptions options);
  ~RunController();

  // Starts the watches (a standby keeps its caches warm) ...
  void StartInformers();
  // ... and the scheduling loop and writers (only the leader calls this).
  void StartLoop();
  void Start() {
    StartInformers();
    StartLoop();
  }
  // Stops the loop, waits for writes in flight, stops the watches.
  void Stop();
  bool HasSynced() const;
  // `h` is called (on an informer's thread, no engine lock held) after each informer's complete
  // list, so that a caller can wait for HasSynced without polling. Set before StartInformers.
  void OnSynced(std::function<void()> h) { on_synced_ = std::move(h); }

  // ---- Stepping the engine (tests; docs/development.md "Stepping the engine") ----
  // Starts the watches only: no loop thread, no writer threads. The caller's thread is the loop
  // thread from now on: it calls Pass, DrainWrites and MakeView, one at a time, in any order.
  void StartStepped();
  // One scheduling pass at `now` (below), on the caller's thread: takes what the informers and
  // the writers noted since the last pass, decides, and queues the writes (carried out by the
  // writer threads, or stepped: by DrainWrites). Starts no thread, waits for nothing. Loop
  // thread only: the loop calls Pass(clock.Now()).
  void Pass(k8s::TimePoint now);
  // Stepped only (else 0): carries out, on the caller's thread, the writes the passes queued and
  // those they queue in turn (KeyedWriter::RunQueued; a key backing off waits for the clock),
  // then waits until the Events recorded are posted; and the start-time forecast handed over, if
  // any (Forecaster::RunQueued: the next pass shows it). Returns how many writes ran.
  size_t DrainWrites();
  // Stepped: makes the queue view from the last pass when a pass changed the queue since it was
  // last made (what the loop does when Queue() asks between passes). Queue() stepped answers the
  // last view made at once, from any thread.
  void MakeView();
  // Whether a change (an informer event, a finished write, Wake) came since the last pass began:
  // the loop would make another pass without waiting for a deadline.
  bool PassDue() const { return loop_.PassDue(); }

  // The queue as of the last pass, in order. Made on request (see "The queue view" in
  // development.md): when a pass changed it since it was last made, the loop thread makes it
  // between two steps and this waits for it (up to kViewWait on the clock; then the last one
  // made). Stepped (StartStepped): the last one made (MakeView), at once.
  std::vector<QueueEntry> Queue() const override;
  static constexpr std::chrono::seconds kViewWait{5};
  // The priority cap of a namespace as cached (label berth.dev/max-priority); nullopt: none.
  std::optional<PriorityCap> CapOf(const std::string& ns) const override { return caches_.live().CapOf(ns); }
  bool CachedCapOf(const std::string& ns, std::optional<PriorityCap>& cap) const override {
    return caches_.CachedCapOf(ns, cap);
  }
  std::vector<std::shared_ptr<const Fleet>> Fleets() const override { return caches_.fleets().List(); }
  std::vector<std::shared_ptr<const Team>> Teams() const override { return caches_.teams().List(); }

  // Hook for metrics: called after every pass with the cycle duration and the result.
  // Must be set before Start; not owned.
  void SetObserver(EngineObserver* observer) {
    observer_ = observer;
    admissions_.SetObserver(observer);
    writes_.SetObserver(observer);
  }

  // Asks for a pass now. The loop passes on every change it watches, at the deadlines its passes
  // note (a FakeClock moved past one ends the wait) and otherwise once per status_refresh.
  void Wake() { loop_.Wake(); }

 private:
  // What the loop thread calls (EngineLoop::Hooks): Pass, and between passes the queue view.
  EngineLoop::Hooks LoopHooks();

  // One scheduling pass (Pass, public above): the steps below, in this order.
  // Its parts: the working set (and the writers' news), the core's decision (false when the last
  // result stands), carrying the result out (admissions, positions, waiting statuses; returns
  // since when the longest-waiting run waits), and what the next pass keeps of this one.
  const Keyed& StartPass(k8s::TimePoint now, std::unordered_set<std::string>& busy);
  bool Decide(const ClusterView& view, k8s::TimePoint now, scheduling::CycleResult& fresh);
  std::optional<k8s::TimePoint> CarryOutResult(const Keyed& keyed, const ClusterView& view,
                                               const scheduling::CycleResult& result,
                                               std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                               PassPhases& phases);
  void FinishPass(bool decided, scheduling::CycleResult fresh, k8s::TimePoint now);
  // The pass' view of the cluster: placed runs (into `placed`: RunSweep::BlockHolders), holds, the
  // core's snapshot. Kept from the last pass (ClusterViewKeeper) while what it is made of is
  // unchanged; otherwise made anew; its generation moves when it changes.
  ClusterView& PassView(const Keyed& keyed, std::vector<std::shared_ptr<const PlacedRun>>& placed, k8s::TimePoint now);
  // Each visited run's lifecycle (RunSweep::ReconcileAll); returns the runs whose queuePosition
  // must not be written now (busy: a write queued or in flight when the pass began).
  std::unordered_set<std::string> ReconcileAll(const Keyed& keyed, const ClusterView& view, k8s::TimePoint now);
  // Queue positions (PositionWriter), then every waiting run's status (WaitingStatusWriter) but the busy and moved ones.
  // Returns since when the longest-waiting run (one not held by its namespace's quota) waits.
  std::optional<k8s::TimePoint> CarryOutWaiting(const Keyed& keyed, const scheduling::CycleResult& result,
                                                std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                                PassPhases& phases);
  // Start-time estimates: takes the last forecast published (the waiting statuses show it) and
  // hands the next over when due (Forecaster::Due; else notes when it is due if the input changed).
  void Forecast(const ClusterView& view, k8s::TimePoint now);
  // Takes what changed since the last pass (EngineLoop::TakeChanges) and what the writers reported
  // (failed, unconfirmed and confirmed admissions, written resourceVersions, failed Fleet writes,
  // touched runs) into the memos and the working set; returns the keys with a write queued or in flight.
  std::unordered_set<std::string> TakeWriterNews();
  // Priority patches of queued runs shown in the queue view (/queue) at once, before the pass
  // that re-places them in the queue: called at points through the pass (QueueView::ShowNews).
  void ShowPriorityNews();
  // The queue's priority of a queued run for the view (QueueView::PriorityOf).
  std::optional<int32_t> ViewPriority(const std::string& key) const;
  // The queue as the /queue endpoint, the CLI and the dashboard show it, from queue_ and the
  // pass' result (PublishQueue); made only when Queue() asked for it since the last pass
  // (MakeViewIfWanted). Loop thread only.
  void PublishQueue(const scheduling::CycleResult& result);
  void MakeViewIfWanted(const scheduling::CycleResult& result);
  scheduling::CycleResult last_result_;  // the last pass' result, for a view asked for between passes
  // Whether the last core cycle's result (last_result_) is this pass' too, so the core need not
  // run: its input is the same (the queue's version, the view's generation), it placed and
  // preempted nothing, and the time is before core_until_ (the first deadline that pass noted, at
  // most status_refresh after it: when a pass would come anyway on an unchanged cluster, which is
  // when the core reads the time again). A pass whose only news is berth's own status echoes, or
  // a change to a run that leaves its queue entry as it was, decides nothing new. See the engine's
  // table in development.md.
  bool CoreResultStands(k8s::TimePoint now) const;
  uint64_t core_view_gen_ = 0;                      // the view's generation in the last core cycle's input
  uint64_t core_queue_version_ = 0;                 // queue_.version() after it
  std::optional<k8s::TimePoint> core_until_;        // nullopt: no cycle yet
  // Tells the observer (metrics) how the pass went (SummarizePass and the writers' counters).
  void Report(std::chrono::microseconds took, const scheduling::CycleResult& result, bool decided, k8s::TimePoint now,
              std::optional<k8s::TimePoint> oldest_waiting, const std::vector<scheduling::InstanceStatus>& described);
  // writer_.Dispatch (reconcilers/writers/keyed_writer.h: one write per key, backoff after a failed one,
  // `background` writes yield to decisions), refused once the engine is stopping.
  // During a pass (PassWrites::Collecting on the loop thread) the write joins the pass' list, carried
  // out after the decision (CarryOutWrites); otherwise (writer threads, TicketSync) it goes at once.
  bool Dispatch(PassWrite write);
  bool DispatchNow(const std::string& key, std::function<bool()> fn, bool background = false);
  // The pass' writes, in the order decided, to the KeyedWriter.
  void CarryOutWrites();
  // KeyedWriter::Busy / BackgroundQueued as the deciding pass sees them (its PassWrites).
  bool WriterBusy(const std::string& key) const;
  size_t BackgroundQueued() const;
  // Assumes the placement (its blocks are held from now on) and hands the admission to a writer
  // (Admissions::Admit); the run leaves the queue.
  void Admit(const Run& run, const scheduling::Placement& placement, k8s::TimePoint now);

  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  EngineOptions options_;
  std::unique_ptr<k8s::EventRecorder> events_;
  EngineCaches caches_;  // the informers and their reads (reconcilers/state/engine_caches.h)
  // What every step of a pass reads: the caches at the pass' start (StartPass; loop thread only;
  // reconcilers/state/snapshot.h).
  PassSnapshot snapshot_;
  // The loop thread, what changed since the last pass, the pass' deadlines (engine_loop.h).
  EngineLoop loop_{clock_, options_.status_refresh, LoopHooks()};

  scheduling::RunQueue queue_;  // loop thread only
  // The runs the passes visit and each one's memo (reconcilers/state/working_set.h); loop thread only.
  WorkingSet working_;
  PassWrites pass_writes_;  // loop thread only: the writes this pass decided (pass_writes.h)
  bool refresh_left_ = false;  // this pass put periodic looks off (loop thread only)
  std::function<void()> on_synced_;  // OnSynced's (set before the informers start)

  // /queue and the dashboard (reconcilers/views/queue_view.h: its own lock; wakes the loop by Nudge).
  QueueView queue_view_{clock_, [this] { loop_.Nudge(); }};

  std::atomic<bool> stopped_{false};  // Stop ran (or runs)
  std::atomic<bool> stepped_{false};  // StartStepped: no loop, no writer threads
  // Carries out the loop's writes (one per key, backoff, decisions before refreshes).
  KeyedWriter writer_;
  // Assume / confirm / roll back of admissions, and what the writers wrote (admissions.h).
  Admissions admissions_{client_, clock_, *events_, [this](PassWrite w) { return Dispatch(std::move(w)); }};
  // The writes that carry out each run's decisions (reconcilers/writers/run_writes.h).
  RunWrites writes_{client_,
                    clock_,
                    *events_,
                    admissions_,
                    options_,
                    [this](PassWrite w) { return Dispatch(std::move(w)); },
                    [this](const Run& run) { return snapshot_.PodsOf(run); }};
  // Queue positions (reconcilers/writers/position_writer.h): one sequence of writes at a time.
  PositionWriter positions_{client_, options_, admissions_, writes_,
                            [this](PassWrite w) { return Dispatch(std::move(w)); },
                            [this] { return WriterBusy(PositionWriter::kKey); }};
  // Start-time estimates (reconcilers/engine/forecaster.h): its worker thread wakes the loop when a
  // forecast is published.
  Forecaster forecaster_{options_.estimate_interval,
                         [this](size_t runs, std::chrono::microseconds took) {
                           if (observer_ != nullptr) observer_->OnForecast(runs, took);
                           Wake();
                         },
                         scheduling::EstimateOptions{.max_runs = options_.estimate_depth}};
  // Waiting runs' statuses, preemption records, sentences (reconcilers/writers/waiting_status.h).
  WaitingStatusWriter waiting_{snapshot_, writes_, *events_, options_, [this] { return BackgroundQueued(); },
                               &forecaster_};
  // The pass' cluster view, kept while what it is made of is (reconcilers/state/cluster_view_keeper.h).
  ClusterViewKeeper view_keeper_{snapshot_, options_.verify_kept_view,
                                 [this](const ClusterView& view) { waiting_.NoteUnavailable(view); }};
  // Each run's lifecycle carried out (reconcilers/objects/run_reconciler.h).
  RunReconciler reconciler_{snapshot_, writes_, working_, *events_, clock_, options_,
                            [this](const std::string& node, const std::string& why, k8s::TimePoint now) {
                              view_keeper_.NoteRefusal(node, why, now);
                            }};
  // The sweeps over the visited runs (reconcilers/engine/run_sweep.h).
  RunSweep sweep_{RunSweep::Parts{snapshot_, options_, working_, queue_, admissions_, reconciler_, writes_, forecaster_},
                  [this] { ShowPriorityNews(); }};
  // Preemption records as the core's nominations, their victims evicted (reconcilers/objects/preemptions.h).
  Preemptions preemptions_{snapshot_, writes_};
  // Runs the informer set aside, reported once each (reconcilers/objects/set_aside.h).
  SetAsideReporter set_aside_{
      client_, *events_,
      [this](PassWrite w) { return Dispatch(std::move(w)); },
      [this](const Run& run) { return snapshot_.PodsToStop(run); },
      [this](const std::string& ns, const std::vector<PodRef>& pods) { return writes_.DeletePods(ns, pods); }};
  // Fleet statuses (reconcilers/writers/fleet_status_writer.h); the instances' states of the last pass.
  FleetStatusWriter fleet_status_{client_, [this](PassWrite w) { return Dispatch(std::move(w)); }};
  // Teams (reconcilers/objects/team_keeper.h): the core's Teams, usage, Team statuses.
  TeamKeeper teams_{client_, snapshot_, options_.fair_share_half_life, options_.team_status_interval,
                    [this](PassWrite w) { return Dispatch(std::move(w)); }};
  // Tickets of queued workloads (reconcilers/objects/tickets.h), written under "ticket:<ns>/<name>".
  TicketSync tickets_{client_, caches_, [this](const std::string& key, std::function<bool()> write) {
                        return DispatchNow(key, std::move(write));
                      }};
  EngineObserver* observer_ = nullptr;
};

}  // namespace berth::reconcilers
