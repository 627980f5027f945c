#pragma once
// HTTP to the API server, behind an interface so the rest of the client does not depend on
// cpprestsdk (which is in maintenance mode upstream).

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "k8s/config.h"
#include "k8s/result.h"

namespace berth::k8s {

struct HttpRequest {
  std::string method;        // GET, POST, PUT, PATCH, DELETE
  std::string path;          // path and query, e.g. "/api/v1/pods?limit=500"
  std::string body;
  std::string content_type = "application/json";
  std::string bearer_token;  // overrides the config's token when set (user-forwarded writes)
  // Further header fields, sent as they are.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpResponse {
  int status = 0;
  std::string body;
  int retry_after_seconds = 0;  // from a Retry-After header, 0 when absent
};

// Cancels a blocking call from another thread (a watch being read, for example).
class Cancellation {
 public:
  // Marks it cancelled and runs the hooks (on this thread, outside the lock).
  void Cancel();
  bool cancelled() const;
  // Runs `fn` on Cancel (at once if already cancelled). Returns an id for Remove.
  int OnCancel(std::function<void()> fn);
  // After Remove(id) returns, hook `id` is not running and never will: when a Cancel is running
  // the hooks, Remove waits for it to finish them (a hook may refer to its caller's stack, which
  // is gone once the caller returns: a watch's cancellation token was, and a shutdown crashed).
  // Never call it from a hook.
  void Remove(int id);

 private:
  mutable std::mutex mu_;
  std::condition_variable hooks_done_;
  bool cancelled_ = false;
  bool running_hooks_ = false;
  int next_id_ = 0;
  std::vector<std::pair<int, std::function<void()>>> hooks_;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // One request, whole body read. A Status error means no HTTP answer (connection, TLS, timeout).
  virtual Result<HttpResponse> Send(const HttpRequest& req) = 0;
  // A streaming GET: `on_line` gets each body line (without the newline) as it arrives; return
  // false to stop. Ends when the server closes, on error, or on `cancel`. A non-2xx answer is
  // returned as a response with its whole body and no lines delivered.
  virtual Result<HttpResponse> Stream(const HttpRequest& req, const std::function<bool(std::string& line)>& on_line,
                                      Cancellation* cancel, int idle_timeout_seconds) = 0;
};

using TransportPtr = std::shared_ptr<Transport>;

// cpprestsdk + OpenSSL. Verifies the server certificate and its host name unless
// config.insecure_skip_tls_verify: against config.ca_pem alone when it is set (the system's roots
// are then not trusted), else against the system's roots.
TransportPtr NewHttpTransport(const ClientConfig& config);

}  // namespace berth::k8s
