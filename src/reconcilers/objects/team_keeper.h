#pragma once
// Teams in the engine (issue 31): the Teams as the core sees them, each team's decayed usage, and
// the Team status writer.
//
// Threads. Everything but the writes: the engine's loop thread. The writes run on the engine's
// writer threads (KeyedWriter, key "team:<name>"), which answer each write to the last-written
// cache (LastWritten::Finish, under its own lock) for TakeFailures.
// Owns: each team's usage (GPU-hours and CPU-hours, decayed) and since when it holds, the use of
// each team's running runs in the last view (what accrues until the next), the usage the core
// sees (published once per status interval), what was last written per Team.
//
// Usage. usage(t + dt) = usage(t) * 2^(-dt / h) + use * h / ln 2 * (1 - 2^(-dt / h)), h the
// half-life (--fair-share-half-life), `use` what the team's running runs hold (GPUs, CPUs: the
// blocks' resources, scheduling::RunningUseByTeam) in the view of the pass before. A team this
// engine has not seen yet starts from its Team's status.usage decayed from status.usage.updatedAt
// (what the last leader wrote; the time between is not charged: it cannot be known), so usage
// survives restarts and failovers. Issue 47 (7): a second usage accrues alike from the use weighted
// by each fleet's costWeight (scheduling::WeightedUseByTeam): the core's fair share compares it;
// the status shows both (usage.weightedGpuHours beside usage.gpuHours).
// Budgets (issue 47 (3)): each Team's spec.budgets measured (MeasureTeamBudgets, team_budgets.h)
// at every publication of usage and when a Team's spec changes, handed to the core with its
// TeamSpec and written as status.budgets. The core sees usage as published at the last status interval
// (its fair-share order does not move, nor its input change, on every pass).
// Status. Each Team's status (per fleet its shares name: nominal, used, borrowed, lent, from
// scheduling::TeamBook::Report on the pass' view; usage; observedGeneration; a NamespaceConflict
// condition when another Team lists one of its namespaces first) is written when it differs from
// the last one written in anything but usage, and at least every status interval (default 1 min).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "k8s/client.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/state/write_cache.h"
#include "reconcilers/objects/team_budgets.h"
#include "reconcilers/objects/team_types.h"
#include "scheduling/snapshot.h"
#include "scheduling/teams.h"

namespace berth::reconcilers {

// Decays `hours` over `dt` and adds `rate` (GPUs or CPUs held all along) over it (see above).
double DecayedUsage(double hours, double rate, std::chrono::duration<double> dt, std::chrono::duration<double> half_life);

class TeamKeeper {
 public:
  using Dispatch = DispatchWrite;
  TeamKeeper(k8s::ClientPtr client, const PassSnapshot& caches, std::chrono::milliseconds half_life,
             std::chrono::milliseconds status_interval, Dispatch dispatch)
      : client_(std::move(client)),
        caches_(caches),
        half_life_(half_life),
        interval_(status_interval),
        dispatch_(std::move(dispatch)) {}

  // The Teams for the core's snapshot, with the published usage; empty without Teams. Accrues
  // usage up to `now` first (the use of the last view).
  std::vector<scheduling::TeamSpec> Specs(scheduling::TimePoint now);
  // After the pass' view has its Teams (`view_gen`: its generation): the use that accrues from
  // now on, and the Team status writes due. Returns when the next write is due (nullopt without
  // Teams).
  std::optional<scheduling::TimePoint> Update(const ClusterView& view, uint64_t view_gen, scheduling::TimePoint now);
  // Loop thread: the writes that failed since the last call are made again by the next Update.
  void TakeFailures();

  // Per team and fleet, what the last Team statuses say (for metrics).
  const std::vector<scheduling::TeamFleetReport>& report() const { return report_; }
  // For tests and the dashboard: a team's usage as kept now (nullopt: not known).
  std::optional<std::pair<double, double>> UsageOf(const std::string& team) const;

 private:
  struct Usage {
    std::string uid;  // of the Team it was read from (a Team made again starts anew)
    double gpu_hours = 0, cpu_hours = 0;
    scheduling::TimePoint at{};
    // Issue 47 (7): the same with each fleet's hours times its costWeight (what the core sees).
    double weighted_gpu_hours = 0, weighted_cpu_hours = 0;
  };
  void Accrue(const std::vector<std::shared_ptr<const Team>>& teams, scheduling::TimePoint now);
  TeamStatus StatusOf(const Team& team, const Usage& usage, scheduling::TimePoint now) const;
  // Writes each status that differs (or all, when `due`); false when one could not be queued.
  bool Write(const std::vector<std::shared_ptr<const Team>>& teams, bool due, scheduling::TimePoint now);
  // Writer thread: one Team's status patch (the write `ticket` of written_); false (logged)
  // unless written or gone.
  bool Patch(const std::string& name, uint64_t ticket, const std::string& patch);

  k8s::ClientPtr client_;
  const PassSnapshot& caches_;
  const std::chrono::milliseconds half_life_;
  const std::chrono::milliseconds interval_;
  Dispatch dispatch_;

  std::map<std::string, Usage> usage_;                              // by team name
  std::map<std::string, std::pair<double, double>> published_;     // the core's (GPU-h, CPU-h)
  std::optional<scheduling::TimePoint> published_at_;
  std::map<std::string, scheduling::Resources> use_;               // of the last view, by team
  std::map<std::string, scheduling::WeightedUse> weighted_use_;    // the same, weighted by costWeight
  // Issue 47 (3): each Team's budgets as measured at the last status interval (or when its spec
  // changed), from the view's running use per fleet and the fleets' costWeight.
  struct Measured {
    std::string uid;
    int64_t generation = 0;
    std::vector<scheduling::TeamBudget> budgets;
  };
  void MeasureBudgets(const std::vector<std::shared_ptr<const Team>>& teams, bool all, scheduling::TimePoint now);
  std::map<std::string, Measured> budgets_;  // by team name
  HeldByFleet held_;                         // of the last view
  std::map<std::string, double> weights_;    // each fleet's costWeight, of the last view
  std::map<std::string, std::string> conflicts_;                   // team -> a namespace another Team has
  uint64_t use_gen_ = 0;
  std::vector<scheduling::TeamFleetReport> report_;                // of the view use_gen_
  LastWritten<TeamStatus> written_;                                // last written or queued
  bool settled_ = false;
};

}  // namespace berth::reconcilers
