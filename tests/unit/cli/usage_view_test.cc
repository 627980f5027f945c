// Issue 47: `kubectl berth usage`: its flags (bad ones get a sentence) and the table it prints of
// the queue API's usage answer.

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "cli/command_line.h"
#include "cli/format.h"
#include "cli/usage_view.h"

namespace berth::cli {
namespace {

using Args = std::vector<std::string>;

TEST(UsageView, FlagsAndTheirSentences) {
  auto cl = ParseCommandLine({"usage"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->command, Command::kUsage);
  EXPECT_EQ(cl->since, "7d");
  EXPECT_EQ(cl->by, "team");
  cl = ParseCommandLine({"usage", "--since=30d", "--by", "user", "-o", "json"});
  ASSERT_TRUE(cl.ok()) << cl.status().message();
  EXPECT_EQ(cl->since, "30d");
  EXPECT_EQ(cl->by, "user");
  EXPECT_EQ(cl->output, "json");
  const std::vector<std::pair<Args, std::string>> bad = {
      {{"usage", "--since", "1y"}, "flag --since takes a duration from 1h to 90d (the usage history berth keeps), not \"1y\""},
      {{"usage", "--since", "30m"}, "flag --since takes a duration from 1h to 90d (the usage history berth keeps), not \"30m\""},
      {{"usage", "--since", "91d"}, "flag --since takes a duration from 1h to 90d (the usage history berth keeps), not \"91d\""},
      {{"usage", "--by", "pod"}, "flag --by takes team, namespace, user or fleet, not \"pod\""},
      {{"usage", "-o", "wide"}, "kubectl berth usage supports -o json only"},
  };
  for (const auto& [args, sentence] : bad) {
    auto r = ParseCommandLine(args);
    ASSERT_FALSE(r.ok()) << args.back();
    EXPECT_EQ(r.status().message(), sentence);
  }
  EXPECT_FALSE(ParseCommandLine({"usage", "extra"}).ok());
  EXPECT_FALSE(ParseCommandLine({"queue", "--since", "7d"}).ok()) << "--since is usage's";
}

const char* kAnswer = R"({"kind":"Usage","apiVersion":"queue.berth.dev/v1alpha1","by":"team","since":"7d",
  "from":"2026-11-23","to":"2026-11-30","days":[],"total":{"gpuHours":100,"weightedGpuHours":120,"cpuHours":1000,"memoryGiBHours":0},
  "rows":[{"name":"nlp","gpuHours":60,"weightedGpuHours":60,"cpuHours":600,"memoryGiBHours":2400,"share":0.6,"days":[]},
          {"name":"vision","gpuHours":40,"weightedGpuHours":60,"cpuHours":400,"memoryGiBHours":1600,"share":0.4,"days":[]}]})";

TEST(UsageView, TheTableShowsEachRowAndWeightedHoursWhereTheyDiffer) {
  const std::string want =
      "TEAM     GPU-HOURS   WEIGHTED   SHARE   CPU-HOURS   MEMORY-GIB-HOURS\n"
      "nlp      60.0        60.0       60.0%   600.0       2400.0\n"
      "vision   40.0        60.0       40.0%   400.0       1600.0\n"
      "(UTC days 2026-11-23 to 2026-11-30)\n";
  auto t = FormatUsage(kAnswer);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(*t, want);
  // No fleet weighs differently: no WEIGHTED column.
  std::string same = kAnswer;
  same.replace(same.find(R"("weightedGpuHours":60,"cpuHours":400)"), 22, R"("weightedGpuHours":40,)");
  t = FormatUsage(same);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->find("WEIGHTED"), std::string::npos) << *t;
  // Nothing recorded; not an answer.
  t = FormatUsage(R"({"kind":"Usage","by":"user","from":"2026-11-30","to":"2026-11-30","rows":[]})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, "No usage recorded from 2026-11-30 to 2026-11-30 (UTC days).\n");
  EXPECT_FALSE(FormatUsage(R"({"kind":"Status","message":"no"})").ok());
  EXPECT_FALSE(FormatUsage("not json").ok());
}

// Issue 47: an answer that counts runs gets RUNS and MEDIAN-WAIT, the median as its bucket's bounds.
TEST(UsageView, RunsAndTheBucketOfTheirMedianWait) {
  const char* answer = R"({"kind":"Usage","by":"user","from":"2026-11-23","to":"2026-11-30",
    "total":{"gpuHours":10,"runs":9,"medianWait":{"fromSeconds":300,"underSeconds":600}},
    "rows":[{"name":"alice","gpuHours":4,"weightedGpuHours":4,"share":0.4,"runs":5,"medianWait":{"fromSeconds":300,"underSeconds":600}},
            {"name":"bob","gpuHours":3,"weightedGpuHours":3,"share":0.3,"runs":2,"medianWait":{"fromSeconds":0,"underSeconds":10}},
            {"name":"carol","gpuHours":2,"weightedGpuHours":2,"share":0.2,"runs":1,"medianWait":{"fromSeconds":2592000}},
            {"name":"dave","gpuHours":1,"weightedGpuHours":1,"share":0.1,"runs":0,"medianWait":null}]})";
  auto t = FormatUsage(answer);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const std::vector<std::string> lines = Split(*t, '\n');  // the last one empty: the text ends a line
  ASSERT_EQ(lines.size(), 7u) << *t;
  EXPECT_EQ(lines[0], "USER    GPU-HOURS   SHARE   CPU-HOURS   MEMORY-GIB-HOURS   RUNS   MEDIAN-WAIT");
  // Each row: its name first, its runs and median under RUNS and MEDIAN-WAIT (the en dash and the
  // sign are one column each).
  const size_t runs_at = lines[0].find("RUNS");
  const std::vector<std::tuple<std::string, std::string, std::string>> rows = {
      {"alice", "5", "5m\u201310m"}, {"bob", "2", "<10s"}, {"carol", "1", "\u226530d"}, {"dave", "0", "-"}};
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& [name, runs, median] = rows[i];
    const std::string& line = lines[i + 1];
    EXPECT_EQ(line.rfind(name + " ", 0), 0u) << *t;
    EXPECT_EQ(line.substr(runs_at), runs + std::string(7 - runs.size(), ' ') + median) << *t;
  }
  EXPECT_EQ(lines[5], "(UTC days 2026-11-23 to 2026-11-30)");
}

}  // namespace
}  // namespace berth::cli
