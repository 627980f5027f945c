// Issue 45 (4, 6): when a Job's Pods show it done (workloads::PodsShowJobDone), so its ticket's
// blocks free before the Job controller writes Complete; and the fields of a Job the rule reads.
#include <gtest/gtest.h>

#include "k8s/json.h"
#include "workloads/job.h"

namespace berth::workloads {
namespace {

Workload JobOf(std::optional<int64_t> completions, bool indexed) {
  Workload w;
  w.kind = "Job";
  w.completions = completions;
  w.indexed = indexed;
  return w;
}

PinnedJobPod Pod(const std::string& phase, const std::string& index = {}) { return PinnedJobPod{phase, index}; }

TEST(PodsShowJobDone, NonIndexedWhenSucceededPodsReachCompletions) {
  const Workload job = JobOf(2, false);
  EXPECT_TRUE(PodsShowJobDone(job, {Pod("Succeeded"), Pod("Succeeded")}, 0));
  EXPECT_TRUE(PodsShowJobDone(job, {Pod("Succeeded"), Pod("Succeeded"), Pod("Succeeded")}, 0));
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded")}, 0)) << "one completion short";
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded"), Pod("Running")}, 0)) << "a Pod still runs";
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded"), Pod("Pending")}, 0));
  EXPECT_FALSE(PodsShowJobDone(job, {}, 0));
}

TEST(PodsShowJobDone, AFailedPodNeverFreesEarly) {
  // The Job controller may replace it (backoffLimit) or fail the Job: it decides failure first.
  EXPECT_FALSE(PodsShowJobDone(JobOf(2, false), {Pod("Succeeded"), Pod("Succeeded"), Pod("Failed")}, 0));
  EXPECT_FALSE(PodsShowJobDone(JobOf(std::nullopt, false), {Pod("Succeeded"), Pod("Failed")}, 0));
  EXPECT_FALSE(PodsShowJobDone(JobOf(1, true), {Pod("Succeeded", "0"), Pod("Failed", "0")}, 0));
}

TEST(PodsShowJobDone, AGatedPodWaitingToBePinnedIsLive) {
  EXPECT_FALSE(PodsShowJobDone(JobOf(1, false), {Pod("Succeeded")}, 1));
  EXPECT_FALSE(PodsShowJobDone(JobOf(std::nullopt, false), {Pod("Succeeded")}, 1));
}

TEST(PodsShowJobDone, IndexedWhenEveryIndexSucceeded) {
  const Workload job = JobOf(3, true);
  EXPECT_TRUE(PodsShowJobDone(job, {Pod("Succeeded", "0"), Pod("Succeeded", "1"), Pod("Succeeded", "2")}, 0));
  EXPECT_TRUE(PodsShowJobDone(job, {Pod("Succeeded", "2"), Pod("Succeeded", "0"), Pod("Succeeded", "1"), Pod("Succeeded", "1")}, 0));
  // As many Pods as completions, but index 2 never succeeded: the Job controller makes its Pod.
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded", "0"), Pod("Succeeded", "1"), Pod("Succeeded", "1")}, 0));
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded", "0"), Pod("Succeeded", "1"), Pod("Succeeded", "3")}, 0))
      << "an index out of range covers none";
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded", "0"), Pod("Succeeded", "1"), Pod("Succeeded", "")}, 0))
      << "a Pod without its index covers none";
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded", "0"), Pod("Succeeded", "1"), Pod("Succeeded", "x2")}, 0));
}

TEST(PodsShowJobDone, CompletionsUnsetWhenOneSucceededAndNoneRuns) {
  const Workload job = JobOf(std::nullopt, false);
  EXPECT_TRUE(PodsShowJobDone(job, {Pod("Succeeded")}, 0));
  EXPECT_TRUE(PodsShowJobDone(job, {Pod("Succeeded"), Pod("Succeeded")}, 0));
  EXPECT_FALSE(PodsShowJobDone(job, {Pod("Succeeded"), Pod("Running")}, 0)) << "the others still run";
  EXPECT_FALSE(PodsShowJobDone(job, {}, 0));
  EXPECT_FALSE(PodsShowJobDone(JobOf(std::nullopt, true), {Pod("Succeeded", "0")}, 0)) << "not a Job the API server admits";
}

TEST(PodsShowJobDone, ZeroCompletionsAreTheJobControllersToEnd) {
  EXPECT_FALSE(PodsShowJobDone(JobOf(0, false), {}, 0));
  EXPECT_FALSE(PodsShowJobDone(JobOf(0, true), {}, 0));
}

TEST(JobKind, DecodesCompletionsAndCompletionMode) {
  auto doc = k8s::json::Parse(R"({"metadata":{"name":"j","namespace":"ml","uid":"u"},
    "spec":{"completions":4,"parallelism":2,"completionMode":"Indexed","template":{"spec":{"containers":[]}}}})");
  ASSERT_TRUE(doc.ok());
  auto w = Jobs().Decode(*doc);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->completions.has_value());
  EXPECT_EQ(*w->completions, 4);
  EXPECT_TRUE(w->indexed);
  EXPECT_EQ(w->pods, 2);
  auto plain = k8s::json::Parse(R"({"metadata":{"name":"j","namespace":"ml","uid":"u"},"spec":{"template":{"spec":{}}}})");
  ASSERT_TRUE(plain.ok());
  auto p = Jobs().Decode(*plain);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->completions.has_value());
  EXPECT_FALSE(p->indexed);
}

}  // namespace
}  // namespace berth::workloads
