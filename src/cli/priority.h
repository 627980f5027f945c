#pragma once
// `kubectl berth priority RUN VALUE`: validate, patch atomically, describe the run's new place.

#include <cstdint>
#include <string>

#include "api/v1alpha1/run.h"
#include "k8s/client.h"
#include "k8s/json.h"
#include "k8s/result.h"
#include "runops/run_control.h"

namespace berth::cli {

// VALUE must be a whole number from 0 to 100 ("+5", "5.0", " 5", "1e2" are refused). The error is
// one sentence that names the value.
k8s::Result<int> ParsePriority(const std::string& text);

struct PriorityChange {
  int64_t old_priority = 0;
  int64_t new_priority = 0;
  int64_t generation = 0;  // metadata.generation after the change (the controller reflects it
                           // once status.observedGeneration reaches it)
  bool changed = false;    // false: the run already had this priority; nothing was written
  int conflicts = 0;       // how many times the patch met a newer resourceVersion
};

// Reads the run and writes spec.priority with one merge patch carrying the read resourceVersion;
// on 409 Conflict it reads again and retries, at most `attempts` patches in all. Errors: the run
// does not exist (`run "x" not found in namespace "y"`, code 404), the API's message on
// Forbidden, and the API's answer otherwise.
k8s::Result<PriorityChange> ChangePriority(k8s::Client& client, const std::string& ns, const std::string& name,
                                           int value, int attempts = 5);

// Observed and RunErrorSentence: runops/run_control.h (shared with the dashboard).
using runops::Observed;
using runops::RunErrorSentence;

// Whether the run is still (or not yet known to be out of) the queue: phase Pending or no status.
// Admitted and finished runs no longer depend on their priority, so there is nothing to wait for.
bool Queued(const api::v1alpha1::Run& run);
bool Queued(const k8s::json::Value& run);

// The run's place, from its status: "position 3 in the queue", "pending, not in the top 100 of the
// queue", "pending, not placed in the queue yet", "admitted (Running)", "finished (Failed)".
std::string DescribePlace(const api::v1alpha1::Run& run);
std::string DescribePlace(const k8s::json::Value& run);

// The sentence of the run's status message that says its namespace caps its priority ("priority
// capped at 70 by namespace ml (label berth.dev/max-priority: \"70\"); spec.priority is 80"),
// or "" when the message says nothing of a cap (issue 17).
std::string CapNote(const api::v1alpha1::Run& run);
std::string CapNote(const k8s::json::Value& run);
// (The overloads on JSON decode the run with api::v1alpha1::DecodeRunLeniently first.)

}  // namespace berth::cli
