#pragma once
// The reads every step of the engine makes of its caches (a run's Pods, a ticket's workload and
// Pods, what holds blocks on nodes, a namespace's priority cap, quota news...), written once over
// their sources: the stores of a PassSnapshot (reconcilers/state/snapshot.h: what the steps of a
// pass read) or, for the few reads other threads make between passes (the writers' grace caps and
// a workload's Pods, the webhook's caps, the ticket syncs), the informers of EngineCaches
// (EngineCaches::live). The sources are k8s::Source<T> (k8s/store.h): this header knows no informer.
//
// Threads: a CacheReads over stores is read by the thread that updates them (the loop); over
// informers, by any thread (each informer locks its cache). Cost: each read is a lookup or an
// index walk (PodsOf: the run's Pods; Holds: every Pod that may hold resources).

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "k8s/dra_objects.h"
#include "k8s/objects.h"
#include "k8s/pod_group_objects.h"
#include "k8s/store.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/namespace_policy.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/objects/team_types.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/writers/run_writes.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

// Whether the kubelet still counts this Pod against its node when it admits another one.
bool KubeletCountsPod(const k8s::Pod& p);
// The key of the index "workload" of other Pods: "Kind:ns/name".
std::string WorkloadIndexKey(const workloads::WorkloadKind& kind, const std::string& ns, const std::string& name);
// The place of `kind` in workloads::ObjectKinds().
size_t WorkloadKindIndex(const workloads::WorkloadKind& kind);

// What the reads read: one source per cache of EngineCaches (its comments say what each holds).
struct CacheSources {
  const k8s::Source<Run>* runs = nullptr;
  const k8s::Source<Fleet>* fleets = nullptr;
  const k8s::Source<k8s::Node>* nodes = nullptr;
  const k8s::Source<k8s::Pod>* pods = nullptr;    // berth's Pods
  const k8s::Source<k8s::Pod>* others = nullptr;  // everyone else's that may hold resources
  const k8s::Source<NamespaceInfo>* namespaces = nullptr;
  const k8s::Source<ResourceQuotaInfo>* quotas = nullptr;
  const k8s::Source<Team>* teams = nullptr;
  std::vector<const k8s::Source<workloads::Workload>*> workloads;  // one per workloads::ObjectKinds()
  const k8s::Source<k8s::GroupPod>* group_pods = nullptr;
  const k8s::Source<k8s::GroupPod>* queued_pods = nullptr;
  const k8s::Source<k8s::Pod>* ticket_pods = nullptr;
  int32_t default_max_priority = kNoDefaultCap;  // --default-max-priority (issue 44)
  // Issue 49 (DRA fleets, reconcilers/state/dra_devices.h): every ResourceSlice, DeviceClass and
  // ResourceClaim; none when the API server does not serve resource.k8s.io/v1.
  const k8s::Source<k8s::ResourceSlice>* resource_slices = nullptr;
  const k8s::Source<k8s::DeviceClass>* device_classes = nullptr;
  const k8s::Source<k8s::ResourceClaim>* resource_claims = nullptr;
};

class CacheReads {
 public:
  explicit CacheReads(CacheSources sources) : s_(std::move(sources)) {}
  CacheReads(const CacheReads&) = delete;
  CacheReads& operator=(const CacheReads&) = delete;
  virtual ~CacheReads() = default;

  const k8s::Source<Run>& runs() const { return *s_.runs; }
  const k8s::Source<Fleet>& fleets() const { return *s_.fleets; }
  const k8s::Source<k8s::Node>& nodes() const { return *s_.nodes; }
  // berth's Pods, indexed by run ("run"), node ("node"), owner ("owner-run") and those the kubelet
  // still counts ("held").
  const k8s::Source<k8s::Pod>& pods() const { return *s_.pods; }
  // Everyone else's Pods that may hold resources (indexes "owner-run", "ticket", "ticket-node", "workload").
  const k8s::Source<k8s::Pod>& others() const { return *s_.others; }
  const k8s::Source<NamespaceInfo>& namespaces() const { return *s_.namespaces; }
  const k8s::Source<ResourceQuotaInfo>& quotas() const { return *s_.quotas; }
  const k8s::Source<Team>& teams() const { return *s_.teams; }
  const k8s::Source<workloads::Workload>& workloads(const workloads::WorkloadKind& kind) const;
  const k8s::Source<k8s::GroupPod>& group_pods() const { return *s_.group_pods; }  // index "group"
  const k8s::Source<k8s::GroupPod>& queued_pods() const { return *s_.queued_pods; }
  const k8s::Source<k8s::Pod>& ticket_pods() const { return *s_.ticket_pods; }  // index "ticket"
  int32_t default_max_priority() const { return s_.default_max_priority; }
  const k8s::Source<k8s::ResourceSlice>& resource_slices() const { return *s_.resource_slices; }
  const k8s::Source<k8s::DeviceClass>& device_classes() const { return *s_.device_classes; }
  const k8s::Source<k8s::ResourceClaim>& resource_claims() const { return *s_.resource_claims; }
  void SetDefaultMaxPriority(int32_t cap) { s_.default_max_priority = cap; }

