#include "reconcilers/objects/run_reconciler.h"

#include <spdlog/spdlog.h>

#include "k8s/duration.h"
#include "k8s/timefmt.h"
#include "reconcilers/objects/pod_group_tickets.h"
#include "reconcilers/writers/run_status.h"

namespace berth::reconcilers {

namespace {

// Everything in a Run's spec but its priority (what an admitted run ignores).
std::string SpecFingerprint(const Run& r) {
  std::string f = std::to_string(r.spec.nodes) + "|" + std::to_string(r.spec.cpu_milli) + "|" + std::to_string(r.spec.memory_bytes) +
                  "|" + std::to_string(r.spec.gpus) + "|" + (r.spec.max_duration ? std::to_string(r.spec.max_duration->count()) : "off");
  for (const auto& fl : r.spec.fleets) f += "|" + fl;
  if (r.spec.whole_instances) f += *r.spec.whole_instances ? "|whole" : "|slices";
  if (!r.spec.topology_required.empty()) f += "|required:" + r.spec.topology_required;
  if (!r.spec.topology_preferred.empty()) f += "|preferred:" + r.spec.topology_preferred;
  if (r.spec.retry) {
    f += "|retry" + std::to_string(r.spec.retry->on_no_capacity) + std::to_string(r.spec.retry->on_interruption) +
         std::to_string(r.spec.retry->on_error) + (r.spec.retry->duration ? std::to_string(r.spec.retry->duration->count()) : "off");
  }
  return f + "|" + std::to_string(r.template_bytes) + ":" + std::to_string(r.template_hash);
}

}  // namespace

void RunReconciler::Note(k8s::TimePoint at) {
  if (!deadline_ || at < *deadline_) deadline_ = at;
}

std::optional<k8s::TimePoint> RunReconciler::TakeDeadline() { return std::exchange(deadline_, std::nullopt); }

bool RunReconciler::Reconcile(const Run& run, const ClusterView& view, k8s::TimePoint now, bool busy) {
  const std::optional<Phase>& phase = run.status.phase;
  // Pods that claim the run but that berth did not make go, whatever the run's phase (issue 44);
  // the run is decided again once that is done. Looked for when the run or its Pods changed.
  RunMemo& memo = working_.MemoOf(RunKey(run));
  if (working_.Touched(memo)) memo.check_strays = true;
  if (memo.check_strays && !busy && !run.meta.deleting) {
    memo.check_strays = false;
    if (std::vector<PodRef> strays = snapshot_.StraysOf(run); !strays.empty()) {
      // Refused as it is carried out: looked for again by the next pass.
      writes_.DeleteStrays(run, std::move(strays), [this, key = RunKey(run)] {
        if (RunMemo* m = working_.Find(key)) m->check_strays = true;
      });
      return false;
    }
  }
  if (run.meta.deleting) {
    if (!busy) writes_.HandleDeletion(run);
    return false;
  }
  if (IsTerminalPhase(phase)) {
    if (busy) return false;
    // A failed run keeps no running pods (a retry or failure may have been cut short by a crash).
    std::vector<PodRef> to_delete = (phase == Phase::kFailed) ? snapshot_.PodsToStop(run) : std::vector<PodRef>{};
    if (phase == Phase::kFailed && HeldWorkloadStopsItsPods(run)) {
      // A ticket's Job (or JobSet): held, its controller deletes them (counted as no failure).
      if (auto w = snapshot_.WorkloadOf(run); !to_delete.empty() && w && !w->suspended && !w->finished) writes_.HoldTicket(run);
    } else if (!to_delete.empty()) {
      writes_.DeletePodsOf(run, to_delete, /*retry=*/false);
    } else if (run.status.observed_generation != run.meta.generation) {
      writes_.NoteSpecChangeAfterEnd(run);
    }
    return false;
  }
  if (IsPendingPhase(phase)) return ReconcilePending(run, now, busy);
  if (IsPlacedPhase(phase) && !busy) ReconcilePlaced(run, view, now);
  return false;
}

bool RunReconciler::TicketMayQueue(const Run& ticket, k8s::TimePoint now, bool busy) {
  auto w = snapshot_.WorkloadOf(ticket);
  if (!w) return false;  // gone: the ticket goes too (TicketSync)
  // It ended outside berth's queue (its own controller decided, or someone else unsuspended it):
  // so does the ticket, as a placed one would (DecideTicket), freeing what it held for it.
  if (w->finished) {
    if (!busy) EndWithWorkload(ticket, *w, now);
    return false;
  }
  // Held while it waits: a workload found running unadmitted (created before the admission
  // policy, or by someone it lets through) is held now.
  if (!w->suspended && !busy) writes_.HoldTicket(ticket);
  // A label berth cannot read: reported on the ticket, which waits until the label is fixed.
  if (const std::string problem = ticket.meta.Annotation(kLabelProblemAnnotation); !problem.empty()) {
    if (busy) return false;
    RunStatus next = ticket.status;
    next.phase = Phase::kPending;
    next.reason = Reason::kInvalidSpec;
    next.message = problem + ": change the " + ticket.spec.workload_ref->kind + "'s label (berth keeps the ticket's spec equal to it)";
    next.queue_position.reset();
    next.observed_generation = ticket.meta.generation;
    SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, next.reason, next.message,
                 ticket.meta.generation, now);
    writes_.WriteStatus(ticket, next, RunEvent{api::EventType::kWarning, Reason::kInvalidSpec, next.message});
    return false;
  }
  // A Pod group waits until all its Pods exist (all or nothing; pod_group_tickets.h).
  if (workloads::IsPodKind(ticket.spec.workload_ref->kind)) {
    if (auto s = PodWorkloadStateOf(snapshot_, ticket); s && !s->waiting.empty()) {
      if (busy) return false;
      RunStatus next = ticket.status;
      next.phase = Phase::kPending;
      next.reason = Reason::kPodGroupIncomplete;
      next.message = s->waiting + ": the group is admitted once all its Pods exist (all or nothing)";
      next.queue_position.reset();
      next.estimated_start_at.reset();
      next.estimated_start_range.reset();
      next.observed_generation = ticket.meta.generation;
      SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, next.reason, next.message,
                   ticket.meta.generation, now);
      writes_.WriteStatus(ticket, next);
      return false;
    }
  }
  // Pinned Pods of an attempt that was stopped: the ticket queues once they are gone (their
  // blocks are the ticket's until then). A held Job's controller deletes them itself (berth does
  // not: HeldWorkloadStopsItsPods), so the ticket waits for any, not only those being deleted.
  const bool controller_stops = HeldWorkloadStopsItsPods(ticket);
  for (const auto& p : snapshot_.PinnedPodsOf(ticket)) {
    if (p->meta.deleting || controller_stops) return false;
  }
  return true;
}

