#include "reconcilers/objects/pod_group_tickets.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "api/v1alpha1/codec.h"
#include "k8s/timefmt.h"
#include "k8s/workload_objects.h"
#include "reconcilers/state/engine_caches.h"
#include "reconcilers/writers/ticket_writes.h"

// The engine's edge of Pod workloads (pod_group_tickets.h): the informers' handlers and the
// ticket sync, which read the live caches (EngineCaches) and so link the informers.

namespace berth::reconcilers {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;
using pod_tickets::Finished;
using pod_tickets::KindOf;
using pod_tickets::Raw;

void WatchPodWorkloads(EngineCaches& caches, const std::function<void(const std::string&)>& touch,
                       const std::function<void()>& wake) {
  auto handler = [&caches, touch, wake](const std::string&, const auto& old, const auto& cur) {
    const auto& p = cur ? cur : old;
    if (p) {
      if (auto id = workloads::PodWorkloadOf(*p, caches.live().QueuesAll(p->pod.meta.ns))) {
        touch(k8s::ObjectKey(p->pod.meta.ns, workloads::PodTicketName(*id)));
      }
    }
    wake();
  };
  caches.group_pods().AddHandler(handler);
  caches.queued_pods().AddHandler(handler);
}

PodTicketSync::PodTicketSync(k8s::ClientPtr client, const EngineCaches& caches, DispatchFn dispatch)
    : client_(std::move(client)), caches_(caches), dispatch_(std::move(dispatch)) {
  caches_.group_pods().AddHandler([this](const std::string&, const auto&, const auto&) { dirty_ = true; });
  caches_.queued_pods().AddHandler([this](const std::string&, const auto&, const auto&) { dirty_ = true; });
  caches_.namespaces().AddHandler([this](const std::string&, const auto&, const auto&) { dirty_ = true; });
  caches_.fleets().AddHandler([this](const std::string&, const auto&, const auto&) { dirty_ = true; });
  caches_.runs().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    const auto& r = cur ? cur : old;
    if (!r || !r->spec.workload_ref || !workloads::IsPodKind(r->spec.workload_ref->kind)) return;
    if (!old || !cur || old->spec != cur->spec || old->meta.annotations != cur->meta.annotations ||
        old->status.phase != cur->status.phase) {
      dirty_ = true;
    }
  });
}

void PodTicketSync::Dispatch(const std::string& key, std::function<bool()> write) {
  if (!dispatch_("ticket:" + key, std::move(write))) dirty_ = true;
}

void PodTicketSync::Pass() {
  if (!caches_.group_pods().HasSynced() || !caches_.queued_pods().HasSynced() || !caches_.runs().HasSynced() ||
      !caches_.namespaces().HasSynced()) {
    return;
  }
  if (!dirty_.exchange(false)) return;
  std::map<std::string, Entry> entries;  // by ticket key
  for (auto* informer : {&caches_.group_pods(), &caches_.queued_pods()}) {
    for (const auto& p : informer->List()) {
      const std::string& ns = p->pod.meta.ns;
      auto id = workloads::PodWorkloadOf(*p, caches_.live().QueuesAll(ns));
      if (!id) continue;
      Entry& e = entries[k8s::ObjectKey(ns, workloads::PodTicketName(*id))];
      e.ns = ns;
      e.id = *id;
      e.pods.push_back(p);
    }
  }
  for (const auto& [key, e] : entries) Sync(e);
  // A ticket none of whose Pods is left goes, unless it ended (the record stays).
  for (const auto& run : caches_.runs().List()) {
    if (!run->spec.workload_ref || !workloads::IsPodKind(run->spec.workload_ref->kind) || run->meta.deleting) continue;
    if (entries.count(RunKey(*run)) || api::IsTerminalPhase(run->status.phase)) continue;
    DeleteTicket(*run, "none of its Pods is left");
  }
}

void PodTicketSync::DeleteTicket(const Run& ticket, const std::string& why) {
  const std::string key = RunKey(ticket);
  Dispatch(key, [this, key, why, ns = ticket.meta.ns, name = ticket.meta.name, uid = ticket.meta.uid] {
    k8s::DeleteOptions o;
    o.precondition_uid = uid;
    k8s::Status s = client_->Delete(kRuns.Path(ns, name), o);
    if (s.ok() || s.IsNotFound() || s.IsConflict()) {
      spdlog::info("ticket {}: deleted, {}", key, why);
      return true;
    }
    return false;
  });
}

