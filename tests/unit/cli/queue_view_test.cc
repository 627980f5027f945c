#include "cli/queue_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake_transport.h"
#include "k8s/timefmt.h"

namespace berth::cli {
namespace {

using ::testing::HasSubstr;
using testing::FakeTransport;
using testing::StatusBody;

// The contract's example, plus a second run.
const char* kQueueJson = R"({"generatedAt":"2026-11-21T20:00:00Z","total":3,"items":[
 {"position":1,"namespace":"ml","name":"train","priority":50,"effectivePriority":52,"nodes":2,"fleets":["a100"],
  "submittedAt":"2026-11-21T19:00:00Z","waitSeconds":3600,"reason":"NoCapacity","message":"needs 2 idle instances","team":"vision",
  "estimatedStartAt":"2026-11-21T20:40:00Z","startsInSeconds":2400},
 {"position":3,"namespace":"research","name":"job-sweep","priority":10,"effectivePriority":10,"nodes":1,"fleets":[],
  "submittedAt":"2026-11-21T19:59:15Z","waitSeconds":45,"reason":"","message":"","kind":"Job","workload":"sweep"}]})";

TEST(QueueViewTest, Decode) {
  auto q = DecodeQueue(kQueueJson);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->generated_at, "2026-11-21T20:00:00Z");
  EXPECT_EQ(q->total, 3);
  ASSERT_EQ(q->items.size(), 2u);
  const QueueItem& a = q->items[0];
  EXPECT_EQ(a.position, 1);
  EXPECT_EQ(a.ns, "ml");
  EXPECT_EQ(a.name, "train");
  EXPECT_EQ(a.priority, 50);
  EXPECT_EQ(a.effective_priority, 52);
  EXPECT_EQ(a.nodes, 2);
  EXPECT_EQ(a.fleets, std::vector<std::string>{"a100"});
  EXPECT_EQ(a.submitted_at, "2026-11-21T19:00:00Z");
  EXPECT_EQ(a.wait_seconds, 3600);
  EXPECT_EQ(a.reason, "NoCapacity");
  EXPECT_EQ(a.message, "needs 2 idle instances");
  EXPECT_EQ(a.team, "vision");
  EXPECT_EQ(a.estimated_start_at, "2026-11-21T20:40:00Z");
  EXPECT_EQ(a.starts_in_seconds, std::optional<int64_t>(2400));
  EXPECT_EQ(q->items[1].estimated_start_at, "") << "no estimate";
  EXPECT_FALSE(q->items[1].starts_in_seconds.has_value());
  EXPECT_TRUE(q->items[1].fleets.empty());
  EXPECT_EQ(q->items[1].team, "") << "no Team holds the namespace research";

  EXPECT_FALSE(DecodeQueue("<html>").ok());
  EXPECT_THAT(DecodeQueue(R"({"total":0})").status().message(), HasSubstr("no \"items\" array"));
  auto empty = DecodeQueue(R"({"items":[]})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->items.empty());
}

