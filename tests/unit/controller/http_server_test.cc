// The request parser (pure) and the HTTP server over real sockets on 127.0.0.1.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "controller/http_request.h"
#include "controller/http_server.h"

namespace berth::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// ---------------------------------------------------------------------------------------------
// RequestParser

HeadCheck AnyBody(size_t max_body = 1024) {
  return [max_body](const HttpRequestView&) {
    HeadDecision d;
    d.max_body = max_body;
    return d;
  };
}

// Feeds `bytes` at once; the step after it.
RequestParser::Step ParseAll(RequestParser& p, const std::string& bytes) {
  p.Append(bytes);
  return p.Next();
}

TEST(RequestParserTest, ParsesARequestWithQueryHeadersAndBody) {
  RequestParser p(AnyBody());
  auto step = ParseAll(p,
                       "POST /a/b%20c?x=1&y=a+b%26&x=2&flag HTTP/1.1\r\nHost: h\r\nX-Thing:  v1 \r\nx-thing: v2\r\n"
                       "Content-Length: 5\r\n\r\nhello");
  ASSERT_EQ(step.kind, RequestParser::Step::kRequest);
  HttpRequestView r = p.TakeRequest();
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.path, "/a/b c");
  EXPECT_EQ(r.query.at("x"), "1") << "the first of repeated parameters counts";
  EXPECT_EQ(r.query.at("y"), "a b&");
  EXPECT_EQ(r.query.at("flag"), "");
  EXPECT_EQ(r.Header("host"), "h");
  EXPECT_EQ(r.Header("x-thing"), "v1, v2");
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(p.keep_alive());
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(RequestParserTest, ByteByByteGivesTheSameRequest) {
  const std::string raw = "\r\nGET /healthz?a=b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
  RequestParser p(AnyBody());
  RequestParser::Step step;
  for (size_t i = 0; i < raw.size(); ++i) {
    p.Append(raw.substr(i, 1));
    step = p.Next();
    if (i + 1 < raw.size()) {
      ASSERT_EQ(step.kind, RequestParser::Step::kNeedMore) << i;
    }
  }
  ASSERT_EQ(step.kind, RequestParser::Step::kRequest);
  HttpRequestView r = p.TakeRequest();
  EXPECT_EQ(r.path, "/healthz");
  EXPECT_EQ(r.query.at("a"), "b");
  EXPECT_EQ(r.body, "abc");
}

TEST(RequestParserTest, PipelinedRequestsComeOneAfterTheOther) {
  RequestParser p(AnyBody());
  p.Append("GET /one HTTP/1.1\r\n\r\nPOST /two HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiGET /three HTTP/1.1\r\nConnection: close\r\n\r\n");
  std::vector<std::string> seen;
  while (true) {
    auto step = p.Next();
    if (step.kind != RequestParser::Step::kRequest) break;
    seen.push_back(p.TakeRequest().path);
    if (!p.keep_alive()) break;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"/one", "/two", "/three"}));
  EXPECT_FALSE(p.keep_alive()) << "Connection: close ends the connection after /three";
}

TEST(RequestParserTest, Http10ClosesAfterTheReply) {
  RequestParser p(AnyBody());
  ASSERT_EQ(ParseAll(p, "GET /healthz HTTP/1.0\r\n\r\n").kind, RequestParser::Step::kRequest);
  EXPECT_EQ(p.TakeRequest().version, "HTTP/1.0");
  EXPECT_FALSE(p.keep_alive());
}

