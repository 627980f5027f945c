#include "scheduling/reserve.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

Timeline::Timeline(const ClusterState& state, const std::vector<BusyEntry>& running, const std::vector<BusyEntry>& placed)
    : state_(state), busy_(running) {
  busy_.insert(busy_.end(), placed.begin(), placed.end());
  std::sort(busy_.begin(), busy_.end(), [](const BusyEntry& a, const BusyEntry& b) {
    if (a.instance != b.instance) return a.instance < b.instance;
    return a.end < b.end;
  });
  begin_.assign(state_.instances.size() + 1, 0);
  for (const BusyEntry& e : busy_) ++begin_[e.instance + 1];
  for (size_t i = 1; i < begin_.size(); ++i) begin_[i] += begin_[i - 1];
}

int64_t Timeline::TimeWithFree(int32_t i, int32_t need) const {
  const Instance& in = state_.instances[i];
  if (in.free >= need) return state_.now;
  int64_t busy = in.busy;
  for (int32_t e = begin_[i]; e < begin_[i + 1]; ++e) {
    if (busy_[e].end == kUnknownTime) return kUnknownTime;
    busy -= busy_[e].blocks;
    if (in.total - std::min<int64_t>(busy, in.total) >= need) return std::max(busy_[e].end, state_.now);
  }
  return kUnknownTime;
}

int64_t Timeline::TimeWhollyFree(int32_t i) const {
  const Instance& in = state_.instances[i];
  if (in.free == in.total) return state_.now;
  const int32_t last = begin_[i + 1] - 1;
  if (last < begin_[i]) return kUnknownTime;
  return busy_[last].end == kUnknownTime ? kUnknownTime : std::max(busy_[last].end, state_.now);
}

bool LifetimeAllows(const Instance& in, int64_t start, const PendingRun& run) {
  if (in.expiry == kNoExpiry) return true;
  if (start == kUnknownTime) return false;
  const int64_t needed_until =
      run.max_duration ? SaturatingAdd(start, std::max<int64_t>(run.max_duration->count(), 0))
                       : start + 1;
  return in.expiry >= needed_until;
}

