#include "scheduling/block_layout.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>

namespace berth::scheduling {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

Resources Res(int64_t cpu_millis, int64_t mem, int64_t gpus) { return {cpu_millis, mem, gpus}; }

struct LayoutCase {
  std::string name;
  Resources allocatable;
  BlocksSetting setting;
  int32_t total;      // 0 when invalid
  Resources per_block;
  std::string error;  // empty when valid
};

class BlockLayoutMake : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(BlockLayoutMake, SplitsAsSpecified) {
  const LayoutCase& c = GetParam();
  const BlockLayout layout = BlockLayout::Make(c.allocatable, c.setting);
  EXPECT_EQ(layout.valid(), c.error.empty());
  EXPECT_EQ(layout.error(), c.error);
  EXPECT_EQ(layout.total_blocks(), c.total);
  EXPECT_EQ(layout.per_block(), c.per_block);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BlockLayoutMake,
    ::testing::Values(
        LayoutCase{"DefaultIsOneBlock", Res(8000, 32 * kGi, 2), BlocksSetting(), 1,
                   Res(8000, 32 * kGi, 2), ""},
        LayoutCase{"AutoWithGpusIsMinOfCpusAndGpus", Res(32000, 256 * kGi, 8),
                   BlocksSetting::Auto(), 8, Res(4000, 32 * kGi, 1), ""},
        LayoutCase{"AutoWithFewCpusUsesCpus", Res(4000, 64 * kGi, 8), BlocksSetting::Auto(), 4,
                   Res(1000, 16 * kGi, 2), ""},
        LayoutCase{"AutoWithoutGpusIsWholeCpus", Res(2500, 2 * kGi, 0), BlocksSetting::Auto(), 2,
                   Res(1250, kGi, 0), ""},
        LayoutCase{"AutoIsAtLeastOne", Res(500, kGi, 0), BlocksSetting::Auto(), 1,
                   Res(500, kGi, 0), ""},
        LayoutCase{"AutoGpusMustDivide", Res(6000, 64 * kGi, 8), BlocksSetting::Auto(), 0,
                   Res(0, 0, 0), "8 GPUs cannot be split into 6 blocks"},
        LayoutCase{"FixedRoundsDown", Res(10000, 10 * kGi + 1, 0), BlocksSetting::Count(3), 3,
                   Res(3333, (10 * kGi + 1) / 3, 0), ""},
        LayoutCase{"FixedGpusMustDivide", Res(32000, 64 * kGi, 8), BlocksSetting::Count(3), 0,
                   Res(0, 0, 0), "8 GPUs cannot be split into 3 blocks"},
        LayoutCase{"OneGpuSingular", Res(32000, 64 * kGi, 1), BlocksSetting::Count(2), 0,
                   Res(0, 0, 0), "1 GPU cannot be split into 2 blocks"},
        LayoutCase{"ZeroBlocksInvalid", Res(32000, 64 * kGi, 0), BlocksSetting::Count(0), 0,
                   Res(0, 0, 0), "blocks must be at least 1, got 0"},
        LayoutCase{"TooManyBlocksInvalid", Res(32000, 64 * kGi, 0), BlocksSetting::Count(5000),
                   0, Res(0, 0, 0), "5000 blocks are more than the supported maximum of 4096"},
        LayoutCase{"NegativeAllocatableIsZero", Res(-1, -1, -1), BlocksSetting::Count(2), 2,
                   Res(0, 0, 0), ""}),
    [](const ::testing::TestParamInfo<LayoutCase>& info) { return info.param.name; });

struct NeedCase {
  std::string name;
  Resources request;
  std::optional<int32_t> blocks;
};

class BlockLayoutBlocksFor : public ::testing::TestWithParam<NeedCase> {};

// An 8-block instance: 32 CPUs, 256Gi, 8 GPUs -> 4 CPUs, 32Gi, 1 GPU per block.
TEST_P(BlockLayoutBlocksFor, SmallestCoveringCount) {
  const BlockLayout layout = BlockLayout::Make(Res(32000, 256 * kGi, 8), BlocksSetting::Auto());
  ASSERT_EQ(layout.total_blocks(), 8);
  EXPECT_EQ(layout.BlocksFor(GetParam().request), GetParam().blocks);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BlockLayoutBlocksFor,
    ::testing::Values(NeedCase{"NothingNeedsOne", Res(0, 0, 0), 1},
                      NeedCase{"ExactlyOneBlock", Res(4000, 32 * kGi, 1), 1},
                      NeedCase{"CpuDominates", Res(4001, 0, 0), 2},
                      NeedCase{"MemoryDominates", Res(1000, 65 * kGi, 0), 3},
                      NeedCase{"GpuDominates", Res(1000, kGi, 5), 5},
                      NeedCase{"WholeInstance", Res(32000, 256 * kGi, 8), 8},
                      NeedCase{"MoreThanInstanceCannotFit", Res(0, 0, 9), std::nullopt},
                      NeedCase{"NegativeIgnored", Res(-5, -5, -5), 1}),
    [](const ::testing::TestParamInfo<NeedCase>& info) { return info.param.name; });

TEST(BlockLayout, RequestForMissingResourceCannotFit) {
  const BlockLayout cpu_only = BlockLayout::Make(Res(8000, 8 * kGi, 0), BlocksSetting::Count(8));
  EXPECT_EQ(cpu_only.BlocksFor(Res(0, 0, 1)), std::nullopt);
  EXPECT_EQ(cpu_only.BlocksFor(Res(3000, 0, 0)), 3);
}

TEST(BlockLayout, InvalidLayoutFitsNothing) {
  const BlockLayout invalid = BlockLayout::Make(Res(8000, 8 * kGi, 8), BlocksSetting::Count(3));
  EXPECT_EQ(invalid.BlocksFor(Res(0, 0, 0)), std::nullopt);
}

TEST(BlockLayout, PodGetsBlocksTimesPerBlock) {
  const BlockLayout layout = BlockLayout::Make(Res(10000, 10 * kGi, 0), BlocksSetting::Count(3));
  EXPECT_EQ(layout.ResourcesFor(2), Res(6666, 2 * (10 * kGi / 3), 0));
}

// The CRD accepts any int64 quantity for cpu, memory and gpu (and a Node may report any
// allocatable): at those limits the arithmetic stays exact, without overflow (the sanitizer
// stage, hack/sanitize-test.sh, would abort on a signed overflow here).
TEST(BlockLayout, RequestsAtTheInt64LimitNeverOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const BlockLayout small = BlockLayout::Make(Res(8000, 32 * kGi, 8), BlocksSetting::Count(8));
  EXPECT_EQ(small.BlocksFor(Res(kMax, 0, 0)), std::nullopt);
  EXPECT_EQ(small.BlocksFor(Res(0, kMax, 0)), std::nullopt);
  EXPECT_EQ(small.BlocksFor(Res(0, 0, kMax)), std::nullopt);
  EXPECT_EQ(small.BlocksFor(Res(kMax, kMax, kMax)), std::nullopt);

  // An instance as large as int64 allows, in the most blocks a layout may have.
  const BlockLayout huge = BlockLayout::Make(Res(kMax, kMax, 0), BlocksSetting::Count(BlockLayout::kMaxBlocks));
  ASSERT_TRUE(huge.valid()) << huge.error();
  EXPECT_EQ(huge.total_blocks(), BlockLayout::kMaxBlocks);
  EXPECT_EQ(huge.BlocksFor(Res(kMax, 0, 0)), std::nullopt) << "kMax is more than 4096 rounded-down blocks";
  EXPECT_EQ(huge.BlocksFor(Res(huge.per_block().cpu_millis * BlockLayout::kMaxBlocks, 0, 0)),
            std::optional<int32_t>(BlockLayout::kMaxBlocks));
  EXPECT_EQ(huge.BlocksFor(Res(kMax - 1, kMax - 1, 0)), std::nullopt);
  EXPECT_EQ(huge.BlocksFor(Res(huge.per_block().cpu_millis + 1, 1, 0)), std::optional<int32_t>(2));
  const Resources all = huge.ResourcesFor(BlockLayout::kMaxBlocks);
  EXPECT_LE(all.cpu_millis, kMax);
  EXPECT_EQ(all.cpu_millis, huge.per_block().cpu_millis * BlockLayout::kMaxBlocks);

  // Auto on an instance with int64-many CPUs: capped by kMaxBlocks, never computed past it.
  EXPECT_FALSE(BlockLayout::Make(Res(kMax, kMax, 0), BlocksSetting::Auto()).valid());
  EXPECT_FALSE(BlockLayout::Make(Res(kMax, kMax, kMax), BlocksSetting::Count(kMax)).valid());
}

// A placement names the blocks a Pod gets; a count beyond the instance's (only a hand-edited
// status can say that) gives the whole instance, never a product that overflows.
TEST(BlockLayout, ResourcesForIsClampedToTheInstance) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const BlockLayout huge = BlockLayout::Make(Res(kMax, kMax, 4096), BlocksSetting::Count(4096));
  ASSERT_TRUE(huge.valid()) << huge.error();
  const Resources all = huge.ResourcesFor(4096);
  EXPECT_EQ(huge.ResourcesFor(std::numeric_limits<int32_t>::max()), all);
  EXPECT_EQ(huge.ResourcesFor(-5), Res(0, 0, 0));
  EXPECT_EQ(all.gpus, 4096);
  EXPECT_LE(all.cpu_millis, kMax);
}

TEST(Format, Durations) {
  EXPECT_EQ(FormatDuration(std::chrono::hours(4)), "4h");
  EXPECT_EQ(FormatDuration(std::chrono::minutes(90)), "1h30m");
  EXPECT_EQ(FormatDuration(std::chrono::seconds(45)), "45s");
  EXPECT_EQ(FormatDuration(Duration(250)), "250ms");
  // One spelling for one value in every message (base/time.h), days included, as specs write them.
  EXPECT_EQ(FormatDuration(std::chrono::hours(36)), "1d12h");
  EXPECT_EQ(FormatDuration(Duration(-5)), "-5ms");
}

TEST(Format, Resources) {
  EXPECT_EQ(FormatResources(Res(32000, 128 * kGi, 8)), "8 GPUs, 32 CPUs, 128Gi memory");
  EXPECT_EQ(FormatResources(Res(500, 0, 1)), "1 GPU, 500m CPU");
  EXPECT_EQ(FormatResources(Res(1000, 1536 * 1024 * 1024LL, 0)), "1 CPU, 1536Mi memory");
  EXPECT_EQ(FormatResources(Res(0, 0, 0)), "nothing");
}

}  // namespace
}  // namespace berth::scheduling
