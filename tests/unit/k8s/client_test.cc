#include "k8s/client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "k8s/clock.h"
#include "k8s/events.h"

namespace berth::k8s {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

HttpResponse Answer(int status, std::string body = {}) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

// A Kubernetes Status object as the API server sends it with an error.
std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)" + json::Quote(message) +
         R"(,"reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

// Records every request and answers from a script. Send answers from `answers` in order (a
// missing answer fails the test); Stream delivers `stream_lines` and then `stream_answer`.
class FakeTransport : public Transport {
 public:
  std::vector<HttpRequest> requests;
  std::deque<Result<HttpResponse>> answers;
  std::vector<std::string> stream_lines;
  Result<HttpResponse> stream_answer = Answer(200);
  int stream_lines_delivered = 0;
  int stream_idle_timeout = -1;

  void Push(int status, std::string body = {}) { answers.emplace_back(Answer(status, std::move(body))); }
  void PushNoAnswer(const std::string& why = "connection refused") { answers.emplace_back(Status::Error(why)); }

  Result<HttpResponse> Send(const HttpRequest& req) override {
    requests.push_back(req);
    if (answers.empty()) {
      ADD_FAILURE() << "unscripted request " << req.method << " " << req.path;
      return Status::Error("unscripted request");
    }
    Result<HttpResponse> r = std::move(answers.front());
    answers.pop_front();
    return r;
  }

  Result<HttpResponse> Stream(const HttpRequest& req, const std::function<bool(std::string& line)>& on_line,
                              Cancellation* /*cancel*/, int idle_timeout_seconds) override {
    requests.push_back(req);
    stream_idle_timeout = idle_timeout_seconds;
    if (!stream_answer.ok()) return stream_answer;
    if (stream_answer->status < 200 || stream_answer->status >= 300) return stream_answer;
    for (const std::string& l : stream_lines) {
      std::string line = l;  // the callback may parse in place
      ++stream_lines_delivered;
      if (!on_line(line)) break;
    }
    return stream_answer;
  }
};

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() : transport_(std::make_shared<FakeTransport>()), client_(ClientConfig{}, transport_) {
    client_.SetMaxRetries(0);
  }

  const HttpRequest& Request(size_t i) const { return transport_->requests.at(i); }
  size_t Requests() const { return transport_->requests.size(); }

  std::shared_ptr<FakeTransport> transport_;
  Client client_;
};

// ---------------------------------------------------------------------------------------------
// Resource::Path and UrlEncode

TEST(ResourcePathTest, BuildsPathsForCoreAndGroupResources) {
  using namespace resources;
  struct Case {
    const Resource& res;
    std::string ns, name, sub, want;
  };
  const std::vector<Case> cases = {
      {kPods, "", "", "", "/api/v1/pods"},
      {kPods, "team-a", "", "", "/api/v1/namespaces/team-a/pods"},
      {kPods, "team-a", "train-0", "", "/api/v1/namespaces/team-a/pods/train-0"},
      {kPods, "team-a", "train-0", "binding", "/api/v1/namespaces/team-a/pods/train-0/binding"},
      {kPods, "team-a", "train-0", "status", "/api/v1/namespaces/team-a/pods/train-0/status"},
      {kEvents, "team-a", "", "", "/api/v1/namespaces/team-a/events"},
      {kSecrets, "s", "tls", "", "/api/v1/namespaces/s/secrets/tls"},
      {kServices, "s", "svc", "", "/api/v1/namespaces/s/services/svc"},
      // Cluster-scoped: a namespace is ignored.
      {kNodes, "", "", "", "/api/v1/nodes"},
      {kNodes, "", "gpu-1", "", "/api/v1/nodes/gpu-1"},
      {kNodes, "ignored", "gpu-1", "status", "/api/v1/nodes/gpu-1/status"},
      {kNamespaces, "", "team-a", "", "/api/v1/namespaces/team-a"},
      // Groups.
      {kLeases, "berth-system", "berth-controller", "",
       "/apis/coordination.k8s.io/v1/namespaces/berth-system/leases/berth-controller"},
      {kRuns, "", "", "", "/apis/berth.dev/v1alpha1/runs"},
      {kRuns, "team-a", "", "", "/apis/berth.dev/v1alpha1/namespaces/team-a/runs"},
      {kRuns, "team-a", "r1", "status", "/apis/berth.dev/v1alpha1/namespaces/team-a/runs/r1/status"},
      {kFleets, "", "a100", "", "/apis/berth.dev/v1alpha1/fleets/a100"},
      {kFleets, "ignored", "a100", "status", "/apis/berth.dev/v1alpha1/fleets/a100/status"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.res.Path(c.ns, c.name, c.sub), c.want) << c.res.plural << " ns=" << c.ns << " name=" << c.name;
  }
  Resource custom{"example.com", "v2", "widgets", true};
  EXPECT_EQ(custom.Path("ns", "w"), "/apis/example.com/v2/namespaces/ns/widgets/w");
}

