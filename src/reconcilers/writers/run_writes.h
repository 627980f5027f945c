#pragma once
// Run writes: the API writes that carry out a run's decisions (statuses, Events, Pods, the
// headless Service, the finalizer), each handed to the engine's writers under the run's key.
//
// Threads. The loop thread calls WriteStatus, FailOrRetry, Suspend, HandleDeletion,
// EndAfterMaxDuration, EnsurePods, DeletePodsOf and NoteSpecChangeAfterEnd: each reads what it
// needs from the caches and dispatches one writer task (KeyedWriter: one write per key queued or
// in flight). The tasks, and PatchStatus, NoteWritten, DeletePods, CreatePods, FailInvalidSpec,
// run on the writer threads; they tell the Admissions what they wrote (the run is left alone until
// the cache has it) and the observer what finished.
// Owns: nothing between calls (the Pods are the caller's `pods_of`, the written versions the
// Admissions'). Cost: one dispatch per call on the loop thread; the API calls on the writers.
//
// Ending a run: its terminal status (Failed: max duration, pod failure, interruption without
// retry) is written before its Pods are deleted, so a crash in between leaves a Failed run whose
// leftover Pods the next pass deletes, never a Running run without Pods (which would read as an
// interruption and be resubmitted). A resubmission deletes the Pods first and then puts the run
// back in the queue: its blocks must not be offered again while its Pods still run.
//
// Admission step 4 (reconcilers/state/admissions.h): Pods created already bound (spec.nodeName set at
// creation, so no pods/binding write; deterministic names; AlreadyExists is success when the Run
// owns what exists, else the run fails InvalidSpec and the object is left alone; a Pod an older
// berth left unbound, once the cache shows it, is bound through pods/binding, "already bound" is
// success), plus a headless Service for multi-node runs (the same rule for AlreadyExists).

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/dra_objects.h"
#include "k8s/events.h"
#include "k8s/objects.h"
#include "reconcilers/state/admissions.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/engine/engine_api.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/writers/pod_builder.h"
#include "reconcilers/writers/run_event.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/writers/ticket_writes.h"
#include "reconcilers/writers/write_outcome.h"

namespace berth::reconcilers {

// A Pod that finished (Succeeded or Failed).
bool IsTerminalPod(const k8s::Pod& p);

// A Pod to delete: only if it is still the Pod seen (uid precondition).
struct PodRef {
  std::string name, uid;
  bool started = true;  // some container is running or has run
  std::string node;     // spec.nodeName ("" when not bound)
  int64_t grace_seconds = 30;  // its own spec.terminationGracePeriodSeconds
};
inline PodRef RefOf(const k8s::Pod& p) { return PodRef{p.meta.name, p.meta.uid, p.started, p.node_name, p.grace_seconds}; }

class RunWrites {
 public:
  // Hands a write to a writer under `key`; `background` writes yield to decisions.
  using DispatchFn = DispatchWrite;
  // berth's Pods of the run as cached: the constructor's is the pass' snapshot (loop thread, the
  // decisions); SetLivePods' is the live cache (writer threads: status.podUIDs after creating Pods).
  using PodsOf = std::function<std::vector<std::shared_ptr<const k8s::Pod>>(const Run& run)>;
  RunWrites(k8s::ClientPtr client, const k8s::Clock& clock, k8s::EventRecorder& events, Admissions& admissions,
            const EngineOptions& options, DispatchFn dispatch, PodsOf pods_of)
      : client_(std::move(client)), clock_(clock), events_(events), admissions_(admissions), options_(options),
        dispatch_(std::move(dispatch)), pods_of_(std::move(pods_of)) {}
  // Told what finished and what was preempted; set before the writers start (not owned).
  void SetObserver(EngineObserver* observer) { observer_ = observer; }
  // The most grace period (seconds, >= 1) a Pod on `node` is given when stopped: its fleet's
  // spec.maxGracePeriod (GraceCapSeconds). Set before the writers start; without it, the default
  // (10m). Called on writer threads.
  using GraceCapFn = std::function<int64_t(const std::string& node)>;
  void SetGraceCap(GraceCapFn cap) { grace_cap_ = std::move(cap); }
  // berth's Pods of a run as cached now, read on writer threads (RecordPods); without it, the
  // constructor's PodsOf. Set before the writers start.
  void SetLivePods(PodsOf pods) { live_pods_of_ = std::move(pods); }
  // Issue 49: a ResourceClaim as cached now (namespace, name; null when not cached), read on writer
  // threads when a DRA Pod's claim already exists (CreateDeviceClaim). Set before the writers start.
  using ClaimFn = std::function<std::shared_ptr<const k8s::ResourceClaim>(const std::string&, const std::string&)>;
  void SetLiveClaim(ClaimFn claim) { live_claim_ = std::move(claim); }
  // Issue 47: told (loop thread) when a deleted or TTL-due run waits for its span to be accounted
  // and holds nothing any more, so the usage fold runs now, not at its next interval.
  void SetUsageWanted(std::function<void()> wanted) { usage_wanted_ = std::move(wanted); }
  // The live Pods of a ticket's workload as cached (CacheReads::WorkloadPodsOf, live), which the
  // release pins from (TicketWrites::Release). Set before the writers start; called on writers.
  void SetWorkloadPods(TicketWrites::PodsFn pods) { tickets_.SetWorkloadPods(std::move(pods)); }

