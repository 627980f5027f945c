#pragma once
// Translates cached API objects (Fleets, Nodes, admitted Runs) into the scheduling core's
// ClusterSnapshot, and keeps what the translation learned that the core does not need (node
// uids, which fleet lost a node to an older one, the durable run counts).
// Pure: no I/O; the caller passes the objects and `now`.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/objects.h"
#include "reconcilers/objects/fleet_types.h"
#include "reconcilers/objects/run_types.h"
#include "reconcilers/state/dra_devices.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

inline constexpr const char* kExpiresAtAnnotation = "berth.dev/expires-at";

// A run that holds blocks (phase Scheduled or Running, or just admitted by this controller).
struct PlacedRun {
  std::string key;  // namespace/name
  std::string uid;
  std::string fleet;
  std::vector<PlacementEntry> placement;
  std::optional<scheduling::TimePoint> expected_end;
  // An admission in flight whose status write is not in the cache yet: it holds its blocks and
  // counts toward maxRunsPerInstance in decisions, but is not written into the durable count
  // (if the status write never lands, the run never started there).
  bool assumed = false;
  // Some of its Pods are not in the cache yet, so the namespace's ResourceQuota usage does not
  // count them: the scheduling cycle charges its placement to the quota (see scheduling/quota.h).
  bool quota_pending = false;
  // Its base priority (spec.priority within its namespace's cap) and when it was placed: a run
  // with a priority may be preempted (issue 17); assumed admissions and holds never are.
  std::optional<int32_t> priority;
  scheduling::TimePoint placed_at{};
  friend bool operator==(const PlacedRun&, const PlacedRun&) = default;
};

// Resources on a node that no current placement accounts for.
// - A Pod of someone else (a DaemonSet's, a static Pod, another scheduler's): its effective request
//   comes off the node's allocatable before the node is cut into blocks.
// - A Pod labelled berth.dev/run that no current placement accounts for, with a berth.dev/blocks
//   annotation of at least 1 (berth's Pod that outlived its placement: its run ended, was retried
//   or deleted, whatever became of the Run; or a Pod someone else so marked): it holds as many
//   blocks as the larger of the annotation and the blocks that cover its requests (issue 44: the
//   kubelet counts its requests whatever the annotation says, and berth's stopping Pod keeps the
//   blocks it was given), until the kubelet has finished it. Those blocks are charged to the
//   Pod's namespace (HoldId). Without such an annotation it is an ordinary Pod (above).
// - A Pod berth pinned for a ticket (labels berth.dev/ticket and berth.dev/rank, issue 45) that
//   no current placement accounts for (its Job suspended by a preemption, a stop or maxDuration,
//   its Pod group deleted, while the Pod stops): it holds the blocks its requests cover (blocks
//   0), charged to its namespace as above.
struct NodeHold {
  std::string node;
  std::string id;                  // namespace/pod
  k8s::PodRequests requests;
  // Its berth.dev/blocks (labelled berth.dev/run); 0 for a ticket's pinned Pod (by its requests
  // alone); nullopt: an ordinary Pod.
  std::optional<int32_t> blocks;
};

// The id of a hold's blocks among the core's running runs: "<namespace>/pod:<name>", so that
// quota and team usage charge them to the Pod's namespace (a run's name never has a ':').
std::string HoldId(std::string_view pod_key);
// Whether a running run's id is a hold's (HoldId).
bool IsHoldId(std::string_view id);

struct InstanceInfo {
  std::string node, uid, fleet;
  std::optional<scheduling::TimePoint> expires_at;
  // Why the instance takes no runs although its Node is Ready: an unreadable berth.dev/expires-at
  // annotation or an allocatable quantity berth cannot read.
  std::string node_problem;
  std::vector<std::string> placed_run_uids;  // committed runs holding blocks here now
  bool all_counted = true;          // every committed placed run is already in the durable count
  int64_t assumed_uncounted = 0;    // assumed placements counted in runs_started but not durable
  scheduling::Resources held_by_others;  // requests of other Pods on the node (see NodeHold)
  int32_t lingering_pods = 0;             // labelled Pods no current placement accounts for here
  // A DRA fleet's instance (issue 49): its devices and the runs whose claims hold them, e.g.
  // "4 devices of gpu.example.com; run team-a/train holds 2"; "" for other fleets.
  std::string devices;
  // Its topology domain as Fleet status shows it (api::FleetInstance::domain).
  std::string domain;

  friend bool operator==(const InstanceInfo&, const InstanceInfo&) = default;
};

struct ClusterView {
  scheduling::ClusterSnapshot snapshot;
  std::map<std::string, InstanceInfo> instances;              // by node name
  std::map<std::string, std::vector<std::string>> conflicts;  // fleet -> nodes an older fleet owns
  std::map<std::string, std::string> invalid_fleets;          // fleet -> why berth cannot use it
  std::map<std::string, const Fleet*> fleets;                 // every fleet by name (owned below)
  // The Fleets the pointers above point to: the view keeps them alive, whatever the informer's
  // cache does meanwhile (a pass that dropped its list of them read freed Fleets).
  std::vector<std::shared_ptr<const Fleet>> owned_fleets;

  // Whether every instance of `run` has the run in its fleet's durable count (so its Pods may be
  // created without losing a count if the controller dies now).
  bool Counted(const PlacedRun& run) const;
};

// Builds the view. A Node matched by several Fleets belongs to the oldest (creationTimestamp,
// then name). Runs started per instance = the Fleet's durable count (by Node uid) plus placed
// runs not yet in it.
// `holds`: see NodeHold; their blocks and requests are taken before any run is placed.
// `devices` (issue 49): the devices of the DeviceClasses of DRA fleets (Fleet.spec.devices), per
// node: an instance's GPUs are its devices less those others' claims hold; a fleet whose class
// has a problem is refused with it (invalid_fleets).
ClusterView BuildClusterView(const std::vector<std::shared_ptr<const Fleet>>& fleets,
                             const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                             const std::vector<PlacedRun>& placed, scheduling::TimePoint now,
                             const std::vector<NodeHold>& holds = {}, const DraDevices* devices = nullptr);
// The same, for placed runs the caller shares (the engine keeps each placed run's record between
// passes).
ClusterView BuildSharedClusterView(const std::vector<std::shared_ptr<const Fleet>>& fleets,
                             const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                             const std::vector<std::shared_ptr<const PlacedRun>>& placed, scheduling::TimePoint now,
                             const std::vector<NodeHold>& holds = {}, const DraDevices* devices = nullptr);

}  // namespace berth::reconcilers
