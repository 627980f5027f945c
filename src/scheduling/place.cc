#include "scheduling/place.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

void Capacity::Build() {
  std::vector<int32_t> pool_blocks(state_.pools.size());
  for (size_t p = 0; p < state_.pools.size(); ++p) pool_blocks[p] = state_.pools[p].layout.total_blocks();
  std::vector<int32_t> domain_fleet(state_.domains.size());
  for (size_t d = 0; d < state_.domains.size(); ++d) domain_fleet[d] = state_.domains[d].fleet;
  const auto fleet_count = static_cast<int32_t>(state_.fleets.size());
  open_.Reset(pool_blocks, domain_fleet, fleet_count);
  reserved_.Reset(pool_blocks, domain_fleet, fleet_count);
  held_.Reset(pool_blocks, domain_fleet, fleet_count);

  for (int32_t i = 0; i < static_cast<int32_t>(state_.instances.size()); ++i) {
    const Instance& in = state_.instances[i];
    Fleet& fleet = state_.fleets[in.fleet];
    switch (in.availability) {
      case Availability::kInvalid: break;  // counted while building
      case Availability::kNotReady: ++fleet.not_ready; break;
      case Availability::kExpired: ++fleet.expired; break;
      case Availability::kRetired: ++fleet.retired; break;
      case Availability::kAvailable:
        ++fleet.available;
        if (in.free < in.total) ++fleet.busy;
        Index(i);
        break;
    }
  }
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

SingleFit Capacity::BestSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill, const RoomFilter* room) {
  skipped_ = RoomSkip{};
  SingleFit best;
  for (int32_t f : filter_.candidates) {
    for (int32_t p : state_.fleets[f].pools) {
      if (filter_.need[p] < 0) continue;
      OfferSingle(run, rule, room, open_, false, f, p, best);
      if (backfill && !reserved_.empty()) OfferSingle(run, rule, room, reserved_, true, f, p, best);
    }
  }
  return best;
}

void Capacity::OfferSingle(const PendingRun& run, const LifetimeRule& rule, const RoomFilter* room,
                           const CapacityIndex& index, bool reserved, int32_t f, int32_t p, SingleFit& best) {
  const int32_t need = filter_.need[p];
  if (index.LargestFree(p) < need) return;
  const CapacityIndex::Fit fit = index.BestFit(p, need, rule);
  if (fit.instance < 0) return;
  // The Pod asks for its blocks' resources, which may be more than the run's request.
  if (room != nullptr && !Allowed(room, f, QuotaUse{state_.pools[p].layout.ResourcesFor(need), 1})) return;
  SingleFit candidate;
  candidate.fit = fit;
  candidate.need = need;
  candidate.left = fit.free - need;
  candidate.whole = fit.free == state_.pools[p].layout.total_blocks();
  candidate.reserved = reserved;
  candidate.waste = run.resources.gpus <= 0 && state_.pools[p].layout.ResourcesFor(need).gpus > 0;
  if (best.fit.instance < 0 || candidate.Beats(best, rule)) best = candidate;
}

bool Capacity::Allowed(const RoomFilter* room, int32_t f, const QuotaUse& use) {
  RoomVerdict verdict = room->Check(f, use);
  if (verdict.allowed()) return true;
  if (verdict.quota && !skipped_.quota) skipped_.quota = std::move(verdict.quota);
  if (verdict.share && !skipped_.share) {
    skipped_.share = verdict.share;
    skipped_.share_fleet = f;
  }
  return false;
}

bool Capacity::CollectInDomain(int32_t domain, int32_t k, const LifetimeRule& rule, bool include_reserved,
                               std::vector<CapacityIndex::Key>& out) {
  out.clear();
  Append(domain, k, rule, include_reserved, out);
  return out.size() == static_cast<size_t>(k);
}

bool Capacity::FindMulti(int32_t nodes, const LifetimeRule& rule, bool include_reserved, const RoomFilter* room,
                         std::vector<CapacityIndex::Key>& chosen, int32_t& fleet) {
  skipped_ = RoomSkip{};
  dropped_.clear();
  bool found = FindMultiIn(nodes, rule, include_reserved, dropped_, chosen, fleet);
  if (room == nullptr) return found;
  for (; found; found = FindMultiIn(nodes, rule, include_reserved, dropped_, chosen, fleet)) {
    QuotaUse use;
    for (const auto& key : chosen) {
      const Instance& in = state_.instances[key.second];
      AddPod(use, state_.pools[in.pool].layout.ResourcesFor(in.total));
    }
    if (Allowed(room, fleet, use)) break;
    dropped_.push_back(fleet);
  }
  return found;
}

