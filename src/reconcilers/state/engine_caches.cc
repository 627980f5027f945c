#include "reconcilers/state/engine_caches.h"

#include <algorithm>

#include "k8s/workload_objects.h"
#include "reconcilers/writers/pod_builder.h"
#include "reconcilers/objects/pod_group_tickets.h"
#include "workloads/job.h"

namespace berth::reconcilers {

using k8s::resources::kFleets;
using k8s::resources::kPods;
using k8s::resources::kRuns;

// Whether the kubelet still counts this Pod against its node when it admits another one. Kubelets
// 1.35-1.37 count every Pod that is not terminal until its pod worker has finished terminating it
// (pkg/kubelet: isPodInactive): a Pod being deleted counts even when none of its containers runs
// (an image that could not be pulled) until the kubelet writes its terminal phase or it is gone.
// (Kubelet 1.20 let such a Pod go at once; a run placed on its blocks then was refused OutOfcpu.)
bool KubeletCountsPod(const k8s::Pod& p) { return !IsTerminalPod(p); }

namespace {

// A Pod as the engine keeps it: of its labels and annotations only berth's (the run, rank and
// attempt labels, the blocks annotation) and those that say a workload's (workloads::kPodLabelsKept);
// a template's own may be large and berth reads none of them.
// Of its ownerReferences only the controller (issue 44: a tenant's long lists cost nothing).
// A Job's Pod waiting on berth's gate keeps what pinning it needs (k8s::PinSource), so that the
// pin comes from this cache (TicketWrites::Release), not from a LIST per Job.
std::shared_ptr<const k8s::Pod> DecodeCachedPod(const k8s::json::Value& obj) {
  auto pod = k8s::DecodePodKeeping(
      obj, k8s::MetaKeep{.label_prefix = "berth.dev/", .also_label_prefix = workloads::kPodLabelsKept, .only_needed = true});
  if (!pod) return pod;
  std::string source = k8s::PinSource(obj, workloads::kAdmissionGate);
  if (source.empty()) return pod;
  auto kept = std::make_shared<k8s::Pod>(*pod);
  kept->pin_source = std::move(source);
  return kept;
}

// The Run a Pod's controller ownerReference names ("namespace/name"), for the index "owner-run".
std::vector<std::string> OwnerRunIndex(const k8s::Pod& p) {
  const std::string run = OwnerRunName(p.meta);
  return run.empty() ? std::vector<std::string>{} : std::vector<std::string>{k8s::ObjectKey(p.meta.ns, run)};
}

std::string WorkloadIndexKey(const workloads::WorkloadKind& kind, const std::string& ns, const std::string& name) {
  return std::string(kind.Kind()) + ":" + k8s::ObjectKey(ns, name);
}

size_t KindIndex(const workloads::WorkloadKind& kind) {
  const auto& kinds = workloads::ObjectKinds();
  return static_cast<size_t>(std::find(kinds.begin(), kinds.end(), &kind) - kinds.begin());
}

// Whether the standing placement of ticket `ticket` (of the Pod's namespace) has the Pod's node.
bool TicketPlacementHolds(const k8s::Pod& p, const std::string& ticket,
                          const std::unordered_map<std::string_view, const Run*>& runs) {
  auto it = runs.find(k8s::ObjectKey(p.meta.ns, ticket));
  if (it == runs.end() || !IsPlacedPhase(it->second->status.phase) || it->second->meta.deleting) return false;
  const auto& placement = it->second->status.placement;
  return std::any_of(placement.begin(), placement.end(), [&](const PlacementEntry& e) { return e.node == p.node_name; });
}

}  // namespace

void EngineCaches::MakePodInformers(const k8s::ClientPtr& client) {
  pods_ = std::make_unique<k8s::Informer<k8s::Pod>>(
      client, kPods.Path(), DecodeCachedPod, [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); },
      "pods");
  pods_->SetLabelSelector(kRunLabel);  // only berth's pods
  pods_->AddIndex("run", [](const k8s::Pod& p) {
    return std::vector<std::string>{k8s::ObjectKey(p.meta.ns, p.meta.Label(kRunLabel))};
  });
  pods_->AddIndex("node", [](const k8s::Pod& p) {
    return p.node_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{p.node_name};
  });
  others_ = std::make_unique<k8s::Informer<k8s::Pod>>(
      client, kPods.Path(), DecodeCachedPod, [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); },
      "other-pods");
  others_->SetLabelSelector(std::string("!") + kRunLabel);
  // Pods claiming a run through their ownerReference only (issue 44: strays, StraysOf).
  pods_->AddIndex("owner-run", OwnerRunIndex);
  others_->AddIndex("owner-run", OwnerRunIndex);
  others_->SetFieldSelector("status.phase!=Succeeded,status.phase!=Failed");
  // Issue 45: a ticket's pinned Pods ("ns/ticket"), and the Pods of each workload ("Kind:ns/name").
  others_->AddIndex("ticket", [](const k8s::Pod& p) {
    const std::string t = p.meta.Label(workloads::kTicketLabel);
    return t.empty() ? std::vector<std::string>{} : std::vector<std::string>{k8s::ObjectKey(p.meta.ns, t)};
  });
  // The pinned Pods on each node (a preemption's victim ticket whose Pods still stop there).
  others_->AddIndex("ticket-node", [](const k8s::Pod& p) {
    return p.node_name.empty() || p.meta.Label(workloads::kTicketLabel).empty() ? std::vector<std::string>{}
                                                                                : std::vector<std::string>{p.node_name};
  });
  others_->AddIndex("workload", [](const k8s::Pod& p) {
    std::vector<std::string> keys;
    for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
      const workloads::PodOwner o = kind->WorkloadOfPod(p);
      if (!o.name.empty()) keys.push_back(WorkloadIndexKey(*kind, p.meta.ns, o.name));
    }
    return keys;
  });
  // Pods berth pinned for tickets, in every phase: of their labels berth's and a Job's completion
  // index (workloads::PodsShowJobDone).
  ticket_pods_ = std::make_unique<k8s::Informer<k8s::Pod>>(
      client, kPods.Path(),
      [](const k8s::json::Value& obj) {
        return k8s::DecodePodKeeping(obj, k8s::MetaKeep{.label_prefix = "berth.dev/",
                                                        .also_label_prefix = workloads::kCompletionIndexLabel,
                                                        .only_needed = true});
      },
      [](const k8s::Pod& p) { return k8s::ObjectKey(p.meta.ns, p.meta.name); }, "ticket-pods");
  ticket_pods_->SetLabelSelector(workloads::kTicketLabel);
  ticket_pods_->AddIndex("ticket", [](const k8s::Pod& p) {
    return std::vector<std::string>{k8s::ObjectKey(p.meta.ns, p.meta.Label(workloads::kTicketLabel))};
  });
  // Pods the kubelet still counts (Holds), so a pass never lists the Pods of finished runs.
  pods_->AddIndex("held", [](const k8s::Pod& p) {
    return !p.node_name.empty() && KubeletCountsPod(p) ? std::vector<std::string>{"held"} : std::vector<std::string>{};
  });
}

