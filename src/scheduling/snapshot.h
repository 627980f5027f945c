#pragma once
// The cluster as the scheduling cycle sees it: plain values built by the reconcilers from their
// caches for every cycle. No Kubernetes types; names are the only references between objects.
//
// Names must be unique within their kind (Fleet names, instance names, run ids). The core does
// not trust that: a later duplicate is ignored (the first one in input order wins).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/priority.h"
#include "scheduling/block_layout.h"
#include "scheduling/types.h"

namespace berth::scheduling {

enum class PlacementPolicy { kAny, kCluster };
// Fleet spec.preemption.policy (see scheduling/preemption.h).
enum class PreemptionPolicy { kNever, kLowerPriority };
// Fleet spec.preemption.reclaim (issue 31, scheduling/teams.h): whether a run within its team's
// unused nominal share may stop other teams' borrowing runs on the fleet.
enum class ReclaimPolicy { kBorrowed, kNever };

struct FleetSpec {
  std::string name;
  BlocksSetting blocks;                        // default: 1 block per instance
  PlacementPolicy placement = PlacementPolicy::kAny;
  // Node label that bounds a multi-node run to one domain; empty means no bound.
  // A one-level `required` topology (ClusterState turns it into topology = {topology_key}).
  std::string topology_key;
  // Topology levels (issue 48): node label keys, outermost first (kubernetes.io/hostname implied
  // last). When set, topology_key is ignored.
  std::vector<std::string> topology;
  std::optional<int64_t> max_runs_per_instance;  // >= 1; nullopt means unlimited
  PreemptionPolicy preemption = PreemptionPolicy::kNever;
  // A run placed on this fleet's instances less than this long ago is not preempted.
  Duration min_runtime = std::chrono::minutes(5);
  // The extended resource its instances' GPUs are (what a namespace's ResourceQuota limits as
  // requests.<gpu_resource>).
  std::string gpu_resource = "nvidia.com/gpu";
  ReclaimPolicy reclaim = ReclaimPolicy::kBorrowed;
  // spec.maxGracePeriod in whole seconds (issue 44): the most shutdown time a Pod on the fleet may
  // take. A run whose Pods' own grace period is longer (PendingRun::grace_seconds) is not placed
  // on it (filter.h).
  int64_t max_grace_seconds = 600;
  // spec.costWeight (issue 47): what an hour here counts for fair share and budgets (the engine's
  // usage; the cycle does not read it).
  double cost_weight = 1;

  friend bool operator==(const FleetSpec&, const FleetSpec&) = default;
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
  // Values of the fleet's topology levels' labels, outermost first, up to the first level whose
  // label the Node lacks (it is in no domain of that level or below).
  std::vector<std::string> topology_path;

  friend bool operator==(const InstanceSpec&, const InstanceSpec&) = default;
};

// Blocks a placed run holds on one instance.
struct InstanceBlocks {
  std::string instance;
  int32_t blocks = 0;

  friend bool operator==(const InstanceBlocks&, const InstanceBlocks&) = default;
};

// A run that holds blocks: Scheduled or Running. Busy blocks of every instance are derived from
// these (one source of truth). Blocks on unknown or Invalid instances are ignored; more blocks
// than an instance has count as "all of them".
struct RunningRun {
  std::string id;
  std::vector<InstanceBlocks> placement;
  std::optional<TimePoint> expected_end;  // start + maxDuration; nullopt when unknown/off
  // Its Pods are not (all) created yet, so the namespace's ResourceQuota usage does not show
  // them: what its placement gives counts toward the namespace's quota usage (see QuotaRoom).
  bool quota_pending = false;

  friend bool operator==(const RunningRun&, const RunningRun&) = default;
};

// How much of one resource a namespace's ResourceQuota allows: the tightest quota object
// (least room) for that resource. Amounts in berth's units (millicores, bytes, counts).
struct QuotaLimit {
  int64_t used = 0;
  int64_t hard = 0;
  std::string quota;  // the ResourceQuota object's name, for messages

  friend bool operator==(const QuotaLimit&, const QuotaLimit&) = default;
};

// Resource names as a ResourceQuota spells them (the "requests." forms; "pods" counts Pods).
inline constexpr const char* kQuotaCpu = "requests.cpu";
inline constexpr const char* kQuotaMemory = "requests.memory";
inline constexpr const char* kQuotaPods = "pods";

// What a namespace's ResourceQuota objects allow berth's Pods there (issue 17). Keys: kQuotaCpu,
// kQuotaMemory, kQuotaPods and "requests.<gpu resource>"; a resource without an entry is
// unlimited. The namespace of a run is the part of its id before '/'.
struct NamespaceQuota {
  std::string ns;
  std::map<std::string, QuotaLimit> limits;

