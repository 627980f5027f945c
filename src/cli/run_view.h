#pragma once
// `kubectl berth describe RUN` (alias `get`): one screen about one run, in the order a user reads
// it — what it is, where it stands and why, where its ranks run, what happened to it.
//
//   Name:         train
//   Namespace:    ml
//   Priority:     70 (effective 72)
//   Phase:        Running
//   Reason:       Running
//   Message:      all 2 Pods are running
//   Asks:         2 nodes, each 8 CPU, 64Gi memory, 8 GPU; fleets a100
//   Limits:       maxDuration 4h; retry on no-capacity, error for 1h
//   Submitted:    2026-11-24T10:00:00Z (12m ago)
//   Started:      2026-11-24T10:02:00Z (10m ago)
//   Attempts:     2 (1 resubmission)
//   Fleet:        a100
//   Placement:
//     RANK   NODE    BLOCKS   POD       POD STATE
//     0      gpu-0   8        train-0   Running
//   Conditions:
//     TYPE      STATUS   REASON    AGE   MESSAGE
//   Events:
//     AGE   TYPE     REASON      COUNT   MESSAGE
//
// Pure: the caller fetches the run, its Pods (label berth.dev/run=RUN) and its Events
// (involvedObject.uid) and passes them in; unknown or missing fields are left out, never guessed.

#include <string>
#include <vector>

#include "api/v1alpha1/fleet.h"
#include "api/v1alpha1/run.h"
#include "k8s/clock.h"
#include "k8s/core_types.h"
#include "k8s/json.h"
#include "runops/run_domain.h"

namespace berth::cli {

// `pods` and `events` may be in any order: ranks are sorted by rank, Events by their last time
// (oldest first, as kubectl describe shows them). `run` is decoded with
// RunDecodeOptions::keep_spelling (the spec's values are shown as written).
// `domain`: the run's placement's topology domain (RunDomain), "" when its fleet has no levels.
std::string FormatRunDescription(const api::v1alpha1::Run& run, const std::vector<k8s::PodView>& pods,
                                 std::vector<k8s::EventView> events, k8s::TimePoint now,
                                 const std::string& domain = {});
// The topology domain (issue 48) of a placement: runops/run_domain.h (the dashboard's run page says the same).
using runops::RunDomain;
// The same on the objects as JSON (null entries left out).
std::string FormatRunDescription(const k8s::json::Value& run, const std::vector<const k8s::json::Value*>& pods,
                                 const std::vector<const k8s::json::Value*>& events, k8s::TimePoint now);

}  // namespace berth::cli
