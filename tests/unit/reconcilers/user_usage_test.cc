// Issue 47: a Team's per-user usage store (api::UserUsage, a ConfigMap in berth's namespace): the
// fold from its own watermark (FoldUserUsage), its size bound, and the ConfigMap's codec.

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

}  // namespace
}  // namespace berth::reconcilers
