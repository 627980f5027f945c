#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "controller/access_review.h"
#include "controller/dashboard_api.h"
#include "controller/dashboard_assets.h"
#include "controller/dashboard_request.h"
#include "controller/front_proxy.h"
#include "controller/http_server.h"
#include "k8s/clock.h"
#include "k8s/json.h"
#include "reconcilers/engine/run_controller.h"

namespace berth::controller {
namespace {

namespace json = k8s::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? std::move(d).value() : json::Document();
}

// ---------------------------------------------------------------------------------------------
// HttpServer::ListenUri

TEST(ListenUriTest, ValidAddresses) {
  struct Case {
    std::string bind, want;
  };
  const std::vector<Case> cases = {
      {":8080", "http://0.0.0.0:8080"},
      {":8081", "http://0.0.0.0:8081"},
      {"127.0.0.1:9000", "http://127.0.0.1:9000"},
      {"0.0.0.0:80", "http://0.0.0.0:80"},
      {"localhost:65535", "http://localhost:65535"},
      {"[::1]:8080", "http://[::1]:8080"},
      {":0", "http://0.0.0.0:0"},  // any free port
  };
  for (const auto& c : cases) {
    auto uri = HttpServer::ListenUri(c.bind);
    ASSERT_TRUE(uri.ok()) << c.bind << ": " << uri.status().message();
    EXPECT_EQ(*uri, c.want) << c.bind;
  }
}

TEST(ListenUriTest, MalformedAddressesAreErrorsNotCrashes) {
  const std::vector<std::string> cases = {
      "",       "0",     "8080",   "localhost", ":",        "127.0.0.1:",   ":http", ":80a",
      ":-1",    ":+80",  ": 80",   ":65536",    ":100000",  ":99999999999", ":99999999999999999999999",
  };
  for (const auto& bind : cases) {
    auto uri = HttpServer::ListenUri(bind);
    EXPECT_FALSE(uri.ok()) << "\"" << bind << "\" gave " << (uri.ok() ? *uri : "");
    if (!uri.ok()) {
      EXPECT_THAT(uri.status().message(), HasSubstr("\"" + bind + "\"")) << "the message names the input";
    }
  }
}

TEST(HttpServerTest, DisabledServerDoesNotListen) {
  for (const std::string bind : {"0", ""}) {
    HttpServer s(bind);
    EXPECT_FALSE(s.enabled()) << bind;
    EXPECT_TRUE(s.Start().ok()) << bind;
    s.Stop();
  }
  EXPECT_TRUE(HttpServer(":8080").enabled());
  EXPECT_TRUE(HttpServer("127.0.0.1:0").enabled());
}

TEST(HttpServerTest, StartReportsAMalformedAddress) {
  HttpServer s(":99999999999999999999999");
  auto st = s.Start();
  EXPECT_FALSE(st.ok());
}

// ---------------------------------------------------------------------------------------------
// The dashboard

// A transport that answers from a script and records every request; an unscripted request fails
// the test (so "refused before any API call" is checked by scripting nothing).
class ScriptedTransport : public k8s::Transport {
 public:
  void Push(int status, std::string body) {
    std::lock_guard<std::mutex> lock(mu_);
    k8s::HttpResponse r;
    r.status = status;
    r.body = std::move(body);
    answers_.emplace_back(std::move(r));
  }
  void PushNoAnswer() {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.emplace_back(k8s::Status::Error("connection refused"));
  }
  std::vector<k8s::HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  k8s::Result<k8s::HttpResponse> Send(const k8s::HttpRequest& req) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(req);
    if (answers_.empty()) {
      ADD_FAILURE() << "unexpected API request " << req.method << " " << req.path;
      return k8s::Status::Error("unexpected request");
    }
    auto r = std::move(answers_.front());
    answers_.pop_front();
    return r;
  }
  k8s::Result<k8s::HttpResponse> Stream(const k8s::HttpRequest& req, const std::function<bool(std::string&)>&,
                                        k8s::Cancellation*, int) override {
    ADD_FAILURE() << "unexpected stream " << req.path;
    return k8s::Status::Error("no streams");
  }

 private:
  mutable std::mutex mu_;
  std::vector<k8s::HttpRequest> requests_;
  std::deque<k8s::Result<k8s::HttpResponse>> answers_;
};

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)" + json::Quote(message) +
         R"(,"reason":")" + reason + R"(","code":)" + std::to_string(code) + "}";
}

class DashboardTest : public ::testing::Test {
 protected:
  DashboardTest()
      : transport_(std::make_shared<ScriptedTransport>()),
        client_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, transport_)),
        engine_(client_, clock_, {}),
        api_(client_, Sources()) {
    client_->SetMaxRetries(0);  // no backoff sleeps in unit tests
  }

  // What kubectl berth dashboard reads through the queue API: here fixed answers.
  static LocalSources Sources() {
    LocalSources sources;
    sources.queue = [](const HttpRequestView&) { return HttpReply{200, "application/json", R"({"items":[]})", {}}; };
    sources.fleets = [] { return HttpReply{200, "application/json", R"({"items":[{"name":"f"}]})", {}}; };
    sources.teams = [] { return HttpReply{403, "application/json", R"({"error":"may not list teams"})", {}}; };
    sources.cap_of = [](const std::string&) { return std::optional<reconcilers::PriorityCap>(); };
    return sources;
  }

  // A request that passes every cross-site check, with `body` (and no credential: the dashboard's
  // client holds the user's).
  static HttpRequestView GoodRequest(const std::string& body = R"({"priority":90})") {
    HttpRequestView r;
    r.method = "POST";
    r.path = "/api/runs/ml/train/priority";
    r.headers = {{"x-berth-csrf", "1"},
                 {"content-type", "application/json"},
                 {"host", "berth.example:8080"},
                 {"origin", "http://berth.example:8080"}};
    r.body = body;
    return r;
  }

  static std::string ErrorOf(const HttpReply& r) {
    EXPECT_EQ(r.content_type, "application/json");
    json::Document d = MustParse(r.body);
    return json::GetString(d, "error");
  }

  k8s::FakeClock clock_;
  std::shared_ptr<ScriptedTransport> transport_;
  k8s::ClientPtr client_;
  reconcilers::RunController engine_;
  DashboardApi api_;
};

HttpRequestView Get(const std::string& path, const std::string& method = "GET") {
  HttpRequestView r;
  r.method = method;
  r.path = path;
  return r;
}

// Issue 29 (10): the queue's query (/queue and /api/queue): a bounded page by default.
TEST(QueueQueryTest, LimitContinueAndNamespace) {
  auto parse = [](std::map<std::string, std::string> query, QueueQuery& q, std::string& message) {
    HttpRequestView r;
    r.method = "GET";
    r.path = "/queue";
    r.query = std::move(query);
    q = QueueQuery{};
    return ParseQueueQuery(r, q, message);
  };
  QueueQuery q;
  std::string message;
  ASSERT_EQ(parse({}, q, message), 0);
  EXPECT_EQ(q.limit, kDefaultQueuePage);
  EXPECT_EQ(q.after, 0);
  EXPECT_EQ(q.ns, "");
  ASSERT_EQ(parse({{"limit", "0"}}, q, message), 0);
  EXPECT_EQ(q.limit, kDefaultQueuePage) << "0 is the default page, as an absent limit";
  ASSERT_EQ(parse({{"limit", "7"}, {"continue", "500"}, {"namespace", "ml"}}, q, message), 0);
  EXPECT_EQ(q.limit, 7u);
  EXPECT_EQ(q.after, 500);
  EXPECT_EQ(q.ns, "ml");
  for (const std::string big : {"1001", "5000000", "99999999999999999999999"}) {
    ASSERT_EQ(parse({{"limit", big}}, q, message), 0) << big;
    EXPECT_EQ(q.limit, kMaxQueuePage) << big;
  }
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"limit", "-1"}, {"limit", "1e3"}, {"limit", ""}, {"continue", "abc"}, {"continue", "-5"},
           {"namespace", "../../api"}, {"namespace", "UPPER"}}) {
    EXPECT_EQ(parse({{key, value}}, q, message), 400) << key << "=" << value;
    EXPECT_FALSE(message.empty());
  }
}

