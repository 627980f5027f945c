#include "controller/http_server.h"

#include <cpprest/http_listener.h>
#include <cpprest/uri.h>
#include <spdlog/spdlog.h>

namespace berth::controller {

namespace http = web::http;

struct HttpServer::Impl {
  std::unique_ptr<http::experimental::listener::http_listener> listener;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<http::http_request> pending;
  bool stopping = false;
  std::vector<std::thread> threads;
};

HttpServer::HttpServer(std::string bind_address, int workers)
    : bind_address_(std::move(bind_address)), workers_(workers), impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, HttpHandler handler) { routes_.emplace_back(path, std::move(handler)); }

void HttpServer::UseTls(std::string cert_file, std::string key_file) {
  cert_file_ = std::move(cert_file);
  key_file_ = std::move(key_file);
}

k8s::Result<std::string> HttpServer::ListenUri(const std::string& bind_address, const std::string& scheme) {
  auto colon = bind_address.rfind(':');
  if (colon == std::string::npos) return k8s::Status::Error("bind address \"" + bind_address + "\" must be HOST:PORT or :PORT");
  std::string host = bind_address.substr(0, colon);
  std::string port = bind_address.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return k8s::Status::Error("bind address \"" + bind_address + "\" has no valid port");
  }
  if (host.empty()) host = "0.0.0.0";
  return scheme + "://" + host + ":" + port;
}

HttpReply HttpServer::Route(const HttpRequestView& req) const {
  const HttpHandler* best = nullptr;
  size_t best_len = 0;
  for (const auto& [path, handler] : routes_) {
    bool match = path.back() == '/' ? req.path.rfind(path, 0) == 0 || req.path + "/" == path : req.path == path;
    if (match && path.size() >= best_len) {
      best = &handler;
      best_len = path.size();
    }
  }
  if (best == nullptr) return HttpReply{404, "text/plain; charset=utf-8", "not found\n", {}};
  try {
    return (*best)(req);
  } catch (const std::exception& e) {
    spdlog::error("http handler for {} failed: {}", req.path, e.what());
    return HttpReply{500, "text/plain; charset=utf-8", "internal error\n", {}};
  }
}

k8s::Status HttpServer::Start() {
  if (!enabled()) return k8s::Status();
  auto uri = ListenUri(bind_address_, cert_file_.empty() ? "http" : "https");
  if (!uri.ok()) return uri.status();
  try {
    http::experimental::listener::http_listener_config config;
    if (!cert_file_.empty()) {
      std::string cert = cert_file_, key = key_file_;
      config.set_ssl_context_callback([cert, key](boost::asio::ssl::context& ctx) {
        ctx.set_options(boost::asio::ssl::context::default_workarounds | boost::asio::ssl::context::no_sslv2 |
                        boost::asio::ssl::context::no_sslv3 | boost::asio::ssl::context::no_tlsv1 |
                        boost::asio::ssl::context::no_tlsv1_1);
        ctx.use_certificate_chain_file(cert);
        ctx.use_private_key_file(key, boost::asio::ssl::context::pem);
      });
    }
    impl_->listener = std::make_unique<http::experimental::listener::http_listener>(uri.value(), config);
    impl_->listener->support([this](http::http_request req) {
      {
        std::lock_guard<std::mutex> lock(impl_->mu);
        impl_->pending.push_back(std::move(req));
      }
      impl_->cv.notify_one();
    });
    impl_->listener->open().wait();
  } catch (const std::exception& e) {
    return k8s::Status::Error("cannot listen on " + bind_address_ + ": " + e.what());
  }
  for (int i = 0; i < workers_; ++i) {
    impl_->threads.emplace_back([this] {
      while (true) {
        http::http_request req;
        {
          std::unique_lock<std::mutex> lock(impl_->mu);
          impl_->cv.wait(lock, [this] { return impl_->stopping || !impl_->pending.empty(); });
          if (impl_->stopping) return;
          req = std::move(impl_->pending.front());
          impl_->pending.pop_front();
        }
        HttpRequestView view;
        view.method = req.method();
        view.path = web::uri::decode(req.relative_uri().path());
        for (const auto& [k, v] : web::uri::split_query(req.relative_uri().query())) {
          view.query[web::uri::decode(k)] = web::uri::decode(v);
        }
        for (const auto& [k, v] : req.headers()) {
          std::string lower = k;
          for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          view.headers[lower] = v;
        }
        try {
          view.body = req.extract_utf8string(true).get();  // our own thread: blocking is fine here
        } catch (...) {
        }
        HttpReply reply = Route(view);
        http::http_response resp(static_cast<http::status_code>(reply.status));
        resp.headers().set_content_type(reply.content_type);
        for (const auto& [k, v] : reply.headers) resp.headers().add(k, v);
        resp.set_body(reply.body, reply.content_type);
        try {
          req.reply(resp).wait();
        } catch (...) {
        }
      }
    });
  }
  spdlog::info("serving http on {}", uri.value());
  return k8s::Status();
}

void HttpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
  if (impl_->listener) {
    try {
      impl_->listener->close().wait();
    } catch (...) {
    }
  }
}

}  // namespace berth::controller
