#include "reconcilers/writers/waiting_status.h"

#include <algorithm>
#include <unordered_set>

#include "k8s/duration.h"
#include "k8s/timefmt.h"
#include "reconcilers/writers/run_status.h"
#include "scheduling/quota.h"

namespace berth::reconcilers {

namespace sched = scheduling;

RunStatus::Preemption WaitingStatusWriter::Record(const std::string& run_id, const std::string& fleet,
                                                  const std::vector<std::string>& instances,
                                                  const std::vector<std::string>& victims, bool reclaim) const {
  RunStatus::Preemption p{fleet, instances, {}, 0, {}, reclaim};
  for (const auto& v : victims) {
    if (sched::NamespaceOf(v) == sched::NamespaceOf(run_id)) {
      p.victims.push_back(v);
    } else {
      ++p.other_victims;
    }
    if (auto victim = snapshot_.runs().Get(v)) p.victim_uids.push_back(victim->meta.uid);
  }
  return p;
}

void WaitingStatusWriter::NotePreempting(const std::vector<sched::Nomination>& nominations,
                                         const sched::CycleResult& result, WorkingSet& working) {
  preempting_.clear();
  for (const auto& d : result.preemptions) {
    preempting_[d.run_id] = Record(d.run_id, d.plan.fleet, d.plan.instances, d.plan.victims, d.reclaim);
    // One Event per plan (its status write may be the queue-position writer's or Apply's).
    std::string victims;
    for (const auto& v : d.plan.victims) victims += (victims.empty() ? "" : ", ") + v;
    RunMemo& memo = working.MemoOf(d.run_id);
    auto run = snapshot_.runs().Get(d.run_id);
    if (!run || memo.preemption_announced == victims) continue;
    memo.preemption_announced = victims;
    const std::string team = d.reclaim ? TeamNameOf(snapshot_.teams(), run->meta.ns) : "";
    RecordEvent(events_, writes_.Ref(*run), RunEvent{api::EventType::kNormal, Reason::kPreempting,
                   (d.reclaim ? "reclaiming team " + team + "'s nominal share from " : "preempting ") +
                       sched::RunNamesFor(d.run_id, d.plan.victims) +  // another namespace's runs unnamed
                       " on fleet " + d.plan.fleet + "; starts when their Pods have stopped"});
  }
  if (nominations.empty()) return;  // (spares the walk below over every waiting run)
  std::unordered_set<std::string> still;
  for (const auto& w : result.waiting) {
    if (w.reason.code == sched::WaitCode::kPreempting) still.insert(w.run_id);
  }
  for (const auto& n : nominations) {
    if (still.count(n.run_id) && !preempting_.count(n.run_id)) {
      // The record the nomination came from stays as it is (a reclaim's stays one, its victims
      // stay those it chose, also once some are gone); one of an older berth, which named every
      // victim, is written anew.
      auto run = snapshot_.runs().Get(n.run_id);
      const auto& record = run ? run->status.preemption : std::nullopt;
      if (record && !record->victim_uids.empty()) {
        preempting_[n.run_id] = *record;
      } else {
        preempting_[n.run_id] = Record(n.run_id, n.fleet, n.instances, n.victims, record && record->reclaim);
      }
    }
  }
}

void WaitingStatusWriter::NoteUnavailable(const ClusterView& view) {
  // For waiting runs' messages: why one unavailable instance of each fleet takes no runs.
  unavailable_detail_.clear();
  for (const auto& inst : view.snapshot.instances) {
    if (inst.ready || unavailable_detail_.count(inst.fleet)) continue;
    auto info = view.instances.find(inst.name);
    if (info != view.instances.end() && !info->second.node_problem.empty()) {
      unavailable_detail_[inst.fleet] = inst.name + ": " + info->second.node_problem;
    }
  }
}

std::string WaitingStatusWriter::Explain(const sched::CycleResult& result, const sched::WaitingRun& w) const {
  std::string s = result.Explain(w);
  if (auto run = snapshot_.runs().Get(w.run_id)) {
    if (auto cap = snapshot_.CapOf(run->meta.ns); cap && run->spec.priority > cap->cap) {
      s += "; " + PriorityCapNote(run->meta.ns, run->spec.priority, *cap);
    }
  }
  const auto& r = w.reason;
  if (r.not_ready + r.invalid <= 0 || unavailable_detail_.empty()) return s;
  // The fleet the numbers are about; when they are about all its fleets, the first of them
  // (all fleets when it names none) with an unavailable instance that says why.
  std::vector<std::string> fleets;
  if (r.fleet >= 0 && static_cast<size_t>(r.fleet) < result.fleets.size()) {
    fleets.push_back(result.fleets[r.fleet].name);
  } else if (auto run = snapshot_.runs().Get(w.run_id); run && !run->spec.fleets.empty()) {
    fleets = run->spec.fleets;
  } else {
    fleets.push_back(unavailable_detail_.begin()->first);
  }
  for (const auto& f : fleets) {
    auto it = unavailable_detail_.find(f);
    if (it != unavailable_detail_.end()) return s + "; " + it->second;
  }
  return s;
}

std::string WaitingStatusWriter::Sentence(const sched::CycleResult& result, const sched::WaitingRun& w,
                                          std::optional<int64_t> place) const {
  std::string s = Explain(result, w);
  if (forecast_ == nullptr || !forecast_->enabled()) return s;
  if (const sched::StartEstimate* e = forecast_->Of(w.run_id, place)) {
    if (std::string note = EstimateNote(*e); !note.empty()) s += "; " + note;
  }
  return s;
}

WaitingStatusWriter::Shown WaitingStatusWriter::EstimateShown(const Run& run, std::optional<int64_t> place,
                                                               k8s::TimePoint now) const {
  if (forecast_ == nullptr || !forecast_->enabled()) return {};
  const Shown current{run.status.estimated_start_at, run.status.estimated_start_range};
  const sched::StartEstimate* e = forecast_->Of(RunKey(run), place);
  if (e == nullptr) return current;  // no forecast yet, or not in it
  std::optional<RunStatus::StartRange> range;
  if (e->start && e->range) range = RunStatus::StartRange{Time(e->range->earliest), Time(e->range->latest)};
  auto end = [](const std::optional<RunStatus::StartRange>& r, bool latest) -> std::optional<k8s::TimePoint> {
    if (!r) return std::nullopt;
    return (latest ? r->latest : r->earliest).point();
  };
  const bool moved = MovedMaterially(PointOf(current.at), e->start, now) ||
                     MovedMaterially(end(current.range, false), end(range, false), now) ||
                     MovedMaterially(end(current.range, true), end(range, true), now);
  if (!moved) return current;
  return Shown{e->start ? std::optional<Time>(Time(*e->start)) : std::nullopt, range};
}

ReasonCode WaitingReason(sched::WaitCode code) {
  if (code == sched::WaitCode::kQuotaExceeded) return Reason::kQuotaExceeded;
  if (code == sched::WaitCode::kPreempting) return Reason::kPreempting;
  if (code == sched::WaitCode::kTeamShare) return Reason::kTeamShare;
  if (code == sched::WaitCode::kGracePeriodTooLong) return Reason::kGracePeriodTooLong;
  if (code == sched::WaitCode::kBudgetExhausted) return Reason::kBudgetExhausted;
  return sched::IsUnschedulable(code) ? Reason::kUnschedulable : Reason::kNoCapacity;
}

RunStatus WaitingStatusWriter::Status(const Run& run, const ReasonCode& reason, int32_t effective,
                                      std::optional<int64_t> position, const std::string& message,
                                      k8s::TimePoint now) const {
  RunStatus next = run.status;
  next.phase = Phase::kPending;
  next.reason = reason;
  // A preempted (reclaimed) run back in the queue shows Preempted (Reclaimed) while it waits for
  // capacity (EndsWaiting).
  if (reason == Reason::kNoCapacity && (run.status.reason == Reason::kPreempted || run.status.reason == Reason::kReclaimed)) {
    next.reason = run.status.reason;
  }
  next.message = message;
  next.queue_position = position;
  next.effective_priority = effective;
  const Shown shown = EstimateShown(run, position, now);
  next.estimated_start_at = shown.at;
  next.estimated_start_range = shown.range;
  if (!next.submitted_at) next.submitted_at = Time(run.meta.created);
  next.observed_generation = run.meta.generation;
  // The nodes kept for a preempting run stay in its status while it preempts (see Nominations).
  auto preempting = preempting_.find(RunKey(run));
  if (preempting != preempting_.end()) {
    next.preemption = preempting->second;
  } else {
    next.preemption.reset();
  }
  SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, next.reason, message, run.meta.generation, now);
  return next;
}

