#pragma once
// Stage "place" of the cycle (scheduler.h): the cycle's mutable capacity and the searches on it.
// It owns what is free on each instance as placements, kept instances and the reservation change
// it, in three CapacityIndexes (capacity_index.h): open instances, instances reserved for the
// reservation's run (only a backfill run may use them) and instances kept for a preempting run
// (no other run may). The searches, for the run the filter stage resolved (filter.h: its
// candidate fleets and the blocks it needs per pool):
//   - single-node best fit (BestSingle: the order of scheduler.h, SingleFit::Beats);
//   - a multi-node run: `nodes` whole idle instances of one topology domain, the domain with the
//     fewest idle instances that holds it (FindMulti); in a fleet with topology levels, by the
//     run's required or preferred level (place_topology.cc);
//   - a gang of slices: its slices one by one by the single-node best fit, in the fleet whose gang
//     takes no GPU unasked, then breaks into the fewest idle instances (FindGang, cycle_gang.cc's
//     header).
// Whether the namespace's quota and the team's share allow a room is the RoomFilter's
// (room_filter.h): a search skips a room it refuses and remembers the first refusal (skipped()),
// which the cycle turns into the run's wait. Every change to what is free bumps version().
// What kube-scheduler's Filter and Score plugins do on its nodes' free resources.

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "scheduling/capacity_index.h"
#include "scheduling/cluster_state.h"
#include "scheduling/filter.h"
#include "scheduling/quota.h"
#include "scheduling/reserve.h"
#include "scheduling/room_filter.h"
#include "scheduling/run_queue.h"
#include "scheduling/teams.h"

namespace berth::scheduling::internal {

// A candidate instance for a single-node run (Capacity::BestSingle).
struct SingleFit {
  CapacityIndex::Fit fit;
  int32_t need = 0;       // blocks the run takes there
  int32_t left = 0;       // free blocks left after it
  bool whole = false;     // the instance is wholly free
  bool reserved = false;  // from the reserved index (a backfill run)
  bool waste = false;     // takes GPUs the run did not ask for
  // Whether this candidate is preferred to `other`: the single-node order of scheduler.h.
  bool Beats(const SingleFit& other, const LifetimeRule& rule) const;
};

// A gang of slices' tentative placement in one fleet (Capacity::TryGangIn): (instance, blocks) in
// the order picked.
struct GangPlan {
  int32_t fleet = -1;
  std::vector<std::pair<int32_t, int32_t>> picks;
  bool waste = false;     // some slice takes GPUs the run did not ask for
  int32_t whole = 0;      // idle instances it breaks into
};

// The first room of the last search that the RoomFilter refused, per rule.
struct RoomSkip {
  std::optional<QuotaShortfall> quota;
  std::optional<ShareCheck> share;
  int32_t share_fleet = -1;  // where the share refused
};

class Capacity {
 public:
  // `state`'s instances and fleet counts are the ones this stage changes; `filter` is the run
  // being considered.
  Capacity(ClusterState& state, const FleetFilter& filter) : state_(state), filter_(filter) {}
  // Counts each fleet's instances by availability and indexes the available ones (their `free`
  // set from what runs).
  void Build();

  // The searches. A null `room` allows every room; each search forgets what the last one skipped.
  // The best single-node fit over open instances, and reserved ones when `backfill`; none:
  // fit.instance < 0.
  SingleFit BestSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill, const RoomFilter* room);
  // `nodes` whole idle instances (allowed by `rule`) of one domain of a candidate cluster fleet:
  // the domain with the fewest idle instances that holds them (reserved ones too when
  // `include_reserved`). With `room`, the best (fleet, domain) whose whole instances it allows: a
  // fleet it refuses is dropped and the next best taken.
  bool FindMulti(int32_t nodes, const LifetimeRule& rule, bool include_reserved, const RoomFilter* room,
                 std::vector<CapacityIndex::Key>& chosen, int32_t& fleet);
  // The gang's slices in fleet f under `rule` (open instances only), picked one by one on the
  // working state as the earlier slices left it; the state is put back. False when fewer than
  // `nodes` fit.
  bool TryGangIn(const PendingRun& run, int32_t f, const LifetimeRule& rule, GangPlan& plan);
  // The best candidate fleet's gang into `best` (no GPU taken unasked, then the fewest idle
  // instances broken into, then fleet name), skipping fleets `room` refuses for the gang's sum.
  bool FindGang(const PendingRun& run, const LifetimeRule& rule, const RoomFilter* room, GangPlan& best);
  // Whether every instance of fleet f that can hold a slice of the current run gives it all its
  // blocks (with topology domains or not); WholeSlicesIn: and f has topology domains (such a gang
  // stays in one domain).
  bool SlicesAreWholeIn(int32_t f) const;
  bool WholeSlicesIn(int32_t f) const { return state_.fleets[f].topology && SlicesAreWholeIn(f); }
  // The most open idle instances in one domain that bounds the current run on cluster fleet f
  // (the level it requires; the whole fleet when preferred on a fleet with levels), what a
  // waiting multi-node run's message counts (place_topology.cc).
  int32_t LargestIdle(int32_t f);
  const RoomSkip& skipped() const { return skipped_; }