TEST(UrlEncodeTest, PercentEncodesEverythingButUnreserved) {
  struct Case {
    std::string in, want;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"abcXYZ019-_.~", "abcXYZ019-_.~"},
      {"app=web", "app%3Dweb"},
      {"app in (a,b)", "app%20in%20%28a%2Cb%29"},
      {"tier!=db,env", "tier%21%3Ddb%2Cenv"},
      {"berth.dev/run=r1", "berth.dev%2Frun%3Dr1"},
      {"a+b&c?d#e%f", "a%2Bb%26c%3Fd%23e%25f"},
      {"\xc3\xa9", "%C3%A9"},
  };
  for (const Case& c : cases) EXPECT_EQ(UrlEncode(c.in), c.want) << c.in;
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(ErrorFromResponseTest, DecodesTheServersStatus) {
  struct Case {
    std::string name;
    HttpResponse resp;
    int code;
    std::string reason, message;
    bool not_found, conflict, already_exists, gone, invalid, retryable;
  };
  const std::string long_body(2000, 'x');
  const std::vector<Case> cases = {
      {"404", Answer(404, StatusBody(404, "NotFound", R"(runs.berth.dev "r1" not found)")), 404, "NotFound",
       R"(runs.berth.dev "r1" not found)", true, false, false, false, false, false},
      {"409 conflict",
       Answer(409, StatusBody(409, "Conflict",
                              "Operation cannot be fulfilled on runs.berth.dev \"r1\": the object has been modified")),
       409, "Conflict", "Operation cannot be fulfilled on runs.berth.dev \"r1\": the object has been modified", false,
       true, false, false, false, false},
      {"409 already exists", Answer(409, StatusBody(409, "AlreadyExists", R"(pods "p" already exists)")), 409,
       "AlreadyExists", R"(pods "p" already exists)", false, false, true, false, false, false},
      {"410", Answer(410, StatusBody(410, "Expired", "too old resource version: 5 (100)")), 410, "Expired",
       "too old resource version: 5 (100)", false, false, false, true, false, false},
      {"422", Answer(422, StatusBody(422, "Invalid", R"(Run.berth.dev "r1" is invalid: spec.priority: Invalid value: 500)")),
       422, "Invalid", R"(Run.berth.dev "r1" is invalid: spec.priority: Invalid value: 500)", false, false, false,
       false, true, false},
      {"429", Answer(429, StatusBody(429, "TooManyRequests", "slow down")), 429, "TooManyRequests", "slow down", false,
       false, false, false, false, true},
      {"non-JSON body", Answer(502, "upstream connect error or disconnect/reset before headers"), 502, "",
       "upstream connect error or disconnect/reset before headers", false, false, false, false, false, true},
      {"JSON that is not a Status", Answer(500, R"({"error":"boom"})"), 500, "", R"({"error":"boom"})", false, false,
       false, false, false, true},
      {"empty body", Answer(503), 503, "", "HTTP 503", false, false, false, false, false, true},
      {"Status without message", Answer(403, R"({"kind":"Status","reason":"Forbidden"})"), 403, "Forbidden",
       "HTTP 403", false, false, false, false, false, false},
      {"long body is cut", Answer(500, long_body), 500, "", std::string(512, 'x'), false, false, false, false, false,
       true},
  };
  for (const Case& c : cases) {
    Status s = Client::ErrorFromResponse(c.resp);
    EXPECT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.code(), c.code) << c.name;
    EXPECT_EQ(s.reason(), c.reason) << c.name;
    EXPECT_EQ(s.message(), c.message) << c.name;
    EXPECT_EQ(s.IsNotFound(), c.not_found) << c.name;
    EXPECT_EQ(s.IsConflict(), c.conflict) << c.name;
    EXPECT_EQ(s.IsAlreadyExists(), c.already_exists) << c.name;
    EXPECT_EQ(s.IsGone(), c.gone) << c.name;
    EXPECT_EQ(s.IsInvalid(), c.invalid) << c.name;
    EXPECT_EQ(s.IsRetryable(), c.retryable) << c.name;
  }
}

TEST_F(ClientTest, GetReturnsTheDocumentOrTheApiError) {
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"r1","resourceVersion":"7"}})");
  auto got = client_.Get("/apis/berth.dev/v1alpha1/namespaces/a/runs/r1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(json::GetString(json::Find(*got, {"metadata", "name"})), "r1");
  EXPECT_EQ(Request(0).method, "GET");
  EXPECT_EQ(Request(0).path, "/apis/berth.dev/v1alpha1/namespaces/a/runs/r1");
  EXPECT_EQ(Request(0).bearer_token, "");

  transport_->Push(404, StatusBody(404, "NotFound", R"(runs.berth.dev "gone" not found)"));
  auto missing = client_.Get("/apis/berth.dev/v1alpha1/namespaces/a/runs/gone");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_EQ(missing.status().ToString(), R"(404 NotFound: runs.berth.dev "gone" not found)");

  transport_->Push(200, "<html>not json</html>");
  auto garbage = client_.Get("/api/v1/pods");
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), 0);
  EXPECT_THAT(garbage.status().message(), HasSubstr("invalid JSON"));
}

TEST_F(ClientTest, ForwardsAUsersToken) {
  transport_->Push(200, "{}");
  ASSERT_TRUE(client_.Get("/api/v1/pods", "user-token").ok());
  EXPECT_EQ(Request(0).bearer_token, "user-token");
}

TEST_F(ClientTest, WritesUseTheRightVerbAndContentType) {
  struct Case {
    std::string name;
    std::function<Result<json::Document>()> call;
    std::string method, content_type, body, token;
  };
  const std::vector<Case> cases = {
      {"create", [&] { return client_.Create("/p", R"({"a":1})", "t1"); }, "POST", "application/json", R"({"a":1})",
       "t1"},
      {"update", [&] { return client_.Update("/p", R"({"b":2})"); }, "PUT", "application/json", R"({"b":2})", ""},
      {"merge patch", [&] { return client_.MergePatch("/p", R"({"c":3})", "t2"); }, "PATCH",
       "application/merge-patch+json", R"({"c":3})", "t2"},
      {"json patch", [&] { return client_.JsonPatch("/p", R"([{"op":"remove","path":"/x"}])"); }, "PATCH",
       "application/json-patch+json", R"([{"op":"remove","path":"/x"}])", ""},
  };
  for (const Case& c : cases) {
    transport_->requests.clear();
    transport_->Push(201, R"({"ok":true})");
    auto r = c.call();
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    EXPECT_TRUE(json::GetBool(*r, "ok")) << c.name;
    ASSERT_EQ(Requests(), 1u) << c.name;
    EXPECT_EQ(Request(0).method, c.method) << c.name;
    EXPECT_EQ(Request(0).path, "/p") << c.name;
    EXPECT_EQ(Request(0).content_type, c.content_type) << c.name;
    EXPECT_EQ(Request(0).body, c.body) << c.name;
    EXPECT_EQ(Request(0).bearer_token, c.token) << c.name;
  }
}

TEST_F(ClientTest, UpdateConflictIsAConflict) {
  transport_->Push(409, StatusBody(409, "Conflict", "the object has been modified; please apply your changes"));
  auto r = client_.Update("/p", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsConflict());
  EXPECT_FALSE(r.status().IsAlreadyExists());
  EXPECT_THAT(r.status().message(), HasSubstr("the object has been modified"));
}

TEST_F(ClientTest, CreateAlreadyExistsIsNotAConflict) {
  transport_->Push(409, StatusBody(409, "AlreadyExists", R"(pods "p" already exists)"));
  auto r = client_.Create("/api/v1/namespaces/a/pods", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsAlreadyExists());
  EXPECT_FALSE(r.status().IsConflict());
}

TEST_F(ClientTest, InvalidCarriesTheServersMessage) {
  const std::string msg = R"(Run.berth.dev "r1" is invalid: spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or equal to 1)";
  transport_->Push(422, StatusBody(422, "Invalid", msg));
  auto r = client_.Create("/apis/berth.dev/v1alpha1/namespaces/a/runs", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalid());
  EXPECT_EQ(r.status().code(), 422);
  EXPECT_EQ(r.status().reason(), "Invalid");
  EXPECT_EQ(r.status().message(), msg);
}

