#pragma once
// Issue 47 (3, 7): a Team's budgets measured for the core (scheduling::TeamBudget) and for its
// status (Team.status.budgets). Pure: the caller (TeamKeeper, once per status interval) hands in
// the Teams, what their running runs hold per fleet (the pass' view) and the time.
//
// A budget's window usage: the hours of Team.status.usageHistory (scheduling's UsageHistory,
// complete up to status.usageFoldedUntil; an hour without hourly detail spread evenly over the
// part of its day folded), plus what the team's running runs hold from usageFoldedUntil until now
// (a run that started after it is counted from usageFoldedUntil: the fold runs often, the error is
// at most its lag), each fleet's hours times its costWeight; for a parent team its sub-teams' too.
// The rate the refill time is projected with is what its running runs hold now (weighted).
// scheduling::MeasureBudget does the window's arithmetic.

#include <map>
#include <string>
#include <vector>

#include "reconcilers/objects/team_types.h"
#include "scheduling/budgets.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

// What a team's running runs hold per fleet (GPUs, millicores, bytes), by team name then fleet.
using HeldByFleet = std::map<std::string, std::map<std::string, scheduling::Resources>>;

// Team `name`'s budgets (its spec's, in order) measured at `now`; `teams` all Teams (for the
// sub-teams of a parent), `weights` each fleet's costWeight (a fleet not in it: 1).
std::vector<scheduling::TeamBudget> MeasureTeamBudgets(const Team& team, const std::vector<std::shared_ptr<const Team>>& teams,
                                                       const HeldByFleet& held, const std::map<std::string, double>& weights,
                                                       scheduling::TimePoint now);

// The hours of `team`'s usage of `resource` ("gpu", "cpu", "memory") on `fleet` ("": all) that
// MeasureBudget reads (weighted), from `since` on (earlier hours are left out).
std::vector<scheduling::UsedHour> UsedHours(const Team& team, const std::string& resource, const std::string& fleet,
                                            const std::map<std::string, double>& weights, scheduling::TimePoint since);

}  // namespace berth::reconcilers