std::optional<PlacedDecision> RunReconciler::DecideFinished(const Run& ticket, const workloads::Workload& w) {
  // The workload's own terminal condition decides how it ended (its completions, backoffLimit).
  if (!w.finished) return std::nullopt;
  using PK = PlacedDecision::Kind;
  const std::string& kind = ticket.spec.workload_ref->kind;
  PlacedDecision d;
  if (*w.finished) {
    d.kind = PK::kSucceed;
    d.message = "the " + kind + " completed" + (w.finish_message.empty() ? "" : ": " + w.finish_message);
  } else {
    d.kind = PK::kEnd;
    d.why = "the " + kind + " failed" + (w.finish_message.empty() ? "" : ": " + w.finish_message);
    // The workload's own condition reason (BackoffLimitExceeded...), read from the API.
    d.reason = w.finish_reason.empty() ? ReasonCode(Reason::kPodFailed) : ReasonCode::FromApi(w.finish_reason);
  }
  return d;
}

void RunReconciler::EndWithWorkload(const Run& ticket, const workloads::Workload& w, k8s::TimePoint now) {
  const std::optional<PlacedDecision> d = DecideFinished(ticket, w);
  if (!d) return;
  if (d->kind == PlacedDecision::Kind::kSucceed) {
    RunStatus next = Finish(ticket.status, Outcome::kSucceeded, Reason::kSucceeded, d->message, ticket.meta.generation,
                            ticket.meta.created, now);
    writes_.WriteStatus(ticket, next, RunEvent{api::EventType::kNormal, Reason::kSucceeded, next.message});
    return;
  }
  RunStatus next = Finish(ticket.status, Outcome::kFailed, d->reason, d->why, ticket.meta.generation,
                          ticket.meta.created, now);
  writes_.WriteStatus(ticket, next, RunEvent{api::EventType::kWarning, d->reason, next.message});
}

