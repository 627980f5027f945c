#include "controller/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace berth::controller {

namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr size_t kReadChunk = 16 * 1024;

// Splits "HOST:PORT" / ":PORT" / "[V6]:PORT"; false when malformed.
bool SplitBindAddress(const std::string& bind_address, std::string& host, std::string& port) {
  auto colon = bind_address.rfind(':');
  if (colon == std::string::npos) return false;
  host = bind_address.substr(0, colon);
  port = bind_address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return false;
  }
  return true;
}

std::string SslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown TLS error" : out;
}

}  // namespace

struct HttpServer::Impl {
  // kDraining: the last reply is out and our side is shut down; the client's remaining bytes are
  // read and dropped until it closes (or the deadline), so that closing with unread input does
  // not reset the connection before the client has read the reply (a "lingering close").
  enum class Phase { kHandshake, kReading, kBusy, kWriting, kDraining };
  struct Conn {
    uint64_t id = 0;
    int fd = -1;
    SSL* ssl = nullptr;
    Phase phase = Phase::kReading;
    std::unique_ptr<RequestParser> parser;
    std::string out;
    size_t out_off = 0;
    bool close_after = false;
    bool want_write = false;  // TLS: the pending operation waits for the socket to be writable
    SteadyClock::time_point deadline;
  };
  struct Job {
    uint64_t conn = 0;
    HttpRequestView request;
    bool keep_alive = true;
  };
  struct Done {
    uint64_t conn = 0;
    std::string bytes;
    bool close = false;
  };

  HttpServer* server = nullptr;
  int listen_fd = -1;
  int wake_fd = -1;
  SSL_CTX* ssl_ctx = nullptr;
  std::atomic<bool> stopping{false};
  bool started = false;
  std::thread io;
  std::vector<std::thread> workers;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> jobs;  // guarded by mu
  std::deque<Done> done; // guarded by mu

  // Owned by the I/O thread.
  std::map<uint64_t, Conn> conns;
  uint64_t next_id = 1;

  ~Impl() {
    if (listen_fd >= 0) close(listen_fd);
    if (wake_fd >= 0) close(wake_fd);
    if (ssl_ctx != nullptr) SSL_CTX_free(ssl_ctx);
  }

