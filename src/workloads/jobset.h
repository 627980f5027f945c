#pragma once
// jobset.x-k8s.io/v1alpha2 JobSet as a WorkloadKind (workload.h; issue 45 part 2). All Jobs of a
// JobSet are one gang: its ticket jobset-<name> asks for every Pod of every replicated Job at once
// (replicas x the Job's Pods at once), each on a block that holds the largest Pod of any replicated
// Job (k8s::DecodeJobSet). Held by spec.suspend (the JobSet controller keeps its Jobs suspended
// and makes them so; the admission policy adds the gate berth.dev/admission to every replicated
// Job's Pod template), released by spec.suspend false. The JobSet controller keeps its success
// and failure policies; its Completed / Failed condition ends the ticket. Its Jobs are part of it
// (JobKind: Workload::part_of_other), its Pods are found by the JobSet controller's labels
// jobset.sigs.k8s.io/jobset-name and jobset.sigs.k8s.io/jobset-uid.

#include "workloads/workload.h"

namespace berth::workloads {

class JobSetKind final : public WorkloadKind {
 public:
  const k8s::Resource& Resource() const override;
  std::string_view ApiVersion() const override { return "jobset.x-k8s.io/v1alpha2"; }
  std::string_view Kind() const override { return "JobSet"; }
  std::string_view TicketPrefix() const override { return "jobset"; }
  std::shared_ptr<const Workload> Decode(const k8s::json::Value& obj) const override;
  std::string HoldPatch() const override { return R"({"spec":{"suspend":true}})"; }
  std::string ReleasePatch() const override { return R"({"spec":{"suspend":false}})"; }
  PodOwner WorkloadOfPod(const k8s::Pod& pod) const override;
  std::string PodSelector(const std::string& name, const std::string& uid) const override;
  // Its Jobs (label jobset.sigs.k8s.io/jobset-uid), held with it.
  std::string ChildJobSelector(const std::string& uid) const override;
};

// The one JobSetKind.
const JobSetKind& JobSets();

}  // namespace berth::workloads
