#pragma once
// The engine's caches: the informers of everything the engine watches (Runs, Fleets, Nodes,
// berth's Pods, everyone else's Pods that hold resources, Namespaces, ResourceQuotas, Teams, the
// workloads and their Pods), and the pass' snapshot of them (UpdateSnapshot: what every step of
// a pass reads, reconcilers/state/snapshot.h). The engine's edge: what needs an informer (its
// handlers, the live reads of other threads) is here, in RunController, EngineLoop and the ticket
// syncs.
//
// Threads. Start, Stop: the engine's owner (StartInformers, Stop). The informers' own threads
// fill the caches and call the handlers the engine adds. live(): any thread (each informer locks
// its cache); the admission webhook reads CachedCapOf from HTTP threads. UpdateSnapshot: the loop.
// Owns: the informers, one mirror of each (UpdateSnapshot). Cost: see cache_reads.h.

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
#include "reconcilers/state/cache_reads.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/namespace_policy.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/objects/team_types.h"
#include "k8s/pod_group_objects.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

class EngineCaches {
 public:
  explicit EngineCaches(const k8s::ClientPtr& client);
  ~EngineCaches();
  void Start();
  void Stop();
  bool HasSynced() const;
  // `h` is called (on an informer's thread) after each informer's complete list; set before Start.
  void OnSynced(const std::function<void()>& h);
  // How many informers (each holds one watch open once synced): runs, fleets, nodes, pods, other
  // pods, namespaces, resource quotas, teams, Pod groups' Pods, queued single Pods, tickets'
  // pinned Pods, ResourceSlices, DeviceClasses, ResourceClaims (issue 49), and one per
  // workloads::ObjectKinds() (Jobs, ...). A test that waits for every watch to be idle
  // (FakeApi::WaitWatchesIdle) counts on it: one informer more and this number must follow.
  static constexpr size_t kInformers = 14 + workloads::kObjectKindCount;

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
  // Issue 49 (DRA fleets): every ResourceSlice, DeviceClass and ResourceClaim (reconcilers/state/dra_devices.h).
  k8s::Informer<k8s::ResourceSlice>& resource_slices() const { return *resource_slices_; }
  k8s::Informer<k8s::DeviceClass>& device_classes() const { return *device_classes_; }
  k8s::Informer<k8s::ResourceClaim>& resource_claims() const { return *resource_claims_; }

  // The reads (reconcilers/state/cache_reads.h) over the informers, live: only for what reads
  // between passes or from other threads (the writers' grace caps and workload Pods, the
  // webhook's caps, the ticket syncs, the queue view's priority news). A pass reads its
  // PassSnapshot (UpdateSnapshot).
  const CacheReads& live() const { return *live_; }
  // Brings `snapshot` to the informers' content now: each store applies what changed since its
  // last update (k8s::Informer::Mirror), so it costs what changed. The loop thread, at the start
  // of each pass (RunController::StartPass).
  void UpdateSnapshot(PassSnapshot& snapshot);
  // The cap of namespaces without the label berth.dev/max-priority (--default-max-priority,
  // issue 44); set before Start.
  void SetDefaultMaxPriority(int32_t cap);
  // The priority cap of a namespace for the admission webhook (CacheReads::CapOf, live): false
  // when the Namespace cache has not synced or does not hold `ns` (yet), so the caller asks the
  // API server instead. Any thread.
  bool CachedCapOf(const std::string& ns, std::optional<PriorityCap>& cap) const;

 private:
  void MakePodInformers(const k8s::ClientPtr& client);
  void MakeDraInformers(const k8s::ClientPtr& client);
  void MakeLiveReads();  // live_ and mirrors_, once the informers are made

  std::unique_ptr<k8s::Informer<Run>> runs_;
  std::unique_ptr<k8s::Informer<Fleet>> fleets_;
  std::unique_ptr<k8s::Informer<k8s::Node>> nodes_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> pods_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> others_;
  std::unique_ptr<k8s::Informer<NamespaceInfo>> namespaces_;
  std::unique_ptr<k8s::Informer<ResourceQuotaInfo>> resource_quotas_;
  std::unique_ptr<k8s::Informer<Team>> teams_;
  // One per workloads::ObjectKinds(), in its order.
  std::vector<std::unique_ptr<k8s::Informer<workloads::Workload>>> workloads_;
  std::unique_ptr<k8s::Informer<k8s::GroupPod>> group_pods_, queued_pods_;
  std::unique_ptr<k8s::Informer<k8s::Pod>> ticket_pods_;
  std::unique_ptr<k8s::Informer<k8s::ResourceSlice>> resource_slices_;
  std::unique_ptr<k8s::Informer<k8s::DeviceClass>> device_classes_;
  std::unique_ptr<k8s::Informer<k8s::ResourceClaim>> resource_claims_;
  std::unique_ptr<CacheReads> live_;  // over the informers above
  struct Mirrors;                     // one per informer, for UpdateSnapshot
  std::unique_ptr<Mirrors> mirrors_;
};

}  // namespace berth::reconcilers
