#include "reconcilers/run_controller.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include <spdlog/spdlog.h>

#include "k8s/duration.h"
#include "k8s/timefmt.h"
#include "reconcilers/lifecycle.h"
#include "reconcilers/pod_builder.h"
#include "reconcilers/run_status.h"
#include "scheduling/instance_state.h"
#include "scheduling/scheduler.h"

namespace berth::reconcilers {

namespace json = k8s::json;
namespace sched = scheduling;
using k8s::resources::kFleets;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using k8s::resources::kServices;

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
  auto wake = [this](const std::string&, const auto&, const auto&) { Wake(); };
  caches_.runs().SetSetAsideHandler([this] { Wake(); });  // SetAsideReporter
  // A run whose object or Pods changed is visited by the next pass (see "Incremental passes").
  caches_.runs().AddHandler([this](const std::string& key, const auto& old, const auto& cur) {
    // A priority patch is also shown in the queue view at once (ShowPriorityNews).
    if (old && cur && old->spec.priority != cur->spec.priority && !cur->meta.deleting) queue_view_.NotePriorityChange(key);
    Touch(key);
  });
  caches_.pods().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    const auto& p = cur ? cur : old;
    if (p) Touch(k8s::ObjectKey(p->meta.ns, p->meta.Label(kRunLabel)));
  });
  caches_.fleets().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    // Fleet status writes (berth's own) change nothing a placed run's decision reads.
    if (!old || !cur || old->meta.generation != cur->meta.generation) {
      std::lock_guard<std::mutex> lock(mu_);
      fleets_changed_ = true;
    }
    Wake();
  });
  caches_.nodes().AddHandler([this](const std::string& name, const auto&, const auto&) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      changed_nodes_.insert(name);
    }
    Wake();
  });
  caches_.others().AddHandler(wake);
  caches_.namespaces().AddHandler([this](const std::string&, const auto&, const auto&) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      namespaces_changed_ = true;  // a priority cap may have changed: pending runs are decided again
    }
    Wake();
  });
  caches_.quotas().AddHandler(wake);
  caches_.OnSynced([this] {
    Nudge();  // the loop waits for the caches (WaitForSync)
    if (on_synced_) on_synced_();
  });
  // A Team's spec (shares, namespaces, weight) changes the core's input; its status is berth's own.
  caches_.teams().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    if (!old || !cur || old->meta.generation != cur->meta.generation) Wake();
  });
}

RunController::~RunController() { Stop(); }

void RunController::StartInformers() { caches_.Start(); }

void RunController::StartLoop() {
  writer_.Start();
  loop_ = std::thread([this] { Loop(); });
}

void RunController::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !loop_.joinable() && stopped_writer_) return;
    stopping_ = true;
  }
  loop_cv_.notify_all();
  queue_view_.Stop();
  if (loop_.joinable()) loop_.join();
  forecaster_.Stop();
  // Writes already queued are carried out; then the writers stop.
  writer_.Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_writer_ = true;
  }
  caches_.Stop();
  events_->Flush();
}

bool RunController::HasSynced() const { return caches_.HasSynced(); }

std::vector<QueueEntry> RunController::Queue() const {
  // Stepped, no loop makes a view on request: the last one made (MakeView) at once.
  return queue_view_.Get(stepped_ ? std::chrono::milliseconds::zero() : kViewWait);
}

void RunController::Nudge() {
  { std::lock_guard<std::mutex> lock(mu_); }  // a wait that checked before the news is in its wait now
  loop_cv_.notify_one();
}

// The loop is woken by the first change since it last looked (dirty_ set): the changes after it
// find the next pass due already, and waking the loop thread for each (thousands in a burst,
// while it paces passes) only cost context switches. Priority news wakes it apart.
void RunController::Touch(const std::string& run_key) {
  bool was_dirty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    touched_.insert(run_key);
    was_dirty = std::exchange(dirty_, true);
  }
  if (!was_dirty) loop_cv_.notify_one();
}

void RunController::Wake() {
  bool was_dirty;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_dirty = std::exchange(dirty_, true);
  }
  if (!was_dirty) loop_cv_.notify_one();
}

