#pragma once
// A fleet's topology levels as the stages read them (issue 48): the level a run's topology
// resolves to and an instance's path of label values. Shared by the filter stage (filter.h), the
// cluster state's domains (cluster_state.h) and preemption (preemption.h), which plans on the
// snapshot's specs. Defined in cluster_state.cc.

#include <cstdint>
#include <span>
#include <string>

#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling::internal {

// A run's topology on a fleet with topology levels (issue 48, place.h): the level whose domains
// it prefers or requires (-1: the whole fleet). `known` false: the fleet has no level of the
// run's key (it takes no multi-node run of it).
struct LevelUse {
  int32_t level = -1;
  bool required = false;
  bool known = true;
  // The level whose domains bound it: the whole fleet (-1) unless required.
  int32_t bound() const { return required ? level : -1; }
};

// The level `topology` resolves to on `fleet`: its levels (FleetSpec::topology, else a
// topologyKey as one required level); no topology = preferred at the innermost level (required
// at a topologyKey). A fleet without levels: LevelUse{} (the whole fleet).
LevelUse ResolveTopologyLevel(const FleetSpec& fleet, const TopologyRequest& topology);
// An instance's path of label values in its fleet's topology, outermost first, at most one per
// level, up to the first missing label (a topologyKey's value; empty: in no domain).
std::span<const std::string> TopologyPathOf(const FleetSpec& fleet, const InstanceSpec& spec);

}  // namespace berth::scheduling::internal
