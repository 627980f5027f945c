// Issue 14, "every HTTP surface": a real controller (against the real API server) with its
// metrics/dashboard, probe, TLS webhook and TLS queue API ports on, and a catalogue of hostile requests thrown at
// each. After every one the request got the expected 4xx or was closed, and /healthz still answers
// 200 from the same process. The catalogue is printed as a table (docs/reliability.md shows it).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <vector>

#include "engine_fixture.h"

namespace berth::testing {
namespace {

// One TCP connection to 127.0.0.1, optionally TLS (no certificate check: the test made the cert),
// optionally from another loopback address (`from`), so that the test plays several clients, and
// optionally presenting a client certificate (`client`: the paths of "<client>.crt" and ".key").
class Wire {
 public:
  Wire(int port, bool tls, const char* from = nullptr, const std::string& client = {}) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{10, 0};  // a hang guard only; every read waits for a reply or a close
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (from != nullptr) {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      inet_pton(AF_INET, from, &src.sin_addr);
      bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof(src));
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (ok_ && tls) {
      ctx_ = SSL_CTX_new(TLS_client_method());
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
      if (!client.empty()) {
        SSL_CTX_use_certificate_file(ctx_, (client + ".crt").c_str(), SSL_FILETYPE_PEM);
        SSL_CTX_use_PrivateKey_file(ctx_, (client + ".key").c_str(), SSL_FILETYPE_PEM);
      }
      ssl_ = SSL_new(ctx_);
      SSL_set_fd(ssl_, fd_);
      ok_ = SSL_connect(ssl_) == 1;
    }
  }
  ~Wire() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    close(fd_);
  }
  bool ok() const { return ok_; }
  void Send(const std::string& s) {
    if (ssl_ != nullptr) {
      SSL_write(ssl_, s.data(), static_cast<int>(s.size()));
    } else {
      [[maybe_unused]] auto n = send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
    }
  }
  // Everything until the server closes the connection.
  std::string ReadToClose() {
    std::string out;
    char buf[8192];
    while (true) {
      int n = ssl_ != nullptr ? SSL_read(ssl_, buf, sizeof(buf)) : static_cast<int>(recv(fd_, buf, sizeof(buf), 0));
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

void MakeCerts(const std::string& dir) {
  RunCommand({"mkdir", "-p", dir});
  CommandResult r = RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir + "/tls.key",
                                "-out", dir + "/tls.crt", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                                "subjectAltName=IP:127.0.0.1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

std::string StatusLine(const std::string& reply) { return reply.substr(0, reply.find("\r\n")); }

class Hostile : public EngineTest {
 protected:
  Hostile() {
    metrics_ = FreePort();
    probe_ = FreePort();
    webhook_ = FreePort();
    queue_api_ = FreePort();
    cert_dir_ = ControlPlane::Get().dir() + "/hostile-certs-" + std::to_string(webhook_);
    MakeCerts(cert_dir_);
    controller_args_ = {"--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_),
                        "--health-probe-bind-address=127.0.0.1:" + std::to_string(probe_),
                        "--webhook-bind-address=127.0.0.1:" + std::to_string(webhook_),
                        "--webhook-cert-dir=" + cert_dir_,
                        // The aggregated queue API's TLS port (issue 44), with the same certificate.
                        "--queue-api-bind-address=127.0.0.1:" + std::to_string(queue_api_),
                        "--queue-api-cert-dir=" + cert_dir_,
                        "--http-read-timeout=1s",  // the slow clients below are cut off after 1 s
                        // The metrics port's queue routes, thrown at below, open (the default's
                        // 401s: TenantQueue).
                        "--queue-auth=false"};
  }

  std::string Healthz() {
    Wire w(probe_, false);
    w.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    return w.ReadToClose();
  }

  // Sends `bytes` to `port` and checks the answer starts with `want` ("" = closed without a reply;
  // "HTTP/1.1 4" = any 4xx); then that the controller still serves /healthz from the same pid.
  void Throw(const std::string& port_name, const std::string& what, const std::string& bytes, const std::string& want) {
    int port = port_name == "metrics"     ? metrics_
               : port_name == "probe"     ? probe_
               : port_name == "queue-api" ? queue_api_
               : port_name == "dashboard" ? dashboard_port_
                                          : webhook_;
    bool tls = port_name == "webhook" || port_name == "queue-api";
    Wire w(port, tls);
    ASSERT_TRUE(w.ok()) << what;
    w.Send(bytes);
    std::string reply = w.ReadToClose();
    if (want.empty()) {
      EXPECT_EQ(reply, "") << port_name << ": " << what;
    } else {
      EXPECT_EQ(reply.rfind(want, 0), 0u) << port_name << ": " << what << "\n got: " << StatusLine(reply);
    }
    Check(port_name, what, want.empty() ? "closed" : StatusLine(reply));
  }

  void Check(const std::string& port_name, const std::string& what, const std::string& result) {
    if (port_name == "dashboard") {  // kubectl berth dashboard, a process of its own
      const bool up = dashboard_->Running();
      EXPECT_TRUE(up) << "after " << port_name << ": " << what << "\n" << dashboard_->Log();
      table_ << "| dashboard | " << what << " | " << (result.empty() ? "closed" : result) << " | "
             << (up ? "survived" : "DIED") << " |\n";
      return;
    }
    std::string health = Healthz();
    EXPECT_EQ(health.rfind("HTTP/1.1 200 ", 0), 0u) << "after " << port_name << ": " << what << "\n" << controller_->Log();
    EXPECT_TRUE(controller_->Running()) << "after " << port_name << ": " << what;
    EXPECT_EQ(controller_->pid(), pid_);
    table_ << "| " << port_name << " | " << what << " | " << (result.empty() ? "closed" : result) << " | "
           << (health.rfind("HTTP/1.1 200 ", 0) == 0 && controller_->Running() ? "survived" : "DIED") << " |\n";
  }

  void SetUp() override {
    EngineTest::SetUp();
    ASSERT_TRUE(Eventually([&] { return Healthz().rfind("HTTP/1.1 200 ", 0) == 0; })) << controller_->Log();
    ASSERT_TRUE(Eventually([&] { return Wire(webhook_, true).ok(); })) << controller_->Log();
    ASSERT_TRUE(Eventually([&] { return Wire(queue_api_, true).ok(); })) << controller_->Log();
    pid_ = controller_->pid();
    // The dashboard users run (issue 44): kubectl berth dashboard, here with the admin's kubeconfig.
    dashboard_port_ = FreePort();
    dashboard_ = ControllerProcess::LocalDashboard(cp().kubeconfig(), dashboard_port_, "dashboard-hostile");
    ASSERT_TRUE(dashboard_->StartServing()) << dashboard_->Log();
  }
  void TearDown() override {
    std::printf("| port | request | answer | controller |\n|---|---|---|---|\n%s", table_.str().c_str());
    EngineTest::TearDown();
  }

  int metrics_, probe_, webhook_, queue_api_, pid_ = 0, dashboard_port_ = 0;
  std::unique_ptr<ControllerProcess> dashboard_;
  std::string cert_dir_;
  std::ostringstream table_;
};


TEST_F(Hostile, EveryPortSurvivesTheCatalogue) {
  const std::string ns = ns_;
  for (const std::string port : {"metrics", "probe"}) {
    Throw(port, "bad escape in the query (`/healthz?a=%zz`)", "GET /healthz?a=%zz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
    Throw(port, "bad escape in the path (`/health%zz`)", "GET /health%zz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
    Throw(port, "`%2F` in a path segment", "GET /api/runs/" + ns + "/a%2Fb HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
    Throw(port, "`%3F` in a path segment", "GET /api/runs/" + ns + "/a%3Fb HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
    Throw(port, "`..` segment", "GET /static/../index.html HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
    Throw(port, "escaped `..` segment", "GET /static/%2e%2e/index.html HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
    Throw(port, "64 KiB header", "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n", "HTTP/1.1 431 ");
    // (On the metrics port the dashboard's "/" route takes every path: GET and HEAD only.)
    Throw(port, "wrong method (`DELETE /healthz`)", "DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 ");
    Throw(port, "unknown method (`BREW /metrics`)", "BREW /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
          port == "metrics" ? "HTTP/1.1 405 " : "HTTP/1.1 404 ");
    Throw(port, "malformed request line", "GET /healthz\r\n\r\n", "HTTP/1.1 400 ");
    Throw(port, "binary garbage", std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15), "HTTP/1.1 400 ");
    Throw(port, "HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/1.1 505 ");
    Throw(port, "Transfer-Encoding: chunked", "POST /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
          "HTTP/1.1 411 ");
    Throw(port, "body on a GET (`Content-Length: 10`)", "GET /healthz HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
          "HTTP/1.1 413 ");
    Throw(port, "slowloris: a head that never ends", "GET /healthz HTTP/1.1\r\nX-Slow: a", "HTTP/1.1 408 ");
    Throw(port, "connects and sends nothing", "", "");
    Throw(port, "HTTP/1.0 request", "GET /healthz HTTP/1.0\r\n\r\n",
          port == "probe" ? "HTTP/1.1 200 " : "HTTP/1.1 404 ");  // answered, then closed
    {
      Wire w(port == "probe" ? probe_ : metrics_, false);
      w.Send("GET /healthz HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n\r\nGET /readyz HTTP/1.1\r\nConnection: close\r\n\r\n");
      std::string all = w.ReadToClose();
      size_t replies = 0;
      for (size_t at = all.find("HTTP/1.1 "); at != std::string::npos; at = all.find("HTTP/1.1 ", at + 1)) ++replies;
      EXPECT_EQ(replies, 3u) << all;
      Check(port, "three pipelined requests", std::to_string(replies) + " replies, in order");
    }
  }

  // The dashboard's API (kubectl berth dashboard; the controller serves none of it since issue 44:
  // its metrics port answers these paths 404, or 405 for a POST).
  Throw("metrics", "a run's detail (no such route)", "GET /api/runs/" + ns + "/a HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404 ");
  Throw("metrics", "a priority change (no such route)",
        "POST /api/runs/" + ns + "/a/priority HTTP/1.1\r\nHost: x\r\nX-Berth-CSRF: 1\r\nContent-Type: application/json\r\n"
        "Authorization: Bearer t\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 405 ");
  // (Its slow senders are cut off after the default 10 s, as long as this test's hang guard: the
  // same HttpServer's 408s are shown on the controller's ports above.)
  const std::string host = "Host: 127.0.0.1:" + std::to_string(dashboard_port_) + "\r\n";
  const std::string kGoodHeaders = host + "X-Berth-CSRF: 1\r\nContent-Type: application/json\r\n";
  Throw("dashboard", "a run's detail, the run missing", "GET /api/runs/" + ns + "/a HTTP/1.1\r\n" + host + "\r\n", "HTTP/1.1 404 ");
  Throw("dashboard", "another Host (DNS rebinding)", "GET /api/runs/" + ns + "/a HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 403 ");
  Throw("dashboard", "1 MiB of `[` as a priority body",
        "POST /api/runs/" + ns + "/a/priority HTTP/1.1\r\n" + kGoodHeaders + "Content-Length: 1048576\r\n\r\n" +
            std::string(1 << 20, '['),
        "HTTP/1.1 413 ");
  Throw("dashboard", "12 KiB of `[` as a priority body (under the body limit)",
        "POST /api/runs/" + ns + "/a/priority HTTP/1.1\r\n" + kGoodHeaders + "Content-Length: 12288\r\n\r\n" +
            std::string(12288, '['),
        "HTTP/1.1 400 ");
  Throw("dashboard", "invalid name (`UPPER`)", "GET /api/runs/" + ns + "/UPPER HTTP/1.1\r\n" + host + "\r\n", "HTTP/1.1 400 ");
  // Logs and stop/suspend/resume (issue 18): the same limits and checks as the priority change.
  Throw("dashboard", "logs of a missing run", "GET /api/runs/" + ns + "/a/logs HTTP/1.1\r\n" + host + "\r\n", "HTTP/1.1 404 ");
  Throw("dashboard", "logs of an invalid name (`a..b`)",
        "GET /api/runs/" + ns + "/a..b/logs HTTP/1.1\r\n" + host + "\r\n", "HTTP/1.1 400 ");
  Throw("dashboard", "logs with `tailLines=99999999999`",
        "GET /api/runs/" + ns + "/a/logs?tailLines=99999999999 HTTP/1.1\r\n" + host + "\r\n",
        "HTTP/1.1 400 ");
  Throw("dashboard", "logs with `follow=true`",
        "GET /api/runs/" + ns + "/a/logs?follow=true HTTP/1.1\r\n" + host + "\r\n", "HTTP/1.1 400 ");
  Throw("dashboard", "POST to logs", "POST /api/runs/" + ns + "/a/logs HTTP/1.1\r\n" + kGoodHeaders + "Content-Length: 2\r\n\r\n{}",
        "HTTP/1.1 405 ");
  for (const std::string action : {"stop", "suspend", "resume"}) {
    const std::string path = "/api/runs/" + ns + "/a/" + action;
    Throw("dashboard", "GET " + action, "GET " + path + " HTTP/1.1\r\n" + host + "\r\n", "HTTP/1.1 405 ");
    Throw("dashboard", "1 MiB of `[` as a " + action + " body",
          "POST " + path + " HTTP/1.1\r\n" + kGoodHeaders + "Content-Length: 1048576\r\n\r\n" + std::string(1 << 20, '['),
          "HTTP/1.1 413 ");
    Throw("dashboard", "12 KiB of `[` as a " + action + " body (under the body limit)",
          "POST " + path + " HTTP/1.1\r\n" + kGoodHeaders + "Content-Length: 12288\r\n\r\n" + std::string(12288, '['),
          "HTTP/1.1 400 ");
    Throw("dashboard", action + " without X-Berth-CSRF",
          "POST " + path + " HTTP/1.1\r\n" + host + "Content-Type: application/json\r\n"
          "Content-Length: 2\r\n\r\n{}",
          "HTTP/1.1 403 ");
    Throw("dashboard", action + " from another Origin",
          "POST " + path + " HTTP/1.1\r\n" + kGoodHeaders + "Origin: http://evil.example\r\nContent-Length: 2\r\n\r\n{}",
          "HTTP/1.1 403 ");
  }

  // The queue's query (issue 29, 10): checked before the queue is read; a page is bounded.
  for (const std::string route : {"/queue", "/api/queue"}) {
    for (const std::string query : {"limit=-1", "limit=1e3", "continue=abc", "namespace=..%2F..%2Fapi"}) {
      Throw("metrics", "`" + route + "?" + query + "`",
            "GET " + route + "?" + query + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "HTTP/1.1 400 ");
    }
  }
  Throw("metrics", "`/queue?limit=99999999999999999999` (more than a page holds)",
        "GET /queue?limit=99999999999999999999 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "HTTP/1.1 200 ");
  // One client holding 100 connections (more than its 64: its own oldest are closed) leaves
  // room for another client (which connection goes is shown in http_server_test).
  {
    std::vector<std::unique_ptr<Wire>> held;
    for (int i = 0; i < 100; ++i) held.push_back(std::make_unique<Wire>(metrics_, false, "127.0.0.2"));
    Wire other(metrics_, false, "127.0.0.4");
    other.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string reply = other.ReadToClose();
    EXPECT_EQ(reply.rfind("HTTP/1.1 200 ", 0), 0u) << StatusLine(reply);
    Check("metrics", "one client opens 100 connections; another asks for /metrics", StatusLine(reply));
  }

  // Two silent clients no longer freeze the probe port: /healthz answers while they hold on.
  {
    Wire a(probe_, false), b(probe_, false), c(probe_, false);
    a.Send("POST /healthz HTTP/1.1\r\nContent-Length: 0\r\nX-Slow: ");
    b.Send("GET /readyz HTTP/1.1\r\n");
    EXPECT_EQ(Healthz().rfind("HTTP/1.1 200 ", 0), 0u);
    Check("probe", "three clients holding connections open", "answered meanwhile");
  }

  // The queue API's TLS port (issue 44), reached without the API server's client certificate: a
  // refusal or an error for each, never a crash.
  Throw("queue-api", "bad escape in the query (`/apis?a=%zz`)", "GET /apis?a=%zz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 4");
  Throw("queue-api", "1 MiB of `[` as a body", "POST /apis HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n" + std::string(1048576, '['),
        "HTTP/1.1 4");
  Throw("queue-api", "64 KiB header", "GET /apis HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n", "HTTP/1.1 431 ");
  Throw("queue-api", "slowloris: a head that never ends", "GET /apis HTTP/1.1\r\nX-Slow: a", "HTTP/1.1 408 ");
  Throw("queue-api", "forged X-Remote-User without a client certificate",
        "GET /apis/queue.berth.dev/v1alpha1/queue HTTP/1.1\r\nHost: x\r\nX-Remote-User: system:admin\r\n"
        "X-Remote-Group: system:masters\r\n\r\n",
        "HTTP/1.1 401 ");

  // The TLS webhook port.
  Throw("webhook", "bad escape in the query", "GET /mutate-runs?a=%zz HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
  Throw("webhook", "`%3F` in the path", "POST /mutate%3Fruns HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 400 ");
  Throw("webhook", "wrong method (`GET /mutate-runs`)", "GET /mutate-runs HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 405 ");
  Throw("webhook", "5 MiB Content-Length", "POST /mutate-runs HTTP/1.1\r\nContent-Length: 5242880\r\n\r\n", "HTTP/1.1 413 ");
  Throw("webhook", "1 MiB of `[` as an AdmissionReview",
        "POST /mutate-runs HTTP/1.1\r\nContent-Length: 1048576\r\n\r\n" + std::string(1 << 20, '['), "HTTP/1.1 400 ");
  Throw("webhook", "64 KiB header", "POST /mutate-runs HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n",
        "HTTP/1.1 431 ");
  Throw("webhook", "slow sender: head, then no body", "POST /mutate-runs HTTP/1.1\r\nContent-Length: 10\r\n\r\n",
        "HTTP/1.1 408 ");
  Throw("webhook", "HTTP/1.0 request", "POST /mutate-runs HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}", "HTTP/1.1 400 ");
  for (const auto& [what, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"plain HTTP on the TLS port", "GET /mutate-runs HTTP/1.1\r\nHost: x\r\n\r\n"},
           {"TLS garbage (a broken ClientHello)", std::string("\x16\x03\x01\x00\x05\x01\x00\x00\x01\xff garbage", 18)},
           {"connects and sends nothing (handshake never starts)", ""}}) {
    Wire w(webhook_, false);
    ASSERT_TRUE(w.ok());
    w.Send(bytes);
    std::string reply = w.ReadToClose();
    EXPECT_EQ(reply.find("HTTP/1.1"), std::string::npos) << what;
    Check("webhook", what, "closed");
  }
  // And it still reviews Runs.
  const std::string review =
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":"CREATE",)"
      R"("object":{"apiVersion":"berth.dev/v1alpha1","kind":"Run","metadata":{"name":"a"}}}})";
  Wire w(webhook_, true);
  w.Send("POST /mutate-runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(review.size()) + "\r\n\r\n" + review);
  std::string reply = w.ReadToClose();
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 ", 0), 0u) << reply;
  EXPECT_NE(reply.find(R"("uid":"u-1")"), std::string::npos) << reply;
  EXPECT_EQ(controller_->Log().find("terminate called"), std::string::npos);
}

// Issue 47: the queue API's usage resource, asked as the API server asks (its front-proxy client
// certificate, an admin's name in the headers) so that each request reaches the route: a
// malformed `since` or `by`, a repeated `by`, a query too long, a slow sender, a body on a GET.
// Each is a 4xx with a sentence, or cut at the read deadline (408), and the same process still
// answers /healthz; a good query is answered.
TEST_F(Hostile, TheUsageEndpointRefusesHostileQueries) {
  const std::string proxy = ControlPlane::Get().dir() + "/front-proxy-client";
  const std::string path = "/apis/queue.berth.dev/v1alpha1/usage";
  const std::string as_admin = "Host: x\r\nX-Remote-User: admin\r\nX-Remote-Group: system:masters\r\n";
  // Sends `bytes` and checks the status line starts with `want` and the reply holds `sentence`.
  auto ask = [&](const std::string& what, const std::string& bytes, const std::string& want, const std::string& sentence) {
    Wire w(queue_api_, true, nullptr, proxy);
    ASSERT_TRUE(w.ok()) << what;
    w.Send(bytes);
    const std::string reply = w.ReadToClose();
    EXPECT_EQ(reply.rfind(want, 0), 0u) << what << "\n got: " << reply.substr(0, 400);
    EXPECT_NE(reply.find(sentence), std::string::npos) << what << "\n got: " << reply.substr(0, 400);
    Check("queue-api", "usage: " + what, StatusLine(reply));
  };
  // The positive control: the front-proxy identity reaches the route.
  ASSERT_TRUE(Eventually([&] {
    Wire w(queue_api_, true, nullptr, proxy);
    w.Send("GET " + path + "?since=7d HTTP/1.1\r\n" + as_admin + "Connection: close\r\n\r\n");
    return w.ReadToClose().rfind("HTTP/1.1 200 ", 0) == 0;
  })) << controller_->Log();
  auto get = [&](const std::string& query, const std::string& extra = {}) {
    return "GET " + path + "?" + query + " HTTP/1.1\r\n" + as_admin + extra + "Connection: close\r\n\r\n";
  };
  ask("a good query (`since=7d&by=user`)", get("since=7d&by=user"), "HTTP/1.1 200 ", R"("kind":"Usage")");
  ask("`since=%zz`", get("since=%zz"), "HTTP/1.1 400 ", "malformed percent-escape in the query");
  ask("`since=99999999999d`", get("since=99999999999d"), "HTTP/1.1 400 ", "since must be a duration from 1h to 90d");
  ask("`by=` a thousand times", get([] {
        std::string q;
        for (int i = 0; i < 1000; ++i) q += "by=&";
        return q;
      }()),
      "HTTP/1.1 400 ", "by must be given once");
  ask("`by=team&by=user`", get("by=team&by=user"), "HTTP/1.1 400 ", "by must be given once");
  ask("`by=pod`", get("by=pod"), "HTTP/1.1 400 ", "by must be team, namespace, user or fleet");
  ask("a 100 KB query", get("since=" + std::string(100 * 1024, '9')), "HTTP/1.1 431 ", "");
  ask("slow sender: a head that never ends", "GET " + path + "?since=7d HTTP/1.1\r\n" + as_admin + "X-Slow: a",
      "HTTP/1.1 408 ", "");
  ask("1 MiB of `[` as the body of a GET",
      "GET " + path + " HTTP/1.1\r\n" + as_admin + "Content-Length: 1048576\r\n\r\n" + std::string(1 << 20, '['),
      "HTTP/1.1 413 ", "");
  ask("a body on a GET (`Content-Length: 10`)", "GET " + path + " HTTP/1.1\r\n" + as_admin + "Content-Length: 10\r\n\r\n",
      "HTTP/1.1 413 ", "");
  EXPECT_EQ(controller_->Log().find("terminate called"), std::string::npos);
}

}  // namespace
}  // namespace berth::testing
