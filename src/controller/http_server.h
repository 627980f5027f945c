#pragma once
// berth-controller's HTTP/1.1 server (Boost.Asio sockets, Asio's OpenSSL stream for the TLS
// webhook, Boost.Beast's parser and serializer) for /metrics, probes, the queue JSON, the
// dashboard and the admission webhook. Built to survive whatever a client sends:
//   - one I/O thread serves every connection asynchronously: a slow or silent client costs a file
//     descriptor, not a thread, so the probe port answers while others hold connections open;
//   - at most `max_connections` connections: when full, the connection that has waited longest
//     for its request, among those of the client (source address) holding the most, is closed
//     to make room for the new one; one client holds at most `max_connections_per_client`: over
//     that, its own longest-waiting connection is closed (or the new one, when all of its are busy);
//   - every request (head and body), TLS handshake and reply must complete within `read_timeout`
//     of its start (408 and close otherwise); an idle keep-alive connection is closed after it;
//   - the request path (controller/http_request.h) refuses malformed input with a 4xx reply and
//     closes the connection; each route names its methods (405 with Allow otherwise) and the
//     largest body it reads (413 otherwise; probes read none);
//   - handlers run on the server's own worker threads (they may block, e.g. forward a request to
//     the API server); an exception from a handler is a 500, and every thread catches everything;
//   - heavy routes (RouteOptions::heavy) share all workers but one: light ones always get a turn;
//     one client holds at most all of those but one (when there are two or more), so another
//     client's heavy request gets a worker too. "Client" is the source address: clients behind
//     one proxy (kubectl port-forward, the API server's service proxy) count as one.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controller/http_request.h"
#include "k8s/result.h"

namespace berth::controller {

using HttpHandler = std::function<HttpReply(const HttpRequestView&)>;

struct HttpLimits {
  size_t max_head_bytes = RequestParser::kDefaultMaxHead;
  std::chrono::milliseconds read_timeout{10000};
  size_t max_connections = 256;
  size_t max_connections_per_client = 64;
};

struct RouteOptions {
  std::vector<std::string> methods = {"GET", "HEAD"};
  size_t max_body = 0;
  // A route whose requests may take long (the queue JSON, the dashboard API forwarding to the API
  // server). Together, heavy requests hold at most all workers but one: a client that loops on
  // them (or makes them slow) never takes the last worker from /metrics, the dashboard's page or
  // the probes. A heavy request over that, or over its client's share (all of those workers but
  // one), gets 503 with Retry-After at once.
  bool heavy = false;
};

class HttpServer {
 public:
  // `bind_address`: ":8080" (all IPv4 interfaces), "127.0.0.1:8080", "[::1]:8080", or "0"
  // (disabled: Start does nothing).
  explicit HttpServer(std::string bind_address, int workers = 4, HttpLimits limits = {});
  // Serves HTTPS with this certificate chain and key (PEM files) instead of HTTP. When the files
  // change (a renewed Secret), new connections get the new pair within seconds; no restart.
  void UseTls(std::string cert_file, std::string key_file);
  // With UseTls: asks every client for a certificate and verifies it against `ca_pem` (one or more
  // PEM CA certificates; empty: none verifies). A client without one, or with one that does not
  // verify (unknown issuer, expired, not for client authentication), is still served: each request
  // says what came of it (HttpRequestView::client_verified, client_cn) and the handler decides
  // (the aggregated queue API answers 401). Thread-safe: callable before Start and while serving;
  // connections accepted afterwards are checked against the new CA, open ones keep theirs.
  void SetClientCa(std::string ca_pem);
  ~HttpServer();

  // Asked before every route's handler: a reply refuses the request instead (kubectl berth
  // dashboard refuses a Host that is not its own: DNS rebinding). Call before Start().
  void SetGuard(std::function<std::optional<HttpReply>(const HttpRequestView&)> guard) { guard_ = std::move(guard); }

  // Exact path, or every path under `path` when it ends with '/'. Call before Start().
  void Handle(const std::string& path, HttpHandler handler, RouteOptions options = {});

  k8s::Status Start();
  void Stop();
  bool enabled() const { return bind_address_ != "0" && !bind_address_.empty(); }
  // The port listened on (useful with ":0"); 0 before Start().
  int port() const { return port_; }

  // "http://0.0.0.0:8080" for ":8080"; error for a malformed address.
  static k8s::Result<std::string> ListenUri(const std::string& bind_address, const std::string& scheme = "http");

  // Routing without sockets (the fuzz target drives these): what the router says about a head
  // (404, 405, the body limit), and the reply of the matching handler (500 when it throws).
  HeadDecision CheckHead(const HttpRequestView& head) const;
  HttpReply Dispatch(const HttpRequestView& req) const;

 private:
  struct Route {
    std::string path;
    HttpHandler handler;
    RouteOptions options;
  };
  struct Impl;
  friend class HttpSession;
  const Route* Find(const std::string& path) const;

  std::string bind_address_;
  int workers_;
  HttpLimits limits_;
  std::string cert_file_, key_file_;
  bool verify_clients_ = false;  // SetClientCa was called
  std::vector<Route> routes_;
  std::function<std::optional<HttpReply>(const HttpRequestView&)> guard_;
  int port_ = 0;
  std::unique_ptr<Impl> impl_;
};

}  // namespace berth::controller
