#pragma once
// The working state of the reference scheduler (reference_scheduler.h), internal to it: its
// instances, and the rules of TeamBook (teams.h) written out plainly and independently of it.
// Not for production.

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "scheduling/block_layout.h"
#include "scheduling/quota.h"
#include "scheduling/run_queue.h"
#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling::reference {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();  // no expiry / unknown time

inline int64_t Ms(TimePoint t) { return t.time_since_epoch().count(); }

inline int64_t Add(int64_t a, int64_t b) { return b > 0 && a > kNever - b ? kNever : a + b; }

struct Inst {
  const InstanceSpec* spec = nullptr;
  int fleet = -1;
  BlockLayout layout;
  bool valid = false;
  bool available = false;
  std::optional<std::string> domain;  // set for instances that may take multi-node runs
  int64_t expiry = kNever;
  int64_t runs_started = 0;
  int64_t busy = 0;
  std::vector<std::pair<int64_t, int32_t>> holds;  // (end, blocks)
  std::vector<std::pair<std::string, int32_t>> holders;  // (run id, blocks), this cycle's too
  bool reserved = false;
  std::string held_for;  // kept for this preempting run ("" when none)

  int32_t total() const { return layout.total_blocks(); }
  int32_t free() const {
    return total() - static_cast<int32_t>(std::min<int64_t>(busy, total()));
  }
};

// Teams (issue 31), written out plainly: every use is a list entry, sums are recomputed.
struct RefTeams {
  using Amounts = std::array<int64_t, 3>;  // gpu, cpu, memory
  struct Use {
    int team;
    std::string fleet;
    Amounts amounts;
  };
  bool active = false;
  std::vector<const TeamSpec*> teams;      // by name, first of a name; index teams.size() = implicit
  std::map<std::string, int> ns_team;
  std::vector<int> parent;
  std::map<std::string, std::map<int, const TeamShare*>> shares;  // fleet -> team -> first share
  std::map<std::string, Amounts> capacity;
  std::vector<Use> uses;
  // Issue 47 (5): the queued runs' teams and the fleets they name (none: any fleet).
  std::vector<std::pair<int, std::vector<std::string>>> queued;

  static Amounts Of(const Resources& r) {
    return {std::max<int64_t>(r.gpus, 0), std::max<int64_t>(r.cpu_millis, 0), std::max<int64_t>(r.memory_bytes, 0)};
  }
  static std::array<std::optional<int64_t>, 3> Of(const ResourceAmounts& a) { return {a.gpus, a.cpu_millis, a.memory_bytes}; }

  int Implicit() const { return static_cast<int>(teams.size()); }
  int TeamOf(const std::string& run_id) const {
    auto it = ns_team.find(std::string(NamespaceOf(run_id)));
    return it == ns_team.end() ? Implicit() : it->second;
  }
  bool Accounted(const std::string& fleet, int r) const {
    auto f = shares.find(fleet);
    if (f == shares.end()) return false;
    for (auto& [t, share] : f->second) {
      if (Of(share->nominal)[r] || Of(share->borrowing_limit)[r] || Of(share->lending_limit)[r]) return true;
    }
    return false;
  }
  std::optional<int64_t> Field(const std::string& fleet, int team, int r, int which) const {
    auto f = shares.find(fleet);
    if (f == shares.end()) return std::nullopt;
    auto t = f->second.find(team);
    if (t == f->second.end()) return std::nullopt;
    const ResourceAmounts& a = which == 0 ? t->second->nominal : which == 1 ? t->second->borrowing_limit : t->second->lending_limit;
    auto v = Of(a)[r];
    return v ? std::optional<int64_t>(std::max<int64_t>(*v, 0)) : std::nullopt;
  }
  int64_t Nominal(const std::string& fleet, int team, int r) const { return Field(fleet, team, r, 0).value_or(0); }
  int64_t Used(const std::string& fleet, int team, int r) const {  // team -1: all
    int64_t u = 0;
    for (const Use& use : uses) {
      if (use.fleet == fleet && (team < 0 || use.team == team)) u += use.amounts[r];
    }
    return u;
  }
  // A fleet no share names is common pool; runs of two or more teams (the implicit one too)
  // compete for it when they run there or are queued naming it or no fleet.
  bool Competed(const std::string& fleet) const {
    if (shares.count(fleet)) return false;
    std::set<int> contenders;
    for (const Use& use : uses) {
      if (use.fleet == fleet) contenders.insert(use.team);
    }
    for (const auto& [team, names] : queued) {
      if (names.empty() || std::find(names.begin(), names.end(), fleet) != names.end()) contenders.insert(team);
    }
    return contenders.size() >= 2;
  }
  // 0: fits; 1: would borrow (not allowed); 2: beyond borrowing limit; 3: nothing to borrow.
  int Check(int team, const std::string& fleet, const Resources& use, bool borrow) const {
    if (!shares.count(fleet)) return !borrow && Competed(fleet) ? 1 : 0;  // all of it borrowed
    const Amounts x = Of(use);
    for (int r = 0; r < 3; ++r) {
      if (!Accounted(fleet, r) || x[r] == 0) continue;
      const int64_t u = Used(fleet, team, r), n = Nominal(fleet, team, r);
      if (u + x[r] <= n) continue;
      if (!borrow) return 1;
      if (auto bl = Field(fleet, team, r, 1); bl && u + x[r] > n + *bl) return 2;
      int64_t kept = 0;
      for (int t = 0; t <= Implicit(); ++t) {
        auto ll = Field(fleet, t, r, 2);
        if (t != team && ll) kept += std::max<int64_t>(0, Nominal(fleet, t, r) - *ll - Used(fleet, t, r));
      }
      if (x[r] > capacity.at(fleet)[r] - Used(fleet, -1, r) - kept) return 3;
    }
    return 0;
  }
  bool WithinNominal(int team, const std::string& fleet, const Resources& use) const {
    if (!shares.count(fleet)) return false;
    bool any = false;
    for (int r = 0; r < 3; ++r) {
      if (!Accounted(fleet, r)) continue;
      any = any || Nominal(fleet, team, r) > 0;
      if (Used(fleet, team, r) + Of(use)[r] > Nominal(fleet, team, r)) return false;
    }
    return any;
  }
  bool Borrowing(int team, const std::string& fleet) const {
    for (int r = 0; r < 3; ++r) {
      if (Accounted(fleet, r) && Used(fleet, team, r) > Nominal(fleet, team, r)) return true;
    }
    return false;
  }
  // (gpu, cpu) hours of a team with its children; the implicit team has none.
  std::pair<double, double> Usage(int t) const {
    std::pair<double, double> u{std::max(teams[t]->gpu_hours, 0.0), std::max(teams[t]->cpu_hours, 0.0)};
    for (int c = 0; c < Implicit(); ++c) {
      if (parent[c] == t) {
        u.first += std::max(teams[c]->gpu_hours, 0.0);
        u.second += std::max(teams[c]->cpu_hours, 0.0);
      }
    }
    return u;
  }
  // The fair-share order of teams: implicit last; per level usage / weight, then name; a parent
  // before its children.
  bool Before(int a, int b) const {
    if (a == b) return false;
    if ((a == Implicit()) != (b == Implicit())) return b == Implicit();
    auto path = [&](int t) {
      std::vector<int> p;
      if (parent[t] >= 0) p.push_back(parent[t]);
      p.push_back(t);
      return p;
    };
    const auto pa = path(a), pb = path(b);
    for (size_t l = 0; l < std::min(pa.size(), pb.size()); ++l) {
      if (pa[l] == pb[l]) continue;
      const double wa = std::max(teams[pa[l]]->weight, 1), wb = std::max(teams[pb[l]]->weight, 1);
      const auto ua = Usage(pa[l]), ub = Usage(pb[l]);
      if (ua.first * wb != ub.first * wa) return ua.first * wb < ub.first * wa;
      if (ua.second * wb != ub.second * wa) return ua.second * wb < ub.second * wa;
      return teams[pa[l]]->name < teams[pb[l]]->name;
    }
    return pa.size() < pb.size();
  }

