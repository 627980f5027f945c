#pragma once
// Tickets (issue 45): the Run berth keeps for each queued workload (workloads/workload.h), and
// the writes that hold, release and pin the workload.
//
// TicketSync (loop thread, once per pass while something it reads changed): every queued workload
// of each of workloads::ObjectKinds() (label berth.dev/queue "true", or in a namespace labelled
// berth.dev/queue-all; not one that is part of another, a JobSet's Job) has its ticket
// <prefix>-<name> (job-x): created (ownerReference to the workload, not controller), its spec put
// back to what the workload's labels say when it differs (a label value berth cannot read is noted on the ticket as the
// annotation berth.dev/label-problem; the engine reports it, the field keeps its last value), and
// a ticket whose workload is gone (or is another object of the same name) deleted. Its writes go
// to the engine's writers under "ticket:<ns>/<ticket>".
//
// TicketWrites (writer threads): Hold (the workload's HoldPatch, uid precondition) and Release
// (ReleasePatch when held, then each gated Pod of the workload pinned to a rank of the ticket's
// placement the live Pods do not take: workloads::PinPodPatch, one patch per Pod, guarded by
// its resourceVersion). Pods are read from the API, not the cache, so a rank is never given twice.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "k8s/client.h"
#include "reconcilers/engine_caches.h"
#include "reconcilers/pod_group_tickets.h"
#include "reconcilers/run_types.h"
#include "reconcilers/ticket_writes.h"

namespace berth::reconcilers {


class TicketSync {
 public:
  using DispatchFn = std::function<bool(const std::string& key, std::function<bool()> write)>;
  TicketSync(k8s::ClientPtr client, const EngineCaches& caches, DispatchFn dispatch);
  // Loop thread: brings tickets in line with the workloads when anything they depend on changed.
  void Pass();

 private:
  void SyncWorkload(const workloads::WorkloadKind& kind, const workloads::Workload& job);
  void DeleteOrphans();
  void Dispatch(const std::string& key, std::function<bool()> write);
  k8s::ClientPtr client_;
  const EngineCaches& caches_;
  DispatchFn dispatch_;
  std::atomic<bool> dirty_{true};
  PodTicketSync pod_workloads_;  // Pods and Pod groups (issue 45 part 3)
};

}  // namespace berth::reconcilers
