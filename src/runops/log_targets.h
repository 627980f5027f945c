#pragma once
// Which Pods of a run to read logs from, and how to read them (pods/log): shared by
// `kubectl berth logs` (cli/logs.h) and the dashboard (berth-controller), so both choose alike.
//
// Which Pods: the run's Pods (label berth.dev/run, owned by the run) of its current attempt
// (label berth.dev/attempt = status.resubmissions); when that attempt has no Pods yet (a retry
// waiting in the queue), those of the latest attempt that has, with a note saying so. One Pod per
// rank (label berth.dev/rank), its first container (the one berth gives the blocks to).

#include <optional>
#include <string>
#include <vector>

#include "api/v1alpha1/run.h"
#include "k8s/core_types.h"
#include "k8s/json.h"
#include "k8s/result.h"

namespace berth::runops {

struct LogTarget {
  int rank = 0;
  std::string pod, container;
};

struct LogSelection {
  std::vector<LogTarget> targets;  // rank order
  std::string note;                // "" or a sentence for stderr (an older attempt, a rank without a Pod)
};

// Chooses the Pods to read (see above). `pods`: the Pods labelled berth.dev/run=RUN in the run's
// namespace. Errors (one sentence each): `rank` outside 0..spec.nodes-1; no Pod at all ("has no
// Pods yet" while Pending or Scheduled, "has no Pods any more" once ended), or none for `rank`.
k8s::Result<LogSelection> SelectLogTargets(const api::v1alpha1::Run& run, const std::vector<k8s::PodView>& pods,
                                           std::optional<int> rank);
// The same on the objects as JSON (decoded with DecodeRunLeniently and k8s::DecodePodView).
k8s::Result<LogSelection> SelectLogTargets(const k8s::json::Value& run, const std::vector<const k8s::json::Value*>& pods,
                                           std::optional<int> rank);

// A whole log body as lines: split at "\n", a last line without one kept, empty lines kept.
std::vector<std::string> SplitLog(const std::string& body);

// "/api/v1/namespaces/NS/pods/POD/log?container=C" plus "&follow=true&timestamps=true" and
// "&sinceTime=T" when given.
std::string LogPath(const std::string& ns, const LogTarget& t, bool follow, const std::string& since_time = {});

}  // namespace berth::runops
