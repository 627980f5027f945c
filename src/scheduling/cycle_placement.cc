#include "scheduling/cycle.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

bool Cycle::PlaceSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                        int64_t end) {
  SingleFit best;
  NamespaceQuota* quota = QuotaOf(run.id);
  quota_skip_.reset();
  for (int32_t f : filter_.candidates) {
    for (int32_t p : state_.fleets[f].pools) {
      if (filter_.need[p] < 0) continue;
      OfferSingle(run, rule, quota, open_, false, f, p, best);
      if (backfill && !reserved_.empty()) OfferSingle(run, rule, quota, reserved_, true, f, p, best);
    }
  }
  if (best.fit.instance < 0) return false;
  PlaceSingleOn(run, best, quota, end);
  return true;
}

bool SingleFit::Beats(const SingleFit& other, const LifetimeRule& rule) const {
  // No GPU taken by a run that asked for none, then a reserved instance (when allowed, its room
  // is otherwise unused until the reservation starts), then a partly used instance, then the
  // fewest blocks left over, then lifetime, then name.
  if (waste != other.waste) return !waste;
  if (reserved != other.reserved) return reserved;
  if (whole != other.whole) return !whole;
  if (left != other.left) return left < other.left;
  return rule.Prefers(fit.expiry, fit.instance, other.fit.expiry, other.fit.instance);
}

void Cycle::OfferSingle(const PendingRun& run, const LifetimeRule& rule, NamespaceQuota* quota,
                        const CapacityIndex& index, bool reserved, int32_t f, int32_t p, SingleFit& best) {
  const int32_t need = filter_.need[p];
  if (index.LargestFree(p) < need) return;
  const CapacityIndex::Fit fit = index.BestFit(p, need, rule);
  if (fit.instance < 0 || !RoomAllowed(quota, f, p, need)) return;
  SingleFit candidate;
  candidate.fit = fit;
  candidate.need = need;
  candidate.left = fit.free - need;
  candidate.whole = fit.free == state_.pools[p].layout.total_blocks();
  candidate.reserved = reserved;
  candidate.waste = run.resources.gpus <= 0 && state_.pools[p].layout.ResourcesFor(need).gpus > 0;
  if (best.fit.instance < 0 || candidate.Beats(best, rule)) best = candidate;
}

bool Cycle::RoomAllowed(NamespaceQuota* quota, int32_t f, int32_t p, int32_t need) {
  if (quota != nullptr) {
    // The Pod asks for its blocks' resources, which may be more than the run's request.
    if (auto s = CheckQuota(quota, QuotaUse{state_.pools[p].layout.ResourcesFor(need), 1}, GpuResource(f))) {
      if (!quota_skip_) quota_skip_ = std::move(s);
      return false;
    }
  }
  if (run_team_ >= 0) {
    const ShareCheck share = teams_.Check(run_team_, state_.fleets[f].spec->name, state_.pools[p].layout.ResourcesFor(need), allow_borrow_);
    if (!share.fits()) {
      if (!share_skip_) {
        share_skip_ = share;
        share_fleet_ = f;
      }
      return false;
    }
  }
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
  Take(best.fit.instance, best.need, end);
}

bool Cycle::CollectInDomain(int32_t domain, int32_t k, const LifetimeRule& rule,
                            bool include_reserved, std::vector<CapacityIndex::Key>& out) {
  // Reserved instances first when allowed (as for single-node runs), then open ones.
  out.clear();
  const auto limit = static_cast<size_t>(k);
  auto collect = [&](const CapacityIndex::Key& key) {
    if (filter_.need[state_.instances[key.second].pool] >= 0) out.push_back(key);
    return out.size() < limit;
  };
  if (include_reserved && reserved_.IdleIn(domain) > 0) reserved_.ForEachIdle(domain, rule, collect);
  if (out.size() < limit) open_.ForEachIdle(domain, rule, collect);
  return out.size() == limit;
}

bool Cycle::FindMulti(int32_t nodes, const LifetimeRule& rule, bool include_reserved,
                      std::vector<CapacityIndex::Key>& chosen, int32_t& fleet_out) {
  int32_t best_count = std::numeric_limits<int32_t>::max();
  bool found = false;
  for (int32_t f : filter_.candidates) {
    const Fleet& fleet = state_.fleets[f];
    if (!fleet.cluster) continue;
    if (!include_reserved || reserved_.empty()) {
      if (open_.MaxIdleInDomain(f) < nodes) continue;
      const auto& domains = open_.DomainsByIdle(f);
      for (auto it = domains.lower_bound({nodes, std::numeric_limits<int32_t>::min()});
           it != domains.end() && it->first < best_count; ++it) {
        if (CollectInDomain(it->second, nodes, rule, false, scratch_)) {
          best_count = it->first;
          fleet_out = f;
          chosen.swap(scratch_);
          found = true;
          break;
        }
      }
    } else {
      for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
        const int32_t count = open_.IdleIn(d) + reserved_.IdleIn(d);
        if (count < nodes || count >= best_count) continue;
        if (CollectInDomain(d, nodes, rule, true, scratch_)) {
          best_count = count;
          fleet_out = f;
          chosen.swap(scratch_);
          found = true;
        }
      }
    }
  }
  return found;
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
    Take(i, in.total, end);
  }
  out_.placements.push_back(std::move(placement));
}

void Cycle::Take(int32_t i, int32_t blocks, int64_t end) {
  Instance& in = state_.instances[i];
  Fleet& fleet = state_.fleets[in.fleet];
  Unindex(i);
  if (in.free == in.total) ++fleet.busy;
  in.free -= blocks;
  in.busy += blocks;
  ++in.runs_started;
  if (in.runs_started >= fleet.max_runs) {
    in.availability = Availability::kRetired;
    --fleet.available;
    --fleet.busy;
    ++fleet.retired;
  }
  Index(i);
  placed_entries_.push_back(BusyEntry{i, end, blocks});
  ++version_;
}

}  // namespace berth::scheduling::internal
