#include "scheduling/cycle.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

bool Cycle::PlaceSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                        int64_t end) {
  NamespaceQuota* quota = QuotaOf(run.id);
  const QuotaAndShare room = RoomOf(quota);
  const SingleFit best = capacity_.BestSingle(run, rule, backfill, room.limits() ? &room : nullptr);
  if (best.fit.instance < 0) return false;
  PlaceSingleOn(run, best, quota, end);
  return true;
}

void Cycle::PlaceSingleOn(const PendingRun& run, const SingleFit& best, NamespaceQuota* quota, int64_t end) {
  const Instance& in = state_.instances[best.fit.instance];
  Placement placement;
  placement.run_id = run.id;
  placement.fleet = state_.fleets[in.fleet].spec->name;
  placement.ranks.push_back(RankPlacement{0, in.spec->name, best.need,
                                          state_.pools[in.pool].layout.ResourcesFor(best.need)});
  placement.takes_unasked_gpus = best.waste;
  out_.placements.push_back(std::move(placement));
  if (quota != nullptr) ChargeQuota(*quota, UseOn(in, best.need), GpuResource(in.fleet));
  if (run_team_ >= 0) teams_.Charge(run_team_, state_.fleets[in.fleet].spec->name, state_.pools[in.pool].layout.ResourcesFor(best.need));
  capacity_.Take(best.fit.instance, best.need, end);
}

void Cycle::PlaceMulti(const PendingRun& run, int32_t fleet,
                       std::vector<CapacityIndex::Key>& chosen, int64_t end) {
  std::sort(chosen.begin(), chosen.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  Placement placement;
  placement.run_id = run.id;
  placement.fleet = state_.fleets[fleet].spec->name;
  placement.ranks.reserve(chosen.size());
  for (size_t r = 0; r < chosen.size(); ++r) {
    const int32_t i = chosen[r].second;
    const Instance& in = state_.instances[i];
    placement.ranks.push_back(RankPlacement{static_cast<int32_t>(r), in.spec->name, in.total,
                                            state_.pools[in.pool].layout.ResourcesFor(in.total)});
    if (run_team_ >= 0) teams_.Charge(run_team_, state_.fleets[fleet].spec->name, placement.ranks.back().resources);
    capacity_.Take(i, in.total, end);
  }
  out_.placements.push_back(std::move(placement));
}

}  // namespace berth::scheduling::internal
