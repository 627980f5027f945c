#include "scheduling/cycle.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

bool Cycle::TryReclaim(const PendingRun& run, WaitReason& reason) {
  // The fleets where the run is within its team's unused nominal share, whatever instance of
  // the fleet it would get.
  PreemptionRequest request;
  for (int32_t f : candidates_) {
    if (fleets_[f].spec->reclaim != ReclaimPolicy::kBorrowed) continue;
    bool any = false;
    bool within = true;
    for (int32_t p : fleets_[f].pools) {
      if (need_[p] < 0) continue;
      any = true;
      within = within && teams_.WithinNominal(run_team_, fleets_[f].spec->name, UseOf(run, p));
    }
    if (any && within) request.fleets.push_back(fleets_[f].spec->name);
  }
  if (request.fleets.empty()) return false;
  request.id = run.id;
  request.priority = run.priority;
  request.nodes = std::max<int32_t>(run.nodes, 1);
  request.resources = run.resources;
  request.max_duration = run.max_duration;
  const int32_t team = run_team_;
  request.reclaimable = [this, team](std::string_view fleet, std::string_view victim) {
    const int32_t t = teams_.TeamOf(victim);
    return t != team && teams_.Borrowing(t, fleet);
  };
  SyncWork();
  std::optional<PreemptionPlan> plan = work_.index->Plan(request);
  return plan && Adopt(run, std::move(*plan), true, reason);
}

Resources Cycle::UseOf(const PendingRun& run, int32_t pool) const {
  const BlockLayout& layout = pools_[pool].layout;
  const Resources one = layout.ResourcesFor(run.nodes <= 1 ? need_[pool] : layout.total_blocks());
  const int64_t n = std::max<int32_t>(run.nodes, 1);
  return Resources{one.cpu_millis * n, one.memory_bytes * n, one.gpus * n};
}

std::optional<Outcome> Cycle::ShareWait(const PendingRun& run, WaitReason& reason) {
  if (!share_skip_) return std::nullopt;
  if (share_skip_->verdict == ShareCheck::kBorrows) return Outcome::kDeferred;
  reason.code = WaitCode::kTeamShare;
  reason.fleet = share_fleet_;
  reason.share_verdict = share_skip_->verdict;
  reason.share_resource = static_cast<uint8_t>(share_skip_->resource);
  reason.share_needed = share_skip_->needed;
  reason.share_used = share_skip_->used;
  reason.share_nominal = share_skip_->nominal;
  reason.share_may_borrow = share_skip_->may_borrow;
  out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
  return Outcome::kWaits;
}

void Cycle::NoteBehind(WaitReason& reason, int32_t team, int32_t ahead) const {
  const auto [theirs, ours] = teams_.Deciding(ahead, team);
  reason.behind_team = theirs.team;
  reason.behind_gpu_hours = theirs.gpu_hours;
  reason.behind_weight = theirs.weight;
  reason.own_gpu_hours = ours.gpu_hours;
  reason.own_weight = ours.weight;
}

// Teams (issue 31): queue order, except that within one effective priority the runs that would
// borrow from other teams (or the common pool) are considered after the others, in fair-share
// order of their teams (then queue order). Waiting runs are reported in queue order.
void ConsiderWithTeams(Cycle& cycle, const RunQueue& queue, CycleResult& result) {
  struct Entry {
    const PendingRun* run;
    int32_t effective;
    size_t index;  // in queue order
  };
  std::vector<Entry> band;
  std::vector<Entry> deferred;
  std::vector<size_t> order;  // queue index of each waiting entry of the band
  const TeamBook& teams = cycle.teams();
  auto waited = [&](const Entry& e, size_t before) {
    if (result.waiting.size() == before) return false;
    result.waiting.back().effective_priority = e.effective;
    result.waiting.back().owner = e.run->owner;
    order.push_back(e.index);
    return true;
  };
  auto flush = [&] {
    const size_t band_start = result.waiting.size();
    order.clear();
    deferred.clear();
    for (const Entry& e : band) {
      const size_t before = result.waiting.size();
      if (cycle.Consider(*e.run, false)) {
        deferred.push_back(e);
      } else {
        waited(e, before);
      }
    }
    std::stable_sort(deferred.begin(), deferred.end(), [&](const Entry& a, const Entry& b) {
      return teams.FairBefore(teams.TeamOf(a.run->id), teams.TeamOf(b.run->id));
    });
    int32_t first = -1;  // the team of the first borrower placed
    for (const Entry& e : deferred) {
      const size_t before = result.waiting.size();
      const size_t placed = result.placements.size();
      cycle.Consider(*e.run, true);
      const int32_t team = teams.TeamOf(e.run->id);
      if (result.placements.size() > placed) {
        if (first < 0) first = team;
      } else if (waited(e, before) && first >= 0 && first != team) {
        cycle.NoteBehind(result.waiting.back().reason, team, first);
      }
    }
    if (!deferred.empty()) {
      std::vector<std::pair<size_t, WaitingRun>> sorted;
      for (size_t k = band_start; k < result.waiting.size(); ++k) {
        sorted.emplace_back(order[k - band_start], std::move(result.waiting[k]));
      }
      std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t k = 0; k < sorted.size(); ++k) result.waiting[band_start + k] = std::move(sorted[k].second);
    }
    band.clear();
  };
  size_t index = 0;
  for (RunQueue::Item item : queue) {
    if (!band.empty() && band.back().effective != item.effective_priority) flush();
    band.push_back(Entry{&item.run, item.effective_priority, index++});
  }
  flush();
}

}  // namespace berth::scheduling::internal