// ---------------------------------------------------------------------------------------------
// Retries. The client sleeps 100 ms before the first retry and doubles it; retry counts stay tiny.

struct Scripted {
  int status;  // 0 = no answer
  std::string body;
};

TEST_F(ClientTest, RetriesThrottlingServerErrorsAndNoAnswer) {
  struct Case {
    std::string name;
    int max_retries;
    std::vector<Scripted> script;
    size_t want_requests;
    int want_code;  // 200 = success; 0 = no answer
  };
  const std::vector<Case> cases = {
      {"503 then ok", 1, {{503, ""}, {200, "{}"}}, 2, 200},
      {"429 then ok", 1, {{429, StatusBody(429, "TooManyRequests", "slow")}, {200, "{}"}}, 2, 200},
      {"no answer then ok", 1, {{0, ""}, {200, "{}"}}, 2, 200},
      {"500 until the limit", 1, {{500, ""}, {500, StatusBody(500, "InternalError", "etcd down")}}, 2, 500},
      {"no answer until the limit", 1, {{0, ""}, {0, ""}}, 2, 0},
      {"mixed, two retries", 2, {{0, ""}, {504, ""}, {200, "{}"}}, 3, 200},
      {"no retries configured", 0, {{503, ""}}, 1, 503},
  };
  for (const Case& c : cases) {
    transport_->requests.clear();
    transport_->answers.clear();
    for (const Scripted& s : c.script) {
      if (s.status == 0) {
        transport_->PushNoAnswer("connect: connection refused");
      } else {
        transport_->Push(s.status, s.body);
      }
    }
    client_.SetMaxRetries(c.max_retries);
    auto r = client_.Get("/api/v1/nodes");
    EXPECT_EQ(Requests(), c.want_requests) << c.name;
    EXPECT_TRUE(transport_->answers.empty()) << c.name;
    if (c.want_code == 200) {
      EXPECT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    } else {
      ASSERT_FALSE(r.ok()) << c.name;
      EXPECT_EQ(r.status().code(), c.want_code) << c.name;
      EXPECT_TRUE(r.status().IsRetryable()) << c.name;
    }
    // Every attempt is the same request.
    for (const HttpRequest& req : transport_->requests) EXPECT_EQ(req.path, "/api/v1/nodes") << c.name;
  }
}

// The backoff between retries runs on the client's clock: with a FakeClock a test steps it.
TEST_F(ClientTest, RetryBackoffWaitsOnTheClientsClock) {
  FakeClock clock;
  client_.SetClock(clock);
  client_.SetMaxRetries(1);
  transport_->Push(503);
  transport_->Push(200, "{}");
  Result<json::Document> r = Status::Error("not yet");
  std::thread caller([&] { r = client_.Get("/api/v1/nodes"); });
  while (clock.Waiters() < 1) std::this_thread::yield();  // the first answer was a 503
  clock.Advance(std::chrono::milliseconds(99));
  EXPECT_EQ(clock.Waiters(), 1) << "the first backoff is 100 ms";
  clock.Advance(std::chrono::milliseconds(1));
  caller.join();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Requests(), 2u);
}

TEST_F(ClientTest, NoAnswerKeepsTheTransportsMessage) {
  transport_->PushNoAnswer("TLS handshake failed: certificate verify failed");
  auto r = client_.Get("/api/v1/nodes");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), 0);
  EXPECT_EQ(r.status().message(), "TLS handshake failed: certificate verify failed");
}

// Token rotation: a 401 to a request made with a token file re-reads the file; when the token
// changed the request is sent once more (with the new token, which the transport reads from the
// same TokenSource). Never more than once, never for a caller's own token, never for a static one.
TEST(ClientTokenRotationTest, A401ReReadsTheTokenFileAndRetriesOnce) {
  std::string dir = ::testing::TempDir() + "/berth-token-rotation-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/token";
  auto write = [&](const std::string& t) { std::ofstream(path, std::ios::trunc) << t; };
  write("token-a");
  ClientConfig cfg;
  cfg.token = TokenSource::File(path, std::chrono::hours(1));
  auto transport = std::make_shared<FakeTransport>();
  Client client(cfg, transport);
  client.SetMaxRetries(0);
  const std::string unauthorized = StatusBody(401, "Unauthorized", "Unauthorized");

  // Rotated: 401, re-read, the same request again, success.
  EXPECT_EQ(cfg.token->Token(), "token-a");
  write("token-b");
  transport->Push(401, unauthorized);
  transport->Push(200, R"({"kind":"Run"})");
  auto got = client.Get("/apis/berth.dev/v1alpha1/namespaces/ns/runs/a");
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(transport->requests.size(), 2u);
  EXPECT_EQ(transport->requests[1].path, transport->requests[0].path);
  EXPECT_EQ(cfg.token->Token(), "token-b");

  // Not rotated: the 401 is the answer (no second request).
  transport->Push(401, unauthorized);
  auto refused = client.MergePatch("/api/v1/nodes/n", "{}");
  EXPECT_EQ(refused.status().code(), 401);
  EXPECT_EQ(transport->requests.size(), 3u);

  // Rotated, but the new token is refused too: one retry only.
  write("token-c");
  transport->Push(401, unauthorized);
  transport->Push(401, unauthorized);
  EXPECT_EQ(client.Create("/api/v1/namespaces/ns/pods", "{}").status().code(), 401);
  EXPECT_EQ(transport->requests.size(), 5u);

  // A caller's own token (the dashboard's write path) is never swapped for the controller's.
  write("token-d");
  transport->Push(401, unauthorized);
  EXPECT_EQ(client.MergePatch("/apis/berth.dev/v1alpha1/namespaces/ns/runs/a", "{}", "callers-token").status().code(), 401);
  EXPECT_EQ(transport->requests.size(), 6u);
  EXPECT_EQ(cfg.token->Token(), "token-c") << "the file was not re-read for the caller's request";

  // Watches too.
  transport->stream_answer = Answer(401, unauthorized);
  Cancellation cancel;
  Status w = client.Watch("/api/v1/pods", WatchOptions{}, [](const WatchEvent&) { return true; }, &cancel);
  EXPECT_EQ(w.code(), 401);
  EXPECT_EQ(transport->requests.size(), 8u) << "the watch was tried again after the re-read";
  EXPECT_EQ(cfg.token->Token(), "token-d");
  std::filesystem::remove_all(dir);
}

