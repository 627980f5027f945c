// Issue 47: the queue API's usage answer (controller/usage_api.h): the query's checks, the rows per
// team, namespace, fleet and user from the Teams' histories and the per-user stores, the window,
// the weights and shares, and a non-admin's user rows (their own only).

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "controller/usage_api.h"
#include "k8s/json.h"
#include "scheduling/usage.h"

namespace berth::controller {
namespace {

namespace api = api::v1alpha1;
namespace json = k8s::json;
using std::chrono::hours;

// 2026-11-30T12:00:00Z
const base::TimePoint kNow = base::TimePoint(std::chrono::duration_cast<base::Duration>(std::chrono::seconds(1796040000)));

base::UsageDay Day(const std::string& day, const std::string& fleet, double gpu, std::map<std::string, base::UsageHours> named) {
  base::UsageDay d;
  d.day = day;
  d.fleet = fleet;
  d.total = base::UsageHours{.gpu = gpu, .cpu = 10 * gpu, .memory_gib = 0};
  for (auto& [name, h] : named) h.cpu = 10 * h.gpu;  // as the total: 10 cores a GPU
  d.by_namespace = std::move(named);
  return d;
}

std::shared_ptr<const api::Team> TeamWith(const std::string& name, base::UsageHistory h) {
  auto t = std::make_shared<api::Team>();
  t->meta.name = name;
  t->status.usage_history = std::move(h);
  return t;
}

UsageInputs Inputs() {
  UsageInputs in;
  in.teams.push_back(TeamWith("vision", {Day("2026-11-20", "a100", 1000, {}),  // outside a 7d window
                                         Day("2026-11-29", "a100", 30, {{"cv", {.gpu = 20}}, {"others", {.gpu = 10}}}),
                                         Day("2026-11-30", "h100", 10, {{"cv", {.gpu = 10}}})}));
  in.teams.push_back(TeamWith("nlp", {Day("2026-11-30", "a100", 60, {{"llm", {.gpu = 60}}})}));
  in.cost_weights["h100"] = 3;
  api::UserUsage vision{.team = "vision", .history = {}, .folded_until = std::nullopt, .resource_version = "1"};
  vision.history = {Day("2026-11-29", "a100", 30, {{"alice", {.gpu = 25}}, {"bob", {.gpu = 5}}}),
                    Day("2026-11-30", "h100", 10, {{"alice", {.gpu = 10}}})};
  api::UserUsage nlp{.team = "nlp", .history = {}, .folded_until = std::nullopt, .resource_version = "1"};
  nlp.history = {Day("2026-11-30", "a100", 60, {{"bob", {.gpu = 60}}})};
  in.users = {vision, nlp};
  return in;
}

// name -> (gpuHours, weightedGpuHours, share) of the answer's rows, in their order.
std::vector<std::tuple<std::string, double, double, double>> Rows(const std::string& body) {
  auto doc = json::Parse(body);
  EXPECT_TRUE(doc.ok()) << body;
  std::vector<std::tuple<std::string, double, double, double>> out;
  for (const auto& r : json::Find(*doc, {"rows"})->GetArray()) {
    out.emplace_back(json::GetString(json::Find(r, {"name"})), json::Find(r, {"gpuHours"})->GetDouble(),
                     json::Find(r, {"weightedGpuHours"})->GetDouble(), json::Find(r, {"share"})->GetDouble());
  }
  return out;
}

std::string Answer(const std::string& by, const std::string& only_user = "", std::chrono::hours window = hours(24 * 7)) {
  UsageInputs in = Inputs();
  in.only_user = only_user;
  return UsageJson(UsageQuery{.since = "7d", .window = window, .by = by}, in, kNow);
}

TEST(UsageApi, TeamsFleetsAndNamespacesAreTheTeamsHistoryInTheWindow) {
  using Row = std::tuple<std::string, double, double, double>;
  // 100 GPU-hours in the window (the day 10 days ago left out); h100 hours count 3 times weighted.
  EXPECT_EQ(Rows(Answer("team")), (std::vector<Row>{{"nlp", 60, 60, 0.6}, {"vision", 40, 60, 0.4}}));
  EXPECT_EQ(Rows(Answer("fleet")), (std::vector<Row>{{"a100", 90, 90, 0.9}, {"h100", 10, 30, 0.1}}));
  EXPECT_EQ(Rows(Answer("namespace")), (std::vector<Row>{{"llm", 60, 60, 0.6}, {"cv", 30, 50, 0.3}, {"others", 10, 10, 0.1}}));
  auto doc = json::Parse(Answer("team"));
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(json::GetString(json::Find(*doc, {"from"})), "2026-11-23");
  EXPECT_EQ(json::GetString(json::Find(*doc, {"to"})), "2026-11-30");
  EXPECT_EQ(json::Find(*doc, {"days"})->Size(), 8u);
  EXPECT_DOUBLE_EQ(json::Find(*doc, {"total", "gpuHours"})->GetDouble(), 100);
  EXPECT_DOUBLE_EQ(json::Find(*doc, {"total", "cpuHours"})->GetDouble(), 1000);
  // A series per day for the dashboard: vision's two days.
  const json::Value& vision = (*json::Find(*doc, {"rows"}))[1];
  ASSERT_EQ(json::Find(vision, {"days"})->Size(), 2u);
  EXPECT_EQ(json::GetString(json::Find((*json::Find(vision, {"days"}))[0], {"day"})), "2026-11-29");
  // A day: today only.
  EXPECT_EQ(Rows(Answer("team", "", hours(1))), (std::vector<Row>{{"nlp", 60, 60, 60.0 / 70}, {"vision", 10, 30, 10.0 / 70}}));
}

// Every user's row (an admin), summed over Teams; a non-admin sees only their own row, the
// total still every Team's; a user who used nothing sees no row.
TEST(UsageApi, AUserSeesOnlyTheirOwnRowUnlessAdmin) {
  using Row = std::tuple<std::string, double, double, double>;
  EXPECT_EQ(Rows(Answer("user")), (std::vector<Row>{{"bob", 65, 65, 0.65}, {"alice", 35, 55, 0.35}}));
  EXPECT_EQ(Rows(Answer("user", "alice")), (std::vector<Row>{{"alice", 35, 55, 0.35}}));
  EXPECT_EQ(Rows(Answer("user", "carol")), (std::vector<Row>{}));
  const std::string bob = Answer("user", "bob");
  EXPECT_EQ(bob.find("alice"), std::string::npos) << bob;
}

TEST(UsageApi, BadQueriesGetASentence) {
  auto parse = [](std::map<std::string, std::string> query, std::string& message) {
    HttpRequestView req;
    req.method = "GET";
    req.query = std::move(query);
    UsageQuery q;
    return ParseUsageQuery(req, q, message);
  };
  std::string m;
  EXPECT_EQ(parse({}, m), 0);
  EXPECT_EQ(parse({{"since", "30d"}, {"by", "user"}}, m), 0);
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"since", "7"}, {"since", "-7d"}, {"since", "91d"}, {"since", "59m"}, {"since", "off"}, {"since", "1e400h"},
           {"since", std::string(5000, '9') + "h"}, {"by", "Team"}, {"by", "users"}, {"by", "team\n"}}) {
    m.clear();
    EXPECT_EQ(parse({{k, v}}, m), 400) << k << "=" << v;
    EXPECT_NE(m.find(k + " must be"), std::string::npos) << m;
  }
}