k8s::Informer<workloads::Workload>& EngineCaches::workloads(const workloads::WorkloadKind& kind) const {
  return *workloads_.at(KindIndex(kind));
}

std::shared_ptr<const workloads::Workload> EngineCaches::WorkloadOf(const Run& ticket) const {
  const auto& ref = ticket.spec.workload_ref;
  if (ref && workloads::IsPodKind(ref->kind)) return PodWorkloadOf(*this, ticket);  // pod_group_tickets.h
  const workloads::WorkloadKind* kind = ref ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return nullptr;
  auto w = workloads(*kind).Get(k8s::ObjectKey(ticket.meta.ns, ref->name));
  return w && w->meta.uid == ref->uid ? w : nullptr;
}

std::vector<std::shared_ptr<const k8s::Pod>> EngineCaches::PinnedPodsOf(const Run& ticket) const {
  std::vector<std::shared_ptr<const k8s::Pod>> out;
  const auto& ref = ticket.spec.workload_ref;
  if (ref && workloads::IsPodKind(ref->kind)) {  // no controller: its own labels say (pod_group_tickets.h)
    for (auto& p : others_->ByIndex("ticket", RunKey(ticket))) {
      if (IsPodOfPodWorkload(p->meta, ticket)) out.push_back(p);
    }
    return out;
  }
  const workloads::WorkloadKind* kind = ref ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return out;
  for (auto& p : others_->ByIndex("ticket", RunKey(ticket))) {
    if (kind->WorkloadOfPod(*p).uid == ref->uid) out.push_back(p);
  }
  return out;
}

