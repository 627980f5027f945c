#pragma once
// The dashboard API's checks of a request, before anything reaches the API server: which run a
// path names (namespace and name validated as Kubernetes names), and the cross-site and body
// checks of a priority change. Pure functions (no client, no network), used by
// DashboardApi and driven directly by fuzz/http_fuzz.cc.

#include <cstdint>
#include <string>
#include <string_view>

#include "controller/http_request.h"

namespace berth::controller {

// The largest body the dashboard API reads (a priority change is ~20 bytes); 413 above it.
inline constexpr size_t kMaxDashboardBodyBytes = 16 * 1024;

// An RFC 1123 DNS label (a namespace): 1-63 of [a-z0-9-], starting and ending alphanumeric.
bool IsDnsLabel(std::string_view s);
// An RFC 1123 DNS subdomain (a Run's name): 1-253 characters, dot-separated DNS labels.
bool IsDnsSubdomain(std::string_view s);

// "/api/runs/NS/NAME" (action "", GET), "/api/runs/NS/NAME/logs" (GET), and the writes
// "/api/runs/NS/NAME/priority", ".../stop", ".../suspend", ".../resume" (POST).
struct RunRequest {
  std::string ns, name, action;
};
// 0 and `out` filled; or an HTTP status (400 for a malformed or invalid namespace or name, 404 for
// another shape of path, 405 for a method the action does not take) with a sentence in `message`.
int ParseRunRequest(const HttpRequestView& req, RunRequest& out, std::string& message);

// The checks of POST .../priority, in order: X-Berth-CSRF: 1 (403), a JSON content type (403), an
// Origin, when one is sent, of the request's own Host (403), a JSON object body (400) with an
// integer "priority" from 0 to 100 (422). Returns 0 and sets `priority`, or the status and sentence.
// No credential is read: kubectl berth dashboard's own client writes with the user's kubeconfig.
int CheckPriorityWrite(const HttpRequestView& req, int64_t& priority, std::string& message);

// The checks of POST .../stop, .../suspend and .../resume: the same cross-site checks, in the same
// order, then a body that is exactly the empty JSON object {} (400 otherwise).
int CheckControlWrite(const HttpRequestView& req, std::string& message);

// The query of GET .../logs: `rank` (optional, a whole number below 10000) and `tailLines`
// (1 to kMaxLogTailLines, default kDefaultLogTailLines); 400 with a sentence otherwise.
inline constexpr int kDefaultLogTailLines = 200;
inline constexpr int kMaxLogTailLines = 2000;
struct LogsQuery {
  int rank = -1;  // -1: every rank
  int tail_lines = kDefaultLogTailLines;
};
int ParseLogsQuery(const HttpRequestView& req, LogsQuery& out, std::string& message);

// The query of GET /queue and /api/queue: `namespace` (a namespace name; empty: every one),
// `limit` (1 to kMaxQueuePage; absent or 0: kDefaultQueuePage; more: kMaxQueuePage) and
// `continue` (the token of the previous page's answer: the position of its last item). An answer
// holds at most `limit` items and, when more follow, "continue". 400 with a sentence otherwise.
// Other parameters are ignored.
inline constexpr size_t kDefaultQueuePage = 500;
inline constexpr size_t kMaxQueuePage = 1000;
struct QueueQuery {
  std::string ns;
  size_t limit = kDefaultQueuePage;
  int64_t after = 0;  // items after this position (0: from the first)
};
int ParseQueueQuery(const HttpRequestView& req, QueueQuery& out, std::string& message);

}  // namespace berth::controller
