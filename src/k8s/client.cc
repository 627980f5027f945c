#include "k8s/client.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

namespace berth::k8s {

std::string Resource::Path(const std::string& ns, const std::string& name, const std::string& sub) const {
  std::string p = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) p += "/namespaces/" + ns;
  p += "/" + plural;
  if (!name.empty()) p += "/" + name;
  if (!sub.empty()) p += "/" + sub;
  return p;
}

namespace resources {
const Resource kPods{"", "v1", "pods", true};
const Resource kNodes{"", "v1", "nodes", false};
const Resource kServices{"", "v1", "services", true};
const Resource kEvents{"", "v1", "events", true};
const Resource kNamespaces{"", "v1", "namespaces", false};
const Resource kSecrets{"", "v1", "secrets", true};
const Resource kLeases{"coordination.k8s.io", "v1", "leases", true};
const Resource kRuns{"berth.dev", "v1alpha1", "runs", true};
const Resource kFleets{"berth.dev", "v1alpha1", "fleets", false};
const Resource kTeams{"berth.dev", "v1alpha1", "teams", false};
}  // namespace resources

std::string UrlEncode(std::string_view s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

namespace {

void AppendQuery(std::string& path, std::string_view key, std::string_view value) {
  path += (path.find('?') == std::string::npos) ? '?' : '&';
  path += key;
  path += '=';
  path += UrlEncode(value);
}

}  // namespace

Client::Client(ClientConfig config, TransportPtr transport)
    : config_(std::move(config)), transport_(std::move(transport)) {}

Client::Client(ClientConfig config) : config_(std::move(config)), transport_(NewHttpTransport(config_)) {}

Status Client::ErrorFromResponse(const HttpResponse& resp) {
  std::string reason, message;
  auto doc = json::Parse(resp.body);
  if (doc.ok() && doc->IsObject() && json::GetString(*doc, "kind") == "Status") {
    reason = json::GetString(*doc, "reason");
    message = json::GetString(*doc, "message");
  } else {
    message = resp.body.substr(0, 512);
  }
  if (message.empty()) message = "HTTP " + std::to_string(resp.status);
  return Status::Error(message, resp.status, reason);
}

bool Client::RetryAfterUnauthorized(const HttpRequest& req, int code, bool& retried) {
  // Only the configured token is reloaded: a caller's own token (the dashboard's) is theirs.
  if (code != 401 || retried || !req.bearer_token.empty() || !config_.token || !config_.token->from_file()) return false;
  retried = true;
  if (!config_.token->Reload()) return false;
  spdlog::info("the API server refused the bearer token (401); the token file has a new token: retrying with it");
  return true;
}

Result<HttpResponse> Client::Do(HttpRequest req) {
  std::chrono::milliseconds backoff(100);
  bool reauthenticated = false;
  const bool guarded = write_guard_ && req.method != "GET" && req.bearer_token.empty();
  for (int attempt = 0;; ++attempt) {
    if (guarded && !write_guard_()) {
      return Status::Error(req.method + " " + req.path + " not sent: this process no longer leads", 0, "NotLeader");
    }
    Result<HttpResponse> r = transport_->Send(req);
    int code = r.ok() ? r->status : 0;
    if (observer_) observer_(req.method, code);
    if (RetryAfterUnauthorized(req, code, reauthenticated)) {
      --attempt;
      continue;
    }
    bool retry = !r.ok() || code == 429 || code >= 500;
    // A POST that got no answer may have been applied; callers take AlreadyExists as success
    // once they have checked that what exists is their own (the Run owns it), so retrying
    // creates with deterministic names is safe.
    if (!retry || attempt >= max_retries_) return r;
    std::chrono::milliseconds wait = backoff;
    if (r.ok() && r->retry_after_seconds > 0) wait = std::chrono::seconds(std::min(r->retry_after_seconds, 10));
    clock_->SleepFor(wait);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(3200));
  }
}

Result<json::Document> Client::DoJson(HttpRequest req) {
  auto r = Do(std::move(req));
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) return ErrorFromResponse(*r);
  // Not in situ: the returned document must own its strings (the body dies here).
  return json::Parse(r->body);
}

Result<json::Document> Client::Get(const std::string& path, const std::string& token) {
  HttpRequest req{"GET", path, {}, "application/json", token, {}};
  return DoJson(std::move(req));
}