size_t EngineCaches::UnpinnedPodsOf(const Run& ticket) const {
  const auto& ref = ticket.spec.workload_ref;
  if (ref && workloads::IsPodKind(ref->kind)) return UnpinnedPodsOfPodWorkload(*this, ticket);
  const workloads::WorkloadKind* kind = ref ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return 0;
  size_t n = 0;
  for (auto& p : others_->ByIndex("workload", WorkloadIndexKey(*kind, ticket.meta.ns, ref->name))) {
    if (kind->WorkloadOfPod(*p).uid != ref->uid) continue;
    if (p->node_name.empty() && !p->meta.deleting && p->meta.Label(workloads::kRankLabel).empty()) ++n;
  }
  return n;
}

std::vector<std::shared_ptr<const k8s::Pod>> EngineCaches::WorkloadPodsOf(const Run& ticket) const {
  std::vector<std::shared_ptr<const k8s::Pod>> out;
  const auto& ref = ticket.spec.workload_ref;
  const workloads::WorkloadKind* kind = ref && !workloads::IsPodKind(ref->kind) ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return out;
  for (auto& p : others_->ByIndex("workload", WorkloadIndexKey(*kind, ticket.meta.ns, ref->name))) {
    if (kind->WorkloadOfPod(*p).uid == ref->uid) out.push_back(p);
  }
  return out;
}

bool EngineCaches::JobPodsShowDone(const Run& ticket, const workloads::Workload& job, int64_t& succeeded) const {
  succeeded = 0;
  const auto& ref = ticket.spec.workload_ref;
  if (!ref || workloads::KindOf(ref->kind) != &workloads::Jobs()) return false;
  std::vector<workloads::PinnedJobPod> pods;
  for (const auto& p : ticket_pods_->ByIndex("ticket", RunKey(ticket))) {
    if (workloads::Jobs().WorkloadOfPod(*p).uid != ref->uid) continue;
    pods.push_back(workloads::PinnedJobPod{p->phase, p->meta.Label(workloads::kCompletionIndexLabel)});
    succeeded += p->phase == "Succeeded" ? 1 : 0;
  }
  return workloads::PodsShowJobDone(job, pods, UnpinnedPodsOf(ticket));
}

bool EngineCaches::QueuesAll(const std::string& ns) const {
  auto n = namespaces_->Get(ns);
  if (!n) return false;
  auto it = n->labels.find(workloads::kQueueAllLabel);
  return it != n->labels.end() && it->second == "true";
}

std::vector<std::shared_ptr<const k8s::Pod>> EngineCaches::PodsOf(const Run& run) const {
  if (api::IsTicket(run)) return PinnedPodsOf(run);
  std::vector<std::shared_ptr<const k8s::Pod>> out;
  for (auto& p : pods_->ByIndex("run", RunKey(run))) {
    if (IsRunsPod(*p, &run)) out.push_back(p);
  }
  return out;
}

std::vector<PodRef> EngineCaches::PodsToStop(const Run& run) const {
  std::vector<PodRef> out;
  for (const auto& p : PodsOf(run)) {
    if (!IsTerminalPod(*p) && !p->meta.deleting) out.push_back(RefOf(*p));
  }
  return out;
}

