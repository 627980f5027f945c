#include "reconcilers/ticket_writes.h"

#include <set>

#include <spdlog/spdlog.h>

#include "workloads/job.h"

namespace berth::reconcilers {

namespace json = k8s::json;
using k8s::resources::kPods;

namespace {

const workloads::WorkloadKind* KindOf(const Run& ticket) {
  if (ticket.spec.workload_ref && ticket.spec.workload_ref->kind == "Job") return &workloads::Jobs();
  return nullptr;
}

// The merge patch `patch` with the workload's uid as a precondition.
std::string WithUid(const std::string& patch, const std::string& uid) {
  return R"({"metadata":{"uid":)" + json::Quote(uid) + "}," + patch.substr(1);
}

}  // namespace

bool TicketWrites::Hold(const Run& ticket) {
  const workloads::WorkloadKind* kind = KindOf(ticket);
  if (kind == nullptr) return true;
  const auto& ref = *ticket.spec.workload_ref;
  auto r = client_->MergePatch(kind->Resource().Path(ticket.meta.ns, ref.name), WithUid(kind->HoldPatch(), ref.uid));
  if (r.ok() || r.status().IsNotFound() || r.status().IsConflict()) return true;
  spdlog::warn("ticket {}/{}: could not hold {} {}: {}", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name,
               r.status().ToString());
  return false;
}

bool TicketWrites::Release(const Run& ticket) {
  const workloads::WorkloadKind* kind = KindOf(ticket);
  if (kind == nullptr || ticket.status.placement.empty()) return true;
  const auto& ref = *ticket.spec.workload_ref;
  auto job = client_->Get(kind->Resource().Path(ticket.meta.ns, ref.name));
  if (!job.ok()) return job.status().IsNotFound();
  if (json::GetString(json::Find(*job, {"metadata", "uid"})) != ref.uid) return true;  // another object now
  if (auto w = kind->Decode(*job); w && w->suspended) {
    auto r = client_->MergePatch(kind->Resource().Path(ticket.meta.ns, ref.name), WithUid(kind->ReleasePatch(), ref.uid));
    if (!r.ok()) {
      spdlog::warn("ticket {}/{}: could not release {} {}: {}", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name,
                   r.status().ToString());
      return r.status().IsNotFound();
    }
    spdlog::info("ticket {}/{}: {} {} released", ticket.meta.ns, ticket.meta.name, ref.kind, ref.name);
  }
  // The workload's Pods (the Job controller labels them with its uid), fresh from the API.
  k8s::ListOptions opts;
  opts.label_selector = "batch.kubernetes.io/controller-uid=" + ref.uid;
  auto pods = client_->List(kPods.Path(ticket.meta.ns), opts);
  if (!pods.ok()) return false;
  std::set<int> taken;
  std::vector<const json::Value*> waiting;
  for (const auto& p : pods->items) {
    const json::Value* labels = json::Find(p, {"metadata", "labels"});
    const std::string phase = json::GetString(json::Find(p, {"status", "phase"}));
    const bool deleting = json::Find(p, {"metadata", "deletionTimestamp"}) != nullptr;
    const bool done = phase == "Succeeded" || phase == "Failed";
    const std::string rank = labels ? json::GetString(*labels, workloads::kRankLabel) : "";
    const std::string owner = labels ? json::GetString(*labels, workloads::kTicketLabel) : "";
    if (!rank.empty() && owner == ticket.meta.name) {
      // A live Pod keeps its rank (a stopping one too: its blocks are the rank's until it is gone).
      if (!done && rank.size() < 6 && rank.find_first_not_of("0123456789") == std::string::npos) taken.insert(std::stoi(rank));
      continue;
    }
    if (!deleting && !done && workloads::HasAdmissionGate(p)) waiting.push_back(&p);
  }
  bool ok = true;
  size_t next = 0;
  for (const auto& e : ticket.status.placement) {
    if (next >= waiting.size()) break;
    if (taken.count(e.rank)) continue;
    const json::Value& pod = *waiting[next++];
    const std::string name = json::GetString(json::Find(pod, {"metadata", "name"}));
    auto r = client_->MergePatch(kPods.Path(ticket.meta.ns, name),
                                 workloads::PinPodPatch(pod, ticket.meta.name, e.rank, e.node, ticket.status.fleet));
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