int64_t NextPageLimit(size_t items, size_t page_bytes, int64_t max_limit) {
  if (items == 0 || page_bytes == 0) return max_limit;
  const size_t per_item = std::max<size_t>(1, page_bytes / items);
  return std::clamp<int64_t>(static_cast<int64_t>(kPageBytes / per_item), 1, max_limit);
}

Status Client::ListEach(const std::string& path, const ListOptions& opts,
                        const std::function<void(const json::Value&)>& on_item, std::string* resource_version,
                        const std::function<void(const json::Value&)>& on_too_deep) {
  std::string cont;
  // Pages are bounded in bytes too (issue 29): the first asks for at most kFirstPageItems, each
  // next one for as many items as kPageBytes holds at the last page's bytes per item (at most
  // opts.limit), so one relist holds about kPageBytes of JSON at a time, whatever the objects' size.
  int64_t limit = opts.limit > 0 ? std::min(opts.limit, kFirstPageItems) : 0;
  while (true) {
    std::string p = path;
    if (!opts.label_selector.empty()) AppendQuery(p, "labelSelector", opts.label_selector);
    if (!opts.field_selector.empty()) AppendQuery(p, "fieldSelector", opts.field_selector);
    if (limit > 0) AppendQuery(p, "limit", std::to_string(limit));
    if (!cont.empty()) {
      AppendQuery(p, "continue", cont);
    } else if (!opts.resource_version.empty()) {
      AppendQuery(p, "resourceVersion", opts.resource_version);
    }
    auto r = Do(HttpRequest{"GET", p, {}, "application/json", {}, {}});
    if (!r.ok()) return r.status();
    if (r->status == 410 && !cont.empty()) {
      // The continue token expired mid-list: a consistent snapshot needs a fresh start.
      return Status::Error("continue token expired; list again", 410, "Expired");
    }
    if (r->status < 200 || r->status >= 300) return ErrorFromResponse(*r);
    // In situ: items are handed out while the page buffer is alive, so nothing is copied.
    // No cap on the page: each item is checked on its own below (parsing is iterative and freeing
    // is not recursive, json.h).
    const size_t page_bytes = r->body.size();
    json::Document page;
    Status s = json::ParseInSitu(r->body, page, json::kNoDepthCap);
    if (!s.ok()) return s;
    if (const json::Value* items = json::Find(page, {"items"}); items != nullptr && items->IsArray()) {
      if (limit > 0) limit = NextPageLimit(items->Size(), page_bytes, opts.limit);
      for (const auto& item : items->GetArray()) {
        if (!json::DeeperThan(item)) {
          on_item(item);
        } else if (on_too_deep) {
          on_too_deep(item);
        }
      }
    }
    if (resource_version != nullptr) {
      *resource_version = json::GetString(json::Find(page, {"metadata", "resourceVersion"}));
    }
    cont = json::GetString(json::Find(page, {"metadata", "continue"}));
    if (cont.empty()) return Status();
  }
}

Result<ListResult> Client::List(const std::string& path, const ListOptions& opts) {
  for (int attempt = 0;; ++attempt) {
    ListResult out;
    Status s = ListEach(path, opts, [&](const json::Value& item) {
      // Serialize + parse: the item's in-situ strings must not outlive the page.
      auto d = json::Parse(json::Serialize(item));
      if (d.ok()) out.items.push_back(std::move(d).value());
    }, &out.resource_version);
    if (s.ok()) return out;
    if (!(s.IsGone() && s.reason() == "Expired" && attempt < 3)) return s;
  }
}

Result<json::Document> Client::Create(const std::string& path, const std::string& body, const std::string& token) {
  return DoJson(HttpRequest{"POST", path, body, "application/json", token, {}});
}

Result<json::Document> Client::Update(const std::string& path, const std::string& body) {
  return DoJson(HttpRequest{"PUT", path, body, "application/json", {}, {}});
}

Result<json::Document> Client::MergePatch(const std::string& path, const std::string& body, const std::string& token) {
  return DoJson(HttpRequest{"PATCH", path, body, "application/merge-patch+json", token, {}});
}

Status Client::MergePatchNoAnswer(const std::string& path, const std::string& body) {
  auto r = Do(HttpRequest{"PATCH", path, body, "application/merge-patch+json", {}, {}});
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) return ErrorFromResponse(*r);
  return Status();
}

Result<json::Document> Client::JsonPatch(const std::string& path, const std::string& body, const std::string& token) {
  return DoJson(HttpRequest{"PATCH", path, body, "application/json-patch+json", token, {}});
}

