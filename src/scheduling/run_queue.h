#pragma once
// The global queue of Pending runs (api.md, "Ordering").
//
// Order: effective priority (higher first), then submission time (earlier first), then id.
// Aging: effective = min(100, priority + floor((now - submitted_at) / aging_interval)); an
// interval of 0 turns aging off.
//
// How aging stays cheap: a run's effective priority only changes at the known instants
// submitted_at + k * aging_interval. The queue keeps one bucket per effective priority (0..100),
// each ordered by (submitted_at, id), and a set of "next change" instants. AdvanceTo(now) moves
// only the runs whose effective priority changed, each in O(log n). A run moves at most 100
// times over its whole life, so aging costs amortized O(log n) per move and nothing per tick.
//
// A static sort key cannot do this: with a 15m interval, p=51 submitted at 14m and p=50
// submitted at 0 swap places every 15 minutes.
//
// Not thread-safe: one owner (the scheduling loop) uses it. Neither copyable nor movable: keep it
// in its owner (or behind a unique_ptr) for the life of the process.

#include <cstddef>
#include <cstdint>
#include <ext/pb_ds/assoc_container.hpp>
#include <ext/pb_ds/tree_policy.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "scheduling/types.h"
#include "base/priority.h"

namespace berth::scheduling {

using base::kDefaultPriority;
using base::kMaxPriority;
using base::kMinPriority;
// How long a pending run waits for each step of aging (one effective priority), by default.
inline constexpr Duration kDefaultAgingInterval = std::chrono::minutes(15);

// What the scheduling cycle needs to know about a Pending run.
struct PendingRun {
  std::string id;                        // "namespace/name"; unique within a queue
  int32_t priority = kDefaultPriority;   // clamped to 0..100 by the queue
  TimePoint submitted_at{};              // first submission; a retry keeps it (keeps its place)
  int32_t nodes = 1;                     // values below 1 are treated as 1
  Resources resources;                   // per node
  std::vector<std::string> fleets;       // candidate Fleet names; empty means any Fleet
  std::optional<Duration> max_duration;  // nullopt means "off"
  // Run spec.wholeInstances. nullopt: by `nodes` (1: a slice of one instance; more: whole idle
  // instances of one cluster fleet/domain). false with nodes > 1: a gang of `nodes` slices, each
  // covering `resources`, all or nothing in one fleet (several may share an instance). true:
  // every rank on a whole idle instance (for nodes 1 too; more nodes: one cluster fleet/domain).
  std::optional<bool> whole_instances;
  // Run spec.topology (issue 48): the level its whole instances stay within (place.h).
  TopologyRequest topology;
  // What the run's own Pods that exist while it waits (a queued Pod or Pod group's gated Pods,
  // issue 45) already count in its namespace's ResourceQuota usage (NamespaceQuota::limits' used),
  // by quota key (kQuotaCpu, kQuotaMemory, kQuotaPods, "requests.<resource>"). The cycle takes it
  // out of the usage while it considers the run and keeps it out when it places the run (then
  // the placement is charged instead): each of its Pods counts once. Empty for most runs.
  std::map<std::string, int64_t> quota_counted;
  // The longest terminationGracePeriodSeconds any of its Pods has, when berth cannot cap it (a
  // workload's Pods, made by their own controller: issue 44/45); 0: nothing to bound (a Run, whose
  // Pods berth creates capped). A fleet whose max_grace_seconds is shorter is not a candidate.
  int64_t grace_seconds = 0;
  // The caller's handle for the run, handed back in WaitingRun::owner: the core never reads it.
  // The engine keeps its per-run record here, so that a pass finds it without a lookup by id.
  const void* owner = nullptr;

  friend bool operator==(const PendingRun&, const PendingRun&) = default;
};

// A gang of slices: more than one rank, each on blocks that cover its request (whole_instances
// false), not whole instances.
inline bool IsSliceGang(const PendingRun& run) { return run.nodes > 1 && run.whole_instances == false; }
// One rank on a whole idle instance (whole_instances true with nodes 1).
inline bool IsWholeSingle(const PendingRun& run) { return run.nodes <= 1 && run.whole_instances == true; }

class RunQueue {
 private:
  struct Entry;
  struct BucketOrder {
    bool operator()(const Entry* a, const Entry* b) const;
  };
  struct ChangeOrder {
    bool operator()(const Entry* a, const Entry* b) const;
  };
  using Bucket = __gnu_pbds::tree<const Entry*, __gnu_pbds::null_type, BucketOrder,
                                  __gnu_pbds::rb_tree_tag,
                                  __gnu_pbds::tree_order_statistics_node_update>;
  static constexpr int kBuckets = kMaxPriority + 1;

