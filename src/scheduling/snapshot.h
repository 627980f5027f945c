#pragma once
// The cluster as the scheduling cycle sees it: plain values built by the reconcilers from their
// caches for every cycle. No Kubernetes types; names are the only references between objects.
//
// Names must be unique within their kind (Fleet names, instance names, run ids). The core does
// not trust that: a later duplicate is ignored (the first one in input order wins).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduling/block_layout.h"
#include "scheduling/types.h"

namespace berth::scheduling {

enum class PlacementPolicy { kAny, kCluster };
// Fleet spec.preemption.policy (see scheduling/preemption.h).
enum class PreemptionPolicy { kNever, kLowerPriority };

struct FleetSpec {
  std::string name;
  BlocksSetting blocks;                        // default: 1 block per instance
  PlacementPolicy placement = PlacementPolicy::kAny;
  // Node label that bounds a multi-node run to one domain; empty means no bound.
  std::string topology_key;
  std::optional<int64_t> max_runs_per_instance;  // >= 1; nullopt means unlimited
  PreemptionPolicy preemption = PreemptionPolicy::kNever;
  // A run placed on this fleet's instances less than this long ago is not preempted.
  Duration min_runtime = std::chrono::minutes(5);
};

// One Node matched by a Fleet.
struct InstanceSpec {
  std::string name;   // Node name
  std::string fleet;  // the Fleet it belongs to
  Resources allocatable;
  bool ready = true;
  std::optional<TimePoint> expires_at;  // nullopt: never expires
  int64_t runs_started = 0;             // durable count kept in Fleet status
  // Value of the fleet's topologyKey label. An instance without the label (nullopt) in a fleet
  // with a topologyKey still takes single-node runs but never a multi-node run.
  std::optional<std::string> topology_domain;
};

// Blocks a placed run holds on one instance.
struct InstanceBlocks {
  std::string instance;
  int32_t blocks = 0;
};

// A run that holds blocks: Scheduled or Running. Busy blocks of every instance are derived from
// these (one source of truth). Blocks on unknown or Invalid instances are ignored; more blocks
// than an instance has count as "all of them".
struct RunningRun {
  std::string id;
  std::vector<InstanceBlocks> placement;
  std::optional<TimePoint> expected_end;  // start + maxDuration; nullopt when unknown/off
};

struct ClusterSnapshot {
  std::vector<FleetSpec> fleets;
  std::vector<InstanceSpec> instances;
  std::vector<RunningRun> running;
};

}  // namespace berth::scheduling