// Without the controller, the queue is read from the runs' status: pending runs with a place, in
// place order; the rest are counted.
TEST(QueueViewTest, FromRunStatus) {
  const std::string list = R"({"kind":"RunList","items":[
 {"metadata":{"namespace":"ml","name":"second","creationTimestamp":"2026-11-24T10:00:00Z"},
  "spec":{"priority":40,"nodes":2,"fleets":["a100"],"workloadRef":{"apiVersion":"batch/v1","kind":"Job","name":"report","uid":"u-1"}},
  "status":{"phase":"Pending","queuePosition":2,"effectivePriority":41,"reason":"NoCapacity","message":"needs 2 idle instances",
            "submittedAt":"2026-11-24T10:00:00Z","estimatedStartAt":"2026-11-24T12:40:00Z"}},
 {"metadata":{"namespace":"ml","name":"first","creationTimestamp":"2026-11-24T11:00:00Z"},
  "spec":{"priority":90},"status":{"phase":"Pending","queuePosition":1}},
 {"metadata":{"namespace":"ml","name":"beyond-100","creationTimestamp":"2026-11-24T11:00:00Z"},
  "spec":{},"status":{"phase":"Pending"}},
 {"metadata":{"namespace":"ml","name":"leaving","deletionTimestamp":"2026-11-24T11:30:00Z"},
  "spec":{},"status":{"phase":"Pending","queuePosition":3}},
 {"metadata":{"namespace":"ml","name":"running"},"spec":{},"status":{"phase":"Running","queuePosition":7}},
 {"metadata":{"namespace":"ml","name":"suspended"},"spec":{"suspend":true},"status":{"phase":"Pending","reason":"Suspended"}},
 {"metadata":{"namespace":"ml","name":"new"},"spec":{}}
]})";
  const k8s::TimePoint now = k8s::ParseRfc3339("2026-11-24T12:00:00Z").value();
  auto q = QueueFromRuns(list, 0, now);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(q->total, 3) << "every pending run not being deleted or suspended counts, with a place or not";
  ASSERT_EQ(q->items.size(), 2u);
  EXPECT_EQ(q->items[0].name, "first");
  EXPECT_EQ(q->items[0].position, 1);
  EXPECT_EQ(q->items[0].priority, 90);
  EXPECT_EQ(q->items[0].effective_priority, 90);
  EXPECT_EQ(q->items[0].wait_seconds, 3600) << "from the creation time when submittedAt is not set";
  EXPECT_EQ(q->items[1].name, "second");
  EXPECT_EQ(q->items[1].effective_priority, 41);
  EXPECT_EQ(q->items[1].nodes, 2);
  EXPECT_EQ(q->items[1].fleets, std::vector<std::string>{"a100"});
  EXPECT_EQ(q->items[1].wait_seconds, 7200);
  EXPECT_EQ(q->items[1].reason, "NoCapacity");
  EXPECT_EQ(q->items[1].message, "needs 2 idle instances");
  EXPECT_EQ(q->items[1].estimated_start_at, "2026-11-24T12:40:00Z");
  EXPECT_EQ(q->items[1].starts_in_seconds, std::optional<int64_t>(2400)) << "from now to the status' estimate";
  EXPECT_FALSE(q->items[0].starts_in_seconds.has_value()) << "no estimate in its status";
  // Issue 45: a ticket's KIND is the workload it stands for.
  EXPECT_EQ(KindText(q->items[0]), "Run");
  EXPECT_EQ(KindText(q->items[1]), "Job/report");
  auto one = QueueFromRuns(list, 1, now);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->items.size(), 1u);
  EXPECT_EQ(one->items[0].name, "first");
  EXPECT_EQ(q->items[0].team, "") << "no Team known";
  auto teamed = QueueFromRuns(list, 0, now, {{"ml", "vision"}, {"audio-dev", "audio"}});
  ASSERT_TRUE(teamed.ok());
  ASSERT_EQ(teamed->items.size(), 2u);
  EXPECT_EQ(teamed->items[0].team, "vision");
  EXPECT_EQ(teamed->items[1].team, "vision");
  EXPECT_FALSE(QueueFromRuns("not json", 0, now).ok());
  EXPECT_FALSE(QueueFromRuns(R"({"kind":"Status"})", 0, now).ok());
}

// The fallback's TEAM column: each namespace to the Team naming it; on a clash the first by name,
// as the controller decides.
TEST(QueueViewTest, TeamsOfNamespaces) {
  auto team = [](std::string name, std::vector<std::string> namespaces) {
    api::v1alpha1::Team t;
    t.meta.name = std::move(name);
    t.spec.namespaces = std::move(namespaces);
    return t;
  };
  const TeamOfNamespace m =
      TeamsOfNamespaces({team("vision", {"vision-dev", "shared"}), team("audio", {"audio", "shared"}), team("empty", {})});
  EXPECT_EQ(m, (TeamOfNamespace{{"audio", "audio"}, {"shared", "audio"}, {"vision-dev", "vision"}}));
  EXPECT_TRUE(TeamsOfNamespaces({}).empty());
}

TEST(QueueViewTest, ApiPath) {
  EXPECT_EQ(QueueApiPath("", 0), "/apis/queue.berth.dev/v1alpha1/queue");
  EXPECT_EQ(QueueApiPath("ml", 0), "/apis/queue.berth.dev/v1alpha1/namespaces/ml/queue");
  EXPECT_EQ(QueueApiPath("ml", 20), "/apis/queue.berth.dev/v1alpha1/namespaces/ml/queue?limit=20");
  EXPECT_EQ(QueueApiPath("", 5), "/apis/queue.berth.dev/v1alpha1/queue?limit=5");
  EXPECT_EQ(QueueApiPath("", 0, "500"), "/apis/queue.berth.dev/v1alpha1/queue?continue=500");
}

