#pragma once
// How an instance is split into blocks (api.md, "Blocks"): a block is the unit a single-node run
// asks for, and what a Pod gets is `blocks * per_block()`.

#include <cstdint>
#include <optional>
#include <string>

#include "scheduling/types.h"

namespace berth::scheduling {

// A Fleet's `blocks` setting: "auto" or a fixed count. The default is 1 (do not split).
class BlocksSetting {
 public:
  BlocksSetting() = default;
  static BlocksSetting Auto() { return BlocksSetting(true, 0); }
  // `n` should be >= 1; smaller values make every layout built from this setting invalid.
  static BlocksSetting Count(int64_t n) { return BlocksSetting(false, n); }

  bool is_auto() const { return auto_; }
  // The fixed count; meaningless when is_auto().
  int64_t count() const { return count_; }

  friend bool operator==(const BlocksSetting&, const BlocksSetting&) = default;

 private:
  BlocksSetting(bool is_auto, int64_t n) : auto_(is_auto), count_(n) {}
  bool auto_ = false;
  int64_t count_ = 1;
};

// The block layout of one instance. Immutable value; cheap to copy.
class BlockLayout {
 public:
  // More blocks than this on one instance is rejected as Invalid: it would only come from a typo
  // and would make per-instance bookkeeping needlessly large.
  static constexpr int64_t kMaxBlocks = 4096;

  // Splits `allocatable` by `setting`:
  //  - auto: min(whole CPUs, GPUs) when the instance has GPUs, else whole CPUs; at least 1;
  //  - GPUs must divide evenly into the blocks, cpu and memory are split rounding down.
  // Never fails loudly: an impossible split gives a layout with valid() == false and error()
  // holding one sentence, e.g. "8 GPUs cannot be split into 3 blocks".
  static BlockLayout Make(const Resources& allocatable, BlocksSetting setting);

  bool valid() const { return error_.empty(); }
  // Empty when valid().
  const std::string& error() const { return error_; }

  // Number of blocks; 0 when invalid.
  int32_t total_blocks() const { return total_; }
  // Resources of one block (zero when invalid).
  const Resources& per_block() const { return per_block_; }
  // What a Pod given `blocks` blocks gets: blocks * per_block(), with `blocks` clamped to
  // [0, total_blocks()] (so never more than the instance's allocatable, and never an overflow).
  Resources ResourcesFor(int32_t blocks) const;

  // The smallest number of blocks of this instance that covers `request` (cpu, memory and GPUs);
  // 1 when the request asks for nothing. nullopt when no number of blocks of this instance
  // covers it (more than total_blocks(), or a requested resource the instance does not have),
  // and when the layout is invalid.
  std::optional<int32_t> BlocksFor(const Resources& request) const;

 private:
  int32_t total_ = 0;
  Resources per_block_;
  std::string error_;
};

}  // namespace berth::scheduling
