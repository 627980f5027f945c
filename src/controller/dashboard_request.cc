#include "controller/dashboard_request.h"

#include <algorithm>
#include <iterator>
#include <vector>

#include "api/v1alpha1/http_api.h"
#include "base/priority.h"

namespace berth::controller {

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

bool IsDnsSubdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  while (true) {
    size_t dot = s.find('.');
    if (!IsDnsLabel(s.substr(0, dot))) return false;
    if (dot == std::string_view::npos) return true;
    s.remove_prefix(dot + 1);
  }
}

int ParseRunRequest(const HttpRequestView& req, RunRequest& out, std::string& message) {
  const std::string prefix = "/api/runs/";
  if (req.path.rfind(prefix, 0) != 0) {
    message = "expected /api/runs/NAMESPACE/NAME";
    return 404;
  }
  std::string_view tail = std::string_view(req.path).substr(prefix.size());
  std::vector<std::string_view> parts;
  while (parts.size() <= 3) {
    size_t slash = tail.find('/');
    parts.push_back(tail.substr(0, slash));
    if (slash == std::string_view::npos) break;
    tail.remove_prefix(slash + 1);
  }
  const std::string usage =
      "expected /api/runs/NAMESPACE/NAME, or /api/runs/NAMESPACE/NAME/ACTION with ACTION one of logs, priority, stop, "
      "suspend, resume";
  static const char* const kActions[] = {"logs", "priority", "stop", "suspend", "resume"};
  const bool known_action =
      parts.size() == 3 && std::any_of(std::begin(kActions), std::end(kActions), [&](const char* a) { return parts[2] == a; });
  if (parts.size() < 2 || parts.size() > 3 || (parts.size() == 3 && !known_action)) {
    message = usage;
    return 404;
  }
  if (!IsDnsLabel(parts[0])) {
    message = "the namespace must be a DNS label (lower-case letters, digits and '-', at most 63)";
    return 400;
  }
  if (!IsDnsSubdomain(parts[1])) {
    message = "the run's name must be a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253)";
    return 400;
  }
  out.ns = std::string(parts[0]);
  out.name = std::string(parts[1]);
  out.action = parts.size() == 3 ? std::string(parts[2]) : "";
  const bool read = out.action.empty() || out.action == "logs";
  if (read && req.method != "GET" && req.method != "HEAD") {
    message = "use GET for /api/runs/NS/NAME and /api/runs/NS/NAME/logs";
    return 405;
  }
  if (!read && req.method != "POST") {
    message = "use POST for /api/runs/NS/NAME/" + out.action;
    return 405;
  }
  return 0;
}

namespace {

// The cross-site checks every write shares, in order (see the header).
int CheckWriteHeaders(const HttpRequestView& req, std::string& message) {
  // Cross-site protection first: nothing below runs for a forged request.
  if (req.Header("x-berth-csrf") != "1") {
    message = "missing X-Berth-CSRF header (cross-site requests are refused)";
    return 403;
  }
  if (req.Header("content-type").rfind("application/json", 0) != 0) {
    message = "the body must be application/json";
    return 403;
  }
  std::string origin = req.Header("origin");
  if (!origin.empty()) {
    auto scheme = origin.find("://");
    std::string origin_host = scheme == std::string::npos ? origin : origin.substr(scheme + 3);
    if (origin_host != req.Header("host")) {
      message = "cross-origin request refused (Origin " + origin + ")";
      return 403;
    }
  }
  return 0;
}

// A whole number from 0 to `max` written with digits only; -1 otherwise.
int SmallNumber(const std::string& s, int max) {
  if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return -1;
  int v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v <= max ? v : -1;
}

}  // namespace

int CheckControlWrite(const HttpRequestView& req, std::string& message) {
  if (int status = CheckWriteHeaders(req, message); status != 0) return status;
  if (!api::v1alpha1::IsEmptyObjectBody(req.body)) {
    message = "the body must be the empty JSON object {}";
    return 400;
  }
  return 0;
}

int ParseLogsQuery(const HttpRequestView& req, LogsQuery& out, std::string& message) {
  for (const auto& [key, value] : req.query) {
    if (key == "rank") {
      out.rank = SmallNumber(value, 9999);
      if (out.rank < 0) {
        message = "rank must be a whole number (a rank of the run: 0, 1, ...)";
        return 400;
      }
    } else if (key == "tailLines") {
      out.tail_lines = SmallNumber(value, kMaxLogTailLines);
      if (out.tail_lines < 1) {
        message = "tailLines must be a whole number from 1 to " + std::to_string(kMaxLogTailLines);
        return 400;
      }
    } else {
      message = "unknown query parameter \"" + key + "\" (logs takes rank and tailLines)";
      return 400;
    }
  }
  return 0;
}

int CheckPriorityWrite(const HttpRequestView& req, int64_t& priority, std::string& message) {
  if (int status = CheckWriteHeaders(req, message); status != 0) return status;
  const api::v1alpha1::PriorityBody body = api::v1alpha1::DecodePriorityBody(req.body);
  if (!body.is_object) {
    message = "the body must be a JSON object like {\"priority\": 90}";
    return 400;
  }
  if (!body.priority || *body.priority < base::kMinPriority || *body.priority > base::kMaxPriority) {
    message = "priority must be an integer from 0 to 100";
    return 422;
  }
  priority = *body.priority;
  return 0;
}

int ParseQueueQuery(const HttpRequestView& req, QueueQuery& out, std::string& message) {
  // Digits only (std::stoul would take "-1" as the largest value); -1 otherwise. Values past
  // 18 digits cannot be a position or a useful limit.
  auto whole = [](const std::string& v) -> int64_t {
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoll(v);
  };
  if (auto it = req.query.find("namespace"); it != req.query.end() && !it->second.empty()) {
    if (!IsDnsLabel(it->second)) {
      message = "namespace must be a namespace name";
      return 400;
    }
    out.ns = it->second;
  }
  if (auto it = req.query.find("limit"); it != req.query.end()) {
    const int64_t limit = whole(it->second);
    if (limit < 0 && it->second.find_first_not_of("0123456789") == std::string::npos && !it->second.empty()) {
      out.limit = kMaxQueuePage;  // more digits than any queue has runs
    } else if (limit < 0) {
      message = "limit must be a non-negative integer";
      return 400;
    } else {
      out.limit = limit == 0 ? kDefaultQueuePage : std::min<size_t>(static_cast<size_t>(limit), kMaxQueuePage);
    }
  }
  if (auto it = req.query.find("continue"); it != req.query.end() && !it->second.empty()) {
    out.after = whole(it->second);
    if (out.after < 0) {
      message = "continue must be the token of the previous page's answer";
      return 400;
    }
  }
  return 0;
}

}  // namespace berth::controller
