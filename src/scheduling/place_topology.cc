// Capacity's multi-node search by topology levels (issue 48, place.h): a fleet with levels keeps a
// multi-node run (or a gang of whole slices) inside one domain of the level the filter stage
// resolved for it (FleetFilter::levels). Required: only that level. Preferred: that level, then
// the next outer one, and so on, climbing only when no domain of a level holds the run; where even
// the outermost level cannot, the most compact placement across the fleet's domains (the fewest
// domains: the largest first, the rest in the smallest that holds it). At a level,
// best fit: the domain with the fewest idle instances that holds the run (ties: the one whose
// parent has the fewest, then path order), so that larger domains stay whole for larger runs.
// Inside the chosen domain the same rule again, level by level (Take). What Kueue's
// Topology-Aware Scheduling does with required / preferred levels, over idle whole instances.

#include <algorithm>
#include <limits>
#include <tuple>
#include <vector>

#include "scheduling/place.h"

namespace berth::scheduling::internal {

bool Capacity::Leveled(int32_t f) const {
  // One required level is one domain per label value: FindMultiIn's own search, as before levels.
  const Fleet& fleet = state_.fleets[f];
  return fleet.topology && !(fleet.levels.size() == 1 && filter_.levels[f].required);
}

void Capacity::CountIdle(int32_t f, bool include_reserved) {
  // Preorder: a domain's subdomains follow it, so walking backwards adds each into its parent
  // after its own subdomains were added into it.
  const Fleet& fleet = state_.fleets[f];
  idle_base_ = fleet.domain_begin;
  idle_.assign(static_cast<size_t>(fleet.domain_end - fleet.domain_begin), 0);
  for (int32_t d = fleet.domain_end - 1; d >= fleet.domain_begin; --d) {
    int32_t& n = idle_[d - idle_base_];
    n += open_.IdleIn(d) + (include_reserved ? reserved_.IdleIn(d) : 0);
    const int32_t parent = state_.domains[d].parent;
    if (parent >= 0) idle_[parent - idle_base_] += n;
  }
}

int32_t Capacity::LargestIdle(int32_t f) {
  if (!Leveled(f)) return open_.MaxIdleInDomain(f);
  const FleetFilter::LevelUse& use = filter_.levels[f];
  if (!use.known) return 0;
  CountIdle(f, false);
  int32_t largest = 0;
  int32_t all = 0;
  const Fleet& fleet = state_.fleets[f];
  for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
    if (state_.domains[d].level == use.bound()) largest = std::max(largest, Idle(d));
    if (state_.domains[d].parent < 0) all += Idle(d);
  }
  return use.bound() < 0 ? all : largest;
}

bool Capacity::FindLeveled(int32_t f, int32_t nodes, const LifetimeRule& rule, bool include_reserved,
                           std::vector<CapacityIndex::Key>& out, int32_t& count) {
  const FleetFilter::LevelUse& use = filter_.levels[f];
  if (!use.known) return false;
  CountIdle(f, include_reserved);
  const Fleet& fleet = state_.fleets[f];
  std::vector<std::tuple<int32_t, int32_t, int32_t>> fits;  // (idle, parent's idle, domain)
  for (int32_t level = use.level; level >= use.bound(); --level) {
    if (level < 0) {
      out.clear();
      count = 0;
      for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
        if (state_.domains[d].parent < 0) count += Idle(d);
      }
      return count >= nodes && Take(f, -1, nodes, rule, include_reserved, out);
    }
    fits.clear();
    for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
      const Domain& domain = state_.domains[d];
      if (domain.level != level || Idle(d) < nodes) continue;
      fits.emplace_back(Idle(d), domain.parent < 0 ? 0 : Idle(domain.parent), d);
    }
    std::sort(fits.begin(), fits.end());
    for (const auto& [idle, parent_idle, d] : fits) {
      out.clear();
      if (Take(f, d, nodes, rule, include_reserved, out)) {
        count = idle;
        return true;
      }
    }
  }
  return false;
}

bool Capacity::Take(int32_t f, int32_t d, int32_t k, const LifetimeRule& rule, bool include_reserved,
                    std::vector<CapacityIndex::Key>& out) {
  // d's subdomains one level in (d -1: the fleet's outermost domains).
  const Fleet& fleet = state_.fleets[f];
  const int32_t first = d < 0 ? fleet.domain_begin : d + 1;
  const int32_t last = d < 0 ? fleet.domain_end : state_.domains[d].end;
  std::vector<int32_t> subs;
  int32_t best = -1;
  for (int32_t s = first; s < last; s = state_.domains[s].end) {
    subs.push_back(s);
    if (Idle(s) >= k && (best < 0 || Idle(s) < Idle(best))) best = s;
  }
  const size_t start = out.size();
  if (best >= 0) {
    if (Take(f, best, k, rule, include_reserved, out)) return true;
    out.resize(start);  // some idle instance there does not fit the run: spread instead
  }
  // Spread over the fewest subdomains: the largest first, except that the rest goes to the
  // smallest subdomain that holds it (best fit, as Kueue's TAS does), so that a larger one stays
  // whole; then d's own instances (no deeper label).
  std::stable_sort(subs.begin(), subs.end(), [&](int32_t a, int32_t b) { return Idle(a) > Idle(b); });
  for (size_t i = 0; i < subs.size(); ++i) {
    const int32_t rest = k - static_cast<int32_t>(out.size() - start);
    if (rest <= 0) break;
    if (Idle(subs[i]) == 0) continue;
    size_t fit = i;  // the smallest from here on that holds the rest (sorted: the last such)
    for (size_t j = i; j < subs.size() && Idle(subs[j]) >= rest; ++j) fit = j;
    if (Idle(subs[fit]) >= rest) std::swap(subs[i], subs[fit]);
    Take(f, subs[i], std::min(rest, Idle(subs[i])), rule, include_reserved, out);
  }
  if (d >= 0) Append(d, k - static_cast<int32_t>(out.size() - start), rule, include_reserved, out);
  return static_cast<int32_t>(out.size() - start) == k;
}

void Capacity::Append(int32_t domain, int32_t k, const LifetimeRule& rule, bool include_reserved,
                      std::vector<CapacityIndex::Key>& out) {
  // Reserved instances first when allowed (as CollectInDomain), then open ones.
  if (k <= 0) return;
  const size_t limit = out.size() + static_cast<size_t>(k);
  auto collect = [&](const CapacityIndex::Key& key) {
    if (filter_.need[state_.instances[key.second].pool] >= 0) out.push_back(key);
    return out.size() < limit;
  };
  if (include_reserved && reserved_.IdleIn(domain) > 0) reserved_.ForEachIdle(domain, rule, collect);
  if (out.size() < limit) open_.ForEachIdle(domain, rule, collect);
}

}  // namespace berth::scheduling::internal
