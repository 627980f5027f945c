#include "reconcilers/writers/workqueue.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace berth::reconcilers {

std::chrono::milliseconds BackoffDelay(const BackoffPolicy& policy, int requeues) {
  const int64_t base = policy.base.count();
  const int64_t max = policy.max.count();
  if (base <= 0 || max <= 0) return std::chrono::milliseconds::zero();
  const int n = std::max(requeues, 0);
  // base * 2^n > max exactly when base > floor(max / 2^n); checking that first avoids overflow.
  if (n >= 63 || base > (max >> n)) return policy.max;
  return std::chrono::milliseconds(base << n);
}

WorkQueue::WorkQueue(const k8s::Clock& clock, BackoffPolicy backoff)
    : clock_(clock), backoff_(backoff) {}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  AddLocked(key);
}

void WorkQueue::AddLocked(const std::string& key) {
  if (!dirty_.insert(key).second) return;   // already queued, or marked while being processed
  if (processing_.count(key) != 0) return;  // Done will queue it
  queue_.push_back(key);
  ready_cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  AddAfterLocked(key, delay);
}

void WorkQueue::AddAfterLocked(const std::string& key, std::chrono::milliseconds delay) {
  if (delay <= std::chrono::milliseconds::zero()) {
    AddLocked(key);
    return;
  }
  const base::MonoTime now = clock_.Monotonic();
  // Saturate instead of overflowing for absurd delays.
  // (compared in milliseconds: milliseconds::max() does not fit the clock's nanoseconds)
  const auto room = std::chrono::duration_cast<std::chrono::milliseconds>(base::MonoTime::max() - now);
  const base::MonoTime due = delay < room ? now + delay : base::MonoTime::max();
  auto found = waiting_index_.find(key);
  if (found != waiting_index_.end()) {
    if (found->second->first <= due) return;  // already due sooner
    waiting_.erase(found->second);
    found->second = waiting_.emplace(due, key);
  } else {
    waiting_index_.emplace(key, waiting_.emplace(due, key));
  }
  // A blocked Get may be sleeping until a later due time.
  ready_cv_.notify_all();
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  int& requeues = requeues_[key];
  const std::chrono::milliseconds delay = BackoffDelay(backoff_, requeues);
  if (requeues < std::numeric_limits<int>::max()) ++requeues;
  AddAfterLocked(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  requeues_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto found = requeues_.find(key);
  return found == requeues_.end() ? 0 : found->second;
}

void WorkQueue::PromoteDueLocked() {
  if (waiting_.empty()) return;
  const base::MonoTime now = clock_.Monotonic();
  while (!waiting_.empty() && waiting_.begin()->first <= now) {
    std::string key = std::move(waiting_.begin()->second);
    waiting_.erase(waiting_.begin());
    waiting_index_.erase(key);
    AddLocked(key);
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  for (;;) {
    PromoteDueLocked();
    if (!queue_.empty()) break;
    if (shutting_down_) return std::nullopt;
    if (waiting_.empty()) {
      ready_cv_.wait(lock);
    } else {
      const base::MonoTime first_due = waiting_.begin()->first;
      const auto until_due = std::chrono::ceil<std::chrono::milliseconds>(first_due - clock_.Monotonic());
      // Until the first key is due on the clock (monotonic time: a wall clock that jumps does not
      // matter), a key is queued or a delayed key is due sooner.
      clock_.WaitFor(lock, ready_cv_, std::max(until_due, std::chrono::milliseconds(1)), [&] {
        return shutting_down_ || !queue_.empty() || waiting_.empty() || waiting_.begin()->first != first_due;
      });
    }
  }
  return TakeFrontLocked();
}

std::optional<std::string> WorkQueue::TryGet() {
  std::lock_guard lock(mu_);
  PromoteDueLocked();
  if (queue_.empty()) return std::nullopt;
  return TakeFrontLocked();
}

std::string WorkQueue::TakeFrontLocked() {
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  if (processing_.erase(key) == 0) return;
  if (dirty_.count(key) != 0) {
    queue_.push_back(key);
    ready_cv_.notify_one();
  }
  if (queue_.empty() && processing_.empty()) drained_cv_.notify_all();
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mu_);
  size_t len = queue_.size();
  const base::MonoTime now = clock_.Monotonic();
  for (auto it = waiting_.begin(); it != waiting_.end() && it->first <= now; ++it) {
    if (dirty_.count(it->second) == 0 && processing_.count(it->second) == 0) ++len;
  }
  return len;
}

void WorkQueue::ProcessDue() {
  std::lock_guard lock(mu_);
  PromoteDueLocked();
  // Also wake Gets sleeping toward a due time that the clock may have jumped past.
  ready_cv_.notify_all();
}

void WorkQueue::ShutDownLocked() {
  shutting_down_ = true;
  waiting_.clear();
  waiting_index_.clear();
  ready_cv_.notify_all();
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  ShutDownLocked();
}

void WorkQueue::ShutDownWithDrain() {
  std::unique_lock lock(mu_);
  ShutDownLocked();
  drained_cv_.wait(lock, [this] { return queue_.empty() && processing_.empty(); });
}

bool WorkQueue::ShuttingDown() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

}  // namespace berth::reconcilers
