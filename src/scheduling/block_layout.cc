#include "scheduling/block_layout.h"

#include <algorithm>

namespace berth::scheduling {

namespace {

std::string Gpus(int64_t n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

// ceil(request / per_block), or nullopt when a positive request meets an empty block. Without
// `request + per_block - 1`, which overflows for requests near INT64_MAX (the CRD accepts them).
std::optional<int64_t> BlocksCovering(int64_t request, int64_t per_block) {
  if (request <= 0) return 0;
  if (per_block <= 0) return std::nullopt;
  return request / per_block + (request % per_block != 0 ? 1 : 0);
}

}  // namespace

BlockLayout BlockLayout::Make(const Resources& allocatable, BlocksSetting setting) {
  const int64_t cpu = std::max<int64_t>(allocatable.cpu_millis, 0);
  const int64_t mem = std::max<int64_t>(allocatable.memory_bytes, 0);
  const int64_t gpus = std::max<int64_t>(allocatable.gpus, 0);

  BlockLayout layout;
  int64_t n = setting.count();
  if (setting.is_auto()) {
    const int64_t whole_cpus = cpu / 1000;
    n = std::max<int64_t>(1, gpus > 0 ? std::min(whole_cpus, gpus) : whole_cpus);
  }
  if (n < 1) {
    layout.error_ = "blocks must be at least 1, got " + std::to_string(n);
    return layout;
  }
  if (n > kMaxBlocks) {
    layout.error_ = std::to_string(n) + " blocks are more than the supported maximum of " +
                    std::to_string(kMaxBlocks);
    return layout;
  }
  if (gpus % n != 0) {
    layout.error_ = Gpus(gpus) + " cannot be split into " + std::to_string(n) + " blocks";
    return layout;
  }
  layout.total_ = static_cast<int32_t>(n);
  layout.per_block_ = Resources{cpu / n, mem / n, gpus / n};
  return layout;
}

Resources BlockLayout::ResourcesFor(int32_t blocks) const {
  // Clamped to the instance's blocks: per_block * total_blocks <= allocatable, so no product
  // overflows whatever count a (hand-edited) placement names.
  const int64_t n = std::clamp<int64_t>(blocks, 0, total_);
  return Resources{per_block_.cpu_millis * n, per_block_.memory_bytes * n, per_block_.gpus * n};
}

std::optional<int32_t> BlockLayout::BlocksFor(const Resources& request) const {
  if (!valid()) return std::nullopt;
  int64_t needed = 1;
  for (auto [req, per] : {std::pair{request.cpu_millis, per_block_.cpu_millis},
                          std::pair{request.memory_bytes, per_block_.memory_bytes},
                          std::pair{request.gpus, per_block_.gpus}}) {
    const std::optional<int64_t> n = BlocksCovering(req, per);
    if (!n) return std::nullopt;
    needed = std::max(needed, *n);
  }
  if (needed > total_) return std::nullopt;
  return static_cast<int32_t>(needed);
}

}  // namespace berth::scheduling
