#include "controller/dashboard_api.h"

#include <spdlog/spdlog.h>

#include "controller/dashboard_assets.h"
#include "controller/dashboard_request.h"
#include "k8s/json.h"

namespace berth::controller {

namespace json = k8s::json;

namespace {

HttpReply JsonReply(int status, std::string body) { return HttpReply{status, "application/json", std::move(body), {}}; }
HttpReply JsonError(int status, const std::string& message) {
  return JsonReply(status, R"({"error":)" + json::Quote(message) + "}");
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
  server.Handle(
      "/api/runs/",
      [this](const HttpRequestView& req) {
        RunRequest run;
        std::string message;
        if (int status = ParseRunRequest(req, run, message); status != 0) return JsonError(status, message);
        return run.action.empty() ? RunDetail(req, run.ns, run.name) : SetPriority(req, run.ns, run.name);
      },
      RouteOptions{{"GET", "HEAD", "POST"}, kMaxDashboardBodyBytes});
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
  // Read with the viewer's identity only: RBAC decides what each viewer may see.
  std::string token = BearerToken(req);
  if (token.empty()) {
    return JsonError(401, "no bearer token: enter your Kubernetes token (a run's details are read with your identity)");
  }
  if (!IsDnsLabel(ns) || !IsDnsSubdomain(name)) return JsonError(400, "invalid namespace or name");
  const std::string ns_seg = k8s::UrlEncode(ns), name_seg = k8s::UrlEncode(name);
  auto run = client_->Get(k8s::resources::kRuns.Path(ns_seg, name_seg), token);
  if (!run.ok()) {
    int code = run.status().code() == 0 ? 502 : run.status().code();
    return JsonError(code, run.status().message());
  }
  std::string selector = "involvedObject.kind=Run,involvedObject.name=" + name;
  auto events = client_->Get(k8s::resources::kEvents.Path(ns_seg) + "?fieldSelector=" + k8s::UrlEncode(selector), token);
  std::string ev = "[]";
  if (events.ok()) {
    if (const json::Value* items = json::Find(*events, {"items"}); items != nullptr) ev = json::Serialize(*items);
  }
  // What the page shows needs neither; annotations may hold what other tools stored (e.g. the
  // last-applied configuration), managedFields is bulk.
  if (run->IsObject() && run->HasMember("metadata") && (*run)["metadata"].IsObject()) {
    (*run)["metadata"].RemoveMember("annotations");
    (*run)["metadata"].RemoveMember("managedFields");
  }
  return JsonReply(200, R"({"run":)" + json::Serialize(*run) + R"(,"events":)" + ev + "}");
}

HttpReply DashboardApi::SetPriority(const HttpRequestView& req, const std::string& ns, const std::string& name) const {
  int64_t priority = 0;
  std::string message;
  if (int status = CheckPriorityWrite(req, priority, message); status != 0) return JsonError(status, message);
  if (!IsDnsLabel(ns) || !IsDnsSubdomain(name)) return JsonError(400, "invalid namespace or name");
  std::string token = BearerToken(req);
  auto res = client_->MergePatch(k8s::resources::kRuns.Path(k8s::UrlEncode(ns), k8s::UrlEncode(name)),
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
