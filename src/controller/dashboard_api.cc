#include "controller/dashboard_api.h"

#include <spdlog/spdlog.h>

#include "controller/dashboard_assets.h"
#include "k8s/json.h"

namespace berth::controller {

namespace json = k8s::json;

namespace {

HttpReply JsonReply(int status, std::string body) { return HttpReply{status, "application/json", std::move(body), {}}; }
HttpReply JsonError(int status, const std::string& message) {
  return JsonReply(status, R"({"error":)" + json::Quote(message) + "}");
}

// The viewer's token: `Authorization: Bearer T`, or `X-Berth-Token: T` when a proxy in front
// (kubectl proxy, the API server's service proxy) consumes the Authorization header itself.
std::string BearerToken(const HttpRequestView& req) {
  std::string auth = req.Header("authorization");
  const std::string prefix = "Bearer ";
  if (auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0) return auth.substr(prefix.size());
  return req.Header("x-berth-token");
}

std::string ContentTypeFor(const std::string& name) {
  auto ends = [&](const char* ext) {
    std::string e(ext);
    return name.size() >= e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  if (ends(".json")) return "application/json";
  return "application/octet-stream";
}

// Splits "/api/runs/NS/NAME[/priority]" into its parts.
bool RunPath(const std::string& path, std::string& ns, std::string& name, std::string& rest) {
  const std::string prefix = "/api/runs/";
  if (path.rfind(prefix, 0) != 0) return false;
  std::string tail = path.substr(prefix.size());
  auto a = tail.find('/');
  if (a == std::string::npos || a == 0) return false;
  ns = tail.substr(0, a);
  tail = tail.substr(a + 1);
  auto b = tail.find('/');
  name = b == std::string::npos ? tail : tail.substr(0, b);
  rest = b == std::string::npos ? "" : tail.substr(b + 1);
  return !name.empty();
}

}  // namespace

DashboardApi::DashboardApi(k8s::ClientPtr client, const reconcilers::RunController& engine, QueueJsonFn queue_json)
    : client_(std::move(client)), engine_(engine), queue_json_(std::move(queue_json)) {}

void DashboardApi::Register(HttpServer& server) {
  server.Handle("/", [this](const HttpRequestView& req) { return Static(req); });
  server.Handle("/static/", [this](const HttpRequestView& req) { return Static(req); });
  server.Handle("/api/queue", [this](const HttpRequestView& req) {
    size_t limit = 0;
    if (auto it = req.query.find("limit"); it != req.query.end()) {
      try {
        limit = static_cast<size_t>(std::stoul(it->second));
      } catch (...) {
        return JsonError(400, "limit must be a non-negative integer");
      }
    }
    return JsonReply(200, queue_json_(req.query.count("namespace") ? req.query.at("namespace") : "", limit));
  });
  server.Handle("/api/fleets", [this](const HttpRequestView&) { return Fleets(); });
  server.Handle("/api/runs/", [this](const HttpRequestView& req) {
    std::string ns, name, rest;
    if (!RunPath(req.path, ns, name, rest)) return JsonError(404, "expected /api/runs/NAMESPACE/NAME");
    if (rest.empty() && req.method == "GET") return RunDetail(req, ns, name);
    if (rest == "priority" && req.method == "POST") return SetPriority(req, ns, name);
    return JsonError(405, "use GET /api/runs/NS/NAME or POST /api/runs/NS/NAME/priority");
  });
}

HttpReply DashboardApi::Static(const HttpRequestView& req) const {
  if (req.method != "GET" && req.method != "HEAD") return HttpReply{405, "text/plain; charset=utf-8", "method not allowed\n", {}};
  std::string name;
  if (req.path == "/" || req.path == "/index.html") {
    name = "index.html";
  } else if (req.path.rfind("/static/", 0) == 0) {
    name = req.path.substr(8);
  }
  const auto& assets = DashboardAssets();
  auto it = assets.find(name);
  if (name.empty() || name.find('/') != std::string::npos || it == assets.end()) {
    return HttpReply{404, "text/plain; charset=utf-8", "not found\n", {}};
  }
  HttpReply r{200, ContentTypeFor(name), it->second, {}};
  r.headers["Content-Security-Policy"] = "default-src 'self'; frame-ancestors 'none'";
  r.headers["X-Content-Type-Options"] = "nosniff";
  r.headers["Cache-Control"] = "no-cache";
  return r;
}

HttpReply DashboardApi::Fleets() const {
  auto fleets = engine_.Fleets();
  std::sort(fleets.begin(), fleets.end(), [](const auto& a, const auto& b) { return a->meta.name < b->meta.name; });
  std::string out = R"({"items":[)";
  for (size_t i = 0; i < fleets.size(); ++i) {
    const auto& f = *fleets[i];
    int64_t total = 0, ready = 0, blocks = 0, busy = 0;
    std::string inst = "[";
    for (size_t j = 0; j < f.instances.size(); ++j) {
      const auto& r = f.instances[j];
      ++total;
      if (r.state == "Idle" || r.state == "Busy" || r.state == "Full") ++ready;
      blocks += r.total_blocks;
      busy += r.busy_blocks;
      inst += (j ? "," : "") + std::string(R"({"node":)") + json::Quote(r.node) + R"(,"totalBlocks":)" +
              std::to_string(r.total_blocks) + R"(,"busyBlocks":)" + std::to_string(r.busy_blocks) + R"(,"runsStarted":)" +
              std::to_string(r.runs_started) + R"(,"expiresAt":)" + json::Quote(r.expires_at) + R"(,"state":)" +
              json::Quote(r.state) + R"(,"message":)" + json::Quote(r.message) + "}";
    }
    inst += "]";
    std::string conds = "[";
    for (size_t j = 0; j < f.conditions.size(); ++j) {
      const auto& c = f.conditions[j];
      conds += (j ? "," : "") + std::string(R"({"type":)") + json::Quote(c.type) + R"(,"status":)" + json::Quote(c.status) +
               R"(,"reason":)" + json::Quote(c.reason) + R"(,"message":)" + json::Quote(c.message) + "}";
    }
    conds += "]";
    out += (i ? "," : "") + std::string(R"({"name":)") + json::Quote(f.meta.name) + R"(,"blocks":)" +
           json::Quote(f.blocks_auto ? "auto" : std::to_string(f.blocks)) + R"(,"placement":)" +
           json::Quote(f.cluster_placement ? "cluster" : "any") + R"(,"maxRunsPerInstance":)" +
           (f.max_runs_per_instance ? std::to_string(*f.max_runs_per_instance) : "null") + R"(,"totalInstances":)" +
           std::to_string(total) + R"(,"readyInstances":)" + std::to_string(ready) + R"(,"totalBlocks":)" +
           std::to_string(blocks) + R"(,"busyBlocks":)" + std::to_string(busy) + R"(,"conditions":)" + conds +
           R"(,"instances":)" + inst + "}";
  }
  out += "]}";
  return JsonReply(200, out);
}

HttpReply DashboardApi::RunDetail(const HttpRequestView& req, const std::string& ns, const std::string& name) const {
  std::string token = BearerToken(req);
  auto run = client_->Get(k8s::resources::kRuns.Path(ns, name), token);
  if (!run.ok()) {
    int code = run.status().code() == 0 ? 502 : run.status().code();
    return JsonError(code, run.status().message());
  }
  std::string selector = "involvedObject.kind=Run,involvedObject.name=" + name;
  auto events = client_->Get(k8s::resources::kEvents.Path(ns) + "?fieldSelector=" + k8s::UrlEncode(selector), token);
  std::string ev = "[]";
  if (events.ok()) {
    if (const json::Value* items = json::Find(*events, {"items"}); items != nullptr) ev = json::Serialize(*items);
  }
  if (token.empty()) {
    // Read with the controller's identity: leave out the Pod template (it may carry env values
    // the viewer has no right to see). With the viewer's token RBAC decides and it is shown.
    if (json::Value* spec = run->HasMember("spec") ? &(*run)["spec"] : nullptr; spec != nullptr && spec->IsObject()) {
      spec->RemoveMember("template");
    }
  }
  return JsonReply(200, R"({"run":)" + json::Serialize(*run) + R"(,"events":)" + ev + "}");
}

HttpReply DashboardApi::SetPriority(const HttpRequestView& req, const std::string& ns, const std::string& name) const {
  // Cross-site protection first: nothing below runs for a forged request.
  if (req.Header("x-berth-csrf") != "1") return JsonError(403, "missing X-Berth-CSRF header (cross-site requests are refused)");
  if (req.Header("content-type").rfind("application/json", 0) != 0) return JsonError(403, "the body must be application/json");
  std::string origin = req.Header("origin");
  if (!origin.empty()) {
    auto scheme = origin.find("://");
    std::string origin_host = scheme == std::string::npos ? origin : origin.substr(scheme + 3);
    // Behind a proxy the Host is the proxy's upstream; the proxy reports the original host.
    if (origin_host != req.Header("host") && origin_host != req.Header("x-forwarded-host")) {
      return JsonError(403, "cross-origin request refused (Origin " + origin + ")");
    }
  }
  std::string token = BearerToken(req);
  if (token.empty()) {
    return JsonError(401, "no bearer token: enter your Kubernetes token (the change is made with your identity)");
  }
  auto body = json::Parse(req.body);
  if (!body.ok() || !body->IsObject()) return JsonError(400, "the body must be a JSON object like {\"priority\": 90}");
  const json::Value* p = json::Find(*body, {"priority"});
  if (p == nullptr || !p->IsInt64() || p->GetInt64() < 0 || p->GetInt64() > 100) {
    return JsonError(422, "priority must be an integer from 0 to 100");
  }
  int64_t priority = p->GetInt64();
  auto res = client_->MergePatch(k8s::resources::kRuns.Path(ns, name),
                                 R"({"spec":{"priority":)" + std::to_string(priority) + "}}", token);
  if (!res.ok()) {
    int code = res.status().code() == 0 ? 502 : res.status().code();
    return JsonError(code, res.status().message());
  }
  spdlog::info("dashboard: priority of run {}/{} set to {} with the viewer's token", ns, name, priority);
  const json::Value* meta = json::Find(*res, {"metadata"});  // absent from an unexpected answer
  const int64_t generation = meta != nullptr ? json::GetInt(*meta, "generation") : 0;
  return JsonReply(200, R"({"namespace":)" + json::Quote(ns) + R"(,"name":)" + json::Quote(name) + R"(,"priority":)" +
                            std::to_string(priority) + R"(,"generation":)" +
                            std::to_string(generation) + "}");
}

}  // namespace berth::controller
