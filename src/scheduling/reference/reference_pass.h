#pragma once
// The reference scheduler's one pass (Ref), included only by reference_scheduler.cc: the slow,
// obviously correct model of the core that tests and benchmarks compare it with (issue 46: kept
// out of the production library). Split from reference_scheduler.cc to keep each file under 800
// lines.

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "scheduling/block_layout.h"
#include "scheduling/quota.h"
#include "scheduling/reference/reference_model.h"
#include "scheduling/reference/reference_preemption.h"
#include "scheduling/reference/reference_scheduler.h"

namespace berth::scheduling::reference_pass {

using reference::Add;
using reference::Inst;
using reference::kNever;
using reference::Ms;
using reference::RefTeams;
using reference::VictimSearch;
using reference::In;
using reference::KeptFromRun;
using reference::Need;
using reference::Prefers;

struct Ref {
  const ClusterSnapshot& snap;
  int64_t now;
  std::vector<const FleetSpec*> fleets;  // by name, deduplicated
  std::vector<Inst> insts;               // by name, deduplicated, known fleets only
  bool reservation = false;
  int64_t reservation_start = kNever;
  CycleResult out;
  std::map<std::string, NamespaceQuota> quotas;
  std::map<std::string, PlacedRunInfo> placed;  // possible victims by id
  std::set<std::string> excluded;               // victims chosen already
  std::map<std::string, const Nomination*> nominations;  // of queued nominees
  bool preemption = false;
  RefTeams teams;
  bool allow_borrow = true;
  bool reclaim = false;

  int64_t MaxRuns(int f) const {
    const auto& m = fleets[f]->max_runs_per_instance;
    return m ? std::max<int64_t>(*m, 1) : kNever;
  }
  bool Cluster(int f) const { return fleets[f]->placement == PlacementPolicy::kCluster; }
  // A reserved instance takes a backfill run only with a run slot to spare for its reserved run.
  bool Backfillable(const Inst& in) const { return in.runs_started + 1 < MaxRuns(in.fleet); }

  Ref(const ClusterSnapshot& s, TimePoint t, const std::set<std::string>& queued) : snap(s), now(Ms(t)) {
    out.now = t;
    std::map<std::string, const FleetSpec*> by_name;
    for (const FleetSpec& f : s.fleets) by_name.emplace(f.name, &f);
    for (auto& [name, f] : by_name) {
      fleets.push_back(f);
      out.fleets.push_back(FleetRef{f->name, f->topology_key});
    }
    std::map<std::string, const InstanceSpec*> inst_by_name;
    for (const InstanceSpec& i : s.instances) inst_by_name.emplace(i.name, &i);
    for (auto& [name, spec] : inst_by_name) AddInstance(*spec);
    for (const NamespaceQuota& q : s.quotas) quotas.emplace(q.ns, q);
    teams.Build(s);
    for (const Inst& in : insts) {
      if (in.valid && teams.shares.count(fleets[in.fleet]->name)) {
        auto& c = teams.capacity[fleets[in.fleet]->name];
        const auto a = RefTeams::Of(in.layout.ResourcesFor(in.total()));
        for (int r = 0; r < 3; ++r) c[r] += a[r];
      }
    }
    std::map<std::string, const RunningRun*> running;
    for (const RunningRun& r : s.running) running.emplace(r.id, &r);
    for (auto& [id, r] : running) AddRunning(id, *r);
    AddPreemption(s, queued);
  }

  void AddInstance(const InstanceSpec& spec) {
    int f = -1;
    for (size_t x = 0; x < fleets.size(); ++x) {
      if (fleets[x]->name == spec.fleet) f = static_cast<int>(x);
    }
    if (f < 0) return;
    Inst in;
    in.spec = &spec;
    in.fleet = f;
    in.layout = BlockLayout::Make(spec.allocatable, fleets[f]->blocks);
    in.expiry = spec.expires_at ? Ms(*spec.expires_at) : kNever;
    in.runs_started = spec.runs_started;
    in.valid = in.layout.valid();
    in.available = in.valid && spec.ready && in.expiry > now && in.runs_started < MaxRuns(f);
    if (in.valid && Cluster(f)) {
      if (fleets[f]->topology_key.empty()) {
        in.domain = "";
      } else if (spec.topology_domain) {
        in.domain = *spec.topology_domain;
      }
    }
    by_name_[spec.name] = insts.size();
    insts.push_back(std::move(in));
  }

