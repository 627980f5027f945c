#include "reconcilers/ticket_writes.h"

#include <set>

#include <spdlog/spdlog.h>

#include "reconcilers/pod_group_tickets.h"
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
  const auto& ref = *ticket.spec.workload_ref;
  if (unsuspend) {
    // No read first (issue 45, the bench's LIST and GET per Job): the uid precondition refuses
    // another object of that name (409), and releasing a released workload changes nothing.
    auto r = client_->MergePatch(kind->Resource().Path(ticket.meta.ns, ref.name), k8s::WithUidPrecondition(kind->ReleasePatch(), ref.uid));
    if (!r.ok()) {
      if (r.status().IsNotFound() || r.status().IsConflict()) return true;  // gone, or another object of that name now
      spdlog::warn("ticket {}/{}: could not release {} {}: {}", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name,
                   r.status().ToString());
      return false;
    }
    spdlog::info("ticket {}/{}: {} {} released", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name);
  }
  if (!pin) return true;
  // The workload's Pods (its controller labels them with its uid), fresh from the API.
  k8s::ListOptions opts;
  opts.label_selector = kind->PodSelector(ref.name, ref.uid);
  auto pods = client_->List(kPods.Path(ticket.meta.ns), opts);
  if (!pods.ok()) return false;
  std::set<int> taken;
  std::vector<const json::Value*> waiting;
  for (const auto& p : pods->items) {
    const k8s::WorkloadPodView v = k8s::DecodeWorkloadPod(p, workloads::kAdmissionGate);
    if (!v.rank.empty() && v.ticket == ticket.meta.name) {
      // A live Pod keeps its rank (a stopping one too: its blocks are the rank's until it is gone).
      if (!v.done && v.rank.size() < 6 && v.rank.find_first_not_of("0123456789") == std::string::npos) taken.insert(std::stoi(v.rank));
      continue;
    }
    if (!v.deleting && !v.done && v.gated) waiting.push_back(&p);
  }
  bool ok = true;
  size_t next = 0;
  for (const auto& e : ticket.status.placement) {
    if (next >= waiting.size()) break;
    if (taken.count(e.rank)) continue;
    const json::Value& pod = *waiting[next++];
    const std::string name = k8s::DecodeWorkloadPod(pod, workloads::kAdmissionGate).name;
    auto r = client_->MergePatch(kPods.Path(ticket.meta.ns, name),
                                 k8s::PinPodPatch(pod, workloads::PinOf(ticket.meta.name, e.rank, e.node, ticket.status.fleet)));
    if (!r.ok()) {
      spdlog::warn("ticket {}/{}: could not pin Pod {} to rank {} on {}: {}", ticket.meta.ns, ticket.meta.name, name, e.rank,
                   e.node, r.status().ToString());
      ok = false;
      continue;
    }
    spdlog::info("ticket {}/{}: Pod {} pinned to rank {} on {}", ticket.meta.ns, ticket.meta.name, name, e.rank, e.node);
  }
  return ok;
}

}  // namespace berth::reconcilers
