#pragma once
// Admissions: assume, confirm and roll back the engine's in-flight status writes.
//
// Threads. The writer-thread side (WriteAdmission, Verify and the Note* calls of every
// status write) records what the API answered under this object's own lock: the Finish inbox of
// the admissions' write entries (reconcilers/state/write_cache.h: WriteEntry), and the versions
// written; the loop thread takes it at the start of each pass (TakeNews) and settles it onto the
// memos of the working set (ApplyNews), and decides each pass whether an assumed admission still
// holds its blocks (StillHeld). Nothing here blocks on the API but the writer-thread tasks.
// Owns: the writers' news since the last pass, and the admissions' tickets. The assumptions
// themselves live on the run's memo (RunMemo::admission, RunMemo::status_write: WriteEntry), which
// only the loop thread touches, so a pass never looks a run's assumption up by key.
//
// Admission of a run, in an order that survives a crash at any point:
//   1. finalizer on the Run (so its Pods are cleaned up on delete),
//   2. Run status: phase Scheduled + fleet + placement + scheduledAt (the commit, guarded by
//      resourceVersion),
//   3. Fleet status counts the run on its instances (runsStarted, countedRuns: idempotent;
//      reconcilers/writers/fleet_status_writer.h),
//   4. Pods created already bound (reconcilers/writers/run_writes.h: CreatePods).
// Step 4 waits until step 3 is visible, so a run never runs uncounted. From step 2 on the engine
// assumes the placement (Admit: its blocks are held, so a block is never given twice while the
// watch catches up). The admission's WriteEntry: Assumed from Admit until the writer answers;
// Written once the API applied it (held until the cache shows the run placed: then erased,
// or no longer pending: Confirm + Erase).
//
// Ambiguous writes: a status write that got no answer, a 5xx, or a 409 (which may answer the
// client's own retry of a write that was applied) may have been applied. Such an admission stays
// assumed, its blocks held, until the informer cache shows the run admitted (applied) or a later
// resourceVersion of the run still pending (not applied: StillHeld), or a GET of the run says
// which (Verify). Only a 404 or a 422 (the server checked the resourceVersion and
// refused) releases the blocks at once. In WriteEntry states: an ambiguous answer is Unknown
// (base_rv: the version the write was guarded by); the pass marks it for a GET (Expire, when no
// write of the run is in flight: Verify), whose answer is Written (applied: held until the cache
// shows it) or Refused (not applied: Forget, the blocks free); a GET that got no answer leaves it
// Unknown, marked again by the next pass. A later pending version in the cache proves an Unknown
// admission not applied (StillHeld: Forget). A 404 or 422 answer is Refused: Forget at once.
//
// Written resourceVersions: after any status write of ours the run is left alone until the cache
// has that version (RunMemo::status_write, Written at that version until Add(observed) confirms
// it), so no decision is made twice from a stale object.

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/client.h"
#include "k8s/clock.h"
#include "k8s/events.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/engine/engine_api.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/state/run_memo.h"
#include "reconcilers/state/working_set.h"
#include "reconcilers/state/write_cache.h"
#include "scheduling/cycle_result.h"

namespace berth::reconcilers {

// Whether a failed write provably was not applied, even if an earlier attempt of the same request
// (the client retries on no answer and 5xx) got no answer: 404 (the object is gone) and 422 (the
// API server validates after it has checked the resourceVersion guard, so the object was
// unchanged: no earlier attempt was applied either). Anything else (no answer, 5xx, 409, ...) is
// ambiguous.
bool WriteRefused(const k8s::Status& s);

// The status that admits the run: phase Scheduled, fleet, placement (`pr`), scheduledAt `now`,
// `effective` as its effective priority.
RunStatus AdmittedStatus(const Run& run, const scheduling::Placement& placement, const PlacedRun& pr,
                         int32_t effective, k8s::TimePoint now);

class Admissions {
 public:
  using Dispatch = DispatchWrite;
  Admissions(k8s::ClientPtr client, const k8s::Clock& clock, k8s::EventRecorder& events, Dispatch dispatch)
      : client_(std::move(client)), clock_(clock), events_(events), dispatch_(std::move(dispatch)) {}
  // Told how long each admitted run waited; set before the writers start (not owned).
  void SetObserver(EngineObserver* observer) { observer_ = observer; }

  // ---- loop thread ----
  // Assumes the placement (its blocks are held from now on: the memo's `assumed`) and hands the
  // admission to a writer; false when the writer took nothing (nothing assumed).
  bool Admit(const Run& run, const scheduling::Placement& placement, int32_t effective, RunMemo& memo,
             k8s::TimePoint now);
  // Asks the API whether the Unknown admission `ticket` (guarded by `base_rv`) was applied (a
  // writer task; its answer is news: Written, Refused, or Unknown when the GET failed, then the
  // next pass asks again). False when the writer took nothing (the caller unmarks it).
  bool Verify(const Run& run, uint64_t ticket, uint64_t base_rv);
  // One answer for an admission's write entry (WriteEntry::Finish).
  struct Answer {
    std::string key;
    uint64_t ticket;
    WriteAnswer answer;
    uint64_t rv;  // Written: the version applied; Unknown: the version the write was guarded by
  };
  // What the writers reported since the last call.
  struct News {
    std::vector<Answer> admissions;                     // in the order they came
    std::unordered_map<std::string, uint64_t> written;  // key -> resourceVersion we wrote
    // How many answers `answer` came for `key`.
    size_t Count(const std::string& key, WriteAnswer answer) const;
  };
  News TakeNews();
  // Settles the news onto the memos: each answer Finishes its run's admission (a Refused one
  // rolled back), written versions awaited (status_write; those runs go into the working set).
  static void ApplyNews(const News& news, WorkingSet& working);
  // Puts the runs of answered admissions into the working set (after the pass took its touched
  // runs in, as before).
  static void ActivateNamed(const News& news, WorkingSet& working);
  // The writers wrote `key` since the last TakeNews (what they wrote is not yet in a memo).
  bool WrittenSinceTaken(const std::string& key) const;
  // The run's assumed admission, as the cache shows `run` now: false (and the assumption dropped)
  // when the cache shows a later pending version after an unconfirmed write (not applied), or
  // the run no longer pending, or being deleted while nothing of ours may have been applied.
  static bool StillHeld(RunMemo& memo, const Run& run);

  // ---- writer threads ----
  // Admission steps 1 and 2 (finalizer, then the status commit guarded by the resourceVersion);
  // notes a failed (rolled back), unconfirmed or applied admission.
  bool WriteAdmission(const Run& r, const RunStatus& next, uint64_t ticket);
  // A status write of ours was applied at `rv` / met a newer version (409: left alone until the
  // cache has a newer one; returns true, a conflict is no reason to back off).
  void NoteWritten(const std::string& key, uint64_t rv);
  bool NoteStale(const Run& run);

 private:
  bool VerifyNow(const Run& r, uint64_t ticket, uint64_t base_rv);  // the task of Verify
  void NoteAdmitted(const Run& r);
  void Answered(const std::string& key, uint64_t ticket, WriteAnswer answer, uint64_t rv);
  k8s::ObjectReference Ref(const Run& run) const;

  k8s::ClientPtr client_;
  const k8s::Clock& clock_;
  k8s::EventRecorder& events_;
  Dispatch dispatch_;
  EngineObserver* observer_ = nullptr;
  uint64_t next_ticket_ = 1;  // loop thread
  mutable std::mutex mu_;  // guards news_
  News news_;
};

}  // namespace berth::reconcilers
