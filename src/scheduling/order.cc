#include "scheduling/order.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

void NoteBehind(const TeamBook& teams, WaitReason& reason, int32_t team, int32_t ahead) {
  const auto [theirs, ours] = teams.Deciding(ahead, team);
  reason.behind = BehindTeamWait{.team = theirs.team,
                                 .gpu_hours = theirs.gpu_hours,
                                 .weight = theirs.weight,
                                 .own_gpu_hours = ours.gpu_hours,
                                 .own_weight = ours.weight};
}

namespace {

struct BandEntry {
  const PendingRun* run;
  int32_t effective;
  size_t index;  // in queue order
};

// Runs of one effective priority (a band), considered as ConsiderInOrder says.
class Band {
 public:
  Band(Considerer& next, const TeamBook& teams, CycleResult& result) : next_(next), teams_(teams), result_(result) {}

  void Consider(const std::vector<BandEntry>& band) {
    const size_t band_start = result_.waiting.size();
    order_.clear();
    deferred_.clear();
    for (const BandEntry& e : band) {
      const size_t before = result_.waiting.size();
      if (next_.Consider(*e.run, false)) {
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
      next_.Consider(*e.run, true);
      const int32_t team = teams_.TeamOf(e.run->id);
      if (result_.placements.size() > placed) {
        if (first < 0) first = team;
      } else if (Waited(e, before) && first >= 0 && first != team) {
        NoteBehind(teams_, result_.waiting.back().reason, team, first);
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

  Considerer& next_;
  const TeamBook& teams_;
  CycleResult& result_;
  std::vector<BandEntry> deferred_;
  std::vector<size_t> order_;  // queue index of each waiting entry of the band
};

// Teams: band by band.
void ConsiderInBands(const RunQueue& queue, const TeamBook& teams, Considerer& next, CycleResult& result) {
  Band consider(next, teams, result);
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

}  // namespace

void ConsiderInOrder(const RunQueue& queue, const TeamBook& teams, Considerer& next, CycleResult& result) {
  if (teams.active()) {
    ConsiderInBands(queue, teams, next, result);
    return;
  }
  for (RunQueue::Item item : queue) {
    const size_t waiting = result.waiting.size();
    next.Consider(item.run, true);
    if (result.waiting.size() > waiting) {
      result.waiting.back().effective_priority = item.effective_priority;
      result.waiting.back().owner = item.run.owner;
    }
  }
}

}  // namespace berth::scheduling::internal
