#pragma once
// The victim search of the reference scheduler (reference_scheduler.h), internal to it: written
// out plainly and independently of PlanPreemption (preemption.h). For a single-node run, every
// subset of the evictable holders of every eligible instance; for a gang, per domain the
// instances cheapest to clear wholly. Not for production.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "scheduling/preemption.h"
#include "scheduling/reference/reference_model.h"
#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling::reference {

struct VictimSearch {
  const std::vector<const FleetSpec*>& fleets;       // by index, as Inst::fleet
  const std::map<std::string, PlacedRunInfo>& placed;  // possible victims by id
  const std::set<std::string>& excluded;             // victims chosen already
  const RefTeams& teams;
  int64_t now;
  bool reclaiming;  // victims: other teams' runs while they borrow (else lower priorities)

  // The cheapest plan on the eligible instances, if any.
  std::optional<PreemptionPlan> Plan(const PendingRun& run, const std::vector<Inst*>& eligible) const;

 private:
  using Cost = std::tuple<size_t, int32_t, int64_t, Duration>;
  Cost CostOf(const std::vector<const PlacedRunInfo*>& victims) const;
  // The victim a run may evict on `in`, or nullptr.
  const PlacedRunInfo* Evictable(const std::string& id, const Inst& in, const PendingRun& run) const;
  // Per run id, the blocks it holds on `in`.
  static std::map<std::string, int32_t> Holders(const Inst& in);
  // The cheapest plan offered so far: fewest victims, lowest highest priority, lowest sum of
  // priorities, least work lost, then instance names.
  struct PlanChoice {
    std::optional<std::tuple<size_t, int32_t, int64_t, Duration, std::vector<std::string>>> key;
    std::optional<PreemptionPlan> plan;
  };

  void Offer(PlanChoice& choice, int fleet, std::vector<std::string> names,
             std::vector<const PlacedRunInfo*> victims) const;
  // Single-node: every subset of the evictable holders of the instance.
  void PlanOn(const PendingRun& run, const Inst& in, PlanChoice& choice) const;
  // Multi-node: per (cluster fleet, domain), the `nodes` instances cheapest to clear wholly.
  void PlanGang(const PendingRun& run, const std::vector<Inst*>& eligible, PlanChoice& choice) const;
};

}  // namespace berth::scheduling::reference