void PodTicketSync::SyncEnded(const Entry& e, const Run& ticket) {
  const k8s::TimePoint ended = ticket.status.finished_at ? ticket.status.finished_at->point() : ticket.meta.created;
  std::vector<std::shared_ptr<const k8s::GroupPod>> leftovers;
  for (const auto& p : e.pods) {
    if (Finished(p->pod) || p->pod.meta.deleting) continue;
    // A Pod pinned to this ticket is of the group that ended: ending it stopped it (RunWrites).
    if (p->pod.meta.Label(workloads::kTicketLabel) == ticket.meta.name) continue;
    // One made after the ticket ended is of a new group of that name, queued on a new ticket.
    // (Times are in seconds: a gated Pod made in the second the ticket ended counts as left over.)
    if (p->pod.meta.created > ended) {
      return DeleteTicket(ticket, "it ended (" + k8s::FormatRfc3339(ended) + ") and a new " + e.id.kind + " " + e.id.name +
                                      " was made (Pod " + p->pod.meta.name + ", " + k8s::FormatRfc3339(p->pod.meta.created) + ")");
    }
    leftovers.push_back(p);
  }
  if (leftovers.empty()) return;
  const std::string key = RunKey(ticket);
  Dispatch(key, [this, key, leftovers] {
    bool ok = true;
    for (const auto& p : leftovers) {
      k8s::DeleteOptions o;
      o.precondition_uid = p->pod.meta.uid;
      k8s::Status s = client_->Delete(kPods.Path(p->pod.meta.ns, p->pod.meta.name), o);
      if (!s.ok() && !s.IsNotFound() && !s.IsConflict()) {
        spdlog::warn("ticket {}: could not delete Pod {}: {}", key, p->pod.meta.name, s.ToString());
        ok = false;
        continue;
      }
      spdlog::info("ticket {}: Pod {} deleted, its {} ended", key, p->pod.meta.name, "ticket");
    }
    return ok;
  });
}

void PodTicketSync::Sync(const Entry& e) {
  const workloads::WorkloadKind& kind = KindOf(e.id);
  const std::string name = workloads::PodTicketName(e.id);
  const std::string key = k8s::ObjectKey(e.ns, name);
  const workloads::PodGroupState state = workloads::PodGroupOf(e.id, Raw(e.pods));
  const workloads::Workload& w = state.workload;
  auto fleet = caches_.fleets().Get(w.meta.Label(workloads::kFleetLabel));  // the GPUs in the resource it names
  workloads::TicketSpec want = workloads::TicketSpecOf(kind, w, fleet ? fleet->spec.gpu_resource : "nvidia.com/gpu");
  if (want.problem.empty()) want.problem = state.problem;
  auto ticket = caches_.runs().Get(key);
  if (!ticket) {
    if (w.finished || state.live == 0) return;  // nothing left to queue
    k8s::ObjectMeta meta;
    meta.ns = e.ns;
    meta.name = name;
    if (!want.problem.empty()) meta.annotations[kLabelProblemAnnotation] = want.problem;
    meta.annotations[kSubmittedByAnnotation] = SubmitterOf(w.meta);  // its workload's creator (issue 47)
    // A single Pod owns its ticket; a group has no one owner (an empty uid: no ownerReference).
    const k8s::OwnerRef owner = e.id.kind == "Pod" ? k8s::OwnerRef{"v1", "Pod", w.meta.name, w.meta.uid, false} : k8s::OwnerRef{};
    std::string body = api::EncodeTicket(meta, owner, want.spec);
    Dispatch(key, [this, key, ns = e.ns, body = std::move(body)] {
      auto r = client_->Create(kRuns.Path(ns), body);
      if (r.ok() || r.status().IsAlreadyExists()) return true;
      spdlog::warn("ticket {}: not created: {}", key, r.status().ToString());
      return false;
    });
    return;
  }
  if (ticket->meta.deleting) return;
  const auto& ref = ticket->spec.workload_ref;
  if (!ref || ref->kind != e.id.kind || ref->name != e.id.name) return;  // not this workload's ticket
  if (e.id.kind == "Pod" && ref->uid != w.meta.uid) {
    // Another Pod of that name: the old Pod's ticket goes (its ownerReference does that too).
    if (api::IsTerminalPhase(ticket->status.phase)) DeleteTicket(*ticket, "its Pod was replaced");
    return;
  }
  if (api::IsTerminalPhase(ticket->status.phase)) return SyncEnded(e, *ticket);
  // The spec back to the first Pod's labels (the workloadRef stays: a group's is the ticket's own).
  api::RunSpec next = ticket->spec;
  const api::RunSpec& s = want.spec;
  auto keep_if_problem = [&](const char* what) { return want.problem.find(what) != std::string::npos; };
  if (!keep_if_problem(workloads::kPriorityLabel)) next.priority = s.priority;
  if (!keep_if_problem(workloads::kPodGroupSizeAnnotation)) next.nodes = s.nodes;
  next.cpu_milli = s.cpu_milli;
  next.memory_bytes = s.memory_bytes;
  next.gpus = s.gpus;
  next.fleets = s.fleets;
  if (!keep_if_problem(workloads::kMaxDurationAnnotation)) next.max_duration = s.max_duration;
  if (!keep_if_problem(workloads::kWholeInstancesLabel)) next.whole_instances = s.whole_instances;
  workloads::PutTopology(want, next);
  next.retry = s.retry;
  if (next == ticket->spec && ticket->meta.Annotation(kLabelProblemAnnotation) == want.problem) return;
  std::string patch = api::TicketSpecPatch(next, {{kLabelProblemAnnotation, want.problem}}, ticket->meta.resource_version);
  Dispatch(key, [this, key, ns = e.ns, name, patch = std::move(patch)] {
    auto r = client_->MergePatch(kRuns.Path(ns, name), patch);
    if (r.ok() || r.status().IsNotFound() || r.status().IsConflict()) return true;
    spdlog::warn("ticket {}: spec not written: {}", key, r.status().ToString());
    return false;
  });
}

}  // namespace berth::reconcilers
