#include "controller/http_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace berth::controller {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using error_code = boost::system::error_code;

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

// Client certificates are asked for and checked, but the handshake goes on whatever the check
// says: the request carries the outcome (SSL_get_verify_result) and the handler answers 401.
int KeepHandshaking(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) { return 1; }

// The CA certificates of `pem` in a new store (an empty store when there are none).
X509_STORE* StoreOf(const std::string& pem) {
  X509_STORE* store = X509_STORE_new();
  if (pem.empty()) return store;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
  }
  BIO_free(bio);
  ERR_clear_error();  // the end of the PEM text reads as an error
  return store;
}

// A TLS server context with `cert_file` (a chain) and `key_file`: TLS 1.2 or newer, no
// renegotiation; with `verify_clients`, client certificates are requested and checked against
// `client_ca_pem` (no session resumption then: every connection presents its certificate). Null
// with `error` set when the pair does not load or does not match.
std::shared_ptr<ssl::context> LoadTls(const std::string& cert_file, const std::string& key_file, bool verify_clients,
                                      const std::string& client_ca_pem, std::string& error) {
  auto tls = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = tls->native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
    error = "cannot load " + cert_file + " / " + key_file + ": " + SslErrors();
    return nullptr;
  }
  if (verify_clients) {
    SSL_CTX_set_cert_store(ctx, StoreOf(client_ca_pem));
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, KeepHandshaking);
    static const unsigned char kContext[] = "berth";
    SSL_CTX_set_session_id_context(ctx, kContext, sizeof(kContext) - 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
  }
  return tls;
}

// Whether the peer of `ssl` presented a certificate that verified, and its subject's common name.
void PeerIdentity(SSL* ssl, bool& verified, std::string& cn) {
  verified = false;
  cn.clear();
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
  X509* peer = SSL_get1_peer_certificate(ssl);
#else
  X509* peer = SSL_get_peer_certificate(ssl);
#endif
  if (peer == nullptr) return;
  verified = SSL_get_verify_result(ssl) == X509_V_OK;
  char buf[256];
  int n = X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, buf, sizeof(buf));
  if (n > 0) cn.assign(buf, static_cast<size_t>(std::min<int>(n, sizeof(buf) - 1)));
  X509_free(peer);
}

// What a certificate and key file look like (following symlinks, as a mounted Secret's are):
// device, inode, size and modification time of each; "" for a file that cannot be read.
std::string FilesState(const std::string& cert_file, const std::string& key_file) {
  std::string out;
  for (const std::string* f : {&cert_file, &key_file}) {
    struct stat st {};
    if (::stat(f->c_str(), &st) != 0) return "";
    out += std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  return out;
}

}  // namespace

// One connection. Everything but the handler runs on the I/O thread, so an HttpSession needs no lock;
// the handler runs on a worker, which hands the reply back to the I/O thread.
class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // kDraining: the last reply is out and our side is shut down; the client's remaining bytes are
  // read and dropped until it closes (or the deadline), so that closing with unread input does
  // not reset the connection before the client has read the reply (a "lingering close").
  enum class Phase { kHandshake, kReading, kBusy, kWriting, kDraining };

  HttpSession(HttpServer::Impl& impl, tcp::socket socket, uint64_t id, std::string client);
  ~HttpSession();
  void Start();
  void Close();
  Phase phase() const { return phase_; }
  SteadyClock::time_point deadline() const { return deadline_; }
  const std::string& client() const { return client_; }
  // Waiting for a request (or draining): no handler or reply of its own is in progress.
  bool idle() const { return phase_ != Phase::kBusy && phase_ != Phase::kWriting; }

 private:
  // Runs `f` on the connection's stream: TLS or the plain socket.
  template <class F>
  void WithStream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(socket_);
    }
  }
  void Arm(std::chrono::milliseconds timeout);
  void OnTimer();
  void Next();
  void ReadSome();
  void OnRead(const error_code& ec, size_t n);
  void Dispatch();
  void Write(std::string bytes, bool close_after);
  void OnWritten(const error_code& ec);
  void Linger();
  void Drain();

  HttpServer::Impl& impl_;
  const HttpServer& server_;
  uint64_t id_;
  std::string client_;  // the source address
  tcp::socket socket_;
  std::shared_ptr<ssl::context> tls_context_;  // the certificate this connection was accepted with
  std::optional<ssl::stream<tcp::socket&>> tls_;
  asio::steady_timer timer_;
  RequestParser parser_;
  Phase phase_ = Phase::kReading;
  SteadyClock::time_point deadline_;
  bool timed_out_ = false;  // the read deadline passed while reading
  std::array<char, kReadChunk> in_;
  std::string out_;
  bool close_after_ = false;
  size_t dropped_ = 0;  // bytes drained after the last reply
  bool client_verified_ = false;  // with client certificates: what the handshake's check said
  std::string client_cn_;
};

