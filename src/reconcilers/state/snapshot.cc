#include "reconcilers/state/snapshot.h"

#include "reconcilers/state/cache_indexes.h"

namespace berth::reconcilers {

namespace {

// A store filled by hand: the objects given, by key, with the informers' indexes.
template <typename T>
class HandStore final : public k8s::Source<T> {
 public:
  using Ptr = std::shared_ptr<const T>;
  HandStore(const std::vector<Ptr>& objects, const std::function<std::string(const T&)>& key,
            const NamedIndexes<T>& indexes, uint64_t version)
      : version_(version) {
    for (const auto& [name, fn] : indexes) items_.AddIndex(name, fn);
    for (const Ptr& o : objects) items_.Put(key(*o), o);
  }
  Ptr Get(const std::string& key) const override { return items_.Get(key); }
  std::vector<Ptr> List() const override { return items_.List(); }
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const override {
    return items_.ByIndex(index, value);
  }
  size_t Size() const override { return items_.Size(); }
  uint64_t Version() const override { return version_; }

 private:
  k8s::IndexedItems<T> items_;
  uint64_t version_;
};

std::string PodKey(const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }

}  // namespace

struct PassSnapshot::ByHand {
  ByHand(const Objects& o, uint64_t v)
      : runs(o.runs, [](const Run& r) { return RunKey(r); }, {}, v),
        fleets(o.fleets, [](const Fleet& f) { return f.meta.name; }, {}, v),
        nodes(o.nodes, [](const k8s::Node& n) { return n.meta.name; }, {}, v),
        pods(o.pods, PodKey, RunPodIndexes(), v),
        others(o.others, PodKey, OtherPodIndexes(), v),
        namespaces(o.namespaces, [](const NamespaceInfo& n) { return n.name; }, {}, v),
        quotas(o.quotas, [](const ResourceQuotaInfo& q) { return k8s::ObjectKey(q.ns, q.name); }, {}, v),
        teams(o.teams, [](const Team& t) { return t.meta.name; }, {}, v) {}
  HandStore<Run> runs;
  HandStore<Fleet> fleets;
  HandStore<k8s::Node> nodes;
  HandStore<k8s::Pod> pods, others;
  HandStore<NamespaceInfo> namespaces;
  HandStore<ResourceQuotaInfo> quotas;
  HandStore<Team> teams;
};

PassSnapshot::~PassSnapshot() = default;

void PassSnapshot::Fill(const Objects& objects) {
  const uint64_t version = by_hand_ ? by_hand_->runs.Version() + 1 : 1;
  auto next = std::make_unique<ByHand>(objects, version);
  CacheSources& s = sources();
  s.runs = &next->runs;
  s.fleets = &next->fleets;
  s.nodes = &next->nodes;
  s.pods = &next->pods;
  s.others = &next->others;
  s.namespaces = &next->namespaces;
  s.quotas = &next->quotas;
  s.teams = &next->teams;
  by_hand_ = std::move(next);
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
