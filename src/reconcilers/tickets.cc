#include "reconcilers/tickets.h"

#include <spdlog/spdlog.h>

#include "api/v1alpha1/codec.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;


TicketSync::TicketSync(k8s::ClientPtr client, const EngineCaches& caches, DispatchFn dispatch)
    : client_(client), caches_(caches), dispatch_(dispatch), pod_workloads_(client, caches, dispatch) {
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    caches_.workloads(*kind).AddHandler([this](const std::string&, const auto&, const auto&) { dirty_ = true; });
  }
  caches_.namespaces().AddHandler([this](const std::string&, const auto&, const auto&) { dirty_ = true; });
  caches_.fleets().AddHandler([this](const std::string&, const auto&, const auto&) { dirty_ = true; });
  caches_.runs().AddHandler([this](const std::string&, const auto& old, const auto& cur) {
    const auto& r = cur ? cur : old;
    if (!r || !api::IsTicket(*r)) return;
    if (!old || !cur || old->spec != cur->spec || old->meta.annotations != cur->meta.annotations) dirty_ = true;
  });
}

void TicketSync::Dispatch(const std::string& key, std::function<bool()> write) {
  // A write refused (one of the key's is queued or in flight) is decided again on a later pass.
  if (!dispatch_("ticket:" + key, std::move(write))) dirty_ = true;
}

void TicketSync::Pass() {
  pod_workloads_.Pass();  // pod_group_tickets.h
  if (!caches_.runs().HasSynced() || !caches_.namespaces().HasSynced()) return;
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    if (!caches_.workloads(*kind).HasSynced()) return;
  }
  if (!dirty_.exchange(false)) return;
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    for (const auto& w : caches_.workloads(*kind).List()) {
      if (w->meta.deleting || w->finished || w->part_of_other) continue;
      if (!workloads::IsQueued(w->meta, caches_.QueuesAll(w->meta.ns))) continue;
      SyncWorkload(*kind, *w);
    }
  }
  DeleteOrphans();
}

void TicketSync::SyncWorkload(const workloads::WorkloadKind& kind, const workloads::Workload& job) {
  const std::string name = workloads::TicketName(kind.TicketPrefix(), job.meta.name);
  const std::string key = k8s::ObjectKey(job.meta.ns, name);
  // The GPUs a Pod asks for, in the resource its fleet names (the default when it names none).
  std::string gpu_resource = "nvidia.com/gpu";
  if (const std::string fleet = job.meta.Label(workloads::kFleetLabel); !fleet.empty()) {
    if (auto f = caches_.fleets().Get(fleet)) gpu_resource = f->spec.gpu_resource;
  }
  workloads::TicketSpec want = workloads::TicketSpecOf(kind, job, gpu_resource);
  auto ticket = caches_.runs().Get(key);
  if (!ticket) {
    k8s::ObjectMeta meta;
    meta.ns = job.meta.ns;
    meta.name = name;
    if (!want.problem.empty()) meta.annotations[kLabelProblemAnnotation] = want.problem;
    const k8s::OwnerRef owner{std::string(kind.ApiVersion()), std::string(kind.Kind()), job.meta.name, job.meta.uid, false};
    std::string body = api::EncodeTicket(meta, owner, want.spec);
    Dispatch(key, [this, key, body = std::move(body)] {
      auto r = client_->Create(kRuns.Path(key.substr(0, key.find('/'))), body);
      if (r.ok() || r.status().IsAlreadyExists()) return true;
      spdlog::warn("ticket {}: not created: {}", key, r.status().ToString());
      return false;
    });
    return;
  }
  if (ticket->meta.deleting) return;
  if (!ticket->spec.workload_ref || ticket->spec.workload_ref->uid != job.meta.uid) return;  // DeleteOrphans
  // Put the spec back to the labels (the fields a label decides; a bad label keeps the ticket's value).
  api::RunSpec next = ticket->spec;
  const api::RunSpec& w = want.spec;
  auto keep_if_problem = [&](const char* what) { return want.problem.find(what) != std::string::npos; };
  if (!keep_if_problem(workloads::kPriorityLabel)) next.priority = w.priority;
  next.nodes = w.nodes;
  next.cpu_milli = w.cpu_milli;
  next.memory_bytes = w.memory_bytes;
  next.gpus = w.gpus;
  next.fleets = w.fleets;
  if (!keep_if_problem(workloads::kMaxDurationAnnotation)) next.max_duration = w.max_duration;
  if (!keep_if_problem(workloads::kWholeInstancesLabel)) next.whole_instances = w.whole_instances;
  next.retry = w.retry;
  next.workload_ref = w.workload_ref;
  const std::string had_problem = ticket->meta.Annotation(kLabelProblemAnnotation);
  if (next == ticket->spec && had_problem == want.problem) return;
  std::string patch = api::TicketSpecPatch(next, {{kLabelProblemAnnotation, want.problem}}, ticket->meta.resource_version);
  Dispatch(key, [this, key, ns = job.meta.ns, name, patch = std::move(patch)] {
    auto r = client_->MergePatch(kRuns.Path(ns, name), patch);
    if (r.ok() || r.status().IsNotFound() || r.status().IsConflict()) return true;  // a conflict: decided again
    spdlog::warn("ticket {}: spec not written: {}", key, r.status().ToString());
    return false;
  });
}

void TicketSync::DeleteOrphans() {
  for (const auto& run : caches_.runs().List()) {
    // Only tickets of object kinds: the workload is gone when the cache no longer has it.
    if (!api::IsTicket(*run) || run->meta.deleting || !workloads::KindOf(run->spec.workload_ref->kind)) continue;
    if (caches_.WorkloadOf(*run)) continue;
    const std::string key = RunKey(*run);
    Dispatch(key, [this, key, ns = run->meta.ns, name = run->meta.name, uid = run->meta.uid] {
      k8s::DeleteOptions o;
      o.precondition_uid = uid;
      k8s::Status s = client_->Delete(kRuns.Path(ns, name), o);
      if (s.ok() || s.IsNotFound() || s.IsConflict()) {
        spdlog::info("ticket {}: deleted, its workload is gone", key);
        return true;
      }
      return false;
    });
  }
}

}  // namespace berth::reconcilers
