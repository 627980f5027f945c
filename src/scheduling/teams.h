#pragma once
// Teams sharing a cluster (issue 31): per team and fleet, nominal shares, borrowing and lending
// limits, the fair-share order of borrowers, and who may be reclaimed. Pure, like the rest of the
// core: built from the snapshot for one cycle, charged with the cycle's placements.
//
// Rules (docs/scheduling.md, "Teams"):
//  - A run belongs to the team of its namespace; a namespace in no Team is in the implicit team
//    (no nominal share anywhere); a namespace two Teams list belongs to the older (TeamPrecedes).
//  - Accounting is per fleet, in the resources the fleet's shares name (cpu, memory, gpu: a
//    resource no share of the fleet names is not limited by teams there), counting what the Pods
//    get: the blocks' resources, as ResourceQuota does. A fleet that no share names is all common
//    pool (issue 47): no limits, but where runs of two or more teams compete for it (running on it,
//    or queued naming it or no fleet: NoteQueued) every placement there borrows, so borrowers go
//    in fair-share order; where they do not, it has no team rules at all.
//  - A placement of `x` by team t on fleet f, per accounted resource (used u, nominal n):
//      u + x <= n                       within the nominal share: always allowed by the shares;
//      else it borrows, allowed when
//        u + x <= n + borrowingLimit    (no limit when the key is absent), and
//        x <= C - U - sum over other teams of max(0, n' - lendingLimit' - u')
//      (C: the fleet's capacity, the blocks of its valid instances; U: what all teams use there;
//      the sum: nominal that other teams keep, neither used nor lent).
//  - Reclaim: a run whose placement is within its team's nominal share on a fleet with
//    reclaim: Borrowed may stop runs of other teams that use more than their nominal share on
//    that fleet (in some accounted resource), whatever their priority.
//  - Fair share: a team's score is (GPU-hours, CPU-hours) of decayed usage / weight, itself and
//    its children summed; borrowers of one effective priority go by the scores of their top-level
//    teams, then of the child teams, then name; the implicit team goes last.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling {

// The resources a share may name, in the order they are checked and reported.
enum class ShareResource : uint8_t { kGpu = 0, kCpu = 1, kMemory = 2 };
inline constexpr int kShareResources = 3;

// What the shares say about one placement of a team on a fleet.
struct ShareCheck {
  enum Verdict : uint8_t {
    kFits,            // within the nominal share, or a borrow the rules allow
    kBorrows,         // it would borrow, and borrowing was not asked for
    kBorrowingLimit,  // beyond nominal + borrowingLimit
    kNothingToLend,   // beyond what the other teams lend and the common pool holds
  };
  Verdict verdict = kFits;
  ShareResource resource = ShareResource::kGpu;  // the first resource that does not fit
  int64_t needed = 0;       // the placement's amount of it
  int64_t used = 0;         // the team's use on the fleet
  int64_t nominal = 0;      // the team's nominal share
  int64_t may_borrow = 0;   // kBorrowingLimit: what it may still borrow; kNothingToLend: room to borrow
  bool fits() const { return verdict == kFits; }
};

// What a Team's status shows for one fleet its shares name (the engine writes it): per resource
// the fleet's shares name (`accounted`), in ShareResource order. Borrowed: use beyond nominal.
// Lent: the part of its idle nominal share that other teams' borrowing takes, counting the
// common pool (capacity no nominal share covers) as borrowed first, then the idle shares of
// lenders in name order, each up to its lending limit.
struct TeamFleetReport {
  std::string team;
  std::string fleet;
  std::array<bool, kShareResources> accounted{};
  std::array<int64_t, kShareResources> nominal{}, used{}, borrowed{}, lent{};
  friend bool operator==(const TeamFleetReport&, const TeamFleetReport&) = default;
};

// Issue 44 (6): of two Teams that list one namespace, the one that keeps it: the older
// (creation time), then the first by name. Whether `a` keeps a namespace that `b` lists too.
bool TeamPrecedes(const TeamSpec& a, const TeamSpec& b);

// What each team's running runs hold now, over every fleet (the blocks' resources, as the
// accounting counts them), by team name; the implicit team (namespaces in no Team) is "". What
// usage accrues from (engine: Team status.usage).
std::map<std::string, Resources> RunningUseByTeam(const ClusterSnapshot& snapshot);
// Issue 47 (7): the same, GPUs and CPUs each weighted by its fleet's cost_weight (what fair-share
// usage accrues from).
struct WeightedUse {
  double gpus = 0, cpus = 0;
};
std::map<std::string, WeightedUse> WeightedUseByTeam(const ClusterSnapshot& snapshot);
// Issue 47 (3): what each team's running runs hold per fleet (budgets: by team name, then fleet).
std::map<std::string, std::map<std::string, Resources>> RunningUseByTeamAndFleet(const ClusterSnapshot& snapshot);

// Amounts as FormatQuotaAmount spells them: "16 GPUs", "4 CPUs", "16Gi memory" ("16" when bare).
std::string FormatShareAmount(ShareResource r, int64_t amount, bool bare = false);