TEST(ClientTokenRotationTest, AStaticTokenIsNotRetried) {
  ClientConfig cfg;
  cfg.token = TokenSource::Static("fixed");
  auto transport = std::make_shared<FakeTransport>();
  Client client(cfg, transport);
  client.SetMaxRetries(0);
  transport->Push(401, StatusBody(401, "Unauthorized", "Unauthorized"));
  EXPECT_EQ(client.Get("/api/v1/pods").status().code(), 401);
  EXPECT_EQ(transport->requests.size(), 1u);
}

TEST_F(ClientTest, ClientErrorsAreNotRetried) {
  client_.SetMaxRetries(3);
  for (int code : {400, 401, 403, 404, 409, 410, 422}) {
    transport_->requests.clear();
    transport_->Push(code, StatusBody(code, "Whatever", "nope"));
    auto r = client_.Get("/api/v1/nodes/n");
    ASSERT_FALSE(r.ok()) << code;
    EXPECT_EQ(r.status().code(), code);
    EXPECT_EQ(Requests(), 1u) << code;
  }
  // Writes, too.
  transport_->requests.clear();
  transport_->Push(409, StatusBody(409, "Conflict", "modified"));
  EXPECT_TRUE(client_.Bind("a", "p", "n").IsConflict());
  EXPECT_EQ(Requests(), 1u);
}

TEST_F(ClientTest, WritesAreRetriedToo) {
  client_.SetMaxRetries(1);
  transport_->Push(503);
  transport_->Push(204);
  EXPECT_TRUE(client_.Delete("/api/v1/namespaces/a/pods/p").ok());
  ASSERT_EQ(Requests(), 2u);
  EXPECT_EQ(Request(0).body, Request(1).body);
  EXPECT_EQ(Request(1).method, "DELETE");
}

// The leadership guard is asked before every write attempt, retries included: a leader whose
// lease expired while a write was backing off sends nothing more.
TEST_F(ClientTest, WriteGuardIsAskedBeforeEveryAttempt) {
  client_.SetMaxRetries(3);
  int asked = 0;
  bool leading = true;
  client_.SetWriteGuard([&] {
    ++asked;
    return leading;
  });
  transport_->Push(503);
  transport_->answers.emplace_back(Status::Error("connection reset"));
  transport_->Push(200, "{}");
  // Leadership ends after the second attempt: the third is not sent.
  int attempts_seen = 0;
  client_.SetRequestObserver([&](const std::string&, int) {
    if (++attempts_seen == 2) leading = false;
  });
  auto r = client_.MergePatch("/apis/berth.dev/v1alpha1/namespaces/a/runs/r/status", "{}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().reason(), "NotLeader");
  EXPECT_EQ(r.status().code(), 0);
  EXPECT_EQ(Requests(), 2u);
  EXPECT_EQ(asked, 3);
  transport_->answers.clear();
}

TEST_F(ClientTest, WriteGuardCoversEveryWriteVerbButNotReadsOrAUsersOwnWrites) {
  client_.SetWriteGuard([] { return false; });
  EXPECT_EQ(client_.Create("/api/v1/namespaces/a/pods", "{}").status().reason(), "NotLeader");
  EXPECT_EQ(client_.Update("/api/v1/namespaces/a/pods/p", "{}").status().reason(), "NotLeader");
  EXPECT_EQ(client_.MergePatch("/api/v1/namespaces/a/pods/p", "{}").status().reason(), "NotLeader");
  EXPECT_EQ(client_.JsonPatch("/api/v1/namespaces/a/pods/p", "[]").status().reason(), "NotLeader");
  EXPECT_EQ(client_.Delete("/api/v1/namespaces/a/pods/p").reason(), "NotLeader");
  EXPECT_EQ(client_.Bind("a", "p", "n").reason(), "NotLeader");
  EXPECT_EQ(Requests(), 0u) << "nothing was sent";
  // Reads change nothing; a write with the caller's own token is the caller's (the dashboard).
  transport_->Push(200, "{}");
  EXPECT_TRUE(client_.Get("/api/v1/namespaces/a/pods/p").ok());
  transport_->Push(200, "{}");
  EXPECT_TRUE(client_.MergePatch("/apis/berth.dev/v1alpha1/namespaces/a/runs/r", "{}", "users-token").ok());
  ASSERT_EQ(Requests(), 2u);
  EXPECT_EQ(Request(1).bearer_token, "users-token");
}

// ---------------------------------------------------------------------------------------------
// List

std::string Page(const std::vector<std::string>& names, const std::string& rv, const std::string& cont = {}) {
  std::string items;
  for (const std::string& n : names) {
    if (!items.empty()) items += ",";
    items += R"({"metadata":{"name":")" + n + R"("}})";
  }
  std::string meta = R"({"resourceVersion":")" + rv + "\"";
  if (!cont.empty()) meta += R"(,"continue":")" + cont + "\"";
  meta += "}";
  return R"({"kind":"PodList","apiVersion":"v1","metadata":)" + meta + R"(,"items":[)" + items + "]}";
}

std::vector<std::string> Names(const ListResult& r) {
  std::vector<std::string> out;
  for (const json::Document& d : r.items) out.push_back(json::GetString(json::Find(d, {"metadata", "name"})));
  return out;
}

TEST_F(ClientTest, ListFollowsContinue) {
  transport_->Push(200, Page({"a", "b"}, "100", "tok/1=="));
  transport_->Push(200, Page({"c", "d"}, "100", "tok2"));
  transport_->Push(200, Page({"e"}, "100"));
  ListOptions opts;
  opts.limit = 2;
  auto r = client_.List("/api/v1/pods", opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Names(*r), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(r->resource_version, "100");
  ASSERT_EQ(Requests(), 3u);
  EXPECT_EQ(Request(0).path, "/api/v1/pods?limit=2");
  EXPECT_EQ(Request(1).path, "/api/v1/pods?limit=2&continue=tok%2F1%3D%3D");
  EXPECT_EQ(Request(2).path, "/api/v1/pods?limit=2&continue=tok2");
  for (const HttpRequest& req : transport_->requests) EXPECT_EQ(req.method, "GET");
}

// Issue 29, item 6: pages are bounded in bytes. The first asks for kFirstPageItems; the next one
// for as many items as kPageBytes holds at the last page's size per item (at most opts.limit).
TEST_F(ClientTest, ListPagesHoldAboutKPageBytes) {
  const std::string big(1 << 20, 'x');  // 1 MiB per item: 4 per page
  std::string page = R"({"kind":"PodList","metadata":{"resourceVersion":"7","continue":"c1"},"items":[)";
  for (int i = 0; i < 16; ++i) page += std::string(i > 0 ? "," : "") + R"({"metadata":{"name":"p)" + std::to_string(i) + R"(","annotations":{"a":")" + big + R"("}}})";
  transport_->Push(200, page + "]}");
  transport_->Push(200, Page({"q"}, "7", "c2"));
  transport_->Push(200, Page({"r"}, "7"));
  auto r = client_.List("/api/v1/pods");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->items.size(), 18u);
  ASSERT_EQ(Requests(), 3u);
  EXPECT_EQ(Request(0).path, "/api/v1/pods?limit=16");
  EXPECT_EQ(Request(1).path, "/api/v1/pods?limit=3&continue=c1");  // 4 MiB at 1 MiB and a bit per item
  EXPECT_EQ(Request(2).path, "/api/v1/pods?limit=500&continue=c2");  // small items: the caller's limit
  EXPECT_EQ(NextPageLimit(0, 0, 500), 500);
  EXPECT_EQ(NextPageLimit(10, 100 * kPageBytes, 500), 1);
  EXPECT_EQ(NextPageLimit(100, 100 * 1024, 500), 500);
  EXPECT_EQ(NextPageLimit(100, 100 * 64 * 1024, 500), 64);
}