bool RunController::Dispatch(const std::string& key, std::function<bool()> fn, bool background) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
  }
  if (!writer_.Dispatch(key, std::move(fn), background)) return false;
  dispatched_.insert(key);
  return true;
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

bool RunController::PassDue() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dirty_;
}

bool RunController::WaitForSync() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_ && !HasSynced()) {
    // Each informer's first list wakes the loop (EngineCaches::OnSynced).
    clock_.WaitFor(lock, loop_cv_, kMaxSleep, [this] { return stopping_ || HasSynced(); });
  }
  return !stopping_;
}

void RunController::Loop() {
  if (!WaitForSync()) return;
  spdlog::info("caches synced: {} runs, {} fleets, {} nodes, {} pods", caches_.runs().Size(), caches_.fleets().Size(),
               caches_.nodes().Size(), caches_.pods().Size());
  queue_view_.SetServing();
  // Passes are paced on the clock's monotonic time, as every wait of the loop (see Coalesce).
  base::MonoTime last_end = clock_.Monotonic() - std::chrono::seconds(1);
  std::chrono::milliseconds last_took{0};
  while (true) {
    if (!WaitForWork()) return;
    if (!Coalesce(last_end, std::clamp<std::chrono::milliseconds>(last_took, kCoalesce, kMaxGap))) return;
    const base::MonoTime start = clock_.Monotonic();
    Pass(clock_.Now());
    last_end = clock_.Monotonic();
    last_took = std::chrono::duration_cast<std::chrono::milliseconds>(last_end - start);
  }
}

bool RunController::Coalesce(base::MonoTime last_end, std::chrono::milliseconds gap) {
  // Coalesce bursts of events into one pass: the next pass starts kCoalesce after the last one
  // ended, or as long after as the last one took (at most kMaxGap), so that in a burst passes
  // take at most about half of the loop thread's time and each decides for more runs (a pass
  // costs O(runs not finished), whatever changed). Priority news is shown meanwhile.
  while (true) {
    const auto left = gap - std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Monotonic() - last_end);
    if (left <= std::chrono::milliseconds::zero()) return true;
    {
      std::unique_lock<std::mutex> lock(mu_);
      clock_.WaitFor(lock, loop_cv_, left,
                     [this] { return stopping_ || queue_view_.HasNews() || queue_view_.Wanted(); });
      if (stopping_) return false;
    }
    ShowPriorityNews();
    MakeViewIfWanted(last_result_);
  }
}

bool RunController::WaitForWork() {
  // Wake on a change (informers, writers), at the earliest deadline the last pass noted, or one
  // resync period after it (what no deadline covers: a waiting run's sentence, an instance's end
  // of life, a stale Pod creation). Deadlines and the wait are on the injected clock
  // (Clock::WaitFor: a FakeClock moved past `until` ends it); the wait is in slices of at most
  // kMaxSleep, after each of which the wall clock is read again (it may have jumped).
  const k8s::TimePoint resync = ResyncAt(clock_.Now());
  k8s::TimePoint until = next_deadline_ ? std::min(*next_deadline_, resync) : resync;
  until = std::max(until, clock_.Now() + kMinDeadlineDelay);  // a due deadline never spins the loop
  std::unique_lock<std::mutex> lock(mu_);
  while (!dirty_ && !stopping_) {
    if (queue_view_.Wanted()) {  // a view asked for between passes: made from the last pass' result
      lock.unlock();
      MakeViewIfWanted(last_result_);
      lock.lock();
      continue;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - clock_.Now());
    if (left <= std::chrono::milliseconds::zero()) break;
    clock_.WaitFor(lock, loop_cv_, std::min<std::chrono::milliseconds>(left, kMaxSleep),
                   [this] { return dirty_ || stopping_ || queue_view_.Wanted(); });
  }
  if (stopping_) return false;
  dirty_ = false;
  return true;
}

k8s::TimePoint RunController::ResyncAt(k8s::TimePoint from) const {
  return from + std::max<std::chrono::milliseconds>(options_.status_refresh, kMinDeadlineDelay);
}

