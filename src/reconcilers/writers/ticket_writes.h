#pragma once
// TicketWrites (issue 45; reconcilers/objects/tickets.h tells the whole story): the writes to a ticket's
// workload, on the engine's writer threads.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <string>

#include "k8s/client.h"
#include "reconcilers/objects/run_types.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

// The annotation on a ticket naming a label of its workload berth cannot read ("" : none).
inline constexpr const char* kLabelProblemAnnotation = "berth.dev/label-problem";

// Whether the ticket's workload has a controller that deletes its Pods once it is held (a Job's,
// a JobSet's Jobs': the Job controller deletes the Pods of a suspended Job, their completion
// finalizer taken off first, so none counts as a failure toward backoffLimit). berth then only
// holds it and waits for the Pods to go; a Pod berth deleted itself would count as a failed Pod
// (pkg/controller/job isPodFailed: a deleted Pod not Succeeded). Pods and Pod groups have no such
// controller: berth deletes their Pods.
bool HeldWorkloadStopsItsPods(const Run& ticket);

class TicketWrites {
 public:
  explicit TicketWrites(k8s::ClientPtr client) : client_(std::move(client)) {}
  // The live Pods of the ticket's workload as the engine's cache has them (with their
  // k8s::Pod::pin_source while gated). Set before the writers start.
  using PodsFn = std::function<std::vector<std::shared_ptr<const k8s::Pod>>(const Run& ticket)>;
  void SetWorkloadPods(PodsFn pods) { workload_pods_ = std::move(pods); }
  // The ticket's workload held (suspended), and the Jobs its controller made (a JobSet's); true
  // when held or gone.
  bool Hold(const Run& ticket);
  // The ticket's workload released and its gated Pods pinned to the ranks of the placement;
  // `fleet`: the fleet placed on (its toleration). False when a write failed (retried).
  // What the engine's caches said decides the reads: `unsuspend` (the workload is held there, or
  // not cached yet): the release patch, with the workload's uid as its precondition, no GET
  // first; `pin` (a Pod of it waits to be pinned there): the waiting Pods, as the cache has them,
  // each pinned to a rank no live Pod holds. A Pod the cache has not seen yet is pinned on the
  // visit its arrival brings (EngineLoop). No LIST: each pin is guarded by the resourceVersion
  // the cache had (a stale one is refused, 409, and pinned again on a later visit), and a rank
  // pinned here counts as taken until the cache shows that Pod pinned or gone (`pinned_`), so two
  // Pods never get one rank however far the cache lags.
  bool Release(const Run& ticket, bool unsuspend = true, bool pin = true);

 private:
  bool HoldChildJobs(const Run& ticket, const workloads::WorkloadKind& kind);
  bool Unsuspend(const Run& ticket, const workloads::WorkloadKind& kind);
  bool PinFromCache(const Run& ticket);
  k8s::ClientPtr client_;
  PodsFn workload_pods_;
  // "ns/pod" -> (ticket key, rank) of pins sent but not yet seen in the cache. Writer threads
  // (one ticket's releases are serialized by its dispatch key; the map is shared: `mu_`).
  std::mutex mu_;
  std::map<std::string, std::pair<std::string, int>> pinned_;
};

}  // namespace berth::reconcilers