struct HttpServer::Impl {
  explicit Impl(HttpServer& s) : server(s) {}

  // Connections by id, for the connection limit; a HttpSession removes itself. Declared before `io`:
  // destroying `io` destroys the handlers that hold the last Sessions.
  std::map<uint64_t, HttpSession*> sessions;
  std::map<std::string, size_t> connections_of;  // open connections per client (source address)
  size_t heavy_in_flight = 0;                    // heavy requests queued for or on a worker
  std::map<std::string, size_t> heavy_of;        // the same per client; all three on the I/O thread only
  // The TLS context new connections get. Replaced (on the I/O thread) when the certificate or key
  // file changes: a Secret's files are swapped by the kubelet while the Pod runs (cert-manager's
  // renewals, a rotated chart certificate), and new connections use the new pair without a
  // restart; open ones keep theirs.
  std::shared_ptr<ssl::context> tls;
  std::string tls_files_seen;  // what the files looked like when `tls` was loaded
  // The client CA (SetClientCa), set from any thread; `ca_applied` is the version `tls` has.
  std::mutex ca_mu;
  std::string ca_pem;
  uint64_t ca_version = 0;
  uint64_t ca_applied = 0;
  std::chrono::steady_clock::time_point tls_checked{};
  asio::io_context io{1};
  std::optional<tcp::acceptor> acceptor;
  std::optional<asio::thread_pool> workers;
  HttpServer& server;
  std::thread thread;
  std::atomic<bool> stopping{false};
  bool started = false;
  uint64_t next_id = 1;

  void Accept() {
    acceptor->async_accept([this](const error_code& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || stopping) return;
      if (!ec) OnAccept(std::move(socket));
      Accept();
    });
  }

  // At most every 2 s, on an accept: reloads the certificate when its files changed. A pair that
  // does not load (e.g. the key written before the certificate) is retried on a later accept.
  // A client CA set since `tls` was made is applied at once.
  void MaybeReloadTls() {
    if (!tls) return;
    std::string ca;
    uint64_t ca_now = 0;
    {
      std::lock_guard<std::mutex> lock(ca_mu);
      ca_now = ca_version;
      if (ca_now != ca_applied) ca = ca_pem;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - tls_checked < std::chrono::seconds(2) && ca_now == ca_applied) return;
    tls_checked = now;
    const std::string seen = FilesState(server.cert_file_, server.key_file_);
    if (seen == tls_files_seen && ca_now == ca_applied) return;
    if (ca_now == ca_applied) {
      std::lock_guard<std::mutex> lock(ca_mu);
      ca = ca_pem;
    }
    std::string error;
    if (auto fresh = LoadTls(server.cert_file_, server.key_file_, server.verify_clients_, ca, error)) {
      tls = std::move(fresh);
      const bool files_changed = seen != tls_files_seen;
      tls_files_seen = seen;
      ca_applied = ca_now;
      if (files_changed) spdlog::info("https on {}: certificate reloaded from {}", server.bind_address_, server.cert_file_);
    } else {
      spdlog::warn("https on {}: certificate files changed but do not load ({}); serving the previous one",
                   server.bind_address_, error);
    }
  }

  // The idle connection that has waited longest for a request among those of `client` (empty:
  // of the client holding the most connections, so that one client filling the server loses
  // its own); null when there is none.
  HttpSession* LongestWaiting(const std::string& client) {
    std::string of = client;
    if (of.empty()) {
      size_t most = 0;
      for (const auto& [c, n] : connections_of) {
        bool has_idle = false;
        for (const auto& [id, s] : sessions) has_idle = has_idle || (s->client() == c && s->idle());
        if (has_idle && n > most) {
          most = n;
          of = c;
        }
      }
    }
    HttpSession* victim = nullptr;
    for (auto& [id, s] : sessions) {
      if (s->client() != of || !s->idle()) continue;
      if (victim == nullptr || s->deadline() < victim->deadline()) victim = s;
    }
    return victim;
  }

  void OnAccept(tcp::socket socket) {
    MaybeReloadTls();
    error_code ec;
    const tcp::endpoint peer = socket.remote_endpoint(ec);
    if (ec) return;  // already gone
    std::string client = peer.address().to_string();
    if (connections_of[client] >= server.limits_.max_connections_per_client) {
      HttpSession* victim = LongestWaiting(client);
      if (victim == nullptr) {
        spdlog::debug("http {}: {} holds {} busy connections; refusing another", server.bind_address_, client,
                      connections_of[client]);
        if (connections_of[client] == 0) connections_of.erase(client);
        return;  // `socket` closes
      }
      victim->Close();
    }
    if (sessions.size() >= server.limits_.max_connections) {
      HttpSession* victim = LongestWaiting("");
      if (victim == nullptr) {
        if (connections_of[client] == 0) connections_of.erase(client);
        return;
      }
      victim->Close();
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto session = std::make_shared<HttpSession>(*this, std::move(socket), next_id++, std::move(client));
    session->Start();
  }

  void Opened(uint64_t id, HttpSession* s) {
    sessions[id] = s;
    ++connections_of[s->client()];
  }
  void Closed(uint64_t id, const std::string& client) {
    if (sessions.erase(id) == 0) return;
    if (auto it = connections_of.find(client); it != connections_of.end() && --it->second == 0) connections_of.erase(it);
  }
};