std::vector<NodeHold> EngineCaches::Holds(const std::unordered_map<std::string_view, const Run*>& runs) const {
  std::vector<NodeHold> holds;
  for (const auto& p : others_->List()) {
    if (p->node_name.empty() || !KubeletCountsPod(*p)) continue;
    // A ticket's pinned Pod counts through its ticket's placement while that stands (issue 45),
    // as berth's own Pods do below; otherwise (the ticket ended or went back to the queue while
    // the Pod stops: a Job suspended by a preemption, a stop or maxDuration, a Pod group deleted)
    // it holds the blocks its requests cover, charged to its namespace and team as a Run's
    // stopping Pod is, until the kubelet has finished it (blocks 0: by its requests alone).
    std::optional<int32_t> blocks;
    if (auto t = p->meta.labels.find(workloads::kTicketLabel); t != p->meta.labels.end()) {
      if (TicketPlacementHolds(*p, t->second, runs)) continue;
      if (!p->meta.Label(workloads::kRankLabel).empty()) blocks = 0;  // pinned by berth
    }
    holds.push_back(NodeHold{p->node_name, k8s::ObjectKey(p->meta.ns, p->meta.name), p->requests, blocks});
  }
  // berth's Pods count through their run's placement while that placement stands. Any other bound
  // Pod labelled berth.dev/run that the kubelet has not finished counts until it is gone, whatever
  // became of its Run (issue 44): with a berth.dev/blocks annotation of at least 1 it holds the
  // larger of those blocks and what its requests cover (berth's Pod of a run that ended, was
  // retried or deleted, its finalizer removed by anyone, keeps the blocks it was given while it
  // stops); without one its requests come off the node like any other Pod's (a 1m-CPU Pod does not
  // hold a whole instance, an annotation "0" does not make a Pod with requests count as nothing).
  // A Pod is a run's only when berth made it (IsRunsPod: its uid is in the run's status).
  std::string run_key, attempt;  // reused: no allocation per Pod
  for (const auto& p : pods_->ByIndex("held", "held")) {
    if (p->node_name.empty() || !KubeletCountsPod(*p)) continue;
    auto label = p->meta.labels.find(kRunLabel);
    run_key.assign(p->meta.ns);
    if (!p->meta.ns.empty()) run_key += '/';
    if (label != p->meta.labels.end()) run_key += label->second;
    auto it = runs.find(run_key);
    // (A Pod berth made whose uid it has not recorded yet, MayBeRunsUnrecordedPod, is the
    // placement's for the moment until the status write: counting it twice would make runs that
    // do not wait for capacity fail meanwhile.)
    if (it != runs.end() && (IsRunsPod(*p, it->second) || MayBeRunsUnrecordedPod(*p, *it->second))) {
      const Run& run = *it->second;
      auto pod_attempt = p->meta.labels.find(kAttemptLabel);
      attempt = std::to_string(run.status.resubmissions);  // short: no allocation
      bool current = IsPlacedPhase(run.status.phase) && !run.meta.deleting &&
                     pod_attempt != p->meta.labels.end() && pod_attempt->second == attempt;
      if (current && std::any_of(run.status.placement.begin(), run.status.placement.end(),
                                 [&](const PlacementEntry& e) { return e.pod == p->meta.name && e.node == p->node_name; })) {
        continue;
      }
    }
    int32_t blocks = 0;
    const std::string ann = p->meta.Annotation(kBlocksAnnotation);
    if (!ann.empty() && ann.size() < 7 && ann.find_first_not_of("0123456789") == std::string::npos) blocks = std::stoi(ann);
    // Without blocks to say (no annotation, "0", not a number) it is an ordinary Pod: its
    // requests come off the node.
    holds.push_back(NodeHold{p->node_name, k8s::ObjectKey(p->meta.ns, p->meta.name), p->requests,
                             blocks > 0 ? std::optional<int32_t>(blocks) : std::nullopt});
  }
  return holds;
}

std::vector<PodRef> EngineCaches::StraysOf(const Run& run) const {
  std::vector<PodRef> out;
  std::vector<std::string> seen;
  const std::string key = RunKey(run);
  auto consider = [&](const std::shared_ptr<const k8s::Pod>& p) {
    if (p->meta.deleting || !IsStrayPodOf(*p, run)) return;
    if (std::find(seen.begin(), seen.end(), p->meta.uid) != seen.end()) return;
    seen.push_back(p->meta.uid);
    out.push_back(RefOf(*p));
  };
  for (const auto& p : pods_->ByIndex("run", key)) consider(p);
  for (const auto& p : pods_->ByIndex("owner-run", key)) consider(p);
  for (const auto& p : others_->ByIndex("owner-run", key)) consider(p);
  return out;
}

