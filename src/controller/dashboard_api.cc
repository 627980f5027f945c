#include "controller/dashboard_api.h"

#include <spdlog/spdlog.h>

#include "controller/dashboard_assets.h"
#include "controller/dashboard_request.h"
#include "controller/queue_api.h"
#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/http_api.h"
#include "k8s/core_types.h"
#include "k8s/json.h"
#include "runops/log_targets.h"
#include "runops/run_domain.h"

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
  if (ends(".txt")) return "text/plain; charset=utf-8";  // the vendored library's licence
  return "application/octet-stream";
}

// `s` with every byte that is not part of well-formed UTF-8 replaced by '?' (log output is
// whatever a program wrote; the answer is JSON).
std::string ValidUtf8(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size() && !(n == 2 && c < 0xC2) && !(n == 4 && c > 0xF4);
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && n == 3) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xE0 && c1 < 0xA0) && !(c == 0xED && c1 >= 0xA0);  // overlong, surrogates
    }
    if (ok && n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xF0 && c1 < 0x90) && !(c == 0xF4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

// One rank's entry of the logs answer: {"rank","pod","container"} and its last `tail_lines` lines
// ("lines", "truncated") or why they could not be read ("error", with the "status" of an answer).
// Read with the transport's credentials: the user's own.
std::string RankLogJson(k8s::Transport& transport, const std::string& ns, const runops::LogTarget& t, int tail_lines) {
  k8s::HttpRequest get;
  get.method = "GET";
  get.path = runops::LogPath(ns, t, false) + "&tailLines=" + std::to_string(tail_lines) +
             "&limitBytes=" + std::to_string(kMaxLogBytesPerRank);
  std::string out = std::string(R"({"rank":)") + std::to_string(t.rank) + R"(,"pod":)" + json::Quote(t.pod) +
                    R"(,"container":)" + json::Quote(t.container);
  auto r = transport.Send(get);
  if (!r.ok()) return out + R"(,"error":)" + json::Quote(r.status().message()) + "}";
  if (r->status < 200 || r->status >= 300) {
    k8s::Status s = k8s::Client::ErrorFromResponse(*r);
    return out + R"(,"status":)" + std::to_string(r->status) + R"(,"error":)" + json::Quote(s.message()) + "}";
  }
  std::string lines = "[";
  const auto split = runops::SplitLog(r->body);
  for (size_t j = 0; j < split.size(); ++j) lines += (j ? "," : "") + json::Quote(ValidUtf8(split[j]));
  lines += "]";
  const bool truncated = r->body.size() >= static_cast<size_t>(kMaxLogBytesPerRank);
  return out + R"(,"truncated":)" + std::string(truncated ? "true" : "false") + R"(,"lines":)" + lines + "}";
}

HttpReply ApiError(const k8s::Status& s) { return JsonError(s.code() == 0 ? 502 : s.code(), s.message()); }

}  // namespace

DashboardApi::DashboardApi(k8s::ClientPtr user_client, LocalSources sources)
    : client_(std::move(user_client)), local_(std::move(sources)) {}