  void AddRunning(const std::string& id, const RunningRun& r) {
    for (const InstanceBlocks& b : r.placement) {
      Inst* in = Find(b.instance);
      if (in == nullptr || !in->valid || b.blocks <= 0) continue;
      in->busy += b.blocks;
      in->holds.push_back({r.expected_end ? Ms(*r.expected_end) : kNever, b.blocks});
      in->holders.push_back({id, b.blocks});
      if (teams.active) {
        teams.uses.push_back({teams.TeamOf(id), fleets[in->fleet]->name,
                              RefTeams::Of(in->layout.ResourcesFor(std::min(b.blocks, in->total())))});
      }
      if (r.quota_pending) {
        if (NamespaceQuota* q = QuotaOf(id)) {
          ChargeQuota(*q, {in->layout.ResourcesFor(std::min(b.blocks, in->total())), 1}, Gpu(*in));
        }
      }
    }
  }

  void AddPreemption(const ClusterSnapshot& s, const std::set<std::string>& queued) {
    for (const PlacedRunInfo& p : s.placed_runs) placed.emplace(p.id, p);
    for (const FleetSpec* f : fleets) preemption |= f->preemption == PreemptionPolicy::kLowerPriority;
    preemption = preemption && !placed.empty();
    for (const FleetSpec* f : fleets) reclaim |= teams.active && f->reclaim == ReclaimPolicy::kBorrowed;
    reclaim = reclaim && !placed.empty();
    for (const Nomination& n : s.nominations) {
      if (queued.count(n.run_id)) nominations.emplace(n.run_id, &n);
    }
    for (auto& [id, n] : nominations) {  // by id: the first id keeps a shared instance
      for (const std::string& v : n->victims) excluded.insert(v);
      for (const std::string& name : n->instances) {
        Inst* in = Find(name);
        if (in != nullptr && in->held_for.empty()) in->held_for = id;
      }
    }
  }

  NamespaceQuota* QuotaOf(const std::string& run_id) {
    auto it = quotas.find(std::string(NamespaceOf(run_id)));
    return it == quotas.end() ? nullptr : &it->second;
  }
  const std::string& Gpu(const Inst& in) const { return fleets[in.fleet]->gpu_resource; }

  Inst* Find(const std::string& name) {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &insts[it->second];
  }
  std::map<std::string, size_t> by_name_;

  // The fleets it may use: named (or any), and whose maxGracePeriod its Pods' grace period fits.
  std::vector<int> Candidates(const PendingRun& run) const {
    std::vector<int> c;
    for (size_t f = 0; f < fleets.size(); ++f) {
      if (Named(run, static_cast<int>(f)) && fleets[f]->max_grace_seconds >= run.grace_seconds) {
        c.push_back(static_cast<int>(f));
      }
    }
    return c;
  }

  bool Named(const PendingRun& run, int f) const {
    return run.fleets.empty() || std::find(run.fleets.begin(), run.fleets.end(), fleets[f]->name) != run.fleets.end();
  }

  // Unschedulable code, if any.
  std::optional<WaitCode> Structure(const PendingRun& run, const std::vector<int>& cands) {
    if (cands.empty()) {
      for (size_t f = 0; f < fleets.size(); ++f) {
        if (Named(run, static_cast<int>(f))) return WaitCode::kGracePeriodTooLong;  // Candidates took it out
      }
      return run.fleets.empty() ? WaitCode::kNoFleet : WaitCode::kFleetNotFound;
    }
    const bool gang = IsSliceGang(run);
    const bool multi = run.nodes > 1 && !gang;
    if (multi && std::none_of(cands.begin(), cands.end(), [&](int f) { return Cluster(f); })) {
      return WaitCode::kNeedsClusterPlacement;
    }
    bool any_valid = false;
    bool any_fit = false;
    std::map<std::pair<int, std::string>, int64_t> per_domain;
    int64_t largest = 0;
    std::map<int, int64_t> slices;  // a gang of slices: how many each fleet holds when idle
    int64_t most_slices = 0;
    for (const Inst& in : insts) {
      if (!In(cands, in.fleet) || !in.valid || (multi && !Cluster(in.fleet))) continue;
      any_valid = true;
      const auto need = in.layout.BlocksFor(run.resources);
      if (!need) continue;
      any_fit = true;
      if (in.domain) largest = std::max(largest, ++per_domain[{in.fleet, *in.domain}]);
      if (gang && WholeSlices(run, in.fleet)) {  // whole slices: one domain's fitting instances
        if (in.domain) most_slices = std::max(most_slices, per_domain[{in.fleet, *in.domain}]);
      } else {
        most_slices = std::max(most_slices, slices[in.fleet] += in.total() / std::max(*need, 1));
      }
    }
    if (!any_valid) return WaitCode::kNoValidInstance;
    if (!any_fit) return WaitCode::kTooLarge;
    if (multi && largest < run.nodes) return WaitCode::kTooManyNodes;
    if (gang && most_slices < run.nodes) return WaitCode::kTooManySlices;
    return std::nullopt;
  }