HttpSession::HttpSession(HttpServer::Impl& impl, tcp::socket socket, uint64_t id, std::string client)
    : impl_(impl),
      server_(impl.server),
      id_(id),
      client_(std::move(client)),
      socket_(std::move(socket)),
      timer_(impl.io),
      parser_([s = &impl.server](const HttpRequestView& head) { return s->CheckHead(head); },
              impl.server.limits_.max_head_bytes) {
  if (impl.tls) {
    tls_context_ = impl.tls;
    tls_.emplace(socket_, *tls_context_);
  }
  impl_.Opened(id_, this);
}

HttpSession::~HttpSession() { impl_.Closed(id_, client_); }

void HttpSession::Start() {
  Arm(server_.limits_.read_timeout);  // the handshake and the first request, together
  if (!tls_) {
    ReadSome();
    return;
  }
  phase_ = Phase::kHandshake;
  tls_->async_handshake(ssl::stream_base::server, [self = shared_from_this()](const error_code& ec) {
    if (ec) {
      spdlog::debug("http {}: TLS handshake failed: {}", self->server_.bind_address_, ec.message());
      self->Close();
      return;
    }
    if (self->server_.verify_clients_) PeerIdentity(self->tls_->native_handle(), self->client_verified_, self->client_cn_);
    self->phase_ = Phase::kReading;
    self->ReadSome();
  });
}

void HttpSession::Close() {
  impl_.Closed(id_, client_);
  timer_.cancel();
  error_code ignored;
  socket_.close(ignored);  // the pending operation completes with operation_aborted
}

void HttpSession::Arm(std::chrono::milliseconds timeout) {
  timed_out_ = false;
  deadline_ = SteadyClock::now() + timeout;
  timer_.expires_at(deadline_);
  timer_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec) self->OnTimer();
  });
}

void HttpSession::OnTimer() {
  // A wait that completed just before the timer was set again, or a handler at work: not due.
  if (SteadyClock::now() < deadline_ || phase_ == Phase::kBusy) return;
  if (phase_ == Phase::kReading) {
    // OnRead answers 408 when a request had begun, and closes.
    timed_out_ = true;
    error_code ignored;
    socket_.cancel(ignored);
    return;
  }
  Close();
}

// Parses what is buffered, then answers, dispatches or reads on.
void HttpSession::Next() {
  RequestParser::Step step = parser_.Next();
  switch (step.kind) {
    case RequestParser::Step::kReject:
      Write(SerializeReply(step.reject, false, true), true);
      return;
    case RequestParser::Step::kRequest:
      Dispatch();
      return;
    case RequestParser::Step::kNeedMore:
      break;
  }
  if (!step.send_continue) {
    ReadSome();
    return;
  }
  static const std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  WithStream([this](auto& stream) {
    asio::async_write(stream, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](const error_code& ec, size_t) {
                        if (ec) {
                          self->Close();
                        } else {
                          self->ReadSome();
                        }
                      });
  });
}

