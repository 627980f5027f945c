#include "reconcilers/objects/pod_group_tickets.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "api/v1alpha1/codec.h"
#include "k8s/timefmt.h"
#include "k8s/workload_objects.h"
#include "reconcilers/state/cache_reads.h"
#include "reconcilers/writers/ticket_writes.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

namespace json = k8s::json;
using k8s::resources::kPods;
using k8s::resources::kRuns;

namespace pod_tickets {

const workloads::WorkloadKind& KindOf(const workloads::PodWorkloadId& id) {
  return id.kind == "PodGroup" ? static_cast<const workloads::WorkloadKind&>(workloads::PodGroups())
                               : static_cast<const workloads::WorkloadKind&>(workloads::SinglePods());
}

std::vector<const k8s::GroupPod*> Raw(const std::vector<std::shared_ptr<const k8s::GroupPod>>& pods) {
  std::vector<const k8s::GroupPod*> out;
  for (const auto& p : pods) out.push_back(p.get());
  return out;
}

bool Finished(const k8s::Pod& p) { return p.phase == "Succeeded" || p.phase == "Failed"; }

}  // namespace pod_tickets

using pod_tickets::Finished;
using pod_tickets::KindOf;
using pod_tickets::Raw;

namespace {

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

}  // namespace berth::reconcilers
