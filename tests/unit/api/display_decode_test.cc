// What kubectl berth, the dashboard and the webhook read of Runs and Fleets through the codec
// (api/v1alpha1/codec.h): the spec as written, Runs without a name, run lists, spec.priority alone.

#include <gtest/gtest.h>

#include <string>

#include "api/v1alpha1/codec.h"
#include "k8s/json.h"

namespace berth::api::v1alpha1 {
namespace {

namespace json = k8s::json;

json::Document MustParse(const std::string& text) {
  auto d = json::Parse(text);
  EXPECT_TRUE(d.ok()) << text;
  return d.ok() ? std::move(d.value()) : json::Document();
}

constexpr const char* kWritten = R"({"metadata":{"name":"train","namespace":"ml"},
 "spec":{"nodes":2,"resources":{"cpu":"8","memory":"64Gi","gpu":8},"maxDuration":"240m","startTimeout":"off",
  "ttlSecondsAfterFinished":600,"retry":{"onEvents":["error","no-capacity"],"duration":"90m"},
  "template":{"spec":{"containers":[{"name":"main"}]}}}})";

TEST(DisplayDecode, TheSpellingKeepsTheSpecAsWritten) {
  auto doc = MustParse(kWritten);
  RunDecodeOptions options;
  options.keep_spelling = true;
  auto run = DecodeRun(doc, options);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_TRUE(run->spelling.has_value());
  const RunSpelling& w = *run->spelling;
  EXPECT_EQ(w.cpu, "8");
  EXPECT_EQ(w.memory, "64Gi");
  EXPECT_EQ(w.gpu, "8");
  EXPECT_EQ(w.max_duration, "240m");  // not "4h", as FormatDuration would spell it
  EXPECT_EQ(w.start_timeout, "off");
  EXPECT_EQ(w.ttl_seconds_after_finished, "600");
  EXPECT_TRUE(w.has_retry);
  EXPECT_EQ(w.retry_on, (std::vector<std::string>{"error", "no-capacity"}));  // the user's order
  EXPECT_EQ(w.retry_duration, "90m");
  // The typed values are read as always.
  EXPECT_EQ(run->spec.cpu_milli, 8000);
  EXPECT_EQ(run->spec.max_duration, std::chrono::minutes(240));
  // Without the option nothing more is kept (the engine's cache).
  EXPECT_FALSE(DecodeRun(doc)->spelling.has_value());
}

TEST(DisplayDecode, ARunWithoutANameDecodesWhenAskedAndLeniently) {
  auto doc = MustParse(R"({"metadata":{"generateName":"train-"},"spec":{"priority":70}})");
  EXPECT_FALSE(DecodeRun(doc).ok());
  RunDecodeOptions options;
  options.name_required = false;
  auto run = DecodeRun(doc, options);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->spec.priority, 70);
  EXPECT_EQ(DecodeRunLeniently(doc).spec.priority, 70);
  // Not an object: an empty Run, no error.
  auto text = MustParse(R"("a string")");
  EXPECT_EQ(DecodeRunLeniently(text).meta.name, "");
}

TEST(DisplayDecode, ARunListDecodesEachRunAndNamesWhatIsWrong) {
  auto runs = DecodeRunList(R"({"items":[{"metadata":{"name":"a"},"status":{"phase":"Pending"}},
    {"metadata":{}},"x",{"metadata":{"name":"b"}}]})");
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 2u);  // those without a name are not Runs
  EXPECT_EQ((*runs)[0].meta.name, "a");
  EXPECT_EQ((*runs)[0].status.phase, Phase::kPending);
  EXPECT_EQ((*runs)[1].meta.name, "b");
  auto not_json = DecodeRunList("{");
  ASSERT_FALSE(not_json.ok());
  EXPECT_EQ(not_json.status().message().rfind("the run list is not JSON: ", 0), 0u);
  EXPECT_EQ(DecodeRunList(R"({"kind":"RunList"})").status().message(), "no \"items\" array in the run list");
}

TEST(DisplayDecode, RunPriorityOfReadsOnlyTheIntegerPriority) {
  auto set = MustParse(R"({"spec":{"priority":80}})");
  auto unset = MustParse(R"({"spec":{}})");
  auto text = MustParse(R"({"spec":{"priority":"80"}})");
  EXPECT_EQ(RunPriorityOf(&set), 80);
  EXPECT_EQ(RunPriorityOf(&unset), base::kDefaultPriority);
  EXPECT_EQ(RunPriorityOf(&text), base::kDefaultPriority);
  EXPECT_EQ(RunPriorityOf(nullptr), base::kDefaultPriority);
}

TEST(DisplayDecode, AFleetKeepsItsSpellingAndSaysWhetherItHasAStatus) {
  auto doc = MustParse(R"({"metadata":{"name":"a100"},"spec":{"nodeSelector":{"pool":"a"},"blocks":"auto",
    "instanceLifetime":"300m"}})");
  FleetDecodeOptions options;
  options.keep_spelling = true;
  auto fleet = DecodeFleet(doc, options);
  ASSERT_TRUE(fleet.ok());
  ASSERT_TRUE(fleet->spelling.has_value());
  EXPECT_EQ(fleet->spelling->instance_lifetime, "300m");
  EXPECT_EQ(fleet->spelling->blocks, "auto");
  EXPECT_EQ(fleet->spelling->placement, "");  // not written: nothing shown
  EXPECT_FALSE(fleet->has_status);
  auto with_status = MustParse(R"({"metadata":{"name":"a100"},"spec":{"nodeSelector":{"pool":"a"}},"status":{}})");
  EXPECT_TRUE(DecodeFleet(with_status)->has_status);
  EXPECT_FALSE(DecodeFleet(with_status)->spelling.has_value());
}

}  // namespace
}  // namespace berth::api::v1alpha1
