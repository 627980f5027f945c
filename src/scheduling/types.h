#pragma once
// Vocabulary shared by the whole scheduling core: time and the three resources berth splits.
// The core never reads a clock: every function that needs "now" takes it as a parameter.

#include <chrono>
#include <cstdint>
#include <string>

#include "base/time.h"

namespace berth::scheduling {

using base::Duration;
using base::TimePoint;

// An amount of cpu, memory and GPUs: a per-node request, an instance's allocatable resources or
// one block of an instance. Negative values are treated as 0 everywhere.
struct Resources {
  int64_t cpu_millis = 0;
  int64_t memory_bytes = 0;
  int64_t gpus = 0;

  bool empty() const { return cpu_millis <= 0 && memory_bytes <= 0 && gpus <= 0; }
  friend bool operator==(const Resources&, const Resources&) = default;
};

// A run's topology (Run.spec.topology, issue 48): every node in one domain of the level `key`
// (kRequired), or the innermost level at or above `key` that holds it (kPreferred: climbing only
// when it must, across domains when even the outermost cannot). kNone: the fleet's default
// (preferred at its innermost level; required at the level of a topologyKey).
struct TopologyRequest {
  enum class Mode : uint8_t { kNone, kRequired, kPreferred };
  Mode mode = Mode::kNone;
  std::string key;  // a level of the fleet's topology (FleetSpec::topology)

  friend bool operator==(const TopologyRequest&, const TopologyRequest&) = default;
};

// "4h", "1d12h", "1h30m", "45s", "250ms" (base/time.h: one spelling everywhere).
using base::FormatDuration;

// Human form of a request or capacity, non-zero fields only: "8 GPUs, 32 CPUs, 128Gi memory";
// "nothing" when every field is zero.
std::string FormatResources(const Resources& r);

}  // namespace berth::scheduling
