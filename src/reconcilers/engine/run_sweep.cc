#include "reconcilers/engine/run_sweep.h"

#include <utility>

#include "reconcilers/writers/run_status.h"
#include "reconcilers/objects/team_types.h"

namespace berth::reconcilers {

namespace sched = scheduling;

void RunSweep::BeginPass(std::unordered_set<std::string> changed_nodes, bool fleets_changed, bool namespaces_changed) {
  changed_nodes_ = std::move(changed_nodes);
  fleets_changed_ = fleets_changed;
  namespaces_changed_ = namespaces_changed;
}

std::shared_ptr<const PlacedRun> RunSweep::PlacedRecord(const std::string& key, const Run& run) const {
  auto pr = std::make_shared<PlacedRun>();
  pr->key = key;
  pr->uid = run.meta.uid;
  pr->fleet = run.status.fleet;
  pr->placement = run.status.placement;
  pr->priority = p_.snapshot.QueuePriority(run);
  if (auto at = PointOf(run.status.scheduled_at)) pr->placed_at = *at;
  if (run.spec.max_duration) {
    auto start = PointOf(run.status.started_at);
    if (!start) start = PointOf(run.status.scheduled_at);
    if (start) pr->expected_end = *start + *run.spec.max_duration;
  }
  pr->quota_pending = run.spec.workload_ref ? p_.snapshot.TicketQuotaPending(run)
                                            : p_.snapshot.QuotaPending(run.meta.ns, pr->placement);
  return pr;
}

std::vector<std::shared_ptr<const PlacedRun>> RunSweep::BlockHolders(const Keyed& keyed) {
  // Runs holding blocks: admitted in the cache, or assumed while our write catches up.
  std::vector<std::shared_ptr<const PlacedRun>> placed;
  const RunMemo::PlacedInputs inputs{p_.snapshot.namespaces().Version()};
  size_t at = 0;
  for (const auto& [key, run, memo] : keyed) {
    PrefetchAhead(keyed, at++, /*admission=*/true);
    // Queued by the last pass and the same object since (not touched): pending, holds nothing
    // (unless admitted since: assumed), without reading the run again.
    if (memo->queued && !p_.working.Touched(*memo) && !memo->assumed() && !memo->placed_record()) {
      continue;
    }
    if (IsPlacedPhase(run->status.phase) && !run->status.placement.empty()) {
      memo->admission.Confirm();  // the cache shows it placed: no longer an assumption
      memo->admission.Erase();
      // Init-captures: clang 14 cannot capture a structured binding by name.
      placed.push_back(memo->placed.Get(inputs, [this, &k = key, &r = *run] { return PlacedRecord(k, r); }));
      continue;
    }
    memo->placed.Reset();
    if (Admissions::StillHeld(*memo, *run)) {  // assumed while our write catches up
      auto pr = std::make_shared<PlacedRun>(*memo->assumed());
      pr->quota_pending = run->spec.workload_ref ? p_.snapshot.TicketQuotaPending(*run, &pr->placement)
                                                 : p_.snapshot.QuotaPending(run->meta.ns, pr->placement);
      placed.push_back(std::move(pr));
    }
  }
  // Runs gone from the working set.
  p_.working.DropUnvisited(keyed);

  return placed;
}

RunSweep::Reconciled RunSweep::ReconcileAll(const Keyed& keyed, const ClusterView& view, k8s::TimePoint now) {
  // Lifecycle of every run; the pending ones go into the queue (RunMemo::queued).
  Reconciled out;
  std::unordered_set<std::string>& frozen = out.frozen;
  size_t visited = 0;
  size_t queued = 0;  // runs in the queue after this pass (each with RunMemo::queued)
  size_t refreshes = 0;  // quiet placed runs looked at only because their refresh came due
  for (const auto& [key, run, memo_ptr] : keyed) {
    PrefetchAhead(keyed, visited, /*admission=*/true);
    if (++visited % kNewsEvery == 0) news_();
    RunMemo& memo = *memo_ptr;
    const bool was_queued = std::exchange(memo.queued, false);  // by the last pass; this pass' below
    if (memo.assumed()) {  // admission in flight, or its outcome unknown
      // Unknown and no write of the run in flight: marked once (Expire) and read back (Verify).
      if (!p_.working.Busy(memo) && memo.admission.Expire(now) &&
          !p_.admissions.Verify(*run, memo.admission.ticket, memo.admission.base_rv)) {
        memo.admission.verify = false;  // the writer took nothing: the next pass asks again
      }
      frozen.insert(key);
      continue;
    }
    bool is_busy = p_.working.Busy(memo);
    if (memo.awaiting_rv() != 0 && !memo.status_write.Add(RvNumber(run->meta.resource_version))) {
      is_busy = true;  // our last write is not in the cache yet: decide again once it is
    }
    if (is_busy) frozen.insert(key);
    if (!is_busy) {
      const Stillness still = Quiet(*run, memo, now);
      if (still == Stillness::kQuiet) continue;
      // Only its periodic look is due: at most refreshes_per_pass of those a pass (80,000 placed
      // runs coming due in one pass cost 300 ms); the rest are looked at in the next passes.
      if (still == Stillness::kRefreshDue && ++refreshes > p_.options.refreshes_per_pass) {
        out.refresh_left = true;
        continue;
      }
    }
    if (QueuedQuietly(memo, was_queued)) {  // busy too: DecidePending's kQueue stands then as well
      memo.queued = true;  // its entry stays as it is
      ++queued;
      continue;
    }
    memo.queueable = false;
    if (!p_.reconciler.Reconcile(*run, view, now, is_busy)) continue;
    memo.queued = true;
    ++queued;
    memo.queueable = !is_busy;
    Enqueue(key, *run, memo);
  }
  out.deadline = p_.reconciler.TakeDeadline();
  DropUnqueued(queued);
  return out;
}

void RunSweep::Enqueue(const std::string& key, const Run& run, RunMemo& memo) {
  sched::PendingRun pr;
  pr.id = key;
  pr.priority = p_.snapshot.QueuePriority(run);
  pr.submitted_at = run.meta.created;
  pr.nodes = static_cast<int32_t>(run.spec.nodes);
  pr.whole_instances = run.spec.whole_instances;
  pr.resources = sched::Resources{run.spec.cpu_milli, run.spec.memory_bytes, run.spec.gpus};
  pr.fleets = run.spec.fleets;
  pr.max_duration = run.spec.max_duration;
  if (!run.spec.topology_required.empty()) {
    pr.topology = sched::TopologyRequest{sched::TopologyRequest::Mode::kRequired, run.spec.topology_required};
  } else if (!run.spec.topology_preferred.empty()) {
    pr.topology = sched::TopologyRequest{sched::TopologyRequest::Mode::kPreferred, run.spec.topology_preferred};
  }
  if (run.spec.workload_ref) pr.quota_counted = p_.snapshot.QuotaCountedOf(run);  // a queued Pod's gated Pods
  // A ticket's Pods are stopped by their own controller with their own grace period, which berth
  // cannot cap: only fleets whose maxGracePeriod covers it may take it (issue 44, filter.h).
  if (api::IsTicket(run)) {
    if (auto w = p_.snapshot.WorkloadOf(run)) pr.grace_seconds = w->grace_seconds;
  }
  pr.owner = &memo;
  const sched::PendingRun* existing = p_.queue.Find(key);
  if (existing == nullptr || !(*existing == pr)) p_.queue.Upsert(std::move(pr));
}

void RunSweep::DropUnqueued(size_t queued) {
  // Every run queued this pass is in the queue once: when they are as many as its entries, none left.
  if (queued == p_.queue.size()) return;
  std::vector<std::string> gone;
  for (auto item : p_.queue) {
    const RunMemo* m = p_.working.Find(item.run.id);
    if (m == nullptr || !m->queued) gone.push_back(item.run.id);  // not queued by this pass' ReconcileAll
  }
  for (const auto& id : gone) p_.queue.Remove(id);
}

RunSweep::Stillness RunSweep::Quiet(const Run& run, const RunMemo& memo, k8s::TimePoint now) const {
  if (!memo.quiet) return Stillness::kChanged;  // not found quiet at the object held (RunMemo::Read)
  if (run.meta.deleting || !IsPlacedPhase(run.status.phase) || fleets_changed_ || p_.working.Touched(memo)) {
    return Stillness::kChanged;
  }
  for (const auto& entry : run.status.placement) {
    if (changed_nodes_.count(entry.node)) return Stillness::kChanged;
  }
  if (now < memo.quiet_until) return Stillness::kQuiet;
  // Due: its deadline (decided now, whatever else is due), or only its periodic look.
  return memo.quiet_deadline && now >= *memo.quiet_deadline ? Stillness::kChanged : Stillness::kRefreshDue;
}

bool RunSweep::QueuedQuietly(const RunMemo& memo, bool was_queued) const {
  // DecidePending's kQueue stands while the run and its Pods are as they were (queueable: found
  // so at the object held; not Touched): its other rules read nothing else, and the time only
  // ends a back-off. The entry's priority also reads the namespace's cap. Queued by the last
  // pass means in the queue (its ReconcileAll took every other run out) with this memo as its
  // owner.
  return memo.queueable && was_queued && !namespaces_changed_ && !p_.working.Touched(memo);
}

std::optional<k8s::TimePoint> RunSweep::ExpiryOf(const Run& run) const {
  std::optional<std::chrono::milliseconds> ttl = p_.options.finished_run_ttl;
  if (run.spec.ttl_seconds_after_finished) ttl = std::chrono::seconds(*run.spec.ttl_seconds_after_finished);
  if (!ttl) return std::nullopt;
  auto finished = PointOf(run.status.finished_at);
  if (!finished) return std::nullopt;  // every terminal status berth writes has finishedAt
  return *finished + *ttl;
}

void RunSweep::Settle(const Keyed& visited, const std::unordered_set<std::string>& busy, k8s::TimePoint now) {
  size_t at = 0;
  for (const auto& [key, run, memo] : visited) {
    PrefetchAhead(visited, at++);
    if (memo->queued) continue;  // queued by this pass: pending (without reading the run again)
    p_.forecaster.Learn(*run, [this](const std::string& ns) { return TeamNameOf(p_.snapshot.teams(), ns); });
    if (!IsTerminalPhase(run->status.phase) || run->meta.deleting || busy.count(key)) continue;
    if (memo->assumed() || memo->awaiting_rv() != 0) continue;
    // Pods still to stop (the Failed branch of Reconcile is deleting them): visited until they are.
    if (!p_.snapshot.PodsToStop(*run).empty()) continue;
    std::optional<k8s::TimePoint> expiry = ExpiryOf(*run);
    if (expiry && *expiry <= now) {
      // Due: deleted like a Job by its TTL controller (RunWrites::DeleteAfterTtl); visited until it is gone.
      p_.writes.DeleteAfterTtl(*run);
      continue;
    }
    p_.working.Leave(key, expiry);
  }
}

}  // namespace berth::reconcilers