void RunController::NoteDeadline(k8s::TimePoint at) {
  if (!next_deadline_ || at < *next_deadline_) next_deadline_ = at;
}

std::unordered_set<std::string> RunController::TakeWriterNews() {
  std::unordered_set<std::string> busy = writer_.BusyKeys();
  std::unordered_set<std::string> touched;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = false;  // this pass takes every change noted so far
    touched.swap(touched_);
    pass_changed_nodes_.clear();
    pass_changed_nodes_.swap(changed_nodes_);
    pass_fleets_changed_ = std::exchange(fleets_changed_, false);
    pass_namespaces_changed_ = std::exchange(namespaces_changed_, false);
  }
  if (pass_namespaces_changed_) ++namespaces_epoch_;
  const Admissions::News news = admissions_.TakeNews();
  Admissions::ApplyNews(news, working_);
  fleet_status_.TakeFailures();  // written again by this pass
  teams_.TakeFailures();
  // Runs a position sequence in flight may still write are left alone until it is done.
  // (and until the cache shows what it wrote: see PositionWriter).
  busy.insert(positions_.InFlight().begin(), positions_.InFlight().end());
  // Into the working set (see "Incremental passes"): what changed, what our writers touched. A
  // run that changed is read from the cache again (Memo::run).
  for (const auto& key : touched) working_.Touch(key);
  Admissions::ActivateNamed(news, working_);
  return busy;
}

std::shared_ptr<const PlacedRun> RunController::PlacedRecord(const std::string& key, const Run& run) const {
  auto pr = std::make_shared<PlacedRun>();
  pr->key = key;
  pr->uid = run.meta.uid;
  pr->fleet = run.status.fleet;
  pr->placement = run.status.placement;
  pr->priority = caches_.QueuePriority(run);
  if (auto at = PointOf(run.status.scheduled_at)) pr->placed_at = *at;
  if (run.spec.max_duration) {
    auto start = PointOf(run.status.started_at);
    if (!start) start = PointOf(run.status.scheduled_at);
    if (start) pr->expected_end = *start + *run.spec.max_duration;
  }
  pr->quota_pending = caches_.QuotaPending(run.meta.ns, pr->placement);
  return pr;
}

std::vector<std::shared_ptr<const PlacedRun>> RunController::BlockHolders(const Keyed& keyed) {
  // Runs holding blocks: admitted in the cache, or assumed while our write catches up.
  std::vector<std::shared_ptr<const PlacedRun>> placed;
  for (const auto& [key, run, memo] : keyed) {
    // Queued by the last pass and the same object since (not touched): pending, holds nothing
    // (unless admitted since: assumed), without reading the run again.
    if (memo->queued_pass + 1 == working_.pass() && !Touched(*memo) && !memo->assumed && !memo->placed_record()) continue;
    if (IsPlacedPhase(run->status.phase) && !run->status.placement.empty()) {
      memo->assumed.reset();
      memo->unconfirmed_rv = 0;
      const RunMemo::PlacedInputs inputs{run->meta.resource_version, memo->touched_pass, namespaces_epoch_};
      // Init-captures: clang 14 cannot capture a structured binding by name.
      placed.push_back(memo->placed.Get(inputs, [this, &k = key, &r = *run] { return PlacedRecord(k, r); }));
      continue;
    }
    memo->placed.Reset();
    if (Admissions::StillHeld(*memo, *run)) {  // assumed while our write catches up
      auto pr = std::make_shared<PlacedRun>(*memo->assumed);
      pr->quota_pending = caches_.QuotaPending(run->meta.ns, pr->placement);
      placed.push_back(std::move(pr));
    }
  }
  // Runs gone from the working set.
  working_.DropUnvisited(keyed);

  return placed;
}

