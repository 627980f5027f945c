#pragma once
// The cluster as one scheduling cycle works on it (scheduler.h): fleets, their pools of instances
// with one block layout, the topology domains of cluster fleets and the instances, built from the
// snapshot in name order (comparing indices is comparing names). What kube-scheduler's cycle reads
// from its NodeInfo snapshot. The cycle (cycle.h) then marks running runs' blocks busy and keeps
// the counts current as it places; the stages read it (reserve.h).

#include <cstdint>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduling/block_layout.h"
#include "scheduling/capacity_index.h"
#include "scheduling/snapshot.h"
#include "scheduling/topology_levels.h"
#include "scheduling/types.h"

namespace berth::scheduling::internal {

inline constexpr int64_t kUnknownTime = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

inline int64_t Ms(TimePoint t) { return t.time_since_epoch().count(); }

inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  return a + b;
}

// Instances of one fleet with the same block layout: a run needs the same number of blocks on
// each of them.
struct Pool {
  BlockLayout layout;
  int32_t valid_instances = 0;
};

struct Fleet {
  const FleetSpec* spec = nullptr;
  bool cluster = false;
  bool topology = false;            // has topology domains (levels or a topologyKey)
  // Its topology levels' keys, outermost first (FleetSpec::topology, or {topology_key}).
  std::vector<std::string_view> levels;
  bool level_required = false;       // from a topologyKey: a run without topology is required there
  int64_t max_runs = kUnlimited;
  std::vector<int32_t> pools;
  std::vector<int32_t> instances;  // by name
  int32_t domain_begin = 0;        // [domain_begin, domain_end): its domains, by value
  int32_t domain_end = 0;
  // Instance counts. `valid` never changes within a cycle; the others follow placements.
  int32_t valid = 0;
  int32_t invalid = 0;
  int32_t not_ready = 0;
  int32_t expired = 0;
  int32_t retired = 0;
  int32_t available = 0;  // can take new runs
  int32_t busy = 0;       // available with at least one busy block
};

// A topology domain of a cluster fleet (the whole fleet when it has no topology): the path of
// label values of levels 0..level. A fleet's domains are in preorder by path: a domain's
// subdomains are [d + 1, end), its parent comes before it.
struct Domain {
  int32_t fleet = 0;
  int32_t level = -1;   // -1: the whole fleet (no topology)
  int32_t parent = -1;  // -1: a domain of the outermost level
  int32_t end = 0;      // one past its last subdomain
  std::vector<std::pair<int32_t, int32_t>> pool_counts;  // (pool, valid instances)
};

enum class Availability : uint8_t { kAvailable, kInvalid, kNotReady, kExpired, kRetired };

struct Instance {
  const InstanceSpec* spec = nullptr;
  int32_t fleet = -1;
  int32_t pool = -1;
  int32_t domain = -1;  // its innermost domain; -1: takes no multi-node run
  int32_t total = 0;
  int32_t free = 0;
  int64_t busy = 0;  // sum of blocks held, before clamping to `total`
  int64_t expiry = kNoExpiry;
  int64_t runs_started = 0;
  Availability availability = Availability::kAvailable;
  bool reserved = false;
  int32_t held_for = -1;  // a holder of preempt.h: kept for that preempting run
};

// Fleets, pools, domains and instances of one cycle.
struct ClusterState {
  ClusterState(const ClusterSnapshot& snapshot, int64_t now_ms);

  int32_t FindFleet(std::string_view name) const;     // -1: none
  int32_t FindInstance(std::string_view name) const;  // -1: none

  int64_t now = 0;  // ms
  std::vector<Fleet> fleets;
  std::vector<std::string_view> fleet_names;
  std::vector<Pool> pools;
  std::vector<Domain> domains;
  std::vector<Instance> instances;
  std::vector<std::string_view> instance_names;

 private:
  void BuildFleets(const ClusterSnapshot& snapshot);
  void BuildInstances(const ClusterSnapshot& snapshot);
  void BuildDomains();
  void BuildPathDomains(int32_t f);
};

}  // namespace berth::scheduling::internal
