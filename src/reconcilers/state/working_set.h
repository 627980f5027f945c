#pragma once
// The working set of runs: which runs a pass visits, and each one's memo (reconcilers/state/run_memo.h).
//
// Threads: the engine's loop thread only (no lock).
// Owns: every run's memo, the set of runs the passes visit (by key, in key order), the last pass'
// list of them (Keyed), this pass' facts of each run in it (PassFacts, by its place in the list),
// the finished runs out of the set by when their TTL comes due. Reads the snapshot's runs through
// the `get` the caller hands to Make.
//
// Incremental passes: a pass visits the runs that can need something (every run not finished,
// every run with a write or an assumption of ours outstanding, every finished run that is being
// deleted, still has Pods to stop or whose TTL came due) and the runs that changed since the last
// pass (the run's own watch events and its Pods': Touch). A finished run that needs nothing leaves
// the set (Leave) until it changes again or its ttlSecondsAfterFinished comes due, so a pass costs
// O(changed + pending + running), not O(every run ever). The first pass after the caches sync
// visits every run (the informers report every object as added).
// The list of runs is the last pass' while no run entered or left the set (Activate, Leave and a
// deleted run make it anew); then Make walks it instead of the map and reads again only the runs
// that changed.
//
// This pass' facts (Touched, Busy, Positioned, WaitingOf) live here, one PassFacts per run of the
// list, found through the memo's place in it (RunMemo::slot), and go at the next BeginPass:
// nothing on a memo is compared with a pass number. What a memo keeps between passes is said in
// reconcilers/state/run_memo.h ("What is kept between passes").
//
// Cost: Make O(runs in the set), reading the snapshot once per touched run; the per-run facts
// O(1) through the memo, never a lookup by key.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "reconcilers/state/run_memo.h"
#include "scheduling/cycle_result.h"

namespace berth::reconcilers {

class WorkingSet {
 public:
  // A new pass begins: the facts below are this pass' (none until Make).
  void BeginPass() { facts_.clear(); }

  // This pass' facts of a memo (false, nullptr: none, or the run is not in this pass' list).
  bool Touched(const RunMemo& m) const { return Facts(m).touched; }
  bool Busy(const RunMemo& m) const { return Facts(m).busy; }
  bool Positioned(const RunMemo& m) const { return Facts(m).positioned; }
  const scheduling::WaitingRun* WaitingOf(const RunMemo& m) const { return Facts(m).waiting; }
  // The memo a queued run's entry carries (PendingRun::owner: the engine queues each run with its
  // memo, and a run whose memo is erased leaves the queue in the same pass).
  static RunMemo* OwnerOf(const void* owner) { return const_cast<RunMemo*>(static_cast<const RunMemo*>(owner)); }

  // The run changed (its object or its Pods): into the set, its object read again by Make.
  void Touch(const std::string& key);
  // Puts a run into the set; the next Make makes its list anew.
  void Activate(const std::string& key);
  // The run's memo, made when it has none.
  RunMemo& MemoOf(const std::string& key) { return memos_[key]; }
  RunMemo* Find(const std::string& key);
  const RunMemo* Find(const std::string& key) const;
  // Notes on `memo` (of run `key`) that its waiting status was written at `now`
  // (RunMemo::last_wait_write) and returns that write's undo (PassWrite::refused): the memo as it
  // was, so that a write refused as it is carried out is decided again by the next pass.
  std::function<void()> NoteWaitWrite(const std::string& key, RunMemo& memo, k8s::TimePoint now);
  size_t memos() const { return memos_.size(); }

  // The runs this pass visits, in key order: what the set held, what changed, and the finished
  // runs whose TTL is due at `now`; runs gone from the cache (`get` answers nullptr) leave it.
  // `news` is called every `news_every` runs (the queue view's priority news). The list stays
  // valid until the next Make (Leave erases a run after its last use).
  using Get = std::function<std::shared_ptr<const Run>(const std::string& key)>;
  const Keyed& Make(k8s::TimePoint now, const Get& get, const std::function<void()>& news, size_t news_every);
  // These runs have a write queued or in flight this pass.
  void MarkBusy(const std::unordered_set<std::string>& keys);
  // Each waiting run's entry in this pass' result (WaitingOf), through its owner.
  void MarkWaiting(const scheduling::CycleResult& result);
  // The position writes (PositionWriter::Write) of this pass include the run `key` (Positioned).
  void MarkPositioned(const std::string& key);
  // A walk over a pass' waiting runs (MarkWaiting, WaitingStatusWriter::CarryOut), at place `i`:
  // asks memory for the memos and facts it reads next (see PrefetchMemo).
  void PrefetchWaiting(const std::vector<scheduling::WaitingRun>& waiting, size_t i) const;
  // Erases the memos of runs the pass did not visit (made by MemoOf for runs not in the set).
  void DropUnvisited(const Keyed& keyed);
  // A visited finished run leaves the set; back when its TTL (`expiry`) comes due. Its memo goes.
  void Leave(const std::string& key, std::optional<k8s::TimePoint> expiry);
  // When the next finished run's TTL comes due.
  std::optional<k8s::TimePoint> NextExpiry() const;

 private:
  // Reads the run's object when a watch event dropped it (or it was never read).
  static void ReadIfChanged(const std::string& key, RunMemo& memo, const Get& get);

  // One run's facts in this pass (see the header comment).
  struct PassFacts {
    bool touched = false;  // it or its Pods changed since the last list (RunMemo::touched)
    bool busy = false;     // a write of it queued or in flight (MarkBusy)
    bool positioned = false;  // in this pass' position writes (MarkPositioned)
    const scheduling::WaitingRun* waiting = nullptr;  // its entry in this pass' result (MarkWaiting)
    // The memo whose facts these are (the list's at this place): a memo's slot is checked here,
    // in the line the facts are read from, not in the list (one memory access per lookup).
    const RunMemo* memo = nullptr;
  };
  // The memo's facts when it is in this pass' list (its slot holds it), else none. The slot is the
  // memo's while this pass' facts hold the memo there (a memo never in a list, or one whose run
  // left it, has none). Inline: every per-run step asks, 100,000 runs a pass.
  const PassFacts& Facts(const RunMemo& m) const {
    static const PassFacts kNone;
    return m.slot < facts_.size() && facts_[m.slot].memo == &m ? facts_[m.slot] : kNone;
  }
  PassFacts* MutableFacts(const RunMemo& m) {
    return m.slot < facts_.size() && facts_[m.slot].memo == &m ? &facts_[m.slot] : nullptr;
  }

  std::map<std::string, RunMemo*> active_;  // the set, each run with its memo (nullptr: not made yet)
  std::unordered_map<std::string, RunMemo> memos_;  // keeps its elements' addresses
  Keyed keyed_;            // the last pass' list of it
  bool keyed_stale_ = true;  // a run entered or left active_ since keyed_ was made
  std::vector<PassFacts> facts_;  // this pass', by place in keyed_ (empty until Make)
  std::set<std::pair<k8s::TimePoint, std::string>> expiries_;  // finished runs out of the set
};

}  // namespace berth::reconcilers
