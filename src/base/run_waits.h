#pragma once
// Issue 47: runs that started and how long they waited (kubectl berth usage's RUNS and MEDIAN-WAIT,
// docs/concepts.md "Runs and their wait"). A wait is kept as a count in one of kWaitBuckets fixed
// buckets (each at most about twice as wide as its lower bound), so days, fleets, users and Teams
// merge by adding counts and a median is known to its bucket's bounds. Pure: no I/O, no clock.
// Its own header (not base/usage.h, which most of berth includes).

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace berth::base {

inline constexpr int kWaitBuckets = 27;
// The lower bound of each bucket in seconds; the last one has no upper bound.
inline constexpr std::array<int64_t, kWaitBuckets> kWaitBucketFrom = {
    0,     10,    20,    30,    60,    120,   180,    300,    600,    900,     1800,    2700,    3600,   5400,
    7200,  10800, 14400, 21600, 32400, 43200, 64800, 86400, 172800, 345600, 604800, 1209600, 2592000};

// The bucket of a wait (a negative wait counts as 0).
int WaitBucket(std::chrono::seconds wait);

// The runs that started, by their wait's bucket.
struct WaitHistogram {
  std::array<int64_t, kWaitBuckets> counts{};
  int64_t Runs() const;
  void Add(std::chrono::seconds wait) { ++counts[static_cast<size_t>(WaitBucket(wait))]; }
  WaitHistogram& operator+=(const WaitHistogram& o) {
    for (size_t i = 0; i < counts.size(); ++i) counts[i] += o.counts[i];
    return *this;
  }
  friend bool operator==(const WaitHistogram&, const WaitHistogram&) = default;
};

// The bucket of the median wait: the wait of the middle run (of an even count, the lower of the
// two middle ones) is at least `from` and less than `under` (nullopt: the last bucket). nullopt
// when no run started.
struct WaitRange {
  std::chrono::seconds from{0};
  std::optional<std::chrono::seconds> under;
  friend bool operator==(const WaitRange&, const WaitRange&) = default;
};
std::optional<WaitRange> MedianWait(const WaitHistogram& h);

// The runs that started on one UTC day on one fleet (their start: admission, status.heldSince),
// in total, per submitter and per namespace (each at most kNamedNamespaces named, later ones
// under kOthers: base/usage.h).
struct RunStartsDay {
  std::string day;  // "YYYY-MM-DD" (UTC)
  std::string fleet;
  WaitHistogram total;
  std::map<std::string, WaitHistogram> by_user, by_namespace;
  friend bool operator==(const RunStartsDay&, const RunStartsDay&) = default;
};
// Days in order (day, then fleet).
using RunStartsHistory = std::vector<RunStartsDay>;

}  // namespace berth::base
