#pragma once
// The dashboard's HTTP API and static files, served by `kubectl berth dashboard` on the user's
// own machine (issue 44, 4): every read and write is made with the user's own kubeconfig (the
// client's credentials); berth's controller serves no page and no route that acts for a user.
// The queue, fleets, teams and usage come from berth's aggregated queue API through the API server; a
// run's details (metadata.annotations and metadata.managedFields left out of the answer) and its
// logs (the tail of each rank's Pod of its current attempt, through the API server's pods/log,
// with a cap on lines, bytes and ranks) are read from the API server, and writes (priority
// changes; stop, suspend and resume as spec.stop / spec.suspend) sent to it. Namespace and name in
// a path are checked as Kubernetes names (400) and escaped before they reach an API path.
// Cross-site requests are refused: a write needs the X-Berth-CSRF header (which a cross-site form
// cannot send without a CORS preflight that berth never allows), a JSON body, and an Origin of
// the page's own Host when one is sent (kubectl berth dashboard also refuses any other Host).

#include <functional>
#include <optional>
#include <string>

#include "controller/dashboard_request.h"
#include "controller/http_server.h"
#include "controller/usage_api.h"
#include "k8s/client.h"
#include "reconcilers/engine/engine_api.h"
#include "runops/run_control.h"

namespace berth::controller {

// Per rank, at most this many bytes of log (pods/log limitBytes), and at most this many ranks in
// one answer when no rank is asked for.
inline constexpr int64_t kMaxLogBytesPerRank = 256 * 1024;
inline constexpr int kMaxLogRanks = 16;

// What kubectl berth dashboard reads through berth's aggregated queue API.
struct LocalSources {
  std::function<HttpReply(const HttpRequestView& req)> queue;  // GET /api/queue
  std::function<HttpReply()> fleets, teams;                    // GET /api/fleets, /api/teams
  // Issue 47, the Usage page: GET /api/usage (the query checked first) and /api/usage/queue.
  std::function<HttpReply(const UsageQuery& query)> usage;
  std::function<HttpReply()> queue_history;
  // The priority cap of a namespace (for the note of a priority change), or none.
  std::function<std::optional<reconcilers::PriorityCap>(const std::string& ns)> cap_of;
};

class DashboardApi {
 public:
  // `user_client` holds the user's own credentials and makes every request.
  DashboardApi(k8s::ClientPtr user_client, LocalSources sources);

  // Routes: /, /static/*, /api/queue, /api/fleets, /api/teams, /api/usage, /api/usage/queue,
  // /api/runs/...
  void Register(HttpServer& server);

  HttpReply RunDetail(const std::string& ns, const std::string& name) const;
  HttpReply SetPriority(const HttpRequestView& req, const std::string& ns, const std::string& name) const;
  HttpReply RunLogs(const HttpRequestView& req, const std::string& ns, const std::string& name) const;
  // POST .../stop|suspend|resume: checks the run as the user reads it (409 with a sentence when
  // the change does not apply, e.g. an ended run) and patches spec.stop / spec.suspend, guarded by
  // the resourceVersion read (a few attempts on 409 Conflict).
  HttpReply ControlRun(const HttpRequestView& req, const std::string& ns, const std::string& name, runops::Control c) const;
  HttpReply Static(const HttpRequestView& req) const;

 private:
  k8s::ClientPtr client_;
  LocalSources local_;
};

// The fleets and the teams as the dashboard shows them, from the controller's caches: the queue
// API's .../fleets and .../teams (queue_api.h), and the metrics port's /api/fleets and /api/teams
// with --queue-auth=false (local tests).
class EngineSummaries {
 public:
  explicit EngineSummaries(const reconcilers::EngineApi& engine) : engine_(engine) {}
  // {"items":[{"name","blocks","placement",...,"instances":[...]}]}, fleets by name.
  HttpReply Fleets() const;
  // The cached Teams by name (api/v1alpha1/http_api.h EncodeTeamsPage).
  HttpReply Teams() const;

 private:
  const reconcilers::EngineApi& engine_;
};

}  // namespace berth::controller