bool RunReconciler::ReconcilePending(const Run& run, k8s::TimePoint now, bool busy) {
  // The rules are reconcilers/objects/lifecycle.h's (DecidePending); this carries them out.
  working_.MemoOf(RunKey(run)).admitted_spec.clear();
  if (api::IsTicket(run) && !run.spec.stop && !TicketMayQueue(run, now, busy)) return false;
  PendingInput in;
  in.run = &run;
  // The Pods matter only to a run that is not busy (DecidePending's rules 3-5).
  const auto pods = busy ? std::vector<std::shared_ptr<const k8s::Pod>>{} : snapshot_.PodsOf(run);
  for (const auto& p : pods) in.pods.push_back(p.get());
  in.busy = busy;
  in.now = now;
  const PendingDecision d = DecidePending(in);
  using PK = PendingDecision::Kind;
  switch (d.kind) {
    case PK::kQueue:
      return true;
    case PK::kWait:
      return false;
    case PK::kStop:
      writes_.FailOrRetry(run, false, d.message, now, Reason::kStopped, /*stopped=*/true);
      return false;
    case PK::kInvalid: {
      RunStatus next = Finish(run.status, Outcome::kFailed, Reason::kInvalidSpec, d.message, run.meta.generation, run.meta.created, now);
      writes_.WriteStatus(run, next, RunEvent{api::EventType::kWarning, Reason::kInvalidSpec, d.message});
      return false;
    }
    case PK::kSuspend:
      writes_.Suspend(run, d.message, now);
      return false;
    case PK::kDeletePods: {
      std::vector<PodRef> refs;
      for (const k8s::Pod* p : d.pods) refs.push_back(RefOf(*p));
      writes_.DeletePodsOf(run, std::move(refs), /*retry=*/true);
      return false;
    }
    case PK::kResumed: {
      RunStatus next = run.status;
      next.reason = Reason::kResumed;
      next.message = d.message;
      next.observed_generation = run.meta.generation;
      SetCondition(next.conditions, ConditionType::kScheduled, ConditionStatus::kFalse, next.reason, next.message, run.meta.generation, now);
      writes_.WriteStatus(run, next, RunEvent{api::EventType::kNormal, Reason::kResumed, next.message});
      return false;
    }
    case PK::kBackoff:
      Note(*d.until);  // its message says until when
      return false;
  }
  return false;
}

PlacedDecision RunReconciler::DecideTicket(const Run& ticket, const workloads::Workload& w,
                                           const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods,
                                           const std::map<std::string, std::string>& node_problems, k8s::TimePoint now) {
  using PK = PlacedDecision::Kind;
  PlacedDecision d;
  const std::string kind = ticket.spec.workload_ref->kind;
  if (ticket.spec.stop) {
    d.kind = PK::kStop;
    d.why = "stopped (spec.stop): the " + kind + " is suspended and its Pods stopped";
    d.reason = Reason::kStopped;
    return d;
  }
  if (ticket.spec.suspend) {
    d.kind = PK::kSuspend;
    d.message = "suspended (spec.suspend): the " + kind + " is held and its Pods stopped until spec.suspend is false again";
    return d;
  }
  if (auto finished = DecideFinished(ticket, w)) return *finished;
  // A Job's Pods may show it done a moment before the Job controller writes Complete (its 1 s
  // sync batch): its blocks are free then (workloads::PodsShowJobDone).
  if (int64_t succeeded = 0; snapshot_.JobPodsShowDone(ticket, w, succeeded)) {
    d.kind = PK::kSucceed;
    d.message = "the " + kind + "'s Pods show it done (" + std::to_string(succeeded) + " succeeded" +
                (w.completions ? ", completions " + std::to_string(*w.completions) : "") +
                "): its blocks are free, the Job controller marks it Complete";
    return d;
  }
  if (!node_problems.empty()) {
    d.kind = PK::kEnd;
    d.interruption = true;
    d.why = "node " + node_problems.begin()->first + " " + node_problems.begin()->second;
    return d;
  }
  if (ticket.status.phase == Phase::kRunning && ticket.spec.max_duration && ticket.status.started_at) {
    if (now - ticket.status.started_at->point() >= *ticket.spec.max_duration) {
      d.kind = PK::kMaxDuration;
      d.message = "ran longer than maxDuration " + k8s::FormatDuration(*ticket.spec.max_duration) + ": the " + kind +
                  " is suspended and its Pods stopped";
      return d;
    }
  }
  if (ticket.status.phase == Phase::kScheduled) {
    size_t running = 0;
    for (const auto& [name, p] : pods) running += (p->phase == "Running" && !p->meta.deleting) ? 1 : 0;
    if (running >= ticket.status.placement.size() && !ticket.status.placement.empty()) {
      d.kind = PK::kStarted;
      d.message = "all " + std::to_string(running) + " Pods of the " + kind + " run on their booked nodes";
      return d;
    }
  }
  if (w.suspended || snapshot_.UnpinnedPodsOf(ticket) > 0) d.kind = PK::kCreatePods;  // release, pin
  return d;
}

