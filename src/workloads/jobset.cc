#include "workloads/jobset.h"

namespace berth::workloads {

namespace {
constexpr const char* kJobSetNameLabel = "jobset.sigs.k8s.io/jobset-name";
constexpr const char* kJobSetUidLabel = "jobset.sigs.k8s.io/jobset-uid";
}  // namespace

const k8s::Resource& JobSetKind::Resource() const {
  static const k8s::Resource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets", true};
  return kJobSets;
}

std::shared_ptr<const Workload> JobSetKind::Decode(const k8s::json::Value& obj) const {
  auto j = k8s::DecodeJobSet(obj);
  if (!j) return nullptr;
  return WorkloadFrom(*j, "JobSet");
}

PodOwner JobSetKind::WorkloadOfPod(const k8s::Pod& pod) const {
  auto name = pod.meta.labels.find(kJobSetNameLabel);
  if (name == pod.meta.labels.end() || name->second.empty()) return {};
  return PodOwner{name->second, pod.meta.Label(kJobSetUidLabel)};
}

std::string JobSetKind::PodSelector(const std::string&, const std::string& uid) const {
  return std::string(kJobSetUidLabel) + "=" + uid;
}

std::string JobSetKind::ChildJobSelector(const std::string& uid) const {
  return std::string(kJobSetUidLabel) + "=" + uid;
}

const JobSetKind& JobSets() {
  static const JobSetKind kind;
  return kind;
}

}  // namespace berth::workloads