  void Build(const ClusterSnapshot& s) {
    if (s.teams.empty()) return;
    active = true;
    std::map<std::string, const TeamSpec*> by_name;
    for (const TeamSpec& t : s.teams) by_name.emplace(t.name, &t);
    std::map<std::string, int> index;
    for (auto& [name, t] : by_name) {
      index[name] = static_cast<int>(teams.size());
      teams.push_back(t);
    }
    for (const TeamSpec* t : teams) {
      auto p = index.find(t->parent);
      bool ok = p != index.end() && p->second != index[t->name];
      if (ok) {
        auto g = index.find(teams[p->second]->parent);
        ok = g == index.end() || g->second == p->second;
      }
      parent.push_back(ok ? p->second : -1);
    }
    parent.push_back(-1);  // the implicit team
    // A namespace two Teams list: the older keeps it (creation time, then name).
    std::vector<int> older(teams.size());
    for (size_t t = 0; t < teams.size(); ++t) older[t] = static_cast<int>(t);
    std::stable_sort(older.begin(), older.end(), [&](int a, int b) {
      return teams[a]->created != teams[b]->created ? teams[a]->created < teams[b]->created : teams[a]->name < teams[b]->name;
    });
    for (int t : older) {
      for (const std::string& ns : teams[t]->namespaces) ns_team.emplace(ns, t);
    }
    std::set<std::string> fleet_names;
    for (const FleetSpec& f : s.fleets) fleet_names.insert(f.name);
    for (size_t t = 0; t < teams.size(); ++t) {
      for (const TeamShare& share : teams[t]->shares) {
        if (fleet_names.count(share.fleet)) shares[share.fleet].emplace(static_cast<int>(t), &share);
      }
    }
  }
};

// Instances kept for another run are not the run's to use.
inline bool KeptFromRun(const Inst& in, const PendingRun& run) { return !in.held_for.empty() && in.held_for != run.id; }

inline bool In(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Blocks a rank of a single-node run takes on `in` (a whole single instance: all); nullopt: no fit.
inline std::optional<int32_t> Need(const PendingRun& run, const Inst& in) {
  auto need = in.layout.BlocksFor(run.resources);
  if (need && IsWholeSingle(run)) need = in.total();
  return need;
}

// Whether a run prefers instance a to b (same free-blocks rank): lifetime, then name.
inline bool Prefers(const PendingRun& run, const Inst& a, const Inst& b) {
  if (a.expiry != b.expiry) return run.max_duration ? a.expiry < b.expiry : a.expiry > b.expiry;
  return a.spec->name < b.spec->name;
}

}  // namespace berth::scheduling::reference