  // ---- tickets (issue 45: a Run with spec.workloadRef) ----
  // The ticket's workload as cached, when it is the one the ticket names (its uid); else null.
  std::shared_ptr<const workloads::Workload> WorkloadOf(const Run& ticket) const;
  // The ticket's pinned Pods that have not finished (label berth.dev/ticket, of its workload:
  // WorkloadKind::WorkloadOfPod): what PodsOf answers for a ticket.
  std::vector<std::shared_ptr<const k8s::Pod>> PinnedPodsOf(const Run& ticket) const;
  // Pods of the ticket's workload that wait to be pinned: not bound, not being deleted, no
  // berth.dev/rank label yet.
  size_t UnpinnedPodsOf(const Run& ticket) const;
  // The live Pods of a ticket's Job or JobSet (its workloadRef's uid), as cached: what
  // TicketWrites::Release pins from. Empty for a Run, a Pod or a Pod group.
  std::vector<std::shared_ptr<const k8s::Pod>> WorkloadPodsOf(const Run& ticket) const;
  // Whether the ticket's Job (a batch/v1 Job ticket) is done by its Pods (workloads::PodsShowJobDone:
  // the Pods berth pinned for it, finished ones included, from ticket_pods()); `succeeded`: how
  // many of them succeeded. False for any other ticket.
  bool JobPodsShowDone(const Run& ticket, const workloads::Workload& job, int64_t& succeeded) const;
  // Whether namespace `ns` queues every workload (label berth.dev/queue-all "true").
  bool QueuesAll(const std::string& ns) const;

  // The run's own Pods (its controller ownerReference, not just its label).
  std::vector<std::shared_ptr<const k8s::Pod>> PodsOf(const Run& run) const;
  // The run's Pods that neither finished nor are being deleted (what ending it has to stop).
  std::vector<PodRef> PodsToStop(const Run& run) const;
  // Pods that claim the run (its label, or a Run ownerReference of its name) that berth did not
  // make (IsStrayPodOf) and that are not being deleted yet: berth deletes them.
  std::vector<PodRef> StraysOf(const Run& run) const;
  // Pods on nodes that no current placement accounts for (see NodeHold); `runs`: the runs whose
  // Pods may count through their placement (the admitted ones).
  std::vector<NodeHold> Holds(const std::unordered_map<std::string_view, const Run*>& runs) const;
  // The most grace period (seconds) a Pod on `node` is given when berth stops it: the smallest
  // spec.maxGracePeriod of the fleets that select the node (of every fleet when the node is not
  // cached); the default (10m) when none does.
  int64_t GraceCapOf(const std::string& node) const;
  // The priority cap of a namespace as cached (label berth.dev/max-priority, else the default
  // cap); nullopt: none.
  std::optional<PriorityCap> CapOf(const std::string& ns) const;
  // Issue 17 (namespace_policy.h): the queue's priority for a run (its namespace's cap applied),
  // and whether some of a placed run's Pods are not in the cache yet (their quota usage is not in
  // the ResourceQuota's status yet: PlacedRun::quota_pending).
  int32_t QueuePriority(const Run& run) const;
  bool QuotaPending(std::string_view ns, const std::vector<PlacementEntry>& placement) const;
  // The same for a placed ticket (issue 45): its placement names no Pods; the Pods of its
  // workload count toward the ResourceQuota's status.used from their creation (gated or pinned,
  // until they finish), so it is pending while fewer of them are live in the cache than its
  // placement has entries (a Job not yet unsuspended, Pods not yet created). `placement`: the
  // placement it is being given (an admission whose status write is in flight); else its status's.
  bool TicketQuotaPending(const Run& ticket, const std::vector<PlacementEntry>* placement = nullptr) const;
  // What the Pods of a waiting Pod or Pod group ticket already count in its namespace's
  // ResourceQuota usage, by quota key (QuotaCountedOfPodWorkload): the cycle takes it out of the
  // usage for the ticket itself (scheduling::PendingRun::quota_counted), so that its gated Pods
  // are not counted twice. Empty for any other run.
  std::map<std::string, int64_t> QuotaCountedOf(const Run& ticket) const;

 protected:
  CacheSources& sources() { return s_; }

 private:
  CacheSources s_;
};

}  // namespace berth::reconcilers
