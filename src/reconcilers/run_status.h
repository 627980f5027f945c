#pragma once
// Run status as berth writes it: a desired RunStatus built from the current one, compared field
// by field (so unchanged status is never rewritten) and serialized as a merge patch for /status.

#include <string>
#include <string_view>
#include <vector>

#include "k8s/clock.h"
#include "reconcilers/cluster_view.h"
#include "reconcilers/fleet_types.h"
#include "reconcilers/run_types.h"
#include "scheduling/instance_state.h"

namespace berth::reconcilers {

// Sets condition `type`, keeping lastTransitionTime when its status did not change.
void SetCondition(std::vector<Condition>& conditions, std::string_view type, std::string_view status,
                  std::string_view reason, const std::string& message, int64_t generation, k8s::TimePoint now);

// True when a and b differ in anything but queuePosition and message (the fields refreshed at
// most every few seconds).
bool DiffersInMoreThanPositionAndMessage(const RunStatus& a, const RunStatus& b);
bool operator==(const Condition& a, const Condition& b);
bool operator==(const PlacementEntry& a, const PlacementEntry& b);
bool SameStatus(const RunStatus& a, const RunStatus& b);

// How a run ends.
enum class Outcome { kSucceeded, kFailed };

// The one place a terminal status is built: `current` with phase Succeeded or Failed, `reason`
// and `message`; finishedAt now; startedAt now if a success never showed it; submittedAt the
// creation time if unset; no queue position; observedGeneration `generation`; conditions
// Ready=False (reason Finished for a success, else `reason`) and Finished=True (`reason`).
RunStatus Finish(const RunStatus& current, Outcome outcome, std::string_view reason, const std::string& message,
                 int64_t generation, k8s::TimePoint created, k8s::TimePoint now);

// {"metadata":{"resourceVersion":rv},"status":{...every field, null for the empty ones...}}.
// An empty `resource_version` writes unconditionally.
std::string RunStatusPatch(const RunStatus& s, const std::string& resource_version);

// {"metadata":{"resourceVersion":rv,"finalizers":[...]}}: `finalizers` in their order with berth's
// (kFinalizer) once at the end (`with_ours`) or left out (not `with_ours`); others are kept.
std::string FinalizersPatch(const std::string& resource_version, const std::vector<std::string>& finalizers,
                            bool with_ours);

// The status berth writes for a Fleet: every instance the core describes (`instances`, this
// fleet's) with its blocks, counted runs, state and lifetime; the counts; conditions Ready and
// Conflict (kept lastTransitionTime when unchanged).
std::string FleetStatusJson(const Fleet& fleet, const ClusterView& view,
                            const std::vector<const scheduling::InstanceStatus*>& instances, k8s::TimePoint now);

}  // namespace berth::reconcilers