TEST_F(DashboardTest, StaticServesTheEmbeddedFiles) {
  const auto& assets = DashboardAssets();
  ASSERT_EQ(assets.count("index.html"), 1u);
  struct Case {
    std::string path, asset, content_type;
  };
  const std::vector<Case> cases = {
      {"/", "index.html", "text/html; charset=utf-8"},
      {"/index.html", "index.html", "text/html; charset=utf-8"},
      {"/static/index.html", "index.html", "text/html; charset=utf-8"},
      {"/static/app.js", "app.js", "text/javascript; charset=utf-8"},
      {"/static/teams.js", "teams.js", "text/javascript; charset=utf-8"},
      {"/static/format.js", "format.js", "text/javascript; charset=utf-8"},
      {"/static/style.css", "style.css", "text/css; charset=utf-8"},
      {"/static/favicon.svg", "favicon.svg", "image/svg+xml"},
  };
  for (const auto& c : cases) {
    for (const std::string method : {"GET", "HEAD"}) {
      SCOPED_TRACE(method + " " + c.path);
      if (assets.count(c.asset) == 0) {
        ADD_FAILURE() << "asset " << c.asset << " is not embedded";
        continue;
      }
      HttpReply r = api_.Static(Get(c.path, method));
      EXPECT_EQ(r.status, 200);
      EXPECT_EQ(r.content_type, c.content_type);
      EXPECT_EQ(r.body, assets.at(c.asset));
      EXPECT_FALSE(r.body.empty());
      EXPECT_EQ(r.headers["Content-Security-Policy"], "default-src 'self'; frame-ancestors 'none'");
      EXPECT_EQ(r.headers["X-Content-Type-Options"], "nosniff");
      EXPECT_EQ(r.headers["Cache-Control"], "no-cache");
    }
  }
  // Every embedded file is reachable under /static/.
  for (const auto& [name, content] : assets) {
    HttpReply r = api_.Static(Get("/static/" + name));
    EXPECT_EQ(r.status, 200) << name;
    EXPECT_NE(r.content_type, "application/octet-stream") << name << " has no known content type";
  }
  EXPECT_TRUE(transport_->requests().empty());
}

