#include "scheduling/reference_scheduler.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "scheduling/block_layout.h"

namespace berth::scheduling {

namespace {

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();  // no expiry / unknown time

int64_t Ms(TimePoint t) { return t.time_since_epoch().count(); }

int64_t Add(int64_t a, int64_t b) { return b > 0 && a > kNever - b ? kNever : a + b; }

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
  bool reserved = false;

  int32_t total() const { return layout.total_blocks(); }
  int32_t free() const {
    return total() - static_cast<int32_t>(std::min<int64_t>(busy, total()));
  }
};

struct Ref {
  const ClusterSnapshot& snap;
  int64_t now;
  std::vector<const FleetSpec*> fleets;  // by name, deduplicated
  std::vector<Inst> insts;               // by name, deduplicated, known fleets only
  bool reservation = false;
  int64_t reservation_start = kNever;
  CycleResult out;

  int64_t MaxRuns(int f) const {
    const auto& m = fleets[f]->max_runs_per_instance;
    return m ? std::max<int64_t>(*m, 1) : kNever;
  }
  bool Cluster(int f) const { return fleets[f]->placement == PlacementPolicy::kCluster; }
  // A reserved instance takes a backfill run only with a run slot to spare for its reserved run.
  bool Backfillable(const Inst& in) const { return in.runs_started + 1 < MaxRuns(in.fleet); }

  Ref(const ClusterSnapshot& s, TimePoint t) : snap(s), now(Ms(t)) {
    out.now = t;
    std::map<std::string, const FleetSpec*> by_name;
    for (const FleetSpec& f : s.fleets) by_name.emplace(f.name, &f);
    for (auto& [name, f] : by_name) {
      fleets.push_back(f);
      out.fleets.push_back(FleetRef{f->name, f->topology_key});
    }
    std::map<std::string, const InstanceSpec*> inst_by_name;
    for (const InstanceSpec& i : s.instances) inst_by_name.emplace(i.name, &i);
    for (auto& [name, spec] : inst_by_name) {
      int f = -1;
      for (size_t x = 0; x < fleets.size(); ++x) {
        if (fleets[x]->name == spec->fleet) f = static_cast<int>(x);
      }
      if (f < 0) continue;
      Inst in;
      in.spec = spec;
      in.fleet = f;
      in.layout = BlockLayout::Make(spec->allocatable, fleets[f]->blocks);
      in.expiry = spec->expires_at ? Ms(*spec->expires_at) : kNever;
      in.runs_started = spec->runs_started;
      in.valid = in.layout.valid();
      in.available = in.valid && spec->ready && in.expiry > now && in.runs_started < MaxRuns(f);
      if (in.valid && Cluster(f)) {
        if (fleets[f]->topology_key.empty()) {
          in.domain = "";
        } else if (spec->topology_domain) {
          in.domain = *spec->topology_domain;
        }
      }
      by_name_[spec->name] = insts.size();
      insts.push_back(std::move(in));
    }
    std::map<std::string, const RunningRun*> running;
    for (const RunningRun& r : s.running) running.emplace(r.id, &r);
    for (auto& [id, r] : running) {
      for (const InstanceBlocks& b : r->placement) {
        Inst* in = Find(b.instance);
        if (in == nullptr || !in->valid || b.blocks <= 0) continue;
        in->busy += b.blocks;
        in->holds.push_back({r->expected_end ? Ms(*r->expected_end) : kNever, b.blocks});
      }
    }
  }

  Inst* Find(const std::string& name) {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &insts[it->second];
  }
  std::map<std::string, size_t> by_name_;

  std::vector<int> Candidates(const PendingRun& run) const {
    std::vector<int> c;
    for (size_t f = 0; f < fleets.size(); ++f) {
      if (run.fleets.empty() ||
          std::find(run.fleets.begin(), run.fleets.end(), fleets[f]->name) != run.fleets.end()) {
        c.push_back(static_cast<int>(f));
      }
    }
    return c;
  }

  static bool In(const std::vector<int>& v, int x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  }

  // Unschedulable code, if any.
  std::optional<WaitCode> Structure(const PendingRun& run, const std::vector<int>& cands) {
    if (cands.empty()) return run.fleets.empty() ? WaitCode::kNoFleet : WaitCode::kFleetNotFound;
    const bool multi = run.nodes > 1;
    if (multi && std::none_of(cands.begin(), cands.end(), [&](int f) { return Cluster(f); })) {
      return WaitCode::kNeedsClusterPlacement;
    }
    bool any_valid = false;
    bool any_fit = false;
    std::map<std::pair<int, std::string>, int64_t> per_domain;
    int64_t largest = 0;
    for (const Inst& in : insts) {
      if (!In(cands, in.fleet) || !in.valid || (multi && !Cluster(in.fleet))) continue;
      any_valid = true;
      if (!in.layout.BlocksFor(run.resources)) continue;
      any_fit = true;
      if (in.domain) largest = std::max(largest, ++per_domain[{in.fleet, *in.domain}]);
    }
    if (!any_valid) return WaitCode::kNoValidInstance;
    if (!any_fit) return WaitCode::kTooLarge;
    if (multi && largest < run.nodes) return WaitCode::kTooManyNodes;
    return std::nullopt;
  }