TEST_F(ClientTest, ListSendsResourceVersionOnlyOnTheFirstPage) {
  transport_->Push(200, Page({"a"}, "50", "next"));
  transport_->Push(200, Page({"b"}, "50"));
  ListOptions opts;
  opts.limit = 1;
  opts.resource_version = "0";
  auto r = client_.List("/api/v1/nodes", opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Request(0).path, "/api/v1/nodes?limit=1&resourceVersion=0");
  EXPECT_EQ(Request(1).path, "/api/v1/nodes?limit=1&continue=next");
}

TEST_F(ClientTest, ListWithoutPaginationOrItems) {
  transport_->Push(200, R"({"kind":"NodeList","metadata":{"resourceVersion":"9"},"items":null})");
  ListOptions opts;
  opts.limit = 0;
  auto r = client_.List("/api/v1/nodes", opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->items.empty());
  EXPECT_EQ(r->resource_version, "9");
  EXPECT_EQ(Request(0).path, "/api/v1/nodes");
}

TEST_F(ClientTest, ListEncodesSelectors) {
  struct Case {
    std::string label, field, want;
  };
  const std::vector<Case> cases = {
      {"app=web", "", "/api/v1/pods?labelSelector=app%3Dweb&limit=16"},
      {"", "spec.nodeName=gpu-1", "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1&limit=16"},
      {"berth.dev/run in (r1,r2),!canary", "status.phase!=Succeeded,spec.schedulerName=berth",
       "/api/v1/pods?labelSelector=berth.dev%2Frun%20in%20%28r1%2Cr2%29%2C%21canary"
       "&fieldSelector=status.phase%21%3DSucceeded%2Cspec.schedulerName%3Dberth&limit=16"},
  };
  for (const Case& c : cases) {
    transport_->requests.clear();
    transport_->Push(200, Page({}, "1"));
    ListOptions opts;
    opts.label_selector = c.label;
    opts.field_selector = c.field;
    ASSERT_TRUE(client_.List("/api/v1/pods", opts).ok());
    EXPECT_EQ(Request(0).path, c.want);
  }
}

TEST_F(ClientTest, ListAppendsToAnExistingQuery) {
  transport_->Push(200, Page({}, "1"));
  ListOptions opts;
  opts.label_selector = "a=b";
  ASSERT_TRUE(client_.List("/api/v1/pods?timeoutSeconds=5", opts).ok());
  EXPECT_EQ(Request(0).path, "/api/v1/pods?timeoutSeconds=5&labelSelector=a%3Db&limit=16");
}

TEST_F(ClientTest, ListRestartsWhenTheContinueTokenExpires) {
  transport_->Push(200, Page({"old-a", "old-b"}, "100", "stale"));
  transport_->Push(410, StatusBody(410, "Expired", "The provided continue parameter is too old"));
  transport_->Push(200, Page({"new-a", "new-b"}, "200", "fresh"));
  transport_->Push(200, Page({"new-c"}, "200"));
  ListOptions opts;
  opts.limit = 2;
  opts.label_selector = "app=x";
  auto r = client_.List("/api/v1/pods", opts);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  // Only the fresh snapshot: nothing from the abandoned pages, nothing twice.
  EXPECT_EQ(Names(*r), (std::vector<std::string>{"new-a", "new-b", "new-c"}));
  EXPECT_EQ(r->resource_version, "200");
  ASSERT_EQ(Requests(), 4u);
  EXPECT_EQ(Request(1).path, "/api/v1/pods?labelSelector=app%3Dx&limit=2&continue=stale");
  EXPECT_EQ(Request(2).path, "/api/v1/pods?labelSelector=app%3Dx&limit=2");  // started over
  EXPECT_EQ(Request(3).path, "/api/v1/pods?labelSelector=app%3Dx&limit=2&continue=fresh");
}

TEST_F(ClientTest, ListGivesUpAfterRepeatedExpiry) {
  for (int i = 0; i < 10; ++i) {
    transport_->Push(200, Page({"a"}, "1", "c"));
    transport_->Push(410, StatusBody(410, "Expired", "too old"));
  }
  ListOptions opts;
  opts.limit = 1;
  auto r = client_.List("/api/v1/pods", opts);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsGone());
  EXPECT_LE(Requests(), 10u);  // a bounded number of restarts
  EXPECT_GE(Requests(), 4u);   // but at least one
}

TEST_F(ClientTest, ListEachReportsAnExpiredContinueTokenAsGone) {
  transport_->Push(200, Page({"a"}, "1", "c"));
  transport_->Push(410, StatusBody(410, "Expired", "too old"));
  std::vector<std::string> seen;
  std::string rv;
  ListOptions opts;
  opts.limit = 1;
  Status s = client_.ListEach(
      "/api/v1/pods", opts,
      [&](const json::Value& item) { seen.push_back(json::GetString(json::Find(item, {"metadata", "name"}))); }, &rv);
  EXPECT_TRUE(s.IsGone());
  EXPECT_EQ(s.reason(), "Expired");
  EXPECT_EQ(seen, (std::vector<std::string>{"a"}));
  EXPECT_EQ(Requests(), 2u);
}

