#pragma once
// The engine's caches: the informers of everything the engine watches (Runs, Fleets, Nodes,
// berth's Pods, everyone else's Pods that hold resources, Namespaces, ResourceQuotas, Teams) and the
// reads every step makes of them.
//
// Threads. Start, Stop: the engine's owner (StartInformers, Stop). The informers' own threads
// fill the caches and call the handlers the engine adds. The reads: any thread (each informer
// locks its cache); the engine reads them from the loop thread, the admission webhook reads
// CachedCapOf from HTTP threads.
// Owns: the informers. Cost: each read is a cache lookup or an index walk (PodsOf: the run's
// Pods; Holds: every Pod that may hold resources, so only when the cluster view is made anew).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "k8s/client.h"
#include "k8s/informer.h"
#include "k8s/objects.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/namespace_policy.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/objects/team_types.h"
#include "k8s/pod_group_objects.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

// Whether the kubelet still counts this Pod against its node when it admits another one.
bool KubeletCountsPod(const k8s::Pod& p);

class EngineCaches {
 public:
  explicit EngineCaches(const k8s::ClientPtr& client);
  void Start();
  void Stop();
  bool HasSynced() const;
  // `h` is called (on an informer's thread) after each informer's complete list; set before Start.
  void OnSynced(const std::function<void()>& h);
  // How many informers (each holds one watch open once synced): runs, fleets, nodes, pods, other
  // pods, namespaces, resource quotas, teams, Pod groups' Pods, queued single Pods, tickets'
  // pinned Pods, and one per
  // workloads::ObjectKinds() (Jobs, ...). A test that waits for every watch to be idle
  // (FakeApi::WaitWatchesIdle) counts on it: one informer more and this number must follow.
  static constexpr size_t kInformers = 11 + workloads::kObjectKindCount;

  k8s::Informer<Run>& runs() const { return *runs_; }
  k8s::Informer<Fleet>& fleets() const { return *fleets_; }
  k8s::Informer<k8s::Node>& nodes() const { return *nodes_; }
  // berth's Pods, indexed by run ("run"), node ("node") and those the kubelet still counts ("held").
  k8s::Informer<k8s::Pod>& pods() const { return *pods_; }
  // Everyone else's Pods that may hold resources (not berth's, not finished): their requests come
  // off the nodes they run on.
  k8s::Informer<k8s::Pod>& others() const { return *others_; }
  k8s::Informer<NamespaceInfo>& namespaces() const { return *namespaces_; }  // their berth.dev/max-priority
  k8s::Informer<ResourceQuotaInfo>& quotas() const { return *resource_quotas_; }
  k8s::Informer<Team>& teams() const { return *teams_; }  // issue 31 (reconcilers/objects/team_keeper.h)
  // The workloads of one of workloads::ObjectKinds() (issue 45: batch/v1 Jobs, workloads/job.h; ...).
  k8s::Informer<workloads::Workload>& workloads(const workloads::WorkloadKind& kind) const;
  // Issue 45 part 3 (workloads/pod_group.h): the Pods labelled berth.dev/pod-group (index "group":
  // "ns/group"), and the Pods labelled berth.dev/queue "true" without it; finished ones too (a
  // group's end is read from its Pods).
  k8s::Informer<k8s::GroupPod>& group_pods() const { return *group_pods_; }
  k8s::Informer<k8s::GroupPod>& queued_pods() const { return *queued_pods_; }
  // Issue 45: the Pods berth pinned for a ticket (label berth.dev/ticket; index "ticket":
  // "ns/ticket"), finished ones too (others() has none): a Job's Pods show when it is done
  // (workloads::PodsShowJobDone) before its controller says so.
  k8s::Informer<k8s::Pod>& ticket_pods() const { return *ticket_pods_; }

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
  // cached); the default (10m) when none does. Any thread.
  int64_t GraceCapOf(const std::string& node) const;
  // The cap of namespaces without the label berth.dev/max-priority (--default-max-priority,
  // issue 44); set before Start.
  void SetDefaultMaxPriority(int32_t cap) { default_max_priority_ = cap; }
  // The priority cap of a namespace as cached (label berth.dev/max-priority, else the default
  // cap); nullopt: none.
  std::optional<PriorityCap> CapOf(const std::string& ns) const;
  // The same for the admission webhook: false when the Namespace cache has not synced or does
  // not hold `ns` (yet), so the caller asks the API server instead.
  bool CachedCapOf(const std::string& ns, std::optional<PriorityCap>& cap) const;
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

 private:
  void MakePodInformers(const k8s::ClientPtr& client);

  std::unique_ptr<k8s::Informer<Run>> runs_;
  std::unique_ptr<k8s::Informer<Fleet>> fleets_;
  std::unique_ptr<k8s::Informer<k8s::Node>> nodes_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> pods_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> others_;
  std::unique_ptr<k8s::Informer<NamespaceInfo>> namespaces_;
  int32_t default_max_priority_ = kNoDefaultCap;
  std::unique_ptr<k8s::Informer<ResourceQuotaInfo>> resource_quotas_;
  std::unique_ptr<k8s::Informer<Team>> teams_;
  // One per workloads::ObjectKinds(), in its order.
  std::vector<std::unique_ptr<k8s::Informer<workloads::Workload>>> workloads_;
  std::unique_ptr<k8s::Informer<k8s::GroupPod>> group_pods_, queued_pods_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> ticket_pods_;
};

}  // namespace berth::reconcilers
