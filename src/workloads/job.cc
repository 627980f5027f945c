#include "workloads/job.h"

#include <set>

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

bool PodsShowJobDone(const Workload& job, const std::vector<PinnedJobPod>& pods, size_t unpinned_live) {
  if (unpinned_live > 0) return false;
  std::set<int64_t> indices;
  int64_t succeeded = 0;
  for (const PinnedJobPod& p : pods) {
    if (p.phase != "Succeeded") return false;  // live, or Failed
    ++succeeded;
    const std::string& ix = p.completion_index;
    if (!ix.empty() && ix.size() < 10 && ix.find_first_not_of("0123456789") == std::string::npos) indices.insert(std::stoll(ix));
  }
  if (!job.completions) return !job.indexed && succeeded >= 1;  // an Indexed Job always has completions
  const int64_t want = *job.completions;
  if (want < 1) return false;  // completions 0: the Job controller completes it without a Pod
  if (!job.indexed) return succeeded >= want;
  for (int64_t i = 0; i < want; ++i) {
    if (indices.count(i) == 0) return false;
  }
  return true;
}

const JobKind& Jobs() {
  static const JobKind kind;
  return kind;
}

}  // namespace berth::workloads
