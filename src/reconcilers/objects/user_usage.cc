#include "reconcilers/objects/user_usage.h"

namespace berth::reconcilers {

namespace sched = scheduling;

bool FoldUserUsage(::berth::api::v1alpha1::UserUsage& usage, const std::vector<sched::UsageSpan>& spans,
                   base::TimePoint first, base::TimePoint to) {
  const base::TimePoint from = usage.folded_until ? usage.folded_until->point() : first;
  if (from >= to) return false;
  sched::FoldUsage(usage.history, spans, from, to,
                   sched::FoldOptions{.hourly_since = std::nullopt, .max_bytes = sched::kMaxUsageBytes});
  usage.folded_until = ::berth::api::v1alpha1::Time(to);
  return true;
}

}  // namespace berth::reconcilers
