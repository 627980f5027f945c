#pragma once
// The aggregated queue API (issue 44, 4): group queue.berth.dev, version v1alpha1, registered with
// the API server by an APIService (the chart's apiservice.yaml), as Kueue's visibility API and
// metrics-server are. The API server authenticates the user (kubectl berth queue, kubectl get
// --raw, kubectl berth dashboard: the user's own kubeconfig), authorizes the request with RBAC
// (the chart lets every authenticated user get the resources below) and proxies it here over
// TLS with its proxy client certificate and the user's name in front-proxy headers; berth checks
// that certificate (controller/front_proxy.h) and asks the API server with SubjectAccessReviews
// what this user may see (controller/access_review.h). berth never receives the user's
// credential.
//
//   GET /apis, /apis/queue.berth.dev, /apis/queue.berth.dev/v1alpha1   discovery documents
//   GET /apis/queue.berth.dev/v1alpha1/queue[?limit=&continue=]        the queue (every namespace the
//       user may list runs.berth.dev in; the JSON of the old /queue, api/v1alpha1/http_api.h)
//   GET /apis/queue.berth.dev/v1alpha1/namespaces/NS/queue[?...]       one namespace (403 if the user may
//       not list runs there)
//   GET /apis/queue.berth.dev/v1alpha1/fleets                          the dashboard's fleets (user may list
//       fleets.berth.dev)
//   GET /apis/queue.berth.dev/v1alpha1/teams                           the dashboard's teams (user may list
//       teams.berth.dev)
//   GET /apis/queue.berth.dev/v1alpha1/usage[?since=7d&by=team|namespace|user|fleet]
//       recorded usage (controller/usage_api.h; user may list teams.berth.dev); by=user: every
//       user's row for who may get configmaps in berth's namespace (where the per-user stores
//       are), else only the asking user's own
//   GET /apis/queue.berth.dev/v1alpha1/usage/queue                     the queue's last 24 hours, in memory
//       (controller/queue_series.h; the same permission as the usage: user may list teams.berth.dev)
//   GET /healthz, /readyz, /livez                                      ok (no identity needed)
// Every other request, and any of the above without a verified proxy certificate or a user, is
// refused with a Kubernetes Status (401, 403, 404).

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controller/access_review.h"
#include "controller/dashboard_request.h"
#include "controller/front_proxy.h"
#include "controller/http_server.h"
#include "controller/usage_api.h"
#include "k8s/client.h"
#include "reconcilers/engine/engine_api.h"

namespace berth::controller {

inline constexpr const char* kQueueApiGroup = "queue.berth.dev";
inline constexpr const char* kQueueApiVersion = "v1alpha1";

// What the metrics port's /queue, /api/queue, /api/fleets and /api/teams answer (401) unless
// --queue-auth=false.
inline constexpr const char* kQueueMovedSentence =
    "berth takes no user credential: the queue, fleets and teams are read through the Kubernetes API server "
    "(kubectl berth queue, kubectl berth dashboard, or kubectl get --raw /apis/queue.berth.dev/v1alpha1/namespaces/NS/queue)";

class QueueApi {
 public:
  // The queue now (the engine's view), and one page of it as JSON for a scope.
  using EntriesFn = std::function<std::vector<reconcilers::QueueEntry>()>;
  using PageFn = std::function<std::string(const QueueQuery& query, const std::vector<reconcilers::QueueEntry>& entries,
                                           const QueueScope& scope)>;
  using ReplyFn = std::function<HttpReply()>;

  // `reviewer`: berth's own client (reads the request-header ConfigMap, creates
  // SubjectAccessReviews), not held back by leader election's write guard.
  QueueApi(k8s::ClientPtr reviewer, const AccessReview& reviews, EntriesFn entries, PageFn page, ReplyFn fleets,
           ReplyFn teams);

  // Issue 47: the usage answer for a parsed query; `only_user` as in UsageInputs.
  using UsageFn = std::function<HttpReply(const UsageQuery& query, const std::string& only_user)>;
  // `users_ns`: berth's own namespace (whoever may get configmaps there sees every user's row).
  void SetUsage(UsageFn usage, std::string users_ns) {
    usage_ = std::move(usage);
    users_ns_ = std::move(users_ns);
  }

  // Issue 47: the answer of .../usage/queue (the queue's in-memory series).
  void SetQueueHistory(ReplyFn history) { queue_history_ = std::move(history); }

  // Routes on `server` (which must be a TLS server); sets its client CA once it is known.
  void Register(HttpServer& server);
  // Reads the request-header settings from kube-system/extension-apiserver-authentication and
  // gives the CA to the server. Also done again by requests, at most every 10 s while it fails
  // and every minute while it works (a rotated CA is taken within a minute).
  k8s::Status Refresh();

  HttpReply Serve(const HttpRequestView& req);

 private:
  std::optional<FrontProxyConfig> Config();
  // One page of the queue (of `ns`, or every namespace) as `user` may see it.
  HttpReply Queue(const HttpRequestView& req, const UserInfo& user, const std::string& ns);
  HttpReply Usage(const HttpRequestView& req, const UserInfo& user);

  k8s::ClientPtr reviewer_;
  const AccessReview& reviews_;
  EntriesFn entries_;
  PageFn page_;
  ReplyFn fleets_, teams_;
  UsageFn usage_;
  ReplyFn queue_history_;
  std::string users_ns_;
  HttpServer* server_ = nullptr;
  std::mutex mu_;
  std::optional<FrontProxyConfig> config_;
  std::chrono::steady_clock::time_point loaded_{};
  bool tried_ = false;
};

// A Kubernetes Status answer ({"kind":"Status",...}) with `code`, `reason` and `message`.
HttpReply StatusReply(int code, const std::string& reason, const std::string& message);

}  // namespace berth::controller
