#pragma once
// The position writer: carries out reconcilers/writers/queue_positions.h's plan, so that waiting runs
// show their place in the queue (status.queuePosition) without two runs ever showing one place.
//
// Threads. Places, Write and InFlight: the engine's loop thread. The sequence of writes runs on one
// writer thread (KeyedWriter key "queue-positions"), one write after the other.
// Owns: the places of this pass (the first position_limit waiting runs in queue order that stay
// in the queue), the runs the sequence in flight touches, and the write budget
// (position_writes_per_second). Reads the queue and the memos the caller hands in.
//
// One sequence at a time, and the next is planned only once the cache shows everything the last
// one wrote: planned from a cache that still shows a run at its old place, a move into its new
// place would put two runs there. A run's last move carries its whole waiting status (its
// observedGeneration arrives with its new place, so `kubectl berth priority` shows it at once);
// a move on the way there (out of a cycle) writes only the position.
// Cost: Places O(position_limit) queue entries; Write O(runs in the working set) for the plan's
// input when the last sequence is visible and the budget allows, else O(1).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/client.h"
#include "reconcilers/state/admissions.h"
#include "reconcilers/engine/engine_options.h"
#include "reconcilers/writers/queue_positions.h"
#include "reconcilers/state/run_memo.h"
#include "reconcilers/writers/run_writes.h"
#include "reconcilers/state/working_set.h"
#include "scheduling/run_queue.h"

namespace berth::reconcilers {

// A run the cycle left waiting for `w` fails now instead (no retry on no-capacity, or its
// retry.duration passed: RunMemo::ends_waiting_at); never for QuotaExceeded or Preempting.
bool EndsWaiting(const RunMemo& memo, const scheduling::WaitingRun& w, k8s::TimePoint now);

class PositionWriter {
 public:
  // The writer key of the sequence (run keys always contain a '/').
  static constexpr const char* kKey = "queue-positions";
  // Hands the sequence to a writer (background: it yields to decisions); false when not taken.
  using Dispatch = DispatchWrite;
  // Whether the sequence's writer still has it queued or in flight.
  using Busy = std::function<bool()>;
  // The whole waiting status of `run` showing `place`.
  using FullStatus =
      std::function<RunStatus(const Run& run, const scheduling::WaitingRun& w, std::optional<int64_t> place)>;
  PositionWriter(k8s::ClientPtr client, const EngineOptions& options, Admissions& admissions, RunWrites& writes,
                 Dispatch dispatch, Busy busy);

  // Loop thread: the places of this pass (the top of `queue`: runs with their entry in this
  // pass' result that do not end waiting now), in order; PlaceOf answers from them.
  const std::vector<std::string>& Places(const scheduling::RunQueue& queue, const WorkingSet& working,
                                         k8s::TimePoint now);
  std::optional<int64_t> PlaceOf(const std::string& key) const;
  // Loop thread: plans the moves that take every waiting run towards its place without two runs
  // ever showing one place, and hands them to one writer as a sequence. `frozen`: runs with a
  // write of their own queued or in flight or not yet in the cache (they keep their place).
  // Returns the runs in the sequence (their status is its alone this pass). When the budget is
  // spent, `deadline` is when it allows a write again.
  std::unordered_set<std::string> Write(const Keyed& runs, std::unordered_set<std::string> frozen,
                                        WorkingSet& working, const FullStatus& full_status, k8s::TimePoint now,
                                        std::optional<k8s::TimePoint>& deadline);
  // The runs the sequence in flight touches: left alone until it is done and visible.
  const std::unordered_set<std::string>& InFlight() const { return batch_; }

 private:
  struct PositionWrite {
    std::shared_ptr<const Run> run;
    std::optional<int64_t> to;
    std::optional<RunStatus> full;  // the whole status to write, or just the position
  };
  // Whether the last sequence is done and visible in the cache (then the next may be planned).
  bool LastVisible(const WorkingSet& working);
  // What the plan starts from: the positions runs show, the places, the runs to clear.
  PositionPlanInput Input(const Keyed& runs, std::unordered_set<std::string> frozen, const WorkingSet& working) const;
  // The moves as a test compares them (PassWrite::body, made on request): each run, its place
  // and, when the write carries it, its whole waiting status (the patch sent).
  static std::function<std::string()> BodyOf(std::shared_ptr<const std::vector<PositionWrite>> sequence);
  // Writer thread: the sequence, one write after the other.
  bool WriteSequence(const std::vector<PositionWrite>& writes);

  k8s::ClientPtr client_;
  const EngineOptions& options_;
  Admissions& admissions_;
  RunWrites& writes_;
  Dispatch dispatch_;
  Busy busy_;
  PositionBudget budget_;
  std::vector<std::string> top_;                       // this pass' places, in order
  std::unordered_map<std::string, int64_t> places_;    // and by run
  std::unordered_set<std::string> batch_;               // runs the sequence in flight touches
};

}  // namespace berth::reconcilers