void HttpSession::ReadSome() {
  WithStream([this](auto& stream) {
    stream.async_read_some(asio::buffer(in_), [self = shared_from_this()](const error_code& ec, size_t n) {
      self->OnRead(ec, n);
    });
  });
}

void HttpSession::OnRead(const error_code& ec, size_t n) {
  if (!ec) parser_.Append(std::string_view(in_.data(), n));
  if (timed_out_) {
    if (parser_.mid_request()) {
      // Best effort: a client that stopped sending may still read the 408.
      Write(SerializeReply(HttpReply{408, "text/plain; charset=utf-8", "the request did not arrive in time\n", {}}, false,
                           true),
            true);
    } else {
      Close();  // an idle connection: no reply
    }
    return;
  }
  if (ec) {
    Close();
    return;
  }
  Next();
}

void HttpSession::Dispatch() {
  phase_ = Phase::kBusy;
  timer_.cancel();
  HttpRequestView request = parser_.TakeRequest();
  request.client_verified = client_verified_;
  request.client_cn = client_cn_;
  const HttpServer::Route* route = server_.Find(request.path);
  const bool heavy = route != nullptr && route->options.heavy;
  const size_t heavy_workers = static_cast<size_t>(std::max(1, server_.workers_ - 1));
  const size_t heavy_per_client = std::max<size_t>(1, heavy_workers - 1);
  if (heavy && (impl_.heavy_in_flight >= heavy_workers || impl_.heavy_of[client_] >= heavy_per_client)) {
    // Every worker a heavy request (or one of this client's) may have is busy: answered here, on
    // the I/O thread, at once.
    if (impl_.heavy_of[client_] == 0) impl_.heavy_of.erase(client_);
    HttpReply busy{503, "text/plain; charset=utf-8",
                   "too many requests like this one are being answered; retry in a second\n", {{"Retry-After", "1"}}};
    Write(SerializeReply(busy, request.method == "HEAD", !parser_.keep_alive()), !parser_.keep_alive());
    return;
  }
  if (heavy) {
    ++impl_.heavy_in_flight;
    ++impl_.heavy_of[client_];
  }
  asio::post(*impl_.workers, [self = shared_from_this(), request = std::move(request), keep_alive = parser_.keep_alive(),
                              heavy]() mutable {
    std::string bytes;
    bool close = !keep_alive;
    try {
      HttpReply reply = self->server_.Dispatch(request);
      bytes = SerializeReply(reply, request.method == "HEAD", close);
    } catch (...) {
      close = true;
      bytes = SerializeReply(HttpReply{500, "text/plain; charset=utf-8", "internal error\n", {}}, false, true);
    }
    // `self` moves on, so that the last reference (and ~HttpSession) stays on the I/O thread.
    HttpServer::Impl& impl = self->impl_;
    asio::post(impl.io, [self = std::move(self), bytes = std::move(bytes), close, heavy]() mutable {
      if (heavy) {
        --self->impl_.heavy_in_flight;
        if (auto it = self->impl_.heavy_of.find(self->client_); it != self->impl_.heavy_of.end() && --it->second == 0) {
          self->impl_.heavy_of.erase(it);
        }
      }
      self->Write(std::move(bytes), close);
    });
  });
}

void HttpSession::Write(std::string bytes, bool close_after) {
  out_ = std::move(bytes);
  close_after_ = close_after;
  phase_ = Phase::kWriting;
  Arm(server_.limits_.read_timeout);
  WithStream([this](auto& stream) {
    asio::async_write(stream, asio::buffer(out_), [self = shared_from_this()](const error_code& ec, size_t) {
      self->OnWritten(ec);
    });
  });
}

void HttpSession::OnWritten(const error_code& ec) {
  out_.clear();
  if (ec) {
    Close();
    return;
  }
  if (close_after_) {
    Linger();
    return;
  }
  phase_ = Phase::kReading;
  Arm(server_.limits_.read_timeout);
  Next();  // a pipelined request may already be buffered
}

