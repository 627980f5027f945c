#pragma once
// A small HTTP server (cpprestsdk's listener) for /metrics, probes, the queue JSON and the
// dashboard. Handlers run on the server's own worker threads, never on cpprestsdk's shared pool,
// so a handler may block (e.g. forward a request to the API server).

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "k8s/result.h"

namespace berth::controller {

struct HttpRequestView {
  std::string method;
  std::string path;                           // decoded path, no query
  std::map<std::string, std::string> query;   // decoded query parameters
  std::map<std::string, std::string> headers; // lower-case names
  std::string body;

  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::map<std::string, std::string> headers;
};

using HttpHandler = std::function<HttpReply(const HttpRequestView&)>;

class HttpServer {
 public:
  // `bind_address`: ":8080" (all interfaces), "127.0.0.1:8080", or "0" (disabled: Start does nothing).
  explicit HttpServer(std::string bind_address, int workers = 4);
  // Serves HTTPS with this certificate chain and key (PEM files) instead of HTTP.
  void UseTls(std::string cert_file, std::string key_file);
  ~HttpServer();

  // Exact path, or every path under `path` when it ends with '/'.
  void Handle(const std::string& path, HttpHandler handler);

  k8s::Status Start();
  void Stop();
  bool enabled() const { return bind_address_ != "0" && !bind_address_.empty(); }

  // "http://0.0.0.0:8080" for ":8080"; error for a malformed address.
  static k8s::Result<std::string> ListenUri(const std::string& bind_address, const std::string& scheme = "http");

 private:
  struct Impl;
  HttpReply Route(const HttpRequestView& req) const;

  std::string bind_address_;
  int workers_;
  std::string cert_file_, key_file_;
  std::vector<std::pair<std::string, HttpHandler>> routes_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace berth::controller
