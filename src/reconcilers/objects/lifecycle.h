#pragma once
// The rules of an admitted run's life, pure (no I/O, no clock, no engine state): from the run
// (phase Scheduled or Running), its current attempt's Pods, what is wrong with its nodes, and
// "now", to the one thing to do next. RunController::Reconcile carries the decision out (writes,
// deletes, Events); unit tests state the rules on a fake clock (tests/unit/reconcilers/
// lifecycle_test.cc). docs/concepts.md describes the same rules for users.
//
// The rules, in the order they are checked (the first that applies decides):
//   0. spec.stop: the run is stopped (Failed, Stopped); else spec.suspend: it is suspended (its
//      Pods stop, it waits in Pending). Either way not when every Pod has already succeeded
//      (the run succeeded: there is nothing left to stop).
//   1. A node of the placement is gone, left every fleet or is not ready: an interruption.
//   2. Per rank: a Pod missing while Running (deleted): an interruption; missing while
//      Scheduled: its Pods are to be created. A Pod the kubelet refused at admission (OutOfcpu,
//      NodeAffinity, ...): an interruption, and its node is named (it takes no new runs for a
//      while). A Pod Failed because it was evicted (Evicted, Preempted, Shutdown, NodeLost,
//      Terminated): an interruption; any other Failed Pod: the run's failure (PodFailed). A Pod
//      being deleted while the run is Running: an interruption.
//   3. Every Pod Succeeded: the run succeeded.
//   4. Running longer than spec.maxDuration (from startedAt): MaxDurationExceeded.
//   5. Scheduled, not all Pods started: past the start timeout (spec.startTimeout, else the
//      controller's default; from scheduledAt): StartTimeout; else a Pod that cannot start
//      (ErrImagePull, ...) is shown in the message.
//   6. Scheduled and every Pod running or done: the run is Running.
//   7. Scheduled with a Pod missing or not bound: create/bind its Pods.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "k8s/clock.h"
#include "k8s/objects.h"
#include "reconcilers/objects/run_types.h"

namespace berth::reconcilers {

struct PlacedInput {
  const Run* run = nullptr;                          // phase Scheduled or Running
  std::map<std::string, const k8s::Pod*> pods;       // the current attempt's Pods, by name
  std::map<std::string, std::string> node_problems;  // node of the placement -> why it cannot be used
  std::chrono::milliseconds default_start_timeout{0};  // the controller's --start-timeout; 0 = off
  k8s::TimePoint now{};
};

struct PlacedDecision {
  enum class Kind {
    kNothing,     // keep watching
    kEnd,         // fail or retry (interruption or not), with `why` and `reason` (empty = Interrupted/PodFailed)
    kSucceed,     // every Pod succeeded; `message`
    kMaxDuration, // ran longer than maxDuration; `message`
    kShowWaiting, // a Pod cannot start: `message` (only when the run does not show it yet)
    kStarted,     // every Pod runs (or is done): phase Running; `message`
    kCreatePods,  // Scheduled and a Pod is missing or not bound
    kStop,        // spec.stop: end the run (Failed, Stopped, never retried); `why`
    kSuspend,     // spec.suspend: stop the Pods and wait suspended in Pending; `message`
  };
  Kind kind = Kind::kNothing;
  bool interruption = false;
  std::string why, message;
  ReasonCode reason;  // kEnd, kStop: the reason written (empty: Interrupted or PodFailed, as `interruption` says)
  std::string refused_node;  // kEnd after a kubelet refusal: the node that refused
};

PlacedDecision DecidePlaced(const PlacedInput& in);

// When the time alone next changes DecidePlaced's answer for this input (the end of maxDuration
// while Running, the start timeout while Scheduled), if ever: the engine wakes then instead of
// polling.
std::optional<k8s::TimePoint> NextDeadline(const PlacedInput& in);

// The rules of a run that waits (phase "" or Pending, not being deleted), in the order they are
// checked (the first that applies decides):
//   0. spec.stop: the run ends Failed/Stopped (never retried).
//   1. An invalid spec (the decoder's message, or a name its Pods cannot carry: RunNameProblem):
//      Failed, InvalidSpec, before it holds anything.
//   2. spec.suspend: it is suspended (out of the queue, its Pods stopped).
//   Rules 0-2 are never applied while one of the run's writes is in flight (`busy`): it stays out
//   of the queue until the next pass writes them. Otherwise a busy run keeps its place.
//   3. Pods of an earlier attempt that still run (a crash came between the Pending status and
//      their delete): they are deleted; the run waits for them.
//   4. Resumed (reason Suspended, spec.suspend false): the status says so, once.
//   5. Pods of this attempt (a suspension stopped them): the run waits until they are gone; any
//      not being deleted yet are deleted.
//   6. A resubmitted run backs off until status.retryAfter.
//   7. Otherwise it belongs in the queue.
// Why the run's name cannot work (empty when it can): longer than 63 characters (the value of its
// Pods' berth.dev/run label), or, for a multi-node run, not a DNS-1035 label (the name of its
// headless Service) or too long for its last rank's hostname <name>-<rank>. The CRD's CEL rules
// refuse these at admission; this catches a Run stored without them (an older CRD).
std::string RunNameProblem(const Run& run);

struct PendingInput {
  const Run* run = nullptr;
  std::vector<const k8s::Pod*> pods;  // every Pod of the run (all attempts)
  bool busy = false;                  // a write of the run is queued or in flight
  k8s::TimePoint now{};
};

struct PendingDecision {
  enum class Kind {
    kQueue,       // it belongs in the queue
    kWait,        // out of the queue this pass, nothing to write (busy, or Pods still going)
    kStop,        // Failed/Stopped; `message`
    kInvalid,     // Failed/InvalidSpec; `message`
    kSuspend,     // suspend; `message`
    kDeletePods,  // delete `pods` and wait
    kResumed,     // write reason Resumed with `message`
    kBackoff,     // wait until `until`
  };
  Kind kind = Kind::kQueue;
  std::string message;
  std::vector<const k8s::Pod*> pods;
  std::optional<k8s::TimePoint> until;
};

PendingDecision DecidePending(const PendingInput& in);

// Reasons the kubelet gives a Pod it refuses at admission (pkg/kubelet/lifecycle/predicate.go):
// the node, not the run, is the cause.
bool IsKubeletRefusal(const std::string& reason);
// Reasons of a Pod stopped from outside (eviction, node shutdown or loss): an interruption.
bool IsEviction(const std::string& reason);

}  // namespace berth::reconcilers