TEST_F(ClientTest, ListErrorsAreReturned) {
  transport_->Push(403, StatusBody(403, "Forbidden", R"(pods is forbidden: User "x" cannot list resource "pods")"));
  auto r = client_.List("/api/v1/pods");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsForbidden());
  EXPECT_THAT(r.status().message(), HasSubstr("cannot list"));
  EXPECT_EQ(Requests(), 1u);

  transport_->Push(200, "not json");
  auto bad = client_.List("/api/v1/pods");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("invalid JSON"));
}

TEST_F(ClientTest, ListedDocumentsOutliveTheirPage) {
  transport_->Push(200, Page({"first", "second"}, "3"));
  ListResult kept;
  {
    auto r = client_.List("/api/v1/pods");
    ASSERT_TRUE(r.ok());
    kept = std::move(r).value();
  }
  transport_->Push(200, Page({"overwrite-1", "overwrite-2"}, "4"));  // reuse freed memory, if any
  ASSERT_TRUE(client_.List("/api/v1/pods").ok());
  EXPECT_EQ(Names(kept), (std::vector<std::string>{"first", "second"}));
}

// ---------------------------------------------------------------------------------------------
// Delete and Bind

TEST_F(ClientTest, DeleteSendsDeleteOptions) {
  struct Case {
    std::string name;
    DeleteOptions opts;
    std::string policy, uid, rv;  // "" = absent
    bool has_preconditions;
    int64_t grace = -1;  // -1 = absent
  };
  const std::vector<Case> cases = {
      {"nothing", {}, "", "", "", false},
      {"policy only", {"", "", "Foreground", std::nullopt}, "Foreground", "", "", false},
      {"uid", {"u-1", "", "", std::nullopt}, "", "u-1", "", true},
      {"rv", {"", "42", "", std::nullopt}, "", "", "42", true},
      {"grace period 0", {"", "", "", 0}, "", "", "", false, 0},
      {"everything", {"u-1", "42", "Background", 30}, "Background", "u-1", "42", true, 30},
  };
  for (const Case& c : cases) {
    transport_->requests.clear();
    transport_->Push(200, R"({"kind":"Status","status":"Success"})");
    Status s = client_.Delete("/api/v1/namespaces/a/pods/p", c.opts);
    ASSERT_TRUE(s.ok()) << c.name << ": " << s.ToString();
    ASSERT_EQ(Requests(), 1u);
    EXPECT_EQ(Request(0).method, "DELETE") << c.name;
    EXPECT_EQ(Request(0).path, "/api/v1/namespaces/a/pods/p") << c.name;
    EXPECT_EQ(Request(0).content_type, "application/json") << c.name;
    auto body = json::Parse(Request(0).body);
    ASSERT_TRUE(body.ok()) << c.name << ": " << Request(0).body;
    EXPECT_EQ(json::GetString(*body, "kind"), "DeleteOptions") << c.name;
    EXPECT_EQ(json::GetString(*body, "apiVersion"), "v1") << c.name;
    EXPECT_EQ(json::GetString(*body, "propagationPolicy", "<absent>"), c.policy.empty() ? "<absent>" : c.policy)
        << c.name;
    EXPECT_EQ(json::GetInt(*body, "gracePeriodSeconds", -1), c.grace) << c.name;
    const json::Value* pre = json::Find(*body, {"preconditions"});
    EXPECT_EQ(pre != nullptr, c.has_preconditions) << c.name << ": " << Request(0).body;
    if (pre != nullptr) {
      EXPECT_EQ(json::GetString(*pre, "uid", "<absent>"), c.uid.empty() ? "<absent>" : c.uid) << c.name;
      EXPECT_EQ(json::GetString(*pre, "resourceVersion", "<absent>"), c.rv.empty() ? "<absent>" : c.rv) << c.name;
    }
  }
}

TEST_F(ClientTest, DeleteErrors) {
  transport_->Push(404, StatusBody(404, "NotFound", R"(pods "p" not found)"));
  EXPECT_TRUE(client_.Delete("/api/v1/namespaces/a/pods/p").IsNotFound());
  transport_->Push(409, StatusBody(409, "Conflict", "Precondition failed: UID in precondition: u-1, UID in object meta: u-2"));
  Status s = client_.Delete("/api/v1/namespaces/a/pods/p", {"u-1", "", "", std::nullopt});
  EXPECT_TRUE(s.IsConflict());
  EXPECT_THAT(s.message(), HasSubstr("Precondition failed"));
}

TEST_F(ClientTest, DeleteEscapesValuesInTheBody) {
  transport_->Push(200, "{}");
  ASSERT_TRUE(client_.Delete("/p", {R"(u"1)", "", "", std::nullopt}).ok());
  auto body = json::Parse(Request(0).body);
  ASSERT_TRUE(body.ok()) << Request(0).body;
  EXPECT_EQ(json::GetString(json::Find(*body, {"preconditions", "uid"})), R"(u"1)");
}

TEST_F(ClientTest, BindPostsABinding) {
  for (const std::string uid : {"", "pod-uid-1"}) {
    transport_->requests.clear();
    transport_->Push(201, R"({"kind":"Status","status":"Success","code":201})");
    Status s = client_.Bind("team-a", "train-0", "gpu-7", uid);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(Requests(), 1u);
    EXPECT_EQ(Request(0).method, "POST");
    EXPECT_EQ(Request(0).path, "/api/v1/namespaces/team-a/pods/train-0/binding");
    auto body = json::Parse(Request(0).body);
    ASSERT_TRUE(body.ok()) << Request(0).body;
    EXPECT_EQ(json::GetString(*body, "apiVersion"), "v1");
    EXPECT_EQ(json::GetString(*body, "kind"), "Binding");
    EXPECT_EQ(json::GetString(json::Find(*body, {"metadata", "name"})), "train-0");
    EXPECT_EQ(json::GetString(json::Find(*body, {"metadata", "uid"}), "<absent>"), uid.empty() ? "<absent>" : uid);
    EXPECT_EQ(json::GetString(json::Find(*body, {"target", "apiVersion"})), "v1");
    EXPECT_EQ(json::GetString(json::Find(*body, {"target", "kind"})), "Node");
    EXPECT_EQ(json::GetString(json::Find(*body, {"target", "name"})), "gpu-7");
  }
}

TEST_F(ClientTest, BindToABoundPodIsAConflict) {
  transport_->Push(409, StatusBody(409, "Conflict", R"(Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1")"));
  Status s = client_.Bind("a", "p", "n2");
  EXPECT_TRUE(s.IsConflict());
  EXPECT_THAT(s.message(), HasSubstr("already assigned"));
}

// ---------------------------------------------------------------------------------------------
// Watch

std::string Event(const std::string& type, const std::string& name, const std::string& rv) {
  return R"({"type":")" + type + R"(","object":{"kind":"Pod","metadata":{"name":")" + name +
         R"(","resourceVersion":")" + rv + R"("}}})";
}