bool Capacity::FindMultiIn(int32_t nodes, const LifetimeRule& rule, bool include_reserved,
                           const std::vector<int32_t>& dropped, std::vector<CapacityIndex::Key>& chosen,
                           int32_t& fleet_out) {
  int32_t best_count = std::numeric_limits<int32_t>::max();
  bool found = false;
  for (int32_t f : filter_.candidates) {
    const Fleet& fleet = state_.fleets[f];
    if (!fleet.cluster || std::find(dropped.begin(), dropped.end(), f) != dropped.end()) continue;
    if (Leveled(f)) {
      int32_t count = 0;
      if (FindLeveled(f, nodes, rule, include_reserved, scratch_, count) && count < best_count) {
        best_count = count;
        fleet_out = f;
        chosen.swap(scratch_);
        found = true;
      }
      continue;
    }
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

bool Capacity::SlicesAreWholeIn(int32_t f) const {
  const Fleet& fleet = state_.fleets[f];
  bool any = false;
  for (int32_t p : fleet.pools) {
    const int32_t need = filter_.need[p];
    if (need < 0) continue;
    if (need != state_.pools[p].layout.total_blocks()) return false;
    any = true;
  }
  return any;
}

bool Capacity::FindWholeIn(int32_t f, int32_t nodes, const LifetimeRule& rule) {
  if (Leveled(f)) {
    int32_t count = 0;
    return FindLeveled(f, nodes, rule, false, scratch_, count);
  }
  if (open_.MaxIdleInDomain(f) < nodes) return false;
  const auto& domains = open_.DomainsByIdle(f);
  for (auto it = domains.lower_bound({nodes, std::numeric_limits<int32_t>::min()}); it != domains.end(); ++it) {
    if (CollectInDomain(it->second, nodes, rule, false, scratch_)) return true;
  }
  return false;
}

bool Capacity::TryWholeSlicesIn(const PendingRun& run, int32_t f, const LifetimeRule& rule, GangPlan& plan) {
  // Idle instances of one domain: the one with the fewest that holds the gang (ties by value);
  // by the run's level in a fleet with levels.
  if (!FindWholeIn(f, run.nodes, rule)) return false;
  for (const CapacityIndex::Key& key : scratch_) {
    const int32_t i = key.second;
    const BlockLayout& layout = state_.pools[state_.instances[i].pool].layout;
    plan.waste |= run.resources.gpus <= 0 && layout.ResourcesFor(layout.total_blocks()).gpus > 0;
    plan.picks.emplace_back(i, layout.total_blocks());
  }
  plan.whole = run.nodes;
  return true;
}

bool Capacity::TryGangIn(const PendingRun& run, int32_t f, const LifetimeRule& rule, GangPlan& plan) {
  plan.fleet = f;
  plan.picks.clear();
  plan.waste = false;
  plan.whole = 0;
  if (WholeSlicesIn(f)) return TryWholeSlicesIn(run, f, rule, plan);
  bool complete = true;
  for (int32_t k = 0; k < run.nodes; ++k) {
    SingleFit best;
    for (int32_t p : state_.fleets[f].pools) {
      if (filter_.need[p] >= 0) OfferSingle(run, rule, nullptr, open_, false, f, p, best);
    }
    if (best.fit.instance < 0) {
      complete = false;
      break;
    }
    const int32_t i = best.fit.instance;
    plan.waste |= best.waste;
    if (best.whole) ++plan.whole;
    plan.picks.emplace_back(i, best.need);
    Unindex(i);
    state_.instances[i].free -= best.need;
    Index(i);
  }
  // Put the working state back (newest first: each step sees the values its Index saw).
  for (auto it = plan.picks.rbegin(); it != plan.picks.rend(); ++it) {
    Unindex(it->first);
    state_.instances[it->first].free += it->second;
    Index(it->first);
  }
  return complete;
}

bool Capacity::FindGang(const PendingRun& run, const LifetimeRule& rule, const RoomFilter* room, GangPlan& best) {
  skipped_ = RoomSkip{};
  best.fleet = -1;
  for (int32_t f : filter_.candidates) {
    if (!TryGangIn(run, f, rule, gang_try_)) continue;
    if (best.fleet >= 0 && std::pair(gang_try_.waste, gang_try_.whole) >= std::pair(best.waste, best.whole)) {
      continue;
    }
    if (room != nullptr) {
      QuotaUse use;
      for (auto [i, blocks] : gang_try_.picks) {
        AddPod(use, state_.pools[state_.instances[i].pool].layout.ResourcesFor(blocks));
      }
      if (!Allowed(room, f, use)) continue;
    }
    std::swap(best, gang_try_);
  }
  return best.fleet >= 0;
}

void Capacity::Take(int32_t i, int32_t blocks, int64_t end) {
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
  placed_.push_back(BusyEntry{i, end, blocks});
  ++version_;
}

void Capacity::Keep(int32_t i, int32_t holder) {
  Unindex(i);
  state_.instances[i].held_for = holder;
  Index(i);
  ++version_;
}

void Capacity::Reserve(const std::vector<int32_t>& instances) {
  for (int32_t i : instances) {
    Unindex(i);
    state_.instances[i].reserved = true;
    Index(i);
  }
  ++version_;
}

}  // namespace berth::scheduling::internal