  // Whether a run prefers instance a to b (same free-blocks rank): lifetime, then name.
  static bool Prefers(const PendingRun& run, const Inst& a, const Inst& b) {
    if (a.expiry != b.expiry) return run.max_duration ? a.expiry < b.expiry : a.expiry > b.expiry;
    return a.spec->name < b.spec->name;
  }

  void Take(Inst& in, int32_t blocks, int64_t end) {
    in.busy += blocks;
    in.holds.push_back({end, blocks});
    ++in.runs_started;
    if (in.runs_started >= MaxRuns(in.fleet)) in.available = false;
  }

  bool PlaceSingle(const PendingRun& run, const std::vector<int>& cands, int64_t min_expiry,
                   bool backfill, int64_t end) {
    Inst* best = nullptr;
    std::tuple<bool, bool, bool, int32_t> best_rank;
    int32_t best_need = 0;
    for (Inst& in : insts) {
      if (!In(cands, in.fleet) || !in.available) continue;
      if (in.reserved && (!backfill || !Backfillable(in))) continue;
      const auto need = in.layout.BlocksFor(run.resources);
      if (!need || in.free() < *need || in.expiry < min_expiry) continue;
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
    Take(*best, best_need, end);
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
      if (in.free() != in.total()) continue;
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
      Take(*chosen[r], chosen[r]->total(), end);
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

  void TryReserve(const PendingRun& run, const std::vector<int>& cands) {
    std::vector<Inst*> chosen;
    int64_t start = kNever;
    int fleet = -1;
    if (run.nodes <= 1) {
      for (Inst& in : insts) {
        if (!In(cands, in.fleet) || !in.available) continue;
        const auto need = in.layout.BlocksFor(run.resources);
        if (!need) continue;
        const int64_t t = WhenFree(in, *need);
        if (!LifetimeAllows(in, t, run)) continue;
        if (chosen.empty() || t < start) {  // name order breaks ties
          chosen = {&in};
          start = t;
          fleet = in.fleet;
        }
      }
    } else {
      std::map<std::pair<int, std::string>, std::vector<std::pair<int64_t, Inst*>>> groups;
      for (Inst& in : insts) {
        if (!In(cands, in.fleet) || !Cluster(in.fleet) || !in.available || !in.domain) continue;
        if (!in.layout.BlocksFor(run.resources)) continue;
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

  void Consider(const PendingRun& run) {
    const std::vector<int> cands = Candidates(run);
    WaitReason reason;
    reason.nodes = run.nodes;
    reason.request = run.resources;
    reason.max_duration = run.max_duration;
    if (auto code = Structure(run, cands)) {
      reason.code = *code;
      out.waiting.push_back(WaitingRun{run.id, reason});
      return;
    }
    const int64_t d = run.max_duration ? std::max<int64_t>(run.max_duration->count(), 0) : 0;
    const int64_t end = run.max_duration ? Add(now, d) : kNever;
    const int64_t min_expiry = run.max_duration ? end : now + 1;
    const bool backfill = reservation && reservation_start != kNever && run.max_duration &&
                          end <= reservation_start;
    if (run.nodes <= 1) {
      if (PlaceSingle(run, cands, min_expiry, backfill, end)) return;
      reason.code = WaitCode::kNotEnoughFreeBlocks;
    } else {
      int fleet = -1;
      auto chosen = FindMulti(run, cands, min_expiry, backfill, fleet);
      if (!chosen.empty()) {
        PlaceMulti(run, fleet, std::move(chosen), end);
        return;
      }
      reason.code = WaitCode::kNotEnoughIdleInstances;
    }
    out.waiting.push_back(WaitingRun{run.id, reason});
    if (!reservation) TryReserve(run, cands);
  }
};

}  // namespace

CycleResult ReferenceSchedule(const ClusterSnapshot& snapshot,
                              const std::vector<PendingRun>& pending, Duration aging_interval,
                              TimePoint now) {
  std::vector<PendingRun> runs = pending;
  std::vector<std::pair<int32_t, const PendingRun*>> order;
  for (PendingRun& r : runs) {
    r.priority = std::clamp(r.priority, kMinPriority, kMaxPriority);
    r.nodes = std::max(r.nodes, 1);
    int64_t effective = r.priority;
    if (aging_interval.count() > 0 && now > r.submitted_at) {
      effective =
          std::min<int64_t>(kMaxPriority, r.priority + (now - r.submitted_at) / aging_interval);
    }
    order.push_back({static_cast<int32_t>(effective), &r});
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    if (a.second->submitted_at != b.second->submitted_at) {
      return a.second->submitted_at < b.second->submitted_at;
    }
    return a.second->id < b.second->id;
  });
  Ref ref(snapshot, now);
  for (const auto& [effective, run] : order) ref.Consider(*run);
  return std::move(ref.out);
}

}  // namespace berth::scheduling
