// Issue 47: a Team's per-user usage store (api::UserUsage, a ConfigMap in berth's namespace): the
// fold from its own watermark (FoldUserUsage), its size bound, and the ConfigMap's codec; the runs
// that started, with their waits (RunStartsTest): each start counted once, in the fold whose
// interval holds it, per UTC day and fleet, user and namespace; bounded; kept by the ConfigMap.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "api/v1alpha1/user_usage.h"
#include "k8s/json.h"
#include "reconcilers/objects/user_usage.h"
#include "scheduling/usage.h"

namespace berth::reconcilers {
namespace {

using base::TimePoint;
using std::chrono::hours;
using std::chrono::minutes;
using std::chrono::seconds;
namespace api = api::v1alpha1;
namespace sched = scheduling;

// 2026-11-28T00:00:00Z
constexpr std::chrono::seconds kStartSeconds(1795824000);
const TimePoint kStart{std::chrono::duration_cast<base::Duration>(kStartSeconds)};

// Spans as the fold hands them to the store: each span's ns is its run's submitter.
std::vector<sched::UsageSpan> TwoUsers() {
  return {{.ns = "alice", .fleet = "a100", .start = kStart, .end = kStart + hours(2), .gpus = 4, .cpu_milli = 8000,
           .memory_bytes = int64_t{32} << 30},
          {.ns = "unknown", .fleet = "a100", .start = kStart + hours(1), .end = std::nullopt, .gpus = 1, .cpu_milli = 2000,
           .memory_bytes = int64_t{8} << 30}};
}

// The store a ConfigMap holds (a failure, and an empty store, when it holds none).
api::UserUsage Decoded(const std::string& configmap) {
  auto doc = k8s::json::Parse(configmap);
  if (!doc.ok()) {
    ADD_FAILURE() << "not JSON: " << configmap.substr(0, 300);
    return {};
  }
  auto u = api::DecodeUserUsage(*doc);
  if (u.ok()) return std::move(u).value();
  ADD_FAILURE() << u.status().message();
  return {};
}

// Each user's hours are their runs' spans; the watermark moves to the fold's end; a store with
// no watermark starts where the Team's fold does.
TEST(UserUsageTest, EachUserGetsTheHoursOfTheirRunsSpans) {
  api::UserUsage u{.team = "vision", .history = {}, .folded_until = std::nullopt, .resource_version = ""};
  ASSERT_TRUE(FoldUserUsage(u, TwoUsers(), kStart, kStart + hours(3)));
  ASSERT_EQ(u.history.size(), 1u);
  const base::UsageDay& d = u.history[0];
  EXPECT_DOUBLE_EQ(d.by_namespace.at("alice").gpu, 8.0);        // 4 GPUs for 2 h
  EXPECT_DOUBLE_EQ(d.by_namespace.at("alice").cpu, 16.0);
  EXPECT_DOUBLE_EQ(d.by_namespace.at("alice").memory_gib, 64.0);
  EXPECT_DOUBLE_EQ(d.by_namespace.at("unknown").gpu, 2.0);      // 1 GPU from 1 h to 3 h
  EXPECT_DOUBLE_EQ(d.total.gpu, 10.0);
  EXPECT_TRUE(d.hourly.empty()) << "the per-user store keeps no hourly detail";
  ASSERT_TRUE(u.folded_until.has_value());
  EXPECT_EQ(u.folded_until->point(), kStart + hours(3));
}

// Folded from its own watermark: the same interval twice (a second leader's fold, a retried
// write read back) changes nothing; [a, b) then [b, c) is [a, c); a store behind the Team's
// watermark catches up from its own.
TEST(UserUsageTest, TheStoreFoldsEachSecondOnceFromItsOwnWatermark) {
  api::UserUsage once{.team = "vision", .history = {}, .folded_until = std::nullopt, .resource_version = ""};
  ASSERT_TRUE(FoldUserUsage(once, TwoUsers(), kStart, kStart + hours(5)));
  api::UserUsage split{.team = "vision", .history = {}, .folded_until = std::nullopt, .resource_version = ""};
  ASSERT_TRUE(FoldUserUsage(split, TwoUsers(), kStart, kStart + hours(1) + minutes(7)));
  const api::UserUsage before = split;
  EXPECT_FALSE(FoldUserUsage(split, TwoUsers(), kStart, kStart + hours(1) + minutes(7)));
  EXPECT_FALSE(FoldUserUsage(split, TwoUsers(), kStart, kStart + hours(1)));
  EXPECT_EQ(split.history, before.history);
  EXPECT_EQ(split.folded_until, before.folded_until);
  // `first` (the Team's watermark) later than the store's: the store's own is where it goes on.
  ASSERT_TRUE(FoldUserUsage(split, TwoUsers(), kStart + hours(4), kStart + hours(5)));
  ASSERT_EQ(split.history.size(), 1u);
  EXPECT_NEAR(split.history[0].by_namespace.at("alice").gpu, once.history[0].by_namespace.at("alice").gpu, 1e-9);
  EXPECT_NEAR(split.history[0].by_namespace.at("unknown").gpu, once.history[0].by_namespace.at("unknown").gpu, 1e-9);
  EXPECT_NEAR(split.history[0].total.gpu, once.history[0].total.gpu, 1e-9);
}

// A year of 1000 users on three fleets: each day keeps its 20 largest users and "others" (the
// day's total exact), and the ConfigMap stays under 256 KiB (ConfigMaps hold at most 1 MiB).
TEST(UserUsageTest, AYearOfAThousandUsersStaysSmall) {
  std::vector<sched::UsageSpan> spans;
  for (int i = 0; i < 1000; ++i) {
    spans.push_back({.ns = "user-" + std::to_string(i) + "@example.com", .fleet = "fleet-" + std::to_string(i % 3),
                     .start = kStart + minutes(i), .end = std::nullopt, .gpus = 1 + i % 8, .cpu_milli = 1000 + i,
                     .memory_bytes = int64_t{1} << 30});
  }
  api::UserUsage u{.team = "vision", .history = {}, .folded_until = std::nullopt, .resource_version = ""};
  for (TimePoint t = kStart; t < kStart + hours(24 * 365); t += hours(12)) {
    ASSERT_TRUE(FoldUserUsage(u, spans, t, t + hours(12)));
  }
  EXPECT_EQ(u.history.size(), 3u * sched::kHistoryDays);
  const std::string cm = api::EncodeUserUsage(u, "berth-system");
  EXPECT_LT(cm.size(), 256u * 1024) << "the ConfigMap takes " << cm.size() << " bytes";
  const base::UsageDay& last = u.history.back();
  EXPECT_EQ(last.by_namespace.size(), sched::kNamedNamespaces + 1);
  double sum = 0;
  for (const auto& [user, h] : last.by_namespace) sum += h.gpu;
  EXPECT_NEAR(sum, last.total.gpu, 1e-6);
  EXPECT_EQ(Decoded(cm).history.size(), u.history.size());
}

// The ConfigMap: named after the team, labelled, read back whole; anything else is refused.
TEST(UserUsageTest, TheConfigMapKeepsTheStoreAndRefusesAnythingElse) {
  api::UserUsage u{.team = "vision", .history = {}, .folded_until = std::nullopt, .resource_version = "42"};
  ASSERT_TRUE(FoldUserUsage(u, TwoUsers(), kStart, kStart + hours(3)));
  const std::string cm = api::EncodeUserUsage(u, "berth-system");
  const api::UserUsage back = Decoded(cm);
  EXPECT_EQ(back.team, "vision");
  EXPECT_EQ(back.resource_version, "42");
  EXPECT_EQ(back.folded_until, u.folded_until);
  ASSERT_EQ(back.history.size(), 1u);
  EXPECT_NEAR(back.history[0].by_namespace.at("alice").gpu, 8.0, 1e-9);
  EXPECT_NE(cm.find(R"("name":"berth-usage-vision")"), std::string::npos) << cm;
  EXPECT_NE(cm.find(R"("namespace":"berth-system")"), std::string::npos) << cm;
  EXPECT_NE(cm.find(R"(\"byUser\")"), std::string::npos) << cm;

  auto refused = [](const std::string& text) {
    auto doc = k8s::json::Parse(text);
    return doc.ok() && !api::DecodeUserUsage(*doc).ok();
  };
  EXPECT_TRUE(refused(R"({"metadata":{"name":"berth-usage-vision"},"data":{}})"));  // no label
  EXPECT_TRUE(refused(R"({"metadata":{"name":"berth-usage-vision","labels":{"berth.dev/usage":"users"}},"data":{"usage.json":"{"}})"));
  // A store whose content names another team than its name says.
  std::string other = cm;
  other.replace(other.find("berth-usage-vision"), 18, "berth-usage-nlp");
  EXPECT_TRUE(refused(other));

  // Names stay names: a team name too long for the prefix gets a hash, the same every time.
  const std::string long_team(250, 'a');
  EXPECT_LE(api::UserUsageName(long_team).size(), 253u);
  EXPECT_EQ(api::UserUsageName(long_team), api::UserUsageName(long_team));
  EXPECT_NE(api::UserUsageName(long_team), api::UserUsageName(long_team + "b"));
}

// Issue 47, runs and their wait: the run starts of the store (RunStart, api::UserUsage::starts).
api::UserUsage Empty() {
  return api::UserUsage{.team = "vision", .history = {}, .folded_until = std::nullopt, .resource_version = "", .starts = {}};
}

// Three runs: alice's two (cv, waited 400 s; cv, 2 h) and bob's one (nlp-ns, 5 s).
std::vector<RunStart> Three() {
  return {{.user = "alice", .ns = "cv", .fleet = "a100", .at = kStart + minutes(10), .wait = seconds(400)},
          {.user = "bob", .ns = "nlp-ns", .fleet = "a100", .at = kStart + hours(2), .wait = seconds(5)},
          {.user = "alice", .ns = "cv", .fleet = "a100", .at = kStart + hours(5), .wait = hours(2)}};
}

base::WaitHistogram Waits(const std::vector<int64_t>& secs) {
  base::WaitHistogram h;
  for (int64_t s : secs) h.Add(seconds(s));
  return h;
}

// A start counts in the fold whose interval holds it; a run listed again at the next folds (it
// still holds its blocks) is not counted again, nor is a fold done twice; split folds count
// what one fold counts.
TEST(RunStartsTest, EachStartCountsOnceInTheFoldThatCoversIt) {
  api::UserUsage u = Empty();
  ASSERT_TRUE(FoldUserUsage(u, {}, kStart, kStart + hours(3), Three()));
  ASSERT_EQ(u.starts.size(), 1u);
  EXPECT_EQ(u.starts[0].day, "2026-11-28");
  EXPECT_EQ(u.starts[0].fleet, "a100");
  EXPECT_EQ(u.starts[0].total, Waits({400, 5})) << "the start at 5h is not in [0, 3h)";
  EXPECT_FALSE(FoldUserUsage(u, {}, kStart, kStart + hours(3), Three())) << "the same fold again";
  EXPECT_EQ(u.starts[0].total.Runs(), 2);
  ASSERT_TRUE(FoldUserUsage(u, {}, kStart, kStart + hours(4), Three()));
  EXPECT_EQ(u.starts[0].total.Runs(), 2) << "alice's and bob's starts are behind the watermark";
  ASSERT_TRUE(FoldUserUsage(u, {}, kStart, kStart + hours(6), Three()));
  EXPECT_EQ(u.starts[0].total, Waits({400, 5, 7200}));
  EXPECT_EQ(u.starts[0].by_user.at("alice"), Waits({400, 7200}));
  EXPECT_EQ(u.starts[0].by_user.at("bob"), Waits({5}));
  EXPECT_EQ(u.starts[0].by_namespace.at("cv"), Waits({400, 7200}));
  EXPECT_EQ(u.starts[0].by_namespace.at("nlp-ns"), Waits({5}));

  api::UserUsage once = Empty();
  ASSERT_TRUE(FoldUserUsage(once, {}, kStart, kStart + hours(6), Three()));
  EXPECT_EQ(once.starts, u.starts);
}

// Per UTC day and fleet: a start at 23:59:59 and one at midnight are on two days.
TEST(RunStartsTest, StartsAreKeptPerUtcDayAndFleet) {
  api::UserUsage u = Empty();
  const TimePoint midnight = kStart + hours(24);
  std::vector<RunStart> starts = {
      {.user = "alice", .ns = "cv", .fleet = "a100", .at = midnight - seconds(1), .wait = seconds(30)},
      {.user = "alice", .ns = "cv", .fleet = "a100", .at = midnight, .wait = seconds(30)},
      {.user = "alice", .ns = "cv", .fleet = "h100", .at = midnight, .wait = seconds(30)}};
  ASSERT_TRUE(FoldUserUsage(u, {}, kStart, midnight + hours(1), starts));
  ASSERT_EQ(u.starts.size(), 3u);
  EXPECT_EQ(u.starts[0].day + "/" + u.starts[0].fleet, "2026-11-28/a100");
  EXPECT_EQ(u.starts[1].day + "/" + u.starts[1].fleet, "2026-11-29/a100");
  EXPECT_EQ(u.starts[2].day + "/" + u.starts[2].fleet, "2026-11-29/h100");
  for (const auto& d : u.starts) EXPECT_EQ(d.total.Runs(), 1);
}

// A day and fleet names its first 20 users and namespaces; later ones count under "others", the
// day's total exact.
TEST(RunStartsTest, ADayNamesTwentyUsersAndCountsTheRestUnderOthers) {
  std::vector<RunStart> starts;
  for (int i = 0; i < 30; ++i) {
    starts.push_back({.user = "user-" + std::to_string(100 + i), .ns = "ns-" + std::to_string(100 + i), .fleet = "a100",
                      .at = kStart + minutes(i), .wait = seconds(i)});
  }
  api::UserUsage u = Empty();
  ASSERT_TRUE(FoldUserUsage(u, {}, kStart, kStart + hours(1), starts));
  ASSERT_EQ(u.starts.size(), 1u);
  const base::RunStartsDay& d = u.starts[0];
  EXPECT_EQ(d.total.Runs(), 30);
  EXPECT_EQ(d.by_user.size(), sched::kNamedNamespaces + 1);
  EXPECT_EQ(d.by_user.at(sched::kOthers).Runs(), 10);
  EXPECT_EQ(d.by_namespace.at(sched::kOthers).Runs(), 10);
  EXPECT_TRUE(d.by_user.count("user-100")) << "the first ones keep their names";
  int64_t sum = 0;
  for (const auto& [user, h] : d.by_user) sum += h.Runs();
  EXPECT_EQ(sum, 30);
}

// A year of 1000 users on three fleets, each starting a run at every 12-hour fold: the run starts
// stay within their bound (the newest days keep their names), the store's ConfigMap well under a
// ConfigMap's 1 MiB, and every day's total counts every start.
TEST(RunStartsTest, AYearOfAThousandUsersStartingRunsStaysSmall) {
  api::UserUsage u = Empty();
  for (TimePoint t = kStart; t < kStart + hours(24 * 365); t += hours(12)) {
    std::vector<sched::UsageSpan> spans;
    std::vector<RunStart> starts;
    for (int i = 0; i < 1000; ++i) {
      const std::string user = "user-" + std::to_string(i) + "@example.com";
      const std::string fleet = "fleet-" + std::to_string(i % 3);
      spans.push_back({.ns = user, .fleet = fleet, .start = t + seconds(40 * i), .end = t + hours(1) + seconds(40 * i),
                       .gpus = 1 + i % 8, .cpu_milli = 1000 + i, .memory_bytes = int64_t{1} << 30});
      starts.push_back({.user = user, .ns = "ns-" + std::to_string(i % 50), .fleet = fleet, .at = t + seconds(40 * i),
                        .wait = seconds(i * 7)});
    }
    ASSERT_TRUE(FoldUserUsage(u, spans, t, t + hours(12), starts));
  }
  EXPECT_LE(RunStartsBytes(u.starts), kMaxRunStartsBytes);
  ASSERT_FALSE(u.starts.empty());
  const base::RunStartsDay& last = u.starts.back();
  EXPECT_EQ(last.by_user.size(), sched::kNamedNamespaces + 1) << "the newest day keeps its users";
  EXPECT_EQ(last.total.Runs(), 2 * 333) << "fleet-2: users 2, 5, ... 998, twice a day";
  const std::string cm = api::EncodeUserUsage(u, "berth-system");
  EXPECT_LT(cm.size(), 448u * 1024) << "the ConfigMap takes " << cm.size() << " bytes";
  EXPECT_EQ(Decoded(cm).starts, u.starts);
}

// The ConfigMap keeps the run starts; waits that are not counts of runs per bucket are refused.
TEST(RunStartsTest, TheConfigMapKeepsTheStartsAndRefusesBadWaits) {
  api::UserUsage u = Empty();
  ASSERT_TRUE(FoldUserUsage(u, {}, kStart, kStart + hours(6), Three()));
  const std::string cm = api::EncodeUserUsage(u, "berth-system");
  EXPECT_EQ(Decoded(cm).starts, u.starts);
  EXPECT_NE(cm.find(R"(\"runStarts\")"), std::string::npos) << cm;
  EXPECT_NE(cm.find(R"(\"300\":1)"), std::string::npos) << "keyed by the bucket's lower bound: " << cm;
  for (const char* bad : {R"(\"301\":1)", R"(\"300\":-1)", R"(\"300\":1.5)", R"(\"x\":1)"}) {
    std::string text = cm;
    text.replace(text.find(R"(\"300\":1)"), 9, bad);
    auto doc = k8s::json::Parse(text);
    ASSERT_TRUE(doc.ok()) << text;
    EXPECT_FALSE(api::DecodeUserUsage(*doc).ok()) << bad;
  }
}

}  // namespace
}  // namespace berth::reconcilers