void WaitingStatusWriter::EndWaiting(const Run& run, const sched::CycleResult& result, const sched::WaitingRun& w,
                                     k8s::TimePoint now) {
  const ReasonCode reason = WaitingReason(w.reason.code);
  const bool retry_nc = run.spec.retry && run.spec.retry->on_no_capacity;
  const std::string why = Explain(result, w);
  RunStatus next =
      !retry_nc ? Finish(run.status, Outcome::kFailed, reason, why, run.meta.generation, run.meta.created, now)
                : Finish(run.status, Outcome::kFailed, Reason::kRetryLimitExceeded,
                         "still waiting after retry duration " + k8s::FormatDuration(*run.spec.retry->duration) + ": " + why,
                         run.meta.generation, run.meta.created, now);
  next.effective_priority = w.effective_priority;
  SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, next.reason, next.message, run.meta.generation, now);
  writes_.WriteStatus(run, next, RunEvent{api::EventType::kWarning, next.reason, next.message});
}

bool WaitingStatusWriter::LooksCurrent(const Run& run, const sched::WaitingRun& w, const ReasonCode& reason) {
  const RunStatus& cur = run.status;
  const Condition* scheduled = nullptr;
  for (const auto& c : cur.conditions) {
    if (c.type == ConditionType::kScheduled) scheduled = &c;
  }
  return (cur.phase == Phase::kPending) && cur.reason == reason && cur.effective_priority == w.effective_priority &&
         !cur.preemption && w.reason.code != sched::WaitCode::kPreempting && !!cur.submitted_at &&
         cur.observed_generation == run.meta.generation && scheduled != nullptr && scheduled->status == ConditionStatus::kFalse &&
         scheduled->reason == reason && scheduled->observed_generation == run.meta.generation;
}

