#include "k8s/transport.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "k8s/line_splitter.h"

#include <cpprest/http_client.h>
#include <cpprest/rawptrstream.h>
#include <cpprest/containerstream.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/pem.h>

namespace berth::k8s {

void Cancellation::Cancel() {
  std::vector<std::pair<int, std::function<void()>>> hooks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return;
    cancelled_ = true;
    running_hooks_ = true;
    hooks.swap(hooks_);
  }
  for (auto& h : hooks) h.second();
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_hooks_ = false;
  }
  hooks_done_.notify_all();
}

bool Cancellation::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

int Cancellation::OnCancel(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  if (cancelled_) {
    lock.unlock();
    fn();
    return -1;
  }
  int id = next_id_++;
  hooks_.emplace_back(id, std::move(fn));
  return id;
}

void Cancellation::Remove(int id) {
  std::unique_lock<std::mutex> lock(mu_);
  for (auto it = hooks_.begin(); it != hooks_.end(); ++it) {
    if (it->first == id) {
      hooks_.erase(it);
      return;  // not taken by a Cancel: it will never run
    }
  }
  hooks_done_.wait(lock, [this] { return !running_hooks_; });
}

namespace {

namespace http = web::http;

// Makes the certificates of a PEM bundle the context's only trust anchors: cpprestsdk has loaded
// the system's default roots into the context's store before this callback runs, so the store is
// replaced, not added to (a kubeconfig's CA must not be widened by every public CA).
void TrustOnly(boost::asio::ssl::context& ctx, const std::string& pem) {
  X509_STORE* store = X509_STORE_new();
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
  }
  ERR_clear_error();
  BIO_free(bio);
  SSL_CTX_set_cert_store(ctx.native_handle(), store);  // takes ownership, frees the old store
}

class HttpTransport final : public Transport {
 public:
  explicit HttpTransport(const ClientConfig& config) : config_(config) {
    client_ = std::make_unique<http::client::http_client>(config_.server, MakeConfig(config_.request_timeout));
  }

  Result<HttpResponse> Send(const HttpRequest& req) override {
    try {
      http::http_request msg = MakeRequest(req);
      http::http_response resp = client_->request(msg).get();
      HttpResponse out;
      out.status = resp.status_code();
      out.body = resp.extract_utf8string(true).get();
      ReadRetryAfter(resp, out);
      return out;
    } catch (const std::exception& e) {
      return Status::Error(std::string("request to ") + config_.server + " failed: " + e.what());
    }
  }

  Result<HttpResponse> Stream(const HttpRequest& req, const std::function<bool(std::string& line)>& on_line,
                              Cancellation* cancel, int idle_timeout_seconds) override {
    // Each stream has its own client (and connection) so a long watch never holds up requests.
    http::client::http_client client(config_.server, MakeConfig(std::chrono::seconds(idle_timeout_seconds)));
    pplx::cancellation_token_source cts;
    int hook = -1;
    if (cancel != nullptr) hook = cancel->OnCancel([&cts] { cts.cancel(); });
    struct Unhook {
      Cancellation* c;
      int id;
      ~Unhook() {
        if (c != nullptr && id >= 0) c->Remove(id);
      }
    } unhook{cancel, hook};
    try {
      http::http_request msg = MakeRequest(req);
      http::http_response resp = client.request(msg, cts.get_token()).get();
      HttpResponse out;
      out.status = resp.status_code();
      ReadRetryAfter(resp, out);
      if (out.status < 200 || out.status >= 300) {
        out.body = resp.extract_utf8string(true).get();
        return out;
      }
      // Read whatever has arrived (at least one byte, waiting for it), then split it into lines.
      // Every chunk is passed on at once, so an event is delivered as soon as its line is complete.
      LineSplitter splitter;
      const LineSplitter::LineFn deliver = [&](std::string& line) {
        if (cancel != nullptr && cancel->cancelled()) return false;
        return on_line(line);
      };
      if (ReadLines(resp, splitter, deliver, cancel) == LineSplitter::Outcome::kTooLong) {
        return Status::Error("stream from " + config_.server + " failed: a line is longer than " +
                             std::to_string(splitter.max_line()) + " bytes");
      }
      return out;
    } catch (const std::exception& e) {
      if (cancel != nullptr && cancel->cancelled()) return HttpResponse{200, {}, 0};
      return Status::Error(std::string("stream from ") + config_.server + " failed: " + e.what());
    }
  }

 private:
  // Feeds the response body to the splitter as it arrives until the end, a cancellation or a
  // stop from the splitter.
  static LineSplitter::Outcome ReadLines(http::http_response& resp, LineSplitter& splitter,
                                         const LineSplitter::LineFn& deliver, Cancellation* cancel) {
    auto body = resp.body().streambuf();
    using traits = concurrency::streams::streambuf<uint8_t>::traits;
    constexpr size_t kChunk = 64 * 1024;
    std::string chunk;
    LineSplitter::Outcome outcome = LineSplitter::Outcome::kContinue;
    while (outcome == LineSplitter::Outcome::kContinue) {
      if (cancel != nullptr && cancel->cancelled()) break;
      const auto first = body.bumpc().get();
      if (first == traits::eof()) return splitter.Finish(deliver);
      const size_t more = std::min(static_cast<size_t>(body.in_avail()), kChunk - 1);
      chunk.resize(1 + more);
      chunk[0] = static_cast<char>(first);
      size_t got = 0;
      if (more > 0) got = body.getn(reinterpret_cast<uint8_t*>(chunk.data() + 1), more).get();
      chunk.resize(1 + got);
      outcome = splitter.Feed(chunk, deliver);
    }
    return outcome;
  }

  http::client::http_client_config MakeConfig(std::chrono::milliseconds timeout) const {
    http::client::http_client_config cfg;
    cfg.set_timeout(timeout);
    cfg.set_validate_certificates(!config_.insecure_skip_tls_verify);
    ClientConfig c = config_;
    cfg.set_ssl_context_callback([c](boost::asio::ssl::context& ctx) {
      if (!c.ca_pem.empty()) TrustOnly(ctx, c.ca_pem);
      if (!c.client_cert_pem.empty() && !c.client_key_pem.empty()) {
        ctx.use_certificate_chain(boost::asio::buffer(c.client_cert_pem));
        ctx.use_private_key(boost::asio::buffer(c.client_key_pem), boost::asio::ssl::context::pem);
      }
    });
    return cfg;
  }

  http::http_request MakeRequest(const HttpRequest& req) const {
    http::http_request msg(req.method);
    msg.set_request_uri(req.path);
    msg.headers().add("Accept", "application/json");
    msg.headers().add("User-Agent", config_.user_agent);
    std::string token = req.bearer_token;
    if (token.empty() && config_.token) token = config_.token->Token();
    if (!token.empty()) msg.headers().add("Authorization", "Bearer " + token);
    for (const auto& [name, value] : req.headers) msg.headers().add(name, value);
    if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
      msg.set_body(req.body, req.content_type);
    }
    return msg;
  }

  static void ReadRetryAfter(const http::http_response& resp, HttpResponse& out) {
    auto it = resp.headers().find("Retry-After");
    if (it != resp.headers().end()) {
      try {
        out.retry_after_seconds = std::stoi(it->second);
      } catch (...) {
      }
    }
  }

  ClientConfig config_;
  std::unique_ptr<http::client::http_client> client_;
};

}  // namespace

TransportPtr NewHttpTransport(const ClientConfig& config) { return std::make_shared<HttpTransport>(config); }

}  // namespace berth::k8s
