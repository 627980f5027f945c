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

bool Cycle::FindMultiWithinShare(int32_t nodes, const LifetimeRule& rule, bool backfill, int32_t& fleet) {
  bool found = FindMulti(nodes, rule, backfill, chosen_, fleet);
  if (!found || run_team_ < 0) return found;
  // The best (fleet, domain) whose instances the team's share allows: a fleet it does not allow
  // is dropped and the next best is taken.
  const std::vector<int32_t> all = candidates_;
  while (found) {
    Resources use;
    for (const auto& key : chosen_) {
      const Instance& in = instances_[key.second];
      const Resources r = pools_[in.pool].layout.ResourcesFor(in.total);
      use = Resources{use.cpu_millis + r.cpu_millis, use.memory_bytes + r.memory_bytes, use.gpus + r.gpus};
    }
    const ShareCheck share = teams_.Check(run_team_, fleets_[fleet].spec->name, use, allow_borrow_);
    if (share.fits()) break;
    if (!share_skip_) {
      share_skip_ = share;
      share_fleet_ = fleet;
    }
    candidates_.erase(std::find(candidates_.begin(), candidates_.end(), fleet));
    found = FindMulti(nodes, rule, backfill, chosen_, fleet);
  }
  candidates_ = all;
  return found;
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

namespace {

struct BandEntry {
  const PendingRun* run;
  int32_t effective;
  size_t index;  // in queue order
};

// Runs of one effective priority (a band), considered as ConsiderWithTeams says.
class Band {
 public:
  Band(Cycle& cycle, CycleResult& result) : cycle_(cycle), teams_(cycle.teams()), result_(result) {}

  void Consider(const std::vector<BandEntry>& band) {
    const size_t band_start = result_.waiting.size();
    order_.clear();
    deferred_.clear();
    for (const BandEntry& e : band) {
      const size_t before = result_.waiting.size();
      if (cycle_.Consider(*e.run, false)) {
        deferred_.push_back(e);
      } else {
        Waited(e, before);
      }
    }
    std::stable_sort(deferred_.begin(), deferred_.end(), [&](const BandEntry& a, const BandEntry& b) {
      return teams_.FairBefore(teams_.TeamOf(a.run->id), teams_.TeamOf(b.run->id));
    });
    ConsiderBorrowers();
    if (!deferred_.empty()) RestoreQueueOrder(band_start);
  }

 private:
  // Whether the run just considered waits; then its entry gets the band's fields.
  bool Waited(const BandEntry& e, size_t before) {
    if (result_.waiting.size() == before) return false;
    result_.waiting.back().effective_priority = e.effective;
    result_.waiting.back().owner = e.run->owner;
    order_.push_back(e.index);
    return true;
  }

  // The deferred runs in fair-share order; one that waits behind a borrower of another team
  // placed before it says so.
  void ConsiderBorrowers() {
    int32_t first = -1;  // the team of the first borrower placed
    for (const BandEntry& e : deferred_) {
      const size_t before = result_.waiting.size();
      const size_t placed = result_.placements.size();
      cycle_.Consider(*e.run, true);
      const int32_t team = teams_.TeamOf(e.run->id);
      if (result_.placements.size() > placed) {
        if (first < 0) first = team;
      } else if (Waited(e, before) && first >= 0 && first != team) {
        cycle_.NoteBehind(result_.waiting.back().reason, team, first);
      }
    }
  }

  void RestoreQueueOrder(size_t band_start) {
    std::vector<std::pair<size_t, WaitingRun>> sorted;
    for (size_t k = band_start; k < result_.waiting.size(); ++k) {
      sorted.emplace_back(order_[k - band_start], std::move(result_.waiting[k]));
    }
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = 0; k < sorted.size(); ++k) result_.waiting[band_start + k] = std::move(sorted[k].second);
  }

  Cycle& cycle_;
  const TeamBook& teams_;
  CycleResult& result_;
  std::vector<BandEntry> deferred_;
  std::vector<size_t> order_;  // queue index of each waiting entry of the band
};

}  // namespace

void ConsiderWithTeams(Cycle& cycle, const RunQueue& queue, CycleResult& result) {
  Band consider(cycle, result);
  std::vector<BandEntry> band;
  size_t index = 0;
  for (RunQueue::Item item : queue) {
    if (!band.empty() && band.back().effective != item.effective_priority) {
      consider.Consider(band);
      band.clear();
    }
    band.push_back(BandEntry{&item.run, item.effective_priority, index++});
  }
  consider.Consider(band);
}

}  // namespace berth::scheduling::internal
