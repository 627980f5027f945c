#pragma once
// Run status as berth writes it: a desired RunStatus built from the current one, compared field
// by field (so unchanged status is never rewritten) and written as a merge patch for /status
// (the codec's, api/v1alpha1/codec.h). The Fleet status berth writes.

#include <string>
#include <string_view>
#include <vector>

#include "k8s/clock.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/run_types.h"
#include "scheduling/instance_state.h"

namespace berth::reconcilers {

// The codec's patches and SetCondition, under the engine's names.
using api::FinalizerPatch;
using api::FinalizersPatch;
using api::QueuePositionPatch;
using api::RunStatusPatch;

// True when a and b differ in anything but queuePosition and message (the fields refreshed at
// most every few seconds).
bool DiffersInMoreThanPositionAndMessage(const RunStatus& a, const RunStatus& b);
bool SameStatus(const RunStatus& a, const RunStatus& b);

// How a run ends.
enum class Outcome { kSucceeded, kFailed };

// The one place a terminal status is built: `current` with phase Succeeded or Failed, `reason`
// and `message`; finishedAt now; startedAt now if a success never showed it; submittedAt the
// creation time if unset; no queue position; observedGeneration `generation`; conditions
// Ready=False (reason Finished for a success, else `reason`) and Finished=True (`reason`).
RunStatus Finish(const RunStatus& current, Outcome outcome, const ReasonCode& reason, const std::string& message,
                 int64_t generation, k8s::TimePoint created, k8s::TimePoint now);

// The status berth writes for a Fleet: every instance the core describes (`instances`, this
// fleet's) with its blocks, counted runs, state and lifetime; the counts; conditions Ready and
// Conflict (kept lastTransitionTime when unchanged).
FleetStatus BuildFleetStatus(const Fleet& fleet, const ClusterView& view,
                             const std::vector<const scheduling::InstanceStatus*>& instances, k8s::TimePoint now);
// The core's instance state as the API spells it.
api::InstanceState ToApiState(scheduling::InstanceState state);

}  // namespace berth::reconcilers