Status Client::Delete(const std::string& path, const DeleteOptions& opts) {
  std::string body = R"({"kind":"DeleteOptions","apiVersion":"v1")";
  if (!opts.propagation_policy.empty()) body += R"(,"propagationPolicy":)" + json::Quote(opts.propagation_policy);
  if (opts.grace_period_seconds) body += R"(,"gracePeriodSeconds":)" + std::to_string(*opts.grace_period_seconds);
  if (!opts.precondition_uid.empty() || !opts.precondition_resource_version.empty()) {
    body += R"(,"preconditions":{)";
    bool first = true;
    if (!opts.precondition_uid.empty()) {
      body += R"("uid":)" + json::Quote(opts.precondition_uid);
      first = false;
    }
    if (!opts.precondition_resource_version.empty()) {
      if (!first) body += ",";
      body += R"("resourceVersion":)" + json::Quote(opts.precondition_resource_version);
    }
    body += "}";
  }
  body += "}";
  auto r = Do(HttpRequest{"DELETE", path, body, "application/json", {}, {}});
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) return ErrorFromResponse(*r);
  return Status();
}

Status Client::Bind(const std::string& ns, const std::string& pod, const std::string& node, const std::string& pod_uid) {
  std::string body = R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)" + json::Quote(pod);
  if (!pod_uid.empty()) body += R"(,"uid":)" + json::Quote(pod_uid);
  body += R"(},"target":{"apiVersion":"v1","kind":"Node","name":)" + json::Quote(node) + "}}";
  auto r = Do(HttpRequest{"POST", resources::kPods.Path(ns, pod, "binding"), body, "application/json", {}, {}});
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) return ErrorFromResponse(*r);
  return Status();
}

Status Client::Watch(const std::string& path, const WatchOptions& opts,
                     const std::function<bool(const WatchEvent&)>& on_event, Cancellation* cancel) {
  std::string p = path;
  AppendQuery(p, "watch", "true");
  if (!opts.resource_version.empty()) AppendQuery(p, "resourceVersion", opts.resource_version);
  if (!opts.label_selector.empty()) AppendQuery(p, "labelSelector", opts.label_selector);
  if (!opts.field_selector.empty()) AppendQuery(p, "fieldSelector", opts.field_selector);
  if (opts.allow_bookmarks) AppendQuery(p, "allowWatchBookmarks", "true");
  AppendQuery(p, "timeoutSeconds", std::to_string(opts.timeout_seconds));

  Status stream_error;
  auto on_line = [&](std::string& line) -> bool {
    json::Document doc;
    Status s = json::ParseInSitu(line, doc, json::kNoDepthCap);  // the object is checked below
    if (!s.ok()) {
      stream_error = Status::Error("bad watch event: " + s.message());
      return false;
    }
    if (!doc.IsObject()) {  // FindMember below requires an object
      stream_error = Status::Error("bad watch event: not a JSON object");
      return false;
    }
    WatchEvent ev;
    ev.type = json::GetString(doc, "type");
    // HasMember + operator[] rather than comparing FindMember with MemberEnd(): RapidJSON 1.1.0's
    // mutable member iterators compare ambiguously under C++20 (clang -Wambiguous-reversed-operator).
    if (!doc.HasMember("object")) {
      stream_error = Status::Error("watch event without object");
      return false;
    }
    ev.object = &doc["object"];
    ev.too_deep = json::DeeperThan(*ev.object);
    if (ev.type == "ERROR") {
      int code = static_cast<int>(json::GetInt(*ev.object, "code", 500));
      stream_error = Status::Error(json::GetString(*ev.object, "message"), code, json::GetString(*ev.object, "reason"));
      return false;
    }
    return on_event(ev);
  };
  const HttpRequest req{"GET", p, {}, "application/json", {}, {}};
  auto r = transport_->Stream(req, on_line, cancel, opts.timeout_seconds + 30);
  if (observer_) observer_("WATCH", r.ok() ? r->status : 0);
  bool reauthenticated = false;
  if (RetryAfterUnauthorized(req, r.ok() ? r->status : 0, reauthenticated)) {
    r = transport_->Stream(req, on_line, cancel, opts.timeout_seconds + 30);
    if (observer_) observer_("WATCH", r.ok() ? r->status : 0);
  }
  if (!r.ok()) return r.status();
  if (r->status < 200 || r->status >= 300) return ErrorFromResponse(*r);
  return stream_error;
}

}  // namespace berth::k8s