// Issue 47: the Usage page and the charting library it uses (uPlot, vendored under
// src/controller/dashboard/vendor/) are served from the binary like the other files, with their
// content types, the page's CSP, and the library's licence.
TEST_F(DashboardTest, StaticServesTheUsagePageAndTheVendoredChartLibrary) {
  struct Case {
    std::string path, content_type, contains;
  };
  const std::vector<Case> cases = {
      {"/static/usage.js", "text/javascript; charset=utf-8", "berthUsagePage"},
      {"/static/uPlot.iife.min.js", "text/javascript; charset=utf-8", "uPlot"},
      {"/static/uPlot.min.css", "text/css; charset=utf-8", ".uplot"},
      {"/static/uPlot.LICENSE.txt", "text/plain; charset=utf-8", "MIT License"},
  };
  for (const auto& c : cases) {
    HttpReply r = api_.Static(Get(c.path));
    EXPECT_EQ(r.status, 200) << c.path;
    EXPECT_EQ(r.content_type, c.content_type) << c.path;
    EXPECT_NE(r.body.find(c.contains), std::string::npos) << c.path;
    EXPECT_EQ(r.headers["Content-Security-Policy"], "default-src 'self'; frame-ancestors 'none'") << c.path;
  }
  const std::string index = api_.Static(Get("/")).body;
  for (const char* ref : {R"(<script src="static/uPlot.iife.min.js">)", R"(<script src="static/usage.js">)",
                          R"(href="static/uPlot.min.css")", R"(href="#/usage")"}) {
    EXPECT_NE(index.find(ref), std::string::npos) << ref;
  }
  EXPECT_EQ(api_.Static(Get("/static/vendor/uPlot.iife.min.js")).status, 404) << "one name per file, no folders";
}

TEST_F(DashboardTest, StaticRefusesUnknownPathsAndTraversal) {
  const std::vector<std::string> paths = {
      "/static/",
      "/static/nope.js",
      "/static/../index.html",
      "/static/..",
      "/static/./app.js",
      "/static//index.html",
      "/static/sub/app.js",
      "/static/../../etc/passwd",
      "/static/..\\index.html",
      "/static/index.html/",
      "/static/INDEX.HTML",
      "/etc/passwd",
      "/../index.html",
      "/app.js",
      "",
  };
  for (const auto& p : paths) {
    HttpReply r = api_.Static(Get(p));
    EXPECT_EQ(r.status, 404) << p;
    EXPECT_EQ(r.body, "not found\n") << p;
    EXPECT_EQ(r.headers.count("Content-Security-Policy"), 0u) << p;
  }
}

TEST_F(DashboardTest, StaticIsReadOnly) {
  for (const std::string method : {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"}) {
    HttpReply r = api_.Static(Get("/", method));
    EXPECT_EQ(r.status, 405) << method;
  }
}

TEST_F(DashboardTest, SetPriorityRefusesBeforeAnyApiCall) {
  struct Case {
    std::string name;
    std::function<void(HttpRequestView&)> change;
    int want_status;
    std::string want_error;  // substring
  };
  const std::vector<Case> cases = {
      // Cross-site protection.
      {"no CSRF header", [](HttpRequestView& r) { r.headers.erase("x-berth-csrf"); }, 403, "X-Berth-CSRF"},
      {"CSRF header not 1", [](HttpRequestView& r) { r.headers["x-berth-csrf"] = "true"; }, 403, "X-Berth-CSRF"},
      {"CSRF header empty", [](HttpRequestView& r) { r.headers["x-berth-csrf"] = ""; }, 403, "X-Berth-CSRF"},
      {"no content type", [](HttpRequestView& r) { r.headers.erase("content-type"); }, 403, "application/json"},
      {"form content type", [](HttpRequestView& r) { r.headers["content-type"] = "application/x-www-form-urlencoded"; },
       403, "application/json"},
      {"text content type", [](HttpRequestView& r) { r.headers["content-type"] = "text/plain"; }, 403,
       "application/json"},
      {"other origin", [](HttpRequestView& r) { r.headers["origin"] = "https://evil.example"; }, 403, "cross-origin"},
      {"other port", [](HttpRequestView& r) { r.headers["origin"] = "http://berth.example:9090"; }, 403,
       "cross-origin"},
      {"origin null", [](HttpRequestView& r) { r.headers["origin"] = "null"; }, 403, "cross-origin"},
      {"origin but no host", [](HttpRequestView& r) { r.headers.erase("host"); }, 403, "cross-origin"},
      {"CSRF checked before the body",
       [](HttpRequestView& r) {
         r.headers.erase("x-berth-csrf");
         r.body = "garbage";
       },
       403, "X-Berth-CSRF"},
      {"a proxy's forwarded host is no excuse (no proxy in front)",
       [](HttpRequestView& r) {
         r.headers["origin"] = "http://evil.example";
         r.headers["x-forwarded-host"] = "evil.example";
       },
       403, "cross-origin"},
      // Bodies.
      {"empty body", [](HttpRequestView& r) { r.body = ""; }, 400, "JSON object"},
      {"not JSON", [](HttpRequestView& r) { r.body = "priority=90"; }, 400, "JSON object"},
      {"JSON array", [](HttpRequestView& r) { r.body = "[90]"; }, 400, "JSON object"},
      {"JSON number", [](HttpRequestView& r) { r.body = "90"; }, 400, "JSON object"},
      {"no priority", [](HttpRequestView& r) { r.body = "{}"; }, 422, "0 to 100"},
      {"priority as string", [](HttpRequestView& r) { r.body = R"({"priority":"90"})"; }, 422, "0 to 100"},
      {"priority null", [](HttpRequestView& r) { r.body = R"({"priority":null})"; }, 422, "0 to 100"},
      {"priority fraction", [](HttpRequestView& r) { r.body = R"({"priority":90.5})"; }, 422, "0 to 100"},
      {"priority too high", [](HttpRequestView& r) { r.body = R"({"priority":101})"; }, 422, "0 to 100"},
      {"priority negative", [](HttpRequestView& r) { r.body = R"({"priority":-1})"; }, 422, "0 to 100"},
      {"priority huge", [](HttpRequestView& r) { r.body = R"({"priority":99999999999999999999})"; }, 422, "0 to 100"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    HttpRequestView req = GoodRequest();
    c.change(req);
    HttpReply r = api_.SetPriority(req, "ml", "train");
    EXPECT_EQ(r.status, c.want_status);
    EXPECT_THAT(ErrorOf(r), HasSubstr(c.want_error));
  }
  EXPECT_TRUE(transport_->requests().empty()) << "a refused request must never reach the API";
}

// Issue 44 (4): with the user's own credentials (the client's), no token of the request's.
TEST_F(DashboardTest, SetPriorityPatchesWithTheUsersOwnCredentials) {
  transport_->Push(200, R"({"apiVersion":"berth.dev/v1alpha1","kind":"Run",
                            "metadata":{"name":"train","namespace":"ml","generation":7},"spec":{"priority":90}})");
  HttpReply r = api_.SetPriority(GoodRequest(), "ml", "train");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  json::Document reply = MustParse(r.body);
  EXPECT_EQ(json::GetString(reply, "namespace"), "ml");
  EXPECT_EQ(json::GetString(reply, "name"), "train");
  EXPECT_EQ(json::GetInt(reply, "priority", -1), 90);
  EXPECT_EQ(json::GetInt(reply, "generation", -1), 7);

  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].method, "PATCH");
  EXPECT_EQ(reqs[0].path, "/apis/berth.dev/v1alpha1/namespaces/ml/runs/train");
  EXPECT_EQ(reqs[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(reqs[0].bearer_token, "");
  json::Document patch = MustParse(reqs[0].body);
  EXPECT_EQ(json::Serialize(patch), R"({"spec":{"priority":90}})") << "only the priority is patched";
}

TEST_F(DashboardTest, SetPriorityAcceptsTheBoundsAndRequestsWithoutOrigin) {
  struct Case {
    std::string name;
    std::function<void(HttpRequestView&)> change;
    int64_t want_priority;
  };
  const std::vector<Case> cases = {
      {"lowest", [](HttpRequestView& r) { r.body = R"({"priority":0})"; }, 0},
      {"highest", [](HttpRequestView& r) { r.body = R"({"priority":100})"; }, 100},
      {"no Origin (same-origin GET-style clients)", [](HttpRequestView& r) { r.headers.erase("origin"); }, 90},
      {"content type with charset", [](HttpRequestView& r) { r.headers["content-type"] = "application/json; charset=utf-8"; },
       90},
      {"origin without scheme", [](HttpRequestView& r) { r.headers["origin"] = "berth.example:8080"; }, 90},
      {"extra fields ignored", [](HttpRequestView& r) { r.body = R"({"priority":42,"nodes":99})"; }, 42},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    transport_->Push(200, R"({"metadata":{"generation":2}})");
    HttpRequestView req = GoodRequest();
    c.change(req);
    HttpReply r = api_.SetPriority(req, "ml", "train");
    EXPECT_EQ(r.status, 200) << r.body;
    auto reqs = transport_->requests();
    ASSERT_FALSE(reqs.empty());
    EXPECT_EQ(reqs.back().body, R"({"spec":{"priority":)" + std::to_string(c.want_priority) + "}}");
    EXPECT_EQ(reqs.back().bearer_token, "");
  }
}

TEST_F(DashboardTest, SetPriorityPassesTheApiErrorThrough) {
  const std::string message =
      R"(runs.berth.dev "train" is forbidden: User "alice" cannot patch resource "runs" in API group "berth.dev" in the namespace "ml")";
  transport_->Push(403, StatusBody(403, "Forbidden", message));
  HttpReply r = api_.SetPriority(GoodRequest(), "ml", "train");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(ErrorOf(r), message);
  ASSERT_EQ(transport_->requests().size(), 1u);
  EXPECT_EQ(transport_->requests()[0].bearer_token, "");

  struct Case {
    int api_status;
    std::string reason, message;
    int want;
  };
  const std::vector<Case> cases = {
      {401, "Unauthorized", "Unauthorized", 401},
      {404, "NotFound", R"(runs.berth.dev "train" not found)", 404},
      {422, "Invalid", "spec.priority: Invalid value: 200", 422},
      {409, "Conflict", "the object has been modified", 409},
  };
  for (const auto& c : cases) {
    transport_->Push(c.api_status, StatusBody(c.api_status, c.reason, c.message));
    HttpReply e = api_.SetPriority(GoodRequest(), "ml", "train");
    EXPECT_EQ(e.status, c.want) << c.reason;
    EXPECT_EQ(ErrorOf(e), c.message) << c.reason;
  }
}

TEST_F(DashboardTest, SetPriorityWithoutAnAnswerIsABadGateway) {
  transport_->PushNoAnswer();
  HttpReply r = api_.SetPriority(GoodRequest(), "ml", "train");
  EXPECT_EQ(r.status, 502);
  EXPECT_THAT(ErrorOf(r), HasSubstr("connection refused"));
}

TEST_F(DashboardTest, SetPriorityToleratesAnAnswerWithoutMetadata) {
  // A proxy or an odd server may answer 200 with something else than the Run; the change was
  // made, so the viewer gets a success, not a crashed controller.
  transport_->Push(200, "{}");
  HttpReply r = api_.SetPriority(GoodRequest(), "ml", "train");
  EXPECT_EQ(r.status, 200);
  json::Document reply = MustParse(r.body);
  EXPECT_EQ(json::GetInt(reply, "priority", -1), 90);
  EXPECT_EQ(json::GetInt(reply, "generation", -1), 0);
}

TEST_F(DashboardTest, RunDetailReadsWithTheUsersOwnCredentials) {
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"train","namespace":"ml"},"status":{"phase":"Pending"}})");
  transport_->Push(200, R"({"kind":"EventList","items":[{"reason":"Queued","message":"position 1"}]})");
  HttpReply r = api_.RunDetail("ml", "train");
  EXPECT_EQ(r.status, 200);
  json::Document d = MustParse(r.body);
  EXPECT_EQ(json::GetString(json::Find(d, {"run", "status", "phase"})), "Pending");
  const json::Value* events = json::Find(d, {"events"});
  ASSERT_NE(events, nullptr);
  ASSERT_TRUE(events->IsArray());
  ASSERT_EQ(events->Size(), 1u);
  EXPECT_EQ(json::GetString((*events)[0], "reason"), "Queued");
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].path, "/apis/berth.dev/v1alpha1/namespaces/ml/runs/train");
  EXPECT_EQ(reqs[0].bearer_token, "");
  EXPECT_THAT(reqs[1].path, StartsWith("/api/v1/namespaces/ml/events?fieldSelector="));
  EXPECT_THAT(reqs[1].path, HasSubstr("train"));
  EXPECT_EQ(reqs[1].bearer_token, "");
}

