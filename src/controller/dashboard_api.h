#pragma once
// The dashboard's HTTP API and static files. Reads come from the controller's caches (the queue,
// only the runs the viewer's token may list, 401 without one; the fleets, which name no run) or,
// for a run's details, from the API with the viewer's own token (401 without one;
// metadata.annotations and metadata.managedFields are left out of the answer). Namespace and name
// in a path are checked as Kubernetes names (400) and escaped before they reach an API path.
// A run's logs (the tail of each rank's Pod of its current attempt, through the API server's
// pods/log) are read with the viewer's own token too, with a cap on lines, bytes and ranks.
// Writes (priority changes; stop, suspend and resume as spec.stop / spec.suspend) are always
// forwarded with the viewer's own bearer token: the controller never writes on a user's behalf
// with its own identity. Cross-site requests are
// refused: a write needs the X-Berth-CSRF header (which a cross-site form cannot send without a
// CORS preflight that berth never allows), a JSON body, and a matching Origin when one is sent.

#include <functional>
#include <string>

#include "controller/dashboard_request.h"
#include "controller/http_server.h"
#include "k8s/client.h"
#include "reconcilers/engine_api.h"
#include "runops/run_control.h"

namespace berth::controller {

// Per rank, at most this many bytes of log (pods/log limitBytes), and at most this many ranks in
// one answer when no rank is asked for.
inline constexpr int64_t kMaxLogBytesPerRank = 256 * 1024;
inline constexpr int kMaxLogRanks = 16;

// `kubectl berth dashboard` (issue 44, 4): the dashboard served on the user's own machine, where
// every read and write is made with the user's own kubeconfig (the client's credentials), and the
// queue, fleets and teams come from berth's aggregated queue API through the API server.
struct LocalSources {
  std::function<HttpReply(const HttpRequestView& req)> queue;  // GET /api/queue
  std::function<HttpReply()> fleets, teams;                    // GET /api/fleets, /api/teams
  // The priority cap of a namespace (for the note of a priority change), or none.
  std::function<std::optional<reconcilers::PriorityCap>(const std::string& ns)> cap_of;
};

class DashboardApi {
 public:
  // GET /api/queue: the queue as the caller may see it (Manager::QueueReply).
  using QueueReplyFn = std::function<HttpReply(const HttpRequestView& req)>;
  // `viewer_client` makes every request that carries a viewer's token: it must hold no credentials
  // of its own (no client certificate, no token; see Manager).
  // `closed_summaries`: /api/fleets and /api/teams answer 401 (they name namespaces in Conflict
  // messages; read them through the aggregated queue API instead, queue_api.h).
  DashboardApi(k8s::ClientPtr viewer_client, const reconcilers::EngineApi& engine, QueueReplyFn queue_reply,
               bool closed_summaries = false);
  // kubectl berth dashboard: `user_client` holds the user's own credentials and makes every
  // request; no request needs (or reads) a token.
  DashboardApi(k8s::ClientPtr user_client, LocalSources sources);

  // Routes: /, /static/*, /api/session ({"identity": "kubeconfig"|"token"}), /api/queue,
  // /api/fleets, /api/teams, /api/runs/...
  void Register(HttpServer& server);

  HttpReply Fleets() const;
  // GET /api/teams: the cached Teams by name (api/v1alpha1/http_api.h EncodeTeamsPage).
  HttpReply Teams() const;
  HttpReply RunDetail(const HttpRequestView& req, const std::string& ns, const std::string& name) const;
  HttpReply SetPriority(const HttpRequestView& req, const std::string& ns, const std::string& name) const;
  HttpReply RunLogs(const HttpRequestView& req, const std::string& ns, const std::string& name) const;
  // POST .../stop|suspend|resume: checks the run as the viewer reads it (409 with a sentence when
  // the change does not apply, e.g. an ended run) and patches spec.stop / spec.suspend, guarded by
  // the resourceVersion read (a few attempts on 409 Conflict), all with the viewer's token.
  HttpReply ControlRun(const HttpRequestView& req, const std::string& ns, const std::string& name, runops::Control c) const;
  HttpReply Static(const HttpRequestView& req) const;

 private:
  // The viewer's token (empty with the user's own client); `missing` when one is needed and absent.
  std::string ViewerToken(const HttpRequestView& req, bool& missing) const;

  k8s::ClientPtr client_;
  const reconcilers::EngineApi* engine_ = nullptr;  // null: kubectl berth dashboard (local_)
  QueueReplyFn queue_reply_;
  bool closed_summaries_ = false;
  LocalSources local_;
};

}  // namespace berth::controller
