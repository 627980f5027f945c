#pragma once
// TicketWrites (issue 45; reconcilers/tickets.h tells the whole story): the writes to a ticket's
// workload, on the engine's writer threads.

#include <string>

#include "k8s/client.h"
#include "reconcilers/run_types.h"
#include "workloads/workload.h"

namespace berth::reconcilers {

// The annotation on a ticket naming a label of its workload berth cannot read ("" : none).
inline constexpr const char* kLabelProblemAnnotation = "berth.dev/label-problem";

class TicketWrites {
 public:
  explicit TicketWrites(k8s::ClientPtr client) : client_(std::move(client)) {}
  // The ticket's workload held (suspended), and the Jobs its controller made (a JobSet's); true
  // when held or gone.
  bool Hold(const Run& ticket);
  // The ticket's workload released and its gated Pods pinned to the ranks of the placement;
  // `fleet`: the fleet placed on (its toleration). False when a write failed (retried).
  bool Release(const Run& ticket);

 private:
  bool HoldChildJobs(const Run& ticket, const workloads::WorkloadKind& kind);
  k8s::ClientPtr client_;
};

}  // namespace berth::reconcilers
