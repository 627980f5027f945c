#pragma once
// What the rest of berth-controller sees of the engine (reconcilers/engine/run_controller.h): the queue
// as /queue and the dashboard show it, the cached Fleets and namespace priority caps (EngineApi),
// and what the engine reports to the metrics (EngineObserver). The manager, the metrics and the
// dashboard include this header only.

#include <chrono>
#include <cstdint>
#include <map>
#include <tuple>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "k8s/objects.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/namespace_policy.h"
#include "reconcilers/objects/team_types.h"
#include "reconcilers/objects/usage_spans.h"

namespace berth::reconcilers {

// One pending run as the queue endpoint, CLI and dashboard show it.
struct QueueEntry {
  int64_t position = 0;
  std::string ns, name;
  int32_t priority = 0, effective_priority = 0;
  int64_t nodes = 1;
  std::vector<std::string> fleets;
  k8s::TimePoint submitted_at{};
  std::string reason, message;
  std::string team;  // the Team of its namespace (issue 31); "" when none lists it
  // When the last start-time forecast expects it to be placed (issue 33, reconcilers/engine/forecaster.h);
  // nullopt: unknown (the message says why), not forecast yet, or estimates are off.
  std::optional<k8s::TimePoint> estimated_start;
  // Issue 47: where the start will likely fall (earliest, latest); nullopt without a range.
  std::optional<std::pair<k8s::TimePoint, k8s::TimePoint>> estimated_range;
  // Issue 45: "Run", or for a ticket its workload's kind ("Job"), and that workload's name.
  std::string kind = "Run";
  std::string workload;
};

// What the engine reports to whoever watches it (the controller's Prometheus metrics).
// Called from the loop and writer threads; implementations must be thread-safe and quick.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  struct FleetCounts {
    std::map<std::string, int64_t> instances_by_state;  // "Idle", "Busy", ...
    int64_t busy_blocks = 0, idle_blocks = 0, unavailable_blocks = 0;
  };
  struct PassSummary {
    std::chrono::microseconds duration{0};
    bool decided = false;  // the scheduling core ran (otherwise its last result stood: CoreResultStands)
    // Pending runs by (fleet or "none", reason).
    std::map<std::pair<std::string, std::string>, int64_t> pending;
    std::map<std::string, FleetCounts> fleets;
    size_t writes_queued = 0;  // writes waiting or in flight
    // How long the run that has waited longest in the queue (Pending, not suspended, not backing
    // off, not placed by this pass) has waited: since its submission, or since it went back to the
    // queue after a resubmission (as OnAdmitted counts); 0 when the queue is empty.
    std::chrono::milliseconds oldest_pending_wait{0};
    uint64_t events_posted = 0, events_dropped = 0;  // totals since start
    // Runs set aside because berth cannot read them (nested deeper than json::kMaxDepth): out of
    // the queue, each with a Warning Event and a status that says why (issue 29).
    int64_t unreadable_runs = 0;
    // Teams (issue 31): per (team, fleet, resource "gpu" | "cpu" | "memory") the amounts of its
    // Team status: nominal, used, borrowed, lent (GPUs, CPU cores, bytes).
    struct TeamAmounts {
      double nominal = 0, used = 0, borrowed = 0, lent = 0;
    };
    std::map<std::tuple<std::string, std::string, std::string>, TeamAmounts> teams;
  };
  virtual void OnPass(const PassSummary& summary) = 0;
  // A run was admitted after waiting `wait` since its submission (or last resubmission).
  virtual void OnAdmitted(std::chrono::milliseconds wait) = 0;
  // A run reached Succeeded or Failed with `reason`.
  virtual void OnFinished(const std::string& phase, const std::string& reason) = 0;
  // A run was admitted with an estimate made at least a minute before: (estimated start - its
  // placement) / its wait since that estimate (issue 47; negative: it started later than said).
  virtual void OnEstimateError(double ratio) { (void)ratio; }
  // A running run was evicted for a higher-priority run on `fleet` (issue 17).
  virtual void OnPreempted(const std::string& fleet) { (void)fleet; }
  // A running run of `team` ("" when no Team holds its namespace) was stopped by a reclaim on
  // `fleet`: its team borrowed (issue 31).
  virtual void OnReclaimed(const std::string& fleet, const std::string& team) {
    (void)fleet;
    (void)team;
  }
  // Issue 47: resource-seconds the usage fold counted for (team, namespace, fleet) (team "": runs in
  // no Team; namespace "others" past the first 20 of a team and fleet); called on a writer thread.
  virtual void OnUsageCounted(const std::string& team, const std::string& ns, const std::string& fleet,
                              const ResourceSeconds& seconds) {
    (void)team;
    (void)ns;
    (void)fleet;
    (void)seconds;
  }
  // A write to the API failed and will be retried with backoff.
  virtual void OnWriteFailed(const std::string& what) = 0;
  // A start-time forecast (issue 33) for `runs` waiting runs took `took` on the forecaster's own
  // thread (reconcilers/engine/forecaster.h); called on that thread.
  virtual void OnForecast(size_t runs, std::chrono::microseconds took) {
    (void)runs;
    (void)took;
  }
};

// The engine's reads for the HTTP endpoints (any thread; each is quick but Queue, which may wait
// up to kViewWait for the loop thread to make a fresh view: see reconcilers/views/queue_view.h).
class EngineApi {
 public:
  virtual ~EngineApi() = default;
  // The queue as of the last pass, in order.
  virtual std::vector<QueueEntry> Queue() const = 0;
  // The priority cap of a namespace as cached (label berth.dev/max-priority); nullopt: none.
  virtual std::optional<PriorityCap> CapOf(const std::string& ns) const = 0;
  // The same for the admission webhook: false when the Namespace cache has not synced or does
  // not hold `ns` (yet), so the caller asks the API server instead.
  virtual bool CachedCapOf(const std::string& ns, std::optional<PriorityCap>& cap) const = 0;
  // The Fleets as cached (with the status berth last wrote).
  virtual std::vector<std::shared_ptr<const Fleet>> Fleets() const = 0;
  // The Teams as cached (with the status berth last wrote; issue 31).
  virtual std::vector<std::shared_ptr<const Team>> Teams() const = 0;
};

}  // namespace berth::reconcilers
