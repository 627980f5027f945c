// Learned runtimes for the start-time forecast (issue 33).

#include "scheduling/runtime_history.h"

#include <gtest/gtest.h>

namespace berth::scheduling {
namespace {

using std::chrono::minutes;

const RunShape kOneGpu{1, Resources{8000, 0, 1}};
const RunShape kTwoNodes{2, Resources{64000, 0, 8}};

TEST(RuntimeHistory, NamePatternsForgetCountersAndGeneratedSuffixes) {
  EXPECT_EQ(RuntimeHistory::NamePattern("train-42"), "train-#");
  EXPECT_EQ(RuntimeHistory::NamePattern("train-43"), "train-#");
  EXPECT_EQ(RuntimeHistory::NamePattern("nightly7"), "nightly#");
  EXPECT_EQ(RuntimeHistory::NamePattern("eval-x7k2p"), "eval-*");
  EXPECT_EQ(RuntimeHistory::NamePattern("train-model"), "train-model") << "a word with vowels is no generated suffix";
  EXPECT_EQ(RuntimeHistory::NamePattern("nightly"), "nightly");
  EXPECT_EQ(RuntimeHistory::NamePattern("42"), "42");
}

TEST(RuntimeHistory, TheMedianOfTheSameNamePatternOnceThreeFinished) {
  RuntimeHistory h;
  h.Add({"ml", "train-1", "", kOneGpu, minutes(30)});
  h.Add({"ml", "train-2", "", kOneGpu, minutes(50)});
  EXPECT_FALSE(h.Predict("ml", "train-9", "", kOneGpu, std::nullopt)) << "two samples are not enough";
  h.Add({"ml", "train-3", "", kOneGpu, minutes(40)});
  auto p = h.Predict("ml", "train-9", "", kOneGpu, std::nullopt);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->runtime, minutes(40));
  EXPECT_EQ(p->basis, RuntimePrediction::Basis::kNamePattern);
  EXPECT_EQ(p->samples, 3);
  // Another namespace's runs of that name say nothing about it.
  EXPECT_FALSE(h.Predict("other", "train-9", "", kTwoNodes, std::nullopt));
  // Never beyond the run's own maxDuration.
  EXPECT_EQ(h.Predict("ml", "train-9", "", kOneGpu, minutes(35))->runtime, minutes(35));
  // The spread the median is of, sorted, capped at maxDuration (the sampled forecasts draw from it).
  EXPECT_EQ(p->spread, (std::vector<Duration>{minutes(30), minutes(40), minutes(50)}));
  EXPECT_EQ(h.Predict("ml", "train-9", "", kOneGpu, minutes(35))->spread,
            (std::vector<Duration>{minutes(30), minutes(35), minutes(35)}));
}

TEST(RuntimeHistory, ARunningRunIsExpectedToRunAsLongAsThoseThatRanLongerThanItHasSoFar) {
  RuntimeHistory h;
  for (int m : {10, 20, 30, 40, 50}) h.Add({"ml", "eval-" + std::to_string(m), "", kOneGpu, minutes(m)});
  EXPECT_EQ(h.Predict("ml", "eval-9", "", kOneGpu, std::nullopt)->runtime, minutes(30)) << "not started: the median";
  EXPECT_EQ(h.Predict("ml", "eval-9", "", kOneGpu, std::nullopt, minutes(35))->runtime, minutes(45))
      << "35m in: the median of 40 and 50";
  EXPECT_EQ(h.Predict("ml", "eval-9", "", kOneGpu, std::nullopt, minutes(35))->spread,
            (std::vector<Duration>{minutes(40), minutes(50)}));
  EXPECT_EQ(h.Predict("ml", "eval-9", "", kOneGpu, std::nullopt, minutes(60))->runtime, minutes(60) + std::chrono::seconds(450))
      << "longer than every sample: another quarter of the median";
  EXPECT_EQ(h.Predict("ml", "eval-9", "", kOneGpu, minutes(55), minutes(60))->runtime, minutes(55)) << "never past maxDuration";
}

TEST(RuntimeHistory, ThenTheSameTeamAndShape) {
  RuntimeHistory h;
  for (int i = 0; i < 3; ++i) h.Add({"vision-dev", "job" + std::string(1, static_cast<char>('a' + i)), "vision", kTwoNodes, minutes(90)});
  h.Add({"vision-dev", "solo", "vision", kOneGpu, minutes(5)});
  auto p = h.Predict("vision-prod", "fresh-name", "vision", kTwoNodes, std::nullopt);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->runtime, minutes(90));
  EXPECT_EQ(p->basis, RuntimePrediction::Basis::kTeamShape);
  EXPECT_FALSE(h.Predict("vision-prod", "fresh-name", "vision", kOneGpu, std::nullopt)) << "one 1-GPU sample only";
  EXPECT_FALSE(h.Predict("audio", "fresh-name", "audio", kTwoNodes, std::nullopt)) << "another team";
}