  void Take(const PendingRun& run, Inst& in, int32_t blocks, int64_t end) {
    if (teams.active) {
      teams.uses.push_back({teams.TeamOf(run.id), fleets[in.fleet]->name, RefTeams::Of(in.layout.ResourcesFor(blocks))});
    }
    in.busy += blocks;
    in.holders.push_back({run.id, blocks});
    in.holds.push_back({end, blocks});
    ++in.runs_started;
    if (in.runs_started >= MaxRuns(in.fleet)) in.available = false;
  }

  bool PlaceSingle(const PendingRun& run, const std::vector<int>& cands, int64_t min_expiry,
                   bool backfill, int64_t end, bool& quota_skipped, int& share_skipped) {
    NamespaceQuota* quota = QuotaOf(run.id);
    Inst* best = nullptr;
    std::tuple<bool, bool, bool, int32_t> best_rank;
    int32_t best_need = 0;
    for (Inst& in : insts) {
      if (!In(cands, in.fleet) || !in.available) continue;
      if (in.reserved && (!backfill || !Backfillable(in))) continue;
      if (KeptFromRun(in, run)) continue;
      const auto need = Need(run, in);
      if (!need || in.free() < *need || in.expiry < min_expiry) continue;
      if (CheckQuota(quota, {in.layout.ResourcesFor(*need), 1}, Gpu(in))) {
        quota_skipped = true;
        continue;
      }
      if (teams.active) {
        if (int v = teams.Check(teams.TeamOf(run.id), fleets[in.fleet]->name, in.layout.ResourcesFor(*need), allow_borrow)) {
          if (!share_skipped) share_skipped = v;
          continue;
        }
      }
      const bool waste = run.resources.gpus <= 0 && in.layout.ResourcesFor(*need).gpus > 0;
      const std::tuple<bool, bool, bool, int32_t> rank{waste, !in.reserved, in.free() == in.total(),
                                                       in.free() - *need};
      if (best == nullptr || rank < best_rank || (rank == best_rank && Prefers(run, in, *best))) {
        best = &in;
        best_rank = rank;
        best_need = *need;
      }
    }
    if (best == nullptr) return false;
    out.placements.push_back(Placement{
        run.id, fleets[best->fleet]->name,
        {RankPlacement{0, best->spec->name, best_need, best->layout.ResourcesFor(best_need)}},
        std::get<0>(best_rank)});
    if (quota != nullptr) ChargeQuota(*quota, {best->layout.ResourcesFor(best_need), 1}, Gpu(*best));
    Take(run, *best, best_need, end);
    return true;
  }

  // The instances a multi-node run would get, and its fleet; empty when none.
  std::vector<Inst*> FindMulti(const PendingRun& run, const std::vector<int>& cands,
                               int64_t min_expiry, bool include_reserved, int& fleet) {
    std::vector<Inst*> best;
    std::tuple<int64_t, int, std::string> best_key;
    std::map<std::pair<int, std::string>, std::vector<Inst*>> idle;
    for (Inst& in : insts) {
      if (!In(cands, in.fleet) || !Cluster(in.fleet) || !in.available || !in.domain) continue;
      if (in.free() != in.total() || KeptFromRun(in, run)) continue;
      if (in.reserved && (!include_reserved || !Backfillable(in))) continue;
      idle[{in.fleet, *in.domain}].push_back(&in);
    }
    for (auto& [where, group] : idle) {
      const auto count = static_cast<int64_t>(group.size());
      if (count < run.nodes) continue;
      std::vector<Inst*> ok;
      for (Inst* in : group) {
        if (in->layout.BlocksFor(run.resources) && in->expiry >= min_expiry) ok.push_back(in);
      }
      if (static_cast<int64_t>(ok.size()) < run.nodes) continue;
      const std::tuple<int64_t, int, std::string> key{count, where.first, where.second};
      if (!best.empty() && !(key < best_key)) continue;
      std::sort(ok.begin(), ok.end(), [&](Inst* a, Inst* b) {
        if (a->reserved != b->reserved) return a->reserved;
        return Prefers(run, *a, *b);
      });
      ok.resize(run.nodes);
      best = ok;
      best_key = key;
      fleet = where.first;
    }
    return best;
  }

  void PlaceMulti(const PendingRun& run, int fleet, std::vector<Inst*> chosen, int64_t end) {
    std::sort(chosen.begin(), chosen.end(),
              [](Inst* a, Inst* b) { return a->spec->name < b->spec->name; });
    Placement p{run.id, fleets[fleet]->name, {}};
    for (size_t r = 0; r < chosen.size(); ++r) {
      p.ranks.push_back(RankPlacement{static_cast<int32_t>(r), chosen[r]->spec->name,
                                      chosen[r]->total(),
                                      chosen[r]->layout.ResourcesFor(chosen[r]->total())});
      Take(run, *chosen[r], chosen[r]->total(), end);
    }
    out.placements.push_back(std::move(p));
  }

