// Issue 47: the queue API's usage answer (controller/usage_api.h): the query's checks, the rows per
// team, namespace, fleet and user from the Teams' histories and the per-user stores, the window,
// the weights and shares, and a non-admin's user rows (their own only).

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

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

}  // namespace
}  // namespace berth::controller
