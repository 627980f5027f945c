#pragma once
// Issue 47: the queue's recent past as the dashboard's Usage page draws it, per minute: the
// queue's length (the most runs waiting at any sample in the minute: a run that waited a few
// seconds shows) and the runs that started in it (how many,
// their median and longest wait). A fixed ring of minutes (1,440 by default: 24 hours) that later
// minutes overwrite, so it stays bounded however long berth runs; the waits of the current minute
// alone are kept (at most kMaxWaitsPerMinute; its count and longest wait stay exact past that).
// In memory only: a restarted controller, or a new leader after a failover, starts empty.
// Pure: every call names its time (the caller's injected clock); a time before the latest one
// given counts as the latest (a wall clock stepped back). Not thread-safe: the caller locks
// (controller/queue_series.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/time.h"

namespace berth::base {

struct QueueMinute {
  TimePoint at{};                  // the minute's start
  std::optional<int64_t> pending;  // the queue's longest length sampled in the minute; none: no sample
  int64_t starts = 0;              // runs that started in the minute
  double median_wait_seconds = 0;  // of those runs' waits (the mean of the middle two for an even count)
  double max_wait_seconds = 0;
};

class QueueHistory {
 public:
  static constexpr size_t kDefaultMinutes = 1440;
  static constexpr size_t kMaxWaitsPerMinute = 65536;

  explicit QueueHistory(size_t minutes = kDefaultMinutes);

  // The queue holds `pending` runs at `now`.
  void SamplePending(TimePoint now, int64_t pending);
  // A run started at `now` after waiting `wait`.
  void NoteStart(TimePoint now, Duration wait);
  // The minutes with a sample or a start among the ring's last minutes up to `now`'s, oldest first.
  std::vector<QueueMinute> Minutes(TimePoint now) const;
  // The time of the first sample or start; none while nothing was recorded.
  std::optional<TimePoint> RecordingSince() const { return since_; }

 private:
  struct Slot {
    int64_t minute = -1;  // minutes since the epoch; -1: unused
    std::optional<int64_t> pending;
    int64_t starts = 0;
    double median = 0, max = 0;  // seconds; median set when the minute closes
  };
  // The slot of `now`'s minute (no earlier than the latest minute seen), cleared when it held an
  // older minute; closes the minute whose waits were kept when another one begins.
  Slot& SlotAt(TimePoint now);

  std::vector<Slot> slots_;
  int64_t latest_ = -1;        // the latest minute recorded
  std::vector<double> waits_;  // the waits (seconds) of minute latest_
  std::optional<TimePoint> since_;
};

// The median of `values` (the mean of the middle two for an even count; 0 when empty).
double Median(std::vector<double> values);

}  // namespace berth::base