namespace {

bool ChooseSingle(const ReserveInput& input, const PendingRun& run, ReservationChoice& best) {
  int32_t best_instance = -1;
  for (int32_t f : input.candidates) {
    for (int32_t i : input.state.fleets[f].instances) {
      const Instance& in = input.state.instances[i];
      if (in.availability != Availability::kAvailable || in.held_for >= 0 || input.need[in.pool] < 0) {
        continue;
      }
      const int64_t start = input.timeline.TimeWithFree(i, input.need[in.pool]);
      if (!LifetimeAllows(in, start, run)) continue;
      if (best_instance < 0 || start < best.start || (start == best.start && i < best_instance)) {
        best_instance = i;
        best.start = start;
        best.fleet = f;
      }
    }
  }
  if (best_instance < 0) return false;
  best.instances.push_back(best_instance);
  return true;
}

using Group = std::vector<std::pair<int64_t, int32_t>>;  // (when it wholly frees, instance)
using Groups = std::vector<Group>;

// In a domain's instances sorted by when they wholly free, the first start (before `before` when
// bounded; at it too when inclusive) at which `run.nodes` of them are free and outlive the run, in `eligible`.
bool EarliestGroupStart(const ReserveInput& input, const PendingRun& run, const Group& group, bool bounded,
                        int64_t before, bool inclusive, std::vector<int32_t>& eligible, int64_t& start) {
  // The group starts when its k-th instance frees; with lifetimes in play a later start may be
  // needed for k instances to outlive the run.
  const auto k = static_cast<size_t>(run.nodes);
  for (size_t j = k - 1; j < group.size(); ++j) {
    start = group[j].first;
    if (bounded && (start > before || (start == before && !inclusive))) return false;
    eligible.clear();
    for (size_t x = 0; x <= j && eligible.size() < k; ++x) {
      if (LifetimeAllows(input.state.instances[group[x].second], start, run)) eligible.push_back(group[x].second);
    }
    if (eligible.size() == k) return true;
  }
  return false;
}

// The instances of fleet f that may be reserved for the run (available, kept for no preemptor,
// fitting it), with when each wholly frees, grouped by its domain of `level` (issue 48): index
// domain - domain_begin; level -1: the fleet, one group (index 0). An instance in no domain of
// that level (a missing label) is in no group.
void GroupByDomain(const ReserveInput& input, int32_t f, int32_t level, Groups& by_domain) {
  const ClusterState& state = input.state;
  const Fleet& fleet = state.fleets[f];
  for (auto& group : by_domain) group.clear();
  by_domain.resize(static_cast<size_t>(fleet.domain_end - fleet.domain_begin));
  for (int32_t i : fleet.instances) {
    const Instance& in = state.instances[i];
    if (in.availability != Availability::kAvailable || in.domain < 0 || in.held_for >= 0 || input.need[in.pool] < 0) {
      continue;
    }
    int32_t d = fleet.domain_begin;
    if (level >= 0) {
      d = in.domain;
      if (state.domains[d].level < level) continue;
      while (state.domains[d].level > level) d = state.domains[d].parent;
    }
    by_domain[d - fleet.domain_begin].push_back({input.timeline.TimeWhollyFree(i), i});
  }
}

// `run.nodes` whole instances of one domain of fleet f (a multi-node run, or a gang of whole
// slices): at the level the filter resolved for it (ReserveInput::levels), climbing outward (when
// preferred) only while no domain of a level has enough instances that may ever take it. Among
// the domains of that level, the soonest start, ties to the smallest domain (best fit, as place.h;
// not on a topologyKey's fleet) then path order; `best` when sooner than it (from another fleet: strictly).
void ChooseInDomains(const ReserveInput& input, const PendingRun& run, int32_t f, ReservationChoice& best) {
  const auto k = static_cast<size_t>(run.nodes);
  const FleetFilter::LevelUse& use = input.levels[f];
  if (!use.known) return;
  Groups by_domain;
  std::vector<int32_t> eligible;
  size_t best_size = 0;
  for (int32_t level = use.level; level >= use.bound(); --level) {
    GroupByDomain(input, f, level, by_domain);
    bool any = false;
    for (auto& group : by_domain) {
      if (group.size() < k) continue;
      any = true;
      std::sort(group.begin(), group.end());
      // Best fit on fleets with `topology` levels; a topologyKey's domains keep path order.
      const bool mine = best.fleet == f && !input.state.fleets[f].level_required;
      int64_t start = 0;
      if (!EarliestGroupStart(input, run, group, best.fleet >= 0, best.start, mine, eligible, start)) continue;
      if (mine && start == best.start && group.size() >= best_size) continue;
      best.start = start;
      best.fleet = f;
      best.instances = eligible;
      best_size = group.size();
    }
    if (any) return;
  }
}

bool ChooseMulti(const ReserveInput& input, const PendingRun& run, ReservationChoice& best) {
  for (int32_t f : input.candidates) {
    if (input.state.fleets[f].cluster) ChooseInDomains(input, run, f, best);
  }
  return best.fleet >= 0;
}

// Whether the gang's slices are whole instances of fleet f, which has topology domains
// (Capacity::WholeSlicesIn): the gang then reserves within one domain, as a multi-node run.
bool WholeSlices(const ReserveInput& input, int32_t f) {
  const Fleet& fleet = input.state.fleets[f];
  if (!fleet.topology) return false;
  bool any = false;
  for (int32_t p : fleet.pools) {
    if (input.need[p] < 0) continue;
    if (input.need[p] != input.state.pools[p].layout.total_blocks()) return false;
    any = true;
  }
  return any;
}

bool ChooseGang(const ReserveInput& input, const PendingRun& run, ReservationChoice& best) {
  // Each instance offers one slot per slice it can hold, available when that many slices' blocks
  // are free there; the gang starts when its `nodes`-th slot (that outlives it) frees.
  const auto k = static_cast<size_t>(run.nodes);
  std::vector<std::pair<int64_t, int32_t>> slots;
  std::vector<int32_t> chosen;
  for (int32_t f : input.candidates) {
    if (WholeSlices(input, f)) {
      ChooseInDomains(input, run, f, best);
      continue;
    }
    slots.clear();
    for (int32_t i : input.state.fleets[f].instances) {
      const Instance& in = input.state.instances[i];
      if (in.availability != Availability::kAvailable || in.held_for >= 0 || input.need[in.pool] < 0) continue;
      const int32_t need = std::max(input.need[in.pool], 1);
      for (int32_t s = 1; static_cast<int64_t>(s) * need <= in.total; ++s) {
        slots.emplace_back(input.timeline.TimeWithFree(i, s * need), i);
      }
    }
    if (slots.size() < k) continue;
    std::sort(slots.begin(), slots.end());
    for (size_t j = k - 1; j < slots.size(); ++j) {
      const int64_t start = slots[j].first;
      if (best.fleet >= 0 && start >= best.start) break;
      chosen.clear();
      size_t taken = 0;
      for (size_t x = 0; x <= j && taken < k; ++x) {
        if (!LifetimeAllows(input.state.instances[slots[x].second], start, run)) continue;
        ++taken;
        if (chosen.empty() || chosen.back() != slots[x].second) chosen.push_back(slots[x].second);
      }
      if (taken < k) continue;
      best.start = start;
      best.fleet = f;
      best.instances = chosen;
      break;
    }
  }
  if (best.fleet < 0) return false;
  std::sort(best.instances.begin(), best.instances.end());
  best.instances.erase(std::unique(best.instances.begin(), best.instances.end()), best.instances.end());
  return true;
}

}  // namespace

std::optional<ReservationChoice> EarliestReservation(const ReserveInput& input, const PendingRun& run) {
  ReservationChoice best;
  const bool found = IsSliceGang(run) ? ChooseGang(input, run, best)
                     : run.nodes <= 1  ? ChooseSingle(input, run, best)
                                       : ChooseMulti(input, run, best);
  if (!found) return std::nullopt;
  return best;
}

}  // namespace berth::scheduling::internal