  // ---- loop thread: each dispatches one writer task ----
  // A caller that noted something when it decided a write (a memo's "written at", "sent at")
  // hands its undo: PassWrite::refused, called when the write is refused as it is carried out, so
  // that the next pass decides it again as if it had never been decided.
  using Undo = std::function<void()>;
  // `next` as the run's status (unless it is the status already), then the Event if any.
  void WriteStatus(const Run& run, const RunStatus& next, std::optional<RunEvent> event = {}, bool background = false,
                   Undo refused = {});
  // Ends the attempt: back to the queue when the run retries on this event (and may), else
  // Failed. `reason` overrides the reason (default Interrupted or PodFailed). `stopped`: the user
  // stopped it (spec.stop): Failed, never a retry, a Normal Event. `preempted`: evicted for a
  // higher-priority run (an interruption without retry backoff; counted in the metrics, a reclaim
  // under the run's `team`: "" when no Team holds its namespace).
  void FailOrRetry(const Run& run, bool interruption, const std::string& why, k8s::TimePoint now,
                   const ReasonCode& reason = {}, bool stopped = false, bool preempted = false,
                   const std::string& team = {});
  // The status of a run sent back to the queue (FailOrRetry): Pending with `reason`, retry backoff
  // (none when `preempted`), resubmissions + 1, placement cleared.
  RunStatus RetryStatus(const Run& run, const ReasonCode& reason, const std::string& why, k8s::TimePoint now,
                        bool preempted) const;
  // spec.suspend: Pending with reason Suspended (`message` unless it already shows Suspended), no
  // queue position, no placement; its Pods stopped with their grace period (status first).
  void Suspend(const Run& run, const std::string& message, k8s::TimePoint now);
  // A Run being deleted: its Pods, its own Service, then berth's finalizer.
  void HandleDeletion(const Run& run);
  // Writes the MaxDurationExceeded status, then stops the attempt's Pods.
  void EndAfterMaxDuration(const Run& run, const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods,
                           const std::string& message, k8s::TimePoint now);
  // Admission step 4 for the run's placement (its ranks' resources from `view`'s block layouts).
  void EnsurePods(const Run& run, const std::string& gpu_resource, const ClusterView& view, Undo refused = {});
  // Deletes these Pods of the run (DeletePods on a writer); `retry`: a failure is retried.
  void DeletePodsOf(const Run& run, std::vector<PodRef> pods, bool retry);
  // Pods that claim the run but that berth did not make (CacheReads::StraysOf): each deleted
  // (its grace period capped as DeletePods does) with a Warning Event StrayPod on the run naming it.
  void DeleteStrays(const Run& run, std::vector<PodRef> pods, Undo refused = {});
  // Issue 45, a ticket's workload (reconcilers/objects/tickets.h), under the key "workload:<ns>/<ticket>":
  // held (a pending ticket's workload found running), or released and its gated Pods pinned.
  void HoldTicket(const Run& ticket);
  void ReleaseTicket(const Run& ticket, bool unsuspend = true, bool pin = true, Undo refused = {});
  // An ended run whose spec changed: its status and an Event say that it does not run again.
  void NoteSpecChangeAfterEnd(const Run& run);
  // A finished run whose time to live has passed is deleted, like a Job by its TTL controller:
  // only the object seen (uid and resourceVersion preconditions), so a run changed meanwhile
  // (its TTL, say) is decided again; gone or changed counts as done, another failure is retried.
  void DeleteAfterTtl(const Run& run);
  // Issue 47: whether the run's span is not accounted yet (its finalizer and TTL delete wait);
  // when it holds nothing any more, asks for the usage fold (SetUsageWanted).
  bool WaitsForUsage(const Run& run);