  bool LifetimeAllows(const Inst& in, int64_t start, const PendingRun& run) const {
    if (in.expiry == kNever) return true;
    if (start == kNever) return false;
    const int64_t d = run.max_duration ? std::max<int64_t>(run.max_duration->count(), 0) : 1;
    return in.expiry >= Add(start, d);
  }

  int64_t WhenFree(const Inst& in, int32_t need) const {
    if (in.free() >= need) return now;
    auto holds = in.holds;
    std::sort(holds.begin(), holds.end());
    int64_t busy = in.busy;
    for (auto [end, blocks] : holds) {
      if (end == kNever) return kNever;
      busy -= blocks;
      if (in.total() - std::min<int64_t>(busy, in.total()) >= need) return std::max(end, now);
    }
    return kNever;
  }

  // A gang of slices: one slot per slice an instance holds, free when that many slices' blocks
  // are; the gang starts when its nodes-th slot (of instances it outlives) frees; earliest fleet.
  void ReserveGang(const PendingRun& run, const std::vector<int>& cands, std::vector<Inst*>& chosen, int64_t& start,
                   int& fleet) {
    for (int f : cands) {
      if (WholeSlices(run, f)) {  // whole slices: one domain's instances that wholly free soonest
        std::map<std::string, std::vector<std::pair<int64_t, Inst*>>> groups;
        for (Inst& in : insts) {
          if (in.fleet != f || !in.available || !in.domain || !in.held_for.empty()) continue;
          if (in.layout.BlocksFor(run.resources)) groups[*in.domain].push_back({WhenFree(in, in.total()), &in});
        }
        for (auto& [domain, group] : groups) {
          std::sort(group.begin(), group.end(), [](const auto& a, const auto& b) {
            return a.first != b.first ? a.first < b.first : a.second->spec->name < b.second->spec->name;
          });
          for (size_t j = static_cast<size_t>(run.nodes) - 1; j < group.size(); ++j) {
            const int64_t t = group[j].first;
            if (fleet >= 0 && t >= start) break;
            std::vector<Inst*> ok;
            for (size_t x = 0; x <= j && static_cast<int64_t>(ok.size()) < run.nodes; ++x) {
              if (LifetimeAllows(*group[x].second, t, run)) ok.push_back(group[x].second);
            }
            if (static_cast<int64_t>(ok.size()) < run.nodes) continue;
            std::sort(ok.begin(), ok.end());
            chosen = ok;
            start = t;
            fleet = f;
            break;
          }
        }
        continue;
      }
      std::vector<std::pair<int64_t, Inst*>> slots;
      for (Inst& in : insts) {
        const auto need = in.layout.BlocksFor(run.resources);
        if (in.fleet != f || !in.available || !in.held_for.empty() || !need) continue;
        for (int32_t k = 1; int64_t{k} * std::max(*need, 1) <= in.total(); ++k) {
          slots.push_back({WhenFree(in, k * std::max(*need, 1)), &in});
        }
      }
      std::sort(slots.begin(), slots.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second->spec->name < b.second->spec->name;
      });
      for (size_t j = static_cast<size_t>(run.nodes) - 1; j < slots.size(); ++j) {
        const int64_t t = slots[j].first;
        if (fleet >= 0 && t >= start) break;
        std::vector<Inst*> ok;
        for (size_t x = 0; x <= j && static_cast<int64_t>(ok.size()) < run.nodes; ++x) {
          if (LifetimeAllows(*slots[x].second, t, run)) ok.push_back(slots[x].second);
        }
        if (static_cast<int64_t>(ok.size()) < run.nodes) continue;
        std::sort(ok.begin(), ok.end());
        ok.erase(std::unique(ok.begin(), ok.end()), ok.end());
        chosen = ok;
        start = t;
        fleet = f;
        break;
      }
    }
  }

