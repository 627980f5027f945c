#pragma once
// The pass' snapshot (issue 46 item 1): one moment of every cache the engine watches, taken at the
// start of a pass (EngineCaches::UpdateSnapshot, from RunController::StartPass) and read by every
// step of that pass, as kube-scheduler's Cache.UpdateSnapshot / Snapshot do. A step gets a
// `const PassSnapshot&`: the reads of reconcilers/state/cache_reads.h over the snapshot's stores.
//
// One k8s::Store per informer of EngineCaches; each holds the informer's own pointers (one
// immutable object per version: copy-on-write, never a deep copy) and its indexes, and an update
// applies only what changed since the last one (k8s::Informer::Mirror): a pass pays for what
// changed, not for what exists.
//
// Threads: the loop thread only (updated between two passes, read during one). Nothing here
// includes k8s/informer.h: the library of the pass' steps does not link the informers.

#include <memory>
#include <vector>

#include "k8s/store.h"
#include "reconcilers/state/cache_reads.h"

namespace berth::reconcilers {

class EngineCaches;

class PassSnapshot final : public CacheReads {
 public:
  PassSnapshot();
  // How many objects the last update applied over every store (what it cost; 0: nothing changed).
  size_t LastApplied() const;

  // ---- A snapshot by hand (tests: no informer, no API) ----
  struct Objects {
    std::vector<std::shared_ptr<const Run>> runs;
    std::vector<std::shared_ptr<const Fleet>> fleets;
    std::vector<std::shared_ptr<const k8s::Node>> nodes;
    std::vector<std::shared_ptr<const k8s::Pod>> pods;    // berth's (label berth.dev/run)
    std::vector<std::shared_ptr<const k8s::Pod>> others;  // everyone else's
    std::vector<std::shared_ptr<const NamespaceInfo>> namespaces;
    std::vector<std::shared_ptr<const ResourceQuotaInfo>> quotas;
    std::vector<std::shared_ptr<const Team>> teams;
  };
  // From now on the snapshot reads `objects`, keyed and indexed as the informers do
  // (reconcilers/state/cache_indexes.h; k8s::Store::Fill); every call is a new version of every
  // one of these stores. Workloads and pod groups: none. A snapshot filled by hand is not one
  // EngineCaches updates.
  void Fill(const Objects& objects);

 private:
  friend class EngineCaches;  // UpdateSnapshot
  k8s::Store<Run> runs_;
  k8s::Store<Fleet> fleets_;
  k8s::Store<k8s::Node> nodes_;
  k8s::Store<k8s::Pod> pods_, others_;
  k8s::Store<NamespaceInfo> namespaces_;
  k8s::Store<ResourceQuotaInfo> quotas_;
  k8s::Store<Team> teams_;
  std::vector<std::unique_ptr<k8s::Store<workloads::Workload>>> workloads_;  // one per workloads::ObjectKinds()
  k8s::Store<k8s::GroupPod> group_pods_, queued_pods_;
  k8s::Store<k8s::Pod> ticket_pods_;
  k8s::Store<k8s::ResourceSlice> resource_slices_;
  k8s::Store<k8s::DeviceClass> device_classes_;
  k8s::Store<k8s::ResourceClaim> resource_claims_;
};

}  // namespace berth::reconcilers
