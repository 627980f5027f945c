#include "reconcilers/objects/lifecycle.h"

#include "k8s/duration.h"
#include "k8s/timefmt.h"
#include "reconcilers/writers/device_claims.h"
#include "reconcilers/writers/pod_builder.h"

namespace berth::reconcilers {

namespace {

using Kind = PlacedDecision::Kind;

PlacedDecision End(bool interruption, std::string why, ReasonCode reason = {}) {
  PlacedDecision d;
  d.kind = Kind::kEnd;
  d.interruption = interruption;
  d.why = std::move(why);
  d.reason = std::move(reason);
  return d;
}

PlacedDecision With(Kind kind, std::string message) {
  PlacedDecision d;
  d.kind = kind;
  d.message = std::move(message);
  return d;
}

// Rule 2 for one rank's Pod; nullopt when it is fine.
std::optional<PlacedDecision> PodRule(const k8s::Pod& pod, bool running_phase) {
  if (IsPodPhase(pod.phase, PodPhase::kFailed) && IsKubeletRefusal(pod.reason)) {
    std::string why = "the kubelet on node " + pod.node_name + " refused pod " + pod.meta.name + ": " + pod.reason;
    if (!pod.message.empty()) why += " (" + pod.message + ")";
    PlacedDecision d = End(true, why);
    d.refused_node = pod.node_name;
    return d;
  }
  if (IsPodPhase(pod.phase, PodPhase::kFailed)) {
    const bool evicted = IsEviction(pod.reason);
    std::string why = "pod " + pod.meta.name + (evicted ? " was evicted" : " failed");
    if (!pod.message.empty()) why += ": " + pod.message;
    return End(evicted, why);
  }
  if (pod.meta.deleting && running_phase) return End(true, "pod " + pod.meta.name + " is being deleted");
  return std::nullopt;
}

// Issue 49: a DRA run's Pod that kube-scheduler cannot place on its booked node (its claim cannot
// be allocated there, or anything else): berth's booking and the allocator disagree. The run is
// interrupted with kube-scheduler's message and the node pauses (refused_node) as after a kubelet
// refusal; never a silent wait.
std::optional<PlacedDecision> DeviceClaimRule(const k8s::Pod& pod, const std::string& node) {
  if (pod.unschedulable.empty() || !pod.node_name.empty() || !AwaitsKubeScheduler(pod)) return std::nullopt;
  PlacedDecision d = End(true, "kube-scheduler cannot place pod " + pod.meta.name + " on its booked node " + node +
                                   ": " + pod.unschedulable);
  d.refused_node = node;
  return d;
}

// Rule 5: a Scheduled run whose Pods have not all started.
std::optional<PlacedDecision> StartRule(const PlacedInput& in) {
  const Run& run = *in.run;
  // A Pod that cannot start (ErrImagePull, CreateContainerConfigError, ...) says why at once.
  std::string waiting;
  for (const auto& [name, p] : in.pods) {
    if (p->waiting.empty()) continue;
    waiting = "pod " + name + " on node " + p->node_name + " cannot start: " + p->waiting;
    break;
  }
  std::optional<std::chrono::milliseconds> timeout;
  if (run.spec.start_timeout) {
    timeout = *run.spec.start_timeout;
  } else if (in.default_start_timeout.count() > 0) {
    timeout = in.default_start_timeout;
  }
  auto scheduled = PointOf(run.status.scheduled_at);
  if (timeout && scheduled && in.now - *scheduled >= *timeout) {
    return End(false,
               "the Pods did not all start within startTimeout " + k8s::FormatDuration(*timeout) +
                   (waiting.empty() ? "" : " (" + waiting + ")"),
               Reason::kStartTimeout);
  }
  if (!waiting.empty() && run.status.message != waiting) return With(Kind::kShowWaiting, waiting);
  return std::nullopt;
}

// Rule 0: the user's stop or suspend, unless every rank already succeeded.
std::optional<PlacedDecision> UserRule(const PlacedInput& in) {
  const Run& run = *in.run;
  const bool running_phase = (run.status.phase == Phase::kRunning);
  if (!run.spec.stop && !run.spec.suspend) return std::nullopt;
  bool all_succeeded = !run.status.placement.empty();
  for (const auto& entry : run.status.placement) {
    auto it = in.pods.find(entry.pod);
    all_succeeded = all_succeeded && it != in.pods.end() && IsPodPhase(it->second->phase, PodPhase::kSucceeded);
  }
  const std::string while_ = running_phase ? "while running" : "while scheduled";
  if (!all_succeeded && run.spec.stop) {
    PlacedDecision d;
    d.kind = Kind::kStop;
    d.reason = Reason::kStopped;
    d.why = "stopped (spec.stop) " + while_ + "; its Pods are stopped with their grace period";
    return d;
  }
  if (!all_succeeded) {
    return With(Kind::kSuspend, "suspended (spec.suspend) " + while_ +
                                    ": its Pods are stopped with their grace period; it waits out of the queue "
                                    "until spec.suspend is false again (kubectl berth resume)");
  }
  return std::nullopt;
}

}  // namespace

bool IsKubeletRefusal(const std::string& reason) {
  return reason.rfind("OutOf", 0) == 0 || reason == "NodeAffinity" || reason == "NodeName" || reason == "NodePorts" ||
         reason == "TaintToleration" || reason == "UnexpectedAdmissionError" || reason == "InvalidNodeInfo" ||
         reason == "UnknownReason" || reason == "UnexpectedPredicateFailureType";
}

bool IsEviction(const std::string& reason) {
  return reason == "Evicted" || reason == "Preempted" || reason == "Shutdown" || reason == "NodeLost" ||
         reason == "Terminated";
}

PlacedDecision DecidePlaced(const PlacedInput& in) {
  const Run& run = *in.run;
  const bool running_phase = (run.status.phase == Phase::kRunning);
  if (auto d = UserRule(in)) return *d;
  // Rule 1: the nodes.
  for (const auto& entry : run.status.placement) {
    auto problem = in.node_problems.find(entry.node);
    if (problem != in.node_problems.end()) return End(true, "node " + entry.node + " " + problem->second);
  }
  // Rule 2: each rank's Pod.
  int running = 0, succeeded = 0;
  bool missing = false;
  for (const auto& entry : run.status.placement) {
    auto it = in.pods.find(entry.pod);
    if (it == in.pods.end()) {
      if (running_phase) return End(true, "pod " + entry.pod + " was deleted");
      missing = true;
      continue;
    }
    if (auto d = PodRule(*it->second, running_phase)) return *d;
    if (auto d = DeviceClaimRule(*it->second, entry.node)) return *d;
    if (it->second->node_name.empty()) missing = true;
    if (IsPodPhase(it->second->phase, PodPhase::kRunning)) ++running;
    if (IsPodPhase(it->second->phase, PodPhase::kSucceeded)) ++succeeded;
  }
  const int n = static_cast<int>(run.status.placement.size());
  // Rule 3.
  if (succeeded == n) {
    return With(Kind::kSucceed, n == 1 ? "the pod succeeded" : "all " + std::to_string(n) + " pods succeeded");
  }
  // Rule 4.
  if (running_phase && run.spec.max_duration) {
    auto start = PointOf(run.status.started_at);
    if (start && in.now - *start >= *run.spec.max_duration) {
      return With(Kind::kMaxDuration, "ran longer than maxDuration " + k8s::FormatDuration(*run.spec.max_duration));
    }
  }
  if (running_phase) return PlacedDecision{};
  // Scheduled. Rule 5.
  if (running + succeeded < n) {
    if (auto d = StartRule(in)) return *d;
  }
  // Rule 6.
  if (running + succeeded == n) {
    return With(Kind::kStarted, n == 1 ? "the pod is running" : "all " + std::to_string(n) + " pods are running");
  }
  // Rule 7.
  if (missing) return PlacedDecision{Kind::kCreatePods, false, {}, {}, {}, {}};
  return PlacedDecision{};
}

std::optional<k8s::TimePoint> NextDeadline(const PlacedInput& in) {
  const Run& run = *in.run;
  if ((run.status.phase == Phase::kRunning)) {
    auto start = PointOf(run.status.started_at);
    if (run.spec.max_duration && start) return *start + *run.spec.max_duration;
    return std::nullopt;
  }
  std::optional<std::chrono::milliseconds> timeout;  // as StartRule reads it
  if (run.spec.start_timeout) {
    timeout = *run.spec.start_timeout;
  } else if (in.default_start_timeout.count() > 0) {
    timeout = in.default_start_timeout;
  }
  auto scheduled = PointOf(run.status.scheduled_at);
  if (timeout && scheduled) return *scheduled + *timeout;
  return std::nullopt;
}

std::string RunNameProblem(const Run& run) {
  const std::string& name = run.meta.name;
  if (name.size() > 63) return "the run name is longer than 63 characters, so it cannot label its Pods";
  if (run.spec.nodes <= 1) return {};
  // A DNS-1035 label: [a-z]([-a-z0-9]*[a-z0-9])?
  bool label = !name.empty() && name.front() >= 'a' && name.front() <= 'z' && name.back() != '-';
  for (char c : name) label = label && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-');
  if (!label) {
    return "a multi-node run (spec.nodes > 1) must have a name that is a DNS-1035 label (lowercase letters, digits "
           "and '-', starting with a letter and ending with a letter or digit): its Pods find each other through a "
           "headless Service of that name, which the API server would refuse for \"" + name + "\"";
  }
  const size_t last_rank = std::to_string(run.spec.nodes - 1).size();
  if (name.size() + 1 + last_rank > 63) {
    return "a multi-node run's name must leave room for its Pods' hostnames <name>-<rank>, 63 characters at most (a "
           "name of up to 58 characters fits any number of nodes)";
  }
  return {};
}

namespace {

// Rules 0 to 2 of DecidePending: what the spec asks (stop, an invalid spec, suspend), busy or not.
std::optional<PendingDecision> DecideFromSpec(const PendingInput& in) {
  using PK = PendingDecision::Kind;
  const Run& run = *in.run;
  PendingDecision d;
  // Rule 0.
  if (run.spec.stop) {
    d.kind = in.busy ? PK::kWait : PK::kStop;
    d.message = (run.status.reason == Reason::kSuspended) ? "stopped (spec.stop) while suspended"
                                                                   : "stopped (spec.stop) before it was scheduled";
    return d;
  }
  // Rule 1.
  d.message = run.invalid_message;
  if (d.message.empty()) d.message = RunNameProblem(run);
  if (!d.message.empty()) {
    d.kind = in.busy ? PK::kWait : PK::kInvalid;
    return d;
  }
  // Rule 2.
  if (run.spec.suspend) {
    d.kind = in.busy ? PK::kWait : PK::kSuspend;
    d.message = "suspended (spec.suspend): it waits out of the queue until spec.suspend is false again (kubectl berth "
                "resume)";
    return d;
  }
  return std::nullopt;
}

}  // namespace

PendingDecision DecidePending(const PendingInput& in) {
  using PK = PendingDecision::Kind;
  const Run& run = *in.run;
  if (auto from_spec = DecideFromSpec(in)) return *from_spec;
  PendingDecision d;
  if (in.busy) return d;  // kQueue: keeps its place while its write is in flight
  // Rule 3.
  for (const k8s::Pod* p : in.pods) {
    if (!IsPodPhase(p->phase, PodPhase::kSucceeded) && !IsPodPhase(p->phase, PodPhase::kFailed) && !p->meta.deleting) d.pods.push_back(p);
  }
  if (!d.pods.empty()) {
    d.kind = PK::kDeletePods;
    return d;
  }
  // Rule 4. After a suspension that stopped its Pods, the next Pods take the same names (the
  // attempt did not change), so it queues only once the suspended attempt's Pods are gone.
  const std::string attempt = std::to_string(run.status.resubmissions);
  std::vector<const k8s::Pod*> mine;
  for (const k8s::Pod* p : in.pods) {
    if (p->meta.Label(kAttemptLabel) == attempt) mine.push_back(p);
  }
  if ((run.status.reason == Reason::kSuspended)) {
    d.kind = PK::kResumed;
    d.message = !mine.empty() ? "resumed: it queues again at its first submission time once the Pods of its suspended "
                                "attempt are gone"
                              : "resumed: back in the queue at its first submission time";
    return d;
  }
  // Rule 5. Normally they are being deleted already (a suspension deletes them all); one that is
  // not (a finished Pod kept by an older controller, say) would hold the run back for ever.
  if (!mine.empty()) {
    for (const k8s::Pod* p : mine) {
      if (!p->meta.deleting) d.pods.push_back(p);
    }
    d.kind = d.pods.empty() ? PK::kWait : PK::kDeletePods;
    return d;
  }
  // Rule 6.
  if (auto after = PointOf(run.status.retry_after); after && in.now < *after) {
    d.kind = PK::kBackoff;
    d.until = *after;
    return d;
  }
  return d;  // Rule 7.
}

}  // namespace berth::reconcilers