void RunReconciler::ReconcilePlaced(const Run& run, const ClusterView& view, k8s::TimePoint now) {
  // Scheduled or Running: the lifecycle's rules (reconcilers/objects/lifecycle.h) decide; this carries out.
  const int64_t attempt = run.status.resubmissions;
  std::map<std::string, std::shared_ptr<const k8s::Pod>> pods;  // by name, this attempt only
  const bool ticket = api::IsTicket(run);
  for (const auto& p : snapshot_.PodsOf(run)) {
    if (ticket || p->meta.Label(kAttemptLabel) == std::to_string(attempt)) pods[p->meta.name] = p;
  }
  std::shared_ptr<const workloads::Workload> workload;
  if (ticket && !(workload = snapshot_.WorkloadOf(run))) return;  // gone: TicketSync deletes the ticket
  PlacedInput in;
  in.run = &run;
  for (const auto& [name, p] : pods) in.pods[name] = p.get();
  for (const auto& entry : run.status.placement) {
    if (!view.instances.count(entry.node)) {
      in.node_problems[entry.node] = "is gone or no longer in a fleet";
    } else if (auto node = snapshot_.nodes().Get(entry.node); !node || !node->ready) {
      in.node_problems[entry.node] = "is not ready";
    }
  }
  in.default_start_timeout = options_.start_timeout;
  in.now = now;
  const PlacedDecision d = ticket ? DecideTicket(run, *workload, pods, in.node_problems, now) : DecidePlaced(in);
  std::optional<k8s::TimePoint> deadline;
  if (!ticket) {
    deadline = NextDeadline(in);
  } else if (run.status.phase == Phase::kRunning && run.spec.max_duration && run.status.started_at) {
    deadline = run.status.started_at->point() + *run.spec.max_duration;
  }
  if (deadline) Note(*deadline);
  RunMemo& memo = working_.MemoOf(RunKey(run));
  memo.quiet = false;
  if (CarryOutPlaced(run, d, pods, view, now)) return;
  // Only spec.priority may change once a run is admitted; say so when something else changed.
  std::string fingerprint = SpecFingerprint(run);
  if (memo.admitted_spec.empty()) {
    memo.admitted_spec = fingerprint;
  } else if (memo.admitted_spec != fingerprint) {
    memo.admitted_spec = fingerprint;
    RecordEvent(events_, writes_.Ref(run), RunEvent{api::EventType::kWarning, Reason::kSpecChangeIgnored,
                    "the run is already admitted, so only spec.priority takes effect now; other spec changes apply "
                    "if it goes back to the queue (a retry)"});
  }
  // Scheduled or Running: keep the status' generation current (a priority patch after admission).
  if (run.status.observed_generation != run.meta.generation) {
    RunStatus next = run.status;
    next.observed_generation = run.meta.generation;
    for (auto& c : next.conditions) c.observed_generation = run.meta.generation;
    writes_.WriteStatus(run, next);
  } else if (d.kind == PlacedDecision::Kind::kNothing) {
    // Nothing to do until something changes (see Quiet) or time alone changes the answer.
    const k8s::TimePoint refresh = now + options_.status_refresh;
    memo.quiet = true;  // at the object the memo holds (RunMemo::Read forgets it)
    memo.quiet_until = deadline ? std::min(*deadline, refresh) : refresh;
    memo.quiet_deadline = deadline;
  }
}

