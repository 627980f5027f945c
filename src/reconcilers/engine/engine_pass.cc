#include "reconcilers/engine/engine_pass.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "scheduling/instance_state.h"
#include "scheduling/scheduler.h"

namespace berth::reconcilers {

namespace sched = scheduling;

EnginePass::EnginePass(k8s::ClientPtr client, const k8s::Clock& clock, const EngineOptions& options,
                       k8s::EventRecorder& events, Hooks hooks)
    : client_(std::move(client)),
      clock_(clock),
      options_(options),
      events_(events),
      hooks_(std::move(hooks)),
      queue_(options.aging_interval) {
  writes_.SetUsageWanted([this] { usage_.Want(); });  // issue 47
}

bool EnginePass::Dispatch(PassWrite write) {
  if (PassWrites* pass = PassWrites::Current()) return pass->Add(std::move(write));
  return hooks_.dispatch_now(write.key, std::move(write.write), write.background);
}

bool EnginePass::WriterBusy(const std::string& key) const {
  if (const PassWrites* pass = PassWrites::Current()) return pass->Busy(key);
  return hooks_.writer_busy(key);
}

size_t EnginePass::BackgroundQueued() const {
  if (const PassWrites* pass = PassWrites::Current()) return pass->BackgroundQueued();
  return hooks_.background_queued();
}

void EnginePass::Begin(PassWrites::Gate gate, EngineLoop::Changes changes, k8s::TimePoint now) {
  (void)now;
  working_.BeginPass();
  deadline_.reset();
  ShowPriorityNews();
  // What the writers have queued, in flight or backing off: the pass' writes answer as the
  // KeyedWriter would (PassWrites::Gate).
  std::unordered_set<std::string> busy = gate.busy;
  collecting_.reset();
  pass_writes_ = PassWrites(std::move(gate));
  collecting_.emplace(pass_writes_);  // the pass' writes: a list, until Decide returns it
  busy_ = TakeNews(std::move(busy), std::move(changes));
}

std::unordered_set<std::string> EnginePass::TakeNews(std::unordered_set<std::string> busy,
                                                     EngineLoop::Changes changes) {
  sweep_.BeginPass(std::move(changes.nodes), changes.fleets, changes.namespaces);
  const Admissions::News news = admissions_.TakeNews();
  Admissions::ApplyNews(news, working_);
  fleet_status_.TakeFailures();  // written again by this pass
  teams_.TakeFailures();
  // Runs a position sequence in flight may still write are left alone until it is done
  // (and until the cache shows what it wrote: see PositionWriter).
  busy.insert(positions_.InFlight().begin(), positions_.InFlight().end());
  // Into the working set (see "Incremental passes"): what changed, what our writers touched. A
  // run that changed is read from the snapshot again (RunMemo::run).
  for (const auto& key : changes.runs) working_.Touch(key);
  Admissions::ActivateNamed(news, working_);
  return busy;
}

const Keyed& EnginePass::MakeWorkingSet(const std::map<std::string, k8s::SetAsideObject>& set_aside,
                                        k8s::TimePoint now) {
  set_aside_.Report(set_aside, now);
  const Keyed& keyed = working_.Make(
      now, [this](const std::string& key) { return snapshot_.runs().Get(key); }, [this] { ShowPriorityNews(); },
      RunSweep::kNewsEvery);
  working_.MarkBusy(busy_);
  return keyed;
}

PassWrites EnginePass::Decide(k8s::TimePoint now, const std::map<std::string, k8s::SetAsideObject>& set_aside,
                              PassPhases& phases) {
  const Keyed& keyed = MakeWorkingSet(set_aside, now);
  visited_ = keyed.size();
  phases.Mark("workingset");
  std::vector<std::shared_ptr<const PlacedRun>> placed;
  ClusterView& view = PassView(keyed, placed, now);
  ShowPriorityNews();
  phases.Mark("view");
  std::unordered_set<std::string> frozen = ReconcileAll(keyed, view, now);
  ShowPriorityNews();
  phases.Mark("reconcile");
  view_keeper_.SetNominations(view, preemptions_.Nominations(keyed, placed, view, queue_, frozen, now));
  Forecast(view, now);  // the core's input, before the core changes the queue
  decided_ = Schedule(view, now);
  if (decided_ || !pending_counts_) pending_counts_ = result().CountWaiting();
  ShowPriorityNews();
  phases.Mark(decided_ ? "schedule" : "schedule(stood)");
  oldest_waiting_ = CarryOutResult(keyed, view, result(), std::move(frozen), now, phases);
  phases.Mark("publish");
  // The instances' states and the Fleet statuses (kept while the view is: FleetStatusWriter).
  described_ = &fleet_status_.Update(view, view_keeper_.gen(), now);
  if (auto team_write = teams_.Update(view, view_keeper_.gen(), now)) NoteDeadline(*team_write);
  NoteDeadline(usage_.Update(view, now, placed));  // issue 47: the usage fold
  sweep_.Settle(keyed, busy_, now);
  collecting_.reset();
  return std::exchange(pass_writes_, PassWrites());
}

ClusterView& EnginePass::PassView(const Keyed& keyed, std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                  k8s::TimePoint now) {
  // The snapshot's versions first (ClusterViewKeeper::Inputs).
  const ClusterViewKeeper::Inputs inputs = view_keeper_.CurrentInputs();
  placed = sweep_.BlockHolders(keyed);
  std::optional<k8s::TimePoint> pause_ends;
  ClusterView& view = view_keeper_.Update(inputs, keyed, placed, now, pause_ends);
  if (pause_ends) NoteDeadline(*pause_ends);
  view_keeper_.SetTeams(view, teams_.Specs(now));  // issue 31: usage accrued to now
  return view;
}

std::unordered_set<std::string> EnginePass::ReconcileAll(const Keyed& keyed, const ClusterView& view,
                                                        k8s::TimePoint now) {
  RunSweep::Reconciled swept = sweep_.ReconcileAll(keyed, view, now);
  if (swept.deadline) NoteDeadline(*swept.deadline);
  refresh_left_ |= swept.refresh_left;
  return std::move(swept.frozen);
}

void EnginePass::Forecast(const ClusterView& view, k8s::TimePoint now) {
  forecaster_.Take();
  const uint64_t stamp = queue_.version() ^ (view_keeper_.gen() << 32);
  if (!forecaster_.Due(now)) {
    if (auto due = forecaster_.DueAt(stamp)) NoteDeadline(*due);  // the input changed since the last
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

bool EnginePass::Schedule(const ClusterView& view, k8s::TimePoint now) {
  // The core decides again only when its input or the time may give another result; otherwise
  // the last result is this pass' (CoreResultStands).
  if (CoreResultStands(now)) return false;
  // The last pass' result lends its buffers (its content is not read after this point: a view
  // is made from it between passes only, and WaitingOf reads this pass' entries).
  fresh_ = sched::Schedule(view.snapshot, queue_, now, true, std::move(last_result_));
  core_queue_version_ = queue_.version();  // AdvanceTo (aging) is part of the cycle
  core_view_gen_ = view_keeper_.gen();
  return true;
}

std::optional<k8s::TimePoint> EnginePass::CarryOutResult(const Keyed& keyed, const ClusterView& view,
                                                         const sched::CycleResult& result,
                                                         std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                                         PassPhases& phases) {
  waiting_.NotePreempting(view.snapshot.nominations, result, working_);
  if (auto aging = queue_.NextChangeAt()) NoteDeadline(*aging);  // a run moves up a priority
  if (auto expiry = working_.NextExpiry()) NoteDeadline(*expiry);  // a finished run's TTL
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

std::optional<k8s::TimePoint> EnginePass::CarryOutWaiting(const Keyed& keyed, const sched::CycleResult& result,
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
    working_.MarkPositioned(key);
  }
  if (budget_due) NoteDeadline(*budget_due);
  ShowPriorityNews();
  phases.Mark("positions");
  const WaitingStatusWriter::PassOutcome out =
      waiting_.CarryOut(result, working_, positions_, now, [this] { ShowPriorityNews(); }, RunSweep::kNewsEvery);
  if (out.deadline) NoteDeadline(*out.deadline);
  refresh_left_ |= out.refresh_left;
  phases.Mark("waiting");
  return out.oldest;
}

void EnginePass::Admit(const Run& run, const sched::Placement& placement, k8s::TimePoint now) {
  const std::string key = RunKey(run);
  const int32_t effective = queue_.EffectivePriority(key).value_or(static_cast<int32_t>(run.spec.priority));
  if (!admissions_.Admit(run, placement, effective, working_.MemoOf(key), now)) return;
  queue_.Remove(key);
  // Issue 47: the run's first estimate against its placement (the ranges' calibration, the metric).
  if (const std::optional<double> error = forecaster_.NoteStarted(key, now); error && observer_ != nullptr) {
    observer_->OnEstimateError(*error);
  }
}

void EnginePass::Finish(k8s::TimePoint now, k8s::TimePoint resync_at) {
  if (decided_) {
    last_result_ = std::move(fresh_);
    decided_ = false;  // result() is last_result_ from now on
    // Stands until the first deadline this pass noted (an aging step, a refused instance's pause,
    // a TTL, a waiting run's end...) or status_refresh, as the wait for work computes it.
    core_until_ = deadline_ ? std::min(*deadline_, resync_at) : resync_at;
  } else if (core_until_) {
    NoteDeadline(*core_until_);  // the core reads the time again then
  }
  (void)now;
  MakeViewIfWanted(last_result_);
  // Periodic looks left for later passes (refreshes_per_pass): the next pass comes as after a
  // change, paced by the loop.
  if (std::exchange(refresh_left_, false)) hooks_.wake();
}

bool EnginePass::CoreResultStands(k8s::TimePoint now) const {
  return core_until_ && now < *core_until_ && queue_.version() == core_queue_version_ &&
         view_keeper_.gen() == core_view_gen_ && last_result_.placements.empty() && last_result_.preemptions.empty();
}

void EnginePass::PublishQueue(const sched::CycleResult& result) {
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

void EnginePass::MakeViewIfWanted(const sched::CycleResult& result) {
  if (queue_view_.Wanted()) PublishQueue(result);
}

void EnginePass::ShowPriorityNews() {
  queue_view_.ShowNews(queue_, [this](const std::string& key) { return ViewPriority(key); });
}

EngineObserver::PassSummary EnginePass::Summarize(std::chrono::microseconds took, k8s::TimePoint now) const {
  static const std::vector<sched::InstanceStatus> kNone;
  EngineObserver::PassSummary summary =
      SummarizePass(took, result(), decided_, now, oldest_waiting_, described_ != nullptr ? *described_ : kNone,
                    teams_.report(), pending_counts_ ? &*pending_counts_ : nullptr);
  summary.unreadable_runs = set_aside_.unreadable();
  return summary;
}

std::string EnginePass::SlowLine(std::chrono::microseconds took, const PassPhases& phases) const {
  return fmt::format("slow scheduling pass: {} ms for {} runs ({} queued, {} placed);{}", took.count() / 1000,
                     visited_, queue_.size(), result().placements.size(), phases.text);
}

}  // namespace berth::reconcilers
