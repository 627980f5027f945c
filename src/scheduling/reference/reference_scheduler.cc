#include "scheduling/reference/reference_scheduler.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <array>

#include "scheduling/block_layout.h"
#include "scheduling/quota.h"
#include "scheduling/reference/reference_model.h"
#include "scheduling/reference/reference_preemption.h"
#include "scheduling/reference/reference_pass.h"

namespace berth::scheduling {

namespace {

using reference::Ms;
using reference_pass::Ref;

// Runs by effective priority (aged), then submission, then id; priorities and nodes clamped as
// the queue does. `runs` holds the clamped copies the entries point to.
std::vector<std::pair<int32_t, const PendingRun*>> QueueOrder(std::vector<PendingRun>& runs,
                                                               Duration aging_interval, TimePoint now) {
  std::vector<std::pair<int32_t, const PendingRun*>> order;
  for (PendingRun& r : runs) {
    r.priority = std::clamp(r.priority, kMinPriority, kMaxPriority);
    r.nodes = std::max(r.nodes, 1);
    int64_t effective = r.priority;
    if (aging_interval.count() > 0 && now > r.submitted_at) {
      effective =
          std::min<int64_t>(kMaxPriority, r.priority + (now - r.submitted_at) / aging_interval);
    }
    order.push_back({static_cast<int32_t>(effective), &r});
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    if (a.second->submitted_at != b.second->submitted_at) {
      return a.second->submitted_at < b.second->submitted_at;
    }
    return a.second->id < b.second->id;
  });
  return order;
}

// Teams: per effective priority, the runs that need not borrow in queue order, then those that
// would borrow by their teams' fair-share order (then queue order); waiting runs reported in
// queue order.
void ConsiderWithTeams(Ref& ref, const std::vector<std::pair<int32_t, const PendingRun*>>& order) {
  std::map<std::string, size_t> position;
  for (size_t k = 0; k < order.size(); ++k) position[order[k].second->id] = k;
  std::vector<WaitingRun> waiting;
  for (size_t begin = 0; begin < order.size();) {
    size_t stop = begin;
    while (stop < order.size() && order[stop].first == order[begin].first) ++stop;
    std::vector<const PendingRun*> deferred;
    ref.allow_borrow = false;
    for (size_t k = begin; k < stop; ++k) {
      if (ref.Consider(*order[k].second)) deferred.push_back(order[k].second);
    }
    std::stable_sort(deferred.begin(), deferred.end(), [&](const PendingRun* a, const PendingRun* b) {
      return ref.teams.Before(ref.teams.TeamOf(a->id), ref.teams.TeamOf(b->id));
    });
    ref.allow_borrow = true;
    for (const PendingRun* run : deferred) ref.Consider(*run);
    std::stable_sort(ref.out.waiting.begin(), ref.out.waiting.end(),
                     [&](const WaitingRun& a, const WaitingRun& b) { return position[a.run_id] < position[b.run_id]; });
    for (WaitingRun& w : ref.out.waiting) {
      w.effective_priority = order[begin].first;
      waiting.push_back(std::move(w));
    }
    ref.out.waiting.clear();
    begin = stop;
  }
  ref.out.waiting = std::move(waiting);
}

}  // namespace

CycleResult ReferenceSchedule(const ClusterSnapshot& snapshot,
                              const std::vector<PendingRun>& pending, Duration aging_interval,
                              TimePoint now) {
  std::vector<PendingRun> runs = pending;
  const std::vector<std::pair<int32_t, const PendingRun*>> order = QueueOrder(runs, aging_interval, now);
  std::set<std::string> queued;
  for (const PendingRun& r : runs) queued.insert(r.id);
  Ref ref(snapshot, now, queued);
  if (ref.teams.active) {
    for (const PendingRun& r : runs) ref.teams.queued.emplace_back(ref.teams.TeamOf(r.id), r.fleets);
    ConsiderWithTeams(ref, order);
    return std::move(ref.out);
  }
  for (const auto& [effective, run] : order) {
    const size_t waiting = ref.out.waiting.size();
    ref.Consider(*run);
    if (ref.out.waiting.size() > waiting) ref.out.waiting.back().effective_priority = effective;
  }
  return std::move(ref.out);
}

}  // namespace berth::scheduling
