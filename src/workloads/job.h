#pragma once
// batch/v1 Job as a WorkloadKind (workload.h): held by spec.suspend (and its template's scheduling
// gate, which the admission policy adds), released by spec.suspend false; the Job controller makes
// its Pods and keeps completions and backoffLimit; its Complete / Failed condition ends the ticket.
// A Job whose controller is a JobSet is part of that JobSet (Workload::part_of_other).

#include "workloads/workload.h"

namespace berth::workloads {

class JobKind final : public WorkloadKind {
 public:
  const k8s::Resource& Resource() const override;
  std::string_view ApiVersion() const override { return "batch/v1"; }
  std::string_view Kind() const override { return "Job"; }
  std::string_view TicketPrefix() const override { return "job"; }
  // Pods at once: spec.parallelism (default 1), at most spec.completions when set.
  std::shared_ptr<const Workload> Decode(const k8s::json::Value& obj) const override;
  std::string HoldPatch() const override { return R"({"spec":{"suspend":true}})"; }
  std::string ReleasePatch() const override { return R"({"spec":{"suspend":false}})"; }
  // Its controller ownerReference of kind Job (not a JobSet's Pod: that JobSet is the workload).
  PodOwner WorkloadOfPod(const k8s::Pod& pod) const override;
  // The Job controller's label batch.kubernetes.io/controller-uid.
  std::string PodSelector(const std::string& name, const std::string& uid) const override;
};

// The one JobKind.
const JobKind& Jobs();

// The label the Job controller puts on each Pod of an Indexed Job: its completion index.
inline constexpr const char* kCompletionIndexLabel = "batch.kubernetes.io/job-completion-index";

// A Pod of a Job that berth pinned for its ticket, as PodsShowJobDone reads it.
struct PinnedJobPod {
  std::string phase;             // status.phase ("Succeeded", "Failed", "Running", ...)
  std::string completion_index;  // label kCompletionIndexLabel ("" : none)
};

// Whether a Job's Pods show it done before the Job controller writes its Complete condition (that
// waits for its 1 s sync batch): the ticket is then Succeeded and its blocks free
// (docs/concepts.md, Jobs). True when every Pod of the Job that berth pinned (`pods`) is
// Succeeded (a Failed one never frees early: the Job controller may make a replacement under
// backoffLimit, or fail the Job, which it decides before success), no other Pod of it is live
// (`unpinned_live`: gated Pods waiting to be pinned), and the Succeeded ones cover completions:
// Indexed, the distinct completion indices 0..completions-1; NonIndexed, at least completions
// of them; completions unset, at least one. The Job controller then makes no new Pod. Pure.
bool PodsShowJobDone(const Workload& job, const std::vector<PinnedJobPod>& pods, size_t unpinned_live);

}  // namespace berth::workloads
