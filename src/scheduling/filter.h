#pragma once
// Stage "filter" of the cycle (scheduler.h): the fleets a run may use (the ones it names that
// exist, else every fleet) and whether it could ever fit them, whatever is running: a run that
// never could waits with an Unschedulable code (kNoFleet, kFleetNotFound, kNoValidInstance,
// kTooLarge, kNeedsClusterPlacement, kTooManyNodes, kTooManySlices) and goes no further. What
// kube-scheduler's PreFilter does for a Pod.
// A fleet whose maxGracePeriod (FleetSpec::max_grace_seconds) is shorter than the grace period
// the run's Pods have of their own (PendingRun::grace_seconds: a workload's, which berth cannot
// cap) is no candidate: berth could not stop them within it (issue 44). None left of the fleets
// it could use: kGracePeriodTooLong. On a fleet with topology levels it resolves the run's level
// (`levels`, issue 48): a multi-node run that no domain of its required level could ever hold
// waits with kTooManyNodes (`available`: the largest such domain). What is free now (place), the
// namespace's quota and the team's share are the cycle's (cycle.h).

#include <cstdint>
#include <vector>

#include "scheduling/cluster_state.h"
#include "scheduling/cycle_result.h"
#include "scheduling/run_queue.h"

namespace berth::scheduling::internal {

class FleetFilter {
 public:
  explicit FleetFilter(const ClusterState& state);

  // The run's candidate fleets into `candidates`: those it names that exist (else every fleet)
  // whose maxGracePeriod is not shorter than its Pods' grace period.
  void Resolve(const PendingRun& run);
  // Whether the run could ever fit its candidate fleets; sets `need` for their pools. False: the
  // reason says why not.
  bool Fits(const PendingRun& run, WaitReason& reason);
  // A reason whose numbers count the domains that bound the run on reason.fleet, a fleet with
  // `topology` levels: the level they are of (WaitReason::level; none when preferred).
  void NameLevel(const PendingRun& run, WaitReason& reason) const;

  // The current run's candidate fleets, by index, sorted.
  std::vector<int32_t> candidates;
  // Blocks the current run takes per instance, by pool (-1: no fit); set for the candidates' pools.
  std::vector<int32_t> need;
  // The current run's topology on a candidate fleet with topology domains (issue 48, place.h):
  // ResolveTopologyLevel (cluster_state.h); LevelUse{} on other fleets.
  using LevelUse = internal::LevelUse;
  std::vector<LevelUse> levels;  // by fleet; set for the candidates

 private:
  // What a gang's structure check found over its candidate fleets (CheckMultiStructure,
  // CheckGangStructure): `largest` nodes (or slices) one fleet can hold at once, in `largest_fleet`.
  struct StructureTally {
    int64_t valid = 0;
    int64_t invalid = 0;
    bool any_fit = false;
    int64_t largest = 0;
    int32_t largest_fleet = -1;
  };
  // Takes the fleets whose maxGracePeriod is shorter than run.grace_seconds out of `candidates`;
  // grace_fleet_: the one of them with the longest, or -1 when none was taken out.
  void DropShortGrace(const PendingRun& run);
  static void SetNoFleetReason(const PendingRun& run, WaitReason& reason);
  bool CheckSingleStructure(WaitReason& reason) const;
  bool CheckMultiStructure(const PendingRun& run, WaitReason& reason) const;
  bool CheckGangStructure(const PendingRun& run, WaitReason& reason) const;
  // The verdict on a tally: true when `run.nodes` fit one fleet; else the reason (no valid
  // instance, too large for any instance, or `too_many`: more nodes than the largest fleet holds).
  static bool StructureVerdict(const StructureTally& t, const PendingRun& run, WaitCode too_many, WaitReason& reason);
  // Valid instances of a domain that can hold the current run (its subdomains' too).
  int64_t FittingInstances(int32_t domain) const;
  // The most of them in one domain that bounds the run on cluster fleet f (levels[f].bound()).
  int64_t LargestBound(int32_t f) const;
  void ResolveLevels(const PendingRun& run);

  const ClusterState& state_;
  int32_t grace_fleet_ = -1;
};

}  // namespace berth::scheduling::internal