struct Seen {
  std::string type, name, rv;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Seen& s) { return os << s.type << " " << s.name << "@" << s.rv; }

TEST_F(ClientTest, WatchDeliversEveryEventType) {
  transport_->stream_lines = {
      Event("ADDED", "a", "10"),
      Event("MODIFIED", "a", "11"),
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}})",
      Event("DELETED", "a", "13"),
  };
  std::vector<Seen> seen;
  WatchOptions opts;
  opts.resource_version = "9";
  opts.timeout_seconds = 120;
  Status s = client_.Watch(
      "/api/v1/pods", opts,
      [&](const WatchEvent& ev) {
        EXPECT_NE(ev.object, nullptr);
        seen.push_back({ev.type, json::GetString(json::Find(*ev.object, {"metadata", "name"})),
                        json::GetString(json::Find(*ev.object, {"metadata", "resourceVersion"}))});
        return true;
      },
      nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen, (std::vector<Seen>{{"ADDED", "a", "10"},
                                     {"MODIFIED", "a", "11"},
                                     {"BOOKMARK", "", "12"},
                                     {"DELETED", "a", "13"}}));
  ASSERT_EQ(Requests(), 1u);
  EXPECT_EQ(Request(0).method, "GET");
  EXPECT_EQ(Request(0).path,
            "/api/v1/pods?watch=true&resourceVersion=9&allowWatchBookmarks=true&timeoutSeconds=120");
  // The transport gives up on a silent stream a little after the server should have closed it.
  EXPECT_GT(transport_->stream_idle_timeout, 120);
}

TEST_F(ClientTest, WatchQueryOptions) {
  WatchOptions opts;
  opts.label_selector = "berth.dev/run";
  opts.field_selector = "spec.nodeName=n1";
  opts.allow_bookmarks = false;
  opts.timeout_seconds = 300;
  ASSERT_TRUE(client_.Watch("/api/v1/pods", opts, [](const WatchEvent&) { return true; }, nullptr).ok());
  EXPECT_EQ(Request(0).path,
            "/api/v1/pods?watch=true&labelSelector=berth.dev%2Frun&fieldSelector=spec.nodeName%3Dn1"
            "&timeoutSeconds=300");
  EXPECT_THAT(Request(0).path, Not(HasSubstr("resourceVersion")));
}

TEST_F(ClientTest, WatchStopsWhenTheCallbackSaysSo) {
  transport_->stream_lines = {Event("ADDED", "a", "1"), Event("ADDED", "b", "2"), Event("ADDED", "c", "3")};
  int calls = 0;
  Status s = client_.Watch("/api/v1/pods", {}, [&](const WatchEvent&) { return ++calls < 2; }, nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(transport_->stream_lines_delivered, 2);
}

TEST_F(ClientTest, WatchErrorEventBecomesAStatus) {
  struct Case {
    std::string name, object;
    int code;
    std::string reason, message;
  };
  const std::vector<Case> cases = {
      {"410 expired", StatusBody(410, "Expired", "too old resource version: 5 (1000)"), 410, "Expired",
       "too old resource version: 5 (1000)"},
      {"410 gone", StatusBody(410, "Gone", "resourceVersion is gone"), 410, "Gone", "resourceVersion is gone"},
      {"500", StatusBody(500, "InternalError", "etcd watch failed"), 500, "InternalError", "etcd watch failed"},
      {"no code", R"({"kind":"Status","message":"something"})", 500, "", "something"},
  };
  for (const Case& c : cases) {
    transport_->stream_lines = {Event("ADDED", "a", "1"), R"({"type":"ERROR","object":)" + c.object + "}",
                                Event("ADDED", "after-error", "2")};
    std::vector<std::string> types;
    Status s = client_.Watch(
        "/api/v1/pods", {},
        [&](const WatchEvent& ev) {
          types.push_back(ev.type);
          return true;
        },
        nullptr);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.code(), c.code) << c.name;
    EXPECT_EQ(s.reason(), c.reason) << c.name;
    EXPECT_EQ(s.message(), c.message) << c.name;
    EXPECT_EQ(s.IsGone(), c.code == 410) << c.name;
    // The ERROR event ends the watch; it is not handed to the callback.
    EXPECT_EQ(types, (std::vector<std::string>{"ADDED"})) << c.name;
  }
}

TEST_F(ClientTest, WatchNon2xxAnswerBecomesAStatus) {
  transport_->stream_answer = Answer(410, StatusBody(410, "Expired", "too old resource version"));
  transport_->stream_lines = {Event("ADDED", "never", "1")};
  bool called = false;
  Status s = client_.Watch("/api/v1/pods", {}, [&](const WatchEvent&) { return called = true; }, nullptr);
  EXPECT_TRUE(s.IsGone());
  EXPECT_EQ(s.reason(), "Expired");
  EXPECT_FALSE(called);

  transport_->stream_answer = Answer(403, StatusBody(403, "Forbidden", "cannot watch pods"));
  s = client_.Watch("/api/v1/pods", {}, [&](const WatchEvent&) { return true; }, nullptr);
  EXPECT_TRUE(s.IsForbidden());
}

TEST_F(ClientTest, WatchWithoutAnAnswer) {
  transport_->stream_answer = Status::Error("connection reset by peer");
  Status s = client_.Watch("/api/v1/pods", {}, [&](const WatchEvent&) { return true; }, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), 0);
  EXPECT_EQ(s.message(), "connection reset by peer");
}

TEST_F(ClientTest, WatchRejectsMalformedEvents) {
  struct Case {
    std::string line, want;
  };
  const std::vector<Case> cases = {
      {"{not json", "bad watch event"},
      {R"({"type":"ADDED"})", "watch event without object"},
      {"[1,2]", "bad watch event"},
      {"\"ADDED\"", "bad watch event"},
      {"null", "bad watch event"},
  };
  for (const Case& c : cases) {
    transport_->stream_lines = {Event("ADDED", "a", "1"), c.line, Event("ADDED", "b", "2")};
    int calls = 0;
    Status s = client_.Watch("/api/v1/pods", {}, [&](const WatchEvent&) { return ++calls > 0; }, nullptr);
    ASSERT_FALSE(s.ok()) << c.line;
    EXPECT_THAT(s.message(), HasSubstr(c.want)) << c.line;
    EXPECT_EQ(calls, 1) << c.line;
  }
}

// ---------------------------------------------------------------------------------------------
// Request observer