void DashboardApi::Register(HttpServer& server) {
  server.Handle("/", [this](const HttpRequestView& req) { return Static(req); });
  server.Handle("/static/", [this](const HttpRequestView& req) { return Static(req); });
  server.Handle("/api/queue", [this](const HttpRequestView& req) { return local_.queue(req); },
                RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  server.Handle("/api/fleets", [this](const HttpRequestView&) { return local_.fleets(); },
                RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  server.Handle("/api/teams", [this](const HttpRequestView&) { return local_.teams(); },
                RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  server.Handle("/api/usage",
                [this](const HttpRequestView& req) {
                  UsageQuery q;
                  std::string message;
                  if (ParseUsageQuery(req, q, message) != 0) return JsonError(400, message);
                  return local_.usage(q);
                },
                RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  server.Handle("/api/usage/queue", [this](const HttpRequestView&) { return local_.queue_history(); },
                RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  server.Handle(
      "/api/runs/",
      [this](const HttpRequestView& req) {
        RunRequest run;
        std::string message;
        if (int status = ParseRunRequest(req, run, message); status != 0) return JsonError(status, message);
        if (run.action.empty()) return RunDetail(run.ns, run.name);
        if (run.action == "logs") return RunLogs(req, run.ns, run.name);
        if (run.action == "stop") return ControlRun(req, run.ns, run.name, runops::Control::kStop);
        if (run.action == "suspend") return ControlRun(req, run.ns, run.name, runops::Control::kSuspend);
        if (run.action == "resume") return ControlRun(req, run.ns, run.name, runops::Control::kResume);
        return SetPriority(req, run.ns, run.name);
      },
      RouteOptions{{"GET", "HEAD", "POST"}, kMaxDashboardBodyBytes, /*heavy=*/true});
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

namespace {

// A fleet's topology levels (issue 48) as a JSON array of label keys, outermost first (a
// topologyKey fleet: that key; none: []).
std::string TopologyLevels(const api::v1alpha1::FleetSpec& spec) {
  std::vector<std::string> levels = spec.topology;
  if (levels.empty() && !spec.topology_key.empty()) levels.push_back(spec.topology_key);
  std::string out = "[";
  for (size_t i = 0; i < levels.size(); ++i) out += (i ? "," : "") + json::Quote(levels[i]);
  return out + "]";
}

}  // namespace

HttpReply EngineSummaries::Fleets() const {
  auto fleets = engine_.Fleets();
  std::sort(fleets.begin(), fleets.end(), [](const auto& a, const auto& b) { return a->meta.name < b->meta.name; });
  std::string out = R"({"items":[)";
  for (size_t i = 0; i < fleets.size(); ++i) {
    const auto& f = *fleets[i];
    int64_t total = 0, ready = 0, blocks = 0, busy = 0;
    std::string inst = "[";
    for (size_t j = 0; j < f.status.instances.size(); ++j) {
      const auto& r = f.status.instances[j];
      ++total;
      using api::v1alpha1::InstanceState;
      if (r.state == InstanceState::kIdle || r.state == InstanceState::kBusy || r.state == InstanceState::kFull) {
        ++ready;
      }
      blocks += r.total_blocks;
      busy += r.busy_blocks;
      inst += (j ? "," : "") + std::string(R"({"node":)") + json::Quote(r.node) + R"(,"totalBlocks":)" +
              std::to_string(r.total_blocks) + R"(,"busyBlocks":)" + std::to_string(r.busy_blocks) + R"(,"runsStarted":)" +
              std::to_string(r.runs_started) + R"(,"expiresAt":)" + json::Quote(api::v1alpha1::FormatTime(r.expires_at)) + R"(,"state":)" +
              json::Quote(r.state ? api::v1alpha1::ToApi(*r.state) : "") + R"(,"message":)" + json::Quote(r.message) +
              R"(,"devices":)" + json::Quote(r.devices) + R"(,"domain":)" + json::Quote(r.domain) + "}";
    }
    inst += "]";
    std::string conds = "[";
    for (size_t j = 0; j < f.status.conditions.size(); ++j) {
      const auto& c = f.status.conditions[j];
      conds += (j ? "," : "") + std::string(R"({"type":)") + json::Quote(c.type.api()) + R"(,"status":)" +
               json::Quote(api::v1alpha1::ToApi(c.status)) + R"(,"reason":)" + json::Quote(c.reason.api()) + R"(,"message":)" + json::Quote(c.message) + "}";
    }
    conds += "]";
    out += (i ? "," : "") + std::string(R"({"name":)") + json::Quote(f.meta.name) + R"(,"blocks":)" +
           json::Quote(f.spec.blocks_auto ? "auto" : std::to_string(f.spec.blocks)) + R"(,"placement":)" +
           json::Quote(f.spec.cluster_placement ? "cluster" : "any") + R"(,"maxRunsPerInstance":)" +
           (f.spec.max_runs_per_instance ? std::to_string(*f.spec.max_runs_per_instance) : "null") + R"(,"totalInstances":)" +
           std::to_string(total) + R"(,"readyInstances":)" + std::to_string(ready) + R"(,"totalBlocks":)" +
           std::to_string(blocks) + R"(,"busyBlocks":)" + std::to_string(busy) + R"(,"conditions":)" + conds +
           R"(,"topology":)" + TopologyLevels(f.spec) + R"(,"instances":)" + inst + "}";
  }
  out += "]}";
  return JsonReply(200, out);
}

HttpReply EngineSummaries::Teams() const {
  std::vector<api::v1alpha1::Team> teams;
  for (const auto& t : engine_.Teams()) teams.push_back(*t);
  std::sort(teams.begin(), teams.end(), [](const auto& a, const auto& b) { return a.meta.name < b.meta.name; });
  return JsonReply(200, api::v1alpha1::EncodeTeamsPage(teams));
}

HttpReply DashboardApi::RunDetail(const std::string& ns, const std::string& name) const {
  // Read with the user's own credentials: RBAC decides what each user may see.
  if (!IsDnsLabel(ns) || !IsDnsSubdomain(name)) return JsonError(400, "invalid namespace or name");
  const std::string ns_seg = k8s::UrlEncode(ns), name_seg = k8s::UrlEncode(name);
  auto run = client_->Get(k8s::resources::kRuns.Path(ns_seg, name_seg));
  if (!run.ok()) {
    int code = run.status().code() == 0 ? 502 : run.status().code();
    return JsonError(code, run.status().message());
  }
  std::string selector = "involvedObject.kind=Run,involvedObject.name=" + name;
  auto events = client_->Get(k8s::resources::kEvents.Path(ns_seg) + "?fieldSelector=" + k8s::UrlEncode(selector));
  const std::string ev = events.ok() ? k8s::ListItemsJson(*events) : "[]";
  // Issue 48: the topology domain holding its nodes, as kubectl berth describe says it (its Fleet
  // read with the user's credentials; none when they may not read it).
  std::vector<std::string> notes;
  const std::string domain = runops::PlacementDomain(*client_, api::v1alpha1::DecodeRunLeniently(*run), notes);
  // What the page shows needs neither; annotations may hold what other tools stored (e.g. the
  // last-applied configuration), managedFields is bulk. The run goes to the page as the API
  // server stores it (every field, as written), not as berth decodes it.
  return JsonReply(200, R"({"run":)" + k8s::JsonWithoutBulkMetadata(*run) + R"(,"events":)" + ev +
                            (domain.empty() ? "" : R"(,"domain":)" + json::Quote(domain)) + "}");
}

HttpReply DashboardApi::SetPriority(const HttpRequestView& req, const std::string& ns, const std::string& name) const {
  int64_t priority = 0;
  std::string message;
  if (int status = CheckPriorityWrite(req, priority, message); status != 0) return JsonError(status, message);
  if (!IsDnsLabel(ns) || !IsDnsSubdomain(name)) return JsonError(400, "invalid namespace or name");
  auto res = client_->MergePatch(k8s::resources::kRuns.Path(k8s::UrlEncode(ns), k8s::UrlEncode(name)),
                                 api::v1alpha1::PriorityPatch(priority, /*resource_version=*/""));
  if (!res.ok()) {
    int code = res.status().code() == 0 ? 502 : res.status().code();
    return JsonError(code, res.status().message());
  }
  spdlog::info("dashboard: priority of run {}/{} set to {} with your kubeconfig", ns, name, priority);
  const int64_t generation = k8s::DecodeMeta(*res).generation;  // 0 when absent from an unexpected answer
  // Without the admission webhook a priority above the namespace's cap is written and queued at
  // the cap (issue 17): say so.
  std::string cap;
  if (auto c = local_.cap_of(ns); c && priority > c->cap) {
    cap = R"(,"cap":)" + std::to_string(c->cap) + R"(,"capNote":)" + json::Quote(reconcilers::PriorityCapNote(ns, priority, *c));
  }
  return JsonReply(200, R"({"namespace":)" + json::Quote(ns) + R"(,"name":)" + json::Quote(name) + R"(,"priority":)" +
                            std::to_string(priority) + R"(,"generation":)" +
                            std::to_string(generation) + cap + "}");
}

HttpReply DashboardApi::RunLogs(const HttpRequestView& req, const std::string& ns, const std::string& name) const {
  // Read with the user's own credentials (pods and pods/log as RBAC allows them).
  if (!IsDnsLabel(ns) || !IsDnsSubdomain(name)) return JsonError(400, "invalid namespace or name");
  LogsQuery q;
  std::string message;
  if (int status = ParseLogsQuery(req, q, message); status != 0) return JsonError(status, message);
  const std::string ns_seg = k8s::UrlEncode(ns), name_seg = k8s::UrlEncode(name);
  auto run = client_->Get(k8s::resources::kRuns.Path(ns_seg, name_seg));
  if (!run.ok()) return ApiError(run.status());
  const api::v1alpha1::Run decoded = api::v1alpha1::DecodeRunLeniently(*run);
  const int64_t nodes = std::max<int64_t>(decoded.spec.nodes, 1);
  if (q.rank >= nodes) {
    return JsonError(400, "run \"" + name + "\" has " + std::to_string(nodes) + (nodes == 1 ? " rank" : " ranks") +
                              ": rank " + std::to_string(q.rank) + " is out of range");
  }
  auto pods = client_->Get(k8s::resources::kPods.Path(ns_seg) + "?labelSelector=" + k8s::UrlEncode("berth.dev/run=" + name));
  if (!pods.ok()) return ApiError(pods.status());
  std::optional<int> rank;
  if (q.rank >= 0) rank = q.rank;
  auto sel = runops::SelectLogTargets(decoded, k8s::DecodePodViews(*pods), rank);
  std::string out = R"({"namespace":)" + json::Quote(ns) + R"(,"name":)" + json::Quote(name) + R"(,"nodes":)" +
                    std::to_string(nodes) + R"(,"tailLines":)" + std::to_string(q.tail_lines);
  if (!sel.ok()) {
    // Nothing to read yet (or any more): an answer, not an error; the sentence says why.
    return JsonReply(200, out + R"(,"note":)" + json::Quote(sel.status().message()) + R"(,"ranks":[]})");
  }
  std::string note = sel->note;
  auto& targets = sel->targets;
  if (!rank && targets.size() > static_cast<size_t>(kMaxLogRanks)) {
    targets.resize(kMaxLogRanks);
    note += std::string(note.empty() ? "" : "; ") + "showing the first " + std::to_string(kMaxLogRanks) +
            " ranks; choose a rank for the others";
  }
  out += R"(,"note":)" + json::Quote(note) + R"(,"ranks":[)";
  for (size_t i = 0; i < targets.size(); ++i) {
    out += (i ? "," : "") + RankLogJson(*client_->transport(), ns, targets[i], q.tail_lines);
  }
  out += "]}";
  return JsonReply(200, out);
}

HttpReply DashboardApi::ControlRun(const HttpRequestView& req, const std::string& ns, const std::string& name,
                                   runops::Control c) const {
  std::string message;
  if (int status = CheckControlWrite(req, message); status != 0) return JsonError(status, message);
  if (!IsDnsLabel(ns) || !IsDnsSubdomain(name)) return JsonError(400, "invalid namespace or name");
  // The user's own credentials: the API server decides whether they may change the run.
  auto change = runops::ApplyControl(*client_, ns, name, c, /*attempts=*/3);
  if (!change.ok()) return ApiError(change.status());
  spdlog::info("dashboard: {} of run {}/{} requested with your kubeconfig", runops::ControlVerb(c), ns, name);
  return JsonReply(200, R"({"namespace":)" + json::Quote(ns) + R"(,"name":)" + json::Quote(name) + R"(,"action":)" +
                            json::Quote(runops::ControlVerb(c)) + R"(,"was":)" + json::Quote(change->phase) +
                            R"(,"generation":)" + std::to_string(change->generation) + "}");
}

}  // namespace berth::controller