// Issue 47: runs and their median wait.
base::WaitHistogram Waits(const std::vector<int64_t>& secs) {
  base::WaitHistogram h;
  for (int64_t s : secs) h.Add(std::chrono::seconds(s));
  return h;
}

base::RunStartsDay Starts(const std::string& day, const std::string& fleet, std::map<std::string, std::vector<int64_t>> users,
                          std::map<std::string, std::vector<int64_t>> namespaces) {
  base::RunStartsDay d{.day = day, .fleet = fleet, .total = {}, .by_user = {}, .by_namespace = {}};
  for (const auto& [user, waits] : users) {
    d.by_user[user] = Waits(waits);
    d.total += Waits(waits);
  }
  for (const auto& [ns, waits] : namespaces) d.by_namespace[ns] = Waits(waits);
  return d;
}

// Inputs() with the stores' run starts: vision's alice waited 400 s, 2 h (a100) and 30 s (h100),
// its bob 5 s; nlp's bob 600, 900 and 1000 s; a day outside the window; a store of a Team since
// deleted.
UsageInputs InputsWithRuns() {
  UsageInputs in = Inputs();
  in.users[0].starts = {Starts("2026-11-20", "a100", {{"alice", {5, 5, 5}}}, {{"cv", {5, 5, 5}}}),
                        Starts("2026-11-29", "a100", {{"alice", {400, 7200}}, {"bob", {5}}}, {{"cv", {400, 7200, 5}}}),
                        Starts("2026-11-30", "h100", {{"alice", {30}}}, {{"cv", {30}}})};
  in.users[1].starts = {Starts("2026-11-30", "a100", {{"bob", {600, 900, 1000}}}, {{"llm", {600, 900, 1000}}})};
  api::UserUsage gone{.team = "gone", .history = {}, .folded_until = std::nullopt, .resource_version = "1", .starts = {}};
  gone.starts = {Starts("2026-11-30", "a100", {{"carol", {60}}}, {{"old", {60}}})};
  in.users.push_back(gone);
  return in;
}