// Issue 44 (4): kubectl berth dashboard: the client holds the user's own credentials; no request
// needs a token, none is read from the page's request (a token sent anyway is not used), and the
// queue, fleets, teams and a namespace's cap come from the sources given. No route says whose
// identity the page uses (the page has no token form any more).
TEST_F(DashboardTest, ItActsWithTheUsersOwnClientAndNoToken) {
  int queue_asks = 0;
  LocalSources sources = Sources();
  sources.queue = [&](const HttpRequestView&) {
    ++queue_asks;
    return HttpReply{200, "application/json", R"({"items":[]})", {}};
  };
  DashboardApi local(client_, std::move(sources));
  HttpServer server("0");
  local.Register(server);
  EXPECT_EQ(server.Dispatch(Get("/api/queue")).status, 200);
  EXPECT_EQ(queue_asks, 1);
  EXPECT_EQ(server.Dispatch(Get("/api/fleets")).body, R"({"items":[{"name":"f"}]})");
  EXPECT_EQ(server.Dispatch(Get("/api/teams")).status, 403);
  EXPECT_EQ(server.Dispatch(Get("/api/session")).status, 404) << "the page's token form and its route are gone";

  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"train","namespace":"ml"}})");
  transport_->Push(200, R"({"kind":"EventList","items":[]})");
  HttpReply detail = local.RunDetail("ml", "train");
  EXPECT_EQ(detail.status, 200) << detail.body;
  // A priority change with the cross-site checks; a token sent anyway is not used.
  transport_->Push(200, R"({"metadata":{"generation":3}})");
  HttpRequestView write = GoodRequest();
  write.headers["authorization"] = "Bearer someone-elses-token";
  write.headers["x-berth-token"] = "someone-elses-token";
  HttpReply changed = local.SetPriority(write, "ml", "train");
  EXPECT_EQ(changed.status, 200) << changed.body;
  for (const auto& req : transport_->requests()) {
    EXPECT_EQ(req.bearer_token, "") << req.method << " " << req.path;
    EXPECT_TRUE(req.headers.empty()) << req.method << " " << req.path;
  }
  // The cross-site checks still hold.
  HttpRequestView forged = GoodRequest();
  forged.headers.erase("x-berth-csrf");
  EXPECT_EQ(local.SetPriority(forged, "ml", "train").status, 403);
}

TEST_F(DashboardTest, RunDetailPassesNotFoundThrough) {
  transport_->Push(404, StatusBody(404, "NotFound", R"(runs.berth.dev "nope" not found)"));
  HttpReply r = api_.RunDetail("ml", "nope");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(ErrorOf(r), R"(runs.berth.dev "nope" not found)");
  ASSERT_EQ(transport_->requests().size(), 1u) << "no events are read for a missing run";
}

TEST_F(DashboardTest, RunDetailLeavesOutAnnotationsAndManagedFields) {
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"train","namespace":"ml","labels":{"team":"a"},)"
                        R"("annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"secret\":1}"},)"
                        R"("managedFields":[{"manager":"kubectl"}]},"spec":{"priority":5}})");
  transport_->Push(200, R"({"kind":"EventList","items":[]})");
  HttpReply r = api_.RunDetail("ml", "train");
  ASSERT_EQ(r.status, 200) << r.body;
  json::Document d = MustParse(r.body);
  EXPECT_EQ(json::Find(d, {"run", "metadata", "annotations"}), nullptr);
  EXPECT_EQ(json::Find(d, {"run", "metadata", "managedFields"}), nullptr);
  EXPECT_EQ(json::GetString(json::Find(d, {"run", "metadata", "labels", "team"})), "a");
  EXPECT_EQ(json::GetInt(*json::Find(d, {"run", "spec"}), "priority"), 5);
  EXPECT_THAT(r.body, ::testing::Not(HasSubstr("secret")));
}

// Through the router as the server calls it: names that are not Kubernetes names never reach
// an API path (a decoded '?' once became a query string sent with the controller's identity).
TEST_F(DashboardTest, RunPathsMustHoldKubernetesNames) {
  HttpServer server("0");
  api_.Register(server);
  for (const std::string& path : std::vector<std::string>{"/api/runs/ml/a?b", "/api/runs/ml/a b", "/api/runs/ML/train", "/api/runs/ml/-x",
                                 "/api/runs/ml/a..b", "/api/runs/" + std::string(64, 'a') + "/x",
                                 "/api/runs/ml/" + std::string(254, 'a'), "/api/runs//train"}) {
    for (const std::string method : {"GET", "POST"}) {
      HttpRequestView req = GoodRequest();
      req.method = method;
      req.path = path + (method == "POST" ? "/priority" : "");
      HttpReply r = server.Dispatch(req);
      EXPECT_EQ(r.status, 400) << method << " " << req.path;
      EXPECT_THAT(ErrorOf(r), HasSubstr("must be a DNS")) << req.path;
    }
  }
  for (const std::string path : {"/api/runs/ml", "/api/runs/ml/train/status", "/api/runs/ml/train/priority/x"}) {
    HttpReply r = server.Dispatch(Get(path));
    EXPECT_EQ(r.status, 404) << path;
  }
  EXPECT_EQ(server.Dispatch(Get("/api/runs/ml/train/priority")).status, 405);
  EXPECT_TRUE(transport_->requests().empty());
  // A valid dotted name passes.
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"a.b-1","namespace":"ml"}})");
  transport_->Push(200, R"({"kind":"EventList","items":[]})");
  EXPECT_EQ(server.Dispatch(Get("/api/runs/ml/a.b-1")).status, 200);
  ASSERT_EQ(transport_->requests().size(), 2u);
  EXPECT_EQ(transport_->requests()[0].path, "/apis/berth.dev/v1alpha1/namespaces/ml/runs/a.b-1");
}

// Regression: ~1 MB of '[' as a priority body overflowed the stack (now: refused by the body
// limit at the server, and by the JSON depth cap at the handler).
TEST_F(DashboardTest, SetPriorityRefusesDeeplyNestedJson) {
  HttpReply r = api_.SetPriority(GoodRequest(std::string(1 << 20, '[')), "ml", "train");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(transport_->requests().empty());
  HttpServer server("0");
  api_.Register(server);
  HttpRequestView head = GoodRequest();
  EXPECT_EQ(server.CheckHead(head).max_body, kMaxDashboardBodyBytes);
}

// The controller's fleets and teams (the queue API's; the metrics port's with --queue-auth=false).
TEST_F(DashboardTest, FleetsWithAnEmptyCache) {
  HttpReply r = EngineSummaries(engine_).Fleets();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  json::Document d = MustParse(r.body);
  ASSERT_NE(json::Find(d, {"items"}), nullptr);
  EXPECT_TRUE(json::Find(d, {"items"})->IsArray());
  EXPECT_EQ(json::Find(d, {"items"})->Size(), 0u);
  EXPECT_TRUE(transport_->requests().empty()) << "fleets come from the cache";
}

