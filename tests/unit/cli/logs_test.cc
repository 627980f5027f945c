// kubectl berth logs: which Pods are read, the errors, the log paths and the time keys used to
// follow across reconnects (cli/logs.h; which Pods: runops/log_targets.h).

#include "cli/logs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "fake_transport.h"

namespace berth::cli {
namespace {

using ::testing::HasSubstr;
using runops::LogPath;
using runops::SelectLogTargets;
using runops::SplitLog;
namespace json = k8s::json;

json::Document Parse(const std::string& s) { return std::move(json::Parse(s)).value(); }

std::string RunJson(int nodes, const std::string& status) {
  return R"({"metadata":{"name":"train","namespace":"ml","uid":"u1"},"spec":{"nodes":)" + std::to_string(nodes) +
         R"(},"status":)" + status + "}";
}

std::string PodJson(const std::string& name, int rank, int attempt, const std::string& owner = "u1") {
  return R"({"metadata":{"name":")" + name + R"(","labels":{"berth.dev/run":"train","berth.dev/rank":")" +
         std::to_string(rank) + R"(","berth.dev/attempt":")" + std::to_string(attempt) +
         R"("},"ownerReferences":[{"uid":")" + owner + R"(","controller":true}]},"spec":{"containers":[{"name":"main"},{"name":"sidecar"}]}})";
}

struct Fixture {
  json::Document run;
  std::vector<json::Document> pods;
  std::vector<const json::Value*> Ptrs() const {
    std::vector<const json::Value*> out;
    for (const auto& p : pods) out.push_back(&p);
    return out;
  }
};

TEST(LogsTest, EveryRankOfTheCurrentAttemptInRankOrder) {
  Fixture f{Parse(RunJson(2, R"({"phase":"Running","resubmissions":1})")), {}};
  f.pods.push_back(Parse(PodJson("train-r1-1", 1, 1)));
  f.pods.push_back(Parse(PodJson("train-0", 0, 0)));  // the earlier attempt
  f.pods.push_back(Parse(PodJson("train-r1-0", 0, 1)));
  f.pods.push_back(Parse(PodJson("other-0", 0, 1, "someone-else")));  // not owned by the run
  auto sel = SelectLogTargets(f.run, f.Ptrs(), std::nullopt);
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  ASSERT_EQ(sel->targets.size(), 2u);
  EXPECT_EQ(sel->targets[0].rank, 0);
  EXPECT_EQ(sel->targets[0].pod, "train-r1-0");
  EXPECT_EQ(sel->targets[0].container, "main");
  EXPECT_EQ(sel->targets[1].pod, "train-r1-1");
  EXPECT_EQ(sel->note, "");

  auto one = SelectLogTargets(f.run, f.Ptrs(), 1);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->targets.size(), 1u);
  EXPECT_EQ(one->targets[0].pod, "train-r1-1");
}

TEST(LogsTest, ARetryWaitingForItsPodsShowsTheLastAttemptThatRan) {
  Fixture f{Parse(RunJson(1, R"({"phase":"Pending","reason":"PodFailed","resubmissions":2})")), {}};
  f.pods.push_back(Parse(PodJson("train-r1-0", 0, 1)));
  auto sel = SelectLogTargets(f.run, f.Ptrs(), std::nullopt);
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  ASSERT_EQ(sel->targets.size(), 1u);
  EXPECT_EQ(sel->targets[0].pod, "train-r1-0");
  EXPECT_EQ(sel->note, "run \"train\"'s current attempt (3) has no Pods yet (Pending, PodFailed); showing attempt 2");
}

TEST(LogsTest, ClearErrors) {
  Fixture pending{Parse(RunJson(2, R"({"phase":"Pending","reason":"NoCapacity"})")), {}};
  auto none = SelectLogTargets(pending.run, pending.Ptrs(), std::nullopt);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "run \"train\" has no Pods yet (Pending, NoCapacity)");

  Fixture stopped{Parse(RunJson(1, R"({"phase":"Failed","reason":"Stopped"})")), {}};
  auto gone = SelectLogTargets(stopped.run, stopped.Ptrs(), std::nullopt);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().message(), "run \"train\" has no Pods any more (Failed, Stopped)");

  Fixture two{Parse(RunJson(2, R"({"phase":"Scheduled","reason":"Scheduled"})")), {}};
  two.pods.push_back(Parse(PodJson("train-0", 0, 0)));
  for (int bad : {2, 7, -1}) {
    auto out = SelectLogTargets(two.run, two.Ptrs(), bad);
    ASSERT_FALSE(out.ok()) << bad;
    EXPECT_EQ(out.status().message(),
              "run \"train\" has 2 ranks (0 to 1): --rank " + std::to_string(bad) + " is out of range");
  }
  auto single = SelectLogTargets(Parse(RunJson(1, R"({"phase":"Running"})")), {}, 1);
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.status().message(), "run \"train\" has one rank (0): --rank 1 is out of range");

  auto no_pod_yet = SelectLogTargets(two.run, two.Ptrs(), 1);
  ASSERT_FALSE(no_pod_yet.ok());
  EXPECT_EQ(no_pod_yet.status().message(), "run \"train\" has no Pod for rank 1 yet (Scheduled)");
  auto partial = SelectLogTargets(two.run, two.Ptrs(), std::nullopt);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(partial->targets.size(), 1u);
  EXPECT_EQ(partial->note, "no Pod yet for rank 1");
}

