// berth-controller's HTTP API bodies (api/v1alpha1/http_api.h): the /queue page both ways, the
// dashboard's request bodies.

#include "api/v1alpha1/http_api.h"

#include <gtest/gtest.h>

namespace berth::api::v1alpha1 {
namespace {

QueuePage Page() {
  QueuePage p;
  p.generated_at = "2026-11-24T10:12:00Z";
  p.leader = true;
  p.total = 7;
  // A ticket (issue 45): the Run job-train that stands for the Job train.
  p.items.push_back(QueueItem{1, "ml", "job-train", 70, 72, 2, {"a100", "h100"}, "2026-11-24T10:00:00Z", 720,
                              "NoCapacity", "waiting for \"a100\"", "vision", "", std::nullopt, "", "", std::nullopt, "Job", "train"});
  p.items.push_back(QueueItem{3, "cv", "eval", 50, 50, 1, {}, "2026-11-24T10:10:00Z", 120, "", "", "", "", std::nullopt, "", "", std::nullopt, "Run", ""});
  p.items.back().estimated_start_at = "2026-11-24T10:52:00Z";
  p.items.back().starts_in_seconds = 2400;
  p.continue_token = "3";
  return p;
}

TEST(QueuePageTest, TheControllerWritesThePageAsItAlwaysHas) {
  EXPECT_EQ(EncodeQueuePage(Page()),
            R"({"generatedAt":"2026-11-24T10:12:00Z","leader":true,"total":7,"items":[)"
            R"({"position":1,"namespace":"ml","name":"job-train","priority":70,"effectivePriority":72,"nodes":2,)"
            R"("fleets":["a100","h100"],"submittedAt":"2026-11-24T10:00:00Z","waitSeconds":720,"reason":"NoCapacity",)"
            R"("message":"waiting for \"a100\"","team":"vision","kind":"Job","workload":"train"},)"
            R"({"position":3,"namespace":"cv","name":"eval","priority":50,"effectivePriority":50,"nodes":1,)"
            R"("fleets":[],"submittedAt":"2026-11-24T10:10:00Z","waitSeconds":120,"reason":"","message":"",)"
            R"("estimatedStartAt":"2026-11-24T10:52:00Z","startsInSeconds":2400,"kind":"Run"}],)"
            R"("continue":"3"})");
}

