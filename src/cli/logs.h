#pragma once
// `kubectl berth logs RUN [--rank N] [-f]`: the logs of each rank's Pod of the run's current
// attempt, read through the API server (pods/log) with the caller's credentials, every line
// prefixed by "[rank N] ". With -f, each rank is followed until its container has ended.
//
// Which Pods (runops/log_targets.h, SelectLogTargets, shared with the dashboard): the run's Pods
// of its current attempt, or of the latest attempt that has Pods; one per rank.

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "k8s/core_types.h"
#include "k8s/json.h"
#include "k8s/result.h"
#include "k8s/transport.h"
#include "runops/log_targets.h"

namespace berth::cli {

using runops::LogTarget;

// A line read with timestamps=true: "2026-11-24T10:00:00.123456789Z text" -> the time and the
// text (a line without a readable time: "" and the whole line).
std::pair<std::string, std::string> SplitTimestamp(const std::string& line);
// The time as a string that orders as the times do (RFC 3339 in UTC with 0 to 9 fraction
// digits, padded to 9), "" when it is not one.
std::string TimeKey(const std::string& rfc3339);
// The time truncated to whole seconds, for sinceTime ("2026-11-24T10:00:00Z").
std::string WholeSeconds(const std::string& rfc3339);

// The state of a Pod's container as logs care about it.
enum class ContainerPhase {
  kNotStarted,    // not created yet, or being created (ContainerCreating, PodInitializing): wait for it
  kCannotStart,   // waiting for another reason (ErrImagePull, CreateContainerConfigError, ...)
  kRunning,
  kEnded,         // terminated (or the Pod finished)
};
ContainerPhase PhaseOf(const k8s::PodView& pod, const std::string& container, std::string* why = nullptr);
ContainerPhase PhaseOf(const k8s::json::Value& pod, const std::string& container, std::string* why = nullptr);

// Prints each target's log once, in rank order. Returns false when some rank's log could not be
// read (each such rank gets an "error: rank N: ..." line on `err`).
bool PrintLogs(k8s::Transport& transport, const std::string& ns, const std::vector<LogTarget>& targets,
               std::ostream& out, std::ostream& err);

// Follows every target at once (one thread each) until each container has ended; waits for a
// container that has not started yet; lines are written whole. Returns false when some rank could
// not be followed (its "error: rank N: ..." line on `err`).
bool FollowLogs(k8s::Transport& transport, const std::string& ns, const std::vector<LogTarget>& targets,
                std::ostream& out, std::ostream& err);

}  // namespace berth::cli
