#include "scheduling/room_filter.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

namespace berth::scheduling::internal {

RoomVerdict QuotaAndShare::Check(int32_t fleet, const QuotaUse& use) const {
  RoomVerdict verdict;
  const FleetSpec& spec = *state_.fleets[fleet].spec;
  if (quota_ != nullptr) {
    verdict.quota = CheckQuota(quota_, use, spec.gpu_resource);
    if (verdict.quota) return verdict;
  }
  if (team_ >= 0) {
    const ShareCheck share = teams_.Check(team_, spec.name, use.resources, allow_borrow_);
    if (!share.fits()) verdict.share = share;
  }
  return verdict;
}

std::optional<QuotaShortfall> RequestShortfall(const PendingRun& run, const NamespaceQuota* quota,
                                               const ClusterState& state, const std::vector<int32_t>& candidates) {
  if (quota == nullptr) return std::nullopt;
  const int64_t n = std::max<int32_t>(run.nodes, 1);
  auto times = [n](int64_t v) {
    v = std::max<int64_t>(v, 0);
    return v > std::numeric_limits<int64_t>::max() / n ? std::numeric_limits<int64_t>::max() : v * n;
  };
  const QuotaUse use{Resources{times(run.resources.cpu_millis), times(run.resources.memory_bytes),
                               times(run.resources.gpus)},
                     n};
  std::optional<QuotaShortfall> first;
  for (int32_t f : candidates) {
    auto s = CheckQuota(quota, use, state.fleets[f].spec->gpu_resource);
    if (!s) return std::nullopt;
    if (!first) first = std::move(s);
  }
  return first;
}

}  // namespace berth::scheduling::internal
