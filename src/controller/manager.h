#pragma once
// The manager: wires the engine, leader election, metrics and the HTTP endpoints together, and
// shuts them down in order (stop writing, release the Lease, stop serving).

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <memory>

#include "controller/access_review.h"
#include "controller/dashboard_api.h"
#include "controller/dashboard_request.h"
#include "controller/http_server.h"
#include "controller/leader_election.h"
#include "controller/leader_pod_label.h"
#include "controller/metrics.h"
#include "controller/options.h"
#include "controller/queue_api.h"
#include "controller/queue_series.h"
#include "k8s/client.h"
#include "k8s/clock.h"
#include "reconcilers/engine/engine_api.h"

namespace berth::reconcilers {
class RunController;  // reconcilers/engine/run_controller.h
}  // namespace berth::reconcilers

namespace berth::controller {

class Manager {
 public:
  // `identity` names this process in the leader-election Lease (empty: DefaultIdentity()).
  Manager(Options options, k8s::ClientPtr client, const k8s::Clock& clock, std::string identity = {});
  ~Manager();

  // Serves the endpoints, syncs the caches, waits for leadership (with --leader-elect), then
  // schedules until RequestStop. Returns an error when it cannot start (e.g. a port in use).
  // Waits on the caches' sync notification and on RequestStop, never by polling; a stop asked
  // for while it waits for the Lease ends that wait within the retry period.
  k8s::Status Run();
  // Thread-safe (a signal-handling thread calls it): Run returns; Shutdown does the rest.
  void RequestStop();

  bool CachesSynced() const;
  // The priority cap of a namespace for the admission webhook (issue 17).
  std::optional<reconcilers::PriorityCap> NamespaceCap(const std::string& ns) const;
  reconcilers::RunController& engine() { return *engine_; }
  Metrics& metrics() { return *metrics_; }

  // GET /queue (`json_errors` false: errors as text) and /api/queue (errors as {"error": ...}) on
  // the metrics port: with --queue-auth=false one page of the request's query (dashboard_request.h)
  // as JSON, every run to anyone; else 401 with a sentence naming the aggregated queue API, which
  // is where the queue is read (berth takes no user credential: issue 44, 4).
  HttpReply QueueReply(const HttpRequestView& req, bool json_errors) const;
  // Issue 47: the queue API's usage answer (usage_api.h), the per-user stores read with `reader`.
  HttpReply UsageReply(k8s::Client& reader, const UsageQuery& q, const std::string& only_user) const;
  // One page of `query` of `entries` (the engine's queue view); `scope` null: every namespace.
  std::string QueueJson(const QueueQuery& query, const std::vector<reconcilers::QueueEntry>& entries,
                        const QueueScope* scope) const;

  // Stops the engine (its queued writes are carried out), releases the Lease and closes the
  // servers; every thread berth started has ended when it returns. Idempotent (the destructor
  // calls it too).
  void Shutdown();

 private:
  // The parts of the constructor, in its order.
  void SetUpLeaderElection();
  void SetUpMetricsServer(const HttpLimits& limits);
  void SetUpWebhookServer(const HttpLimits& limits);
  void SetUpProbeServer(const HttpLimits& limits);
  void SetUpQueueApiServer(const HttpLimits& limits);
  // Blocks until the caches are synced (true) or RequestStop (false).
  bool WaitForCaches();
  // Blocks until RequestStop.
  void WaitForStop();
  // Wakes the waits above to check their condition again (thread: any).
  void Wake();

  Options options_;
  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  std::string identity_;
  std::unique_ptr<QueueSeries> queue_series_;  // issue 47: the queue's last 24 hours (before metrics_: it feeds it)
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<reconcilers::RunController> engine_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<LeaderPodLabel> leader_pod_;  // with --leader-pod (leader_pod_label.h)
  std::unique_ptr<HttpServer> metrics_server_, probe_server_, webhook_server_, queue_api_server_;
  std::unique_ptr<AccessReview> access_;
  std::unique_ptr<QueueApi> queue_api_;
  // The fleets and teams from the caches (the queue API's; the metrics port's with --queue-auth=false).
  std::unique_ptr<EngineSummaries> dashboard_;
  std::mutex wait_mu_;  // with wait_cv_: Run's waits (the caches' sync, RequestStop)
  std::condition_variable wait_cv_;
  std::atomic<bool> stop_{false};  // RequestStop (also what LeaderElector::Acquire checks)
};

}  // namespace berth::controller
