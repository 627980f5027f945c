#include "scheduling/cycle.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

void Cycle::TryReserve(const PendingRun& run) {
  const Timeline timeline(state_, running_entries_, capacity_.placed());
  std::optional<ReservationChoice> choice = EarliestReservation(ReserveInput{state_, timeline, filter_.candidates, filter_.need, filter_.levels}, run);
  if (choice) Reserve(run, choice->fleet, std::move(choice->instances), choice->start);
}

void Cycle::Reserve(const PendingRun& run, int32_t fleet, std::vector<int32_t> chosen,
                    int64_t start) {
  std::sort(chosen.begin(), chosen.end());
  Reservation reservation;
  reservation.run_id = run.id;
  reservation.fleet = state_.fleets[fleet].spec->name;
  capacity_.Reserve(chosen);
  for (int32_t i : chosen) {
    preempt_.Refresh(i);
    reservation.instances.push_back(state_.instances[i].spec->name);
  }
  if (start != kUnknownTime) reservation.earliest_start = TimePoint(Duration(start));
  has_reservation_ = true;
  reservation_start_ = start;
  out_.reservation = std::move(reservation);
}

}  // namespace berth::scheduling::internal