int64_t EngineCaches::GraceCapOf(const std::string& node) const {
  auto n = node.empty() ? nullptr : nodes_->Get(node);
  std::optional<int64_t> cap;
  for (const auto& f : fleets_->List()) {
    if (n && !f->Selects(n->meta.labels)) continue;
    const int64_t c = GraceCapSeconds(f->spec.max_grace_period);
    cap = cap ? std::min(*cap, c) : c;
  }
  return cap.value_or(kDefaultGraceCapSeconds);
}

std::optional<PriorityCap> EngineCaches::CapOf(const std::string& ns) const {
  auto n = namespaces_->Get(ns);
  if (!n) return DefaultPriorityCap(default_max_priority_);
  return ParsePriorityCap(n->labels, default_max_priority_);
}

bool EngineCaches::CachedCapOf(const std::string& ns, std::optional<PriorityCap>& cap) const {
  if (!namespaces_->HasSynced()) return false;
  auto n = namespaces_->Get(ns);
  if (!n) return false;
  cap = ParsePriorityCap(n->labels, default_max_priority_);
  return true;
}

int32_t EngineCaches::QueuePriority(const Run& run) const {
  const auto priority = static_cast<int32_t>(run.spec.priority);
  auto cap = CapOf(run.meta.ns);
  return cap ? std::min(priority, cap->cap) : priority;
}

bool EngineCaches::QuotaPending(std::string_view ns, const std::vector<PlacementEntry>& placement) const {
  // Some of the Pods are not in the cache yet (see PlacedRun::quota_pending).
  std::string key;
  for (const auto& p : placement) {
    if (p.pod.empty()) return true;
    key.assign(ns);
    if (!ns.empty()) key += '/';
    key += p.pod;
    if (!pods_->Get(key)) return true;
  }
  return false;
}

bool EngineCaches::TicketQuotaPending(const Run& ticket, const std::vector<PlacementEntry>* placement) const {
  const size_t entries = (placement != nullptr ? *placement : ticket.status.placement).size();
  const auto& ref = ticket.spec.workload_ref;
  // Pods and Pod groups: their pinned Pods and those still gated; Jobs and JobSets: every live
  // Pod of the workload (others() holds no finished Pod: the quota no longer counts those).
  const size_t live = ref && workloads::IsPodKind(ref->kind) ? PinnedPodsOf(ticket).size() + UnpinnedPodsOf(ticket)
                                                             : WorkloadPodsOf(ticket).size();
  return live < entries;
}

std::map<std::string, int64_t> EngineCaches::QuotaCountedOf(const Run& ticket) const {
  return QuotaCountedOfPodWorkload(*this, ticket);  // empty but for a Pod or Pod group
}