TEST_F(ClientTest, ObserverCountsEveryAttemptByVerbAndCode) {
  std::map<std::pair<std::string, int>, int> counts;
  client_.SetRequestObserver([&](const std::string& verb, int code) { ++counts[{verb, code}]; });
  client_.SetMaxRetries(1);

  transport_->Push(503);
  transport_->Push(200, "{}");
  ASSERT_TRUE(client_.Get("/a").ok());
  transport_->PushNoAnswer();
  transport_->Push(201, "{}");
  ASSERT_TRUE(client_.Create("/a", "{}").ok());
  transport_->Push(404, StatusBody(404, "NotFound", "x"));
  ASSERT_FALSE(client_.MergePatch("/a", "{}").ok());
  transport_->Push(200, "{}");
  ASSERT_TRUE(client_.Delete("/a").ok());
  transport_->stream_lines = {Event("ADDED", "a", "1")};
  ASSERT_TRUE(client_.Watch("/a", {}, [](const WatchEvent&) { return true; }, nullptr).ok());
  transport_->stream_answer = Status::Error("refused");
  ASSERT_FALSE(client_.Watch("/a", {}, [](const WatchEvent&) { return true; }, nullptr).ok());

  const std::map<std::pair<std::string, int>, int> want = {
      {{"GET", 503}, 1},   {{"GET", 200}, 1},    {{"POST", 0}, 1},  {{"POST", 201}, 1},
      {{"PATCH", 404}, 1}, {{"DELETE", 200}, 1}, {{"WATCH", 200}, 1}, {{"WATCH", 0}, 1},
  };
  EXPECT_EQ(counts, want);
}

TEST_F(ClientTest, ObserverSeesListPages) {
  int gets = 0;
  client_.SetRequestObserver([&](const std::string& verb, int code) {
    EXPECT_EQ(verb, "GET");
    EXPECT_EQ(code, 200);
    ++gets;
  });
  transport_->Push(200, Page({"a"}, "1", "c"));
  transport_->Push(200, Page({"b"}, "1"));
  ListOptions opts;
  opts.limit = 1;
  ASSERT_TRUE(client_.List("/api/v1/pods", opts).ok());
  EXPECT_EQ(gets, 2);
}

// ---------------------------------------------------------------------------------------------
// EventRecorder: Normal Events are rate limited (they repeat the status), Warnings never.

TEST(EventRecorderTest, NormalEventsBeyondTheBurstAreDroppedWarningsAreNot) {
  auto transport = std::make_shared<FakeTransport>();
  auto client = std::make_shared<Client>(ClientConfig{}, transport);
  client->SetMaxRetries(0);
  FakeClock clock;
  // 12 Normal and 3 Warnings in one instant: 5 Normal fit the burst, every Warning is posted;
  // 2 s later (2/s) 4 more Normal fit.
  for (int i = 0; i < 5 + 3 + 4; ++i) transport->Push(201, "{}");
  EventRecorder rec(client, clock, "berth-controller", 1000, /*normal_per_second=*/2, /*normal_burst=*/5);
  ObjectReference obj{"berth.dev/v1alpha1", "Run", "ns", "r", "uid"};
  for (int i = 0; i < 12; ++i) rec.Record(obj, "Normal", "Scheduled", "placed");
  for (int i = 0; i < 3; ++i) rec.Record(obj, "Warning", "PodFailed", "failed");
  rec.Flush();
  EXPECT_EQ(rec.posted(), 8u);
  EXPECT_EQ(rec.dropped(), 7u);
  clock.Advance(std::chrono::seconds(2));
  for (int i = 0; i < 6; ++i) rec.Record(obj, "Normal", "Started", "running");
  rec.Flush();
  EXPECT_EQ(rec.posted(), 12u);
  EXPECT_EQ(rec.dropped(), 9u);
  EXPECT_TRUE(transport->answers.empty());
}

// Issue 29, item 1: a list page or a watch event that holds one object nested deeper than berth
// reads (json::kMaxDepth) still delivers every other object; the deep one goes to on_too_deep
// (metadata readable) or, for watches, comes flagged too_deep. Before, the whole page or event
// was "invalid JSON": the informer relisted or re-watched the same object for ever.
std::string Deep(int levels) {
  std::string v = "1";
  for (int i = 0; i < levels; ++i) v = R"({"x":)" + v + "}";
  return v;
}

TEST_F(ClientTest, ListEachSetsAsideAnItemTooDeepAndDeliversTheRest) {
  const std::string deep = R"({"metadata":{"name":"deep","uid":"u-deep"},"spec":)" + Deep(200) + "}";
  transport_->Push(200, R"({"metadata":{"resourceVersion":"7"},"items":[{"metadata":{"name":"a"}},)" + deep +
                            R"(,{"metadata":{"name":"b"}}]})");
  std::vector<std::string> seen, aside;
  std::string rv;
  Status s = client_.ListEach(
      "/apis/berth.dev/v1alpha1/runs", ListOptions{},
      [&](const json::Value& item) { seen.push_back(json::GetString(json::Find(item, {"metadata", "name"}))); }, &rv,
      [&](const json::Value& item) { aside.push_back(json::GetString(json::Find(item, {"metadata", "uid"}))); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(aside, (std::vector<std::string>{"u-deep"}));
  EXPECT_EQ(rv, "7");
  // List (no on_too_deep) leaves it out.
  transport_->Push(200, R"({"metadata":{"resourceVersion":"8"},"items":[)" + deep + R"(,{"metadata":{"name":"c"}}]})");
  auto l = client_.List("/apis/berth.dev/v1alpha1/runs");
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  ASSERT_EQ(l->items.size(), 1u);
  EXPECT_EQ(json::GetString(json::Find(l->items[0], {"metadata", "name"})), "c");
}

TEST_F(ClientTest, WatchFlagsAnObjectTooDeepAndGoesOn) {
  transport_->stream_lines = {
      R"({"type":"ADDED","object":{"metadata":{"name":"deep","resourceVersion":"10"},"spec":)" + Deep(200) + "}}",
      Event("ADDED", "a", "11"),
  };
  std::vector<std::pair<std::string, bool>> seen;
  Status s = client_.Watch(
      "/apis/berth.dev/v1alpha1/runs", WatchOptions{},
      [&](const WatchEvent& ev) {
        seen.emplace_back(json::GetString(json::Find(*ev.object, {"metadata", "name"})), ev.too_deep);
        return true;
      },
      nullptr);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, bool>>{{"deep", true}, {"a", false}}));
}

}  // namespace
}  // namespace berth::k8s
