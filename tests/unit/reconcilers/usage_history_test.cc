// Issue 47: Team.status.usageHistory as the codec writes and reads it, and its size bound.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "api/v1alpha1/codec.h"
#include "k8s/json.h"
#include "scheduling/usage.h"

namespace berth::reconcilers {
namespace {

namespace api = api::v1alpha1;
namespace sched = scheduling;
using base::TimePoint;
using std::chrono::hours;
using std::chrono::minutes;

const TimePoint kStart = TimePoint(std::chrono::duration_cast<base::Duration>(std::chrono::seconds(1795824000)));

// Whether two histories hold the same days, names and hours, each figure to a microsecond (the
// JSON reader may differ from the writer in the last bit of a number).
bool Same(const sched::UsageHistory& a, const sched::UsageHistory& b) {
  auto near = [](const base::UsageHours& x, const base::UsageHours& y) {
    auto close = [](double p, double q) { return std::abs(p - q) * 3600 * 1e6 < 1; };
    return close(x.gpu, y.gpu) && close(x.cpu, y.cpu) && close(x.memory_gib, y.memory_gib);
  };
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto &x = a[i], &y = b[i];
    if (x.day != y.day || x.fleet != y.fleet || !near(x.total, y.total) || x.by_namespace.size() != y.by_namespace.size() ||
        x.hourly.size() != y.hourly.size()) {
      return false;
    }
    for (const auto& [ns, h] : x.by_namespace) {
      if (!y.by_namespace.count(ns) || !near(h, y.by_namespace.at(ns))) return false;
    }
    for (const auto& [hour, h] : x.hourly) {
      if (!y.hourly.count(hour) || !near(h, y.hourly.at(hour))) return false;
    }
  }
  return true;
}

// The Team "t" whose status is `patch`'s (a TeamUsagePatch without precondition), decoded.
api::Team Decoded(const std::string& patch) {
  const std::string doc = R"({"apiVersion":"berth.dev/v1alpha1","kind":"Team","metadata":{"name":"t"},)" + patch.substr(1);
  auto parsed = k8s::json::Parse(doc);
  EXPECT_TRUE(parsed.ok()) << doc.substr(0, 300);
  auto team = api::DecodeTeam(*parsed);
  EXPECT_TRUE(team.ok()) << team.status().message();
  return team.ok() ? std::move(team).value() : api::Team{};
}

// What the codec writes it reads back (every figure to the microsecond), with the watermark.
TEST(UsageHistoryTest, TheCodecKeepsEveryFigure) {
  sched::UsageHistory h;
  std::vector<sched::UsageSpan> spans = {
      {.ns = "vision", .fleet = "a100", .start = kStart + minutes(7), .end = kStart + hours(26), .gpus = 8, .cpu_milli = 3500,
       .memory_bytes = int64_t{48} << 30},
      {.ns = "nlp", .fleet = "h100", .start = kStart, .end = std::nullopt, .gpus = 1, .cpu_milli = 0, .memory_bytes = 0}};
  sched::FoldUsage(h, spans, kStart, kStart + hours(30) + minutes(1), {.hourly_since = kStart + hours(24), .max_bytes = sched::kMaxUsageBytes});
  const api::Time until(kStart + hours(30) + minutes(1));
  const api::Team team = Decoded(api::TeamUsagePatch(h, until, ""));
  EXPECT_EQ(team.status_problem, "");
  EXPECT_TRUE(Same(team.status.usage_history, h));
  ASSERT_TRUE(team.status.usage_folded_until.has_value());
  EXPECT_EQ(*team.status.usage_folded_until, until);
  // The decayed usage and the rest of the status are not part of it (TeamStatusPatch writes them).
  EXPECT_EQ(api::TeamUsagePatch(h, until, "").find("\"usage\""), std::string::npos);
}

// A year of usage by 1000 namespaces on three fleets, hours kept for a week (a 7d budget): the
// Team object stays well under etcd's 1.5 MiB (256 KiB here); every kept day keeps its totals,
// the latest days their namespaces and every day of the week its hours.
TEST(UsageHistoryTest, AYearOfAThousandNamespacesStaysSmall) {
  sched::UsageHistory h;
  std::vector<sched::UsageSpan> spans;
  for (int i = 0; i < 1000; ++i) {
    const std::string fleet = i % 3 == 0 ? "a100-cluster-west" : i % 3 == 1 ? "h100-cluster-east" : "t4-inference-pool";
    spans.push_back({.ns = "team-namespace-" + std::to_string(i), .fleet = fleet, .start = kStart + minutes(i), .end = std::nullopt,
                     .gpus = 1 + i % 8, .cpu_milli = 1000 + 7 * i, .memory_bytes = (int64_t{1} << 30) * (1 + i % 64)});
  }
  const TimePoint end = kStart + hours(24 * 365);
  for (TimePoint t = kStart; t < end; t += hours(6)) {
    sched::FoldUsage(h, spans, t, t + hours(6), {.hourly_since = t - hours(24 * 7), .max_bytes = sched::kMaxUsageBytes});
  }
  EXPECT_EQ(h.size(), 3u * sched::kHistoryDays);
  const std::string patch = api::TeamUsagePatch(h, api::Time(end), "");
  EXPECT_LT(patch.size(), 256u * 1024) << "usageHistory takes " << patch.size() << " bytes";
  EXPECT_LE(patch.size(), sched::UsageBytes(h));
  for (size_t i = 0; i < h.size(); ++i) {
    const auto& d = h[i];
    EXPECT_GT(d.total.gpu, 0) << d.day;
    const size_t age = (h.size() - 1 - i) / 3;  // days before the last (three fleets a day)
    if (age < 7) {
      EXPECT_FALSE(d.hourly.empty()) << d.day << " " << d.fleet;
    }
    if (age < 3) {
      EXPECT_EQ(d.by_namespace.size(), sched::kNamedNamespaces + 1) << d.day << " " << d.fleet;
    }
  }
  EXPECT_TRUE(h.front().by_namespace.empty()) << "the oldest days' namespaces go first";
  EXPECT_TRUE(Same(Decoded(patch).status.usage_history, h));
}

}  // namespace
}  // namespace berth::reconcilers
