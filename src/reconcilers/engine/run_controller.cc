#include "reconcilers/engine/run_controller.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "reconcilers/writers/run_status.h"
#include "scheduling/instance_state.h"
#include "scheduling/scheduler.h"

namespace berth::reconcilers {

namespace sched = scheduling;

RunController::RunController(k8s::ClientPtr client, const k8s::Clock& clock, EngineOptions options)
    : client_(std::move(client)),
      clock_(clock),
      options_(options),
      events_(std::make_unique<k8s::EventRecorder>(client_, clock_, "berth-controller")),
      caches_(client_),
      queue_(options.aging_interval),
      // Most writers carry decisions; two refresh waiting runs' status, so refreshes never hold
      // up an admission, a start or a failure.
      writer_(clock,
              KeyedWriter::Options{std::max(1, options.writers - 2), 2,
                                   BackoffPolicy{std::chrono::milliseconds(100), std::chrono::milliseconds(30000)}},
              [this](const std::string& key, KeyedWriter::Outcome outcome) {
                if (outcome == KeyedWriter::Outcome::kFailed && observer_ != nullptr) {
                  observer_->OnWriteFailed(key.rfind("fleet:", 0) == 0 ? "fleet" : key.rfind("team:", 0) == 0 ? "team" : "run");
                }
                Wake();  // decide again: with what the write changed, or now that the key may write
              }) {
  caches_.SetDefaultMaxPriority(options.default_max_priority);
  // A stopped Pod gets at most its fleet's maxGracePeriod (issue 44).
  // The Pods a writer reads after creating a run's Pods (status.podUIDs): the cache as it is then.
  writes_.SetLivePods([this](const Run& run) { return caches_.live().PodsOf(run); });
  writes_.SetGraceCap([this](const std::string& node) { return caches_.live().GraceCapOf(node); });
  writes_.SetWorkloadPods([this](const Run& ticket) { return caches_.live().WorkloadPodsOf(ticket); });
  // Every change the engine watches wakes the loop; a run's priority patch shows in the queue view at once.
  loop_.Watch(
      caches_, [this](const std::string& key) { queue_view_.NotePriorityChange(key); },
      [this] {
        if (on_synced_) on_synced_();
      });
}

RunController::~RunController() { Stop(); }

void RunController::StartInformers() { caches_.Start(); }

void RunController::StartLoop() {
  writer_.Start();
  loop_.Start();
}

EngineLoop::Hooks RunController::LoopHooks() {
  return EngineLoop::Hooks{
      .synced = [this] { return caches_.HasSynced(); },
      .started =
          [this] {
            spdlog::info("caches synced: {} runs, {} fleets, {} nodes, {} pods", caches_.runs().Size(),
                         caches_.fleets().Size(), caches_.nodes().Size(), caches_.pods().Size());
            queue_view_.SetServing();
          },
      .pass = [this](k8s::TimePoint now) { Pass(now); },
      .news = [this] { return queue_view_.HasNews(); },
      .show_news = [this] { ShowPriorityNews(); },
      .view_wanted = [this] { return queue_view_.Wanted(); },
      .make_view = [this] { PublishQueue(last_result_); },
  };
}

void RunController::Stop() {
  if (stopped_.exchange(true)) return;
  loop_.RequestStop();  // from now on no write is dispatched (Dispatch)
  queue_view_.Stop();
  loop_.Stop();
  forecaster_.Stop();
  // Writes already queued are carried out; then the writers stop.
  writer_.Stop();
  caches_.Stop();
  events_->Flush();
}

bool RunController::HasSynced() const { return caches_.HasSynced(); }

std::vector<QueueEntry> RunController::Queue() const {
  // Stepped, no loop makes a view on request: the last one made (MakeView) at once.
  return queue_view_.Get(stepped_ ? std::chrono::milliseconds::zero() : kViewWait);
}

bool RunController::Dispatch(PassWrite write) {
  if (PassWrites* pass = PassWrites::Current()) return pass->Add(std::move(write));
  return DispatchNow(write.key, std::move(write.write), write.background);
}

bool RunController::DispatchNow(const std::string& key, std::function<bool()> fn, bool background) {
  if (loop_.Stopping()) return false;
  return writer_.Dispatch(key, std::move(fn), background);
}

void RunController::CarryOutWrites() {
  // In the order decided: a run's status before its Pods, decisions replacing waiting refreshes.
  for (PassWrite& w : pass_writes_.Take()) {
    if (DispatchNow(w.key, std::move(w.write), w.background)) continue;
    if (w.refused) w.refused();  // what the component does when Dispatch refuses
    Wake();                      // decided again by the next pass
  }
}

bool RunController::WriterBusy(const std::string& key) const {
  if (const PassWrites* pass = PassWrites::Current()) return pass->Busy(key);
  return writer_.Busy(key);
}

size_t RunController::BackgroundQueued() const {
  if (const PassWrites* pass = PassWrites::Current()) return pass->BackgroundQueued();
  return writer_.BackgroundQueued();
}

void RunController::StartStepped() {
  stepped_ = true;
  forecaster_.SetStepped();
  StartInformers();
}

size_t RunController::DrainWrites() {
  if (!stepped_) return 0;
  const size_t ran = writer_.RunQueued();
  events_->Flush();
  forecaster_.RunQueued();
  return ran;
}

void RunController::MakeView() {
  if (queue_view_.Stale()) PublishQueue(last_result_);
}

std::unordered_set<std::string> RunController::TakeWriterNews() {
  // What the writers have queued, in flight or backing off: the pass' writes answer as the
  // KeyedWriter would (PassWrites::Gate).
  PassWrites::Gate gate = writer_.TakeGate();
  gate.stopping = gate.stopping || loop_.Stopping();
  std::unordered_set<std::string> busy = gate.busy;
  pass_writes_ = PassWrites(std::move(gate));
  EngineLoop::Changes changes = loop_.TakeChanges();  // this pass takes every change noted so far
  sweep_.BeginPass(std::move(changes.nodes), changes.fleets, changes.namespaces);
  const Admissions::News news = admissions_.TakeNews();
  Admissions::ApplyNews(news, working_);
  fleet_status_.TakeFailures();  // written again by this pass
  teams_.TakeFailures();
  // Runs a position sequence in flight may still write are left alone until it is done.
  // (and until the cache shows what it wrote: see PositionWriter).
  busy.insert(positions_.InFlight().begin(), positions_.InFlight().end());
  // Into the working set (see "Incremental passes"): what changed, what our writers touched. A
  // run that changed is read from the cache again (RunMemo::run).
  for (const auto& key : changes.runs) working_.Touch(key);
  Admissions::ActivateNamed(news, working_);
  return busy;
}

std::unordered_set<std::string> RunController::ReconcileAll(const Keyed& keyed, const ClusterView& view,
                                                           k8s::TimePoint now) {
  RunSweep::Reconciled swept = sweep_.ReconcileAll(keyed, view, now);
  if (swept.deadline) loop_.NoteDeadline(*swept.deadline);
  refresh_left_ |= swept.refresh_left;
  return std::move(swept.frozen);
}

void RunController::PublishQueue(const sched::CycleResult& result) {
  ShowPriorityNews();
  std::vector<QueueEntry> entries = MakeQueueEntries(
      queue_, result,
      [this](const sched::PendingRun& run) -> const sched::WaitingRun* {
        const RunMemo* m = WorkingSet::OwnerOf(run.owner);
        return m != nullptr ? working_.WaitingOf(*m) : nullptr;
      },
      [&](const sched::WaitingRun& w) { return waiting_.Explain(result, w); },
      [this](const std::string& ns) { return snapshot_.CapOf(ns).has_value(); });
  const auto team_of = TeamsByNamespace(snapshot_.teams());
  for (auto& e : entries) {
    if (auto it = team_of.find(e.ns); it != team_of.end()) e.team = it->second;
    if (const sched::StartEstimate* est = forecaster_.Of(k8s::ObjectKey(e.ns, e.name), e.position)) {
      e.estimated_start = est->start;
      if (est->range) e.estimated_range = std::make_pair(est->range->earliest, est->range->latest);
    }
    if (auto run = snapshot_.runs().Get(k8s::ObjectKey(e.ns, e.name)); run && run->spec.workload_ref) {
      e.kind = run->spec.workload_ref->kind;
      e.workload = run->spec.workload_ref->name;
    }
  }
  queue_view_.Publish(std::move(entries), queue_, [this](const std::string& key) { return ViewPriority(key); });
}

void RunController::MakeViewIfWanted(const sched::CycleResult& result) {
  if (queue_view_.Wanted()) PublishQueue(result);
}

void RunController::ShowPriorityNews() {
  queue_view_.ShowNews(queue_, [this](const std::string& key) { return ViewPriority(key); });
}

std::optional<int32_t> RunController::ViewPriority(const std::string& key) const {
  auto run = caches_.live().runs().Get(key);  // live: a priority patch shows before the next pass
  if (!run || run->meta.deleting) return std::nullopt;
  return std::clamp<int32_t>(caches_.live().QueuePriority(*run), base::kMinPriority, base::kMaxPriority);
}

void RunController::Report(std::chrono::microseconds took, const sched::CycleResult& result, bool decided,
                           k8s::TimePoint now, std::optional<k8s::TimePoint> oldest,
                           const std::vector<sched::InstanceStatus>& described) {
  if (!observer_) return;
  EngineObserver::PassSummary summary = SummarizePass(took, result, decided, now, oldest, described, teams_.report());
  summary.writes_queued = writer_.BusyCount();
  summary.events_posted = events_->posted();
  summary.events_dropped = events_->dropped();
  summary.unreadable_runs = set_aside_.unreadable();
  observer_->OnPass(summary);
}

ClusterView& RunController::PassView(const Keyed& keyed, std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                     k8s::TimePoint now) {
  // The caches' versions first (ClusterViewKeeper::Inputs): a change after this point makes the
  // next pass build anew.
  const ClusterViewKeeper::Inputs inputs = view_keeper_.CurrentInputs();
  placed = sweep_.BlockHolders(keyed);
  std::optional<k8s::TimePoint> pause_ends;
  ClusterView& view = view_keeper_.Update(inputs, keyed, placed, now, pause_ends);
  if (pause_ends) loop_.NoteDeadline(*pause_ends);
  view_keeper_.SetTeams(view, teams_.Specs(now));  // issue 31: usage accrued to now
  return view;
}

std::optional<k8s::TimePoint> RunController::CarryOutWaiting(const Keyed& keyed, const sched::CycleResult& result,
                                                             std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                                             PassPhases& phases) {
  // Where each waiting run belongs (the positions plan, the waiting statuses).
  positions_.Places(queue_, working_, now);
  // Positions first: a run that moves gets its whole waiting status in its position write. Runs
  // with a write of their own keep their place until it is visible: those busy when the pass
  // began are frozen already (ReconcileAll), and this pass' own.
  for (const auto& [key, at] : pass_writes_.keys()) frozen.insert(key);
  std::optional<k8s::TimePoint> budget_due;
  const auto full_status = [&](const Run& run, const sched::WaitingRun& w, std::optional<int64_t> place) {
    return waiting_.Status(run, WaitingReason(w.reason.code), w.effective_priority, place,
                           waiting_.Sentence(result, w, place), now);
  };
  for (const std::string& key : positions_.Write(keyed, std::move(frozen), working_, full_status, now, budget_due)) {
    if (RunMemo* m = working_.Find(key)) m->positioned_pass = working_.pass();
  }
  if (budget_due) loop_.NoteDeadline(*budget_due);
  ShowPriorityNews();
  phases.Mark("positions");
  const WaitingStatusWriter::PassOutcome out =
      waiting_.CarryOut(result, working_, positions_, now, [this] { ShowPriorityNews(); }, RunSweep::kNewsEvery);
  if (out.deadline) loop_.NoteDeadline(*out.deadline);
  refresh_left_ |= out.refresh_left;
  phases.Mark("waiting");
  return out.oldest;
}

void RunController::Pass(k8s::TimePoint now) {
  PassPhases phases;  // the pass' own duration (the metric) and where a slow one spent it (logged)
  tickets_.Pass();  // issue 45: each queued workload's ticket (reconcilers/objects/tickets.h)
  std::unordered_set<std::string> busy;
  std::optional<PassWrites::Collecting> collecting(std::in_place, pass_writes_);  // the pass' writes: a list
  const Keyed& keyed = StartPass(now, busy);
  phases.Mark("workingset");
  std::vector<std::shared_ptr<const PlacedRun>> placed;
  ClusterView& view = PassView(keyed, placed, now);
  ShowPriorityNews();
  phases.Mark("view");

  std::unordered_set<std::string> frozen = ReconcileAll(keyed, view, now);
  ShowPriorityNews();
  phases.Mark("reconcile");
  // After ReconcileAll: `frozen`.
  view_keeper_.SetNominations(view, preemptions_.Nominations(keyed, placed, view, queue_, frozen, now));
  Forecast(view, now);  // the core's input, before the core changes the queue
  sched::CycleResult fresh;
  const bool decide = Decide(view, now, fresh);
  const sched::CycleResult& result = decide ? fresh : last_result_;
  ShowPriorityNews();
  phases.Mark(decide ? "schedule" : "schedule(stood)");
  const std::optional<k8s::TimePoint> oldest_waiting = CarryOutResult(keyed, view, result, std::move(frozen), now, phases);
  phases.Mark("publish");

  // The instances' states and the Fleet statuses (kept while the view is: FleetStatusWriter).
  const std::vector<sched::InstanceStatus>& described = fleet_status_.Update(view, view_keeper_.gen(), now);
  if (auto team_write = teams_.Update(view, view_keeper_.gen(), now)) loop_.NoteDeadline(*team_write);
  sweep_.Settle(keyed, busy, now);
  collecting.reset();
  CarryOutWrites();  // the decision made, its writes go out in the order decided
  ShowPriorityNews();
  phases.Mark("settle");
  const auto took = phases.Total();
  if (took > std::chrono::milliseconds(200)) {
    spdlog::info("slow scheduling pass: {} ms for {} runs ({} queued, {} placed);{}", took.count() / 1000, keyed.size(),
                 queue_.size(), result.placements.size(), phases.text);
  }
  Report(took, result, decide, now, oldest_waiting, described);
  FinishPass(decide, std::move(fresh), now);
}

const Keyed& RunController::StartPass(k8s::TimePoint now, std::unordered_set<std::string>& busy) {
  working_.BeginPass();
  loop_.ResetDeadline();
  ShowPriorityNews();
  busy = TakeWriterNews();
  // The pass' snapshot, after what changed was taken (TakeWriterNews): a change noted then is in it.
  caches_.UpdateSnapshot(snapshot_);
  set_aside_.Report(caches_.runs().SetAside(), now);
  const Keyed& keyed = working_.Make(
      now, [this](const std::string& key) { return snapshot_.runs().Get(key); }, [this] { ShowPriorityNews(); },
      RunSweep::kNewsEvery);
  working_.MarkBusy(busy);
  return keyed;
}

void RunController::Forecast(const ClusterView& view, k8s::TimePoint now) {
  forecaster_.Take();
  const uint64_t stamp = queue_.version() ^ (view_keeper_.gen() << 32);
  if (!forecaster_.Due(now)) {
    if (auto due = forecaster_.DueAt(stamp)) loop_.NoteDeadline(*due);  // the input changed since the last
    return;
  }
  const auto team_of = TeamsByNamespace(snapshot_.teams());
  forecaster_.Hand(ForecastInput(
                       view.snapshot, queue_, forecaster_.history(),
                       [this](const std::string& key) { return snapshot_.runs().Get(key); },
                       [&](const std::string& ns) {
                         auto it = team_of.find(ns);
                         return it != team_of.end() ? it->second : std::string();
                       },
                       now, forecaster_.options().max_runs),
                   stamp);
}

bool RunController::Decide(const ClusterView& view, k8s::TimePoint now, sched::CycleResult& fresh) {
  // The core decides again only when its input or the time may give another result; otherwise
  // the last result is this pass' (CoreResultStands).
  if (CoreResultStands(now)) return false;
  // The last pass' result lends its buffers (its content is not read after this point: a view
  // is made from it between passes only, and WaitingOf reads this pass' entries).
  fresh = sched::Schedule(view.snapshot, queue_, now, true, std::move(last_result_));
  core_queue_version_ = queue_.version();  // AdvanceTo (aging) is part of the cycle
  core_view_gen_ = view_keeper_.gen();
  return true;
}

std::optional<k8s::TimePoint> RunController::CarryOutResult(const Keyed& keyed, const ClusterView& view,
                                                            const sched::CycleResult& result,
                                                            std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                                            PassPhases& phases) {
  waiting_.NotePreempting(view.snapshot.nominations, result, working_);
  if (auto aging = queue_.NextChangeAt()) loop_.NoteDeadline(*aging);  // a run moves up a priority
  if (auto expiry = working_.NextExpiry()) loop_.NoteDeadline(*expiry);  // a finished run's TTL
  for (const auto& placement : result.placements) {
    auto run = snapshot_.runs().Get(placement.run_id);
    if (!run) continue;
    Admit(*run, placement, now);
  }
  working_.MarkWaiting(result);  // each run's entry, for the steps below (WaitingOf)
  const std::optional<k8s::TimePoint> oldest_waiting = CarryOutWaiting(keyed, result, std::move(frozen), now, phases);
  queue_view_.MarkStale();  // made when asked for (Queue): 100,000 entries each pass cost 35-45 ms
  MakeViewIfWanted(result);
  return oldest_waiting;
}

void RunController::FinishPass(bool decided, sched::CycleResult fresh, k8s::TimePoint now) {
  if (decided) {
    last_result_ = std::move(fresh);
    // Stands until the first deadline this pass noted (an aging step, a refused instance's pause,
    // a TTL, a waiting run's end...) or status_refresh, as the wait for work computes it.
    const k8s::TimePoint refresh = loop_.ResyncAt(now);
    core_until_ = loop_.deadline() ? std::min(*loop_.deadline(), refresh) : refresh;
  } else if (core_until_) {
    loop_.NoteDeadline(*core_until_);  // the core reads the time again then
  }
  MakeViewIfWanted(last_result_);
  // Periodic looks left for later passes (refreshes_per_pass): the next pass comes as after a
  // change, paced by the loop.
  if (std::exchange(refresh_left_, false)) Wake();
}

bool RunController::CoreResultStands(k8s::TimePoint now) const {
  return core_until_ && now < *core_until_ && queue_.version() == core_queue_version_ && view_keeper_.gen() == core_view_gen_ &&
         last_result_.placements.empty() && last_result_.preemptions.empty();
}

void RunController::Admit(const Run& run, const sched::Placement& placement, k8s::TimePoint now) {
  const std::string key = RunKey(run);
  const int32_t effective = queue_.EffectivePriority(key).value_or(static_cast<int32_t>(run.spec.priority));
  if (!admissions_.Admit(run, placement, effective, working_.MemoOf(key), now)) return;
  queue_.Remove(key);
  // Issue 47: the run's first estimate against its placement (the ranges' calibration, the metric).
  if (const std::optional<double> error = forecaster_.NoteStarted(key, now); error && observer_ != nullptr) {
    observer_->OnEstimateError(*error);
  }
}

}  // namespace berth::reconcilers
