#include "controller/queue_api.h"

#include <spdlog/spdlog.h>

#include <set>

#include "k8s/json.h"

namespace berth::controller {

namespace json = k8s::json;

namespace {

const std::string kGroup = kQueueApiGroup;
const std::string kVersion = kQueueApiVersion;
const std::string kGroupVersion = kGroup + "/" + kVersion;
const std::string kGroupPath = "/apis/" + kGroup;
const std::string kVersionPath = kGroupPath + "/" + kVersion;

HttpReply Json(std::string body) { return HttpReply{200, "application/json", std::move(body), {}}; }

std::string GroupJson() {
  const std::string v = R"({"groupVersion":)" + json::Quote(kGroupVersion) + R"(,"version":)" + json::Quote(kVersion) + "}";
  return R"({"name":)" + json::Quote(kGroup) + R"(,"versions":[)" + v + R"(],"preferredVersion":)" + v + "}";
}

std::string ResourceListJson() {
  // The queue, namespaced (".../namespaces/NS/queue"; without a namespace: every namespace the
  // user may see); the usage (issue 47), cluster-wide; fleets and teams are read by the dashboard
  // and not listed here (they would make `kubectl get fleets` ambiguous with fleets.berth.dev).
  return R"({"kind":"APIResourceList","apiVersion":"v1","groupVersion":)" + json::Quote(kGroupVersion) +
         R"(,"resources":[{"name":"queue","singularName":"queue","namespaced":true,"kind":"Queue","verbs":["get"]},)"
         R"({"name":"usage","singularName":"usage","namespaced":false,"kind":"Usage","verbs":["get"]}]})";
}

}  // namespace

HttpReply StatusReply(int code, const std::string& reason, const std::string& message) {
  HttpReply r{code, "application/json",
              R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)" + json::Quote(message) +
                  R"(,"reason":)" + json::Quote(reason) + R"(,"code":)" + std::to_string(code) + "}",
              {}};
  return r;
}

QueueApi::QueueApi(k8s::ClientPtr reviewer, const AccessReview& reviews, EntriesFn entries, PageFn page, ReplyFn fleets,
                   ReplyFn teams)
    : reviewer_(std::move(reviewer)),
      reviews_(reviews),
      entries_(std::move(entries)),
      page_(std::move(page)),
      fleets_(std::move(fleets)),
      teams_(std::move(teams)) {}

void QueueApi::Register(HttpServer& server) {
  server_ = &server;
  server.SetClientCa("");  // client certificates are checked; the CA comes with Refresh
  auto ok = [](const HttpRequestView&) { return HttpReply{200, "text/plain; charset=utf-8", "ok", {}}; };
  for (const char* probe : {"/healthz", "/readyz", "/livez"}) server.Handle(probe, ok);
  auto serve = [this](const HttpRequestView& req) { return Serve(req); };
  server.Handle("/apis", serve);
  server.Handle(kGroupPath, serve);
  server.Handle(kVersionPath + "/", serve, RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
}

k8s::Status QueueApi::Refresh() {
  auto cm = reviewer_->Get(kAuthenticationConfigMapPath);
  std::lock_guard<std::mutex> lock(mu_);
  tried_ = true;
  loaded_ = std::chrono::steady_clock::now();
  if (!cm.ok()) {
    const std::string m = "cannot read kube-system/extension-apiserver-authentication (the request-header CA): " +
                          cm.status().message();
    spdlog::warn("queue API: {}", m);
    return k8s::Status::Error(m);
  }
  auto parsed = ParseFrontProxyConfig(*cm);
  if (!parsed.ok()) {
    spdlog::warn("queue API: {}", parsed.status().message());
    return parsed.status();
  }
  const bool changed = !config_ || config_->client_ca_pem != parsed->client_ca_pem;
  config_ = std::move(parsed).value();
  if (server_ != nullptr) server_->SetClientCa(config_->client_ca_pem);
  if (changed) spdlog::info("queue API: request-header CA loaded ({} allowed names)", config_->allowed_names.size());
  return k8s::Status();
}

std::optional<FrontProxyConfig> QueueApi::Config() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto age = std::chrono::steady_clock::now() - loaded_;
    const bool due = !tried_ || (config_ ? age > std::chrono::minutes(1) : age > std::chrono::seconds(10));
    if (!due) return config_;
    loaded_ = std::chrono::steady_clock::now();  // one request refreshes; the others go on
  }
  (void)Refresh();
  std::lock_guard<std::mutex> lock(mu_);
  return config_;
}

namespace {

// An error of the reviews as a Status answer (502 when the API server gave none).
HttpReply Refused(const k8s::Status& s) {
  return StatusReply(s.code() == 0 ? 502 : s.code(), s.reason().empty() ? "InternalError" : s.reason(), s.message());
}

// What reached berth, for an audit of the path (debug): the names of the header fields (never
// their values) and who the API server said asks.
void LogRequest(const HttpRequestView& req, const k8s::Result<UserInfo>& user) {
  if (!spdlog::should_log(spdlog::level::debug)) return;
  std::string names;
  for (const auto& [n, v] : req.fields) names += (names.empty() ? "" : ",") + n;
  std::string groups;
  if (user.ok()) {
    for (const auto& g : user->groups) groups += (groups.empty() ? "" : ",") + g;
  }
  spdlog::debug("queue API: {} {} as {} (groups {}; client certificate {}{}), header fields: {}", req.method, req.path,
                user.ok() ? user->name : "nobody", groups, req.client_verified ? "verified, CN " : "not verified",
                req.client_verified ? req.client_cn : "", names);
}

}  // namespace