  friend bool operator==(const NamespaceQuota&, const NamespaceQuota&) = default;
};

// What the core knows about a placed run to decide whether it may be preempted
// (scheduling/preemption.h). Runs of `ClusterSnapshot::running` without an entry here (e.g. Pods
// that outlived their run) are never victims.
struct PlacedRunInfo {
  std::string id;                              // as in RunningRun::id
  int32_t priority = base::kDefaultPriority;  // base priority (spec.priority), 0..100
  TimePoint placed_at{};                       // when it was placed (admission time)

  friend bool operator==(const PlacedRunInfo&, const PlacedRunInfo&) = default;
};

// A pending run (the nominee) that preempted in an earlier cycle: the instances it chose and the
// victims being stopped there (issue 17). While the nominee is queued, the cycle offers these
// instances to no other run and never picks its victims again (scheduler.h, "Preemption").
struct Nomination {
  std::string run_id;                  // the nominee (a queued run's id)
  std::string fleet;                   // of the plan
  std::vector<std::string> instances;  // the plan's instances
  std::vector<std::string> victims;    // run ids
  // Some victim still holds blocks or has Pods on those instances (the engine computes it): the
  // nominee waits (Preempting) and nothing more is evicted for it.
  bool victims_stopping = false;
  // The plan is a reclaim (issue 31): while its victims stop, the nominee's reason says so.
  bool reclaim = false;

  friend bool operator==(const Nomination&, const Nomination&) = default;
};

// Amounts per resource where each may be absent (Team shares: a key the manifest does not name).
// Units as in Resources: millicores, bytes, GPUs of the fleet's gpuResource.
struct ResourceAmounts {
  std::optional<int64_t> cpu_millis;
  std::optional<int64_t> memory_bytes;
  std::optional<int64_t> gpus;

  friend bool operator==(const ResourceAmounts&, const ResourceAmounts&) = default;
};

// One entry of Team.spec.shares (issue 31).
struct TeamShare {
  std::string fleet;
  ResourceAmounts nominal;          // guaranteed to the team; an absent key is 0
  ResourceAmounts borrowing_limit;  // most it may use beyond nominal; an absent key: no limit
  ResourceAmounts lending_limit;    // most of its idle nominal others may use; absent: all of it

  friend bool operator==(const TeamShare&, const TeamShare&) = default;
};

// Issue 47 (3): one of a Team's budgets (Team.spec.budgets) as the engine measured it: `used`
// hours of `resource` (each fleet's hours times its costWeight) in the rolling window of `period`
// ending now, over `fleet` ("" : all fleets), against `hours`; `refills_at`: when the window's usage
// falls back under `hours` if the team starts nothing more (its running runs go on as they hold
// now); the epoch when not spent or not known. A spent budget holds the team's runs that ask for
// its resource there until refills_at (the cycle at a later time, e.g. the forecast's, lets them go).
enum class BudgetResource : uint8_t { kGpu, kCpu, kMemory };
std::string_view BudgetResourceName(BudgetResource r);  // "gpu", "cpu", "memory"
struct TeamBudget {
  BudgetResource resource = BudgetResource::kGpu;
  std::string fleet;
  double hours = 0;
  Duration period{0};
  double used = 0;
  TimePoint refills_at{};

  // Spent at `now`: used up to its hours, and not refilled yet (an unknown refill: not yet).
  bool Spent(TimePoint now) const { return used >= hours && (refills_at == TimePoint{} || now < refills_at); }
  friend bool operator==(const TeamBudget&, const TeamBudget&) = default;
};

// A Team as the cycle sees it (issue 31; scheduling/teams.h has the rules). Usage is the decayed
// past usage the engine keeps (Team.status.usage); the cycle only reads it to order borrowers.
struct TeamSpec {
  std::string name;
  // A namespace in two Teams belongs to the older (TeamPrecedes: creation time, then name).
  std::vector<std::string> namespaces;
  TimePoint created{};  // metadata.creationTimestamp (issue 44: the older Team keeps a namespace)
  std::string parent;                   // "" at the top; two levels at most
  int32_t weight = 1;                   // values below 1 count as 1
  std::vector<TeamShare> shares;
  double gpu_hours = 0;  // decayed usage
  double cpu_hours = 0;
  std::vector<TeamBudget> budgets;  // issue 47 (3)

  friend bool operator==(const TeamSpec&, const TeamSpec&) = default;
};

struct ClusterSnapshot {
  std::vector<FleetSpec> fleets;
  std::vector<InstanceSpec> instances;
  std::vector<RunningRun> running;
  // Namespaces with a ResourceQuota that limits what berth creates; others are unlimited.
  std::vector<NamespaceQuota> quotas;
  // Priority and placement time of runs in `running` that may be victims; others never are.
  std::vector<PlacedRunInfo> placed_runs;
  // Preemptions decided in earlier cycles whose nominee has not started yet.
  std::vector<Nomination> nominations;
  // Teams (issue 31). Empty: no team rules at all, the cycle behaves as before teams existed.
  std::vector<TeamSpec> teams;

  friend bool operator==(const ClusterSnapshot&, const ClusterSnapshot&) = default;
};

}  // namespace berth::scheduling
