#pragma once
// Preemption carried out (issue 17; reclaims, issue 31): the runs that preempt (pending, with a
// status.preemption record written first) become the core's nominations, and their victims that
// still hold their placement are evicted.
//
// Threads: the engine's loop thread only. Owns nothing: reads the caches, hands each eviction to
// RunWrites (one writer task per victim). Cost: O(visited runs) to find the records (a memo flag,
// without reading the run), then O(victims + their Pods) per record.
//
// A record stands while every victim still placed may be evicted for it: of lower priority than
// the preemptor as the queue orders them, or whatever its priority for a reclaim (the core chose
// borrowers). A record whose victim may no longer be preempted is dropped (the core plans again).
// A victim is evicted once the cache shows the preemptor's record (the record always comes first)
// and not while a write of the victim is unseen (`frozen`). The nomination says its victims are
// stopping while any of them still holds its placement or has a Pod not finished on the
// nominated nodes, or the view still counts a stopped Pod's blocks on one of those nodes (its
// deletion seen only after the view was made): otherwise the core would plan again with other
// victims.
//
// The record names its victims by uid (status.preemption.victimUIDs: the status is the
// preemptor's owner's to read, and names only the victims of its namespace, issue 44): a victim is
// found among the runs placed this pass, or by its Pods that still stop on the record's nodes; a
// victim neither placed nor stopping there is done with. A record of an older berth (no uids)
// names every victim.

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/clock.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/state/run_memo.h"
#include "reconcilers/writers/run_writes.h"
#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

class Preemptions {
 public:
  Preemptions(const PassSnapshot& snapshot, RunWrites& writes) : snapshot_(snapshot), writes_(writes) {}

  // The pass' nominations from the preemption records of `keyed`'s runs that are pending and in
  // `queue`; `placed`: the runs holding blocks this pass (BlockHolders), `view`: the pass' view.
  // Evicts the victims that still hold their placement (but those in `frozen`).
  std::vector<scheduling::Nomination> Nominations(const Keyed& keyed,
                                                  const std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                                  const ClusterView& view, const scheduling::RunQueue& queue,
                                                  const std::unordered_set<std::string>& frozen, k8s::TimePoint now);

 private:
  // The run ids of the record's victims that are still placed (`placed_by_uid`: uid -> key of the
  // runs placed this pass) or have Pods not finished on its nodes; sorted. `stopping` gets those
  // found by such a Pod (a ticket's pinned Pods, issue 45, are not what PodsOf answers once the
  // ticket lost its placement).
  std::vector<std::string> VictimKeys(const RunStatus::Preemption& record,
                                      const std::unordered_map<std::string_view, std::string_view>& placed_by_uid,
                                      std::set<std::string>& stopping) const;
  // One victim of `preemptor`'s record: back in the queue or Failed, with reason Preempted
  // (Reclaimed for a reclaim's record), its message naming who and why.
  void Evict(const Run& victim, const Run& preemptor, const std::string& fleet, bool reclaim, k8s::TimePoint now);

  const PassSnapshot& snapshot_;
  RunWrites& writes_;
};

}  // namespace berth::reconcilers
