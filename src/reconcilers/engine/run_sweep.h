#pragma once
// The pass' sweeps over the runs it visits (the working set's list, reconcilers/state/working_set.h):
// which of them hold blocks (BlockHolders), each one's lifecycle carried out with the pending ones
// put into the queue (ReconcileAll), and the finished ones that need nothing more leaving the set
// or deleted after their time to live (Settle).
//
// Threads: the engine's loop thread only. Owns: what changed since the last pass that the sweeps
// read (BeginPass: changed Nodes, a Fleet's spec, a Namespace). Writes the queue (loop thread only) and the memos; reads the caches; hands writes to
// RunReconciler and RunWrites.
// Cost: each sweep O(visited runs) with O(1) per quiet run (a memo comparison, no decision and,
// for BlockHolders, no read of the run). A pass reconciles at most refreshes_per_pass of the quiet
// placed runs whose only due thing is their periodic look (80,000 coming due in one pass cost 300
// ms); the rest are left for the next passes (Reconciled::refresh_left).
//
// Quiet runs ("Incremental passes" in reconcilers/state/working_set.h): a Scheduled or Running run that the
// last visit found needing nothing (RunMemo::quiet) is not reconciled again, though its blocks
// still count, until it, its Pods, one of its nodes or a Fleet's spec changes, or its next
// deadline (at most status_refresh away). Likewise a pending run found queueable keeps its queue
// entry without being decided again until it, its Pods or a Namespace (its priority cap) changes
// (QueuedQuietly: RunMemo::queueable); the core still sees it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "k8s/clock.h"
#include "reconcilers/state/admissions.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/engine/forecaster.h"
#include "reconcilers/state/run_memo.h"
#include "reconcilers/objects/run_reconciler.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/state/working_set.h"
#include "scheduling/run_queue.h"

namespace berth::reconcilers {

class RunSweep {
 public:
  static constexpr size_t kNewsEvery = 256;  // runs between two `news` calls in a per-run loop

  // The engine's parts the sweeps use (not owned; they outlive the sweep). `news` shows the queue
  // view's priority news (called every kNewsEvery runs).
  struct Parts {
    const PassSnapshot& snapshot;
    const EngineOptions& options;
    WorkingSet& working;
    scheduling::RunQueue& queue;
    Admissions& admissions;
    RunReconciler& reconciler;
    RunWrites& writes;
    Forecaster& forecaster;
  };
  RunSweep(Parts parts, std::function<void()> news) : p_(parts), news_(std::move(news)) {}

  // What changed since the last pass (EngineLoop::TakeChanges), for the quiet runs.
  void BeginPass(std::unordered_set<std::string> changed_nodes, bool fleets_changed, bool namespaces_changed);

  // Runs holding blocks: admitted in the snapshot (each one's record kept in RunMemo::placed while
  // its object, its Pods and the Namespaces are unchanged), or assumed while our admission write
  // catches up. Memos of runs gone from the working set are erased.
  std::vector<std::shared_ptr<const PlacedRun>> BlockHolders(const Keyed& keyed);

  // The lifecycle of every visited run (RunReconciler); the pending ones go into the queue, the
  // rest leave it.
  struct Reconciled {
    std::unordered_set<std::string> frozen;  // runs whose queuePosition must not be written now
    std::optional<k8s::TimePoint> deadline;  // the earliest the reconciler noted
    bool refresh_left = false;               // periodic looks put off to the next passes
  };
  Reconciled ReconcileAll(const Keyed& keyed, const ClusterView& view, k8s::TimePoint now);

  // Each visited run not queued teaches the forecaster its runtime; a finished run that needs
  // nothing more (no write of ours outstanding, no Pod to stop: `busy` as the pass began) leaves
  // the working set until its TTL comes due; one whose TTL is due is deleted (and visited until it
  // is gone).
  void Settle(const Keyed& visited, const std::unordered_set<std::string>& busy, k8s::TimePoint now);

  // When a finished run is to be deleted (spec.ttlSecondsAfterFinished, else --finished-run-ttl);
  // nullopt: never, or not finished.
  std::optional<k8s::TimePoint> ExpiryOf(const Run& run) const;

 private:
  // A placed run the last pass found needing nothing, unchanged since (RunMemo::quiet):
  // kQuiet before quiet_until; kRefreshDue when only its periodic look (status_refresh) is due,
  // which a pass may put off (refreshes_per_pass); kChanged when it must be reconciled now.
  enum class Stillness { kChanged, kQuiet, kRefreshDue };
  Stillness Quiet(const Run& run, const RunMemo& memo, k8s::TimePoint now) const;
  // A pending run the last pass queued (`was_queued`) whose queue entry stands without a decision.
  bool QueuedQuietly(const RunMemo& memo, bool was_queued) const;
  // An admitted run's record for the cluster view (RunMemo::placed).
  std::shared_ptr<const PlacedRun> PlacedRecord(const std::string& key, const Run& run) const;
  // The queue entry of a pending run (its memo as owner), changed only when it differs.
  void Enqueue(const std::string& key, const Run& run, RunMemo& memo);
  // Runs this pass did not queue (`queued` did) leave the queue.
  void DropUnqueued(size_t queued);

  Parts p_;
  std::function<void()> news_;
  std::unordered_set<std::string> changed_nodes_;
  bool fleets_changed_ = true;
  bool namespaces_changed_ = true;
};

}  // namespace berth::reconcilers
