#pragma once
// A Run's priority as the API defines it (docs/api.md): an integer from 0 (lowest) to 100
// (highest), 50 when not given. One definition for the CRD's decoder, the queue, the CLI and the
// dashboard.

#include <cstdint>

namespace berth::base {

inline constexpr int32_t kMinPriority = 0;
inline constexpr int32_t kMaxPriority = 100;
inline constexpr int32_t kDefaultPriority = 50;

}  // namespace berth::base