TEST(RuntimeHistory, KeepsTheLastTwentyOfAKeyAndABoundedNumberOfKeys) {
  RuntimeHistory h;
  for (int i = 0; i < 30; ++i) h.Add({"ml", "train-" + std::to_string(i), "", kOneGpu, minutes(i < 10 ? 1000 : 10)});
  EXPECT_EQ(h.Predict("ml", "train-x", "", kOneGpu, std::nullopt)->runtime, minutes(10)) << "the ten oldest are gone";
  for (size_t i = 0; i < RuntimeHistory::kMaxKeys + 5; ++i) h.Add({"ns" + std::to_string(i), "a", "", kOneGpu, minutes(1)});
  EXPECT_LE(h.keys(), 2 * RuntimeHistory::kMaxKeys);
}

// Issue 44, item 11: one tenant that finishes runs of ever new names and shapes (a namespace's
// quota of keys, kMaxKeysPerNamespace of each kind) pushes out only its own history: another
// namespace's name pattern and team shape still predict, and the flood keeps at most its quota.
TEST(RuntimeHistory, ATenantFloodingKeysDoesNotEvictAnotherNamespacesHistory) {
  RuntimeHistory h;
  for (int i = 0; i < 3; ++i) h.Add({"research", "train-" + std::to_string(i), "vision", kOneGpu, minutes(40)});
  // More keys than the whole table holds, each a new name pattern ("flood-a-…": no trailing
  // digits) and a new shape (its CPU), from one namespace.
  for (size_t i = 0; i < RuntimeHistory::kMaxKeys + 500; ++i) {
    std::string suffix;
    for (size_t n = i; suffix.empty() || n > 0; n /= 26) suffix += static_cast<char>('a' + n % 26);
    RunShape shape = kOneGpu;
    shape.per_node.cpu_millis = 1000 + static_cast<int64_t>(i);
    h.Add({"tenant", "flood-" + suffix + "-x", "", shape, minutes(1)});
  }
  EXPECT_EQ(h.keys_of("tenant"), 2 * RuntimeHistory::kMaxKeysPerNamespace);
  EXPECT_EQ(h.keys_of("research"), 2u);
  auto by_name = h.Predict("research", "train-7", "vision", kOneGpu, std::nullopt);
  ASSERT_TRUE(by_name.has_value()) << "the flood pushed out the name pattern of another namespace";
  EXPECT_EQ(by_name->basis, RuntimePrediction::Basis::kNamePattern);
  EXPECT_EQ(by_name->runtime, minutes(40));
  auto by_shape = h.Predict("research", "eval", "vision", kOneGpu, std::nullopt);
  ASSERT_TRUE(by_shape.has_value()) << "the flood pushed out the team shape of another namespace";
  EXPECT_EQ(by_shape->basis, RuntimePrediction::Basis::kTeamShape);
  EXPECT_EQ(by_shape->runtime, minutes(40));
  // The tenant's own most recent keys are the ones it keeps.
  RunShape last = kOneGpu;
  last.per_node.cpu_millis = 1000 + static_cast<int64_t>(RuntimeHistory::kMaxKeys + 499);
  for (int i = 0; i < 2; ++i) h.Add({"tenant", "other", "", last, minutes(1)});
  EXPECT_TRUE(h.Predict("tenant", "new-name", "", last, std::nullopt).has_value());
}

}  // namespace
}  // namespace berth::scheduling