// KIND (issue 45): Run, or for a ticket the workload it stands for.
TEST(QueueViewTest, Table) {
  auto q = DecodeQueue(kQueueJson);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(FormatQueueTable(*q, QueueFormat{}),
            "POSITION   NAME        KIND        TEAM     PRIORITY   EFFECTIVE   WAITING   ETA       NODES   REASON       MESSAGE\n"
            "1          train       Run         vision   50         52          60m       ~40m      2       NoCapacity   needs 2 idle instances\n"
            "3          job-sweep   Job/sweep   -        10         10          45s       unknown   1       -            -\n");
  EXPECT_EQ(FormatQueueTable(*q, QueueFormat{true, true}),
            "POSITION   NAMESPACE   NAME        KIND        TEAM     PRIORITY   EFFECTIVE   WAITING   ETA       NODES   FLEETS   SUBMITTED   "
            "           REASON       MESSAGE\n"
            "1          ml          train       Run         vision   50         52          60m       ~40m      2       a100     2026-11-21T19:"
            "00:00Z   NoCapacity   needs 2 idle instances\n"
            "3          research    job-sweep   Job/sweep   -        10         10          45s       unknown   1       <any>    2026-11-21T19:"
            "59:15Z   -            -\n");
}

// The ETA column: about how long until the estimate, "now" when it is due, "unknown" without one.
TEST(QueueViewTest, EtaSaysAboutHowLongOrUnknown) {
  QueueItem it;
  EXPECT_EQ(EtaText(it), "unknown");
  it.starts_in_seconds = 0;
  EXPECT_EQ(EtaText(it), "now");
  it.starts_in_seconds = 45;
  EXPECT_EQ(EtaText(it), "~45s");
  it.starts_in_seconds = 3 * 3600;
  EXPECT_EQ(EtaText(it), "~3h");
  it.starts_in_seconds = 3 * 86400 + 2 * 3600;
  EXPECT_EQ(EtaText(it), "~3d2h");
  // Issue 47: with a range, its ends from now.
  it.starts_in_seconds = 40 * 60;
  it.starts_in_range_seconds = std::make_pair(int64_t{20 * 60}, int64_t{90 * 60});
  EXPECT_EQ(EtaText(it), "~40m (20m\u201390m)");
  it.starts_in_range_seconds = std::make_pair(int64_t{0}, int64_t{90 * 60});
  EXPECT_EQ(EtaText(it), "~40m (now\u201390m)");
}

// Issue 47: a range round-trips through the queue API's JSON, both ends or none.
TEST(QueueViewTest, RangeRoundTripsAndIsLeftOutWithoutOne) {
  api::v1alpha1::QueuePage page;
  QueueItem with;
  with.name = "a";
  with.estimated_start_at = "2026-11-21T20:40:00Z";
  with.starts_in_seconds = 2400;
  with.earliest_start_at = "2026-11-21T20:20:00Z";
  with.latest_start_at = "2026-11-21T21:30:00Z";
  with.starts_in_range_seconds = std::make_pair(int64_t{1200}, int64_t{5400});
  QueueItem without;
  without.name = "b";
  page.items = {with, without};
  auto back = api::v1alpha1::DecodeQueuePage(api::v1alpha1::EncodeQueuePage(page));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->items[0].earliest_start_at, with.earliest_start_at);
  EXPECT_EQ(back->items[0].latest_start_at, with.latest_start_at);
  EXPECT_EQ(back->items[0].starts_in_range_seconds, with.starts_in_range_seconds);
  EXPECT_FALSE(back->items[1].starts_in_range_seconds);
  EXPECT_TRUE(back->items[1].earliest_start_at.empty());
}

TEST(QueueViewTest, JsonItems) {
  auto q = DecodeQueue(kQueueJson);
  ASSERT_TRUE(q.ok());
  const std::string out = QueueItemsJson(*q);
  auto back = k8s::json::Parse(out);
  ASSERT_TRUE(back.ok()) << out;
  ASSERT_TRUE(back->IsArray());
  ASSERT_EQ(back->Size(), 2u);
  EXPECT_EQ(k8s::json::GetString((*back)[0], "name"), "train");
  EXPECT_EQ(k8s::json::GetInt((*back)[0], "effectivePriority"), 52);
  EXPECT_EQ((*back)[0]["fleets"][0].GetString(), std::string("a100"));
  EXPECT_EQ(k8s::json::GetInt((*back)[1], "position"), 3);
  EXPECT_EQ(k8s::json::GetString((*back)[0], "team"), "vision");
  EXPECT_FALSE((*back)[1].HasMember("team")) << "no team: the field is left out";
  EXPECT_EQ(k8s::json::GetString((*back)[0], "estimatedStartAt"), "2026-11-21T20:40:00Z");
  EXPECT_EQ(k8s::json::GetInt((*back)[0], "startsInSeconds"), 2400);
  EXPECT_FALSE((*back)[1].HasMember("estimatedStartAt")) << "no estimate: the fields are left out";
  EXPECT_FALSE((*back)[1].HasMember("startsInSeconds"));
}