// name -> (runs, the median's bucket from, under: -1 for none, -2 for a null median); "" the total.
using RunsRow = std::tuple<int64_t, int64_t, int64_t>;
RunsRow RunsOf(const json::Value& v) {
  const json::Value* runs = json::Find(v, {"runs"});
  const json::Value* m = json::Find(v, {"medianWait"});
  if (runs == nullptr || m == nullptr) return {-1, -1, -1};
  if (!m->IsObject()) return {runs->GetInt64(), -2, -2};
  const json::Value* under = json::Find(*m, {"underSeconds"});
  return {runs->GetInt64(), json::Find(*m, {"fromSeconds"})->GetInt64(), under == nullptr ? -1 : under->GetInt64()};
}

std::map<std::string, RunsRow> RunRows(const std::string& body) {
  auto doc = json::Parse(body);
  EXPECT_TRUE(doc.ok()) << body;
  std::map<std::string, RunsRow> out;
  if (!doc.ok()) return out;
  out[""] = RunsOf(*json::Find(*doc, {"total"}));
  for (const auto& r : json::Find(*doc, {"rows"})->GetArray()) out[json::GetString(json::Find(r, {"name"}))] = RunsOf(r);
  return out;
}

std::string RunsAnswer(const std::string& by, const std::string& only_user = "") {
  UsageInputs in = InputsWithRuns();
  in.only_user = only_user;
  return UsageJson(UsageQuery{.since = "7d", .window = hours(24 * 7), .by = by}, in, kNow);
}

