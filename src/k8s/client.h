#pragma once
// A small typed-path Kubernetes REST client: get, list (paginated), create, update, patches,
// delete, status subresource, pods/binding and watch. Answers are RapidJSON documents; API
// errors come back as a Status with the HTTP code, the Kubernetes reason and the server's message.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "k8s/json.h"
#include "k8s/result.h"
#include "k8s/transport.h"

namespace berth::k8s {

// A kind of object the API serves.
struct Resource {
  std::string group;    // "" for the core group
  std::string version;  // "v1", "v1alpha1"
  std::string plural;   // "pods", "runs"
  bool namespaced = true;

  // "/api/v1/namespaces/ns/pods/name/status"; empty `ns` means all namespaces (for lists).
  std::string Path(const std::string& ns = {}, const std::string& name = {}, const std::string& sub = {}) const;
};

namespace resources {
extern const Resource kPods, kNodes, kServices, kEvents, kNamespaces, kLeases, kRuns, kFleets, kTeams, kSecrets;
}

// A list's pages (Client::ListEach): the first asks for at most kFirstPageItems items, each next
// one for NextPageLimit's, so that a page holds about kPageBytes of JSON (issue 29: a page of 500
// objects of 1.5 MiB each, the API server's largest, would be 750 MB).
inline constexpr int64_t kFirstPageItems = 16;
inline constexpr size_t kPageBytes = 4u << 20;
// The next page's limit after a page of `items` items in `page_bytes` bytes: kPageBytes at that
// size per item, from 1 to `max_limit`.
int64_t NextPageLimit(size_t items, size_t page_bytes, int64_t max_limit);

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  int64_t limit = 500;          // page size; 0 = no pagination
  std::string resource_version; // "" = most recent (quorum read)
};

struct ListResult {
  std::vector<json::Document> items;  // each item is its own document
  std::string resource_version;       // the list's resourceVersion, to watch from
};

struct WatchOptions {
  std::string resource_version;
  std::string label_selector;
  std::string field_selector;
  int timeout_seconds = 300;
  bool allow_bookmarks = true;
};

struct WatchEvent {
  std::string type;   // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  json::Value* object = nullptr;  // valid only during the callback
  // The object nests deeper than json::kMaxDepth: only its metadata may be read (json::Find),
  // nothing recursive (decoding, Serialize, copies). The stream goes on (issue 29).
  bool too_deep = false;
};

struct DeleteOptions {
  std::string precondition_uid;
  std::string precondition_resource_version;
  std::string propagation_policy;  // "Background", "Foreground", "Orphan" or "" (server default)
  std::optional<int64_t> grace_period_seconds;  // nullopt: the object's own
};

// Counts requests by verb and HTTP code (0 = no answer); hooked up to metrics by the controller.
using RequestObserver = std::function<void(const std::string& verb, int code)>;

// Asked right before every write (POST, PUT, PATCH, DELETE) the client sends with its own
// credentials, each retry included; false: the write is not sent (a leader that lost its Lease).
using WriteGuard = std::function<bool()>;

class Client {
 public:
  Client(ClientConfig config, TransportPtr transport);
  // The usual constructor: the cpprestsdk transport for `config`.
  explicit Client(ClientConfig config);

  const ClientConfig& config() const { return config_; }
  void SetRequestObserver(RequestObserver obs) { observer_ = std::move(obs); }
  // How often a 429/5xx/no-answer is retried (with backoff) before the error is returned.
  void SetMaxRetries(int n) { max_retries_ = n; }
  // Set before the client is shared between threads. A refused write comes back as an error
  // with reason "NotLeader" and code 0 (nothing was sent). Writes with a caller's own token
  // (the dashboard's, on behalf of a user) are the user's, not the leader's: not guarded.
  void SetWriteGuard(WriteGuard guard) { write_guard_ = std::move(guard); }
  const TransportPtr& transport() const { return transport_; }
  // The clock the client's retry backoff and its informers' relist waits run on (set before the
  // client is shared; it must outlive the client). Default: the real clock.
  void SetClock(const base::Clock& clock) { clock_ = &clock; }
  const base::Clock& clock() const { return *clock_; }

  Result<json::Document> Get(const std::string& path, const std::string& token = {});
  // Lists every page (following `continue`), handing each item to `on_item` while its page is in
  // memory (no copies; the value dies after the call). Sets `resource_version` to the list's.
  // An expired continue token (410 on a later page) comes back as code 410, reason "Expired":
  // start again.
  // An item nested deeper than json::kMaxDepth (a page is parsed without a cap) goes to
  // `on_too_deep` instead (only its metadata may be read), or is skipped without it: one object
  // berth cannot read never fails the list (issue 29).
  Status ListEach(const std::string& path, const ListOptions& opts,
                  const std::function<void(const json::Value&)>& on_item, std::string* resource_version,
                  const std::function<void(const json::Value&)>& on_too_deep = nullptr);
  // ListEach collected into documents (restarting on an expired continue token); for small lists.
  Result<ListResult> List(const std::string& path, const ListOptions& opts = {});
  Result<json::Document> Create(const std::string& path, const std::string& body, const std::string& token = {});
  // PUT; the body's metadata.resourceVersion guards it (409 Conflict when stale).
  Result<json::Document> Update(const std::string& path, const std::string& body);
  Result<json::Document> MergePatch(const std::string& path, const std::string& body, const std::string& token = {});
  // A merge patch whose answer is not read (only its HTTP status): for objects the answer of
  // which may be too deep to parse (json::kMaxDepth).
  Status MergePatchNoAnswer(const std::string& path, const std::string& body);
  Result<json::Document> JsonPatch(const std::string& path, const std::string& body, const std::string& token = {});
  Status Delete(const std::string& path, const DeleteOptions& opts = {});
  // POST pods/binding: binds the Pod to `node`. The server answers 409 when it is already bound.
  Status Bind(const std::string& ns, const std::string& pod, const std::string& node, const std::string& pod_uid = {});

  // Streams watch events of `path` (a collection) until the server closes the stream (OK status),
  // `on_event` returns false (OK), `cancel` fires (OK) or an error. A 410 Gone, whether as the
  // answer or as an ERROR event, comes back as a Status with code 410.
  Status Watch(const std::string& path, const WatchOptions& opts, const std::function<bool(const WatchEvent&)>& on_event,
               Cancellation* cancel);

  // Turns a non-2xx answer into a Status (code, reason, message from the Status object).
  static Status ErrorFromResponse(const HttpResponse& resp);

 private:
  Result<HttpResponse> Do(HttpRequest req);
  // A 401 to a request made with the configured token file: re-reads the file once and says
  // whether to send the request again (the token changed). `retried` limits it to once.
  bool RetryAfterUnauthorized(const HttpRequest& req, int code, bool& retried);

  const base::Clock* clock_ = &base::RealClock();
  Result<json::Document> DoJson(HttpRequest req);

  ClientConfig config_;
  TransportPtr transport_;
  RequestObserver observer_;
  WriteGuard write_guard_;
  int max_retries_ = 5;
};

using ClientPtr = std::shared_ptr<Client>;

// Percent-encodes a query value.
std::string UrlEncode(std::string_view s);

}  // namespace berth::k8s
