#pragma once
// A TLS-terminating HTTP/1.1 proxy on 127.0.0.1 (loopback only) between berth-controller and the
// API server, for fault tests of ambiguous writes. It serves the API server's own certificate
// (certs/apiserver.{crt,key} of the test control plane, so a kubeconfig with the API server's CA
// verifies it), forwards every request to the API server over TLS and passes the answers back,
// except for the requests `drop` selects: those are forwarded whole, and when the API server's
// answer starts to arrive (the server has handled the request) the connection to the client is
// cut instead. The write was applied; the client never hears of it.
//
// Two more faults: a request `refuse` selects is answered 503 by the proxy itself and never
// reaches the API server (a write that certainly was not applied, though the client cannot know);
// and once a request `lag` selects (a watch) is forwarded, every byte of that connection's answers
// reaches the client `lag_by` late, as from a slow watch.
//
// One thread per client connection (each with its own upstream connection); requests must carry
// their body with Content-Length (cpprestsdk does); a chunked request is passed through unread.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace berth::testing {

class ReplyDropper {
 public:
  // Called for each request (from connection threads, so it must be thread-safe): true drops
  // its reply.
  using Selector = std::function<bool(const std::string& method, const std::string& path)>;

  // `upstream_port`: the API server on 127.0.0.1. Starts listening at once; the port is port().
  struct Faults {
    Selector drop;    // forward, then cut the reply
    Selector refuse;  // answer 503 without forwarding
    Selector lag;     // delay this connection's answers by lag_by
    std::chrono::milliseconds lag_by{0};
  };
  ReplyDropper(int upstream_port, const std::string& cert_file, const std::string& key_file, Faults faults);
  ~ReplyDropper();  // stops accepting, cuts every connection, joins the threads

  int port() const { return port_; }
  // Writes `out_path`: the kubeconfig at `base_path` with its server pointing at the proxy.
  void WriteKubeconfig(const std::string& base_path, const std::string& out_path) const;

  int64_t requests() const { return requests_; }  // requests forwarded (dropped ones included)
  int64_t dropped() const { return dropped_; }    // replies cut
  int64_t refused() const { return refused_; }    // answered 503 by the proxy

 private:
  void AcceptLoop();
  void Serve(int client_fd);

  int upstream_port_;
  Faults faults_;
  int listen_fd_ = -1;
  int port_ = 0;
  void* server_ctx_ = nullptr;  // SSL_CTX*
  void* client_ctx_ = nullptr;  // SSL_CTX*
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> requests_{0}, dropped_{0}, refused_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> connections_;
  std::vector<int> open_fds_;  // shut down on stop so the connection threads return
};

}  // namespace berth::testing