  void Wake() const {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd, &one, sizeof(one));
  }

  void CloseConn(Conn& c) {
    if (c.ssl != nullptr) {
      SSL_set_quiet_shutdown(c.ssl, 1);
      SSL_free(c.ssl);
      c.ssl = nullptr;
    }
    if (c.fd >= 0) close(c.fd);
    c.fd = -1;
  }

  void Worker() {
    while (true) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [this] { return stopping || !jobs.empty(); });
        if (stopping) return;
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      Done d;
      d.conn = job.conn;
      d.close = !job.keep_alive;
      try {
        HttpReply reply = server->Dispatch(job.request);
        d.bytes = SerializeReply(reply, job.request.method == "HEAD", d.close);
      } catch (...) {
        d.close = true;
        d.bytes = SerializeReply(HttpReply{500, "text/plain; charset=utf-8", "internal error\n", {}}, false, true);
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        done.push_back(std::move(d));
      }
      Wake();
    }
  }

  // Reads what is available; false when the connection is finished (EOF or error).
  // `got` is set when bytes arrived.
  bool ReadSome(Conn& c) {
    char buf[kReadChunk];
    for (int rounds = 0; rounds < 8 || (c.ssl != nullptr && SSL_pending(c.ssl) > 0); ++rounds) {
      ssize_t n;
      if (c.ssl != nullptr) {
        ERR_clear_error();
        int r = SSL_read(c.ssl, buf, sizeof(buf));
        if (r <= 0) {
          int err = SSL_get_error(c.ssl, r);
          if (err == SSL_ERROR_WANT_READ) return true;
          if (err == SSL_ERROR_WANT_WRITE) {
            c.want_write = true;
            return true;
          }
          return false;
        }
        c.want_write = false;
        n = r;
      } else {
        n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        if (n == 0) return false;
      }
      c.parser->Append(std::string_view(buf, static_cast<size_t>(n)));
      if (!Process(c)) return true;  // a request is complete (or refused): stop reading for now
    }
    return true;
  }

  // Runs the parser over the buffered bytes. Returns whether the connection still reads.
  bool Process(Conn& c) {
    RequestParser::Step step = c.parser->Next();
    switch (step.kind) {
      case RequestParser::Step::kNeedMore:
        if (step.send_continue) {
          // 25 bytes into an empty socket buffer: a best-effort write that does not block.
          static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
          if (c.ssl != nullptr) {
            ERR_clear_error();
            SSL_write(c.ssl, kContinue, sizeof(kContinue) - 1);
          } else {
            [[maybe_unused]] ssize_t n = send(c.fd, kContinue, sizeof(kContinue) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
          }
        }
        return true;
      case RequestParser::Step::kReject:
        StartWrite(c, SerializeReply(step.reject, false, true), true);
        return false;
      case RequestParser::Step::kRequest: {
        Job job;
        job.conn = c.id;
        job.request = c.parser->TakeRequest();
        job.keep_alive = c.parser->keep_alive();
        c.phase = Phase::kBusy;
        {
          std::lock_guard<std::mutex> lock(mu);
          jobs.push_back(std::move(job));
        }
        cv.notify_one();
        return false;
      }
    }
    return false;
  }

  void StartWrite(Conn& c, std::string bytes, bool close_after) {
    c.out = std::move(bytes);
    c.out_off = 0;
    c.close_after = close_after;
    c.phase = Phase::kWriting;
    c.want_write = true;
    c.deadline = SteadyClock::now() + server->limits_.read_timeout;
  }

  // Writes what the socket takes; false when the connection is finished.
  bool WriteSome(Conn& c) {
    while (c.out_off < c.out.size()) {
      const char* p = c.out.data() + c.out_off;
      size_t len = c.out.size() - c.out_off;
      if (c.ssl != nullptr) {
        ERR_clear_error();
        int r = SSL_write(c.ssl, p, static_cast<int>(std::min<size_t>(len, 1 << 20)));
        if (r <= 0) {
          int err = SSL_get_error(c.ssl, r);
          if (err == SSL_ERROR_WANT_WRITE) {
            c.want_write = true;
            return true;
          }
          if (err == SSL_ERROR_WANT_READ) {
            c.want_write = false;
            return true;
          }
          return false;
        }
        c.out_off += static_cast<size_t>(r);
      } else {
        ssize_t n = send(c.fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            c.want_write = true;
            return true;
          }
          return false;
        }
        c.out_off += static_cast<size_t>(n);
      }
    }
    // The reply is out.
    c.out.clear();
    c.out_off = 0;
    if (c.close_after) {
      if (c.ssl != nullptr) {
        ERR_clear_error();
        SSL_shutdown(c.ssl);  // close_notify, best effort (the peer's answer is not awaited)
      }
      shutdown(c.fd, SHUT_WR);
      c.phase = Phase::kDraining;
      c.want_write = false;
      c.deadline = SteadyClock::now() + std::min<std::chrono::milliseconds>(server->limits_.read_timeout, std::chrono::seconds(2));
      return Drain(c);
    }
    c.phase = Phase::kReading;
    c.want_write = false;
    c.deadline = SteadyClock::now() + server->limits_.read_timeout;
    // A pipelined request may already be buffered (in the parser, or decrypted inside OpenSSL).
    if (!Process(c)) return true;
    return ReadSome(c);
  }

  // Reads and drops what the client still sends; false once it has closed (or sent too much).
  bool Drain(Conn& c) {
    char buf[kReadChunk];
    for (int rounds = 0; rounds < 64; ++rounds) {
      ssize_t n = recv(c.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (n == 0) return false;
      c.out_off += static_cast<size_t>(n);  // counts the dropped bytes
      if (c.out_off > (8u << 20)) return false;
    }
    return true;
  }

  bool Handshake(Conn& c) {
    ERR_clear_error();
    int r = SSL_accept(c.ssl);
    if (r == 1) {
      c.phase = Phase::kReading;
      c.want_write = false;
      return ReadSome(c);  // the request may have come with the handshake's last flight
    }
    int err = SSL_get_error(c.ssl, r);
    if (err == SSL_ERROR_WANT_READ) {
      c.want_write = false;
      return true;
    }
    if (err == SSL_ERROR_WANT_WRITE) {
      c.want_write = true;
      return true;
    }
    spdlog::debug("http {}: TLS handshake failed: {}", server->bind_address_, SslErrors());
    return false;
  }

  void Accept() {
    for (int i = 0; i < 64; ++i) {
      int fd = accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      if (conns.size() >= server->limits_.max_connections) {
        // Full: drop the connection that has waited longest for a request to arrive.
        auto victim = conns.end();
        for (auto it = conns.begin(); it != conns.end(); ++it) {
          if (it->second.phase == Phase::kBusy || it->second.phase == Phase::kWriting) continue;
          if (victim == conns.end() || it->second.deadline < victim->second.deadline) victim = it;
        }
        if (victim == conns.end()) {
          close(fd);
          continue;
        }
        CloseConn(victim->second);
        conns.erase(victim);
      }
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      Conn c;
      c.id = next_id++;
      c.fd = fd;
      c.deadline = SteadyClock::now() + server->limits_.read_timeout;
      const HttpServer* s = server;
      c.parser = std::make_unique<RequestParser>([s](const HttpRequestView& head) { return s->CheckHead(head); },
                                                 server->limits_.max_head_bytes);
      if (ssl_ctx != nullptr) {
        c.ssl = SSL_new(ssl_ctx);
        if (c.ssl == nullptr || SSL_set_fd(c.ssl, fd) != 1) {
          CloseConn(c);
          continue;
        }
        c.phase = Phase::kHandshake;
      }
      conns.emplace(c.id, std::move(c));
    }
  }

  void Expire(SteadyClock::time_point now) {
    for (auto it = conns.begin(); it != conns.end();) {
      Conn& c = it->second;
      if (c.phase == Phase::kBusy || now < c.deadline) {
        ++it;
        continue;
      }
      if (c.phase == Phase::kReading && c.parser->mid_request()) {
        // Best effort: a client that stopped sending may still read the 408.
        std::string bytes = SerializeReply(
            HttpReply{408, "text/plain; charset=utf-8", "the request did not arrive in time\n", {}}, false, true);
        if (c.ssl != nullptr) {
          ERR_clear_error();
          SSL_write(c.ssl, bytes.data(), static_cast<int>(bytes.size()));
        } else {
          [[maybe_unused]] ssize_t n = send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        }
      }
      CloseConn(c);
      it = conns.erase(it);
    }
  }

  void TakeDone() {
    std::deque<Done> ready;
    {
      std::lock_guard<std::mutex> lock(mu);
      ready.swap(done);
    }
    for (auto& d : ready) {
      auto it = conns.find(d.conn);
      if (it == conns.end()) continue;
      StartWrite(it->second, std::move(d.bytes), d.close);
      if (!WriteSome(it->second)) {
        CloseConn(it->second);
        conns.erase(it);
      }
    }
  }

  void Loop() {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    while (!stopping) {
      try {
        fds.clear();
        ids.clear();
        fds.push_back({wake_fd, POLLIN, 0});
        fds.push_back({listen_fd, POLLIN, 0});
        auto now = SteadyClock::now();
        auto next = now + std::chrono::seconds(1);
        for (auto& [id, c] : conns) {
          if (c.phase == Phase::kBusy) continue;
          fds.push_back({c.fd, static_cast<short>(c.want_write ? POLLOUT : POLLIN), 0});
          ids.push_back(id);
          next = std::min(next, c.deadline);
        }
        auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
        int n = poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait + 1, 0, 1000)));
        if (n < 0 && errno != EINTR) {
          spdlog::error("http {}: poll failed: {}", server->bind_address_, std::strerror(errno));
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        if (stopping) return;
        if (fds[0].revents != 0) {
          uint64_t v;
          [[maybe_unused]] ssize_t r = read(wake_fd, &v, sizeof(v));
        }
        TakeDone();
        for (size_t i = 2; i < fds.size(); ++i) {
          if (fds[i].revents == 0) continue;
          auto it = conns.find(ids[i - 2]);
          if (it == conns.end()) continue;
          Conn& c = it->second;
          bool keep = true;
          try {
            switch (c.phase) {
              case Phase::kHandshake: keep = Handshake(c); break;
              case Phase::kReading: keep = ReadSome(c); break;
              case Phase::kWriting: keep = WriteSome(c); break;
              case Phase::kDraining: keep = Drain(c); break;
              case Phase::kBusy: break;
            }
          } catch (const std::exception& e) {
            spdlog::error("http {}: connection dropped: {}", server->bind_address_, e.what());
            keep = false;
          } catch (...) {
            keep = false;
          }
          if (!keep) {
            CloseConn(c);
            conns.erase(it);
          }
        }
        if (fds[1].revents != 0) Accept();
        Expire(SteadyClock::now());
      } catch (const std::exception& e) {
        spdlog::error("http {}: {}", server->bind_address_, e.what());
      } catch (...) {
        spdlog::error("http {}: unknown error in the I/O loop", server->bind_address_);
      }
    }
  }
};