TEST_F(DashboardTest, TeamsWithAnEmptyCache) {
  HttpReply r = EngineSummaries(engine_).Teams();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"items":[]})");
  EXPECT_TRUE(transport_->requests().empty()) << "teams come from the cache";
}

// Issue 47: the Usage page's routes check the window and the grouping before anything is read,
// then give the query to the source (kubectl berth dashboard: the queue API's usage with the user's
// kubeconfig); the queue's series likewise.
TEST_F(DashboardTest, UsageRoutesCheckTheQueryAndAskTheSources) {
  std::vector<UsageQuery> asked;
  int history_asks = 0;
  LocalSources sources = Sources();
  sources.usage = [&](const UsageQuery& q) {
    asked.push_back(q);
    return HttpReply{200, "application/json", R"({"kind":"Usage","rows":[]})", {}};
  };
  sources.queue_history = [&] {
    ++history_asks;
    return HttpReply{200, "application/json", R"({"kind":"QueueHistory","minutes":[]})", {}};
  };
  DashboardApi local(client_, std::move(sources));
  HttpServer server("0");
  local.Register(server);
  HttpRequestView req = Get("/api/usage");
  req.query = {{"since", "30d"}, {"by", "team"}};
  HttpReply r = server.Dispatch(req);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, R"({"kind":"Usage","rows":[]})");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].since, "30d");
  EXPECT_EQ(asked[0].by, "team");
  EXPECT_EQ(asked[0].window, std::chrono::hours(24 * 30));
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"since", "91d"}, {"since", "x"}, {"since", "30m"}, {"by", "pod"}, {"by", "team&x=1"}}) {
    HttpRequestView bad = Get("/api/usage");
    bad.query = {{key, value}};
    HttpReply refused = server.Dispatch(bad);
    EXPECT_EQ(refused.status, 400) << key << "=" << value;
    EXPECT_FALSE(ErrorOf(refused).empty()) << key << "=" << value;
  }
  EXPECT_EQ(asked.size(), 1u) << "a refused query reads nothing";
  EXPECT_EQ(server.Dispatch(Get("/api/usage/queue")).body, R"({"kind":"QueueHistory","minutes":[]})");
  EXPECT_EQ(history_asks, 1);
  EXPECT_EQ(server.CheckHead(Get("/api/usage/queue", "POST")).status, 405);
  EXPECT_TRUE(transport_->requests().empty());
}

// ---------------------------------------------------------------------------------------------
// Stop, suspend and resume

TEST_F(DashboardTest, ControlRefusesBeforeAnyApiCall) {
  struct Case {
    std::string name;
    std::function<void(HttpRequestView&)> change;
    int want_status;
    std::string want_error;
  };
  const std::vector<Case> cases = {
      {"no CSRF header", [](HttpRequestView& r) { r.headers.erase("x-berth-csrf"); }, 403, "X-Berth-CSRF"},
      {"form content type", [](HttpRequestView& r) { r.headers["content-type"] = "application/x-www-form-urlencoded"; },
       403, "application/json"},
      {"other origin", [](HttpRequestView& r) { r.headers["origin"] = "https://evil.example"; }, 403, "cross-origin"},
      {"empty body", [](HttpRequestView& r) { r.body = ""; }, 400, "{}"},
      {"not JSON", [](HttpRequestView& r) { r.body = "stop"; }, 400, "{}"},
      {"a member", [](HttpRequestView& r) { r.body = R"({"stop":true})"; }, 400, "{}"},
      {"JSON array", [](HttpRequestView& r) { r.body = "[]"; }, 400, "{}"},
      {"deeply nested", [](HttpRequestView& r) { r.body = std::string(1 << 16, '['); }, 400, "{}"},
  };
  for (const auto c : {runops::Control::kStop, runops::Control::kSuspend, runops::Control::kResume}) {
    for (const auto& k : cases) {
      SCOPED_TRACE(k.name + " " + runops::ControlVerb(c));
      HttpRequestView req = GoodRequest("{}");
      k.change(req);
      HttpReply r = api_.ControlRun(req, "ml", "train", c);
      EXPECT_EQ(r.status, k.want_status);
      EXPECT_THAT(ErrorOf(r), HasSubstr(k.want_error));
    }
  }
  EXPECT_TRUE(transport_->requests().empty()) << "a refused request must never reach the API";
}

const char* const kRunningRun =
    R"({"kind":"Run","metadata":{"name":"train","namespace":"ml","uid":"u1","resourceVersion":"41","generation":3},)"
    R"("spec":{"nodes":2},"status":{"phase":"Running"}})";

TEST_F(DashboardTest, ControlPatchesTheSpecWithTheUsersOwnCredentials) {
  transport_->Push(200, kRunningRun);
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"train","namespace":"ml","generation":4}})");
  HttpReply r = api_.ControlRun(GoodRequest("{}"), "ml", "train", runops::Control::kStop);
  ASSERT_EQ(r.status, 200) << r.body;
  json::Document d = MustParse(r.body);
  EXPECT_EQ(json::GetString(d, "action"), "stop");
  EXPECT_EQ(json::GetString(d, "was"), "Running");
  EXPECT_EQ(json::GetInt(d, "generation", -1), 4);
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].bearer_token, "");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(reqs[1].path, "/apis/berth.dev/v1alpha1/namespaces/ml/runs/train");
  EXPECT_EQ(reqs[1].bearer_token, "");
  EXPECT_EQ(reqs[1].body, R"({"metadata":{"resourceVersion":"41"},"spec":{"stop":true}})");
}

TEST_F(DashboardTest, ControlThatDoesNotApplyIsAConflictWithoutAPatch) {
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"train","resourceVersion":"5"},)"
                        R"("status":{"phase":"Failed","reason":"Stopped"}})");
  HttpReply r = api_.ControlRun(GoodRequest("{}"), "ml", "train", runops::Control::kSuspend);
  EXPECT_EQ(r.status, 409);
  EXPECT_THAT(ErrorOf(r), HasSubstr("has already ended (Failed, Stopped)"));
  transport_->Push(200, kRunningRun);
  r = api_.ControlRun(GoodRequest("{}"), "ml", "train", runops::Control::kResume);
  EXPECT_EQ(r.status, 409);
  EXPECT_THAT(ErrorOf(r), HasSubstr("is not suspended"));
  EXPECT_EQ(transport_->requests().size(), 2u) << "only the two reads";
}

TEST_F(DashboardTest, ControlPassesTheApiRefusalThroughAndRetriesConflicts) {
  transport_->Push(200, kRunningRun);
  transport_->Push(403, StatusBody(403, "Forbidden",
                                   R"(runs.berth.dev "train" is forbidden: User "viewer" cannot patch resource "runs")"));
  HttpReply r = api_.ControlRun(GoodRequest("{}"), "ml", "train", runops::Control::kSuspend);
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(ErrorOf(r), HasSubstr("cannot patch resource \"runs\""));

  transport_->Push(200, kRunningRun);
  transport_->Push(409, StatusBody(409, "Conflict", "the object has been modified"));
  transport_->Push(200, kRunningRun);
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"train","generation":4}})");
  r = api_.ControlRun(GoodRequest("{}"), "ml", "train", runops::Control::kSuspend);
  EXPECT_EQ(r.status, 200) << r.body;
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 6u);
  EXPECT_EQ(reqs[5].body, R"({"metadata":{"resourceVersion":"41"},"spec":{"suspend":true}})");

  transport_->PushNoAnswer();
  EXPECT_EQ(api_.ControlRun(GoodRequest("{}"), "ml", "train", runops::Control::kStop).status, 502);
}

