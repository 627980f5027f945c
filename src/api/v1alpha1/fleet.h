#pragma once
// The Fleet custom resource (docs/api.md "Fleet"): spec and status as typed values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/v1alpha1/meta.h"
#include "k8s/objects.h"

namespace berth::api::v1alpha1 {

// spec.maxGracePeriod's default (10m).
inline constexpr Duration kDefaultMaxGracePeriod{10 * 60 * 1000};

struct FleetSpec {
  std::map<std::string, std::string> node_selector;
  bool blocks_auto = false;  // spec.blocks: "auto"
  int64_t blocks = 1;
  bool cluster_placement = false;  // spec.placement: cluster (else any)
  std::string topology_key;
  // spec.topology (issue 48): the levels' label keys, outermost first; when set, topologyKey is
  // not used.
  std::vector<std::string> topology;
  std::string gpu_resource = "nvidia.com/gpu";
  std::optional<int64_t> max_runs_per_instance;
  std::optional<Duration> instance_lifetime;
  // spec.preemption: policy LowerPriority lets pending runs evict lower-priority runs here; a run
  // placed less than min_runtime ago is not evicted.
  bool preempt_lower_priority = false;
  Duration min_runtime{5 * 60 * 1000};
  // spec.preemption.reclaim (issue 31): Borrowed (true, the default) lets a run within its Team's
  // unused nominal share stop other teams' borrowing runs here; Never (false) does not.
  bool reclaim_borrowed = true;
  // spec.maxGracePeriod (issue 44): the most shutdown time berth gives a Pod it stops. Its Pods
  // are created with at most that terminationGracePeriodSeconds and deleted with at most that.
  Duration max_grace_period{kDefaultMaxGracePeriod};
  // spec.devices.deviceClassName (issue 49): a DRA fleet's GPUs are the devices of this
  // DeviceClass its nodes publish (reconcilers/state/dra_devices.h); it has no extended resource
  // then (gpu_resource is "").
  std::string device_class;
  // spec.costWeight (issue 47): what an hour here counts for fair share and budgets; 0..1000.
  double cost_weight = 1;
  friend bool operator==(const FleetSpec&, const FleetSpec&) = default;
};

// One entry of status.instances.
struct FleetInstance {
  std::string node, uid;
  int64_t total_blocks = 0, busy_blocks = 0;
  int64_t runs_started = 0;
  // Uids of the runs already counted in runs_started that still hold blocks here; makes counting
  // idempotent across controller restarts.
  std::vector<std::string> counted_runs;
  std::optional<Time> expires_at;
  std::optional<InstanceState> state;
  std::string message;
  // What other Pods hold on the node ("cpu 500m, memory 1Gi"), taken off before it is cut into
  // blocks; empty when nothing.
  std::string held_by_other_pods;
  // A DRA fleet's instance (issue 49): its devices and which runs' claims hold them.
  std::string devices;
  // Its topology domain (issue 48): the values of the fleet's levels' labels, outermost first,
  // joined by "/" ("s1/r1"; label values hold no "/"), up to the first level whose label the Node
  // lacks; a topologyKey fleet's: that label's value. "" when the fleet has no levels.
  std::string domain;
  friend bool operator==(const FleetInstance&, const FleetInstance&) = default;
};

struct FleetStatus {
  std::vector<FleetInstance> instances;
  int64_t total_instances = 0, ready_instances = 0, total_blocks = 0, busy_blocks = 0;
  int64_t observed_generation = 0;
  std::vector<Condition> conditions;
  friend bool operator==(const FleetStatus&, const FleetStatus&) = default;
};

// The spec's values as written (FleetDecodeOptions::keep_spelling), for kubectl berth fleets; ""
// when absent.
struct FleetSpelling {
  std::string placement, blocks, instance_lifetime, max_grace_period;
};

struct Fleet {
  k8s::ObjectMeta meta;
  FleetSpec spec;
  FleetStatus status;
  // A spec berth cannot use (the schema should have refused it), naming the field.
  std::string invalid_message;
  // The first status field that could not be read (left at its default), naming it.
  std::string status_problem;
  // The object has a status (an object): berth-controller wrote one.
  bool has_status = false;
  // Set only with FleetDecodeOptions::keep_spelling.
  std::optional<FleetSpelling> spelling;
  // status.instances by uid (DecodeFleet fills it: a view of 10,000 nodes looked each up in a
  // linear scan, 50 million string comparisons a pass). RecordForUid scans when it does not match.
  std::unordered_map<std::string, size_t> instance_by_uid;

  // Whether a Node with these labels is one of the fleet's instances (an empty selector selects
  // nothing).
  bool Selects(const std::map<std::string, std::string>& labels) const;
  const FleetInstance* RecordForUid(const std::string& uid) const;
};

}  // namespace berth::api::v1alpha1
