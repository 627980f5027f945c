#include "reconcilers/run_reconciler.h"

#include <spdlog/spdlog.h>

#include "k8s/timefmt.h"

namespace berth::reconcilers {

std::unique_ptr<RunInformer> NewRunInformer(k8s::ClientPtr client) {
  return std::make_unique<RunInformer>(
      std::move(client), k8s::resources::kRuns.Path(), DecodeRun,
      [](const Run& r) { return k8s::ObjectKey(r.meta.ns, r.meta.name); }, "runs");
}

RunReconciler::RunReconciler(k8s::ClientPtr client, const RunInformer& runs, const k8s::Clock& clock)
    : client_(std::move(client)), runs_(runs), clock_(clock) {}

k8s::Status RunReconciler::Reconcile(const std::string& key) {
  auto run = runs_.Get(key);
  if (!run || run->meta.deleting) return k8s::Status();
  const RunStatus& cur = run->status;

  std::string phase = cur.phase.empty() ? "Pending" : cur.phase;
  std::string submitted = cur.submitted_at.empty() ? k8s::FormatRfc3339(run->meta.created) : cur.submitted_at;
  int64_t effective = run->priority;
  if (cur.phase == phase && cur.observed_generation == run->meta.generation && cur.effective_priority == effective &&
      cur.submitted_at == submitted) {
    return k8s::Status();
  }
  std::string body = R"({"status":{"phase":)" + k8s::json::Quote(phase) +
                     R"(,"observedGeneration":)" + std::to_string(run->meta.generation) +
                     R"(,"effectivePriority":)" + std::to_string(effective) +
                     R"(,"submittedAt":)" + k8s::json::Quote(submitted) + "}}";
  auto r = client_->MergePatch(k8s::resources::kRuns.Path(run->meta.ns, run->meta.name, "status"), body);
  if (!r.ok()) {
    if (r.status().IsNotFound()) return k8s::Status();
    return r.status();
  }
  spdlog::debug("run {} status: phase={} effectivePriority={} observedGeneration={}", key, phase, effective,
                run->meta.generation);
  return k8s::Status();
}

}  // namespace berth::reconcilers
