#pragma once
// Stage "reserve" of the cycle (scheduler.h, "Reservation"): for the first run that waits for
// capacity, the instance or instances that free up soonest for it, from the expected ends of the
// running runs and of this cycle's placements (EASY backfill; Kueue and kube-scheduler have no
// equivalent: this is Slurm's backfill reservation). The stage only chooses; the cycle keeps the
// chosen instances (cycle_reservation.cc) and later runs may backfill around them.

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "scheduling/cluster_state.h"
#include "scheduling/filter.h"
#include "scheduling/run_queue.h"
#include "scheduling/types.h"

namespace berth::scheduling::internal {

// Blocks held on an instance until `end` (kUnknownTime when unknown).
struct BusyEntry {
  int32_t instance = 0;
  int64_t end = kUnknownTime;
  int32_t blocks = 0;
};

// When blocks free up on each instance of `state`: its busy entries by end.
class Timeline {
 public:
  Timeline(const ClusterState& state, const std::vector<BusyEntry>& running, const std::vector<BusyEntry>& placed);
  // When instance i has `need` free blocks (now when it has them; kUnknownTime when some run
  // holding them has no known end).
  int64_t TimeWithFree(int32_t i, int32_t need) const;
  // When instance i is wholly free (likewise).
  int64_t TimeWhollyFree(int32_t i) const;

 private:
  const ClusterState& state_;
  std::vector<BusyEntry> busy_;  // by instance, then end
  std::vector<int32_t> begin_;   // busy_ of instance i: [begin_[i], begin_[i+1])
};

// Whether the instance outlives the run started at `start` (its maxDuration, else one ms).
bool LifetimeAllows(const Instance& in, int64_t start, const PendingRun& run);

// What the stage reads: the candidate fleets of the run (indices, sorted) and the blocks it needs
// per instance of each pool (-1: it fits none).
struct ReserveInput {
  const ClusterState& state;
  const Timeline& timeline;
  const std::vector<int32_t>& candidates;
  const std::vector<int32_t>& need;
  // The run's topology level per candidate fleet with topology domains (FleetFilter::levels).
  const std::vector<FleetFilter::LevelUse>& levels;
};

struct ReservationChoice {
  int64_t start = kUnknownTime;
  int32_t fleet = -1;
  std::vector<int32_t> instances;
};

// The soonest start for the run, on available instances kept for no preemptor: a single-node run
// on one instance (earliest, then first by name), a multi-node run on `nodes` instances of one
// topology domain as they wholly free (on a fleet with levels, a domain of the run's level:
// ChooseInDomains in reserve.cc), a gang of slices on slots of one fleet (of one domain when its
// slices are whole instances of a fleet with topology); each chosen instance outlives the run. nullopt: nothing will ever free up for it.
std::optional<ReservationChoice> EarliestReservation(const ReserveInput& input, const PendingRun& run);

}  // namespace berth::scheduling::internal
