#pragma once
// Issue 47: usage accounting's arithmetic (pure: no I/O, no clock; docs/concepts.md#usage).
//
// A run's span: from its admission until its blocks are released (time stopping included), it
// holds its blocks' GPUs, CPUs and memory. Folding the spans of a team's runs over [from, to)
// adds each span's overlap with that interval to the team's history: per UTC day and fleet the
// GPU-, CPU- and memory-GiB-hours, per namespace (the largest kNamedNamespaces of the day, the
// rest under kOthers), and per UTC hour for the days a caller keeps hourly (budgets: a 12h window
// needs the hours at its edges). Folding [a, b) then [b, c) gives what folding [a, c) gives, so a
// caller that records up to where it folded (Team.status.usageFoldedUntil) counts every second of
// every span once, whatever restarts between.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/time.h"
#include "base/usage.h"

namespace berth::scheduling {

// What a run holds while it holds blocks.
struct UsageSpan {
  std::string ns, fleet;
  base::TimePoint start;               // admitted (blocks booked)
  std::optional<base::TimePoint> end;  // blocks released; nullopt: holding still
  int64_t gpus = 0, cpu_milli = 0, memory_bytes = 0;
};

using base::kHistoryDays;
using base::kNamedNamespaces;
using base::kOthers;
using base::UsageDay;
using base::UsageHistory;
using base::UsageHours;

inline constexpr size_t kMaxUsageBytes = 192 * 1024;

struct FoldOptions {
  // Days before this one's UTC day keep no hourly detail (nullopt: none kept).
  std::optional<base::TimePoint> hourly_since;
  // The most UsageBytes the history may take (the Team object must stay well under etcd's
  // 1.5 MiB): over it, the oldest days' namespaces go first, then the oldest days' hourly detail
  // (budgets need the hours; every day's totals always stay).
  size_t max_bytes = kMaxUsageBytes;
};

// An upper bound of the size of `history` as JSON (Team.status.usageHistory, numbers written as
// the codec writes them: at most 24 characters).
size_t UsageBytes(const UsageHistory& history);

// The UTC day of `t` ("YYYY-MM-DD") and the start of that day.
std::string UtcDay(base::TimePoint t);
base::TimePoint DayStart(base::TimePoint t);

// Adds the overlap of each span with [from, to) to `history` (figures kept to the nanohour) and drops days older than
// kHistoryDays before the last day folded. A namespace new to a full day replaces the smallest named one
// when it used more in this fold (the smaller one moves into kOthers): day totals stay exact, the
// named figures are what was folded while they were named.
void FoldUsage(UsageHistory& history, const std::vector<UsageSpan>& spans, base::TimePoint from, base::TimePoint to,
               const FoldOptions& options);

// A team's usage on `fleet` ("": every fleet) in [t0, t1) from its history, which holds
// everything up to `folded_until` (Team.status.usageFoldedUntil) and nothing after: whole days,
// and the hours of the edge days that keep hourly detail; an edge day (or hour) without detail
// counts pro rata of the part of it folded.
UsageHours UsageIn(const UsageHistory& history, const std::string& fleet, base::TimePoint t0, base::TimePoint t1,
                   base::TimePoint folded_until);

}  // namespace berth::scheduling