void WaitingStatusWriter::Apply(const Run& run, RunMemo& memo, WorkingSet& working, const sched::CycleResult& result,
                                const sched::WaitingRun& w, const PositionWriter& positions, k8s::TimePoint now) {
  // A run waiting for its namespace's quota waits whatever its retry says: the quota is the
  // namespace's own budget, not capacity that failed to show up (as in Kueue).
  if (EndsWaiting(memo, w, now)) return EndWaiting(run, result, w, now);
  const std::optional<int64_t>& position = run.status.queue_position;
  const ReasonCode reason = WaitingReason(w.reason.code);
  const int32_t effective = w.effective_priority;
  const bool refresh_due = now - memo.last_wait_write >= options_.status_refresh;
  // The common case, checked without copying the status: nothing but the sentence could have
  // changed, and that waits for the refresh. (Whether it shows a place is the position writer's.)
  if (!refresh_due && LooksCurrent(run, w, reason) && EstimateShown(run, position, now) == Shown{run.status.estimated_start_at, run.status.estimated_start_range}) {
    memo.current = true;  // CarryOut need not look again (see RunMemo)
    memo.current_code = w.reason.code;
    memo.current_effective = effective;
    return;
  }
  // A waiting run's status is information, not a decision (below): with waiting_writes_queued
  // of them waiting for a writer already (100,000 runs submitted at once, each shown its first
  // waiting status), the rest are written by later passes, in queue order, as those drain. The
  // queue view and the endpoint show them at once anyway. A preemption's record is a decision.
  if (w.reason.code != sched::WaitCode::kPreempting && !run.status.preemption &&
      background_queued_() >= options_.waiting_writes_queued) {
    return;
  }
  // Conditions compared without their message first: sentences are formatted only when needed.
  RunStatus next = Status(run, reason, effective, position, run.status.message, now);
  bool structural = DiffersInMoreThanPositionAndMessage(run.status, next);
  if (!structural && !refresh_due) return;
  // A run that does not show its place yet (a new run, a priority patch moving it) is moved there
  // by the queue-position writer, whose last move writes its whole waiting status: written here,
  // the new observedGeneration would arrive with the old place (or none), and `kubectl berth
  // priority`, which waits for it, would print that. A preemption's record is a decision.
  const bool preemption_record = next.preemption && next.preemption != run.status.preemption;
  if (!preemption_record) {
    if (positions.PlaceOf(w.run_id) != position) return;
  }
  next.message = Sentence(result, w, position);
  SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, reason, next.message, run.meta.generation, now);
  // Written now, or found current: refreshed again after status_refresh (a write refused as it is
  // carried out: decided again by the next pass).
  if (SameStatus(run.status, next)) {
    memo.last_wait_write = now;
    return;
  }
  RunWrites::Undo undo = working.NoteWaitWrite(w.run_id, memo, now);
  if (preemption_record) {
    // A preemption is a decision: its record is written before any victim is evicted (the next
    // pass evicts them once the cache shows it).
    writes_.WriteStatus(run, next, {}, false, std::move(undo));
    return;
  }
  // A waiting run's status is information, not a decision: it never delays an admission, a
  // start or a failure (the queue endpoint and the dashboard read the live queue anyway).
  writes_.WriteStatus(run, next, {}, /*background=*/true, std::move(undo));
}