HttpServer::HttpServer(std::string bind_address, int workers, HttpLimits limits)
    : bind_address_(std::move(bind_address)), workers_(std::max(1, workers)), limits_(limits), impl_(std::make_unique<Impl>()) {
  impl_->server = this;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, HttpHandler handler, RouteOptions options) {
  routes_.push_back(Route{path, std::move(handler), std::move(options)});
}

void HttpServer::UseTls(std::string cert_file, std::string key_file) {
  cert_file_ = std::move(cert_file);
  key_file_ = std::move(key_file);
}

k8s::Result<std::string> HttpServer::ListenUri(const std::string& bind_address, const std::string& scheme) {
  std::string host, port;
  if (bind_address.rfind(':') == std::string::npos) {
    return k8s::Status::Error("bind address \"" + bind_address + "\" must be HOST:PORT or :PORT");
  }
  if (!SplitBindAddress(bind_address, host, port)) {
    return k8s::Status::Error("bind address \"" + bind_address + "\" has no valid port");
  }
  if (host.empty()) host = "0.0.0.0";
  return scheme + "://" + host + ":" + port;
}

const HttpServer::Route* HttpServer::Find(const std::string& path) const {
  const Route* best = nullptr;
  for (const auto& r : routes_) {
    bool match = r.path.back() == '/' ? path.rfind(r.path, 0) == 0 || path + "/" == r.path : path == r.path;
    if (match && (best == nullptr || r.path.size() >= best->path.size())) best = &r;
  }
  return best;
}