  void TryReserve(const PendingRun& run, const std::vector<int>& cands) {
    std::vector<Inst*> chosen;
    int64_t start = kNever;
    int fleet = -1;
    if (run.nodes <= 1) {
      for (Inst& in : insts) {
        if (!In(cands, in.fleet) || !in.available || !in.held_for.empty()) continue;
        const auto need = Need(run, in);
        if (!need) continue;
        const int64_t t = WhenFree(in, *need);
        if (!LifetimeAllows(in, t, run)) continue;
        if (chosen.empty() || t < start) {  // name order breaks ties
          chosen = {&in};
          start = t;
          fleet = in.fleet;
        }
      }
    } else if (IsSliceGang(run)) {
      ReserveGang(run, cands, chosen, start, fleet);
    } else {
      std::map<std::pair<int, std::string>, std::vector<std::pair<int64_t, Inst*>>> groups;
      for (Inst& in : insts) {
        if (!In(cands, in.fleet) || !Cluster(in.fleet) || !in.available || !in.domain) continue;
        if (!in.layout.BlocksFor(run.resources) || !in.held_for.empty()) continue;
        groups[{in.fleet, *in.domain}].push_back({WhenFree(in, in.total()), &in});
      }
      for (auto& [where, group] : groups) {
        std::sort(group.begin(), group.end(), [](const auto& a, const auto& b) {
          if (a.first != b.first) return a.first < b.first;
          return a.second->spec->name < b.second->spec->name;
        });
        for (size_t j = static_cast<size_t>(run.nodes) - 1; j < group.size(); ++j) {
          const int64_t t = group[j].first;
          std::vector<Inst*> ok;
          for (size_t x = 0; x <= j; ++x) {
            if (LifetimeAllows(*group[x].second, t, run)) ok.push_back(group[x].second);
          }
          if (static_cast<int64_t>(ok.size()) < run.nodes) continue;
          if (fleet < 0 || t < start) {
            ok.resize(run.nodes);
            chosen = ok;
            start = t;
            fleet = where.first;
          }
          break;
        }
      }
    }
    if (chosen.empty()) return;
    reservation = true;
    reservation_start = start;
    Reservation r{run.id, fleets[fleet]->name, {}, std::nullopt};
    for (Inst* in : chosen) {
      in->reserved = true;
      r.instances.push_back(in->spec->name);
    }
    std::sort(r.instances.begin(), r.instances.end());
    if (start != kNever) r.earliest_start = TimePoint(Duration(start));
    out.reservation = r;
  }

  // ---- Preemption: a straightforward victim search over the working state (reference_preemption.h).

  bool reclaiming = false;  // Plan asks for a reclaim (teams)
  std::optional<PreemptionPlan> Plan(const PendingRun& run, const std::vector<int>& cands) {
    std::vector<Inst*> eligible;
    for (Inst& in : insts) {
      if (!In(cands, in.fleet)) continue;
      if (reclaiming ? fleets[in.fleet]->reclaim != ReclaimPolicy::kBorrowed
                     : fleets[in.fleet]->preemption != PreemptionPolicy::kLowerPriority) {
        continue;
      }
      if (!in.available || in.reserved || KeptFromRun(in, run)) continue;
      if (run.max_duration && in.expiry < Add(now, std::max<int64_t>(run.max_duration->count(), 0))) continue;
      eligible.push_back(&in);
    }
    return VictimSearch{fleets, placed, excluded, teams, now, reclaiming}.Plan(run, eligible);
  }

  // Whether a run waiting for capacity preempts: a plan (recorded, its instances kept for it).
  bool Preempt(const PendingRun& run, const std::vector<int>& cands, WaitReason& reason) {
    auto plan = Plan(run, cands);
    if (!plan) return false;
    return Adopt(run, std::move(*plan), reason);
  }

  // Reclaim: the fleets (reclaim: Borrowed) where every instance that could hold the run keeps it
  // within its team's unused nominal share; victims: other teams' runs while they borrow there.
  bool Reclaim(const PendingRun& run, const std::vector<int>& cands, WaitReason& reason) {
    std::vector<int> within;
    for (int f : cands) {
      if (fleets[f]->reclaim != ReclaimPolicy::kBorrowed) continue;
      bool any = false, ok = true;
      for (const Inst& in : insts) {
        if (in.fleet != f || !in.valid) continue;
        const auto need = in.layout.BlocksFor(run.resources);
        if (!need) continue;
        any = true;
        Resources one = in.layout.ResourcesFor(run.nodes <= 1 ? *need : in.total());
        one = Resources{one.cpu_millis * run.nodes, one.memory_bytes * run.nodes, one.gpus * run.nodes};
        ok = ok && teams.WithinNominal(teams.TeamOf(run.id), fleets[f]->name, one);
      }
      if (any && ok) within.push_back(f);
    }
    if (within.empty()) return false;
    reclaiming = true;
    auto plan = Plan(run, within);
    reclaiming = false;
    if (!plan) return false;
    if (!Adopt(run, std::move(*plan), reason)) return false;
    reason.reclaim = true;
    out.preemptions.back().reclaim = true;
    return true;
  }