bool RunReconciler::CreatePodsOnce(const Run& run, const ClusterView& view, k8s::TimePoint now) {
  RunMemo& memo = working_.MemoOf(RunKey(run));
  if (api::IsTicket(run)) {
    // A ticket's Pods are its workload's: released, then each pinned to its booked rank
    // (reconcilers/writers/ticket_writes.h), once the fleet's durable count has the ticket.
    if (const PlacedRun* placed = memo.placed_record(); placed && !view.Counted(*placed)) return true;
    // Only what the caches say is left to do: a released workload none of whose Pods waits to
    // be pinned costs no request (its next Pod's arrival visits the ticket again).
    // A release handed to a writer shows in the cache a moment later: not sent twice for one
    // admission within 10 s (as a Run's Pods below).
    const auto workload = snapshot_.WorkloadOf(run);
    const std::string released = run.meta.uid + "/" + std::to_string(run.status.resubmissions) + "/" + FormatTime(run.status.scheduled_at);
    const bool sent = memo.pods_ensured_for == released && clock_.Monotonic() - memo.pods_ensured_at < std::chrono::seconds(10);
    const bool unsuspend = (!workload || workload->suspended) && !sent;
    const bool pin = snapshot_.UnpinnedPodsOf(run) > 0;
    RunWrites::Undo undo;
    if (unsuspend) undo = NoteSent(RunKey(run), memo, released);
    if (unsuspend || pin) writes_.ReleaseTicket(run, unsuspend, pin, std::move(undo));
    return true;
  }
  // Pods are made only from the template the run was placed with (status.templateHash, issue 44):
  // a template changed since (the admission refusal bypassed) ends the run instead.
  if (const std::string now_hash = api::TemplateHashText(run.template_hash);
      !run.status.template_hash.empty() && run.status.template_hash != now_hash) {
    const std::string why = api::TemplateChangedAfterPlacement(run.status.template_hash, now_hash);
    RunStatus next = Finish(run.status, Outcome::kFailed, Reason::kInvalidSpec, why, run.meta.generation, run.meta.created, now);
    writes_.WriteStatus(run, next, RunEvent{api::EventType::kWarning, Reason::kInvalidSpec, why});
    return true;
  }
  // Wait until the fleet status counts this run (see WriteFleetStatuses). Its record is the one
  // BlockHolders made this pass (none when its placement is empty: nothing to count).
  if (const PlacedRun* placed = memo.placed_record(); placed && !view.Counted(*placed)) return true;
  // One admission: a run resumed after a suspension is admitted again in the same attempt, with a
  // new scheduledAt.
  const std::string ensured = run.meta.uid + "/" + std::to_string(run.status.resubmissions) + "/" + FormatTime(run.status.scheduled_at);
  // Pods just handed to a writer show up in the cache a moment later: do not create them twice.
  if (memo.pods_ensured_for == ensured && clock_.Monotonic() - memo.pods_ensured_at < std::chrono::seconds(10)) {
    return false;
  }
  RunWrites::Undo undo = NoteSent(RunKey(run), memo, ensured);
  auto fleet = snapshot_.fleets().Get(run.status.fleet);
  writes_.EnsurePods(run, fleet ? fleet->spec.gpu_resource : "nvidia.com/gpu", view, std::move(undo));
  return true;
}

RunWrites::Undo RunReconciler::NoteSent(const std::string& key, RunMemo& memo, std::string sent) {
  RunWrites::Undo undo = [this, key, was = memo.pods_ensured_for, at = memo.pods_ensured_at] {
    if (RunMemo* m = working_.Find(key)) {
      m->pods_ensured_for = was;
      m->pods_ensured_at = at;
    }
  };
  memo.pods_ensured_for = std::move(sent);
  memo.pods_ensured_at = clock_.Monotonic();
  return undo;
}

bool RunReconciler::CarryOutPlaced(const Run& run, const PlacedDecision& d,
                                   const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods,
                                   const ClusterView& view, k8s::TimePoint now) {
  switch (d.kind) {
    case PlacedDecision::Kind::kEnd:
      if (!d.refused_node.empty()) on_refusal_(d.refused_node, d.why, now);
      writes_.FailOrRetry(run, d.interruption, d.why, now, d.reason);
      return true;
    case PlacedDecision::Kind::kSucceed: {
      RunStatus next = Finish(run.status, Outcome::kSucceeded, Reason::kSucceeded, d.message, run.meta.generation, run.meta.created, now);
      writes_.WriteStatus(run, next, RunEvent{api::EventType::kNormal, Reason::kSucceeded, next.message});
      return true;
    }
    case PlacedDecision::Kind::kStop:
      writes_.FailOrRetry(run, false, d.why, now, d.reason, /*stopped=*/true);
      return true;
    case PlacedDecision::Kind::kSuspend:
      writes_.Suspend(run, d.message, now);
      return true;
    case PlacedDecision::Kind::kMaxDuration:
      writes_.EndAfterMaxDuration(run, pods, d.message, now);
      return true;
    case PlacedDecision::Kind::kShowWaiting: {
      RunStatus next = run.status;
      next.message = d.message;
      writes_.WriteStatus(run, next);
      return true;
    }
    case PlacedDecision::Kind::kStarted: {
      RunStatus next = run.status;
      next.phase = Phase::kRunning;
      next.reason = Reason::kRunning;
      next.message = d.message;
      next.started_at = Time(now);
      next.observed_generation = run.meta.generation;
      SetCondition(next.conditions, ConditionType::kReady, ConditionStatus::kTrue, Reason::kRunning, next.message, run.meta.generation, now);
      writes_.WriteStatus(run, next, RunEvent{api::EventType::kNormal, Reason::kStarted, next.message});
      return true;
    }
    case PlacedDecision::Kind::kCreatePods:
      if (CreatePodsOnce(run, view, now)) return true;
      break;
    case PlacedDecision::Kind::kNothing:
      break;
  }
  return false;
}

}  // namespace berth::reconcilers