std::vector<sched::Nomination> RunController::Nominations(const Keyed& keyed, const std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                                          const ClusterView& view,
                                                          const std::unordered_set<std::string>& frozen, k8s::TimePoint now) {
  std::vector<sched::Nomination> out;
  std::unordered_map<std::string_view, const PlacedRun*> placed_by_key;  // made for the first record
  std::unordered_set<std::string_view> held;  // nodes where the view has berth Pods outliving their placement
  for (const auto& [key, run, memo] : keyed) {
    if (!memo->has_preemption) continue;  // (Memo::Read: without reading the run)
    const auto& record = run->status.preemption;
    if (!record || !IsPendingPhase(run->status.phase) || run->meta.deleting || queue_.Find(key) == nullptr) continue;
    if (placed_by_key.empty()) {
      for (const auto& pr : placed) placed_by_key.emplace(pr->key, pr.get());
      for (const auto& r : view.snapshot.running) {
        if (r.id.rfind("pod:", 0) == 0) held.insert(r.placement.front().instance);
      }
    }
    sched::Nomination n{key, record->fleet, record->nodes, record->victims, false};
    const std::unordered_set<std::string> nodes(record->nodes.begin(), record->nodes.end());
    bool holds = true;
    for (const auto& id : record->victims) {
      auto victim = caches_.runs().Get(id);
      auto it = placed_by_key.find(id);
      if (victim && it != placed_by_key.end() && !it->second->assumed) {
        // Still placed: it may be evicted only while it is still of lower priority (a reclaim's
        // victims whatever their priority: the core chose borrowers, issue 31).
        if (!record->reclaim && caches_.QueuePriority(*victim) >= caches_.QueuePriority(*run)) {
          holds = false;
          break;
        }
        n.victims_stopping = true;
        if (!frozen.count(id)) Evict(*victim, *run, record->fleet, record->reclaim, now);  // not while a write of it is unseen
        continue;
      }
      if (!victim) continue;
      for (const auto& p : caches_.PodsOf(*victim)) {
        if (nodes.count(p->node_name) && !IsTerminalPod(*p)) n.victims_stopping = true;
      }
    }
    // The core decides on this pass' view, made before the caches read above: where it still
    // holds a stopped Pod's blocks on a kept node (its deletion seen since), the victims are
    // stopping for it too, else it would plan again with other victims (issue 31: a second
    // borrower stopped for nothing).
    for (const auto& node : record->nodes) n.victims_stopping = n.victims_stopping || held.count(node) != 0;
    if (holds) out.push_back(std::move(n));
  }
  return out;
}

void RunController::Evict(const Run& victim, const Run& preemptor, const std::string& fleet, bool reclaim,
                          k8s::TimePoint now) {
  const std::string victim_team = reclaim ? TeamNameOf(caches_.teams(), victim.meta.ns) : std::string();
  const std::string why =
      reclaim ? "reclaimed by team " + TeamNameOf(caches_.teams(), preemptor.meta.ns) + " for " + RunKey(preemptor) +
                    " (within its nominal share) on fleet " + fleet + ": team " +
                    (victim_team.empty() ? "of namespace " + victim.meta.ns : victim_team) + " borrowed it"
              : "preempted by " + RunKey(preemptor) + " (priority " + std::to_string(caches_.QueuePriority(preemptor)) +
                    ") on fleet " + fleet;
  spdlog::info("run {}: {}", RunKey(victim), why);
  writes_.FailOrRetry(victim, /*interruption=*/true, why, now, reclaim ? Reason::kReclaimed : Reason::kPreempted,
                      /*stopped=*/false, /*preempted=*/true, victim_team);
}