  bool Adopt(const PendingRun& run, PreemptionPlan p, WaitReason& reason) {
    auto plan = std::optional<PreemptionPlan>(std::move(p));
    QuotaUse use;
    std::vector<Inst*> chosen;
    for (const std::string& name : plan->instances) chosen.push_back(Find(name));
    for (Inst* in : chosen) {
      const Resources r = in->layout.ResourcesFor(run.nodes <= 1 ? *in->layout.BlocksFor(run.resources) : in->total());
      use.resources.cpu_millis += r.cpu_millis;
      use.resources.memory_bytes += r.memory_bytes;
      use.resources.gpus += r.gpus;
      ++use.pods;
    }
    if (CheckQuota(QuotaOf(run.id), use, Gpu(*chosen.front()))) return false;
    for (Inst* in : chosen) in->held_for = run.id;
    excluded.insert(plan->victims.begin(), plan->victims.end());
    reason.code = WaitCode::kPreempting;
    reason.victims = plan->victims;
    reason.instances = plan->instances;
    out.preemptions.push_back(PreemptionDecision{run.id, std::move(*plan)});
    return true;
  }

  // Returns true when the run is deferred: it would borrow and borrowing is not allowed yet. What
  // its existing Pods count in its namespace's quota usage (PendingRun::quota_counted) is out of
  // the usage while it is considered, and stays out when it is placed.
  bool Consider(const PendingRun& run) {
    NamespaceQuota* counted = run.quota_counted.empty() ? nullptr : QuotaOf(run.id);
    if (counted != nullptr) AddCounted(*counted, run.quota_counted, -1);
    const size_t placements = out.placements.size();
    const bool deferred = ConsiderRun(run);
    if (counted != nullptr && out.placements.size() == placements) AddCounted(*counted, run.quota_counted, 1);
    return deferred;
  }

  bool ConsiderRun(const PendingRun& run) {
    const std::vector<int> cands = Candidates(run);
    WaitReason reason;
    reason.nodes = run.nodes;
    reason.slice_gang = IsSliceGang(run);
    reason.request = run.resources;
    reason.max_duration = run.max_duration;
    if (auto code = Structure(run, cands)) return Waits(run, *code, reason);
    if (QuotaRefuses(run, cands)) return Waits(run, WaitCode::kQuotaExceeded, reason);
    const int64_t d = run.max_duration ? std::max<int64_t>(run.max_duration->count(), 0) : 0;
    Timing timing;
    timing.end = run.max_duration ? Add(now, d) : kNever;
    timing.min_expiry = run.max_duration ? timing.end : now + 1;
    timing.backfill = reservation && reservation_start != kNever && run.max_duration && timing.end <= reservation_start;
    const std::optional<bool> done = IsSliceGang(run)   ? ConsiderGang(run, cands, timing, reason)
                                     : run.nodes <= 1 ? ConsiderSingle(run, cands, timing, reason)
                                                      : ConsiderMulti(run, cands, timing, reason);
    if (done) return *done;
    // Waiting for capacity: a nominee whose victims are stopping waits for them; others may
    // preempt. Neither holds the reservation.
    auto nomination = nominations.find(run.id);
    if (nomination != nominations.end() && nomination->second->victims_stopping) {
      reason.victims = nomination->second->victims;
      std::sort(reason.victims.begin(), reason.victims.end());
      reason.instances = nomination->second->instances;
      std::sort(reason.instances.begin(), reason.instances.end());
      reason.victims_stopping = true;
      reason.reclaim = nomination->second->reclaim;
      return Waits(run, WaitCode::kPreempting, reason);
    }
    // A gang of slices preempts and reclaims only on cluster fleets where its slices are whole
    // instances, as a multi-node run of its shape would there; a whole single instance never does.
    std::vector<int> plan_cands;
    for (int f : cands) {
      if (!IsSliceGang(run) || (Cluster(f) && SlicesAreWhole(run, f))) plan_cands.push_back(f);
    }
    const bool may_preempt = !IsWholeSingle(run) && !plan_cands.empty();
    if (may_preempt &&
        ((reclaim && Reclaim(run, plan_cands, reason)) || (preemption && Preempt(run, plan_cands, reason)))) {
      out.waiting.push_back(WaitingRun{run.id, reason});
      return false;
    }
    out.waiting.push_back(WaitingRun{run.id, reason});
    if (!reservation) TryReserve(run, cands);
    return false;
  }

  // When a run may start and end, and whether it may use reserved instances.
  struct Timing {
    int64_t end = kNever;
    int64_t min_expiry = 0;
    bool backfill = false;
  };

  bool Waits(const PendingRun& run, WaitCode code, WaitReason& reason) {
    reason.code = code;
    out.waiting.push_back(WaitingRun{run.id, reason});
    return false;
  }

