#include "reconcilers/objects/pod_group_tickets.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "api/v1alpha1/codec.h"
#include "k8s/timefmt.h"
#include "k8s/workload_objects.h"
#include "reconcilers/state/engine_caches.h"
#include "reconcilers/writers/ticket_writes.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;

namespace {

const workloads::WorkloadKind& KindOf(const workloads::PodWorkloadId& id) {
  return id.kind == "PodGroup" ? static_cast<const workloads::WorkloadKind&>(workloads::PodGroups())
                               : static_cast<const workloads::WorkloadKind&>(workloads::SinglePods());
}

// The cached Pods of workload `id` in `ns` (finished ones too).
std::vector<std::shared_ptr<const k8s::GroupPod>> PodsOfId(const CacheReads& caches, const std::string& ns,
                                                           const workloads::PodWorkloadId& id) {
  std::vector<std::shared_ptr<const k8s::GroupPod>> out;
  const bool all = caches.QueuesAll(ns);
  auto take = [&](const std::shared_ptr<const k8s::GroupPod>& p) {
    if (p && workloads::PodWorkloadOf(*p, all) == id) out.push_back(p);
  };
  if (id.kind == "PodGroup") {
    for (const auto& p : caches.group_pods().ByIndex("group", k8s::ObjectKey(ns, id.name))) take(p);
  } else {
    take(caches.queued_pods().Get(k8s::ObjectKey(ns, id.name)));
  }
  return out;
}

std::vector<const k8s::GroupPod*> Raw(const std::vector<std::shared_ptr<const k8s::GroupPod>>& pods) {
  std::vector<const k8s::GroupPod*> out;
  for (const auto& p : pods) out.push_back(p.get());
  return out;
}

bool Finished(const k8s::Pod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

}  // namespace

std::optional<workloads::PodGroupState> PodWorkloadStateOf(const CacheReads& caches, const Run& ticket) {
  const auto& ref = ticket.spec.workload_ref;
  if (!ref || !workloads::IsPodKind(ref->kind)) return std::nullopt;
  const workloads::PodWorkloadId id{ref->kind, ref->name};
  auto pods = PodsOfId(caches, ticket.meta.ns, id);
  if (pods.empty()) return std::nullopt;
  workloads::PodGroupState s = workloads::PodGroupOf(id, Raw(pods));
  if (id.kind == "Pod" && s.workload.meta.uid != ref->uid) return std::nullopt;  // another Pod of that name
  return s;
}

std::shared_ptr<const workloads::Workload> PodWorkloadOf(const CacheReads& caches, const Run& ticket) {
  auto s = PodWorkloadStateOf(caches, ticket);
  return s ? std::make_shared<const workloads::Workload>(std::move(s->workload)) : nullptr;
}

bool IsPodOfPodWorkload(const k8s::ObjectMeta& pod, const Run& ticket) {
  const auto& ref = ticket.spec.workload_ref;
  if (!ref) return false;
  if (ref->kind == "PodGroup") return pod.Label(workloads::kPodGroupLabel) == ref->name;
  return ref->kind == "Pod" && pod.name == ref->name && pod.uid == ref->uid;
}

size_t UnpinnedPodsOfPodWorkload(const CacheReads& caches, const Run& ticket) {
  const auto& ref = ticket.spec.workload_ref;
  if (!ref) return 0;
  size_t n = 0;
  for (const auto& p : PodsOfId(caches, ticket.meta.ns, {ref->kind, ref->name})) {
    if (p->gated && p->pod.node_name.empty() && !p->pod.meta.deleting && !Finished(p->pod) &&
        p->pod.meta.Label(workloads::kRankLabel).empty()) {
      ++n;
    }
  }
  return n;
}

std::map<std::string, int64_t> QuotaCountedOfPodWorkload(const CacheReads& caches, const Run& ticket) {
  std::map<std::string, int64_t> out;
  const auto& ref = ticket.spec.workload_ref;
  if (!ref || !workloads::IsPodKind(ref->kind)) return out;
  for (const auto& p : PodsOfId(caches, ticket.meta.ns, {ref->kind, ref->name})) {
    if (Finished(p->pod)) continue;  // the quota no longer counts it
    const k8s::PodRequests& r = p->pod.requests;
    out[scheduling::kQuotaPods] += 1;
    if (r.cpu_milli > 0) out[scheduling::kQuotaCpu] += r.cpu_milli;
    if (r.memory_bytes > 0) out[scheduling::kQuotaMemory] += r.memory_bytes;
    for (const auto& [resource, amount] : r.extended) {
      if (amount > 0) out["requests." + resource] += amount;
    }
  }
  return out;
}

bool PinPodWorkload(k8s::Client& client, const Run& ticket) {
  const auto& ref = ticket.spec.workload_ref;
  if (!ref || ticket.status.placement.empty()) return true;
  const std::string& ns = ticket.meta.ns;
  // The workload's Pods, fresh from the API (a rank is never given twice).
  std::vector<json::Document> pods;
  if (ref->kind == "PodGroup") {
    k8s::ListOptions opts;
    opts.label_selector = std::string(workloads::kPodGroupLabel) + "=" + ref->name;
    auto l = client.List(kPods.Path(ns), opts);
    if (!l.ok()) return false;
    pods = std::move(l->items);
  } else {
    auto pod = client.Get(kPods.Path(ns, ref->name));
    if (!pod.ok()) return pod.status().IsNotFound();
    pods.push_back(std::move(*pod));
  }
  std::set<int> taken;
  std::vector<std::pair<std::string, const json::Value*>> waiting;  // by name: the same order every time
  for (const auto& p : pods) {
    auto meta = k8s::DecodeGroupPod(p, workloads::kAdmissionGate);
    if (!meta || !IsPodOfPodWorkload(meta->pod.meta, ticket)) continue;
    const k8s::WorkloadPodView v = k8s::DecodeWorkloadPod(p, workloads::kAdmissionGate);
    if (!v.rank.empty() && v.ticket == ticket.meta.name) {
      if (!v.done && v.rank.size() < 6 && v.rank.find_first_not_of("0123456789") == std::string::npos) taken.insert(std::stoi(v.rank));
      continue;
    }
    if (!v.deleting && !v.done && v.gated) waiting.emplace_back(v.name, &p);
  }
  std::sort(waiting.begin(), waiting.end());
  bool ok = true;
  size_t next = 0;
  for (const auto& e : ticket.status.placement) {
    if (next >= waiting.size()) break;
    if (taken.count(e.rank)) continue;
    const auto& [name, pod] = waiting[next++];
    auto r = client.MergePatch(kPods.Path(ns, name),
                               k8s::PinPodPatch(*pod, workloads::PinOf(ticket.meta.name, e.rank, e.node, ticket.status.fleet)));
    if (!r.ok()) {
      spdlog::warn("ticket {}/{}: could not pin Pod {} to rank {} on {}: {}", ns, ticket.meta.name, name, e.rank, e.node,
                   r.status().ToString());
      ok = false;
      continue;
    }
    spdlog::info("ticket {}/{}: Pod {} pinned to rank {} on {}", ns, ticket.meta.name, name, e.rank, e.node);
  }
  return ok;
}

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
