#include "workloads/job.h"

namespace berth::workloads {

const k8s::Resource& JobKind::Resource() const {
  static const k8s::Resource kJobs{"batch", "v1", "jobs", true};
  return kJobs;
}

std::shared_ptr<const Workload> JobKind::Decode(const k8s::json::Value& obj) const {
  auto j = k8s::DecodeJob(obj);
  if (!j) return nullptr;
  auto w = std::make_shared<Workload>();
  w->meta = j->meta;
  w->kind = "Job";
  w->pods = j->pods_at_once;
  w->requests = j->requests;
  w->suspended = j->suspended;
  w->finished = j->finished;
  w->finish_reason = j->finish_reason;
  w->finish_message = j->finish_message;
  return w;
}

const JobKind& Jobs() {
  static const JobKind kind;
  return kind;
}

}  // namespace berth::workloads