TEST(QueuePageTest, WhatIsWrittenReadsBack) {
  auto back = DecodeQueuePage(EncodeQueuePage(Page()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->leader, std::optional<bool>(true));
  EXPECT_EQ(back->total, 7);
  EXPECT_EQ(back->continue_token, "3");
  ASSERT_EQ(back->items.size(), 2u);
  EXPECT_EQ(back->items[0].fleets, (std::vector<std::string>{"a100", "h100"}));
  EXPECT_EQ(back->items[0].message, "waiting for \"a100\"");
  EXPECT_EQ(back->items[1].position, 3);
  EXPECT_EQ(back->items[0].estimated_start_at, "") << "unknown: absent";
  EXPECT_FALSE(back->items[0].starts_in_seconds.has_value());
  EXPECT_EQ(back->items[1].estimated_start_at, "2026-11-24T10:52:00Z");
  EXPECT_EQ(back->items[1].starts_in_seconds, std::optional<int64_t>(2400));
  EXPECT_EQ(back->items[0].kind, "Job");
  EXPECT_EQ(back->items[0].workload, "train");
  EXPECT_EQ(back->items[1].kind, "Run");
  EXPECT_EQ(back->items[1].workload, "");
}

TEST(QueuePageTest, MissingFieldsReadAsTheirDefaultsAndErrorsSayWhy) {
  auto q = DecodeQueuePage(R"({"items":[{"position":2,"name":"x","priority":40},"junk"]})");
  ASSERT_TRUE(q.ok());
  EXPECT_FALSE(q->leader.has_value());
  EXPECT_EQ(q->total, 2);  // the number of items
  ASSERT_EQ(q->items.size(), 1u);
  EXPECT_EQ(q->items[0].effective_priority, 40);
  EXPECT_EQ(q->items[0].nodes, 1);
  EXPECT_EQ(q->items[0].kind, "Run") << "a controller from before issue 45 writes no kind: a Run";
  EXPECT_EQ(DecodeQueuePage("<html>").status().message().rfind("not JSON: ", 0), 0u);
  EXPECT_EQ(DecodeQueuePage(R"({"total":1})").status().message(), "no \"items\" array in the answer");
}

TEST(QueuePageTest, TheCliPrintsTheItemsIndented) {
  QueuePage p;
  p.items.push_back(QueueItem{1, "ml", "a", 50, 50, 1, {"x"}, "", 0, "", "", "", "", std::nullopt, "", "", std::nullopt, "Run", ""});
  const std::string out = EncodeQueueItemsPretty(p.items);
  EXPECT_EQ(out.substr(0, 8), "[\n  {\n  ");
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(EncodeQueueItemsPretty({}), "[]\n");
}

// The dashboard's Teams page: per team its place, weight and usage; per fleet of its status the
// amounts and the limits of its share of that fleet; no namespace.
TEST(TeamsPageTest, TeamsWithTheirFleetsLimitsAndUsage) {
  Team vision;
  vision.meta.name = "vision";
  vision.spec.namespaces = {"vision-dev"};
  vision.spec.parent = "research";
  vision.spec.weight = 2;
  TeamShare share;
  share.fleet = "a100";
  share.nominal.gpus = 16;
  share.borrowing_limit = ResourceAmounts{};
  share.borrowing_limit->gpus = 8;
  vision.spec.shares.push_back(share);
  TeamFleetStatus a100;
  a100.fleet = "a100";
  a100.nominal.gpus = 16;
  a100.used.gpus = 24;
  a100.used.cpu_milli = 64000;
  a100.used.memory_bytes = int64_t{256} << 30;
  a100.borrowed.gpus = 8;
  a100.lent.gpus = 0;
  vision.status.fleets.push_back(a100);
  vision.status.gpu_hours = 340.5;
  vision.status.cpu_hours = 1210.25;
  Team audio;
  audio.meta.name = "audio";
  EXPECT_EQ(EncodeTeamsPage({vision, audio}),
            R"({"items":[{"name":"vision","parent":"research","weight":2,"fleets":[{"fleet":"a100",)"
            R"("nominal":{"gpu":16},"used":{"cpu":"64","memory":"256Gi","gpu":24},"borrowed":{"gpu":8},"lent":{"gpu":0},)"
            R"("borrowingLimit":{"gpu":8}}],"usage":{"gpuHours":340.5,"cpuHours":1210.25,"updatedAt":null},"conditions":[]},)"
            R"({"name":"audio","parent":"","weight":1,"fleets":[],"usage":{"gpuHours":0.0,"cpuHours":0.0,"updatedAt":null},)"
            R"("conditions":[]}]})");
  EXPECT_EQ(EncodeTeamsPage({}), R"({"items":[]})");
}

TEST(DashboardBodiesTest, StopSuspendResumeTakeTheEmptyObjectOnly) {
  EXPECT_TRUE(IsEmptyObjectBody("{}"));
  EXPECT_TRUE(IsEmptyObjectBody(" { } "));
  EXPECT_FALSE(IsEmptyObjectBody(R"({"a":1})"));
  EXPECT_FALSE(IsEmptyObjectBody("[]"));
  EXPECT_FALSE(IsEmptyObjectBody(""));
}

TEST(DashboardBodiesTest, APriorityIsAnIntegerMemberOfAnObject) {
  EXPECT_EQ(DecodePriorityBody(R"({"priority":90})").priority, std::optional<int64_t>(90));
  EXPECT_TRUE(DecodePriorityBody(R"({"priority":"90"})").is_object);
  EXPECT_FALSE(DecodePriorityBody(R"({"priority":"90"})").priority.has_value());
  EXPECT_FALSE(DecodePriorityBody(R"({"priority":9.5})").priority.has_value());
  EXPECT_FALSE(DecodePriorityBody("90").is_object);
  EXPECT_FALSE(DecodePriorityBody("{").is_object);
}

}  // namespace
}  // namespace berth::api::v1alpha1
