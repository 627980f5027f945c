#pragma once
// Issue 47, usage recorded as it happens (docs/concepts.md "Usage"): a run's span of holding
// blocks as its status records it (status.heldSince, held, releasedAt, accountedUntil), and what
// the fold (reconcilers/objects/usage_keeper.h) makes of it. Pure: no I/O, no clock.
//
// A span begins at the run's admission (BeginSpan) and ends when berth sees its blocks free again:
// no placement and no Pod of it the kubelet still counts (the fold records releasedAt then, and
// accountedUntil once its Team's usageFoldedUntil has passed it). A new span begins only once the
// last one is accounted: a requeued run waits out of the queue until then (lifecycle.h, rule 5a),
// and its finalizer (or its TTL delete) waits as well, so no second of a span is lost.

#include <optional>

#include "reconcilers/objects/run_types.h"
#include "scheduling/cycle_result.h"
#include "scheduling/usage.h"

namespace berth::reconcilers {

// Whether every second of the run's last span is folded (or it never held blocks).
bool SpanAccounted(const RunStatus& status);

// Admission: a new span from `now` with the placement's resources. A last span not accounted yet
// (only when the engine admits past the rule that waits for it) is continued instead of replaced:
// its seconds are then counted once more than they were held, never lost.
void BeginSpan(RunStatus& next, const scheduling::Placement& placement, scheduling::TimePoint now);

// What the fold does with one run.
struct RunSpan {
  enum class Close : uint8_t {
    kNone,     // nothing to write: still holding (or nothing to fold)
    kAccount,  // released: write accountedUntil = releasedAt once its team has folded past it
    kRelease,  // no longer holding: fold it up to now, then write releasedAt = accountedUntil = now
  };
  std::optional<scheduling::UsageSpan> span;  // nullopt: nothing to fold
  Close close = Close::kNone;
};

// The run's span for the fold: `holding` whether it holds blocks now (placed and not deleted, or a
// Pod of it the kubelet still counts).
RunSpan SpanOfRun(const Run& run, bool holding);

// The resource-seconds of `span` within [from, to): GPU-, CPU- (cores) and memory-GiB-seconds.
struct ResourceSeconds {
  double gpu = 0, cpu = 0, memory_gib = 0;
};
ResourceSeconds SecondsIn(const scheduling::UsageSpan& span, scheduling::TimePoint from, scheduling::TimePoint to);

}  // namespace berth::reconcilers