// ---------------------------------------------------------------------------------------------
// Logs

std::string RankPod(int rank, int attempt, const std::string& uid = "u1") {
  return R"({"metadata":{"name":"train-)" + std::to_string(rank) + R"(","labels":{"berth.dev/run":"train","berth.dev/rank":")" +
         std::to_string(rank) + R"(","berth.dev/attempt":")" + std::to_string(attempt) +
         R"("},"ownerReferences":[{"uid":")" + uid + R"(","controller":true}]},"spec":{"containers":[{"name":"main"}]}})";
}

HttpRequestView LogsRequest(const std::map<std::string, std::string>& query = {}) {
  HttpRequestView r = Get("/api/runs/ml/train/logs");
  r.query = query;
  return r;
}

TEST_F(DashboardTest, LogsAreReadPerRankWithTheUsersOwnCredentialsAndATail) {
  transport_->Push(200, kRunningRun);
  transport_->Push(200, R"({"kind":"PodList","items":[)" + RankPod(1, 0) + "," + RankPod(0, 0) + "," +
                            RankPod(0, 0, "someone-else") + "]}");
  transport_->Push(200, "step 1\nstep 2\n");
  transport_->Push(200, std::string("bad \xff byte\nlast line without newline"));
  HttpReply r = api_.RunLogs(LogsRequest({{"tailLines", "50"}}), "ml", "train");
  ASSERT_EQ(r.status, 200) << r.body;
  json::Document d = MustParse(r.body);
  EXPECT_EQ(json::GetInt(d, "tailLines", -1), 50);
  EXPECT_EQ(json::GetInt(d, "nodes", -1), 2);
  const json::Value* ranks = json::Find(d, {"ranks"});
  ASSERT_TRUE(ranks != nullptr && ranks->IsArray());
  ASSERT_EQ(ranks->Size(), 2u);
  EXPECT_EQ(json::GetInt((*ranks)[0], "rank", -1), 0);
  EXPECT_EQ(json::GetString((*ranks)[0], "pod"), "train-0");
  EXPECT_EQ(json::Serialize(*json::Find((*ranks)[0], {"lines"})), R"(["step 1","step 2"])");
  EXPECT_EQ(json::Serialize(*json::Find((*ranks)[1], {"lines"})), R"(["bad ? byte","last line without newline"])");
  auto reqs = transport_->requests();
  ASSERT_EQ(reqs.size(), 4u);
  for (const auto& q : reqs) EXPECT_EQ(q.bearer_token, "") << q.path;
  EXPECT_EQ(reqs[1].path, "/api/v1/namespaces/ml/pods?labelSelector=berth.dev%2Frun%3Dtrain");
  EXPECT_EQ(reqs[2].path, "/api/v1/namespaces/ml/pods/train-0/log?container=main&tailLines=50&limitBytes=" +
                              std::to_string(kMaxLogBytesPerRank));
  EXPECT_THAT(reqs[3].path, StartsWith("/api/v1/namespaces/ml/pods/train-1/log?"));
}

TEST_F(DashboardTest, LogsOfOneRankAndTheirErrors) {
  transport_->Push(200, kRunningRun);
  transport_->Push(200, R"({"kind":"PodList","items":[)" + RankPod(0, 0) + "," + RankPod(1, 0) + "]}");
  transport_->Push(400, StatusBody(400, "BadRequest", R"(container "main" in pod "train-1" is waiting to start)"));
  HttpReply r = api_.RunLogs(LogsRequest({{"rank", "1"}}), "ml", "train");
  ASSERT_EQ(r.status, 200) << r.body;
  json::Document d = MustParse(r.body);
  const json::Value* ranks = json::Find(d, {"ranks"});
  ASSERT_EQ(ranks->Size(), 1u);
  EXPECT_EQ(json::GetInt((*ranks)[0], "rank", -1), 1);
  EXPECT_EQ(json::GetInt((*ranks)[0], "status", -1), 400);
  EXPECT_THAT(json::GetString((*ranks)[0], "error"), HasSubstr("waiting to start"));

  // No Pods yet: an answer that says so.
  transport_->Push(200, R"({"kind":"Run","metadata":{"name":"train","uid":"u1"},"status":{"phase":"Pending","reason":"NoCapacity"}})");
  transport_->Push(200, R"({"kind":"PodList","items":[]})");
  r = api_.RunLogs(LogsRequest(), "ml", "train");
  ASSERT_EQ(r.status, 200) << r.body;
  d = MustParse(r.body);
  EXPECT_EQ(json::GetString(d, "note"), "run \"train\" has no Pods yet (Pending, NoCapacity)");
  EXPECT_EQ(json::Find(d, {"ranks"})->Size(), 0u);

  // A rank the run does not have.
  transport_->Push(200, kRunningRun);
  r = api_.RunLogs(LogsRequest({{"rank", "2"}}), "ml", "train");
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(ErrorOf(r), HasSubstr("has 2 ranks: rank 2 is out of range"));

  // The viewer may read the run but not list its Pods.
  transport_->Push(200, kRunningRun);
  transport_->Push(403, StatusBody(403, "Forbidden", R"(pods is forbidden: User "viewer" cannot list resource "pods")"));
  r = api_.RunLogs(LogsRequest(), "ml", "train");
  EXPECT_EQ(r.status, 403);
  EXPECT_THAT(ErrorOf(r), HasSubstr("cannot list resource \"pods\""));
}

TEST_F(DashboardTest, LogsNeedAValidQuery) {
  HttpReply r;
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"rank", "-1"}, {"rank", "x"}, {"rank", "10000"}, {"rank", ""}, {"tailLines", "0"}, {"tailLines", "2001"},
           {"tailLines", "1e3"}, {"tailLines", "99999999999999999999"}, {"follow", "true"}, {"limitBytes", "1"}}) {
    r = api_.RunLogs(LogsRequest({{k, v}}), "ml", "train");
    EXPECT_EQ(r.status, 400) << k << "=" << v;
  }
  EXPECT_TRUE(transport_->requests().empty()) << "nothing is read before the request is valid";
}

TEST_F(DashboardTest, ActionPathsAndMethods) {
  HttpServer server("0");
  api_.Register(server);
  for (const std::string action : {"stop", "suspend", "resume", "priority"}) {
    EXPECT_EQ(server.Dispatch(Get("/api/runs/ml/train/" + action)).status, 405) << action;
    HttpRequestView bad = GoodRequest("{}");
    bad.path = "/api/runs/ML/train/" + action;
    EXPECT_EQ(server.Dispatch(bad).status, 400) << action;
  }
  HttpRequestView post_logs = GoodRequest("{}");
  post_logs.path = "/api/runs/ml/train/logs";
  EXPECT_EQ(server.Dispatch(post_logs).status, 405);
  EXPECT_EQ(server.Dispatch(Get("/api/runs/ml/train/restart")).status, 404);
  EXPECT_EQ(server.Dispatch(Get("/api/runs/ml/a%2Fb/logs")).status, 400);
  EXPECT_TRUE(transport_->requests().empty());
  // Through the router, POST .../stop reaches the API.
  transport_->Push(200, kRunningRun);
  transport_->Push(200, R"({"kind":"Run","metadata":{"generation":4}})");
  HttpRequestView stop = GoodRequest("{}");
  stop.path = "/api/runs/ml/train/stop";
  EXPECT_EQ(server.Dispatch(stop).status, 200);
  ASSERT_EQ(transport_->requests().size(), 2u);
  EXPECT_EQ(transport_->requests()[1].method, "PATCH");
}