TEST(LogsTest, SplitLogKeepsEmptyLinesAndALastLineWithoutNewline) {
  EXPECT_EQ(SplitLog(""), std::vector<std::string>{});
  EXPECT_EQ(SplitLog("a\n\nb\n"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(SplitLog("a\nb"), (std::vector<std::string>{"a", "b"}));
}

TEST(LogsTest, Paths) {
  LogTarget t{1, "train-1", "main"};
  EXPECT_EQ(LogPath("ml", t, false), "/api/v1/namespaces/ml/pods/train-1/log?container=main");
  EXPECT_EQ(LogPath("ml", t, true), "/api/v1/namespaces/ml/pods/train-1/log?container=main&follow=true&timestamps=true");
  EXPECT_EQ(LogPath("ml", t, true, "2026-11-24T10:00:00Z"),
            "/api/v1/namespaces/ml/pods/train-1/log?container=main&follow=true&timestamps=true&sinceTime=2026-11-24T10%3A00%3A00Z");
}

TEST(LogsTest, TimestampsOrderAsTimes) {
  EXPECT_EQ(SplitTimestamp("2026-11-24T10:00:00.5Z hello world"),
            (std::pair<std::string, std::string>{"2026-11-24T10:00:00.5Z", "hello world"}));
  EXPECT_EQ(SplitTimestamp("2026-11-24T10:00:00Z "), (std::pair<std::string, std::string>{"2026-11-24T10:00:00Z", ""}));
  EXPECT_EQ(SplitTimestamp("no time here"), (std::pair<std::string, std::string>{"", "no time here"}));
  EXPECT_LT(TimeKey("2026-11-24T10:00:00.5Z"), TimeKey("2026-11-24T10:00:01Z"));
  EXPECT_LT(TimeKey("2026-11-24T10:00:00.123456789Z"), TimeKey("2026-11-24T10:00:00.5Z"));
  EXPECT_LT(TimeKey("2026-11-24T10:00:00.12Z"), TimeKey("2026-11-24T10:00:00.5Z"));  // "12" < "5" as text, not as time
  EXPECT_LT(TimeKey("2026-11-24T10:00:00Z"), TimeKey("2026-11-24T10:00:00.000000001Z"));
  EXPECT_EQ(TimeKey("2026-11-24T10:00:00.1Z"), TimeKey("2026-11-24T10:00:00.100000000Z"));
  for (const char* bad : {"", "2026-11-24", "2026-11-24T10:00:00", "2026-11-24T10:00:00+01:00", "2026-11-24T10:00:00.Z",
                          "2026-11-24T10:00:00.1234567890Z", "2026-11-24T1a:00:00Z"}) {
    EXPECT_EQ(TimeKey(bad), "") << bad;
  }
  EXPECT_EQ(WholeSeconds("2026-11-24T10:00:07.25Z"), "2026-11-24T10:00:07Z");
  EXPECT_EQ(WholeSeconds(""), "");
}

TEST(LogsTest, ContainerPhases) {
  auto phase = [](const std::string& status) {
    std::string why;
    ContainerPhase p = PhaseOf(Parse(R"({"status":)" + status + "}"), "main", &why);
    return std::make_pair(p, why);
  };
  EXPECT_EQ(phase(R"({"phase":"Pending"})").first, ContainerPhase::kNotStarted);
  EXPECT_EQ(phase(R"({"phase":"Pending","containerStatuses":[{"name":"main","state":{"waiting":{"reason":"ContainerCreating"}}}]})").first,
            ContainerPhase::kNotStarted);
  auto pull = phase(R"({"phase":"Pending","containerStatuses":[{"name":"main","state":{"waiting":{"reason":"ErrImagePull","message":"not found"}}}]})");
  EXPECT_EQ(pull.first, ContainerPhase::kCannotStart);
  EXPECT_EQ(pull.second, "ErrImagePull: not found");
  EXPECT_EQ(phase(R"({"phase":"Running","containerStatuses":[{"name":"sidecar","state":{"terminated":{}}},{"name":"main","state":{"running":{}}}]})").first,
            ContainerPhase::kRunning);
  EXPECT_EQ(phase(R"({"phase":"Running","containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":0}}}]})").first,
            ContainerPhase::kEnded);
  EXPECT_EQ(phase(R"({"phase":"Failed"})").first, ContainerPhase::kEnded);
}

TEST(LogsTest, PrintLogsPrefixesEveryLineAndReportsARankItCannotRead) {
  testing::FakeTransport t;
  t.Push(200, "hello\n\nrank zero done\n");
  t.Push(400, testing::StatusBody(400, "BadRequest", "container \"main\" in pod \"train-1\" is waiting to start: ContainerCreating"));
  std::ostringstream out, err;
  const bool ok = PrintLogs(t, "ml", {{0, "train-0", "main"}, {1, "train-1", "main"}}, out, err);
  EXPECT_FALSE(ok);
  EXPECT_EQ(out.str(), "[rank 0] hello\n[rank 0] \n[rank 0] rank zero done\n");
  EXPECT_EQ(err.str(), "error: rank 1: container \"main\" in pod \"train-1\" is waiting to start: ContainerCreating\n");
  ASSERT_EQ(t.requests.size(), 2u);
  EXPECT_EQ(t.requests[0].path, "/api/v1/namespaces/ml/pods/train-0/log?container=main");
}

}  // namespace
}  // namespace berth::cli
