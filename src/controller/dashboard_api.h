#pragma once
// The dashboard's HTTP API and static files. Reads come from the controller's caches (queue,
// fleets) or, for a run's details, from the API with the viewer's own token (401 without one;
// metadata.annotations and metadata.managedFields are left out of the answer). Namespace and name
// in a path are checked as Kubernetes names (400) and escaped before they reach an API path.
// Writes (priority changes) are always forwarded with the viewer's own bearer token: the
// controller never writes on a user's behalf with its own identity. Cross-site requests are
// refused: a write needs the X-Berth-CSRF header (which a cross-site form cannot send without a
// CORS preflight that berth never allows), a JSON body, and a matching Origin when one is sent.

#include <functional>
#include <string>

#include "controller/http_server.h"
#include "k8s/client.h"
#include "reconcilers/run_controller.h"

namespace berth::controller {

class DashboardApi {
 public:
  using QueueJsonFn = std::function<std::string(const std::string& ns, size_t limit)>;
  DashboardApi(k8s::ClientPtr client, const reconcilers::RunController& engine, QueueJsonFn queue_json);

  void Register(HttpServer& server);

  HttpReply Fleets() const;
  HttpReply RunDetail(const HttpRequestView& req, const std::string& ns, const std::string& name) const;
  HttpReply SetPriority(const HttpRequestView& req, const std::string& ns, const std::string& name) const;
  HttpReply Static(const HttpRequestView& req) const;

 private:
  k8s::ClientPtr client_;
  const reconcilers::RunController& engine_;
  QueueJsonFn queue_json_;
};

}  // namespace berth::controller