void HttpSession::Linger() {
  phase_ = Phase::kDraining;
  Arm(std::min<std::chrono::milliseconds>(server_.limits_.read_timeout, std::chrono::seconds(2)));
  auto shutdown_send = [self = shared_from_this()](const error_code&) {
    error_code ignored;
    self->socket_.shutdown(tcp::socket::shutdown_send, ignored);
    self->Drain();
  };
  if (tls_) {
    // close_notify; the shutdown also reads up to the client's own, or fails on its data: either
    // way the rest is drained below the TLS layer.
    tls_->async_shutdown(std::move(shutdown_send));
  } else {
    shutdown_send(error_code());
  }
}

void HttpSession::Drain() {
  socket_.async_read_some(asio::buffer(in_), [self = shared_from_this()](const error_code& ec, size_t n) {
    self->dropped_ += n;
    if (ec || self->dropped_ > (8u << 20)) {
      self->Close();
      return;
    }
    self->Drain();
  });
}

HttpServer::HttpServer(std::string bind_address, int workers, HttpLimits limits)
    : bind_address_(std::move(bind_address)), workers_(std::max(1, workers)), limits_(limits), impl_(std::make_unique<Impl>(*this)) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, HttpHandler handler, RouteOptions options) {
  routes_.push_back(Route{path, std::move(handler), std::move(options)});
}

void HttpServer::UseTls(std::string cert_file, std::string key_file) {
  cert_file_ = std::move(cert_file);
  key_file_ = std::move(key_file);
}

void HttpServer::SetClientCa(std::string ca_pem) {
  std::lock_guard<std::mutex> lock(impl_->ca_mu);
  if (verify_clients_ && ca_pem == impl_->ca_pem) return;
  if (!impl_->started) verify_clients_ = true;  // only before Start: the I/O thread reads it unlocked
  impl_->ca_pem = std::move(ca_pem);
  ++impl_->ca_version;
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
    if (guard_) {
      if (auto refused = guard_(req)) return *refused;
    }
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
    std::string error;
    impl_->tls_files_seen = FilesState(cert_file_, key_file_);
    std::string ca;
    {
      std::lock_guard<std::mutex> lock(impl_->ca_mu);
      ca = impl_->ca_pem;
      impl_->ca_applied = impl_->ca_version;
    }
    impl_->tls = LoadTls(cert_file_, key_file_, verify_clients_, ca, error);
    if (!impl_->tls) return k8s::Status::Error("cannot listen on " + bind_address_ + ": " + error);
    impl_->tls_checked = std::chrono::steady_clock::now();
  }

  error_code ec;
  tcp::resolver resolver(impl_->io);
  auto endpoints = resolver.resolve(host, port, tcp::resolver::passive, ec);
  if (ec) return k8s::Status::Error("cannot listen on " + bind_address_ + ": " + ec.message());
  std::string error = "no address";
  for (const auto& entry : endpoints) {
    tcp::acceptor& acceptor = impl_->acceptor.emplace(impl_->io);
    if (!acceptor.open(entry.endpoint().protocol(), ec) && !acceptor.set_option(tcp::acceptor::reuse_address(true), ec) &&
        !acceptor.bind(entry.endpoint(), ec) && !acceptor.listen(128, ec)) {
      break;
    }
    error = ec.message();
    impl_->acceptor.reset();
  }
  if (!impl_->acceptor) return k8s::Status::Error("cannot listen on " + bind_address_ + ": " + error);
  port_ = impl_->acceptor->local_endpoint(ec).port();
  impl_->started = true;
  impl_->workers.emplace(static_cast<size_t>(workers_));
  impl_->Accept();
  impl_->thread = std::thread([this] {
    while (!impl_->stopping) {
      try {
        impl_->io.run();
        return;
      } catch (const std::exception& e) {
        spdlog::error("http {}: {}", bind_address_, e.what());
      } catch (...) {
        spdlog::error("http {}: unknown error in the I/O loop", bind_address_);
      }
    }
  });
  spdlog::info("serving {} on {} (port {})", cert_file_.empty() ? "http" : "https", uri.value(), port_);
  return k8s::Status();
}

void HttpServer::Stop() {
  if (!impl_->started || impl_->stopping.exchange(true)) return;
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  // Handlers at work finish (their replies are dropped); queued ones are not started.
  impl_->workers->stop();
  impl_->workers->join();
  std::vector<HttpSession*> open;
  for (auto& [id, s] : impl_->sessions) open.push_back(s);
  for (HttpSession* s : open) s->Close();
  impl_->acceptor.reset();
}

}  // namespace berth::controller