  // The changes. Take: `blocks` blocks of instance i to a run ending at `end` (a run started on
  // it). Keep: instance i kept for holder h (-1: no longer kept). Reserve: the reservation's
  // instances.
  void Take(int32_t i, int32_t blocks, int64_t end);
  void Keep(int32_t i, int32_t holder);
  void Reserve(const std::vector<int32_t>& instances);

  const CapacityIndex& open() const { return open_; }
  const CapacityIndex& reserved() const { return reserved_; }
  const CapacityIndex& held() const { return held_; }
  // Bumped by every change above: equal versions see the same free capacity.
  uint64_t version() const { return version_; }
  // This cycle's placements as busy blocks (reserve.h's Timeline).
  const std::vector<BusyEntry>& placed() const { return placed_; }

 private:
  void OfferSingle(const PendingRun& run, const LifetimeRule& rule, const RoomFilter* room, const CapacityIndex& index,
                   bool reserved, int32_t f, int32_t p, SingleFit& best);
  bool Allowed(const RoomFilter* room, int32_t f, const QuotaUse& use);
  // FindMulti without a filter, over the candidates not in `dropped`.
  bool FindMultiIn(int32_t nodes, const LifetimeRule& rule, bool include_reserved, const std::vector<int32_t>& dropped,
                   std::vector<CapacityIndex::Key>& chosen, int32_t& fleet);
  bool CollectInDomain(int32_t domain, int32_t k, const LifetimeRule& rule, bool include_reserved,
                       std::vector<CapacityIndex::Key>& out);
  // Up to k whole idle instances of `domain` itself (not its subdomains) appended to `out`.
  void Append(int32_t domain, int32_t k, const LifetimeRule& rule, bool include_reserved,
              std::vector<CapacityIndex::Key>& out);
  // Topology levels (place_topology.cc). Whether fleet f's search goes by levels (its topology
  // has several levels, or the run may climb out of its one level).
  bool Leveled(int32_t f) const;
  // Idle whole instances per domain of fleet f, subdomains included, into idle_.
  void CountIdle(int32_t f, bool include_reserved);
  int32_t Idle(int32_t d) const { return idle_[d - idle_base_]; }
  // `nodes` instances of one domain of the run's level in fleet f (climbing when preferred) into
  // `out`; `count`: that domain's idle instances.
  bool FindLeveled(int32_t f, int32_t nodes, const LifetimeRule& rule, bool include_reserved,
                   std::vector<CapacityIndex::Key>& out, int32_t& count);
  // k instances of domain d (-1: the whole fleet) appended to `out`, as compactly as its
  // subdomains allow: the best-fitting subdomain that holds them, else the largest first.
  bool Take(int32_t f, int32_t d, int32_t k, const LifetimeRule& rule, bool include_reserved,
            std::vector<CapacityIndex::Key>& out);
  // `nodes` idle instances of one domain of fleet f (open ones) into scratch_.
  bool FindWholeIn(int32_t f, int32_t nodes, const LifetimeRule& rule);
  bool TryWholeSlicesIn(const PendingRun& run, int32_t f, const LifetimeRule& rule, GangPlan& plan);
  CapacityIndex& IndexOf(const Instance& in) { return in.held_for >= 0 ? held_ : in.reserved ? reserved_ : open_; }
  // Whether instance i belongs in an index: available, and when reserved, with a run slot to
  // spare (a backfill run must not retire an instance the reserved run is waiting for).
  bool Indexable(const Instance& in) const {
    if (in.availability != Availability::kAvailable) return false;
    return !in.reserved || in.runs_started + 1 < state_.fleets[in.fleet].max_runs;
  }
  void Index(int32_t i);
  void Unindex(int32_t i);

  ClusterState& state_;
  const FleetFilter& filter_;
  CapacityIndex open_;      // available, unreserved instances with free blocks
  CapacityIndex reserved_;  // available, reserved instances with free blocks
  CapacityIndex held_;      // available instances kept for a preempting run
  uint64_t version_ = 0;
  std::vector<BusyEntry> placed_;
  RoomSkip skipped_;
  // Scratch, reused across runs.
  std::vector<CapacityIndex::Key> scratch_;
  std::vector<int32_t> dropped_;
  std::vector<int32_t> idle_;  // CountIdle's, by domain - idle_base_
  int32_t idle_base_ = 0;
  GangPlan gang_try_;
};

inline void Capacity::Index(int32_t i) {
  const Instance& in = state_.instances[i];
  if (Indexable(in)) IndexOf(in).Add(i, in.pool, in.domain, in.free, in.total, in.expiry);
}

inline void Capacity::Unindex(int32_t i) {
  const Instance& in = state_.instances[i];
  if (Indexable(in)) IndexOf(in).Remove(i, in.pool, in.domain, in.free, in.total, in.expiry);
}

}  // namespace berth::scheduling::internal
