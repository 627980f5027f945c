#pragma once
// Tickets of Pods and Pod groups (issue 45 part 3; workloads/pod_group.h says what a Pod workload
// is and decides). A Pod group is no object of its own, so what reconcilers/objects/tickets.h does with a
// Job's object is done here from the group's Pods (EngineCaches::group_pods, queued_pods):
//
// PodTicketSync (loop thread, from TicketSync::Pass, once per pass while Pods, Namespaces, Fleets
// or tickets changed): each queued Pod workload has its ticket pod-<name> / podgroup-<name>:
//   - created once one of its Pods lives (a single Pod's ticket is owned by the Pod; a group's has
//     no ownerReference: no one Pod of it may take it down early), its spec put back to the first
//     Pod's labels, a bad label or pod-group-size named in berth.dev/label-problem;
//   - deleted when none of its Pods is left while it has not ended ("deleting all the Pods removes
//     the ticket and frees its blocks"); an ended ticket stays as the record (as a finished Run,
//     until --finished-run-ttl), and is replaced when a Pod of the group is created after it ended;
//   - when it has ended, the group's Pods that neither finished nor are being deleted are deleted
//     (a group stopped or preempted while some of its Pods still waited gated: nothing would ever
//     lift their gate).
// Reads for the engine (loop thread): the ticket's workload, its Pods, the Pods still to pin.
// (PodTicketSync and WatchPodWorkloads are the engine's edge: pod_ticket_sync.cc, with the informers.)
// PinPodWorkload (writer thread): TicketWrites::Release of a Pod workload: each gated Pod pinned
// to a rank of the placement no live Pod of it holds (k8s::PinPodPatch, workloads::PinOf), read
// fresh from the API, one patch per Pod, guarded by its resourceVersion.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/client.h"
#include "k8s/pod_group_objects.h"
#include "reconcilers/objects/run_types.h"
#include "workloads/pod_group.h"

namespace berth::reconcilers {

class CacheReads;
class EngineCaches;

// Small helpers shared by pod_group_tickets.cc (the reads) and pod_ticket_sync.cc (the sync).
namespace pod_tickets {
const workloads::WorkloadKind& KindOf(const workloads::PodWorkloadId& id);
std::vector<const k8s::GroupPod*> Raw(const std::vector<std::shared_ptr<const k8s::GroupPod>>& pods);
bool Finished(const k8s::Pod& p);
}  // namespace pod_tickets


// The ticket's Pod workload as its cached Pods make it; nullopt when none of them is cached (or a
// single Pod's ticket names another Pod of that name: its uid).
std::optional<workloads::PodGroupState> PodWorkloadStateOf(const CacheReads& caches, const Run& ticket);
// The same as a Workload (CacheReads::WorkloadOf).
std::shared_ptr<const workloads::Workload> PodWorkloadOf(const CacheReads& caches, const Run& ticket);
// Whether a Pod (its cached metadata) is one of the Pods of the ticket's Pod workload.
bool IsPodOfPodWorkload(const k8s::ObjectMeta& pod, const Run& ticket);
// Its Pods that wait to be pinned: gated, not bound, not being deleted, no rank yet.
size_t UnpinnedPodsOfPodWorkload(const CacheReads& caches, const Run& ticket);
// What its Pods that have not finished count in its namespace's ResourceQuota usage (the API
// server counts a Pod from its creation, gated or not), by quota key: scheduling::kQuotaCpu,
// kQuotaMemory, kQuotaPods and "requests.<resource>" for each other resource they request
// (scheduling::PendingRun::quota_counted). Empty when none is cached.
std::map<std::string, int64_t> QuotaCountedOfPodWorkload(const CacheReads& caches, const Run& ticket);
// The engine loop's handlers (EngineLoop::Watch): a queued Pod or a group's Pod changed: `touch`
// its ticket's key, then `wake`.
void WatchPodWorkloads(EngineCaches& caches, const std::function<void(const std::string&)>& touch,
                       const std::function<void()>& wake);
// Writer thread: pins the gated Pods of the ticket's Pod workload; true when done (or nothing to
// do), false when a write failed (retried).
bool PinPodWorkload(k8s::Client& client, const Run& ticket);

class PodTicketSync {
 public:
  using DispatchFn = std::function<bool(const std::string& key, std::function<bool()> write)>;
  PodTicketSync(k8s::ClientPtr client, const EngineCaches& caches, DispatchFn dispatch);
  void Pass();

 private:
  struct Entry {
    std::string ns;
    workloads::PodWorkloadId id;
    std::vector<std::shared_ptr<const k8s::GroupPod>> pods;
  };
  void Sync(const Entry& e);
  void SyncEnded(const Entry& e, const Run& ticket);
  void DeleteTicket(const Run& ticket, const std::string& why);
  void Dispatch(const std::string& key, std::function<bool()> write);
  k8s::ClientPtr client_;
  const EngineCaches& caches_;
  DispatchFn dispatch_;
  std::atomic<bool> dirty_{true};
};

}  // namespace berth::reconcilers