HeadDecision HttpServer::CheckHead(const HttpRequestView& head) const {
  HeadDecision d;
  const Route* r = Find(head.path);
  if (r == nullptr) {
    d.status = 404;
    d.message = "not found";
    return d;
  }
  if (std::find(r->options.methods.begin(), r->options.methods.end(), head.method) == r->options.methods.end()) {
    d.status = 405;
    d.message = "method not allowed";
    std::string allow;
    for (const auto& m : r->options.methods) allow += (allow.empty() ? "" : ", ") + m;
    d.headers["Allow"] = allow;
    return d;
  }
  d.max_body = r->options.max_body;
  return d;
}

HttpReply HttpServer::Dispatch(const HttpRequestView& req) const {
  const Route* r = Find(req.path);
  if (r == nullptr) return HttpReply{404, "text/plain; charset=utf-8", "not found\n", {}};
  try {
    return r->handler(req);
  } catch (const std::exception& e) {
    spdlog::error("http handler for {} failed: {}", req.path, e.what());
  } catch (...) {
    spdlog::error("http handler for {} failed", req.path);
  }
  return HttpReply{500, "text/plain; charset=utf-8", "internal error\n", {}};
}

k8s::Status HttpServer::Start() {
  if (!enabled()) return k8s::Status();
  if (impl_->started) return k8s::Status::Error("http server on " + bind_address_ + " already started");
  auto uri = ListenUri(bind_address_, cert_file_.empty() ? "http" : "https");
  if (!uri.ok()) return uri.status();
  std::string host, port;
  SplitBindAddress(bind_address_, host, port);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";

  if (!cert_file_.empty()) {
    // OpenSSL writes with write(2), which raises SIGPIPE when the client has gone: ignore it (every
    // write here checks its result). berth-controller's main() does the same.
    std::signal(SIGPIPE, SIG_IGN);
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) return k8s::Status::Error("cannot create a TLS context: " + SslErrors());
    impl_->ssl_ctx = ctx;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file_.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key_file_.c_str(), SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
      return k8s::Status::Error("cannot listen on " + bind_address_ + ": cannot load " + cert_file_ + " / " + key_file_ +
                                ": " + SslErrors());
    }
  }

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return k8s::Status::Error("cannot listen on " + bind_address_ + ": " + gai_strerror(rc));
  }
  std::string error = "no address";
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) break;
    error = std::strerror(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return k8s::Status::Error("cannot listen on " + bind_address_ + ": " + error);
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  impl_->listen_fd = fd;
  impl_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->wake_fd < 0) return k8s::Status::Error(std::string("cannot create an eventfd: ") + std::strerror(errno));
  impl_->started = true;
  for (int i = 0; i < workers_; ++i) impl_->workers.emplace_back([this] { impl_->Worker(); });
  impl_->io = std::thread([this] { impl_->Loop(); });
  spdlog::info("serving {} on {} (port {})", cert_file_.empty() ? "http" : "https", uri.value(), port_);
  return k8s::Status();
}

void HttpServer::Stop() {
  if (!impl_->started || impl_->stopping.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);  // a worker between its check and its wait sees it
  }
  impl_->cv.notify_all();
  impl_->Wake();
  if (impl_->io.joinable()) impl_->io.join();
  for (auto& t : impl_->workers) t.join();
  impl_->workers.clear();
  for (auto& [id, c] : impl_->conns) impl_->CloseConn(c);
  impl_->conns.clear();
}

}  // namespace berth::controller
