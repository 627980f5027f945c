#pragma once
// The state of one instance as Fleet status reports it (api.md, Fleet `status.instances`).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scheduling/block_layout.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling {

enum class InstanceState {
  kIdle,      // no busy block
  kBusy,      // some blocks busy
  kFull,      // every block busy
  kRetired,   // runs_started >= maxRunsPerInstance: takes no new run
  kExpired,   // expires_at <= now: takes no new run
  kNotReady,  // Node not Ready: takes no new run
  kInvalid,   // the block layout is impossible (or the fleet is unknown)
};

// "Idle", "Busy", "Full", "Retired", "Expired", "NotReady", "Invalid".
std::string_view InstanceStateName(InstanceState state);

// True for Idle, Busy and Full: the states in which an instance may still take new runs
// (Full ones once blocks free up).
inline bool TakesNewRuns(InstanceState state) {
  return state == InstanceState::kIdle || state == InstanceState::kBusy ||
         state == InstanceState::kFull;
}

// Precedence when several apply: Invalid, NotReady, Expired, Retired, then Full, Busy, Idle by
// `busy_blocks` (clamped to the layout's total).
InstanceState ClassifyInstance(const InstanceSpec& instance, const FleetSpec& fleet,
                               const BlockLayout& layout, int64_t busy_blocks, TimePoint now);

struct InstanceStatus {
  std::string name;
  std::string fleet;
  int32_t total_blocks = 0;
  int32_t busy_blocks = 0;
  int64_t runs_started = 0;
  std::optional<TimePoint> expires_at;
  InstanceState state = InstanceState::kIdle;
  std::string message;  // why it takes no new run (empty for Idle, Busy, Full)
  friend bool operator==(const InstanceStatus&, const InstanceStatus&) = default;
};

// One entry per instance in `snapshot.instances`, in input order, with busy blocks derived from
// `snapshot.running`. An instance whose fleet is not in the snapshot is Invalid.
std::vector<InstanceStatus> DescribeInstances(const ClusterSnapshot& snapshot, TimePoint now);

}  // namespace berth::scheduling
