#include "reconcilers/state/snapshot.h"

#include "reconcilers/state/cache_indexes.h"

namespace berth::reconcilers {

namespace {
std::string PodKey(const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }
}  // namespace

void PassSnapshot::Fill(const Objects& o) {
  const uint64_t v = runs_.Version() + 1;
  runs_.Fill(o.runs, [](const Run& r) { return RunKey(r); }, {}, v);
  fleets_.Fill(o.fleets, [](const Fleet& f) { return f.meta.name; }, {}, v);
  nodes_.Fill(o.nodes, [](const k8s::Node& n) { return n.meta.name; }, {}, v);
  pods_.Fill(o.pods, PodKey, RunPodIndexes(), v);
  others_.Fill(o.others, PodKey, OtherPodIndexes(), v);
  namespaces_.Fill(o.namespaces, [](const NamespaceInfo& n) { return n.name; }, {}, v);
  quotas_.Fill(o.quotas, [](const ResourceQuotaInfo& q) { return k8s::ObjectKey(q.ns, q.name); }, {}, v);
  teams_.Fill(o.teams, [](const Team& t) { return t.meta.name; }, {}, v);
}

PassSnapshot::PassSnapshot() : CacheReads(CacheSources{}) {
  for (size_t i = 0; i < workloads::ObjectKinds().size(); ++i) {
    workloads_.push_back(std::make_unique<k8s::Store<workloads::Workload>>());
  }
  CacheSources& s = sources();
  s.runs = &runs_;
  s.fleets = &fleets_;
  s.nodes = &nodes_;
  s.pods = &pods_;
  s.others = &others_;
  s.namespaces = &namespaces_;
  s.quotas = &quotas_;
  s.teams = &teams_;
  for (const auto& w : workloads_) s.workloads.push_back(w.get());
  s.group_pods = &group_pods_;
  s.queued_pods = &queued_pods_;
  s.ticket_pods = &ticket_pods_;
  s.resource_slices = &resource_slices_;
  s.device_classes = &device_classes_;
  s.resource_claims = &resource_claims_;
}

size_t PassSnapshot::LastApplied() const {
  size_t n = runs_.LastApplied() + fleets_.LastApplied() + nodes_.LastApplied() + pods_.LastApplied() +
             others_.LastApplied() + namespaces_.LastApplied() + quotas_.LastApplied() + teams_.LastApplied() +
             group_pods_.LastApplied() + queued_pods_.LastApplied() + ticket_pods_.LastApplied() +
             resource_slices_.LastApplied() + device_classes_.LastApplied() + resource_claims_.LastApplied();
  for (const auto& w : workloads_) n += w->LastApplied();
  return n;
}

}  // namespace berth::reconcilers
