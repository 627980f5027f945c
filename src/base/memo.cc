#include "base/memo.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace berth::base {

namespace {
#ifdef NDEBUG
std::atomic<bool> checks{false};
#else
std::atomic<bool> checks{true};
#endif
}  // namespace

bool MemoChecksOn() { return checks.load(std::memory_order_relaxed); }

void SetMemoChecks(bool on) {
#ifdef NDEBUG
  checks.store(on, std::memory_order_relaxed);
#else
  (void)on;  // always on without NDEBUG
#endif
}

void StaleMemo(const char* what) {
  std::fprintf(stderr,
               "stale memo: %s: the value kept for these inputs differs from the one made anew from them "
               "(an input it depends on is missing from its inputs)\n",
               what);
  std::fflush(stderr);
  std::abort();
}

}  // namespace berth::base