std::unordered_set<std::string> RunController::ReconcileAll(const Keyed& keyed, const ClusterView& view,
                                                           k8s::TimePoint now) {
  // Lifecycle of every run; the pending ones go into the queue (Memo::queued_pass).
  std::unordered_set<std::string> frozen;  // runs whose queuePosition must not be written now (returned)
  size_t visited = 0;
  size_t queued = 0;  // runs in the queue after this pass (each has queued_pass == working_.pass())
  size_t refreshes = 0;  // quiet placed runs looked at only because their refresh came due
  for (const auto& [key, run, memo_ptr] : keyed) {
    if (++visited % kNewsEvery == 0) ShowPriorityNews();
    Memo& memo = *memo_ptr;
    if (memo.assumed) {  // admission in flight, or its outcome unknown
      if (memo.unconfirmed_rv != 0 && !Busy(memo)) admissions_.Verify(*run, memo.unconfirmed_rv);
      frozen.insert(key);
      continue;
    }
    bool is_busy = Busy(memo);
    if (memo.awaiting_rv != 0) {
      if (RvNumber(run->meta.resource_version) < memo.awaiting_rv) {
        is_busy = true;  // our last write is not in the cache yet: decide again once it is
      } else {
        memo.awaiting_rv = 0;
      }
    }
    if (is_busy) frozen.insert(key);
    if (!is_busy) {
      const Stillness still = Quiet(*run, memo, now);
      if (still == Stillness::kQuiet) continue;
      // Only its periodic look is due: at most refreshes_per_pass of those a pass (80,000 placed
      // runs coming due in one pass cost 300 ms); the rest are looked at in the next passes.
      if (still == Stillness::kRefreshDue && ++refreshes > options_.refreshes_per_pass) {
        refresh_left_ = true;
        continue;
      }
    }
    if (QueuedQuietly(memo)) {  // busy too: DecidePending's kQueue stands then as well
      memo.queued_pass = working_.pass();  // its entry stays as it is
      ++queued;
      continue;
    }
    memo.queued_rv.clear();
    if (!reconciler_.Reconcile(*run, view, now, is_busy)) continue;
    memo.queued_pass = working_.pass();
    ++queued;
    if (!is_busy) memo.queued_rv = run->meta.resource_version;
    Enqueue(key, *run, memo);
  }
  if (auto deadline = reconciler_.TakeDeadline()) NoteDeadline(*deadline);
  DropUnqueued(queued);
  return frozen;
}

void RunController::Enqueue(const std::string& key, const Run& run, Memo& memo) {
  sched::PendingRun pr;
  pr.id = key;
  pr.priority = caches_.QueuePriority(run);
  pr.submitted_at = run.meta.created;
  pr.nodes = static_cast<int32_t>(run.spec.nodes);
  pr.resources = sched::Resources{run.spec.cpu_milli, run.spec.memory_bytes, run.spec.gpus};
  pr.fleets = run.spec.fleets;
  pr.max_duration = run.spec.max_duration;
  pr.owner = &memo;
  const sched::PendingRun* existing = queue_.Find(key);
  if (existing == nullptr || !(*existing == pr)) queue_.Upsert(std::move(pr));
}

void RunController::DropUnqueued(size_t queued) {
  // Every run queued this pass is in the queue once: when they are as many as its entries, none left.
  if (queued == queue_.size()) return;
  std::vector<std::string> gone;
  for (auto item : queue_) {
    const Memo* m = working_.Find(item.run.id);
    if (m == nullptr || m->queued_pass != working_.pass()) gone.push_back(item.run.id);
  }
  for (const auto& id : gone) queue_.Remove(id);
}

RunController::Stillness RunController::Quiet(const Run& run, const Memo& memo, k8s::TimePoint now) const {
  if (memo.quiet_rv.empty() || memo.quiet_rv != memo.run_rv) return Stillness::kChanged;
  if (run.meta.deleting || !IsPlacedPhase(run.status.phase) || pass_fleets_changed_ || Touched(memo)) {
    return Stillness::kChanged;
  }
  for (const auto& entry : run.status.placement) {
    if (pass_changed_nodes_.count(entry.node)) return Stillness::kChanged;
  }
  if (now < memo.quiet_until) return Stillness::kQuiet;
  // Due: its deadline (decided now, whatever else is due), or only its periodic look.
  return memo.quiet_deadline && now >= *memo.quiet_deadline ? Stillness::kChanged : Stillness::kRefreshDue;
}

bool RunController::QueuedQuietly(const Memo& memo) const {
  // DecidePending's kQueue stands while the run (its resourceVersion) and its Pods (Touched) are
  // as they were: its other rules read nothing else, and the time only ends a back-off. The
  // entry's priority also reads the namespace's cap. Queued by the last pass means in the queue
  // (its ReconcileAll took every other run out) with this memo as its owner.
  return !memo.queued_rv.empty() && memo.queued_rv == memo.run_rv && !pass_namespaces_changed_ &&
         !Touched(memo) && memo.queued_pass + 1 == working_.pass();
}