// ---------------------------------------------------------------------------------------------
// Who may see which runs of the queue (issue 29, 8; issue 44, 4 and 11): SubjectAccessReviews about
// the user the API server's front proxy names, asked in berth's own name.

class AccessReviewTest : public ::testing::Test {
 protected:
  AccessReviewTest()
      : transport_(std::make_shared<ScriptedTransport>()),
        client_(std::make_shared<k8s::Client>(k8s::ClientConfig{}, transport_)),
        reviews_(client_, clock_, std::chrono::seconds(10)) {
    client_->SetMaxRetries(0);
  }
  void Answer(bool allowed) {
    transport_->Push(201, std::string(R"({"kind":"SubjectAccessReview","status":{"allowed":)") +
                              (allowed ? "true" : "false") + "}}");
  }
  static AccessQuestion ListRuns(const std::string& ns) { return AccessQuestion{"berth.dev", "runs", "list", ns}; }
  static UserInfo User(const std::string& name, std::vector<std::string> groups = {"system:authenticated"}) {
    UserInfo u;
    u.name = name;
    u.groups = std::move(groups);
    return u;
  }

  k8s::FakeClock clock_;
  std::shared_ptr<ScriptedTransport> transport_;
  k8s::ClientPtr client_;
  AccessReview reviews_;
};

TEST_F(AccessReviewTest, NoUserIsRefusedWithoutAnApiCall) {
  auto r = reviews_.Allowed(UserInfo{}, ListRuns("ml"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), 401);
  EXPECT_TRUE(transport_->requests().empty());
}

TEST_F(AccessReviewTest, AsksASubjectAccessReviewAboutTheUserAndKeepsTheAnswerForItsTtl) {
  Answer(true);
  UserInfo alice = User("alice", {"team-a", "system:authenticated"});
  alice.uid = "u-1";
  alice.extra["scopes.example.com/x"] = {"a", "b"};
  auto r = reviews_.Allowed(alice, ListRuns("ml"));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(*r);
  ASSERT_EQ(transport_->requests().size(), 1u);
  const k8s::HttpRequest req = transport_->requests()[0];
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.path, "/apis/authorization.k8s.io/v1/subjectaccessreviews");
  EXPECT_EQ(req.bearer_token, "");  // berth's own identity (its client), never the user's
  json::Document body = MustParse(req.body);
  EXPECT_EQ(json::GetString(body, "kind"), "SubjectAccessReview");
  EXPECT_EQ(json::GetString(*json::Find(body, {"spec"}), "user"), "alice");
  EXPECT_EQ(json::GetString(*json::Find(body, {"spec"}), "uid"), "u-1");
  EXPECT_EQ(json::Serialize(*json::Find(body, {"spec", "groups"})), R"(["team-a","system:authenticated"])");
  EXPECT_EQ(json::Serialize(*json::Find(body, {"spec", "extra"})), R"({"scopes.example.com/x":["a","b"]})");
  const json::Value* attrs = json::Find(body, {"spec", "resourceAttributes"});
  ASSERT_NE(attrs, nullptr);
  EXPECT_EQ(json::GetString(*attrs, "group"), "berth.dev");
  EXPECT_EQ(json::GetString(*attrs, "resource"), "runs");
  EXPECT_EQ(json::GetString(*attrs, "verb"), "list");
  EXPECT_EQ(json::GetString(*attrs, "namespace"), "ml");

  // Kept: the same user and question are not asked again within the TTL.
  clock_.Advance(std::chrono::seconds(9));
  EXPECT_TRUE(*reviews_.Allowed(alice, ListRuns("ml")));
  EXPECT_EQ(transport_->requests().size(), 1u);
  // Another user, the same name in other groups, or another question is asked; cluster-wide has
  // no namespace.
  Answer(false);
  EXPECT_FALSE(*reviews_.Allowed(User("bob"), ListRuns("ml")));
  Answer(false);
  EXPECT_FALSE(*reviews_.Allowed(User("alice"), ListRuns("ml")));
  Answer(false);
  EXPECT_FALSE(*reviews_.Allowed(alice, ListRuns("")));
  ASSERT_EQ(transport_->requests().size(), 4u);
  EXPECT_EQ(json::Find(MustParse(transport_->requests()[3].body), {"spec", "resourceAttributes", "namespace"}), nullptr);
  // After the TTL a revoked right shows.
  clock_.Advance(std::chrono::seconds(2));
  Answer(false);
  EXPECT_FALSE(*reviews_.Allowed(alice, ListRuns("ml")));
  EXPECT_EQ(transport_->requests().size(), 5u);
}

TEST_F(AccessReviewTest, ErrorsAreNotKeptAndSayWhatBerthLacks) {
  transport_->Push(403, StatusBody(403, "Forbidden", "cannot create resource \"subjectaccessreviews\""));
  auto refused = reviews_.Allowed(User("alice"), ListRuns("ml"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), 502);
  EXPECT_THAT(refused.status().message(), HasSubstr("berth's ServiceAccount needs create on subjectaccessreviews"));
  transport_->PushNoAnswer();
  EXPECT_EQ(reviews_.Allowed(User("alice"), ListRuns("ml")).status().code(), 502);
  EXPECT_EQ(reviews_.cached(), 0u);
}

// Issue 44 (11): a full cache forgets the least recently used answer, not every answer: a caller
// who keeps asking new questions does not make the others' answers go.
TEST_F(AccessReviewTest, AFullCacheForgetsTheLeastRecentlyUsedAnswer) {
  AccessReview small(client_, clock_, std::chrono::seconds(10), 3);
  for (const char* ns : {"a", "b", "c"}) {
    Answer(true);
    ASSERT_TRUE(small.Allowed(User("alice"), ListRuns(ns)).ok());
  }
  EXPECT_EQ(small.cached(), 3u);
  // "a" used again: now the most recent; "b" is the least recently used.
  ASSERT_TRUE(*small.Allowed(User("alice"), ListRuns("a")));
  EXPECT_EQ(transport_->requests().size(), 3u);
  Answer(true);
  ASSERT_TRUE(small.Allowed(User("mallory"), ListRuns("x")).ok());  // makes room: "b" goes
  EXPECT_EQ(small.cached(), 3u);
  EXPECT_EQ(transport_->requests().size(), 4u);
  // "a" and "c" are still kept (no request); "b" is asked again.
  ASSERT_TRUE(*small.Allowed(User("alice"), ListRuns("a")));
  ASSERT_TRUE(*small.Allowed(User("alice"), ListRuns("c")));
  EXPECT_EQ(transport_->requests().size(), 4u);
  Answer(true);
  ASSERT_TRUE(*small.Allowed(User("alice"), ListRuns("b")));
  EXPECT_EQ(transport_->requests().size(), 5u);
  // A caller asking many questions keeps the cache at its bound and evicts one at a time.
  for (int i = 0; i < 10; ++i) {
    Answer(false);
    ASSERT_TRUE(small.Allowed(User("mallory"), ListRuns("n" + std::to_string(i))).ok());
    EXPECT_EQ(small.cached(), 3u);
  }
}

