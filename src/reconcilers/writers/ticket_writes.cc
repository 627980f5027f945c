#include "reconcilers/writers/ticket_writes.h"

#include <set>

#include <spdlog/spdlog.h>

#include "k8s/store.h"
#include "reconcilers/objects/pod_group_tickets.h"
#include "workloads/job.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

namespace json = k8s::json;
using k8s::resources::kPods;

namespace {

const workloads::WorkloadKind* KindOf(const Run& ticket) {
  return ticket.spec.workload_ref ? workloads::KindOf(ticket.spec.workload_ref->kind) : nullptr;
}


}  // namespace

bool HeldWorkloadStopsItsPods(const Run& ticket) { return KindOf(ticket) != nullptr; }

bool TicketWrites::Hold(const Run& ticket) {
  const workloads::WorkloadKind* kind = KindOf(ticket);
  if (kind == nullptr) return true;
  const auto& ref = *ticket.spec.workload_ref;
  auto r = client_->MergePatch(kind->Resource().Path(ticket.meta.ns, ref.name), k8s::WithUidPrecondition(kind->HoldPatch(), ref.uid));
  if (!r.ok() && !r.status().IsNotFound() && !r.status().IsConflict()) {
    spdlog::warn("ticket {}/{}: could not hold {} {}: {}", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name,
                 r.status().ToString());
    return false;
  }
  return HoldChildJobs(ticket, *kind);
}

bool TicketWrites::HoldChildJobs(const Run& ticket, const workloads::WorkloadKind& kind) {
  // A JobSet's Jobs are suspended here as well: the JobSet controller would suspend them only
  // later, and the Job controller deletes the Pods of a suspended Job (HeldWorkloadStopsItsPods).
  const std::string selector = kind.ChildJobSelector(ticket.spec.workload_ref->uid);
  if (selector.empty()) return true;
  k8s::ListOptions opts;
  opts.label_selector = selector;
  auto jobs = client_->List(workloads::Jobs().Resource().Path(ticket.meta.ns), opts);
  if (!jobs.ok()) return false;
  bool ok = true;
  for (const auto& item : jobs->items) {
    auto job = k8s::DecodeJob(item);
    if (!job || job->suspended || job->finished) continue;
    auto r = client_->MergePatch(workloads::Jobs().Resource().Path(ticket.meta.ns, job->meta.name),
                                 k8s::WithUidPrecondition(workloads::Jobs().HoldPatch(), job->meta.uid));
    if (!r.ok() && !r.status().IsNotFound() && !r.status().IsConflict()) {
      spdlog::warn("ticket {}/{}: could not hold Job {}: {}", ticket.meta.ns, ticket.meta.name, job->meta.name,
                   r.status().ToString());
      ok = false;
    }
  }
  return ok;
}

bool TicketWrites::Release(const Run& ticket, bool unsuspend, bool pin) {
  // Pods and Pod groups (issue 45 part 3): no object to release, each gated Pod pinned.
  if (ticket.spec.workload_ref && workloads::IsPodKind(ticket.spec.workload_ref->kind)) return !pin || PinPodWorkload(*client_, ticket);
  const workloads::WorkloadKind* kind = KindOf(ticket);
  if (kind == nullptr || ticket.status.placement.empty()) return true;
  if (unsuspend && !Unsuspend(ticket, *kind)) return false;
  return !pin || PinFromCache(ticket);
}

bool TicketWrites::Unsuspend(const Run& ticket, const workloads::WorkloadKind& kind) {
  const auto& ref = *ticket.spec.workload_ref;
  // No read first (issue 45, the bench's LIST and GET per Job): the uid precondition refuses
  // another object of that name (409), and releasing a released workload changes nothing.
  auto r = client_->MergePatch(kind.Resource().Path(ticket.meta.ns, ref.name), k8s::WithUidPrecondition(kind.ReleasePatch(), ref.uid));
  if (!r.ok()) {
    if (r.status().IsNotFound() || r.status().IsConflict()) return true;  // gone, or another object of that name now
    spdlog::warn("ticket {}/{}: could not release {} {}: {}", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name,
                 r.status().ToString());
    return false;
  }
  spdlog::info("ticket {}/{}: {} {} released", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name);
  return true;
}

bool TicketWrites::PinFromCache(const Run& ticket) {
  if (!workload_pods_) return true;
  const std::string key = k8s::ObjectKey(ticket.meta.ns, ticket.meta.name);
  std::set<int> taken;
  std::vector<std::shared_ptr<const k8s::Pod>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string> live;
    for (const auto& p : workload_pods_(ticket)) {
      const std::string pod_key = k8s::ObjectKey(p->meta.ns, p->meta.name);
      live.insert(pod_key);
      const std::string rank = p->meta.Label(workloads::kRankLabel);
      if (!rank.empty()) {
        pinned_.erase(pod_key);  // the cache shows the pin
        // A live Pod keeps its rank (a stopping one too: its blocks are the rank's until it is gone).
        if (p->meta.Label(workloads::kTicketLabel) == ticket.meta.name && rank.size() < 6 &&
            rank.find_first_not_of("0123456789") == std::string::npos) {
          taken.insert(std::stoi(rank));
        }
        continue;
      }
      if (auto it = pinned_.find(pod_key); it != pinned_.end()) {
        if (it->second.first == key) taken.insert(it->second.second);  // sent, not yet seen
        continue;
      }
      if (!p->meta.deleting && !p->pin_source.empty()) waiting.push_back(p);
    }
    // A pinned Pod gone before the cache showed its pin is forgotten.
    std::erase_if(pinned_, [&](const auto& e) { return e.second.first == key && !live.count(e.first); });
  }
  bool ok = true;
  size_t next = 0;
  for (const auto& e : ticket.status.placement) {
    if (next >= waiting.size()) break;
    if (taken.count(e.rank)) continue;
    const k8s::Pod& pod = *waiting[next++];
    const std::string patch =
        k8s::PinPodPatch(pod.pin_source, workloads::PinOf(ticket.meta.name, e.rank, e.node, ticket.status.fleet));
    const k8s::Status r = patch.empty() ? k8s::Status::Error("its cached pin source does not parse")
                                        : client_->MergePatchNoAnswer(kPods.Path(ticket.meta.ns, pod.meta.name), patch);
    // 409: the cache was behind this Pod (or it went); its next version visits the ticket again.
    if (r.IsConflict() || r.IsNotFound()) continue;
    if (!r.ok()) {
      spdlog::warn("ticket {}/{}: could not pin Pod {} to rank {} on {}: {}", ticket.meta.ns, ticket.meta.name,
                   pod.meta.name, e.rank, e.node, r.ToString());
      ok = false;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      pinned_[k8s::ObjectKey(pod.meta.ns, pod.meta.name)] = {key, e.rank};
    }
    spdlog::info("ticket {}/{}: Pod {} pinned to rank {} on {}", ticket.meta.ns, ticket.meta.name, pod.meta.name, e.rank,
                 e.node);
  }
  return ok;
}

}  // namespace berth::reconcilers
