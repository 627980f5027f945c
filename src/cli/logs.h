#pragma once
// `kubectl berth logs RUN [--rank N] [-f]`: the logs of each rank's Pod of the run's current
// attempt, read through the API server (pods/log) with the caller's credentials, every line
// prefixed by "[rank N] ". With -f, each rank is followed until its container has ended.
//
// Which Pods: the run's Pods (label berth.dev/run, owned by the run) of its current attempt
// (label berth.dev/attempt = status.resubmissions); when that attempt has no Pods yet (a retry
// waiting in the queue), those of the latest attempt that has, with a note saying so. One Pod per
// rank (label berth.dev/rank), its first container (the one berth gives the blocks to).

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "k8s/result.h"
#include "k8s/transport.h"

namespace berth::cli {

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
k8s::Result<LogSelection> SelectLogTargets(const k8s::json::Value& run, const std::vector<const k8s::json::Value*>& pods,
                                           std::optional<int> rank);

// A whole log body as lines: split at "\n", a last line without one kept, empty lines kept.
std::vector<std::string> SplitLog(const std::string& body);

// "/api/v1/namespaces/NS/pods/POD/log?container=C" plus "&follow=true&timestamps=true" and
// "&sinceTime=T" when given.
std::string LogPath(const std::string& ns, const LogTarget& t, bool follow, const std::string& since_time = {});

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
