#include "reconcilers/objects/tickets.h"

#include <spdlog/spdlog.h>

#include "api/v1alpha1/codec.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;


TicketSync::TicketSync(k8s::ClientPtr client, const EngineCaches& caches, DispatchFn dispatch)
    : client_(client), caches_(caches), dispatch_(dispatch), pod_workloads_(client, caches, dispatch) {
  changes_.all = true;
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    caches_.workloads(*kind).AddHandler([this, kind](const std::string& key, const auto&, const auto&) { MarkWorkload(kind, key); });
  }
  caches_.namespaces().AddHandler([this](const std::string&, const auto&, const auto&) { MarkAll(); });
  caches_.fleets().AddHandler([this](const std::string&, const auto&, const auto&) { MarkAll(); });
  caches_.runs().AddHandler([this](const std::string& key, const auto& old, const auto& cur) {
    const auto& r = cur ? cur : old;
    if (!r || !api::IsTicket(*r)) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      created_.erase(key);  // the cache shows it now (or its deletion)
    }
    if (old && cur && old->spec == cur->spec && old->meta.annotations == cur->meta.annotations) return;
    MarkTicket(key);
    if (const workloads::WorkloadKind* kind = workloads::KindOf(r->spec.workload_ref->kind)) {
      MarkWorkload(kind, k8s::ObjectKey(r->meta.ns, r->spec.workload_ref->name));
    }
  });
}

void TicketSync::MarkAll() {
  std::lock_guard<std::mutex> lock(mu_);
  changes_.all = true;
}

void TicketSync::MarkWorkload(const workloads::WorkloadKind* kind, const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!changes_.all) changes_.workloads.emplace(kind, key);
}

void TicketSync::MarkTicket(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!changes_.all) changes_.tickets.insert(key);
}

void TicketSync::Dispatch(const std::string& key, std::function<bool()> write, std::function<void()> redo) {
  if (!dispatch_("ticket:" + key, std::move(write))) redo();
}

void TicketSync::Pass() {
  pod_workloads_.Pass();  // pod_group_tickets.h
  if (!caches_.runs().HasSynced() || !caches_.namespaces().HasSynced()) return;
  for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
    if (!caches_.workloads(*kind).HasSynced()) return;
  }
  Changes changes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(changes, changes_);
  }
  auto sync = [&](const workloads::WorkloadKind& kind, const workloads::Workload& w) {
    if (w.meta.deleting || w.finished) return;
    if (!workloads::IsQueued(w.meta, caches_.live().QueuesAll(w.meta.ns))) return;
    if (w.part_of_other && PartOfQueuedWorkload(w)) return;
    SyncWorkload(kind, w);
  };
  if (changes.all) {
    for (const workloads::WorkloadKind* kind : workloads::ObjectKinds()) {
      for (const auto& w : caches_.workloads(*kind).List()) sync(*kind, *w);
    }
    for (const auto& run : caches_.runs().List()) DeleteIfOrphan(*run);
    return;
  }
  for (const auto& [kind, key] : changes.workloads) {
    if (auto w = caches_.workloads(*kind).Get(key)) sync(*kind, *w);
    // Its ticket, whether the workload is still there or not.
    const size_t slash = key.find('/');
    changes.tickets.insert(k8s::ObjectKey(key.substr(0, slash), workloads::TicketName(kind->TicketPrefix(), key.substr(slash + 1))));
  }
  for (const std::string& key : changes.tickets) {
    if (auto run = caches_.runs().Get(key)) DeleteIfOrphan(*run);
  }
}

bool TicketSync::PartOfQueuedWorkload(const workloads::Workload& w) const {
  const k8s::OwnerRef* owner = w.meta.ControllerRef();
  const workloads::WorkloadKind* kind = owner != nullptr ? workloads::KindOf(owner->kind) : nullptr;
  if (kind == nullptr) return true;
  auto parent = caches_.workloads(*kind).Get(k8s::ObjectKey(w.meta.ns, owner->name));
  // Not (yet) in the cache, or another object of that name: left alone. Its Pods are gated (the
  // Job policy), and the garbage collector deletes a Job whose owner does not exist.
  if (!parent || parent->meta.uid != owner->uid) return true;
  return workloads::IsQueued(parent->meta, caches_.live().QueuesAll(parent->meta.ns));
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
  const workloads::WorkloadKind* kind_ptr = &kind;
  const std::string workload_key = k8s::ObjectKey(job.meta.ns, job.meta.name);
  auto redo = [this, kind_ptr, workload_key] { MarkWorkload(kind_ptr, workload_key); };
  if (!ticket) {
    CreateTicket(kind, job, name, want, redo);
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
  workloads::PutTopology(want, next);
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
  }, redo);
}

void TicketSync::CreateTicket(const workloads::WorkloadKind& kind, const workloads::Workload& job, const std::string& name,
                              const workloads::TicketSpec& want, std::function<void()> redo) {
  const std::string key = k8s::ObjectKey(job.meta.ns, name);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (created_.count(key) != 0) return;  // created; the runs cache shows it soon
  }
  k8s::ObjectMeta meta;
  meta.ns = job.meta.ns;
  meta.name = name;
  if (!want.problem.empty()) meta.annotations[kLabelProblemAnnotation] = want.problem;
  meta.annotations[kSubmittedByAnnotation] = SubmitterOf(job.meta);  // its workload's creator (issue 47)
  const k8s::OwnerRef owner{std::string(kind.ApiVersion()), std::string(kind.Kind()), job.meta.name, job.meta.uid, false};
  std::string body = api::EncodeTicket(meta, owner, want.spec);
  Dispatch(key, [this, key, body = std::move(body)] {
    auto r = client_->Create(kRuns.Path(key.substr(0, key.find('/'))), body);
    if (r.ok() || r.status().IsAlreadyExists()) {
      // Unless the cache has shown it already (its handler ran before this line).
      std::lock_guard<std::mutex> lock(mu_);
      if (!caches_.runs().Get(key)) created_.insert(key);
      return true;
    }
    spdlog::warn("ticket {}: not created: {}", key, r.status().ToString());
    return false;
  }, std::move(redo));
}

void TicketSync::DeleteIfOrphan(const Run& run) {
  // Only tickets of object kinds: the workload is gone when the cache no longer has it.
  if (!api::IsTicket(run) || run.meta.deleting || !workloads::KindOf(run.spec.workload_ref->kind)) return;
  if (caches_.live().WorkloadOf(run)) return;
  const std::string key = RunKey(run);
  Dispatch(key, [this, key, ns = run.meta.ns, name = run.meta.name, uid = run.meta.uid] {
    k8s::DeleteOptions o;
    o.precondition_uid = uid;
    k8s::Status s = client_->Delete(kRuns.Path(ns, name), o);
    if (s.ok() || s.IsNotFound() || s.IsConflict()) {
      spdlog::info("ticket {}: deleted, its workload is gone", key);
      return true;
    }
    return false;
  }, [this, key] { MarkTicket(key); });
}

}  // namespace berth::reconcilers
