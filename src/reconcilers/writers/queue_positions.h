#pragma once
// status.queuePosition of pending runs, kept as one consistent picture of the queue.
//
// Each Run carries its own position, and no API call writes two objects at once, so the positions
// a user reads across runs can only be consistent if the writes come in a safe order. The rule
// kept here: a run is written into position p only once no other run shows p. Each pass plans the
// moves from what every run shows now to the true order (PlanPositionMoves) and one writer carries
// them out one after the other, each write completing before the next starts (each guarded by the
// run's resourceVersion; the first failure ends the sequence). So at any moment:
//   - no two runs show the same position (unless they already did before the plan: e.g. written
//     by an older controller; those are repaired first-come),
//   - a run shows either its old place or its new one, never someone else's,
//   - gaps are places whose run just left (admitted, deleted, failed) or whose run is between
//     its two writes while a cycle of swaps is broken (below).
// Chains (everyone shifts up one when the head is admitted, down one when a run is inserted) are
// ordered from the free end. A cycle (three runs rotating after a priority patch) has no free
// end: its top member first shows no position, the others move, then it takes its place.
//
// PositionBudget bounds the writes per second (a token bucket on the injected clock); a plan is
// cut to the budget, and any prefix of a plan is itself safe.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/clock.h"

namespace berth::reconcilers {

struct PositionMove {
  std::string key;
  std::optional<int64_t> to;  // nullopt: the run shows no position
  bool operator==(const PositionMove& o) const { return key == o.key && to == o.to; }
};

struct PositionPlanInput {
  // The runs that should show a position, in queue order: top[i] belongs at place i + 1.
  std::vector<std::string> top;
  // Runs that should show no position (queued beyond the limit).
  std::vector<std::string> clear;
  // What every run shows now (key -> position), whatever its phase: runs not in `top` or
  // `clear` keep their position (their own write clears it, an admission for example) and hold
  // it until then.
  std::unordered_map<std::string, int64_t> shown;
  // Runs that must not be written now (a write of theirs is in flight): they keep their place.
  std::unordered_set<std::string> frozen;
};

// The writes that take the shown positions towards the true ones, in an order in which every
// prefix keeps positions unique (see above): clears first, then chains from their free end, top of
// the queue first. At most `budget` moves. Deterministic. A plan that was cut short, or that
// contained frozen runs, is completed by later plans.
std::vector<PositionMove> PlanPositionMoves(const PositionPlanInput& in, size_t budget);

// At most `per_second` writes per second on average, `burst` at once. Not thread-safe (the loop
// thread owns it).
class PositionBudget {
 public:
  PositionBudget(double per_second, double burst) : rate_(per_second), burst_(burst), tokens_(burst) {}
  // Writes allowed at `now`.
  size_t Available(k8s::TimePoint now);
  // `n` writes were made (n <= Available(now)).
  void Spend(size_t n);
  // `n` writes spent were not made after all (their sequence refused as it was carried out).
  void Refund(size_t n);

 private:
  double rate_, burst_, tokens_;
  std::optional<k8s::TimePoint> last_;
};

}  // namespace berth::reconcilers
