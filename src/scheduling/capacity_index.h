#pragma once
// Internal to the scheduling cycle: the instances that can take a new run, indexed so that a
// best-fit look-up costs O(levels/64 + log n) instead of a scan of every instance.
//
// Instances are identified by their index in the cycle's name-sorted instance table, so "lowest
// index" means "first by name" and every tie-break is deterministic.
//
//  - Per pool (instances of one fleet with the same block layout) and per number of free blocks,
//    a set ordered by (expiry, index), plus a bitmask of the non-empty levels.
//  - Per topology domain of a cluster fleet, the set of whole idle instances, and per fleet the
//    domains ordered by (idle count, domain), for multi-node runs.

#include <cstdint>
#include <iterator>
#include <limits>
#include <set>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

inline constexpr int64_t kNoExpiry = std::numeric_limits<int64_t>::max();

// Which instances a run may use by lifetime, and which of them it prefers.
struct LifetimeRule {
  int64_t min_expiry_ms = 0;  // instances expiring before this are not eligible
  // Without maxDuration a run prefers the longest-lived instance (it may run for ever). With one
  // it prefers the instance that expires soonest but late enough, keeping long-lived instances
  // for long runs ("best fit in time").
  bool prefer_longest = true;

  // Whether instance a (expiry ea, index ia) is preferred to b.
  bool Prefers(int64_t ea, int32_t ia, int64_t eb, int32_t ib) const {
    if (ea != eb) return prefer_longest ? ea > eb : ea < eb;
    return ia < ib;
  }
};

class CapacityIndex {
 public:
  using Key = std::pair<int64_t, int32_t>;  // (expiry ms or kNoExpiry, instance index)
  using Set = std::set<Key>;

  struct Fit {
    int32_t instance = -1;  // -1: none
    int32_t free = 0;
    int64_t expiry = 0;
  };

  // Empties the index and shapes it: pool p has pool_blocks[p] blocks per instance; domain d
  // belongs to fleet domain_fleet[d]; there are `fleets` fleets.
  void Reset(const std::vector<int32_t>& pool_blocks, const std::vector<int32_t>& domain_fleet,
             int32_t fleets);

  // Adds / removes an instance with `free` of `total` blocks free. `domain` is -1 when the
  // instance cannot take multi-node runs. Remove must get the values Add got.
  void Add(int32_t instance, int32_t pool, int32_t domain, int32_t free, int32_t total,
           int64_t expiry);
  void Remove(int32_t instance, int32_t pool, int32_t domain, int32_t free, int32_t total,
              int64_t expiry);

  bool empty() const { return size_ == 0; }

  // Most free blocks of any indexed instance in `pool`; 0 when none.
  int32_t LargestFree(int32_t pool) const;

  // Best single-node fit in `pool` for `need` blocks under `rule`: the fewest free blocks that
  // are >= need (partly used instances before whole idle ones, least left over), then the rule's
  // lifetime preference, then index. instance == -1 when nothing fits.
  Fit BestFit(int32_t pool, int32_t need, const LifetimeRule& rule) const;

  // The latest expiry among instances of `pool` with >= need free blocks; nullopt-like -1 when
  // there is none.
  int64_t LatestExpiryWithRoom(int32_t pool, int32_t need) const;

  // How many slices of `need` blocks the indexed instances of `pool` have room for (an instance
  // with f free blocks holds f / need of them).
  int64_t Slots(int32_t pool, int32_t need) const;

  int32_t IdleIn(int32_t domain) const { return domain_idle_count_[domain]; }
  // Most whole idle instances in any one domain of `fleet`.
  int32_t MaxIdleInDomain(int32_t fleet) const;
  // Domains of `fleet` ordered by (idle count, domain).
  const std::set<std::pair<int32_t, int32_t>>& DomainsByIdle(int32_t fleet) const {
    return fleet_domains_[fleet];
  }

  // Calls fn(Key) for the whole idle instances of `domain` allowed by `rule`, most preferred
  // first, until fn returns false.
  template <typename Fn>
  void ForEachIdle(int32_t domain, const LifetimeRule& rule, Fn&& fn) const;

 private:
  struct PoolLevels {
    std::vector<Set> by_free;       // index = free blocks (0 unused)
    std::vector<uint64_t> nonempty;  // bit f set when by_free[f] is non-empty
  };
  // The rule's preferred element of `set`, or end().
  static Set::const_iterator Pick(const Set& set, const LifetimeRule& rule);
  void SetDomainCount(int32_t domain, int32_t count);

  std::vector<PoolLevels> pools_;
  std::vector<Set> domain_idle_;
  std::vector<int32_t> domain_idle_count_;
  std::vector<int32_t> domain_fleet_;
  std::vector<std::set<std::pair<int32_t, int32_t>>> fleet_domains_;
  int64_t size_ = 0;
};

template <typename Fn>
void CapacityIndex::ForEachIdle(int32_t domain, const LifetimeRule& rule, Fn&& fn) const {
  const Set& set = domain_idle_[domain];
  constexpr int32_t kLowest = std::numeric_limits<int32_t>::min();
  if (!rule.prefer_longest) {
    for (auto it = set.lower_bound({rule.min_expiry_ms, kLowest}); it != set.end(); ++it) {
      if (!fn(*it)) return;
    }
    return;
  }
  // Longest-lived first, by index within equal expiry: walk the expiry groups from the top.
  auto hi = set.end();
  while (hi != set.begin()) {
    const int64_t expiry = std::prev(hi)->first;
    if (expiry < rule.min_expiry_ms) return;
    const auto lo = set.lower_bound({expiry, kLowest});
    for (auto it = lo; it != hi; ++it) {
      if (!fn(*it)) return;
    }
    hi = lo;
  }
}

}  // namespace berth::scheduling::internal
