#include "scheduling/cycle.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

void Cycle::BuildBusyLists() {
  busy_ = running_entries_;
  busy_.insert(busy_.end(), placed_entries_.begin(), placed_entries_.end());
  std::sort(busy_.begin(), busy_.end(), [](const BusyEntry& a, const BusyEntry& b) {
    if (a.instance != b.instance) return a.instance < b.instance;
    return a.end < b.end;
  });
  busy_begin_.assign(state_.instances.size() + 1, 0);
  for (const BusyEntry& e : busy_) ++busy_begin_[e.instance + 1];
  for (size_t i = 1; i < busy_begin_.size(); ++i) busy_begin_[i] += busy_begin_[i - 1];
}

bool Cycle::LifetimeAllows(const Instance& in, int64_t start, const PendingRun& run) const {
  if (in.expiry == kNoExpiry) return true;
  if (start == kUnknownTime) return false;
  const int64_t needed_until =
      run.max_duration ? SaturatingAdd(start, std::max<int64_t>(run.max_duration->count(), 0))
                       : start + 1;
  return in.expiry >= needed_until;
}

int64_t Cycle::TimeWithFree(int32_t i, int32_t need) const {
  const Instance& in = state_.instances[i];
  if (in.free >= need) return now_;
  int64_t busy = in.busy;
  for (int32_t e = busy_begin_[i]; e < busy_begin_[i + 1]; ++e) {
    if (busy_[e].end == kUnknownTime) return kUnknownTime;
    busy -= busy_[e].blocks;
    if (in.total - std::min<int64_t>(busy, in.total) >= need) return std::max(busy_[e].end, now_);
  }
  return kUnknownTime;
}

int64_t Cycle::TimeWhollyFree(int32_t i) const {
  const Instance& in = state_.instances[i];
  if (in.free == in.total) return now_;
  const int32_t last = busy_begin_[i + 1] - 1;
  if (last < busy_begin_[i]) return kUnknownTime;
  return busy_[last].end == kUnknownTime ? kUnknownTime : std::max(busy_[last].end, now_);
}

void Cycle::TryReserve(const PendingRun& run) {
  BuildBusyLists();
  int64_t start = kUnknownTime;
  int32_t fleet = -1;
  std::vector<int32_t> chosen;
  const bool found = IsSliceGang(run) ? ChooseGangReservation(run, start, fleet, chosen)
                     : run.nodes <= 1  ? ChooseSingleReservation(run, start, fleet, chosen)
                                       : ChooseMultiReservation(run, start, fleet, chosen);
  if (found) Reserve(run, fleet, std::move(chosen), start);
}

bool Cycle::ChooseSingleReservation(const PendingRun& run, int64_t& best_start, int32_t& best_fleet,
                                    std::vector<int32_t>& best) const {
  int32_t best_instance = -1;
  for (int32_t f : candidates_) {
    for (int32_t i : state_.fleets[f].instances) {
      const Instance& in = state_.instances[i];
      if (in.availability != Availability::kAvailable || in.held_for >= 0 || need_[in.pool] < 0) {
        continue;
      }
      const int64_t start = TimeWithFree(i, need_[in.pool]);
      if (!LifetimeAllows(in, start, run)) continue;
      if (best_instance < 0 || start < best_start ||
          (start == best_start && i < best_instance)) {
        best_instance = i;
        best_start = start;
        best_fleet = f;
      }
    }
  }
  if (best_instance < 0) return false;
  best.push_back(best_instance);
  return true;
}

bool Cycle::ChooseMultiReservation(const PendingRun& run, int64_t& best_start, int32_t& best_fleet,
                                   std::vector<int32_t>& best) const {
  const auto k = static_cast<size_t>(run.nodes);
  std::vector<std::vector<std::pair<int64_t, int32_t>>> by_domain;
  std::vector<int32_t> eligible;
  for (int32_t f : candidates_) {
    const Fleet& fleet = state_.fleets[f];
    if (!fleet.cluster) continue;
    by_domain.assign(fleet.domain_end - fleet.domain_begin, {});
    for (int32_t i : fleet.instances) {
      const Instance& in = state_.instances[i];
      if (in.availability != Availability::kAvailable || in.domain < 0 || in.held_for >= 0 ||
          need_[in.pool] < 0) {
        continue;
      }
      by_domain[in.domain - fleet.domain_begin].push_back({TimeWhollyFree(i), i});
    }
    for (auto& group : by_domain) {
      if (group.size() < k) continue;
      std::sort(group.begin(), group.end());
      int64_t start = 0;
      if (EarliestGroupStart(run, group, best_fleet >= 0, best_start, eligible, start)) {
        best_start = start;
        best_fleet = f;
        best = eligible;
      }
    }
  }
  return best_fleet >= 0;
}

bool Cycle::EarliestGroupStart(const PendingRun& run, const std::vector<std::pair<int64_t, int32_t>>& group,
                               bool bounded, int64_t before, std::vector<int32_t>& eligible,
                               int64_t& start) const {
  // The group starts when its k-th instance frees; with lifetimes in play a later start may be
  // needed for k instances to outlive the run.
  const auto k = static_cast<size_t>(run.nodes);
  for (size_t j = k - 1; j < group.size(); ++j) {
    start = group[j].first;
    if (bounded && start >= before) return false;
    eligible.clear();
    for (size_t x = 0; x <= j && eligible.size() < k; ++x) {
      if (LifetimeAllows(state_.instances[group[x].second], start, run)) eligible.push_back(group[x].second);
    }
    if (eligible.size() == k) return true;
  }
  return false;
}

void Cycle::Reserve(const PendingRun& run, int32_t fleet, std::vector<int32_t> chosen,
                    int64_t start) {
  std::sort(chosen.begin(), chosen.end());
  Reservation reservation;
  reservation.run_id = run.id;
  reservation.fleet = state_.fleets[fleet].spec->name;
  for (int32_t i : chosen) {
    Unindex(i);
    state_.instances[i].reserved = true;
    Index(i);
    WorkReady(i);
    reservation.instances.push_back(state_.instances[i].spec->name);
  }
  if (start != kUnknownTime) reservation.earliest_start = TimePoint(Duration(start));
  has_reservation_ = true;
  reservation_start_ = start;
  ++version_;
  out_.reservation = std::move(reservation);
}

}  // namespace berth::scheduling::internal
