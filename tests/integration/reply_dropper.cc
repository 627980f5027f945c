#include "reply_dropper.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cctype>
#include <deque>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace berth::testing {
namespace {

SSL_CTX* Ctx(void* p) { return static_cast<SSL_CTX*>(p); }

// Reads what is available from a non-blocking TLS connection into `into`: 1 when something was
// read, 0 when nothing is there now, -1 when the connection ended or failed.
int ReadSome(SSL* ssl, std::string& into) {
  char buf[64 * 1024];
  const int r = SSL_read(ssl, buf, sizeof buf);
  if (r > 0) {
    into.append(buf, static_cast<size_t>(r));
    return 1;
  }
  const int err = SSL_get_error(ssl, r);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) return 0;
  return -1;
}

// Writes all of `data` to a non-blocking TLS connection; false when the connection failed.
bool WriteAll(SSL* ssl, int fd, const std::string& data, size_t n, const std::atomic<bool>& stop) {
  size_t done = 0;
  while (done < n) {
    const int w = SSL_write(ssl, data.data() + done, static_cast<int>(n - done));
    if (w > 0) {
      done += static_cast<size_t>(w);
      continue;
    }
    const int err = SSL_get_error(ssl, w);
    if ((err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) || stop) return false;
    pollfd p{fd, static_cast<short>(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
    poll(&p, 1, 100);
  }
  return true;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

ReplyDropper::ReplyDropper(int upstream_port, const std::string& cert_file, const std::string& key_file, Faults faults)
    : upstream_port_(upstream_port), faults_(std::move(faults)) {
  signal(SIGPIPE, SIG_IGN);  // a write to a connection the peer closed fails instead
  SSL_CTX* server = SSL_CTX_new(TLS_server_method());
  if (server == nullptr || SSL_CTX_use_certificate_chain_file(server, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(server, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    throw std::runtime_error("reply dropper: cannot load " + cert_file + " / " + key_file);
  }
  SSL_CTX_set_num_tickets(server, 0);
  server_ctx_ = server;
  SSL_CTX* client = SSL_CTX_new(TLS_client_method());
  // The API server's certificate is self-signed: it is its own CA.
  if (client == nullptr || SSL_CTX_load_verify_locations(client, cert_file.c_str(), nullptr) != 1) {
    throw std::runtime_error("reply dropper: cannot load " + cert_file + " as a CA");
  }
  SSL_CTX_set_verify(client, SSL_VERIFY_PEER, nullptr);
  client_ctx_ = client;

  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 64) != 0 || getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("reply dropper: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

ReplyDropper::~ReplyDropper() {
  stop_ = true;
  shutdown(listen_fd_, SHUT_RDWR);
  acceptor_.join();
  close(listen_fd_);
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
    threads.swap(connections_);
  }
  for (auto& t : threads) t.join();
  SSL_CTX_free(Ctx(server_ctx_));
  SSL_CTX_free(Ctx(client_ctx_));
}

void ReplyDropper::WriteKubeconfig(const std::string& base_path, const std::string& out_path) const {
  std::ifstream in(base_path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = std::regex_replace(ss.str(), std::regex(R"(server: https://127\.0\.0\.1:[0-9]+)"),
                                              "server: https://127.0.0.1:" + std::to_string(port_));
  std::ofstream(out_path) << text;
}

void ReplyDropper::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      close(fd);
      break;
    }
    open_fds_.push_back(fd);
    connections_.emplace_back([this, fd] { Serve(fd); });
  }
}

void ReplyDropper::Serve(int client_fd) {
  SSL* c = SSL_new(Ctx(server_ctx_));
  SSL* u = nullptr;
  int upstream_fd = -1;
  auto forget = [this](int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  };
  SSL_set_fd(c, client_fd);
  bool ok = SSL_accept(c) == 1;
  if (ok) {
    upstream_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_fds_.push_back(upstream_fd);
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(upstream_port_));
    ok = !stop_ && connect(upstream_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (ok) {
      u = SSL_new(Ctx(client_ctx_));
      SSL_set_fd(u, upstream_fd);
      ok = SSL_connect(u) == 1;
    }
  }
  if (ok) {
    SetNonBlocking(client_fd);
    SetNonBlocking(upstream_fd);
    std::string in;  // from the client, not yet forwarded
    bool passthrough = false, drop_pending = false, lagging = false;
    // Answers held back on a lagging connection, with when each may go.
    std::deque<std::pair<std::chrono::steady_clock::time_point, std::string>> held;
    while (!stop_) {
      bool progress = false;
      int r = 0;
      while ((r = ReadSome(c, in)) == 1) progress = true;
      if (r < 0) break;
      // Forward each complete request (head and Content-Length body), asking whether to drop
      // its reply. Nothing more is read from the client while a reply is being dropped.
      bool failed = false;
      while (!in.empty() && !drop_pending) {
        if (passthrough) {
          failed = !WriteAll(u, upstream_fd, in, in.size(), stop_);
          in.clear();
          break;
        }
        const size_t end = in.find("\r\n\r\n");
        if (end == std::string::npos) break;
        const std::string head = Lower(in.substr(0, end + 2));
        if (head.find("\r\ntransfer-encoding: chunked\r\n") != std::string::npos) {
          passthrough = true;
          continue;
        }
        size_t length = 0;
        if (size_t cl = head.find("\r\ncontent-length:"); cl != std::string::npos) {
          length = std::stoul(head.substr(cl + 17, head.find("\r\n", cl + 2) - cl - 17));
        }
        const size_t total = end + 4 + length;
        if (in.size() < total) break;
        const size_t sp1 = in.find(' ');
        const size_t sp2 = in.find(' ', sp1 + 1);
        const std::string method = in.substr(0, sp1), path = in.substr(sp1 + 1, sp2 - sp1 - 1);
        if (faults_.refuse && faults_.refuse(method, path)) {
          ++refused_;
          in.erase(0, total);
          const std::string body =
              R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"refused by the test )"
              R"(proxy","reason":"ServiceUnavailable","code":503})";
          const std::string reply = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body;
          if (!WriteAll(c, client_fd, reply, reply.size(), stop_)) {
            failed = true;
            break;
          }
          continue;
        }
        const bool drop = faults_.drop && faults_.drop(method, path);
        if (faults_.lag && faults_.lag(method, path)) lagging = true;
        ++requests_;
        if (!WriteAll(u, upstream_fd, in, total, stop_)) {
          failed = true;
          break;
        }
        in.erase(0, total);
        drop_pending = drop;
      }
      if (failed) break;
      std::string out;
      while (out.size() < (1 << 20) && (r = ReadSome(u, out)) == 1) progress = true;
      if (!out.empty()) {
        if (drop_pending) {
          // The API server has handled the request and answers: the client never hears it.
          ++dropped_;
          break;
        }
        if (lagging) {
          held.emplace_back(std::chrono::steady_clock::now() + faults_.lag_by, std::move(out));
        } else if (!WriteAll(c, client_fd, out, out.size(), stop_)) {
          break;
        }
      }
      bool write_failed = false;
      while (!held.empty() && held.front().first <= std::chrono::steady_clock::now()) {
        write_failed = !WriteAll(c, client_fd, held.front().second, held.front().second.size(), stop_);
        held.pop_front();
        if (write_failed) break;
      }
      if (write_failed) break;
      if (r < 0 && held.empty()) break;  // the API server closed the connection (all passed on)
      if (!progress) {
        pollfd p[2] = {{client_fd, POLLIN, 0}, {r < 0 ? -1 : upstream_fd, POLLIN, 0}};
        poll(p, 2, held.empty() ? 100 : 10);
      }
    }
  }
  forget(client_fd);
  shutdown(client_fd, SHUT_RDWR);
  close(client_fd);
  if (upstream_fd >= 0) {
    forget(upstream_fd);
    shutdown(upstream_fd, SHUT_RDWR);
    close(upstream_fd);
  }
  SSL_free(c);
  if (u != nullptr) SSL_free(u);
  ERR_clear_error();
}

}  // namespace berth::testing
