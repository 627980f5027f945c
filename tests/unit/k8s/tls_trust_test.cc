// The kubeconfig's CA is the only trust anchor for the API server: a server whose certificate the
// system's roots trust, but not that CA, is refused. A small TLS server on 127.0.0.1 stands in for
// the API server; "the system's roots" are pointed at a test CA with SSL_CERT_FILE (OpenSSL reads
// it when a context loads its default verify paths).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "k8s/client.h"
#include "test_certs.h"

namespace berth::k8s {
namespace {

// Answers every request on every connection with 200 and "{}" (HTTPS, kServerCert).
class TlsServer {
 public:
  TlsServer() {
    signal(SIGPIPE, SIG_IGN);
    ctx_ = SSL_CTX_new(TLS_server_method());
    BIO* cert = BIO_new_mem_buf(testcerts::kServerCert, -1);
    BIO* key = BIO_new_mem_buf(testcerts::kServerKey, -1);
    X509* x = PEM_read_bio_X509(cert, nullptr, nullptr, nullptr);
    EVP_PKEY* k = PEM_read_bio_PrivateKey(key, nullptr, nullptr, nullptr);
    EXPECT_EQ(SSL_CTX_use_certificate(ctx_, x), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx_, k), 1);
    X509_free(x);
    EVP_PKEY_free(k);
    BIO_free(cert);
    BIO_free(key);
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~TlsServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
    SSL_CTX_free(ctx_);
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  int handshakes() const { return handshakes_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      timeval tv{5, 0};
      setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, c);
      if (SSL_accept(ssl) == 1) {
        ++handshakes_;
        std::string req;
        char buf[4096];
        while (req.find("\r\n\r\n") == std::string::npos) {
          int n = SSL_read(ssl, buf, sizeof buf);
          if (n <= 0) break;
          req.append(buf, static_cast<size_t>(n));
        }
        const std::string reply =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
        SSL_write(ssl, reply.data(), static_cast<int>(reply.size()));
        SSL_shutdown(ssl);
      }
      SSL_free(ssl);
      ERR_clear_error();
      close(c);
    }
  }

  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> handshakes_{0};
  std::thread thread_;
};

// Points OpenSSL's default verify file (the "system roots") at `pem` for the scope.
class SystemRoots {
 public:
  explicit SystemRoots(const std::string& pem) {
    path_ = (std::filesystem::temp_directory_path() / ("berth-roots-" + std::to_string(getpid()) + ".pem")).string();
    std::ofstream(path_) << pem;
    if (const char* old = std::getenv("SSL_CERT_FILE")) old_ = old;
    setenv("SSL_CERT_FILE", path_.c_str(), 1);
  }
  ~SystemRoots() {
    if (old_) {
      setenv("SSL_CERT_FILE", old_->c_str(), 1);
    } else {
      unsetenv("SSL_CERT_FILE");
    }
    std::filesystem::remove(path_);
  }

 private:
  std::string path_;
  std::optional<std::string> old_;
};

Result<json::Document> GetVersion(const std::string& server, const std::string& ca_pem) {
  ClientConfig cfg;
  cfg.server = server;
  cfg.ca_pem = ca_pem;
  cfg.request_timeout = std::chrono::seconds(10);
  Client client(cfg);
  client.SetMaxRetries(0);
  return client.Get("/version");
}

TEST(TlsTrustTest, TheKubeconfigCaIsTheOnlyTrustAnchor) {
  TlsServer server;
  SystemRoots roots(testcerts::kCaA);  // the system trusts the server's CA ...
  // ... but the kubeconfig names another CA: refused, whatever the system trusts.
  auto refused = GetVersion(server.url(), testcerts::kCaB);
  EXPECT_FALSE(refused.ok()) << "a server the kubeconfig's CA did not sign was trusted through the system's roots";
  // The kubeconfig's CA alone is enough.
  auto trusted = GetVersion(server.url(), testcerts::kCaA);
  EXPECT_TRUE(trusted.ok()) << trusted.status().ToString();
  // A CA bundle of both trusts the server too.
  auto bundle = GetVersion(server.url(), std::string(testcerts::kCaB) + testcerts::kCaA);
  EXPECT_TRUE(bundle.ok()) << bundle.status().ToString();
}

TEST(TlsTrustTest, WithoutACaTheSystemRootsAreUsed) {
  TlsServer server;
  {
    SystemRoots roots(testcerts::kCaA);
    auto trusted = GetVersion(server.url(), "");
    EXPECT_TRUE(trusted.ok()) << trusted.status().ToString();
  }
  SystemRoots roots(testcerts::kCaB);
  auto refused = GetVersion(server.url(), "");
  EXPECT_FALSE(refused.ok()) << "the system's roots do not trust this server";
}

}  // namespace
}  // namespace berth::k8s
