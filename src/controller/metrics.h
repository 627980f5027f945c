#pragma once
// berth's Prometheus metrics (names under berth_), fed by the engine, the API client and the
// leader elector; exposed as text on /metrics.

#include <memory>
#include <mutex>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "controller/queue_series.h"
#include "reconcilers/engine/engine_api.h"

namespace berth::controller {

class Metrics final : public reconcilers::EngineObserver {
 public:
  Metrics();

  // Prometheus text exposition format 0.0.4.
  std::string Render() const;

  void OnPass(const PassSummary& summary) override;
  void OnAdmitted(std::chrono::milliseconds wait) override;
  void OnEstimateError(double ratio) override;
  void OnFinished(const std::string& phase, const std::string& reason) override;
  void OnWriteFailed(const std::string& what) override;
  void OnPreempted(const std::string& fleet) override;
  void OnReclaimed(const std::string& fleet, const std::string& team) override;
  void OnUsageCounted(const std::string& team, const std::string& ns, const std::string& fleet,
                      const reconcilers::ResourceSeconds& seconds) override;

  // One API request (verb, HTTP code; 0 = no answer).
  void OnApiRequest(const std::string& verb, int code);
  void SetLeader(bool leader);
  // Issue 47: also feed the queue's in-memory series (each pass' waiting runs, each start's wait).
  // Set before the engine starts; `series` outlives this.
  void SetQueueSeries(QueueSeries* series) { series_ = series; }

 private:
  // The series that exist from the start (a scrape sees them before anything happened).
  void AddFixedSeries();

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& pending_;
  prometheus::Family<prometheus::Gauge>& oldest_pending_wait_;
  prometheus::Family<prometheus::Counter>& admitted_;
  prometheus::Family<prometheus::Counter>& preemptions_;
  prometheus::Family<prometheus::Counter>& reclaims_;
  prometheus::Family<prometheus::Gauge>& team_resources_;
  prometheus::Family<prometheus::Counter>& finished_;
  prometheus::Family<prometheus::Counter>& failed_;
  prometheus::Family<prometheus::Histogram>& admission_wait_;
  prometheus::Family<prometheus::Histogram>& cycle_duration_;
  prometheus::Family<prometheus::Histogram>& estimate_error_;
  prometheus::Family<prometheus::Counter>& passes_;
  prometheus::Family<prometheus::Gauge>& fleet_blocks_;
  prometheus::Family<prometheus::Gauge>& instances_;
  prometheus::Family<prometheus::Counter>& reconcile_errors_;
  prometheus::Family<prometheus::Counter>& api_requests_;
  prometheus::Family<prometheus::Gauge>& workqueue_depth_;
  prometheus::Family<prometheus::Gauge>& unreadable_objects_;
  prometheus::Family<prometheus::Counter>& workqueue_retries_;
  prometheus::Family<prometheus::Gauge>& leader_;
  prometheus::Family<prometheus::Counter>& events_;
  prometheus::Family<prometheus::Counter>& usage_;  // issue 47

  mutable std::mutex mu_;  // guards resetting label sets of the gauges and the two below
  uint64_t events_posted_ = 0, events_dropped_ = 0;  // the engine's totals as last counted
  std::vector<prometheus::Gauge*> pass_gauges_;  // set by the last pass, zeroed by the next
  QueueSeries* series_ = nullptr;
};

}  // namespace berth::controller