HttpReply QueueApi::Serve(const HttpRequestView& req) {
  const auto config = Config();
  if (!config) {
    return StatusReply(401, "Unauthorized",
                       "berth cannot check who asks: it could not read the request-header CA from "
                       "kube-system/extension-apiserver-authentication");
  }
  auto user = AuthenticateFrontProxy(*config, req);
  LogRequest(req, user);
  if (!user.ok()) return StatusReply(401, "Unauthorized", user.status().message());
  if (req.path == "/apis") {
    return Json(R"({"kind":"APIGroupList","apiVersion":"v1","groups":[)" + GroupJson() + "]}");
  }
  if (req.path == kGroupPath) return Json(R"({"kind":"APIGroup","apiVersion":"v1",)" + GroupJson().substr(1));
  if (req.path == kVersionPath || req.path == kVersionPath + "/") return Json(ResourceListJson());
  const std::string rest = req.path.substr(kVersionPath.size());  // "/queue", "/namespaces/NS/queue", ...
  if (rest == "/fleets" || rest == "/teams") {
    const std::string resource = rest.substr(1);
    auto may = reviews_.Allowed(*user, AccessQuestion{"berth.dev", resource, "list", ""});
    if (!may.ok()) return Refused(may.status());
    if (!*may) return StatusReply(403, "Forbidden", user->name + " may not list " + resource + ".berth.dev");
    return rest == "/fleets" ? fleets_() : teams_();
  }
  if (rest == "/usage" && usage_) return Usage(req, *user);
  if (rest == "/usage/queue" && queue_history_) {
    // The queue's length and waits over time: numbers only, read on the Usage page as the usage.
    auto may = reviews_.Allowed(*user, AccessQuestion{"berth.dev", "teams", "list", ""});
    if (!may.ok()) return Refused(may.status());
    if (!*may) return StatusReply(403, "Forbidden", user->name + " may not list teams.berth.dev (the Usage page's figures)");
    return queue_history_();
  }
  const std::string routes =
      "the queue API serves .../namespaces/NS/queue, .../queue, .../usage, .../usage/queue, .../fleets and .../teams";
  std::string ns;
  if (rest.rfind("/namespaces/", 0) == 0) {
    const std::string tail = rest.substr(12);
    const size_t slash = tail.find('/');
    if (slash == std::string::npos || tail.substr(slash) != "/queue") return StatusReply(404, "NotFound", routes);
    ns = tail.substr(0, slash);
    if (!IsDnsLabel(ns)) return StatusReply(400, "BadRequest", "the namespace must be a namespace name");
  } else if (rest != "/queue") {
    return StatusReply(404, "NotFound", routes);
  }
  return Queue(req, *user, ns);
}

HttpReply QueueApi::Queue(const HttpRequestView& req, const UserInfo& user, const std::string& ns) {
  QueueQuery q;
  std::string message;
  if (ParseQueueQuery(req, q, message) != 0) return StatusReply(400, "BadRequest", message);
  if (!ns.empty()) {
    if (!q.ns.empty() && q.ns != ns) return StatusReply(400, "BadRequest", "the namespace parameter names another namespace");
    q.ns = ns;
  }
  // Who may see what, before the queue is read (a caller who may see nothing costs no queue view).
  auto scope = QueueScopeFor(reviews_, user, q.ns, {});
  if (!scope.ok()) return Refused(scope.status());
  const std::vector<reconcilers::QueueEntry> entries = entries_();
  if (!scope->all && q.ns.empty()) {
    std::set<std::string> present;
    for (const auto& e : entries) present.insert(e.ns);
    scope = QueueScopeFor(reviews_, user, "", present);
    if (!scope.ok()) return Refused(scope.status());
  }
  return Json(page_(q, entries, *scope));
}

HttpReply QueueApi::Usage(const HttpRequestView& req, const UserInfo& user) {
  UsageQuery q;
  std::string message;
  if (ParseUsageQuery(req, q, message) != 0) return StatusReply(400, "BadRequest", message);
  // The figures are the Teams' (status.usageHistory): whoever may list Teams may see them.
  auto may = reviews_.Allowed(user, AccessQuestion{"berth.dev", "teams", "list", ""});
  if (!may.ok()) return Refused(may.status());
  if (!*may) return StatusReply(403, "Forbidden", user.name + " may not list teams.berth.dev, whose usage this is");
  std::string only;
  if (q.by == "user") {
    // Every user's row for who may read the per-user stores themselves, else the user's own.
    auto admin = reviews_.Allowed(user, AccessQuestion{"", "configmaps", "get", users_ns_});
    if (!admin.ok()) return Refused(admin.status());
    if (!*admin) only = user.name;
  }
  return usage_(q, only);
}

}  // namespace berth::controller
