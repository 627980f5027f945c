#include "scheduling/cycle.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

std::optional<Outcome> Cycle::ShareWait(const PendingRun& run, WaitReason& reason) {
  const RoomSkip& skipped = capacity_.skipped();
  if (!skipped.share) return std::nullopt;
  const ShareCheck& share = *skipped.share;
  if (share.verdict == ShareCheck::kBorrows) return Outcome::kDeferred;
  reason.code = WaitCode::kTeamShare;
  reason.fleet = skipped.share_fleet;
  reason.share = TeamShareWait{.verdict = static_cast<uint8_t>(share.verdict),
                               .resource = static_cast<uint8_t>(share.resource),
                               .needed = share.needed,
                               .used = share.used,
                               .nominal = share.nominal,
                               .may_borrow = share.may_borrow};
  out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
  return Outcome::kWaits;
}

}  // namespace berth::scheduling::internal