// Every --by counts the runs that started in the window and the bucket of their median wait (the
// lower middle run's): the 7 runs of the window wait 5, 30, 400, 600, 900, 1000, 7200 s.
TEST(UsageApi, RunsAndTheirMedianWaitForEveryBy) {
  using M = std::map<std::string, RunsRow>;
  const RunsRow all{7, 600, 900};
  EXPECT_EQ(RunRows(RunsAnswer("team")), (M{{"", all}, {"vision", {4, 30, 60}}, {"nlp", {3, 900, 1800}}}));
  EXPECT_EQ(RunRows(RunsAnswer("fleet")), (M{{"", all}, {"a100", {6, 600, 900}}, {"h100", {1, 30, 60}}}));
  EXPECT_EQ(RunRows(RunsAnswer("namespace")),
            (M{{"", all}, {"cv", {4, 30, 60}}, {"llm", {3, 900, 1800}}, {"others", {0, -2, -2}}}));
  EXPECT_EQ(RunRows(RunsAnswer("user")),
            (M{{"", all}, {"alice", {3, 300, 600}}, {"bob", {4, 600, 900}}, {"carol", {1, 60, 120}}}));
  EXPECT_EQ(RunRows(RunsAnswer("user", "alice")), (M{{"", all}, {"alice", {3, 300, 600}}}));
  // Per day: vision's runs of the 29th and the 30th.
  auto doc = json::Parse(RunsAnswer("team"));
  ASSERT_TRUE(doc.ok());
  for (const auto& r : json::Find(*doc, {"rows"})->GetArray()) {
    if (json::GetString(json::Find(r, {"name"})) != "vision") continue;
    const json::Value& days = *json::Find(r, {"days"});
    ASSERT_EQ(days.Size(), 2u);
    EXPECT_EQ(RunsOf(days[0]), (RunsRow{3, 300, 600})) << "5, 400, 7200 s";
    EXPECT_EQ(RunsOf(days[1]), (RunsRow{1, 30, 60}));
  }
  // The stores could not be read: no runs at all (not zero runs).
  UsageInputs in = InputsWithRuns();
  in.runs_known = false;
  const std::string unknown = UsageJson(UsageQuery{.since = "7d", .window = hours(24 * 7), .by = "team"}, in, kNow);
  EXPECT_EQ(unknown.find("runs"), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find("medianWait"), std::string::npos) << unknown;
}

// A parameter given twice is refused (the server keeps the first, which the asker may not mean),
// an empty one thousand times too: a sentence each.
TEST(UsageApi, ARepeatedSinceOrByIsRefusedWithASentence) {
  auto parse = [](const std::string& target, std::string& message) {
    RequestParser parser([](const HttpRequestView&) {
      return HeadDecision{.status = 0, .message = "", .headers = {}, .max_body = 0};
    });
    parser.Append("GET " + target + " HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(parser.Next().kind, RequestParser::Step::kRequest) << target;
    HttpRequestView req = parser.TakeRequest();
    UsageQuery q;
    return ParseUsageQuery(req, q, message);
  };
  std::string m;
  EXPECT_EQ(parse("/usage?by=user&since=30d", m), 0) << m;
  std::string empties;
  for (int i = 0; i < 1000; ++i) empties += "by=&";
  for (const auto& [target, key] : std::vector<std::pair<std::string, std::string>>{
           {"/usage?by=team&by=user", "by"}, {"/usage?since=7d&by=team&since=1h", "since"}, {"/usage?" + empties, "by"}}) {
    m.clear();
    EXPECT_EQ(parse(target, m), 400) << target.substr(0, 60);
    EXPECT_EQ(m, key + " must be given once (the query names it more than once)") << target.substr(0, 60);
  }
}

// The named users' figures, each rounded to the nanohour, may fall short of the day's total by a
// few nanohours: no "others" row of nothing (seen: 1.3e-8 GiB-hours, shown as a row of 0.0).
TEST(UsageApi, RoundingLeavesNoOthersRow) {
  UsageInputs in;
  base::UsageDay d = Day("2026-11-30", "a100", 2, {{"alice", {.gpu = 1}}, {"bob", {.gpu = 1}}});
  d.total.memory_gib = 1.3e-8;
  in.teams.push_back(TeamWith("vision", {d}));
  in.users = {api::UserUsage{.team = "vision", .history = {d}, .folded_until = std::nullopt, .resource_version = "1", .starts = {}}};
  using Row = std::tuple<std::string, double, double, double>;
  EXPECT_EQ(Rows(UsageJson(UsageQuery{.since = "7d", .window = hours(24 * 7), .by = "user"}, in, kNow)),
            (std::vector<Row>{{"alice", 1, 1, 0.5}, {"bob", 1, 1, 0.5}}));
}

}  // namespace
}  // namespace berth::controller
