#include "scheduling/capacity_index.h"

#include <algorithm>
#include <bit>

namespace berth::scheduling::internal {

namespace {
constexpr int32_t kLowest = std::numeric_limits<int32_t>::min();
}  // namespace

void CapacityIndex::Reset(const std::vector<int32_t>& pool_blocks,
                          const std::vector<int32_t>& domain_fleet, int32_t fleets) {
  pools_.assign(pool_blocks.size(), {});
  for (size_t p = 0; p < pool_blocks.size(); ++p) {
    pools_[p].by_free.resize(pool_blocks[p] + 1);
    pools_[p].nonempty.assign(pool_blocks[p] / 64 + 1, 0);
  }
  domain_idle_.assign(domain_fleet.size(), {});
  domain_idle_count_.assign(domain_fleet.size(), 0);
  domain_fleet_ = domain_fleet;
  fleet_domains_.assign(fleets, {});
  for (size_t d = 0; d < domain_fleet.size(); ++d) {
    fleet_domains_[domain_fleet[d]].insert({0, static_cast<int32_t>(d)});
  }
  size_ = 0;
}

int64_t CapacityIndex::Slots(int32_t pool, int32_t need) const {
  if (need <= 0) return 0;
  const PoolLevels& levels = pools_[pool];
  int64_t slots = 0;
  for (size_t f = static_cast<size_t>(need); f < levels.by_free.size(); ++f) {
    slots += static_cast<int64_t>(levels.by_free[f].size()) * static_cast<int64_t>(f / need);
  }
  return slots;
}

void CapacityIndex::SetDomainCount(int32_t domain, int32_t count) {
  auto& domains = fleet_domains_[domain_fleet_[domain]];
  domains.erase({domain_idle_count_[domain], domain});
  domain_idle_count_[domain] = count;
  domains.insert({count, domain});
}

void CapacityIndex::Add(int32_t instance, int32_t pool, int32_t domain, int32_t free,
                        int32_t total, int64_t expiry) {
  if (free <= 0) return;
  PoolLevels& levels = pools_[pool];
  levels.by_free[free].insert({expiry, instance});
  levels.nonempty[free / 64] |= uint64_t{1} << (free % 64);
  if (domain >= 0 && free == total) {
    domain_idle_[domain].insert({expiry, instance});
    SetDomainCount(domain, domain_idle_count_[domain] + 1);
  }
  ++size_;
}

void CapacityIndex::Remove(int32_t instance, int32_t pool, int32_t domain, int32_t free,
                           int32_t total, int64_t expiry) {
  if (free <= 0) return;
  PoolLevels& levels = pools_[pool];
  Set& level = levels.by_free[free];
  level.erase({expiry, instance});
  if (level.empty()) levels.nonempty[free / 64] &= ~(uint64_t{1} << (free % 64));
  if (domain >= 0 && free == total) {
    domain_idle_[domain].erase({expiry, instance});
    SetDomainCount(domain, domain_idle_count_[domain] - 1);
  }
  --size_;
}

int32_t CapacityIndex::LargestFree(int32_t pool) const {
  const std::vector<uint64_t>& bits = pools_[pool].nonempty;
  for (size_t w = bits.size(); w-- > 0;) {
    if (bits[w] != 0) return static_cast<int32_t>(w * 64 + 63 - std::countl_zero(bits[w]));
  }
  return 0;
}

CapacityIndex::Set::const_iterator CapacityIndex::Pick(const Set& set, const LifetimeRule& rule) {
  if (set.empty()) return set.end();
  if (!rule.prefer_longest) return set.lower_bound({rule.min_expiry_ms, kLowest});
  const int64_t latest = set.rbegin()->first;
  if (latest < rule.min_expiry_ms) return set.end();
  return set.lower_bound({latest, kLowest});
}

CapacityIndex::Fit CapacityIndex::BestFit(int32_t pool, int32_t need,
                                          const LifetimeRule& rule) const {
  const PoolLevels& levels = pools_[pool];
  const int32_t top = static_cast<int32_t>(levels.by_free.size()) - 1;
  if (need < 1) need = 1;
  // Visit non-empty levels >= need in increasing order.
  for (int32_t w = need / 64; w < static_cast<int32_t>(levels.nonempty.size()); ++w) {
    uint64_t bits = levels.nonempty[w];
    if (w == need / 64) bits &= ~uint64_t{0} << (need % 64);
    while (bits != 0) {
      const int32_t free = w * 64 + std::countr_zero(bits);
      bits &= bits - 1;
      if (free > top) break;
      const Set& set = levels.by_free[free];
      auto it = Pick(set, rule);
      if (it != set.end()) return Fit{it->second, free, it->first};
    }
  }
  return Fit{};
}

int64_t CapacityIndex::LatestExpiryWithRoom(int32_t pool, int32_t need) const {
  const PoolLevels& levels = pools_[pool];
  int64_t latest = -1;
  for (int32_t free = std::max(need, 1); free < static_cast<int32_t>(levels.by_free.size());
       ++free) {
    const Set& set = levels.by_free[free];
    if (!set.empty()) latest = std::max(latest, set.rbegin()->first);
  }
  return latest;
}

int32_t CapacityIndex::MaxIdleInDomain(int32_t fleet) const {
  const auto& domains = fleet_domains_[fleet];
  return domains.empty() ? 0 : domains.rbegin()->first;
}

}  // namespace berth::scheduling::internal
