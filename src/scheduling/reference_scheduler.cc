#include "scheduling/reference_scheduler.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "scheduling/block_layout.h"
#include "scheduling/quota.h"

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
  std::vector<std::pair<std::string, int32_t>> holders;  // (run id, blocks), this cycle's too
  bool reserved = false;
  std::string held_for;  // kept for this preempting run ("" when none)

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
  std::map<std::string, NamespaceQuota> quotas;
  std::map<std::string, PlacedRunInfo> placed;  // possible victims by id
  std::set<std::string> excluded;               // victims chosen already
  std::map<std::string, const Nomination*> nominations;  // of queued nominees
  bool preemption = false;

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
    for (const NamespaceQuota& q : s.quotas) quotas.emplace(q.ns, q);
    std::map<std::string, const RunningRun*> running;
    for (const RunningRun& r : s.running) running.emplace(r.id, &r);
    for (auto& [id, r] : running) {
      for (const InstanceBlocks& b : r->placement) {
        Inst* in = Find(b.instance);
        if (in == nullptr || !in->valid || b.blocks <= 0) continue;
        in->busy += b.blocks;
        in->holds.push_back({r->expected_end ? Ms(*r->expected_end) : kNever, b.blocks});
        in->holders.push_back({id, b.blocks});
        if (r->quota_pending) {
          if (NamespaceQuota* q = QuotaOf(id)) {
            ChargeQuota(*q, {in->layout.ResourcesFor(std::min(b.blocks, in->total())), 1}, Gpu(*in));
          }
        }
      }
    }
    for (const PlacedRunInfo& p : s.placed_runs) placed.emplace(p.id, p);
    for (const FleetSpec* f : fleets) preemption |= f->preemption == PreemptionPolicy::kLowerPriority;
    preemption = preemption && !placed.empty();
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
  // Instances kept for another run are not the run's to use.
  static bool KeptFromRun(const Inst& in, const PendingRun& run) {
    return !in.held_for.empty() && in.held_for != run.id;
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

  void Take(const PendingRun& run, Inst& in, int32_t blocks, int64_t end) {
    in.busy += blocks;
    in.holders.push_back({run.id, blocks});
    in.holds.push_back({end, blocks});
    ++in.runs_started;
    if (in.runs_started >= MaxRuns(in.fleet)) in.available = false;
  }

  bool PlaceSingle(const PendingRun& run, const std::vector<int>& cands, int64_t min_expiry,
                   bool backfill, int64_t end, bool& quota_skipped) {
    NamespaceQuota* quota = QuotaOf(run.id);
    Inst* best = nullptr;
    std::tuple<bool, bool, bool, int32_t> best_rank;
    int32_t best_need = 0;
    for (Inst& in : insts) {
      if (!In(cands, in.fleet) || !in.available) continue;
      if (in.reserved && (!backfill || !Backfillable(in))) continue;
      if (KeptFromRun(in, run)) continue;
      const auto need = in.layout.BlocksFor(run.resources);
      if (!need || in.free() < *need || in.expiry < min_expiry) continue;
      if (CheckQuota(quota, {in.layout.ResourcesFor(*need), 1}, Gpu(in))) {
        quota_skipped = true;
        continue;
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

  void TryReserve(const PendingRun& run, const std::vector<int>& cands) {
    std::vector<Inst*> chosen;
    int64_t start = kNever;
    int fleet = -1;
    if (run.nodes <= 1) {
      for (Inst& in : insts) {
        if (!In(cands, in.fleet) || !in.available || !in.held_for.empty()) continue;
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

  // ---- Preemption: a straightforward victim search over the working state.

  using Cost = std::tuple<size_t, int32_t, int64_t, Duration>;
  Cost CostOf(const std::vector<const PlacedRunInfo*>& victims) const {
    Cost c{victims.size(), -1, 0, Duration(0)};
    for (const PlacedRunInfo* v : victims) {
      std::get<1>(c) = std::max(std::get<1>(c), v->priority);
      std::get<2>(c) += v->priority;
      std::get<3>(c) += std::max(Duration(0), TimePoint(Duration(now)) - v->placed_at);
    }
    return c;
  }

  // The victim a run may evict on `in`, or nullptr.
  const PlacedRunInfo* Evictable(const std::string& id, const Inst& in, const PendingRun& run) const {
    auto it = placed.find(id);
    if (it == placed.end() || excluded.count(id)) return nullptr;
    const PlacedRunInfo& p = it->second;
    if (p.priority >= run.priority) return nullptr;
    if (TimePoint(Duration(now)) - p.placed_at < fleets[in.fleet]->min_runtime) return nullptr;
    return &p;
  }

  // Per run id, the blocks it holds on `in`.
  static std::map<std::string, int32_t> Holders(const Inst& in) {
    std::map<std::string, int32_t> h;
    for (const auto& [id, blocks] : in.holders) h[id] += blocks;
    return h;
  }

  std::optional<PreemptionPlan> Plan(const PendingRun& run, const std::vector<int>& cands) {
    std::vector<Inst*> eligible;
    for (Inst& in : insts) {
      if (!In(cands, in.fleet) || fleets[in.fleet]->preemption != PreemptionPolicy::kLowerPriority) continue;
      if (!in.available || in.reserved || KeptFromRun(in, run)) continue;
      if (run.max_duration && in.expiry < Add(now, std::max<int64_t>(run.max_duration->count(), 0))) continue;
      eligible.push_back(&in);
    }
    std::optional<std::tuple<size_t, int32_t, int64_t, Duration, std::vector<std::string>>> best_key;
    std::optional<PreemptionPlan> best;
    auto consider = [&](int fleet, std::vector<std::string> names, std::vector<const PlacedRunInfo*> victims) {
      if (victims.empty()) return;
      const auto [count, maxp, sump, lost] = CostOf(victims);
      auto key = std::make_tuple(count, maxp, sump, lost, names);
      if (best_key && !(key < *best_key)) return;
      best_key = key;
      PreemptionPlan p;
      p.fleet = fleets[fleet]->name;
      p.instances = std::move(names);
      for (const PlacedRunInfo* v : victims) p.victims.push_back(v->id);
      std::sort(p.victims.begin(), p.victims.end());
      p.max_victim_priority = maxp;
      p.sum_victim_priority = sump;
      p.work_lost = lost;
      best = std::move(p);
    };
    if (run.nodes <= 1) {
      // Every subset of the evictable holders of every instance.
      for (Inst* in : eligible) {
        const auto need = in->layout.BlocksFor(run.resources);
        if (!need || in->free() >= *need) continue;
        std::vector<std::pair<const PlacedRunInfo*, int32_t>> cands_here;
        for (const auto& [id, blocks] : Holders(*in)) {
          if (const PlacedRunInfo* p = Evictable(id, *in, run)) cands_here.push_back({p, blocks});
        }
        if (cands_here.size() > 16) continue;  // not generated by the tests
        std::optional<Cost> best_here;
        std::vector<const PlacedRunInfo*> chosen;
        for (uint32_t mask = 1; mask < (1u << cands_here.size()); ++mask) {
          int32_t freed = 0;
          std::vector<const PlacedRunInfo*> set;
          for (size_t j = 0; j < cands_here.size(); ++j) {
            if (mask & (1u << j)) {
              freed += cands_here[j].second;
              set.push_back(cands_here[j].first);
            }
          }
          if (in->free() + freed < *need) continue;
          const Cost c = CostOf(set);
          if (!best_here || c < *best_here) {
            best_here = c;
            chosen = set;
          }
        }
        if (best_here) consider(in->fleet, {in->spec->name}, chosen);
      }
      return best;
    }
    // Multi-node: per (cluster fleet, domain), the `nodes` instances cheapest to clear wholly.
    std::map<std::pair<int, std::string>, std::vector<std::pair<Cost, Inst*>>> domains;
    std::map<Inst*, std::vector<const PlacedRunInfo*>> clear;
    for (Inst* in : eligible) {
      if (!Cluster(in->fleet) || !in->domain || !in->layout.BlocksFor(run.resources)) continue;
      std::vector<const PlacedRunInfo*> victims;
      bool ok = true;
      for (const auto& [id, blocks] : Holders(*in)) {
        const PlacedRunInfo* p = Evictable(id, *in, run);
        if (p == nullptr) {
          ok = false;
          break;
        }
        victims.push_back(p);
      }
      if (!ok) continue;
      domains[{in->fleet, *in->domain}].push_back({CostOf(victims), in});
      clear[in] = victims;
    }
    for (auto& [where, group] : domains) {
      if (group.size() < static_cast<size_t>(run.nodes)) continue;
      std::sort(group.begin(), group.end(), [](const auto& a, const auto& b) {
        if (a.first != b.first) return a.first < b.first;
        return a.second->spec->name < b.second->spec->name;
      });
      std::vector<std::string> names;
      std::vector<const PlacedRunInfo*> victims;
      std::set<std::string> seen;
      for (int n = 0; n < run.nodes; ++n) {
        names.push_back(group[n].second->spec->name);
        for (const PlacedRunInfo* v : clear[group[n].second]) {
          if (seen.insert(v->id).second) victims.push_back(v);
        }
      }
      std::sort(names.begin(), names.end());
      consider(where.first, std::move(names), std::move(victims));
    }
    return best;
  }

  // Whether a run waiting for capacity preempts: a plan (recorded, its instances kept for it).
  bool Preempt(const PendingRun& run, const std::vector<int>& cands, WaitReason& reason) {
    auto plan = Plan(run, cands);
    if (!plan) return false;
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
    // The request (per node x nodes, and `nodes` Pods) must fit the namespace's quota for some
    // candidate fleet's GPU resource.
    NamespaceQuota* quota = QuotaOf(run.id);
    if (quota != nullptr) {
      const int64_t n = run.nodes;
      auto times = [n](int64_t v) {
        v = std::max<int64_t>(v, 0);
        return v > kNever / n ? kNever : v * n;
      };
      const QuotaUse use{{times(run.resources.cpu_millis), times(run.resources.memory_bytes), times(run.resources.gpus)}, n};
      if (std::none_of(cands.begin(), cands.end(),
                       [&](int f) { return !CheckQuota(quota, use, fleets[f]->gpu_resource); })) {
        reason.code = WaitCode::kQuotaExceeded;
        out.waiting.push_back(WaitingRun{run.id, reason});
        return;
      }
    }
    const int64_t d = run.max_duration ? std::max<int64_t>(run.max_duration->count(), 0) : 0;
    const int64_t end = run.max_duration ? Add(now, d) : kNever;
    const int64_t min_expiry = run.max_duration ? end : now + 1;
    const bool backfill = reservation && reservation_start != kNever && run.max_duration &&
                          end <= reservation_start;
    auto placed_here = [&] {  // a nominee's kept instances are open to the runs behind it
      for (Inst& in : insts) {
        if (in.held_for == run.id) in.held_for.clear();
      }
    };
    if (run.nodes <= 1) {
      bool quota_skipped = false;
      if (PlaceSingle(run, cands, min_expiry, backfill, end, quota_skipped)) {
        placed_here();
        return;
      }
      reason.code = quota_skipped ? WaitCode::kQuotaExceeded : WaitCode::kNotEnoughFreeBlocks;
      if (quota_skipped) {
        out.waiting.push_back(WaitingRun{run.id, reason});
        return;
      }
    } else {
      int fleet = -1;
      auto chosen = FindMulti(run, cands, min_expiry, backfill, fleet);
      if (!chosen.empty()) {
        QuotaUse use;
        for (Inst* in : chosen) {
          const Resources r = in->layout.ResourcesFor(in->total());
          use.resources.cpu_millis += r.cpu_millis;
          use.resources.memory_bytes += r.memory_bytes;
          use.resources.gpus += r.gpus;
          ++use.pods;
        }
        if (CheckQuota(quota, use, fleets[fleet]->gpu_resource)) {
          reason.code = WaitCode::kQuotaExceeded;
          out.waiting.push_back(WaitingRun{run.id, reason});
          return;
        }
        if (quota != nullptr) ChargeQuota(*quota, use, fleets[fleet]->gpu_resource);
        PlaceMulti(run, fleet, std::move(chosen), end);
        placed_here();
        return;
      }
      reason.code = WaitCode::kNotEnoughIdleInstances;
    }
    // Waiting for capacity: a nominee whose victims are stopping waits for them; others may
    // preempt. Neither holds the reservation.
    auto nomination = nominations.find(run.id);
    if (nomination != nominations.end() && nomination->second->victims_stopping) {
      reason.code = WaitCode::kPreempting;
      reason.victims = nomination->second->victims;
      std::sort(reason.victims.begin(), reason.victims.end());
      reason.instances = nomination->second->instances;
      std::sort(reason.instances.begin(), reason.instances.end());
      reason.victims_stopping = true;
      out.waiting.push_back(WaitingRun{run.id, reason});
      return;
    }
    if (preemption && Preempt(run, cands, reason)) {
      out.waiting.push_back(WaitingRun{run.id, reason});
      return;
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
  std::set<std::string> queued;
  for (const PendingRun& r : runs) queued.insert(r.id);
  Ref ref(snapshot, now, queued);
  for (const auto& [effective, run] : order) {
    const size_t waiting = ref.out.waiting.size();
    ref.Consider(*run);
    if (ref.out.waiting.size() > waiting) ref.out.waiting.back().effective_priority = effective;
  }
  return std::move(ref.out);
}

}  // namespace berth::scheduling