 public:
  // `aging_interval` <= 0 turns aging off.
  explicit RunQueue(Duration aging_interval);
  ~RunQueue();
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  Duration aging_interval() const { return aging_interval_; }

  // The queue's notion of "now": the latest time passed to AdvanceTo (TimePoint::min() before
  // the first call). Effective priorities are those at this instant.
  TimePoint now() const { return now_; }

  // Moves the queue's clock forward and re-places the runs whose effective priority changed.
  // O(m log n) for m changed runs. A time earlier than now() is ignored: effective priorities
  // never go down because a clock stepped back.
  void AdvanceTo(TimePoint now);

  // The next instant at which some run's effective priority changes, if any; a caller that wants
  // queue positions to stay fresh without polling can wake up then.
  std::optional<TimePoint> NextChangeAt() const;

  // Adds `run`, or replaces the queued run with the same id. The priority is clamped to 0..100 and
  // nodes to >= 1. O(log n); when neither priority nor submitted_at changed the order is untouched.
  void Upsert(PendingRun run);

  // Changes the priority of a queued run; its new place is effective at once. O(log n).
  // Returns false when no run has this id.
  bool SetPriority(std::string_view id, int32_t priority);

  // Removes a run. O(log n). Returns false when no run has this id.
  bool Remove(std::string_view id);

  size_t size() const { return by_id_.size(); }
  bool empty() const { return by_id_.empty(); }
  bool Contains(std::string_view id) const { return by_id_.count(id) != 0; }

  // The queued run with this id, or nullptr. Valid until that run is removed or upserted.
  const PendingRun* Find(std::string_view id) const;

  // Changes with every Upsert, every Remove and SetPriority that changed something, and every
  // AdvanceTo that moved a run: a cycle over an unchanged version saw the same queue (the
  // engine's pass decides again only then, see RunController::CoreResultStands).
  uint64_t version() const { return version_; }

  // 1-based place of the run in queue order, exact. O(log n). nullopt when not queued.
  std::optional<int64_t> Position(std::string_view id) const;

  // The run's effective priority at now(). nullopt when not queued.
  std::optional<int32_t> EffectivePriority(std::string_view id) const;

  // The effective priority at now() of a run with this priority (clamped to 0..100) and
  // submission time, whether or not it is queued: what Upsert would give it. O(1).
  int32_t EffectiveAt(int32_t priority, TimePoint submitted_at) const;

  // One queued run as seen through iteration.
  struct Item {
    const PendingRun& run;
    int32_t effective_priority;
  };

  // Forward iteration in queue order. Any modification of the queue (including AdvanceTo)
  // invalidates iterators.
  class Iterator {
   public:
    Item operator*() const;
    Iterator& operator++();
    bool operator==(const Iterator& o) const {
      return bucket_ == o.bucket_ && (bucket_ < 0 || it_ == o.it_);
    }

   private:
    friend class RunQueue;
    Iterator(const RunQueue* q, int bucket);
    void SkipEmpty();
    const RunQueue* q_;
    int bucket_;  // effective priority of the current bucket, -1 at the end
    Bucket::const_iterator it_;
  };
  Iterator begin() const { return Iterator(this, kMaxPriority); }
  Iterator end() const { return Iterator(this, -1); }

 private:
  // Effective priority of `e` at now_ and the next instant (ms since epoch) it changes.
  void ComputeAging(Entry& e) const;
  void Link(Entry& e);    // into its bucket, the change set and the counts
  void Unlink(Entry& e);  // the reverse
  void FenwickAdd(int bucket, int64_t delta);
  int64_t CountAbove(int bucket) const;  // runs in buckets with a higher effective priority

  Duration aging_interval_;
  TimePoint now_ = TimePoint::min();
  uint64_t version_ = 0;
  std::unordered_map<std::string_view, std::unique_ptr<Entry>> by_id_;  // keys view Entry::run.id
  std::vector<Bucket> buckets_;                                          // by effective priority
  std::set<const Entry*, ChangeOrder> changes_;  // runs whose effective priority will still rise
  std::vector<int64_t> fenwick_;                 // counts, indexed by 100 - effective priority
};

}  // namespace berth::scheduling
