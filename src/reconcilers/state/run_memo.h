#pragma once
// What the engine keeps of one run between passes (RunMemo) and how a pass holds each run of its
// working set (KeyedRun). Plain data: reconcilers/state/working_set.h owns the memos and says who may
// touch them (the loop thread only); the other components read and note their own fields.
//
// Each run is looked up once per pass (KeyedRun: its key, object and memo), and its object is
// read from the snapshot again only after a watch event touched it (RunMemo::run); what the
// steps ask of it first is read into the memo once per object read (RunMemo::Read). No step
// looks a run up by key (at 100,000 runs each such lookup cost about 25 ms a pass).
//
// What is kept between passes, and until when (no resourceVersion string, no pass number):
// - what was decided at the object the memo holds (quiet, queueable, the waiting status found
//   current, the placed record): valid until the object is read again (Read forgets them), which
//   happens only when the run or its Pods changed (WorkingSet::Touch drops `run`);
// - `queued`: whether the latest ReconcileAll that visited the run put it in the queue;
// - `touched`: the run changed since the working set last made its list;
// - the writes of ours the run waits for (admission, status_write: reconcilers/state/write_cache.h)
//   and the guards of its other writes (Pods ensured, the preemption announced, the spec admitted).
// This pass' facts of the run (touched, busy, positioned, its entry in the core's result) are
// not on the memo: WorkingSet keeps them for the pass, by the run's place in its list (`slot`).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/memo.h"
#include "base/time.h"
#include "k8s/objects.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/write_cache.h"
#include "reconcilers/objects/run_types.h"
#include "scheduling/cycle_result.h"

