#include "base/queue_history.h"

#include <algorithm>
#include <chrono>

namespace berth::base {

namespace {

int64_t MinuteOf(TimePoint t) {
  return std::chrono::floor<std::chrono::minutes>(t.time_since_epoch()).count();
}

TimePoint StartOf(int64_t minute) {
  return TimePoint(std::chrono::duration_cast<Duration>(std::chrono::minutes(minute)));
}

}  // namespace

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

QueueHistory::QueueHistory(size_t minutes) : slots_(std::max<size_t>(minutes, 1)) {}

QueueHistory::Slot& QueueHistory::SlotAt(TimePoint now) {
  if (!since_) since_ = now;
  const int64_t minute = std::max(MinuteOf(now), latest_);
  Slot& slot = slots_[static_cast<size_t>(minute % static_cast<int64_t>(slots_.size()))];
  if (minute != latest_) {
    if (latest_ >= 0) {
      Slot& closing = slots_[static_cast<size_t>(latest_ % static_cast<int64_t>(slots_.size()))];
      closing.median = Median(std::move(waits_));
    }
    waits_.clear();
    latest_ = minute;
  }
  if (slot.minute != minute) slot = Slot{.minute = minute, .pending = std::nullopt, .starts = 0, .median = 0, .max = 0};
  return slot;
}

void QueueHistory::SamplePending(TimePoint now, int64_t pending) {
  Slot& slot = SlotAt(now);
  slot.pending = std::max(slot.pending.value_or(pending), pending);
}

void QueueHistory::NoteStart(TimePoint now, Duration wait) {
  Slot& slot = SlotAt(now);
  const double seconds = std::max(0.0, std::chrono::duration<double>(wait).count());
  ++slot.starts;
  slot.max = std::max(slot.max, seconds);
  if (waits_.size() < kMaxWaitsPerMinute) waits_.push_back(seconds);
}

std::vector<QueueMinute> QueueHistory::Minutes(TimePoint now) const {
  const int64_t last = std::max(MinuteOf(now), latest_);
  const int64_t first = last - static_cast<int64_t>(slots_.size()) + 1;
  std::vector<QueueMinute> out;
  for (const Slot& s : slots_) {
    if (s.minute < first || s.minute > last) continue;
    out.push_back(QueueMinute{.at = StartOf(s.minute),
                              .pending = s.pending,
                              .starts = s.starts,
                              .median_wait_seconds = s.minute == latest_ ? Median(waits_) : s.median,
                              .max_wait_seconds = s.max});
  }
  std::sort(out.begin(), out.end(), [](const QueueMinute& a, const QueueMinute& b) { return a.at < b.at; });
  return out;
}

}  // namespace berth::base