  // The request (per node x nodes, and `nodes` Pods) must fit the namespace's quota for some
  // candidate fleet's GPU resource.
  bool QuotaRefuses(const PendingRun& run, const std::vector<int>& cands) {
    NamespaceQuota* quota = QuotaOf(run.id);
    if (quota == nullptr) return false;
    const int64_t n = run.nodes;
    auto times = [n](int64_t v) {
      v = std::max<int64_t>(v, 0);
      return v > kNever / n ? kNever : v * n;
    };
    const QuotaUse use{{times(run.resources.cpu_millis), times(run.resources.memory_bytes), times(run.resources.gpus)}, n};
    return std::none_of(cands.begin(), cands.end(),
                        [&](int f) { return !CheckQuota(quota, use, fleets[f]->gpu_resource); });
  }

  // A nominee's kept instances are open to the runs behind it once it is placed.
  void PlacedHere(const PendingRun& run) {
    for (Inst& in : insts) {
      if (in.held_for == run.id) in.held_for.clear();
    }
  }

  // Room the team's share did not allow: deferred (verdict 1) or it waits kTeamShare.
  bool ShareWait(const PendingRun& run, int verdict, WaitReason& reason) {
    if (verdict == 1) return true;
    return Waits(run, WaitCode::kTeamShare, reason);
  }

  // What Consider returns, or nullopt when the run waits for capacity (the reason's code set).
  std::optional<bool> ConsiderSingle(const PendingRun& run, const std::vector<int>& cands, const Timing& t,
                                     WaitReason& reason) {
    bool quota_skipped = false;
    int share_skipped = 0;
    if (PlaceSingle(run, cands, t.min_expiry, t.backfill, t.end, quota_skipped, share_skipped)) {
      PlacedHere(run);
      return false;
    }
    if (!quota_skipped && share_skipped) return ShareWait(run, share_skipped, reason);
    if (quota_skipped) return Waits(run, WaitCode::kQuotaExceeded, reason);
    reason.code = WaitCode::kNotEnoughFreeBlocks;
    return std::nullopt;
  }

  // A gang of slices in fleet f: its slices picked one by one, each by the single-node rank on
  // what the earlier ones left (open instances only); empty when fewer than run.nodes fit.
  static QuotaUse Plus(const QuotaUse& u, const Resources& r) {  // one more Pod with `r`
    return {{u.resources.cpu_millis + r.cpu_millis, u.resources.memory_bytes + r.memory_bytes, u.resources.gpus + r.gpus}, u.pods + 1};
  }
  struct GangTry { std::vector<std::pair<Inst*, int32_t>> picks; bool waste = false; int whole = 0; };
  // Whether every valid instance of fleet f (cluster, with a topologyKey) that can hold a slice
  // gives it all its blocks: the gang then takes idle instances of one domain, as FindMulti.
  bool WholeSlices(const PendingRun& run, int f) const {
    return Cluster(f) && !fleets[f]->topology_key.empty() && SlicesAreWhole(run, f);
  }
  // Whether every valid instance of fleet f that can hold a slice gives it all its blocks.
  bool SlicesAreWhole(const PendingRun& run, int f) const {
    bool any = false;
    for (const Inst& in : insts) {
      if (in.fleet != f || !in.valid) continue;
      const auto need = in.layout.BlocksFor(run.resources);
      if (!need) continue;
      if (*need != in.total()) return false;
      any = true;
    }
    return any;
  }
  GangTry GangIn(const PendingRun& run, int f, int64_t min_expiry) {
    GangTry g;
    if (WholeSlices(run, f)) {
      int fleet = -1;
      for (Inst* in : FindMulti(run, {f}, min_expiry, false, fleet)) {
        g.waste |= run.resources.gpus <= 0 && in->layout.ResourcesFor(in->total()).gpus > 0;
        ++g.whole;
        g.picks.push_back({in, in->total()});
      }
      return g;
    }
    std::map<const Inst*, int32_t> taken;
    for (int32_t k = 0; k < run.nodes; ++k) {
      Inst* best = nullptr;
      std::tuple<bool, bool, int32_t> best_rank;  // (waste, idle, left over)
      for (Inst& in : insts) {
        if (in.fleet != f || !in.available || in.reserved || KeptFromRun(in, run)) continue;
        const auto need = in.layout.BlocksFor(run.resources);
        const int32_t free = in.free() - taken[&in];
        if (!need || free < *need || in.expiry < min_expiry) continue;
        const bool waste = run.resources.gpus <= 0 && in.layout.ResourcesFor(*need).gpus > 0;
        const std::tuple<bool, bool, int32_t> rank{waste, free == in.total(), free - *need};
        const bool better = best == nullptr || rank < best_rank || (rank == best_rank && Prefers(run, in, *best));
        if (better) std::tie(best, best_rank) = std::tuple(&in, rank);
      }
      if (best == nullptr) return {};
      g.waste |= std::get<0>(best_rank);
      g.whole += std::get<1>(best_rank) ? 1 : 0;
      const int32_t need = *best->layout.BlocksFor(run.resources);
      taken[best] += need;
      g.picks.push_back({best, need});
    }
    return g;
  }