EngineCaches::EngineCaches(const k8s::ClientPtr& client) {
  runs_ = std::make_unique<k8s::Informer<Run>>(client, kRuns.Path(), DecodeRun, [](const Run& r) { return RunKey(r); },
                                               "runs");
  fleets_ = std::make_unique<k8s::Informer<Fleet>>(client, kFleets.Path(), DecodeFleet,
                                                   [](const Fleet& f) { return f.meta.name; }, "fleets");
  nodes_ = std::make_unique<k8s::Informer<k8s::Node>>(client, k8s::resources::kNodes.Path(), k8s::DecodeNode,
                                                      [](const k8s::Node& n) { return n.meta.name; }, "nodes");
  MakePodInformers(client);
  namespaces_ = std::make_unique<k8s::Informer<NamespaceInfo>>(
      client, k8s::resources::kNamespaces.Path(), DecodeNamespace, [](const NamespaceInfo& n) { return n.name; },
      "namespaces");
  resource_quotas_ = std::make_unique<k8s::Informer<ResourceQuotaInfo>>(
      client, "/api/v1/resourcequotas", DecodeResourceQuota,
      [](const ResourceQuotaInfo& q) { return k8s::ObjectKey(q.ns, q.name); }, "resourcequotas");
  teams_ = std::make_unique<k8s::Informer<Team>>(client, k8s::resources::kTeams.Path(), DecodeTeam,
                                                 [](const Team& t) { return t.meta.name; }, "teams");
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    workloads_.push_back(std::make_unique<k8s::Informer<workloads::Workload>>(
        client, kind->Resource().Path(), [kind](const k8s::json::Value& v) { return kind->Decode(v); },
        [](const workloads::Workload& w) { return k8s::ObjectKey(w.meta.ns, w.meta.name); },
        std::string(kind->Resource().plural)));
  }
  auto decode_group_pod = [](const k8s::json::Value& v) { return k8s::DecodeGroupPod(v, workloads::kAdmissionGate); };
  auto group_pod_key = [](const k8s::GroupPod& p) { return k8s::ObjectKey(p.pod.meta.ns, p.pod.meta.name); };
  group_pods_ = std::make_unique<k8s::Informer<k8s::GroupPod>>(client, kPods.Path(), decode_group_pod, group_pod_key, "group-pods");
  group_pods_->SetLabelSelector(workloads::kPodGroupLabel);
  group_pods_->AddIndex("group", [](const k8s::GroupPod& p) {
    return std::vector<std::string>{k8s::ObjectKey(p.pod.meta.ns, p.pod.meta.Label(workloads::kPodGroupLabel))};
  });
  queued_pods_ = std::make_unique<k8s::Informer<k8s::GroupPod>>(client, kPods.Path(), decode_group_pod, group_pod_key, "queued-pods");
  queued_pods_->SetLabelSelector(std::string(workloads::kQueueLabel) + "=true,!" + workloads::kPodGroupLabel);
}

void EngineCaches::Start() {
  runs_->Start();
  fleets_->Start();
  nodes_->Start();
  pods_->Start();
  others_->Start();
  namespaces_->Start();
  resource_quotas_->Start();
  teams_->SetAbsentIsEmpty(true);  // a cluster whose Team CRD is not applied yet has no Teams
  teams_->Start();
  // A kind whose CRD is not applied (JobSets without the JobSet controller) has no workloads.
  for (auto& w : workloads_) w->SetAbsentIsEmpty(true);
  for (auto& w : workloads_) w->Start();
  group_pods_->Start();
  queued_pods_->Start();
  ticket_pods_->Start();
}

void EngineCaches::Stop() {
  runs_->Stop();
  fleets_->Stop();
  nodes_->Stop();
  pods_->Stop();
  others_->Stop();
  namespaces_->Stop();
  resource_quotas_->Stop();
  teams_->Stop();
  for (auto& w : workloads_) w->Stop();
  group_pods_->Stop();
  queued_pods_->Stop();
  ticket_pods_->Stop();
}

void EngineCaches::OnSynced(const std::function<void()>& h) {
  runs_->SetSyncedHandler(h);
  fleets_->SetSyncedHandler(h);
  nodes_->SetSyncedHandler(h);
  pods_->SetSyncedHandler(h);
  others_->SetSyncedHandler(h);
  namespaces_->SetSyncedHandler(h);
  resource_quotas_->SetSyncedHandler(h);
  teams_->SetSyncedHandler(h);
  for (auto& w : workloads_) w->SetSyncedHandler(h);
  group_pods_->SetSyncedHandler(h);
  queued_pods_->SetSyncedHandler(h);
  ticket_pods_->SetSyncedHandler(h);
}

bool EngineCaches::HasSynced() const {
  return runs_->HasSynced() && fleets_->HasSynced() && nodes_->HasSynced() && pods_->HasSynced() &&
         others_->HasSynced() && namespaces_->HasSynced() && resource_quotas_->HasSynced() &&
         teams_->HasSynced() && group_pods_->HasSynced() && queued_pods_->HasSynced() && ticket_pods_->HasSynced() &&
         std::all_of(workloads_.begin(), workloads_.end(), [](const auto& w) { return w->HasSynced(); });
}

}  // namespace berth::reconcilers
