#pragma once
// Tickets (issue 45): the Run berth keeps for each queued workload (workloads/workload.h), and
// the writes that hold, release and pin the workload.
//
// TicketSync (loop thread, once per pass while something it reads changed): every queued workload
// of each of workloads::ObjectKinds() (label berth.dev/queue "true", or in a namespace labelled
// berth.dev/queue-all; not one that is part of another that is queued, a JobSet's Job) has its ticket
// <prefix>-<name> (job-x): created (ownerReference to the workload, not controller), its spec put
// back to what the workload's labels say when it differs (a label value berth cannot read is noted on the ticket as the
// annotation berth.dev/label-problem; the engine reports it, the field keeps its last value), and
// a ticket whose workload is gone (or is another object of the same name) deleted. Its writes go
// to the engine's writers under "ticket:<ns>/<ticket>". Only what changed is looked at: the
// workloads an event named and the tickets of those (and of ticket events); every workload after a
// Namespace or Fleet change (queue-all, a fleet's GPU resource). A ticket created is not created
// again until the runs cache has shown it (the bench saw a third of the creates answered 409).
//
// TicketWrites (writer threads): Hold (the workload's HoldPatch, uid precondition) and Release
// (ReleasePatch when held, then each gated Pod of the workload pinned to a rank of the ticket's
// placement the live Pods do not take: workloads::PinPodPatch, one patch per Pod, guarded by
// its resourceVersion). Pods are read from the API, not the cache, so a rank is never given twice.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "k8s/client.h"
#include "reconcilers/state/engine_caches.h"
#include "reconcilers/objects/pod_group_tickets.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/writers/ticket_writes.h"

namespace berth::reconcilers {


class TicketSync {
 public:
  using DispatchFn = std::function<bool(const std::string& key, std::function<bool()> write)>;
  TicketSync(k8s::ClientPtr client, const EngineCaches& caches, DispatchFn dispatch);
  // Loop thread: brings tickets in line with the workloads that changed since the last pass (all
  // of them after a Namespace or Fleet change, or at the start).
  void Pass();

 private:
  // What changed since the last pass: every workload (`all`), or these workloads ("ns/name" per
  // kind) and these tickets ("ns/ticket": is its workload gone?).
  struct Changes {
    bool all = false;
    std::set<std::pair<const workloads::WorkloadKind*, std::string>> workloads;
    std::set<std::string> tickets;
  };
  void MarkAll();
  void MarkWorkload(const workloads::WorkloadKind* kind, const std::string& key);
  void MarkTicket(const std::string& key);
  void SyncWorkload(const workloads::WorkloadKind& kind, const workloads::Workload& job);
  // Whether a workload that is part of another (a Job whose controller ownerReference names a
  // JobSet) is left to that one: the owner exists with that uid and is queued itself. Anyone may
  // write such a reference; a Job that claims an owner berth does not queue is queued as a Job.
  bool PartOfQueuedWorkload(const workloads::Workload& w) const;
  // Creates the ticket `name` of `job` unless one was created that the runs cache does not show yet.
  void CreateTicket(const workloads::WorkloadKind& kind, const workloads::Workload& job, const std::string& name,
                    const workloads::TicketSpec& want, std::function<void()> redo);
  void DeleteIfOrphan(const Run& run);
  // `redo`: marks again what the write was for when the dispatcher refuses it (one of the key's
  // writes is queued or in flight), so a later pass decides it again.
  void Dispatch(const std::string& key, std::function<bool()> write, std::function<void()> redo);
  k8s::ClientPtr client_;
  const EngineCaches& caches_;
  DispatchFn dispatch_;
  std::mutex mu_;
  Changes changes_;  // guarded by mu_; starts as everything
  // Tickets created whose create the runs cache has not shown yet (not created twice meanwhile).
  std::set<std::string> created_;  // guarded by mu_
  PodTicketSync pod_workloads_;  // Pods and Pod groups (issue 45 part 3)
};

}  // namespace berth::reconcilers
