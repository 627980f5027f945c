#pragma once
// The namespace's quota and the team's share as the place stage (place.h) asks them: per room a
// search would take (a fleet and what the run's Pods would ask for there), whether the run may
// take it. What kube-scheduler's Filter plugins are to its node search, for the two rules that
// depend on what this cycle placed before the run (quota usage, team shares), not on the node.
// The quota and share bookkeeping itself (usage, charges) is quota.h's and teams.h's.

#include <cstdint>
#include <optional>
#include <vector>

#include "scheduling/cluster_state.h"
#include "scheduling/quota.h"
#include "scheduling/run_queue.h"
#include "scheduling/teams.h"

namespace berth::scheduling::internal {

// What the rules say about one room: both empty when it is allowed, else the rule that refused
// (the quota is checked first).
struct RoomVerdict {
  std::optional<QuotaShortfall> quota;
  std::optional<ShareCheck> share;
  bool allowed() const { return !quota && !share; }
};

class RoomFilter {
 public:
  // Whether the current run may take `use` (what its Pods ask for there) in fleet f.
  virtual RoomVerdict Check(int32_t fleet, const QuotaUse& use) const = 0;

 protected:
  ~RoomFilter() = default;
};

// One run's namespace quota (nullptr: none, unlimited) and team share (team -1: no teams); a
// borrow is refused (kBorrows) unless `allow_borrow` (order.h).
class QuotaAndShare final : public RoomFilter {
 public:
  QuotaAndShare(const ClusterState& state, const NamespaceQuota* quota, const TeamBook& teams, int32_t team,
                bool allow_borrow)
      : state_(state), quota_(quota), teams_(teams), team_(team), allow_borrow_(allow_borrow) {}
  RoomVerdict Check(int32_t fleet, const QuotaUse& use) const override;
  // Whether it could refuse anything (a quota or a team).
  bool limits() const { return quota_ != nullptr || team_ >= 0; }

 private:
  const ClusterState& state_;
  const NamespaceQuota* quota_;
  const TeamBook& teams_;
  int32_t team_;
  bool allow_borrow_;
};

// Whether the namespace has room for the smallest use the run could have (its request on each
// node) in the quota of some candidate fleet's GPU resource (fleets may name different ones):
// nullopt when it has, or there is no quota; else the first candidate's shortfall.
std::optional<QuotaShortfall> RequestShortfall(const PendingRun& run, const NamespaceQuota* quota,
                                               const ClusterState& state, const std::vector<int32_t>& candidates);

}  // namespace berth::scheduling::internal
