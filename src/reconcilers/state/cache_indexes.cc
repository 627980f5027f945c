#include "reconcilers/state/cache_indexes.h"

#include "reconcilers/state/cache_reads.h"
#include "reconcilers/writers/pod_builder.h"
#include "workloads/job.h"
#include "workloads/pod_group.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

namespace {

using Keys = std::vector<std::string>;

// The Run a Pod's controller ownerReference names ("namespace/name"), for the index "owner-run".
Keys OwnerRunIndex(const k8s::Pod& p) {
  const std::string run = OwnerRunName(p.meta);
  return run.empty() ? Keys{} : Keys{k8s::ObjectKey(p.meta.ns, run)};
}

}  // namespace

NamedIndexes<k8s::Pod> RunPodIndexes() {
  return {
      {"run", [](const k8s::Pod& p) { return Keys{k8s::ObjectKey(p.meta.ns, p.meta.Label(kRunLabel))}; }},
      {"node", [](const k8s::Pod& p) { return p.node_name.empty() ? Keys{} : Keys{p.node_name}; }},
      // Pods claiming a run through their ownerReference only (issue 44: strays, StraysOf).
      {"owner-run", OwnerRunIndex},
      // Pods the kubelet still counts (Holds), so a pass never lists the Pods of finished runs.
      {"held", [](const k8s::Pod& p) { return !p.node_name.empty() && KubeletCountsPod(p) ? Keys{"held"} : Keys{}; }},
  };
}

NamedIndexes<k8s::Pod> OtherPodIndexes() {
  return {
      {"owner-run", OwnerRunIndex},
      // Issue 45: a ticket's pinned Pods ("ns/ticket"), and the Pods of each workload ("Kind:ns/name").
      {"ticket",
       [](const k8s::Pod& p) {
         const std::string t = p.meta.Label(workloads::kTicketLabel);
         return t.empty() ? Keys{} : Keys{k8s::ObjectKey(p.meta.ns, t)};
       }},
      // The pinned Pods on each node (a preemption's victim ticket whose Pods still stop there).
      {"ticket-node",
       [](const k8s::Pod& p) {
         return p.node_name.empty() || p.meta.Label(workloads::kTicketLabel).empty() ? Keys{} : Keys{p.node_name};
       }},
      {"workload",
       [](const k8s::Pod& p) {
         Keys keys;
         for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
           const workloads::PodOwner o = kind->WorkloadOfPod(p);
           if (!o.name.empty()) keys.push_back(WorkloadIndexKey(*kind, p.meta.ns, o.name));
         }
         return keys;
       }},
  };
}

NamedIndexes<k8s::Pod> TicketPodIndexes() {
  return {{"ticket", [](const k8s::Pod& p) { return Keys{k8s::ObjectKey(p.meta.ns, p.meta.Label(workloads::kTicketLabel))}; }}};
}

NamedIndexes<k8s::GroupPod> GroupPodIndexes() {
  return {{"group", [](const k8s::GroupPod& p) {
             return Keys{k8s::ObjectKey(p.pod.meta.ns, p.pod.meta.Label(workloads::kPodGroupLabel))};
           }}};
}

}  // namespace berth::reconcilers
