#pragma once
// The run reconciler: one run's lifecycle from the caches. reconcilers/objects/lifecycle.h decides
// (DecidePending, DecidePlaced: pure, tested by table); this carries the decision out through
// RunWrites and notes what the next passes need (the run's memo, deadlines, refusals).
//
// Threads: the engine's loop thread only (the writes it dispatches run on the writers).
// Owns: the earliest deadline noted since the last TakeDeadline. Reads the caches, the run's memo
// (RunMemo: admitted_spec, quiet_*, pods_ensured_*), the pass' cluster view.
//
// A Scheduled or Running run the visit finds needing nothing (kNothing) is noted quiet (its
// resourceVersion and its next deadline, at most status_refresh away: RunMemo::quiet_*), so the
// next passes leave it alone until it, its Pods, one of its nodes or a Fleet's spec changes.
// Pods are asked for once per admission (again after 10 s without them in the cache, or on the
// next pass when the write was refused as it was carried out), and only once the Fleet's durable
// count has the run (admission step 3 before step 4).
// Cost: one run's Pods from the cache index and at most one dispatch per visit.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "k8s/clock.h"
#include "k8s/events.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/objects/lifecycle.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/state/working_set.h"

namespace berth::reconcilers {

class RunReconciler {
 public:
  // A kubelet refused one of a run's Pods on `node` for `why` (the instance pauses).
  using OnRefusal = std::function<void(const std::string& node, const std::string& why, k8s::TimePoint now)>;
  RunReconciler(const PassSnapshot& snapshot, RunWrites& writes, WorkingSet& working, k8s::EventRecorder& events,
                const k8s::Clock& clock, const EngineOptions& options, OnRefusal on_refusal)
      : snapshot_(snapshot),
        writes_(writes),
        working_(working),
        events_(events),
        clock_(clock),
        options_(options),
        on_refusal_(std::move(on_refusal)) {}

  // Lifecycle of one run from the caches; may dispatch writes. Returns true when it is pending
  // (belongs in the queue). `busy`: a write of the run is queued or in flight, or not yet seen.
  bool Reconcile(const Run& run, const ClusterView& view, k8s::TimePoint now, bool busy);
  // The earliest deadline the visits noted since the last call (a backoff's end, a placed run's
  // maxDuration or start timeout).
  std::optional<k8s::TimePoint> TakeDeadline();

 private:
  // A waiting run: carries out DecidePending (stop, invalid spec, suspend, leftover Pods, resume,
  // retry backoff). Returns whether it belongs in the queue.
  bool ReconcilePending(const Run& run, k8s::TimePoint now, bool busy);
  // A Scheduled or Running run: carries out DecidePlaced, then notes spec changes that do not
  // apply any more and keeps observedGeneration current.
  void ReconcilePlaced(const Run& run, const ClusterView& view, k8s::TimePoint now);
  // Carries out the decision for a placed run; false when there was nothing to do (or the Pods it
  // would create were just asked for).
  bool CarryOutPlaced(const Run& run, const PlacedDecision& d,
                      const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods, const ClusterView& view,
                      k8s::TimePoint now);
  // EnsurePods once per admission (again after 10 s without the Pods in the cache), once the
  // fleet's durable count has the run; true when it acted or waits for the count.
  bool CreatePodsOnce(const Run& run, const ClusterView& view, k8s::TimePoint now);
  // Notes on `memo` (of run `key`) that its Pods (a ticket's release) for `sent` were handed to a
  // writer now; returns the write's undo (PassWrite::refused): the memo as it was, so that a
  // write refused as it is carried out is sent again by the next pass, not 10 s later.
  RunWrites::Undo NoteSent(const std::string& key, RunMemo& memo, std::string sent);
  void Note(k8s::TimePoint at);
  // Issue 45. A pending ticket: whether it may queue (its workload exists, unfinished, held; its
  // labels readable, else reported; its stopped Pods gone). A placed ticket: the rules of
  // DecidePlaced in a ticket's terms (its workload's terminal condition, its pinned Pods running,
  // maxDuration, stop, suspend; kCreatePods: release and pin).
  bool TicketMayQueue(const Run& ticket, k8s::TimePoint now, bool busy);
  // How a ticket ends with its workload's own terminal condition (Complete: Succeeded; Failed:
  // Failed with its reason); nullopt while it has none. EndWithWorkload writes that status on a
  // ticket that is not placed (Pending: the workload finished outside berth's queue).
  static std::optional<PlacedDecision> DecideFinished(const Run& ticket, const workloads::Workload& w);
  void EndWithWorkload(const Run& ticket, const workloads::Workload& w, k8s::TimePoint now);
  PlacedDecision DecideTicket(const Run& ticket, const workloads::Workload& w,
                              const std::map<std::string, std::shared_ptr<const k8s::Pod>>& pods,
                              const std::map<std::string, std::string>& node_problems, k8s::TimePoint now);

  const PassSnapshot& snapshot_;
  RunWrites& writes_;
  WorkingSet& working_;
  k8s::EventRecorder& events_;
  const k8s::Clock& clock_;
  const EngineOptions& options_;
  OnRefusal on_refusal_;
  std::optional<k8s::TimePoint> deadline_;
};

}  // namespace berth::reconcilers