void RunController::PublishQueue(const sched::CycleResult& result) {
  ShowPriorityNews();
  std::vector<QueueEntry> entries = MakeQueueEntries(
      queue_, result,
      [this](const sched::PendingRun& run) -> const sched::WaitingRun* {
        const Memo* m = WorkingSet::OwnerOf(run.owner);
        return m != nullptr ? WaitingOf(*m) : nullptr;
      },
      [&](const sched::WaitingRun& w) { return waiting_.Explain(result, w); },
      [this](const std::string& ns) { return caches_.CapOf(ns).has_value(); });
  const auto team_of = TeamsByNamespace(caches_.teams());
  for (auto& e : entries) {
    if (auto it = team_of.find(e.ns); it != team_of.end()) e.team = it->second;
    if (const sched::StartEstimate* est = forecaster_.Of(k8s::ObjectKey(e.ns, e.name), e.position)) e.estimated_start = est->start;
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
  auto run = caches_.runs().Get(key);
  if (!run || run->meta.deleting) return std::nullopt;
  return std::clamp<int32_t>(caches_.QueuePriority(*run), base::kMinPriority, base::kMaxPriority);
}

void RunController::Report(std::chrono::microseconds took, const sched::CycleResult& result, bool decided,
                           k8s::TimePoint now, std::optional<k8s::TimePoint> oldest,
                           const std::vector<sched::InstanceStatus>& described) {
  if (!observer_) return;
  EngineObserver::PassSummary summary;
  summary.duration = took;
  summary.decided = decided;
  summary.pending = result.CountWaiting();
  // The oldest waiting run (one run once, whatever fleets it names). Its wait counts from its
  // submission (status.submittedAt, which berth sets to the creation time the queue orders by and
  // never changes: a retry keeps it), or, for a resubmitted
  // run, from when it went back to the queue (retryAfter): an earlier attempt's run time is not
  // waiting. The same rule as the admission wait (OnAdmitted).
  // A run waiting for its own namespace's ResourceQuota is not counted: the namespace's budget,
  // not berth or its fleets, holds it (the BerthRunsWaiting alert must not fire for it).
  // (Found by CarryOutWaiting, which reads every waiting run.)
  if (oldest && now > *oldest) {
    summary.oldest_pending_wait = std::chrono::duration_cast<std::chrono::milliseconds>(now - *oldest);
  }
  for (const auto& d : described) {
    auto& fc = summary.fleets[d.fleet];
    ++fc.instances_by_state[std::string(sched::InstanceStateName(d.state))];
    fc.busy_blocks += d.busy_blocks;
    if (sched::TakesNewRuns(d.state)) {
      fc.idle_blocks += d.total_blocks - d.busy_blocks;
    } else {
      fc.unavailable_blocks += d.total_blocks - d.busy_blocks;
    }
  }
  summary.writes_queued = writer_.BusyCount();
  summary.events_posted = events_->posted();
  summary.events_dropped = events_->dropped();
  summary.unreadable_runs = set_aside_.unreadable();
  for (const auto& row : teams_.report()) {
    static constexpr const char* kNames[sched::kShareResources] = {"gpu", "cpu", "memory"};
    static constexpr double kUnit[sched::kShareResources] = {1, 1000, 1};  // GPUs, CPU cores, bytes
    for (int r = 0; r < sched::kShareResources; ++r) {
      if (!row.accounted[r]) continue;
      summary.teams[{row.team, row.fleet, kNames[r]}] =
          EngineObserver::PassSummary::TeamAmounts{row.nominal[r] / kUnit[r], row.used[r] / kUnit[r],
                                                   row.borrowed[r] / kUnit[r], row.lent[r] / kUnit[r]};
    }
  }
  observer_->OnPass(summary);
}

ClusterView& RunController::PassView(const Keyed& keyed, std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                     k8s::TimePoint now) {
  // The caches' versions first (ClusterViewKeeper::Inputs): a change after this point makes the
  // next pass build anew.
  const ClusterViewKeeper::Inputs inputs = view_keeper_.CurrentInputs();
  placed = BlockHolders(keyed);
  std::optional<k8s::TimePoint> pause_ends;
  ClusterView& view = view_keeper_.Update(inputs, keyed, placed, now, pause_ends);
  if (pause_ends) NoteDeadline(*pause_ends);
  view_keeper_.SetTeams(view, teams_.Specs(now));  // issue 31: usage accrued to now
  return view;
}

void RunController::PassPhases::Mark(const char* step) {
  auto t = std::chrono::steady_clock::now();
  text += fmt::format(" {}={:.1f}ms", step, std::chrono::duration<double, std::milli>(t - mark).count());
  mark = t;
}

std::optional<k8s::TimePoint> RunController::CarryOutWaiting(const Keyed& keyed, const sched::CycleResult& result,
                                                             std::unordered_set<std::string> frozen, k8s::TimePoint now,
                                                             PassPhases& phases) {
  // Where each waiting run belongs (the positions plan, the waiting statuses).
  positions_.Places(queue_, working_, now);
  // Positions first: a run that moves gets its whole waiting status in its position write. Runs
  // with a write of their own keep their place until it is visible: those busy when the pass
  // began are frozen already (ReconcileAll), and this pass' own.
  frozen.insert(dispatched_.begin(), dispatched_.end());
  std::optional<k8s::TimePoint> budget_due;
  const auto full_status = [&](const Run& run, const sched::WaitingRun& w, std::optional<int64_t> place) {
    return waiting_.Status(run, WaitingReason(w.reason.code), w.effective_priority, place,
                           waiting_.Sentence(result, w, place), now);
  };
  for (const std::string& key : positions_.Write(keyed, std::move(frozen), working_, full_status, now, budget_due)) {
    if (Memo* m = working_.Find(key)) m->positioned_pass = working_.pass();
  }
  if (budget_due) NoteDeadline(*budget_due);
  ShowPriorityNews();
  phases.Mark("positions");
  const WaitingStatusWriter::PassOutcome out =
      waiting_.CarryOut(result, working_, positions_, now, [this] { ShowPriorityNews(); }, kNewsEvery);
  if (out.deadline) NoteDeadline(*out.deadline);
  refresh_left_ |= out.refresh_left;
  phases.Mark("waiting");
  return out.oldest;
}

void RunController::Pass(k8s::TimePoint now) {
  PassPhases phases;  // the pass' own duration (the metric) and where a slow one spent it (logged)
  std::unordered_set<std::string> busy;
  const Keyed& keyed = StartPass(now, busy);
  phases.Mark("workingset");
  std::vector<std::shared_ptr<const PlacedRun>> placed;
  ClusterView& view = PassView(keyed, placed, now);
  ShowPriorityNews();
  phases.Mark("view");

  std::unordered_set<std::string> frozen = ReconcileAll(keyed, view, now);
  ShowPriorityNews();
  phases.Mark("reconcile");
  view_keeper_.SetNominations(view, Nominations(keyed, placed, view, frozen, now));  // after ReconcileAll: frozen
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
  if (auto team_write = teams_.Update(view, view_keeper_.gen(), now)) NoteDeadline(*team_write);
  Settle(keyed, busy, now);
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

const RunController::Keyed& RunController::StartPass(k8s::TimePoint now, std::unordered_set<std::string>& busy) {
  working_.BeginPass();
  dispatched_.clear();
  next_deadline_.reset();
  ShowPriorityNews();
  busy = TakeWriterNews();
  set_aside_.Report(caches_.runs().SetAside(), now);
  const Keyed& keyed = working_.Make(
      now, [this](const std::string& key) { return caches_.runs().Get(key); }, [this] { ShowPriorityNews(); }, kNewsEvery);
  working_.MarkBusy(busy);
  return keyed;
}

void RunController::Forecast(const ClusterView& view, k8s::TimePoint now) {
  forecaster_.Take();
  const uint64_t stamp = queue_.version() ^ (view_keeper_.gen() << 32);
  if (!forecaster_.Due(now)) {
    if (auto due = forecaster_.DueAt(stamp)) NoteDeadline(*due);  // the input changed since the last
    return;
  }
  const auto team_of = TeamsByNamespace(caches_.teams());
  forecaster_.Hand(ForecastInput(
                       view.snapshot, queue_, forecaster_.history(),
                       [this](const std::string& key) { return caches_.runs().Get(key); },
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
  if (auto aging = queue_.NextChangeAt()) NoteDeadline(*aging);  // a run moves up a priority
  if (auto expiry = working_.NextExpiry()) NoteDeadline(*expiry);  // a finished run's TTL
  for (const auto& placement : result.placements) {
    auto run = caches_.runs().Get(placement.run_id);
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
    const k8s::TimePoint refresh = ResyncAt(now);
    core_until_ = next_deadline_ ? std::min(*next_deadline_, refresh) : refresh;
  } else if (core_until_) {
    NoteDeadline(*core_until_);  // the core reads the time again then
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


std::optional<k8s::TimePoint> RunController::ExpiryOf(const Run& run) const {
  std::optional<std::chrono::milliseconds> ttl = options_.finished_run_ttl;
  if (run.spec.ttl_seconds_after_finished) ttl = std::chrono::seconds(*run.spec.ttl_seconds_after_finished);
  if (!ttl) return std::nullopt;
  auto finished = PointOf(run.status.finished_at);
  if (!finished) return std::nullopt;  // every terminal status berth writes has finishedAt
  return *finished + *ttl;
}

void RunController::Settle(const Keyed& visited, const std::unordered_set<std::string>& busy, k8s::TimePoint now) {
  for (const auto& [key, run, memo] : visited) {
    if (memo->queued_pass == working_.pass()) continue;  // queued: pending (without reading the run again)
    forecaster_.Learn(*run, [this](const std::string& ns) { return TeamNameOf(caches_.teams(), ns); });
    if (!IsTerminalPhase(run->status.phase) || run->meta.deleting || busy.count(key)) continue;
    if (memo->assumed || memo->awaiting_rv != 0) continue;
    // Pods still to stop (the Failed branch of Reconcile is deleting them): visited until they are.
    if (!caches_.PodsToStop(*run).empty()) continue;
    std::optional<k8s::TimePoint> expiry = ExpiryOf(*run);
    if (expiry && *expiry <= now) {
      // Due: deleted like a Job by its TTL controller (the uid and resourceVersion as seen, so a
      // run changed meanwhile, e.g. its TTL, is decided again). Visited until it is gone.
      Dispatch(key, [this, r = run] {
        k8s::DeleteOptions o;
        o.precondition_uid = r->meta.uid;
        o.precondition_resource_version = r->meta.resource_version;
        k8s::Status s = client_->Delete(kRuns.Path(r->meta.ns, r->meta.name), o);
        if (s.ok() || s.IsNotFound()) {
          spdlog::info("run {}/{}: deleted, its time to live after it finished ({}) has passed", r->meta.ns,
                       r->meta.name, FormatTime(r->status.finished_at));
          return true;
        }
        if (s.IsConflict()) return true;  // changed meanwhile: the next pass decides again
        spdlog::info("run {}/{}: not deleted after its time to live ({}); will retry", r->meta.ns, r->meta.name,
                     s.ToString());
        return false;
      });
      continue;
    }
    working_.Leave(key, expiry);
  }
}

void RunController::Admit(const Run& run, const sched::Placement& placement, k8s::TimePoint now) {
  const std::string key = RunKey(run);
  const int32_t effective = queue_.EffectivePriority(key).value_or(static_cast<int32_t>(run.spec.priority));
  if (admissions_.Admit(run, placement, effective, working_.MemoOf(key), now)) queue_.Remove(key);
}

}  // namespace berth::reconcilers

namespace berth::reconcilers {

}  // namespace berth::reconcilers
