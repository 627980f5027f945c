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
// What the engine keeps between passes, and where (all of it is EnginePass' or its components';
// issue 46 is making it one place; until then it is these):
//   - its own writes in flight and their outcome (reconcilers/state/write_cache.h: WriteEntry /
//     WriteCache / LastWritten): a run's admission and its status write on the run's memo
//     (admissions.h: a block is never given twice while the watch catches up; rolled back only when
//     the write provably was not applied; ambiguous writes verified), the last Fleet and Team
//     statuses written (FleetStatusWriter, TeamKeeper);
//   - per run, what lets a pass skip what did not change (RunMemo's quiet / queueable / current /
//     placed, each valid until the run's object is read again, and whether the last pass queued
//     it: reconcilers/state/run_memo.h, "What is kept between passes"; no resourceVersion string
//     or pass number marks them), when its waiting message was last
//     written (waiting_status.h), which runs a queue-position sequence in flight touches
//     (position_writer.h);
//   - the cluster view and paused instances (ClusterViewKeeper), the core's last result while its
//     input stands (CoreResultStands), learned runtimes and the estimates' calibration
//     (Forecaster), the queue view's news (QueueView), each team's decayed usage (TeamKeeper).
//
// RunController is the edge (issue 46): the informers (EngineCaches), the loop (EngineLoop), the
// writer threads (KeyedWriter) and the tickets (TicketSync). The decision is EnginePass
// (reconcilers/engine/engine_pass.h, in berth_engine_decide: no informer): it owns the snapshot,
// the queue (scheduling::RunQueue, loop thread only), the working set, the pass' writes, the queue
// view and the decide components, and asks the edge for a few things through EnginePass::Hooks.
// A pass (Pass(now): thread-free, a test steps it with StartStepped, DrainWrites) is
//   EnginePass::Begin(the KeyedWriter's gate, EngineLoop's changes, now)
//   -> EngineCaches::UpdateSnapshot(pass.snapshot())
//   -> EnginePass::Decide(now, set-aside runs) -> PassWrites
//   -> CarryOutWrites (KeyedWriter::Dispatch, in the order decided) -> Report -> EnginePass::Finish
//      (its deadline to EngineLoop).
// The components, each with its contract in its own header (docs/development.md draws them):
//   EngineLoop           engine_loop.h          the loop thread, what wakes it, what changed since
//                                               the last pass, the loop's deadline
//   EngineCaches         engine_caches.h        the informers, their live reads, the snapshot's update
//   EnginePass           engine_pass.h          the decision: owns everything below but the edge's
//   PassSnapshot         snapshot.h             what every step of a pass reads (cache_reads.h;
//                                               indexes: cache_indexes.h; Fill: by hand, tests)
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
//   KeyedWriter          keyed_writer.h         the writer threads (one write per key) [edge]
//   TicketSync           tickets.h              tickets of queued Jobs (issue 45) [edge]
//   PassPhases, SummarizePass  pass_summary.h   where a pass spent its time, the metrics' summary
// The core decides again only when its input (the queue's version, the view's generation)
// changed since its last cycle or the time may change its answer (CoreResultStands); otherwise
// the pass carries on with the last result (EnginePass::CoreResultStands). What the controller sees of the engine is
// reconcilers/engine/engine_api.h.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/events.h"
#include "reconcilers/engine/engine_api.h"
#include "reconcilers/engine/engine_loop.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/engine/engine_pass.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/objects/tickets.h"
#include "reconcilers/state/engine_caches.h"
#include "reconcilers/writers/keyed_writer.h"

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
    pass_.SetObserver(observer);
  }

  // Issue 47: berth's own namespace, where each Team's per-user usage is kept (a ConfigMap,
  // objects/usage_keeper.h); "" (the default): none kept. Must be set before Start.
  void SetUsersNamespace(std::string ns) { pass_.SetUsersNamespace(std::move(ns)); }

  // Asks for a pass now. The loop passes on every change it watches, at the deadlines its passes
  // note (a FakeClock moved past one ends the wait) and otherwise once per status_refresh.
  void Wake() { loop_.Wake(); }

 private:
  // What the loop thread calls (EngineLoop::Hooks): Pass, and between passes the queue view.
  EngineLoop::Hooks LoopHooks();
  // What the pass asks of the edge (EnginePass::Hooks): the KeyedWriter outside a pass, waking
  // the loop, the live priority of a queued run for the queue view.
  EnginePass::Hooks PassHooks();
  // Tells the observer (metrics) how the pass went (EnginePass::Summarize and the edge's counters).
  void Report(std::chrono::microseconds took, k8s::TimePoint now);
  // writer_.Dispatch (reconcilers/writers/keyed_writer.h: one write per key, backoff after a failed
  // one, `background` writes yield to decisions), refused once the engine is stopping.
  bool DispatchNow(const std::string& key, std::function<bool()> fn, bool background = false);
  // The pass' writes, in the order decided, to the KeyedWriter.
  void CarryOutWrites(PassWrites writes);

  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  EngineOptions options_;
  std::unique_ptr<k8s::EventRecorder> events_;
  EngineCaches caches_;  // the informers and their reads (reconcilers/state/engine_caches.h)
  // The decision: the snapshot, the queue, the working set, the decide components (engine_pass.h).
  EnginePass pass_{client_, clock_, options_, *events_, PassHooks()};
  // The loop thread, what changed since the last pass, the pass' deadlines (engine_loop.h).
  EngineLoop loop_{clock_, options_.status_refresh, LoopHooks()};
  std::function<void()> on_synced_;  // OnSynced's (set before the informers start)

  std::atomic<bool> stopped_{false};  // Stop ran (or runs)
  std::atomic<bool> stepped_{false};  // StartStepped: no loop, no writer threads
  // Carries out the loop's writes (one per key, backoff, decisions before refreshes).
  KeyedWriter writer_;
  // Tickets of queued workloads (reconcilers/objects/tickets.h), written under "ticket:<ns>/<name>".
  TicketSync tickets_{client_, caches_, [this](const std::string& key, std::function<bool()> write) {
                        return DispatchNow(key, std::move(write));
                      }};
  EngineObserver* observer_ = nullptr;
};

}  // namespace berth::reconcilers
