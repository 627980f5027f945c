#pragma once
// Issue 47: the per-user store's fold (api::UserUsage, docs/concepts.md "Per-user usage"). Pure:
// no I/O, no clock. The usage fold (usage_keeper.h) reads the store, folds, writes it guarded.

#include <vector>

#include "api/v1alpha1/user_usage.h"
#include "base/time.h"
#include "scheduling/usage.h"

namespace berth::reconcilers {

// Folds `spans` (each span's `ns` its run's submitter) over [from, to) into the store's history
// (the day's kNamedNamespaces largest users, the rest under kOthers; no hourly detail; at most
// scheduling::kMaxUsageBytes) and moves its watermark to `to`; `from` is the store's own
// watermark, or `first` when it has none. False, and nothing changed, when the watermark is at
// or past `to` (another fold got there first).
bool FoldUserUsage(::berth::api::v1alpha1::UserUsage& usage, const std::vector<scheduling::UsageSpan>& spans,
                   base::TimePoint first, base::TimePoint to);

}  // namespace berth::reconcilers