WaitingStatusWriter::PassOutcome WaitingStatusWriter::CarryOut(const sched::CycleResult& result, WorkingSet& working,
                                                           const PositionWriter& positions, k8s::TimePoint now,
                                                           const std::function<void()>& news, size_t news_every) {
  PassOutcome out;
  size_t visited = 0;
  size_t refreshes = 0;  // waiting runs looked at only because their refresh came due
  for (const auto& w : result.waiting) {
    working.PrefetchWaiting(result.waiting, visited);
    if (++visited % news_every == 0) news();
    // A waiting run is in the queue, so this pass' working set read it (RunMemo::run).
    RunMemo* m = WorkingSet::OwnerOf(w.owner);
    if (m == nullptr || !m->run) continue;
    RunMemo& memo = *m;
    // From what RunMemo::Read kept of the run: most waiting runs need no visit to their object.
    if (w.reason.code != sched::WaitCode::kQuotaExceeded && (!out.oldest || memo.wait_since < *out.oldest)) {
      out.oldest = memo.wait_since;
    }
    // A run that may wait only so long fails then (EndsWaiting), also if it is busy now.
    if (memo.gives_up_at && (!out.deadline || *memo.gives_up_at < *out.deadline)) out.deadline = memo.gives_up_at;
    if (working.Busy(memo) || working.Positioned(memo)) continue;  // the positions writer's
    const bool ends = EndsWaiting(memo, w, now);
    // Found current by an earlier pass for the same object, reason and priority, and not due for
    // its refresh: nothing to write (Apply would find the same). Due for its refresh only: at
    // most refreshes_per_pass a pass, the rest in the next passes.
    if (memo.current && memo.current_code == w.reason.code &&
        memo.current_effective == w.effective_priority && !ends) {
      if (now - memo.last_wait_write < options_.status_refresh) continue;
      if (++refreshes > options_.refreshes_per_pass) {
        out.refresh_left = true;
        continue;
      }
    }
    // With waiting_writes_queued waiting-status writes queued already, Apply writes nothing for a
    // run that neither ends waiting nor preempts: left for a later pass without reading it
    // (100,000 runs shown their first status, 1,000 at a time).
    if (w.reason.code != sched::WaitCode::kPreempting && !memo.has_preemption && !ends &&
        background_queued_() >= options_.waiting_writes_queued) {
      continue;
    }
    Apply(*memo.run, memo, working, result, w, positions, now);
  }
  return out;
}

}  // namespace berth::reconcilers
