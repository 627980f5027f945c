#include "reconcilers/engine/pass_summary.h"

#include <spdlog/fmt/fmt.h>

namespace berth::reconcilers {

namespace sched = scheduling;

void PassPhases::Mark(const char* step) {
  auto t = std::chrono::steady_clock::now();
  text += fmt::format(" {}={:.1f}ms", step, std::chrono::duration<double, std::milli>(t - mark).count());
  mark = t;
}

EngineObserver::PassSummary SummarizePass(std::chrono::microseconds took, const sched::CycleResult& result,
                                          bool decided, k8s::TimePoint now, std::optional<k8s::TimePoint> oldest,
                                          const std::vector<sched::InstanceStatus>& described,
                                          const std::vector<sched::TeamFleetReport>& teams,
                                          const std::map<std::pair<std::string, std::string>, int64_t>* pending) {
  EngineObserver::PassSummary summary;
  summary.duration = took;
  summary.decided = decided;
  summary.pending = pending != nullptr ? *pending : result.CountWaiting();
  // The oldest waiting run (one run once, whatever fleets it names). Its wait counts from its
  // submission (status.submittedAt, which berth sets to the creation time the queue orders by and
  // never changes: a retry keeps it), or, for a resubmitted run, from when it went back to the
  // queue (retryAfter): an earlier attempt's run time is not waiting. The same rule as the
  // admission wait (OnAdmitted). A run waiting for its own namespace's ResourceQuota is not
  // counted: the namespace's budget, not berth or its fleets, holds it (the BerthRunsWaiting alert
  // must not fire for it).
  if (oldest && now > *oldest) {
    summary.oldest_pending_wait = std::chrono::duration_cast<std::chrono::milliseconds>(now - *oldest);
  }
  for (const auto& d : described) {
    auto& fc = summary.fleets[d.fleet];
    ++fc.instances_by_state[std::string(sched::InstanceStateName(d.state))];
    fc.busy_blocks += d.busy_blocks;
    if (sched::TakesNewRuns(d.state)) {
      fc.idle_blocks += d.total_blocks - d.busy_blocks;
    } else {
      fc.unavailable_blocks += d.total_blocks - d.busy_blocks;
    }
  }
  static constexpr const char* kNames[sched::kShareResources] = {"gpu", "cpu", "memory"};
  static constexpr double kUnit[sched::kShareResources] = {1, 1000, 1};  // GPUs, CPU cores (from millicores), bytes
  for (const auto& row : teams) {
    for (int r = 0; r < sched::kShareResources; ++r) {
      if (!row.accounted[r]) continue;
      summary.teams[{row.team, row.fleet, kNames[r]}] = EngineObserver::PassSummary::TeamAmounts{
          row.nominal[r] / kUnit[r], row.used[r] / kUnit[r], row.borrowed[r] / kUnit[r], row.lent[r] / kUnit[r]};
    }
  }
  return summary;
}

}  // namespace berth::reconcilers
