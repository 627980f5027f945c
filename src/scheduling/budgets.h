#pragma once
// Issue 47 (3): budgets that queue (TeamBudget, snapshot.h; TeamBook::Spent, teams.h). The
// sentence of a run that waits for its team's budget.

#include <string>
#include <vector>

#include "scheduling/cycle_result.h"

namespace berth::scheduling {

// "team vision has used 5012.5 of its 5000 gpu-hours over 30d on all fleets; the budget refills
// at 2026-12-03T10:00:00Z" (kBudgetExhausted's numbers). The time is absolute so that the message
// does not change from pass to pass.
std::string BudgetSentence(const WaitReason& r);

// What a team used of one resource in one hour (on the fleets a budget counts, each fleet's hours
// times its costWeight): the hour [start, start + 1h); the current hour holds what was used so far.
struct UsedHour {
  TimePoint start;
  double amount = 0;
};

// Measures `budget` (resource, fleet, hours and period set) at `now` from the team's hourly usage
// (`used`, any order; hours before the window are ignored, the window's oldest hour counted for its
// part inside it) and what its running runs use per hour from now on (`rate`): sets `used` and,
// when the budget is spent, `refills_at` — the first time the window's usage falls under `hours`
// if the team starts nothing more and its running runs go on (the epoch when they alone keep it
// spent: they use `hours` or more per period).
void MeasureBudget(TeamBudget& budget, const std::vector<UsedHour>& used, double rate, TimePoint now);

}  // namespace berth::scheduling