class TeamBook {
 public:
  // Builds the accounting from the snapshot: teams, namespaces, capacity of each fleet, use of
  // each running run (blocks clamped to the instance's).
  explicit TeamBook(const ClusterSnapshot& snapshot);

  // Whether any Team exists: without one, nothing here applies.
  bool active() const { return active_; }

  // The team of a run (by its namespace); the implicit team when its namespace is in none.
  int32_t TeamOf(std::string_view run_id) const;
  const std::string& Name(int32_t team) const { return teams_[team].name; }
  bool Implicit(int32_t team) const { return team == implicit_; }

  // Issue 47 (5): the teams of the queued runs, for the fleets no share names (which teams
  // compete for each). Once per cycle, before Check; stops as soon as every such fleet has two.
  void NoteQueued(const RunQueue& queue);
  // Whether runs of two or more teams compete for `fleet`, a fleet no share names.
  bool Competed(std::string_view fleet) const;

  // Whether the shares allow team `team` to place `use` on `fleet` now (borrowing only when
  // `allow_borrow`). A fleet without shares allows everything, and borrowing there is refused
  // (kBorrows) only while not `allow_borrow` where two or more teams compete for it (Competed).
  ShareCheck Check(int32_t team, std::string_view fleet, const Resources& use, bool allow_borrow) const;
  // Within the team's unused nominal share on an accounted fleet (what may reclaim).
  bool WithinNominal(int32_t team, std::string_view fleet, const Resources& use) const;
  // The team uses more than its nominal share of some accounted resource on the fleet.
  bool Borrowing(int32_t team, std::string_view fleet) const;
  // A placement of this cycle.
  void Charge(int32_t team, std::string_view fleet, const Resources& use);
  // Per named team and fleet one of its shares names (sorted by team, then fleet): see
  // TeamFleetReport.
  std::vector<TeamFleetReport> Report() const;

  // Issue 47 (3): the first budget of the team, then of its parent, that is spent at `now` on
  // `fleet` for a resource `request` asks for (scheduling/budgets.cc); budget nullptr when none.
  struct SpentBudget {
    const TeamBudget* budget = nullptr;
    std::string_view team;  // whose budget
  };
  SpentBudget Spent(int32_t team, std::string_view fleet, const Resources& request, TimePoint now) const;

  // Fair-share order of borrowers: whether team a goes before team b.
  bool FairBefore(int32_t a, int32_t b) const;
  // The usage per weight the order compares at the level where a and b differ (for messages):
  // GPU-hours, then the weight.
  struct Score {
    std::string team;
    double gpu_hours = 0;
    double cpu_hours = 0;
    int32_t weight = 1;
  };
  // The two sibling teams (or top-level teams) that decide between a and b.
  std::pair<Score, Score> Deciding(int32_t a, int32_t b) const;

 private:
  using Amounts = std::array<int64_t, kShareResources>;
  struct Team {
    std::string name;
    int32_t parent = -1;
    int32_t weight = 1;
    double gpu_hours = 0;  // itself and its children
    double cpu_hours = 0;
  };
  struct Share {
    Amounts nominal{};
    Amounts borrowing_limit{};  // -1: none
    Amounts lending_limit{};    // -1: none
  };
  struct FleetBook {
    std::array<bool, kShareResources> accounted{};
    Amounts capacity{};
    Amounts total_used{};
    std::vector<Share> shares;  // by team
    std::vector<Amounts> used;  // by team
  };
  // The teams that run on, or queue for, a fleet no share names: the first seen, and whether
  // another one is (-1: none yet).
  struct Contenders {
    int32_t first = -1;
    bool several = false;
    bool Add(int32_t team);  // true when it changed them
    bool With(const Contenders& o) const { return several || o.several || (first >= 0 && o.first >= 0 && first != o.first); }
  };
  using FleetSpecs = std::map<std::string_view, const FleetSpec*>;
  static Amounts AmountsOf(const Resources& r);
  // The constructor's steps: the teams (returns their specs, by index), the shares of the given
  // fleets, then those fleets' capacity and the use of the running runs.
  std::vector<const TeamSpec*> AddTeams(const std::vector<TeamSpec>& teams);
  void AddShares(const std::vector<const TeamSpec*>& specs, const FleetSpecs& fleet_specs);
  void AddCapacityAndUse(const ClusterSnapshot& snapshot, const FleetSpecs& fleet_specs);
  const FleetBook* Find(std::string_view fleet) const;
  std::vector<const Team*> Path(int32_t team) const;

  bool active_ = false;
  std::vector<Team> teams_;  // by name; the implicit team last
  std::vector<const std::vector<TeamBudget>*> budgets_;  // by team, as teams_ (nullptr: none); the snapshot's
  int32_t implicit_ = 0;
  std::map<std::string, int32_t, std::less<>> by_namespace_;
  std::map<std::string, FleetBook, std::less<>> fleets_;
  std::map<std::string, Contenders, std::less<>> pools_;  // issue 47 (5): the fleets no share names
  Contenders any_fleet_;                                  // of queued runs that name no fleet
};

}  // namespace berth::scheduling
