#include "scheduling/run_queue.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace berth::scheduling {

namespace {
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

int64_t Ms(TimePoint t) { return t.time_since_epoch().count(); }
}  // namespace

struct RunQueue::Entry {
  PendingRun run;
  int32_t effective = 0;
  int64_t next_change_ms = kNever;  // when `effective` rises next; kNever when it cannot
};

bool RunQueue::BucketOrder::operator()(const Entry* a, const Entry* b) const {
  if (a->run.submitted_at != b->run.submitted_at) return a->run.submitted_at < b->run.submitted_at;
  return a->run.id < b->run.id;
}

bool RunQueue::ChangeOrder::operator()(const Entry* a, const Entry* b) const {
  if (a->next_change_ms != b->next_change_ms) return a->next_change_ms < b->next_change_ms;
  return BucketOrder()(a, b);
}

RunQueue::RunQueue(Duration aging_interval)
    : aging_interval_(aging_interval), buckets_(kBuckets), fenwick_(kBuckets + 1, 0) {}

RunQueue::~RunQueue() = default;

void RunQueue::ComputeAging(Entry& e) const {
  const int32_t base = e.run.priority;
  if (aging_interval_.count() <= 0 || base >= kMaxPriority) {
    e.effective = base;
    e.next_change_ms = kNever;
    return;
  }
  const int64_t interval = aging_interval_.count();
  const int64_t submitted = Ms(e.run.submitted_at);
  // A run "submitted in the future" (clock skew) has not waited at all.
  int64_t steps = 0;
  if (now_ > e.run.submitted_at) {
    // now_ - submitted cannot overflow here unless the inputs span ~290 million years.
    steps = std::min<int64_t>((Ms(now_) - submitted) / interval, kMaxPriority);
  }
  e.effective = static_cast<int32_t>(std::min<int64_t>(kMaxPriority, base + steps));
  if (e.effective >= kMaxPriority) {
    e.next_change_ms = kNever;
    return;
  }
  // The next step boundary; saturate instead of overflowing for absurd submission times.
  const int64_t offset = (steps + 1) * interval;
  e.next_change_ms = submitted > kNever - offset ? kNever : submitted + offset;
}

int32_t RunQueue::EffectiveAt(int32_t priority, TimePoint submitted_at) const {
  Entry e;
  e.run.priority = std::clamp(priority, kMinPriority, kMaxPriority);
  e.run.submitted_at = submitted_at;
  ComputeAging(e);
  return e.effective;
}

void RunQueue::FenwickAdd(int bucket, int64_t delta) {
  for (int i = kMaxPriority - bucket + 1; i <= kBuckets; i += i & -i) fenwick_[i] += delta;
}

int64_t RunQueue::CountAbove(int bucket) const {
  int64_t sum = 0;
  for (int i = kMaxPriority - bucket; i > 0; i -= i & -i) sum += fenwick_[i];
  return sum;
}

void RunQueue::Link(Entry& e) {
  buckets_[e.effective].insert(&e);
  if (e.next_change_ms != kNever) changes_.insert(&e);
  FenwickAdd(e.effective, +1);
}

void RunQueue::Unlink(Entry& e) {
  buckets_[e.effective].erase(&e);
  if (e.next_change_ms != kNever) changes_.erase(&e);
  FenwickAdd(e.effective, -1);
}

void RunQueue::AdvanceTo(TimePoint now) {
  if (now <= now_) return;
  now_ = now;
  const int64_t now_ms = Ms(now_);
  while (!changes_.empty() && (*changes_.begin())->next_change_ms <= now_ms) {
    Entry& e = const_cast<Entry&>(**changes_.begin());
    ++version_;
    Unlink(e);
    ComputeAging(e);
    Link(e);
  }
}

std::optional<TimePoint> RunQueue::NextChangeAt() const {
  if (changes_.empty()) return std::nullopt;
  return TimePoint(Duration((*changes_.begin())->next_change_ms));
}

void RunQueue::Upsert(PendingRun run) {
  ++version_;
  run.priority = std::clamp(run.priority, kMinPriority, kMaxPriority);
  run.nodes = std::max(run.nodes, 1);
  auto found = by_id_.find(run.id);
  if (found == by_id_.end()) {
    auto entry = std::make_unique<Entry>();
    entry->run = std::move(run);
    ComputeAging(*entry);
    Link(*entry);
    const std::string_view key = entry->run.id;
    by_id_.emplace(key, std::move(entry));
    return;
  }
  Entry& e = *found->second;
  const bool reorder =
      e.run.priority != run.priority || e.run.submitted_at != run.submitted_at;
  if (reorder) Unlink(e);
  // Assign field by field: the map key views e.run.id, which must keep its storage.
  e.run.priority = run.priority;
  e.run.submitted_at = run.submitted_at;
  e.run.nodes = run.nodes;
  e.run.resources = run.resources;
  e.run.fleets = std::move(run.fleets);
  e.run.max_duration = run.max_duration;
  e.run.whole_instances = run.whole_instances;
  if (reorder) {
    ComputeAging(e);
    Link(e);
  }
}

bool RunQueue::SetPriority(std::string_view id, int32_t priority) {
  auto found = by_id_.find(id);
  if (found == by_id_.end()) return false;
  Entry& e = *found->second;
  priority = std::clamp(priority, kMinPriority, kMaxPriority);
  if (e.run.priority == priority) return true;
  ++version_;
  Unlink(e);
  e.run.priority = priority;
  ComputeAging(e);
  Link(e);
  return true;
}

bool RunQueue::Remove(std::string_view id) {
  auto found = by_id_.find(id);
  if (found == by_id_.end()) return false;
  ++version_;
  std::unique_ptr<Entry> entry = std::move(found->second);
  Unlink(*entry);
  by_id_.erase(found);
  return true;
}

const PendingRun* RunQueue::Find(std::string_view id) const {
  auto found = by_id_.find(id);
  return found == by_id_.end() ? nullptr : &found->second->run;
}

std::optional<int64_t> RunQueue::Position(std::string_view id) const {
  auto found = by_id_.find(id);
  if (found == by_id_.end()) return std::nullopt;
  const Entry* e = found->second.get();
  return CountAbove(e->effective) +
         static_cast<int64_t>(buckets_[e->effective].order_of_key(e)) + 1;
}

std::optional<int32_t> RunQueue::EffectivePriority(std::string_view id) const {
  auto found = by_id_.find(id);
  if (found == by_id_.end()) return std::nullopt;
  return found->second->effective;
}

RunQueue::Iterator::Iterator(const RunQueue* q, int bucket) : q_(q), bucket_(bucket) {
  if (bucket_ >= 0) {
    it_ = q_->buckets_[bucket_].begin();
    SkipEmpty();
  }
}

void RunQueue::Iterator::SkipEmpty() {
  while (bucket_ >= 0 && it_ == q_->buckets_[bucket_].end()) {
    if (--bucket_ >= 0) it_ = q_->buckets_[bucket_].begin();
  }
}

RunQueue::Item RunQueue::Iterator::operator*() const {
  const Entry* e = *it_;
  return Item{e->run, e->effective};
}

RunQueue::Iterator& RunQueue::Iterator::operator++() {
  ++it_;
  SkipEmpty();
  return *this;
}

}  // namespace berth::scheduling
