#pragma once
// A pass' own account: where it spent its time (PassPhases, logged for a slow pass) and what the
// observer (metrics) is told of it (SummarizePass).
//
// Threads: the loop thread (a pass). Owns nothing. Cost: SummarizePass O(waiting runs + instances
// + teams' rows), once per pass.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "k8s/clock.h"
#include "reconcilers/engine/engine_api.h"
#include "scheduling/cycle_result.h"
#include "scheduling/instance_state.h"
#include "scheduling/teams.h"

namespace berth::reconcilers {

// Where a pass spends its time: Mark(step) after each step; the total for the metric. On the
// steady clock: what it measures is the pass' own cost, not the injected time it decides at.
struct PassPhases {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now(), mark = started;
  std::string text;  // " workingset=1.2ms view=3.4ms ..."
  void Mark(const char* step);
  std::chrono::microseconds Total() const {
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started);
  }
};

// The observer's summary of a pass that took `took` at `now`: the waiting runs by (fleet,
// reason), the instances' blocks by state per fleet (`described`), the oldest wait (since
// `oldest_waiting`, found by the waiting statuses' step: a run held by its namespace's quota is
// not counted there), the teams' amounts in GPUs, CPU cores and bytes. The counters of the
// writers, Events and set-aside runs are the caller's to fill in. `pending`: the result's waiting
// runs counted already (CycleResult::CountWaiting, kept while the core's result stands); nullptr:
// counted here.
EngineObserver::PassSummary SummarizePass(
    std::chrono::microseconds took, const scheduling::CycleResult& result, bool decided, k8s::TimePoint now,
    std::optional<k8s::TimePoint> oldest_waiting, const std::vector<scheduling::InstanceStatus>& described,
    const std::vector<scheduling::TeamFleetReport>& teams,
    const std::map<std::pair<std::string, std::string>, int64_t>* pending = nullptr);

}  // namespace berth::reconcilers