  std::optional<bool> ConsiderGang(const PendingRun& run, const std::vector<int>& cands, const Timing& t,
                                   WaitReason& reason) {
    NamespaceQuota* quota = QuotaOf(run.id);
    bool quota_skipped = false;
    int share_skipped = 0;
    GangTry best;
    int fleet = -1;
    for (int f : cands) {
      GangTry g = GangIn(run, f, t.min_expiry);
      if (g.picks.empty()) continue;
      if (fleet >= 0 && !(std::pair(g.waste, g.whole) < std::pair(best.waste, best.whole))) continue;
      QuotaUse use;
      for (auto [in, blocks] : g.picks) use = Plus(use, in->layout.ResourcesFor(blocks));
      if (CheckQuota(quota, use, fleets[f]->gpu_resource)) {
        quota_skipped = true;
        continue;
      }
      const int v = teams.active ? teams.Check(teams.TeamOf(run.id), fleets[f]->name, use.resources, allow_borrow) : 0;
      if (v != 0) {
        if (!share_skipped) share_skipped = v;
        continue;
      }
      best = std::move(g);
      fleet = f;
    }
    if (fleet >= 0) {
      std::stable_sort(best.picks.begin(), best.picks.end(),
                       [](const auto& a, const auto& b) { return a.first->spec->name < b.first->spec->name; });
      Placement p{run.id, fleets[fleet]->name, {}, best.waste};
      QuotaUse use;
      std::map<Inst*, int32_t> blocks_on;
      for (size_t r = 0; r < best.picks.size(); ++r) {
        auto [in, blocks] = best.picks[r];
        p.ranks.push_back(RankPlacement{static_cast<int32_t>(r), in->spec->name, blocks, in->layout.ResourcesFor(blocks)});
        use = Plus(use, in->layout.ResourcesFor(blocks));
        blocks_on[in] += blocks;
      }
      if (quota != nullptr) ChargeQuota(*quota, use, fleets[fleet]->gpu_resource);
      for (auto& [in, blocks] : blocks_on) Take(run, *in, blocks, t.end);  // one run per instance
      out.placements.push_back(std::move(p));
      PlacedHere(run);
      return false;
    }
    if (!quota_skipped && share_skipped) return ShareWait(run, share_skipped, reason);
    if (quota_skipped) return Waits(run, WaitCode::kQuotaExceeded, reason);
    reason.code = WaitCode::kNotEnoughSlices;
    return std::nullopt;
  }

  std::optional<bool> ConsiderMulti(const PendingRun& run, const std::vector<int>& cands, const Timing& t,
                                    WaitReason& reason) {
    int fleet = -1;
    auto chosen = FindMulti(run, cands, t.min_expiry, t.backfill, fleet);
    int share_skipped = 0;
    for (std::vector<int> left = cands; teams.active && !chosen.empty();) {
      Resources use;
      for (Inst* in : chosen) {
        const Resources r = in->layout.ResourcesFor(in->total());
        use = Resources{use.cpu_millis + r.cpu_millis, use.memory_bytes + r.memory_bytes, use.gpus + r.gpus};
      }
      const int v = teams.Check(teams.TeamOf(run.id), fleets[fleet]->name, use, allow_borrow);
      if (v == 0) break;
      if (!share_skipped) share_skipped = v;
      left.erase(std::find(left.begin(), left.end(), fleet));
      chosen = FindMulti(run, left, t.min_expiry, t.backfill, fleet);
    }
    if (!chosen.empty()) {
      QuotaUse use;
      for (Inst* in : chosen) {
        const Resources r = in->layout.ResourcesFor(in->total());
        use.resources.cpu_millis += r.cpu_millis;
        use.resources.memory_bytes += r.memory_bytes;
        use.resources.gpus += r.gpus;
        ++use.pods;
      }
      NamespaceQuota* quota = QuotaOf(run.id);
      if (CheckQuota(quota, use, fleets[fleet]->gpu_resource)) return Waits(run, WaitCode::kQuotaExceeded, reason);
      if (quota != nullptr) ChargeQuota(*quota, use, fleets[fleet]->gpu_resource);
      PlaceMulti(run, fleet, std::move(chosen), t.end);
      PlacedHere(run);
      return false;
    }
    if (share_skipped) return ShareWait(run, share_skipped, reason);
    reason.code = WaitCode::kNotEnoughIdleInstances;
    return std::nullopt;
  }
};

}  // namespace berth::scheduling::reference_pass
