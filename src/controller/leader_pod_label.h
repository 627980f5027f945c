#pragma once
// The label that names the leading replica's Pod (flag --leader-pod=NAMESPACE/NAME, the chart sets
// it from the downward API). The queue API is computed by the leader only (a standby runs no
// pass), and the API server keeps its connection to a Service open: a Service over every replica
// could leave it talking to a standby for good. So the chart's queue-api Service selects
// kLeaderPodLabel=true: the leader sets it once it holds the Lease, and every process clears it on
// start (a container restarted after losing the Lease keeps its Pod and so its labels) and on a
// clean shutdown. A process that dies while leading leaves the label on a Pod that is not Ready
// until it has restarted and cleared it, and a not-ready Pod is no endpoint.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/result.h"

namespace berth::controller {

inline constexpr const char* kLeaderPodLabel = "berth.dev/leader";

// "NAMESPACE/NAME" of --leader-pod, both DNS names; an error sentence otherwise.
k8s::Status ParseLeaderPod(const std::string& value, std::string* ns, std::string* name);

class LeaderPodLabel {
 public:
  // `client` must write without the leader's write guard (a standby clears its own label).
  LeaderPodLabel(k8s::ClientPtr client, const k8s::Clock& clock, std::string ns, std::string name);
  ~LeaderPodLabel();

  // Removes the label (a few tries); logs when it could not.
  void Clear();
  // Sets the label, trying again every `retry` in the background until it is set or Stop().
  void SetInBackground(std::chrono::milliseconds retry);
  // Ends the background tries (joins).
  void Stop();

 private:
  k8s::Status Patch(bool leader);

  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  std::string ns_, name_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread setter_;
};

}  // namespace berth::controller