namespace berth::reconcilers {

struct RunMemo {
  // Layout: the fields the per-run steps read for every run of every pass (100,000 quiet
  // pending runs: Make, BlockHolders, ReconcileAll, the waiting statuses, the positions) come
  // first, next to each other, so that a pass reads two or three cache lines of each memo, not
  // eight (a memo is ~570 bytes); what only a run being decided reads comes after them.
  // The run as WorkingSet last read it from the snapshot; dropped when a watch event touches it.
  std::shared_ptr<const Run> run;
  // When the run's waiting status was last written or found current (NoteWaitWrite).
  k8s::TimePoint last_wait_write{};
  // What the per-run steps ask of `run` first, read once per object read (Read, by WorkingSet):
  // whether it has a preemption record, the queue position it shows (none while it is being
  // deleted: its place is not held for it). A step that needs more reads the run itself; these
  // spare the 100,000 runs that need nothing a visit to their object.
  bool has_preemption = false;
  std::optional<int64_t> shown_position;
  // For the waiting step (CarryOutWaiting), read likewise: since when the run waits (its
  // creation, or its return to the queue after a retry: Report's oldest wait), when it gives up
  // waiting for capacity (a deadline), and from when EndsWaiting holds for it (nullopt: never;
  // a run waiting for quota or preempting never ends waiting).
  k8s::TimePoint wait_since{};
  std::optional<k8s::TimePoint> gives_up_at, ends_waiting_at;
  // The run's place in the working set's list of this pass (KeyedRun), by which WorkingSet finds
  // this pass' facts of it; set by WorkingSet::Make (kNoSlot: never in a list).
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  uint32_t slot = kNoSlot;
  // WaitingStatusWriter found the status of the object the memo holds current for this reason
  // code and effective priority (Read clears it): until its refresh is due, a later pass with the
  // same two need not look again.
  bool current = false;
  scheduling::WaitCode current_code{};
  int32_t current_effective = 0;
  // A pending run found queueable (DecidePending: kQueue, not busy) at the object the memo holds:
  // later passes keep its queue entry as it is, without deciding again, until it or its Pods
  // change (Read clears it), or a Namespace does (its priority cap). See "Incremental passes".
  bool queueable = false;
  // The latest ReconcileAll that visited the run put it in the queue (its entry's owner is this
  // memo). Before a pass' ReconcileAll: the last pass did; after it: this pass did.
  bool queued = false;
  // The run or its Pods changed since the working set last made its list (WorkingSet::Touch sets
  // it; WorkingSet::Make takes it into the pass' facts: WorkingSet::Touched).
  bool touched = false;
  // A placed run found needing nothing (DecidePlaced: kNothing) at the object the memo holds:
  // later passes leave it alone until it, its Pods (both: Read clears it), one of its nodes or a
  // Fleet's spec changes, or `quiet_until` (its next deadline, at most status_refresh later). See
  // "Incremental passes".
  bool quiet = false;
  // Our last status write (any, not only admissions), value-less: Written at its resourceVersion
  // until the cache has it (Add), and the run is left alone until then.
  WriteEntry<std::monostate> status_write;
  // A placed run as BlockHolders last made it (RunController::PlacedRecord): the same while the
  // run and its Pods (quota_pending) are unchanged (Read forgets it) and the Namespaces (its
  // priority's cap) too, which its input says (a checked memo: base/memo.h). Empty while the run
  // is not placed.
  struct PlacedInputs {
    uint64_t namespaces_version = 0;  // the snapshot's Namespaces (k8s::Source::Version)
    friend bool operator==(const PlacedInputs&, const PlacedInputs&) = default;
  };
  base::Memo<PlacedInputs, std::shared_ptr<const PlacedRun>, base::DerefEqual> placed{"a placed run's record"};
  // The record BlockHolders made or kept this pass (nullptr: the run holds no placement).
  const PlacedRun* placed_record() const {
    const auto* p = placed.Peek();
    return p ? p->get() : nullptr;
  }
  // The admission (reconcilers/state/admissions.h): Assumed (in flight), Written (not yet in the
  // cache) or Unknown (outcome unknown, see "Ambiguous writes"; base_rv: the resourceVersion
  // its write was guarded by); none once the cache shows it or it is rolled back.
  WriteEntry<PlacedRun> admission;
  // The admission held (its blocks), or nullptr.
  const PlacedRun* assumed() const { return admission.Held() ? &admission.value : nullptr; }
  // Non-zero while the admission's outcome is unknown: the resourceVersion its write was guarded by.
  uint64_t unconfirmed_rv() const { return admission.state == WriteState::kUnknown ? admission.base_rv : 0; }
  // Non-zero while the cache has not yet shown our last status write: its resourceVersion.
  uint64_t awaiting_rv() const { return status_write.state == WriteState::kWritten ? status_write.written_rv : 0; }
  // Pods of this uid/attempt/scheduledAt were handed to a writer at this time (not again until
  // it is stale).
  std::string pods_ensured_for;
  // The spec (all but the priority) as first seen admitted, to tell the user when a later
  // change is ignored.
  std::string admitted_spec;
  // The victims of the last preemption this run's Preempting Event announced.
  std::string preemption_announced;
  base::MonoTime pods_ensured_at{};
  // (quiet's) until when, and its next deadline.
  k8s::TimePoint quiet_until{};
  std::optional<k8s::TimePoint> quiet_deadline;  // quiet_until without the refresh
  // Issue 44: Pods claiming the run may have changed since its strays were last looked for (set
  // when the run or its Pods are touched; RunReconciler looks when it is not busy).
  bool check_strays = true;
  // From `run`, once per object WorkingSet reads; forgets what was decided at the object before.
  void Read();
};

// A run of this pass' working set, by key (sorted): the key is a reference into the working set
// (which keeps it while the pass lasts: only WorkingSet::Make, before the list is made, and
// WorkingSet::Leave, after a run's last use, erase from it), the cached object (the memo's
// RunMemo::run, not a copy), and its memo (the working set keeps its memos' addresses). One lookup
// of each per pass.
struct KeyedRun {
  const std::string& key;
  const std::shared_ptr<const Run>& run;  // the memo's (RunMemo::run: set by WorkingSet, kept for the pass)
  RunMemo* memo;
};
using Keyed = std::vector<KeyedRun>;

// A pass' walks over 100,000 memos wait on memory, not on instructions (each memo a random place
// in memory): a walk asks for the lines of the memo kPrefetchAhead places ahead of the one it
// visits (what every pass reads: "Layout"; with `admission`, also the admission's state), so
// that they arrive while it works. A hint only: it changes no result.
inline constexpr size_t kPrefetchAhead = 8;
inline void PrefetchMemo(const RunMemo* m, bool admission = false) {
  if (m == nullptr) return;
  const char* p = reinterpret_cast<const char*>(m);
  __builtin_prefetch(p);
  __builtin_prefetch(p + 64);
  __builtin_prefetch(p + 127);
  if (admission) __builtin_prefetch(&m->admission.state);
}
inline void PrefetchAhead(const Keyed& keyed, size_t i, bool admission = false) {
  if (i + kPrefetchAhead < keyed.size()) PrefetchMemo(keyed[i + kPrefetchAhead].memo, admission);
}

}  // namespace berth::reconcilers