TEST_F(AccessReviewTest, TheQueueShowsTheNamespacesTheUserMayListRunsIn) {
  // Cluster-wide: everything, one review.
  Answer(true);
  auto all = QueueScopeFor(reviews_, User("admin"), "", {"a", "b"});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->all);
  EXPECT_EQ(transport_->requests().size(), 1u);
  // A tenant of namespace a: cluster-wide no, a yes, b no.
  Answer(false);
  Answer(true);
  Answer(false);
  auto tenant = QueueScopeFor(reviews_, User("tenant"), "", {"a", "b"});
  ASSERT_TRUE(tenant.ok());
  EXPECT_FALSE(tenant->all);
  EXPECT_TRUE(tenant->Shows("a"));
  EXPECT_FALSE(tenant->Shows("b"));
  // Asking for b by name: 403 with a sentence (the answers are kept: no API call).
  auto b = QueueScopeFor(reviews_, User("tenant"), "b", {"b"});
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), 403);
  EXPECT_EQ(b.status().message(), "tenant may not list runs.berth.dev in namespace b");
  EXPECT_EQ(transport_->requests().size(), 4u);
  // No user: 401; no answer: 502.
  EXPECT_EQ(QueueScopeFor(reviews_, UserInfo{}, "", {"a"}).status().code(), 401);
  transport_->PushNoAnswer();
  EXPECT_EQ(QueueScopeFor(reviews_, User("other"), "", {"a"}).status().code(), 502);
}

// Issue 44 (11): one request reviews at most kMaxReviewedNamespaces namespaces one by one; with
// more in the queue, a caller who may not list runs cluster-wide gets a 403 that says to ask for
// one namespace (which costs one review), and no more than the one cluster-wide review was made.
TEST_F(AccessReviewTest, OneRequestReviewsAtMostTheCappedNumberOfNamespaces) {
  std::set<std::string> present;
  for (size_t i = 0; i < kMaxReviewedNamespaces; ++i) present.insert("ns-" + std::to_string(i));
  Answer(false);  // cluster-wide
  for (size_t i = 0; i < kMaxReviewedNamespaces; ++i) Answer(i == 7);
  auto at_cap = QueueScopeFor(reviews_, User("tenant"), "", present);
  ASSERT_TRUE(at_cap.ok()) << at_cap.status().ToString();
  EXPECT_EQ(at_cap->namespaces.size(), 1u);
  EXPECT_EQ(transport_->requests().size(), 1 + kMaxReviewedNamespaces);

  present.insert("one-more");
  Answer(false);  // cluster-wide, for another user
  auto over = QueueScopeFor(reviews_, User("tenant2"), "", present);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), 403);
  EXPECT_THAT(over.status().message(), HasSubstr("berth checks at most 256 namespaces one by one"));
  EXPECT_THAT(over.status().message(), HasSubstr("ask for one namespace"));
  EXPECT_EQ(transport_->requests().size(), 2 + kMaxReviewedNamespaces);
  // A cluster-wide lister is not capped.
  Answer(true);
  auto admin = QueueScopeFor(reviews_, User("admin"), "", present);
  ASSERT_TRUE(admin.ok());
  EXPECT_TRUE(admin->all);
}

// ---------------------------------------------------------------------------------------------
// The front proxy's identity (issue 44, 4)

FrontProxyConfig ProxyConfig() {
  FrontProxyConfig c;
  c.client_ca_pem = "pem";
  c.allowed_names = {"front-proxy-client"};
  c.username_headers = {"x-remote-user"};
  c.uid_headers = {"x-remote-uid"};
  c.group_headers = {"x-remote-group"};
  c.extra_prefixes = {"x-remote-extra-"};
  return c;
}

HttpRequestView ProxiedRequest(bool verified, const std::string& cn) {
  HttpRequestView r;
  r.method = "GET";
  r.path = "/apis/queue.berth.dev/v1alpha1/queue";
  r.client_verified = verified;
  r.client_cn = cn;
  r.fields = {{"x-remote-user", "alice"},      {"x-remote-group", "team, a"},
              {"x-remote-group", "system:authenticated"}, {"x-remote-extra-scopes.example.com%2fx", "s1"},
              {"x-remote-extra-scopes.example.com%2fx", "s2"}, {"x-remote-uid", "u-1"}};
  for (const auto& [n, v] : r.fields) r.headers[n] = r.headers.count(n) ? r.headers[n] + ", " + v : v;
  return r;
}

TEST(FrontProxyTest, BelievesTheHeadersOnlyFromAVerifiedAllowedProxyCertificate) {
  auto user = AuthenticateFrontProxy(ProxyConfig(), ProxiedRequest(true, "front-proxy-client"));
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  EXPECT_EQ(user->name, "alice");
  EXPECT_EQ(user->uid, "u-1");
  // Each X-Remote-Group field is one group (a comma is part of a group's name).
  EXPECT_EQ(user->groups, (std::vector<std::string>{"team, a", "system:authenticated"}));
  EXPECT_EQ(user->extra, (std::map<std::string, std::vector<std::string>>{{"scopes.example.com/x", {"s1", "s2"}}}));

  auto unverified = AuthenticateFrontProxy(ProxyConfig(), ProxiedRequest(false, "front-proxy-client"));
  ASSERT_FALSE(unverified.ok());
  EXPECT_EQ(unverified.status().code(), 401);
  auto other_name = AuthenticateFrontProxy(ProxyConfig(), ProxiedRequest(true, "intruder"));
  ASSERT_FALSE(other_name.ok());
  EXPECT_EQ(other_name.status().code(), 401);
  EXPECT_THAT(other_name.status().message(), HasSubstr("\"intruder\" is not one of requestheader-allowed-names"));
  // No allowed names: any certificate the CA signed.
  FrontProxyConfig any = ProxyConfig();
  any.allowed_names.clear();
  EXPECT_TRUE(AuthenticateFrontProxy(any, ProxiedRequest(true, "intruder")).ok());
  // No user named: 401.
  HttpRequestView nameless = ProxiedRequest(true, "front-proxy-client");
  nameless.fields.erase(nameless.fields.begin());
  EXPECT_EQ(AuthenticateFrontProxy(ProxyConfig(), nameless).status().code(), 401);
}

TEST(FrontProxyTest, ReadsTheApiServersRequestHeaderConfigMap) {
  auto cm = MustParse(R"({"data":{"requestheader-client-ca-file":"-----BEGIN CERTIFICATE-----\n",
    "requestheader-allowed-names":"[\"front-proxy-client\"]","requestheader-username-headers":"[\"X-Remote-User\"]",
    "requestheader-group-headers":"[\"X-Remote-Group\"]","requestheader-extra-headers-prefix":"[\"X-Remote-Extra-\"]",
    "requestheader-uid-headers":"[\"X-Remote-Uid\"]"}})");
  auto c = ParseFrontProxyConfig(cm);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->allowed_names, std::vector<std::string>{"front-proxy-client"});
  EXPECT_EQ(c->username_headers, std::vector<std::string>{"x-remote-user"});
  EXPECT_EQ(c->group_headers, std::vector<std::string>{"x-remote-group"});
  EXPECT_EQ(c->extra_prefixes, std::vector<std::string>{"x-remote-extra-"});
  EXPECT_EQ(c->uid_headers, std::vector<std::string>{"x-remote-uid"});
  auto none = ParseFrontProxyConfig(MustParse(R"({"data":{"client-ca-file":"x"}})"));
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("--requestheader-client-ca-file"));
}

}  // namespace
}  // namespace berth::controller
