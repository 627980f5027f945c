#include "scheduling/cycle.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

bool Cycle::PlaceSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                        int64_t end) {
  // Preference: no GPU taken by a run that asked for none, then a reserved instance (when
  // allowed, its room is otherwise unused until the reservation starts), then a partly used
  // instance, then the fewest blocks left over, then lifetime, then name.
  CapacityIndex::Fit best;
  int32_t best_need = 0;
  int32_t best_left = 0;
  bool best_whole = false;
  bool best_reserved = false;
  bool best_waste = false;
  NamespaceQuota* quota = QuotaOf(run.id);
  quota_skip_.reset();
  auto consider = [&](const CapacityIndex& index, bool reserved, int32_t f, int32_t p, int32_t need) {
    if (index.LargestFree(p) < need) return;
    const CapacityIndex::Fit fit = index.BestFit(p, need, rule);
    if (fit.instance < 0) return;
    if (quota != nullptr) {
      // The Pod asks for its blocks' resources, which may be more than the run's request.
      if (auto s = CheckQuota(quota, QuotaUse{pools_[p].layout.ResourcesFor(need), 1}, GpuResource(f))) {
        if (!quota_skip_) quota_skip_ = std::move(s);
        return;
      }
    }
    if (run_team_ >= 0) {
      const ShareCheck share = teams_.Check(run_team_, fleets_[f].spec->name, pools_[p].layout.ResourcesFor(need), allow_borrow_);
      if (!share.fits()) {
        if (!share_skip_) {
          share_skip_ = share;
          share_fleet_ = f;
        }
        return;
      }
    }
    const bool whole = fit.free == pools_[p].layout.total_blocks();
    const int32_t left = fit.free - need;
    const bool waste = run.resources.gpus <= 0 && pools_[p].layout.ResourcesFor(need).gpus > 0;
    if (best.instance >= 0) {
      if (waste != best_waste) {
        if (waste) return;
      } else if (reserved != best_reserved) {
        if (!reserved) return;
      } else if (whole != best_whole) {
        if (whole) return;
      } else if (left != best_left) {
        if (left > best_left) return;
      } else if (!rule.Prefers(fit.expiry, fit.instance, best.expiry, best.instance)) {
        return;
      }
    }
    best = fit;
    best_need = need;
    best_left = left;
    best_whole = whole;
    best_reserved = reserved;
    best_waste = waste;
  };
  for (int32_t f : candidates_) {
    for (int32_t p : fleets_[f].pools) {
      const int32_t need = need_[p];
      if (need < 0) continue;
      consider(open_, false, f, p, need);
      if (backfill && !reserved_.empty()) consider(reserved_, true, f, p, need);
    }
  }
  if (best.instance < 0) return false;

  const Instance& in = instances_[best.instance];
  Placement placement;
  placement.run_id = run.id;
  placement.fleet = fleets_[in.fleet].spec->name;
  placement.ranks.push_back(RankPlacement{0, in.spec->name, best_need,
                                          pools_[in.pool].layout.ResourcesFor(best_need)});
  placement.takes_unasked_gpus = best_waste;
  out_.placements.push_back(std::move(placement));
  if (quota != nullptr) ChargeQuota(*quota, UseOn(in, best_need), GpuResource(in.fleet));
  if (run_team_ >= 0) teams_.Charge(run_team_, fleets_[in.fleet].spec->name, pools_[in.pool].layout.ResourcesFor(best_need));
  Take(best.instance, best_need, end);
  return true;
}

bool Cycle::CollectInDomain(int32_t domain, int32_t k, const LifetimeRule& rule,
                            bool include_reserved, std::vector<CapacityIndex::Key>& out) {
  // Reserved instances first when allowed (as for single-node runs), then open ones.
  out.clear();
  const auto limit = static_cast<size_t>(k);
  auto collect = [&](const CapacityIndex::Key& key) {
    if (need_[instances_[key.second].pool] >= 0) out.push_back(key);
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
  for (int32_t f : candidates_) {
    const Fleet& fleet = fleets_[f];
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
  placement.fleet = fleets_[fleet].spec->name;
  placement.ranks.reserve(chosen.size());
  for (size_t r = 0; r < chosen.size(); ++r) {
    const int32_t i = chosen[r].second;
    const Instance& in = instances_[i];
    placement.ranks.push_back(RankPlacement{static_cast<int32_t>(r), in.spec->name, in.total,
                                            pools_[in.pool].layout.ResourcesFor(in.total)});
    if (run_team_ >= 0) teams_.Charge(run_team_, fleets_[fleet].spec->name, placement.ranks.back().resources);
    Take(i, in.total, end);
  }
  out_.placements.push_back(std::move(placement));
}

}  // namespace berth::scheduling::internal