TEST(RequestParserTest, RefusesMalformedRequestsWithTheRightStatus) {
  struct Case {
    std::string raw;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET /healthz?a=%zz HTTP/1.1\r\n\r\n", 400},  // the escape that killed the controller
      {"GET /healthz?a=% HTTP/1.1\r\n\r\n", 400},
      {"GET /healthz?a=%4 HTTP/1.1\r\n\r\n", 400},
      {"GET /a%zzb HTTP/1.1\r\n\r\n", 400},
      {"GET /a% HTTP/1.1\r\n\r\n", 400},
      {"GET /api/runs/ns/a%2Fb HTTP/1.1\r\n\r\n", 400},
      {"GET /api/runs/ns/a%3Fb HTTP/1.1\r\n\r\n", 400},
      {"GET /api/runs/ns/a%23b HTTP/1.1\r\n\r\n", 400},
      {"GET /a%00b HTTP/1.1\r\n\r\n", 400},
      {"GET /a%5cb HTTP/1.1\r\n\r\n", 400},
      {"GET /static/../x HTTP/1.1\r\n\r\n", 400},
      {"GET /static/%2e%2e/x HTTP/1.1\r\n\r\n", 400},
      {"GET /./x HTTP/1.1\r\n\r\n", 400},
      {"GET /a?b=%01 HTTP/1.1\r\n\r\n", 400},
      {"GET http://evil/healthz HTTP/1.1\r\n\r\n", 400},
      {"GET * HTTP/1.1\r\n\r\n", 400},
      {"GET  /healthz HTTP/1.1\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1 \r\n\r\n", 400},
      {"GET /healthz\r\n\r\n", 400},
      {"G(T /healthz HTTP/1.1\r\n\r\n", 400},
      {"GET /healthz HTTP/2.0\r\n\r\n", 505},
      {"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},  // an HTTP/2 preface
      {"GET /healthz FTP/1.1\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1\r\nNo-Colon\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1\r\nBad Name: v\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1\r\nA: b\x01\r\n\r\n", 400},
      {"GET /healthz HTTP/1.1\r\nA: b\nC: d\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
      {"POST /x HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
      {"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411},
      {"POST /x HTTP/1.1\r\nContent-Length: 1025\r\n\r\n", 413},
  };
  for (const auto& c : cases) {
    RequestParser p(AnyBody());
    auto step = ParseAll(p, c.raw);
    ASSERT_EQ(step.kind, RequestParser::Step::kReject) << c.raw;
    EXPECT_EQ(step.reject.status, c.status) << c.raw;
    EXPECT_FALSE(p.keep_alive()) << c.raw;
    EXPECT_FALSE(step.reject.body.empty()) << "a sentence says why: " << c.raw;
    // Rejected stays rejected: nothing after a bad request is trusted.
    p.Append("GET /healthz HTTP/1.1\r\n\r\n");
    EXPECT_EQ(p.Next().kind, RequestParser::Step::kReject) << c.raw;
  }
}

// Regression (found by the http fuzz target): Beast, fed a head in pieces, waits for its end
// before judging it again, so the head is handed to it whole: the verdict is the same however
// the bytes arrive, and an unfinished head is no verdict yet.
TEST(RequestParserTest, AHeadIsJudgedTheSameHoweverItArrives) {
  const std::string bad = "GET /healthz?a=%zz HTTP/1.1\r\n\x05\n";
  for (size_t piece : {bad.size(), size_t{1}, size_t{7}}) {
    RequestParser p(AnyBody());
    RequestParser::Step step;
    for (size_t at = 0; at < bad.size(); at += piece) {
      p.Append(bad.substr(at, piece));
      step = p.Next();
      ASSERT_EQ(step.kind, RequestParser::Step::kNeedMore) << piece << " " << at;
    }
    step = ParseAll(p, "\r\n\r\n");
    ASSERT_EQ(step.kind, RequestParser::Step::kReject) << piece;
    EXPECT_EQ(step.reject.status, 400) << piece;
  }
}

TEST(RequestParserTest, HeadLargerThanTheLimitIs431EvenWithoutItsEnd) {
  RequestParser p(AnyBody(), 1024);
  auto step = ParseAll(p, "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(2000, 'a'));
  ASSERT_EQ(step.kind, RequestParser::Step::kReject);
  EXPECT_EQ(step.reject.status, 431);
  RequestParser q(AnyBody(), 1024);
  step = ParseAll(q, "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(1000, 'a') + "\r\n\r\n");
  ASSERT_EQ(step.kind, RequestParser::Step::kReject);
  EXPECT_EQ(step.reject.status, 431);
}

TEST(RequestParserTest, TheRouterAnswersBeforeTheBodyIsRead) {
  RequestParser p([](const HttpRequestView& head) {
    HeadDecision d;
    if (head.method != "GET") {
      d.status = 405;
      d.message = "method not allowed";
      d.headers["Allow"] = "GET";
    }
    return d;
  });
  auto step = ParseAll(p, "DELETE /healthz HTTP/1.1\r\nContent-Length: 100\r\n\r\n");
  ASSERT_EQ(step.kind, RequestParser::Step::kReject);
  EXPECT_EQ(step.reject.status, 405);
  EXPECT_EQ(step.reject.headers.at("Allow"), "GET");
  RequestParser q(AnyBody(0));  // a probe: no body at all
  step = ParseAll(q, "GET /healthz HTTP/1.1\r\nContent-Length: 10\r\n\r\n");
  ASSERT_EQ(step.kind, RequestParser::Step::kReject);
  EXPECT_EQ(step.reject.status, 413);
}

TEST(RequestParserTest, ExpectContinueIsAskedForOnce) {
  RequestParser p(AnyBody());
  auto step = ParseAll(p, "POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(step.kind, RequestParser::Step::kNeedMore);
  EXPECT_TRUE(step.send_continue);
  step = ParseAll(p, "ab");
  EXPECT_EQ(step.kind, RequestParser::Step::kNeedMore);
  EXPECT_FALSE(step.send_continue);
  step = ParseAll(p, "cd");
  ASSERT_EQ(step.kind, RequestParser::Step::kRequest);
  EXPECT_EQ(p.TakeRequest().body, "abcd");
}

TEST(SerializeReplyTest, WritesLengthAndDropsHeadersThatCouldSplitTheResponse) {
  HttpReply r{404, "text/plain", "nope\n", {{"X-Ok", "1"}, {"X-Bad", "a\r\nSet-Cookie: x"}, {"Bad Name", "v"}}};
  std::string out = SerializeReply(r, false, true);
  EXPECT_THAT(out, StartsWith("HTTP/1.1 404 Not Found\r\n"));
  EXPECT_THAT(out, HasSubstr("Content-Length: 5\r\n"));
  EXPECT_THAT(out, HasSubstr("X-Ok: 1\r\n"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("Set-Cookie")));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("Bad Name")));
  EXPECT_THAT(out, HasSubstr("Connection: close\r\n\r\nnope\n"));
  std::string head = SerializeReply(r, true, false);
  EXPECT_THAT(head, HasSubstr("Content-Length: 5\r\n"));
  EXPECT_THAT(head, ::testing::EndsWith("\r\n\r\n")) << "HEAD: no body";
}

// ---------------------------------------------------------------------------------------------
// HttpServer over sockets

class Conn {
 public:
  // `from`: the source address, so that a test plays several clients (every 127.0.0.0/8 address
  // is the loopback interface's).
  explicit Conn(int port, const char* from = nullptr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};  // a hang guard only: every read below waits for a condition
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
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~Conn() { close(fd_); }
  bool connected() const { return connected_; }
  void Send(const std::string& s) { [[maybe_unused]] auto n = send(fd_, s.data(), s.size(), MSG_NOSIGNAL); }
  // Everything until the server closes (or the hang guard fires).
  std::string ReadToClose() {
    std::string out;
    char buf[4096];
    while (true) {
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // Whether the server closed the connection without sending anything (false on data, or when
  // the hang guard fires first).
  bool ClosedByServer() {
    char buf[256];
    return recv(fd_, buf, sizeof(buf), 0) == 0;
  }
  // One reply (head + Content-Length body).
  std::string ReadReply() {
    std::string out;
    char buf[4096];
    while (true) {
      size_t end = out.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t cl = 0;
        auto at = out.find("Content-Length: ");
        if (at != std::string::npos && at < end) cl = std::stoul(out.substr(at + 16));
        if (out.size() >= end + 4 + cl) {
          std::string reply = out.substr(0, end + 4 + cl);
          pending_ = out.substr(end + 4 + cl);
          return reply;
        }
      }
      ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }
  std::string pending() const { return pending_; }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::string pending_;
};

class HttpServerSocketTest : public ::testing::Test {
 protected:
  void StartServer(HttpLimits limits = {}) {
    server_ = std::make_unique<HttpServer>("127.0.0.1:0", 2, limits);
    server_->Handle("/healthz", [](const HttpRequestView&) { return HttpReply{200, "text/plain", "ok\n", {}}; });
    server_->Handle("/boom", [](const HttpRequestView&) -> HttpReply { throw std::runtime_error("boom"); });
    server_->Handle(
        "/echo",
        [](const HttpRequestView& req) { return HttpReply{200, "text/plain", req.body, {}}; },
        RouteOptions{{"POST"}, 64});
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_GT(server_->port(), 0);
  }
  std::string Healthz() {
    Conn c(server_->port());
    c.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    return c.ReadToClose();
  }
  std::unique_ptr<HttpServer> server_;
};

// Regression: `curl '127.0.0.1:18081/healthz?a=%zz'` terminated the controller.
TEST_F(HttpServerSocketTest, BadEscapesAre400AndTheServerKeepsServing) {
  StartServer();
  for (const std::string target : {"/healthz?a=%zz", "/healthz?%zz=1", "/health%zz", "/healthz?a=%", "/api/x%3Fy"}) {
    Conn c(server_->port());
    c.Send("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string reply = c.ReadToClose();
    EXPECT_THAT(reply, StartsWith("HTTP/1.1 400 ")) << target;
    EXPECT_THAT(reply, HasSubstr("Connection: close")) << target;
    EXPECT_THAT(Healthz(), StartsWith("HTTP/1.1 200 ")) << "after " << target;
  }
}

TEST_F(HttpServerSocketTest, KeepAlivePipeliningHeadAndMethods) {
  StartServer();
  Conn c(server_->port());
  ASSERT_TRUE(c.connected());
  c.Send("GET /healthz HTTP/1.1\r\n\r\nHEAD /healthz HTTP/1.1\r\n\r\nPOST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
         "GET /nope HTTP/1.1\r\n\r\n");
  std::string all = c.ReadToClose();
  EXPECT_THAT(all, StartsWith("HTTP/1.1 200 OK\r\n"));
  // /healthz, HEAD /healthz (no body), /echo, then the 404 that closes.
  EXPECT_EQ(all.find("HTTP/1.1 200 OK\r\n", 1) != std::string::npos, true);
  EXPECT_THAT(all, HasSubstr("\r\n\r\nabc"));
  EXPECT_THAT(all, HasSubstr("HTTP/1.1 404 Not Found\r\n"));
  size_t ok_count = 0;
  for (size_t at = all.find("HTTP/1.1 200"); at != std::string::npos; at = all.find("HTTP/1.1 200", at + 1)) ++ok_count;
  EXPECT_EQ(ok_count, 3u) << all;

  Conn m(server_->port());
  m.Send("DELETE /healthz HTTP/1.1\r\n\r\n");
  std::string r = m.ReadToClose();
  EXPECT_THAT(r, StartsWith("HTTP/1.1 405 "));
  EXPECT_THAT(r, HasSubstr("Allow: GET, HEAD\r\n"));

  Conn b(server_->port());
  b.Send("GET /boom HTTP/1.0\r\n\r\n");
  EXPECT_THAT(b.ReadToClose(), StartsWith("HTTP/1.1 500 ")) << "HTTP/1.0: the server closes after the reply";
  EXPECT_THAT(Healthz(), StartsWith("HTTP/1.1 200 "));
}

TEST_F(HttpServerSocketTest, BodiesAboveTheRouteLimitAre413WithoutReadingThem) {
  StartServer();
  Conn c(server_->port());
  c.Send("POST /echo HTTP/1.1\r\nContent-Length: 1048576\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_THAT(c.ReadToClose(), StartsWith("HTTP/1.1 413 "));
  Conn p(server_->port());
  p.Send("GET /healthz HTTP/1.1\r\nContent-Length: 10\r\n\r\n");
  EXPECT_THAT(p.ReadToClose(), StartsWith("HTTP/1.1 413 ")) << "probes read no body";
  Conn e(server_->port());
  e.Send("POST /echo HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(e.ReadReply(), "HTTP/1.1 100 Continue\r\n\r\n");
  e.Send("hi");
  EXPECT_THAT(e.ReadReply(), ::testing::EndsWith("\r\n\r\nhi"));
}

// Regression: two connections that sent `Content-Length: 10` and nothing more froze the probe
// port. Silent and slow clients now hold a socket each, not a worker, until the read deadline.
TEST_F(HttpServerSocketTest, SlowAndSilentClientsDoNotBlockOthers) {
  HttpLimits limits;
  limits.read_timeout = std::chrono::milliseconds(300);
  StartServer(limits);
  std::vector<std::unique_ptr<Conn>> slow;
  for (int i = 0; i < 6; ++i) {
    slow.push_back(std::make_unique<Conn>(server_->port()));
    if (i % 3 == 0) slow.back()->Send("POST /echo HTTP/1.1\r\nContent-Length: 10\r\n\r\n");  // body never comes
    if (i % 3 == 1) slow.back()->Send("GET /healthz HTTP/1.1\r\nX-Slow: ");                  // head never ends
    // i % 3 == 2: connects and says nothing
  }
  EXPECT_THAT(Healthz(), StartsWith("HTTP/1.1 200 ")) << "answered while six clients hold connections";
  for (int i = 0; i < 6; ++i) {
    std::string r = slow[static_cast<size_t>(i)]->ReadToClose();  // the server closes each after the deadline
    if (i % 3 != 2) {
      EXPECT_THAT(r, StartsWith("HTTP/1.1 408 ")) << i;
    } else {
      EXPECT_EQ(r, "") << "an idle connection is closed without a reply";
    }
  }
  EXPECT_THAT(Healthz(), StartsWith("HTTP/1.1 200 "));
}

// A heavy /queue route whose requests wait inside the handler until Release(); `?quick` answers
// at once.
class BlockingQueueRoute {
 public:
  void Register(HttpServer& server) {
    server.Handle("/queue", [this](const HttpRequestView& req) {
      if (req.query.count("quick")) return HttpReply{200, "application/json", "{}", {}};
      std::unique_lock<std::mutex> lock(mu_);
      ++inside_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return release_; });
      return HttpReply{200, "application/json", "{}", {}};
    }, RouteOptions{{"GET", "HEAD"}, 0, /*heavy=*/true});
  }
  // Whether `n` requests are waiting inside (a hang guard of 30 s only).
  bool WaitInside(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return inside_ == n; });
  }
  int inside() {
    std::lock_guard<std::mutex> lock(mu_);
    return inside_;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      release_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int inside_ = 0;
  bool release_ = false;
};

// Issue 29 (10): clients that hold every worker with heavy requests (the queue JSON, the dashboard
// API) never take the last one: light routes (/metrics, probes) are answered, and a heavy request
// over the cap gets 503 with Retry-After at once.
TEST(HttpServerHeavyRoutesTest, HeavyRequestsNeverTakeTheLastWorker) {
  HttpServer server("127.0.0.1:0", 3);  // heavy requests may hold 2 of the 3 workers
  BlockingQueueRoute queue;
  queue.Register(server);
  server.Handle("/metrics", [](const HttpRequestView&) { return HttpReply{200, "text/plain", "berth_up 1\n", {}}; });
  ASSERT_TRUE(server.Start().ok());

  std::vector<std::unique_ptr<Conn>> held;
  for (const char* from : {"127.0.0.2", "127.0.0.3"}) {  // two clients: one may hold only one of the two
    held.push_back(std::make_unique<Conn>(server.port(), from));
    held.back()->Send("GET /queue HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  ASSERT_TRUE(queue.WaitInside(2));
  Conn third(server.port());
  third.Send("GET /queue HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string refused = third.ReadReply();
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 503 ")) << refused;
  EXPECT_THAT(refused, HasSubstr("Retry-After: 1\r\n"));
  Conn metrics(server.port());
  metrics.Send("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(metrics.ReadToClose(), StartsWith("HTTP/1.1 200 ")) << "the last worker answers /metrics";
  EXPECT_EQ(queue.inside(), 2) << "the refused request never reached its handler";
  queue.Release();
  for (auto& c : held) EXPECT_THAT(c->ReadReply(), StartsWith("HTTP/1.1 200 "));
  // Room again: the next heavy request is served.
  Conn after(server.port());
  after.Send("GET /queue HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(after.ReadToClose(), StartsWith("HTTP/1.1 200 "));
  server.Stop();
}

// Issue 29 (10): one client looping on heavy routes holds at most all heavy workers but one:
// another client's heavy request is served meanwhile.
TEST(HttpServerHeavyRoutesTest, OneClientNeverHoldsEveryHeavyWorker) {
  HttpServer server("127.0.0.1:0", 4);  // heavy requests may hold 3 workers, one client 2 of them
  BlockingQueueRoute queue;
  queue.Register(server);
  ASSERT_TRUE(server.Start().ok());

  std::vector<std::unique_ptr<Conn>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<Conn>(server.port(), "127.0.0.2"));
    held.back()->Send("GET /queue HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  ASSERT_TRUE(queue.WaitInside(2));
  Conn third(server.port(), "127.0.0.2");
  third.Send("GET /queue?quick=1 HTTP/1.1\r\nHost: x\r\n\r\n");
  std::string refused = third.ReadReply();
  EXPECT_THAT(refused, StartsWith("HTTP/1.1 503 ")) << "the looping client's third heavy request: " << refused;
  EXPECT_THAT(refused, HasSubstr("Retry-After: 1\r\n"));
  Conn other(server.port(), "127.0.0.3");
  other.Send("GET /queue?quick=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(other.ReadToClose(), StartsWith("HTTP/1.1 200 ")) << "another client's heavy request is served";
  queue.Release();
  for (auto& c : held) EXPECT_THAT(c->ReadReply(), StartsWith("HTTP/1.1 200 "));
  Conn again(server.port(), "127.0.0.2");
  again.Send("GET /queue?quick=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(again.ReadToClose(), StartsWith("HTTP/1.1 200 ")) << "its share is back once its requests are answered";
  server.Stop();
}

// Issue 29 (10): one client's connections beyond its share close its own oldest waiting one, and
// a full server takes room from the client holding the most; other clients keep theirs.
TEST_F(HttpServerSocketTest, ConnectionsAreLimitedPerClient) {
  HttpLimits limits;
  limits.max_connections = 6;
  limits.max_connections_per_client = 3;
  StartServer(limits);
  std::vector<std::unique_ptr<Conn>> a, b;
  for (int i = 0; i < 2; ++i) b.push_back(std::make_unique<Conn>(server_->port(), "127.0.0.3"));
  for (int i = 0; i < 5; ++i) a.push_back(std::make_unique<Conn>(server_->port(), "127.0.0.2"));
  // Client a's 4th and 5th connections closed its 1st and 2nd; b's two are open.
  EXPECT_TRUE(a[0]->ClosedByServer()) << "a's oldest connection was closed";
  EXPECT_TRUE(a[1]->ClosedByServer());
  for (auto* c : {a[2].get(), a[3].get(), a[4].get(), b[0].get(), b[1].get()}) {
    c->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_THAT(c->ReadReply(), StartsWith("HTTP/1.1 200 "));
  }
  // Full (a 3, b 2, c 1): a new client takes room from a, the client holding the most.
  Conn c(server_->port(), "127.0.0.4");
  Conn d(server_->port(), "127.0.0.5");
  d.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_THAT(d.ReadToClose(), StartsWith("HTTP/1.1 200 "));
  EXPECT_TRUE(a[2]->ClosedByServer()) << "the full server closed a's longest-waiting connection";
  for (auto* k : {b[0].get(), b[1].get(), &c}) {
    k->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_THAT(k->ReadReply(), StartsWith("HTTP/1.1 200 ")) << "other clients keep their connections";
  }
}

TEST_F(HttpServerSocketTest, AFullServerDropsTheOldestWaitingConnection) {
  HttpLimits limits;
  limits.max_connections = 4;
  StartServer(limits);
  std::vector<std::unique_ptr<Conn>> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(std::make_unique<Conn>(server_->port()));
  EXPECT_THAT(Healthz(), StartsWith("HTTP/1.1 200 ")) << "a new client gets in while idle ones fill the server";
  EXPECT_EQ(idle.front()->ReadToClose(), "") << "the oldest idle connection was closed";
}

TEST_F(HttpServerSocketTest, HugeHeadsAre431) {
  StartServer();
  Conn c(server_->port());
  c.Send("GET /healthz HTTP/1.1\r\nX-Big: " + std::string(64 * 1024, 'a') + "\r\n\r\n");
  EXPECT_THAT(c.ReadToClose(), StartsWith("HTTP/1.1 431 "));
  EXPECT_THAT(Healthz(), StartsWith("HTTP/1.1 200 "));
}

}  // namespace
}  // namespace berth::controller