  // ---- writer threads ----
  // Writes `next` as the run's status, guarded by the resourceVersion of `run`; when written,
  // NoteWritten has seen the answer. A task that got another outcome ends with AnswerUnwritten.
  WriteResult PatchStatus(const Run& run, const RunStatus& next);
  // What a writer task answers after its status write of `run` was not written: after a conflict,
  // what Admissions::NoteStale says (true: the run is left alone, no backoff); false otherwise
  // (retried with backoff; logged, except when the run is gone).
  bool AnswerUnwritten(const Run& run, const WriteResult& w);
  // The resourceVersion a successful write returned (Admissions::NoteWritten); also tells the
  // observer when `next` finished the run.
  void NoteWritten(const Run& run, const k8s::json::Document& answer, const RunStatus* next = nullptr);
  // Deletes these Pods, each only if it is still the Pod seen (uid precondition: a late delete
  // never hits a new attempt's Pod of the same name). A Pod none of whose containers ever
  // started (an image that cannot be pulled) has nothing to shut down: it is deleted with a 1 s
  // grace period instead of its own, because the kubelet otherwise keeps it (and its blocks)
  // for the whole period. A started one gets its own grace period, at most its fleet's
  // maxGracePeriod (issue 44: a Pod made before the cap, or before the fleet lowered it, is not
  // given a year to stop), and at least 1 s (0 would be a force delete). Returns false when one
  // could not be deleted for another reason than being gone already.
  bool DeletePods(const std::string& ns, const std::vector<PodRef>& pods);
  // Admission step 4: the headless Service (multi-node) and each rank's Pod created bound; a Pod
  // the API server refuses fails the run (FailInvalidSpec). The uids of the Pods made are written
  // into status.podUIDs right after (issue 44). A Pod of the rank's name that exists already is
  // the run's when its uid is listed, or when berth may have made it without recording it (a
  // crash or a lost answer: MayBeRunsUnrecordedPod) and it asks no more than the rank's blocks
  // (then its uid is recorded); one that claims the run otherwise is a stray (deleted, Warning
  // Event, made again on the next try); any other fails the run.
  // `max_grace_seconds`: the fleet's maxGracePeriod (BuildPod). `device_class`: a DRA fleet's
  // (issue 49): each Pod with GPUs gets its ResourceClaim first (CreateDeviceClaim), and its Pods
  // are bound by kube-scheduler, never by berth.
  bool CreatePods(const Run& r, const std::vector<RankAssignment>& ranks, const std::string& gpu_resource,
                  const std::map<std::string, std::string>& bound, int64_t max_grace_seconds = kDefaultGraceCapSeconds,
                  const std::string& device_class = {});
  // The run fails with InvalidSpec and `why`.
  bool FailInvalidSpec(const Run& r, const std::string& why);

  k8s::ObjectReference Ref(const Run& run) const;

 private:
  // Hands the write of `run` (`kind`, under `key`; `body` the JSON sent, made on request) on;
  // `refused`: the caller's undo (PassWrite::refused).
  bool Dispatch(std::string key, WriteKind kind, const Run& run, std::function<std::string()> body,
                std::function<bool()> fn, bool background = false, Undo refused = {});
  // The status patch `next` of `run` as sent (RunStatusPatch at the run's resourceVersion), made on request.
  static std::function<std::string()> StatusBody(const Run& run, const RunStatus& next);
  // CreatePods' part for the template: `out` is the run's whole spec.template (from the cache, or
  // read with the run when the cache does not keep it); nullopt when read, else the task's answer.
  std::optional<bool> ReadTemplate(const Run& r, std::string& out);
  // CreatePods' part for the Service of a multi-node run; nullopt when done, else the task's answer.
  std::optional<bool> CreateService(const Run& r);
  // CreatePods' part for rank `i`'s Pod (`name`), made from `full` (the run with its whole
  // template) bound to its node; nullopt when created (or the run's own exists), else the task's
  // answer.
  // `made`: gets the uid of the Pod made (or found to be the run's without being recorded).
  std::optional<bool> CreatePod(const Run& r, const Run& full, const std::vector<RankAssignment>& ranks, size_t i,
                                const std::string& name, const std::string& gpu_resource, int64_t max_grace_seconds,
                                std::vector<std::string>& made, const std::string& device_class = {});
  // Issue 49: the ResourceClaim of rank `i`'s Pod `name` on a DRA fleet (BuildDeviceClaim), made
  // before the Pod; nullopt when made or there already, else the task's answer.
  // A claim there already is the run's only when the Run controls it (its ownerReference uid).
  std::optional<bool> CreateDeviceClaim(const Run& r, const RankAssignment& rank, const std::string& name,
                                        const std::string& device_class);
  // CreateDeviceClaim's answer when the claim's name is taken: the run's own (nullopt), a deleted
  // namesake Run's or not cached yet (false: later), or someone else's (the run fails, InvalidSpec).
  std::optional<bool> ExistingDeviceClaim(const Run& r, const RankAssignment& rank, const std::string& name);
  // Writes `made` (with the listed uids of Pods that still exist) into status.podUIDs.
  bool RecordPods(const Run& r, const std::vector<std::string>& made);
  // The outcome of removing a deleted run's finalizer: a failure backs off (finalizer_retry_).
  void NoteFinalizerOutcome(const Run& r, const k8s::Status& s);

  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  k8s::EventRecorder& events_;
  Admissions& admissions_;
  const EngineOptions& options_;
  DispatchFn dispatch_;
  PodsOf pods_of_;
  PodsOf live_pods_of_;
  TicketWrites tickets_{client_};
  EngineObserver* observer_ = nullptr;
  GraceCapFn grace_cap_;
  ClaimFn live_claim_;
  std::function<void()> usage_wanted_;
  // A deleted run whose finalizer the API server refused to drop (an admission policy's 422, say)
  // is tried again after a backoff doubling from 1 s to 5 min, not on every pass (HandleDeletion).
  struct FinalizerRetry {
    base::MonoTime next{};
    base::Duration delay{};
  };
  std::mutex finalizer_mu_;
  std::map<std::string, FinalizerRetry> finalizer_retry_;  // by RunKey
};

}  // namespace berth::reconcilers
