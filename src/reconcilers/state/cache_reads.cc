#include "reconcilers/state/cache_reads.h"

#include <algorithm>

#include "reconcilers/writers/pod_builder.h"
#include "reconcilers/objects/pod_group_tickets.h"
#include "workloads/job.h"

namespace berth::reconcilers {

// Whether the kubelet still counts this Pod against its node when it admits another one. Kubelets
// 1.35-1.37 count every Pod that is not terminal until its pod worker has finished terminating it
// (pkg/kubelet: isPodInactive): a Pod being deleted counts even when none of its containers runs
// (an image that could not be pulled) until the kubelet writes its terminal phase or it is gone.
// (Kubelet 1.20 let such a Pod go at once; a run placed on its blocks then was refused OutOfcpu.)
bool KubeletCountsPod(const k8s::Pod& p) { return !IsTerminalPod(p); }

std::string WorkloadIndexKey(const workloads::WorkloadKind& kind, const std::string& ns, const std::string& name) {
  return std::string(kind.Kind()) + ":" + k8s::ObjectKey(ns, name);
}

size_t WorkloadKindIndex(const workloads::WorkloadKind& kind) {
  const auto& kinds = workloads::ObjectKinds();
  return static_cast<size_t>(std::find(kinds.begin(), kinds.end(), &kind) - kinds.begin());
}

const k8s::Source<workloads::Workload>& CacheReads::workloads(const workloads::WorkloadKind& kind) const {
  return *s_.workloads.at(WorkloadKindIndex(kind));
}

namespace {

// Whether the standing placement of ticket `ticket` (of the Pod's namespace) has the Pod's node.
bool TicketPlacementHolds(const k8s::Pod& p, const std::string& ticket,
                          const std::unordered_map<std::string_view, const Run*>& runs) {
  auto it = runs.find(k8s::ObjectKey(p.meta.ns, ticket));
  if (it == runs.end() || !IsPlacedPhase(it->second->status.phase) || it->second->meta.deleting) return false;
  const auto& placement = it->second->status.placement;
  return std::any_of(placement.begin(), placement.end(), [&](const PlacementEntry& e) { return e.node == p.node_name; });
}

}  // namespace

std::shared_ptr<const workloads::Workload> CacheReads::WorkloadOf(const Run& ticket) const {
  const auto& ref = ticket.spec.workload_ref;
  if (ref && workloads::IsPodKind(ref->kind)) return PodWorkloadOf(*this, ticket);  // pod_group_tickets.h
  const workloads::WorkloadKind* kind = ref ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return nullptr;
  auto w = workloads(*kind).Get(k8s::ObjectKey(ticket.meta.ns, ref->name));
  return w && w->meta.uid == ref->uid ? w : nullptr;
}

std::vector<std::shared_ptr<const k8s::Pod>> CacheReads::PinnedPodsOf(const Run& ticket) const {
  std::vector<std::shared_ptr<const k8s::Pod>> out;
  const auto& ref = ticket.spec.workload_ref;
  if (ref && workloads::IsPodKind(ref->kind)) {  // no controller: its own labels say (pod_group_tickets.h)
    for (auto& p : others().ByIndex("ticket", RunKey(ticket))) {
      if (IsPodOfPodWorkload(p->meta, ticket)) out.push_back(p);
    }
    return out;
  }
  const workloads::WorkloadKind* kind = ref ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return out;
  for (auto& p : others().ByIndex("ticket", RunKey(ticket))) {
    if (kind->WorkloadOfPod(*p).uid == ref->uid) out.push_back(p);
  }
  return out;
}

size_t CacheReads::UnpinnedPodsOf(const Run& ticket) const {
  const auto& ref = ticket.spec.workload_ref;
  if (ref && workloads::IsPodKind(ref->kind)) return UnpinnedPodsOfPodWorkload(*this, ticket);
  const workloads::WorkloadKind* kind = ref ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return 0;
  size_t n = 0;
  for (auto& p : others().ByIndex("workload", WorkloadIndexKey(*kind, ticket.meta.ns, ref->name))) {
    if (kind->WorkloadOfPod(*p).uid != ref->uid) continue;
    if (p->node_name.empty() && !p->meta.deleting && p->meta.Label(workloads::kRankLabel).empty()) ++n;
  }
  return n;
}

std::vector<std::shared_ptr<const k8s::Pod>> CacheReads::WorkloadPodsOf(const Run& ticket) const {
  std::vector<std::shared_ptr<const k8s::Pod>> out;
  const auto& ref = ticket.spec.workload_ref;
  const workloads::WorkloadKind* kind = ref && !workloads::IsPodKind(ref->kind) ? workloads::KindOf(ref->kind) : nullptr;
  if (kind == nullptr) return out;
  for (auto& p : others().ByIndex("workload", WorkloadIndexKey(*kind, ticket.meta.ns, ref->name))) {
    if (kind->WorkloadOfPod(*p).uid == ref->uid) out.push_back(p);
  }
  return out;
}

bool CacheReads::JobPodsShowDone(const Run& ticket, const workloads::Workload& job, int64_t& succeeded) const {
  succeeded = 0;
  const auto& ref = ticket.spec.workload_ref;
  if (!ref || workloads::KindOf(ref->kind) != &workloads::Jobs()) return false;
  std::vector<workloads::PinnedJobPod> pods;
  for (const auto& p : ticket_pods().ByIndex("ticket", RunKey(ticket))) {
    if (workloads::Jobs().WorkloadOfPod(*p).uid != ref->uid) continue;
    pods.push_back(workloads::PinnedJobPod{p->phase, p->meta.Label(workloads::kCompletionIndexLabel)});
    succeeded += p->phase == "Succeeded" ? 1 : 0;
  }
  return workloads::PodsShowJobDone(job, pods, UnpinnedPodsOf(ticket));
}

bool CacheReads::QueuesAll(const std::string& ns) const {
  auto n = namespaces().Get(ns);
  if (!n) return false;
  auto it = n->labels.find(workloads::kQueueAllLabel);
  return it != n->labels.end() && it->second == "true";
}

std::vector<std::shared_ptr<const k8s::Pod>> CacheReads::PodsOf(const Run& run) const {
  if (api::IsTicket(run)) return PinnedPodsOf(run);
  std::vector<std::shared_ptr<const k8s::Pod>> out;
  for (auto& p : pods().ByIndex("run", RunKey(run))) {
    if (IsRunsPod(*p, &run)) out.push_back(p);
  }
  return out;
}

std::vector<PodRef> CacheReads::PodsToStop(const Run& run) const {
  std::vector<PodRef> out;
  for (const auto& p : PodsOf(run)) {
    if (!IsTerminalPod(*p) && !p->meta.deleting) out.push_back(RefOf(*p));
  }
  return out;
}

std::vector<NodeHold> CacheReads::Holds(const std::unordered_map<std::string_view, const Run*>& runs) const {
  std::vector<NodeHold> holds;
  for (const auto& p : others().List()) {
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
  for (const auto& p : pods().ByIndex("held", "held")) {
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

std::vector<PodRef> CacheReads::StraysOf(const Run& run) const {
  std::vector<PodRef> out;
  std::vector<std::string> seen;
  const std::string key = RunKey(run);
  auto consider = [&](const std::shared_ptr<const k8s::Pod>& p) {
    if (p->meta.deleting || !IsStrayPodOf(*p, run)) return;
    if (std::find(seen.begin(), seen.end(), p->meta.uid) != seen.end()) return;
    seen.push_back(p->meta.uid);
    out.push_back(RefOf(*p));
  };
  for (const auto& p : pods().ByIndex("run", key)) consider(p);
  for (const auto& p : pods().ByIndex("owner-run", key)) consider(p);
  for (const auto& p : others().ByIndex("owner-run", key)) consider(p);
  return out;
}

int64_t CacheReads::GraceCapOf(const std::string& node) const {
  auto n = node.empty() ? nullptr : nodes().Get(node);
  std::optional<int64_t> cap;
  for (const auto& f : fleets().List()) {
    if (n && !f->Selects(n->meta.labels)) continue;
    const int64_t c = GraceCapSeconds(f->spec.max_grace_period);
    cap = cap ? std::min(*cap, c) : c;
  }
  return cap.value_or(kDefaultGraceCapSeconds);
}

std::optional<PriorityCap> CacheReads::CapOf(const std::string& ns) const {
  auto n = namespaces().Get(ns);
  if (!n) return DefaultPriorityCap(s_.default_max_priority);
  return ParsePriorityCap(n->labels, s_.default_max_priority);
}

int32_t CacheReads::QueuePriority(const Run& run) const {
  const auto priority = static_cast<int32_t>(run.spec.priority);
  auto cap = CapOf(run.meta.ns);
  return cap ? std::min(priority, cap->cap) : priority;
}

bool CacheReads::QuotaPending(std::string_view ns, const std::vector<PlacementEntry>& placement) const {
  // Some of the Pods are not in the cache yet (see PlacedRun::quota_pending).
  std::string key;
  for (const auto& p : placement) {
    if (p.pod.empty()) return true;
    key.assign(ns);
    if (!ns.empty()) key += '/';
    key += p.pod;
    if (!pods().Get(key)) return true;
  }
  return false;
}

bool CacheReads::TicketQuotaPending(const Run& ticket, const std::vector<PlacementEntry>* placement) const {
  const size_t entries = (placement != nullptr ? *placement : ticket.status.placement).size();
  const auto& ref = ticket.spec.workload_ref;
  // Pods and Pod groups: their pinned Pods and those still gated; Jobs and JobSets: every live
  // Pod of the workload (others() holds no finished Pod: the quota no longer counts those).
  const size_t live = ref && workloads::IsPodKind(ref->kind) ? PinnedPodsOf(ticket).size() + UnpinnedPodsOf(ticket)
                                                             : WorkloadPodsOf(ticket).size();
  return live < entries;
}

std::map<std::string, int64_t> CacheReads::QuotaCountedOf(const Run& ticket) const {
  return QuotaCountedOfPodWorkload(*this, ticket);  // empty but for a Pod or Pod group
}

}  // namespace berth::reconcilers
