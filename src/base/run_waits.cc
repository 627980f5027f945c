#include "base/run_waits.h"

#include <algorithm>

namespace berth::base {

int WaitBucket(std::chrono::seconds wait) {
  const auto it = std::upper_bound(kWaitBucketFrom.begin(), kWaitBucketFrom.end(), wait.count());
  return std::max(0, static_cast<int>(it - kWaitBucketFrom.begin()) - 1);
}

int64_t WaitHistogram::Runs() const {
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  return n;
}

std::optional<WaitRange> MedianWait(const WaitHistogram& h) {
  const int64_t n = h.Runs();
  if (n <= 0) return std::nullopt;
  const int64_t middle = (n + 1) / 2;  // 1-based rank of the (lower) middle run
  int64_t seen = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    seen += h.counts[i];
    if (seen < middle) continue;
    WaitRange r;
    r.from = std::chrono::seconds(kWaitBucketFrom[i]);
    if (i + 1 < h.counts.size()) r.under = std::chrono::seconds(kWaitBucketFrom[i + 1]);
    return r;
  }
  return std::nullopt;
}

}  // namespace berth::base