TEST(QueueViewTest, FetchMapsEveryAnswerToASentence) {
  struct Case {
    std::string name;
    std::function<void(FakeTransport&)> script;
    bool ok;
    std::string error;
    int code = 0;
  };
  const std::string api = "the queue API (APIService v1alpha1.queue.berth.dev)";
  const std::vector<Case> cases = {
      {"answer", [](FakeTransport& t) { t.Push(200, kQueueJson); }, true, ""},
      {"no APIService",
       [](FakeTransport& t) { t.Push(404, StatusBody(404, "NotFound", "the server could not find the requested resource")); },
       false, "the API server does not serve " + api + ": is berth installed with its chart?", 404},
      {"APIService unavailable",
       [](FakeTransport& t) { t.Push(503, StatusBody(503, "ServiceUnavailable", "service unavailable")); }, false,
       api + " did not answer through the API server: 503 ServiceUnavailable: service unavailable", 503},
      {"the proxy's own text",
       [](FakeTransport& t) { t.Push(502, "error trying to reach service: dial tcp 10.213.0.2:8443: connect: connection refused"); },
       false, api + " did not answer through the API server: 502 error trying to reach service", 502},
      {"forbidden by RBAC",
       [](FakeTransport& t) {
         t.Push(403, StatusBody(403, "Forbidden",
                                "queue.queue.berth.dev is forbidden: User \"bob\" cannot list resource \"queue\" in API "
                                "group \"queue.berth.dev\" in the namespace \"ml\""));
       },
       false, "queue.queue.berth.dev is forbidden: User \"bob\" cannot list resource \"queue\"", 403},
      {"berth: may not list runs there",
       [](FakeTransport& t) { t.Push(403, StatusBody(403, "Forbidden", "bob may not list runs.berth.dev in namespace ml")); },
       false, "bob may not list runs.berth.dev in namespace ml", 403},
      {"unauthorized", [](FakeTransport& t) { t.Push(401, StatusBody(401, "Unauthorized", "Unauthorized")); }, false,
       "the API server did not accept the credentials (401 Unauthorized)", 401},
      {"api server down", [](FakeTransport& t) { t.PushNoAnswer("connection refused"); }, false,
       "cannot reach the API server at https://k:6443: connection refused"},
      {"not a queue", [](FakeTransport& t) { t.Push(200, "<html>hello</html>"); }, false,
       "the answer of " + api + " is not a queue"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    FakeTransport t;
    c.script(t);
    auto q = FetchQueue(t, "https://k:6443", "ml", 0);
    ASSERT_EQ(t.requests.size(), 1u);  // one request: no retries hide an unreachable controller
    EXPECT_EQ(t.requests[0].method, "GET");
    EXPECT_EQ(t.requests[0].path, "/apis/queue.berth.dev/v1alpha1/namespaces/ml/queue");
    EXPECT_EQ(q.ok(), c.ok) << q.status().message();
    if (!c.ok) {
      EXPECT_THAT(q.status().message(), HasSubstr(c.error));
      if (c.code != 0) {
        EXPECT_EQ(q.status().code(), c.code);
      }
    }
  }
}

// Issue 29 (10): the controller answers one page at a time; `kubectl berth queue` reads every page
// (or as many as --limit needs), following "continue".
TEST(QueueViewTest, EveryPageIsReadFollowingContinue) {
  const std::string base = "/apis/queue.berth.dev/v1alpha1/queue";
  const std::string ml = "/apis/queue.berth.dev/v1alpha1/namespaces/ml/queue";
  FakeTransport t;
  t.Push(200, R"({"generatedAt":"2026-11-21T20:00:00Z","total":5,"items":[{"position":1,"name":"a"},{"position":2,"name":"b"}],"continue":"2"})");
  t.Push(200, R"({"generatedAt":"2026-11-21T20:00:01Z","total":5,"items":[{"position":3,"name":"c"},{"position":4,"name":"d"}],"continue":"4"})");
  t.Push(200, R"({"generatedAt":"2026-11-21T20:00:02Z","total":5,"items":[{"position":5,"name":"e"}]})");
  auto q = FetchQueue(t, "https://k:6443", "", 0);
  ASSERT_TRUE(q.ok()) << q.status().message();
  ASSERT_EQ(t.requests.size(), 3u);
  EXPECT_EQ(t.requests[0].path, base);
  EXPECT_EQ(t.requests[1].path, base + "?continue=2");
  EXPECT_EQ(t.requests[2].path, base + "?continue=4");
  ASSERT_EQ(q->items.size(), 5u);
  EXPECT_EQ(q->items[4].name, "e");
  EXPECT_EQ(q->total, 5);
  EXPECT_EQ(q->generated_at, "2026-11-21T20:00:00Z");

  // --limit 3: three items, the second page asked for the one still missing.
  FakeTransport l;
  l.Push(200, R"({"total":5,"items":[{"position":1,"name":"a"},{"position":2,"name":"b"}],"continue":"2"})");
  l.Push(200, R"({"total":5,"items":[{"position":3,"name":"c"}],"continue":"3"})");
  q = FetchQueue(l, "https://k:6443", "ml", 3);
  ASSERT_TRUE(q.ok()) << q.status().message();
  ASSERT_EQ(l.requests.size(), 2u);
  EXPECT_EQ(l.requests[0].path, ml + "?limit=3");
  EXPECT_EQ(l.requests[1].path, ml + "?limit=1&continue=2");
  EXPECT_EQ(q->items.size(), 3u);

  // A token that repeats is not followed again.
  FakeTransport r;
  r.Push(200, R"({"total":9,"items":[{"position":1,"name":"a"}],"continue":"1"})");
  r.Push(200, R"({"total":9,"items":[{"position":1,"name":"a"}],"continue":"1"})");
  q = FetchQueue(r, "https://k:6443", "", 0);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(r.requests.size(), 2u);
}

// Issue 44 (4), formerly TheUsersTokenIsSentAsXBerthToken: the queue is read with the transport's
// own credentials (the user's kubeconfig, which authenticates to the API server only): no request
// carries another header or a token of its own; nothing is sent as X-Berth-Token.
TEST(QueueViewTest, NoCredentialIsSentBesidesTheTransportsOwn) {
  FakeTransport t;
  t.Push(200, R"({"total":3,"items":[{"position":1,"name":"a"}],"continue":"1"})");
  t.Push(200, R"({"total":3,"items":[{"position":2,"name":"b"}]})");
  auto q = FetchQueue(t, "https://k:6443", "", 0, 5);
  ASSERT_TRUE(q.ok()) << q.status().message();
  ASSERT_EQ(t.requests.size(), 2u);
  for (const auto& req : t.requests) {
    EXPECT_TRUE(req.headers.empty());
    EXPECT_EQ(req.bearer_token, "");  // the transport's own credentials authenticate to the API server
    EXPECT_EQ(req.path.rfind("/apis/queue.berth.dev/v1alpha1/queue", 0), 0u) << req.path;
  }
}

TEST(QueueViewTest, StandbyAnswersAreAskedAgain) {
  FakeTransport t;
  t.Push(200, R"({"leader":false,"generatedAt":"2026-11-21T20:00:00Z","total":0,"items":[]})");
  t.Push(200, R"({"leader":true,"generatedAt":"2026-11-21T20:00:00Z","total":3,"items":[{"position":1,"name":"a"}]})");
  auto q = FetchQueue(t, "https://k:6443", "", 0);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(t.requests.size(), 2u);
  ASSERT_EQ(q->items.size(), 1u);
  EXPECT_EQ(q->leader, std::optional<bool>(true));

  FakeTransport standby;
  for (int i = 0; i < 3; ++i) standby.Push(200, R"({"leader":false,"total":0,"items":[]})");
  auto none = FetchQueue(standby, "https://k:6443", "", 0, /*standby_tries=*/3);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(standby.requests.size(), 3u);
  EXPECT_THAT(none.status().message(),
              HasSubstr("only standby replicas of the berth controller answered through the API server (3 tries)"));

  // No "leader" field (a controller without leader election): the answer is the queue.
  FakeTransport plain;
  plain.Push(200, R"({"total":0,"items":[]})");
  auto empty = FetchQueue(plain, "https://k:6443", "", 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->leader.has_value());
  EXPECT_EQ(plain.requests.size(), 1u);
}

}  // namespace
}  // namespace berth::cli
