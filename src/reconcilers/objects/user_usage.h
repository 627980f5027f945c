#pragma once
// Issue 47: the per-user store's fold (api::UserUsage, docs/concepts.md "Per-user usage"). Pure:
// no I/O, no clock. The usage fold (usage_keeper.h) reads the store, folds, writes it guarded.

#include <chrono>
#include <string>
#include <vector>

#include "api/v1alpha1/user_usage.h"
#include "base/run_waits.h"
#include "base/time.h"
#include "scheduling/usage.h"

namespace berth::reconcilers {

// A run's start as the store counts it: its admission (status.heldSince) and its wait until then
// (from its submission, or from its return to the queue after a retry: the rule of
// berth_admission_wait_seconds).
struct RunStart {
  std::string user, ns, fleet;
  base::TimePoint at;
  std::chrono::seconds wait{0};
};

// The most bytes the store's run starts may take (RunStartsBytes): past it the oldest days lose
// their users and namespaces (their totals stay), then the oldest days go.
inline constexpr size_t kMaxRunStartsBytes = 128 * 1024;
// An upper bound of the size of `starts` as the store's JSON has them (names as they are).
size_t RunStartsBytes(const base::RunStartsHistory& starts);

// Folds `spans` (each span's `ns` its run's submitter) over [from, to) into the store's history
// (the day's kNamedNamespaces largest users, the rest under kOthers; no hourly detail; at most
// scheduling::kMaxUsageBytes) and moves its watermark to `to`; `from` is the store's own
// watermark, or `first` when it has none. False, and nothing changed, when the watermark is at
// or past `to` (another fold got there first).
// Each of `starts` at or after `from` and before `to` counts once in the store's run starts, under
// its UTC day and fleet (and its user and namespace: the first kNamedNamespaces of the day and
// fleet named, later ones under kOthers), kept kHistoryDays and at most kMaxRunStartsBytes; so a
// start counts in the one fold that covers it, whatever restarts and failovers.
bool FoldUserUsage(::berth::api::v1alpha1::UserUsage& usage, const std::vector<scheduling::UsageSpan>& spans,
                   base::TimePoint first, base::TimePoint to, const std::vector<RunStart>& starts = {});

}  // namespace berth::reconcilers
