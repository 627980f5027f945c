#include "workloads/job.h"

namespace berth::workloads {

const k8s::Resource& JobKind::Resource() const {
  static const k8s::Resource kJobs{"batch", "v1", "jobs", true};
  return kJobs;
}

std::shared_ptr<const Workload> JobKind::Decode(const k8s::json::Value& obj) const {
  auto j = k8s::DecodeJob(obj);
  if (!j) return nullptr;
  auto w = WorkloadFrom(*j, "Job");
  const k8s::OwnerRef* owner = j->meta.ControllerRef();
  w->part_of_other = owner != nullptr && owner->kind == "JobSet";
  return w;
}

PodOwner JobKind::WorkloadOfPod(const k8s::Pod& pod) const {
  const k8s::OwnerRef* o = pod.meta.ControllerRef();
  if (o == nullptr || o->kind != "Job" || pod.meta.labels.count("jobset.sigs.k8s.io/jobset-name") > 0) return {};
  return PodOwner{o->name, o->uid};
}

std::string JobKind::PodSelector(const std::string&, const std::string& uid) const {
  return "batch.kubernetes.io/controller-uid=" + uid;
}

const JobKind& Jobs() {
  static const JobKind kind;
  return kind;
}

}  // namespace berth::workloads
