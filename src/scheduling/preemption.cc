#include "scheduling/preemption.h"

#include <algorithm>
#include <deque>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "scheduling/block_layout.h"
#include "scheduling/instance_state.h"
#include "scheduling/topology_levels.h"

namespace berth::scheduling {
namespace {

// Beyond this many subsets of the minimal size, a single-node choice on one instance is greedy
// (largest victims first, then cheapest): only reachable with dozens of tiny runs on one machine.
constexpr int64_t kMaxCombinations = 4096;

struct Victim {
  const PlacedRunInfo* info = nullptr;
  int32_t blocks_here = 0;  // blocks it holds on the instance considered
};

struct Cost {
  size_t count = 0;
  int32_t max_priority = -1;
  int64_t sum_priority = 0;
  Duration lost{0};
  auto Key() const { return std::make_tuple(count, max_priority, sum_priority, lost); }
};

Cost CostOf(const std::vector<const PlacedRunInfo*>& victims, TimePoint now) {
  Cost c;
  c.count = victims.size();
  for (const PlacedRunInfo* v : victims) {
    c.max_priority = std::max(c.max_priority, v->priority);
    c.sum_priority += v->priority;
    c.lost += std::max(Duration(0), now - v->placed_at);
  }
  return c;
}

// A run holding blocks on an indexed instance; info is null when it may not be a victim.
struct RunEntry {
  const PlacedRunInfo* info = nullptr;
};

struct Holder {
  std::string_view run;
  int32_t blocks = 0;  // on this instance
  const RunEntry* entry = nullptr;
};

struct Instance {
  InstanceSpec spec;  // a copy: runs_started follows the cycle's placements
  const FleetSpec* fleet = nullptr;
  BlockLayout layout;
  int64_t busy = 0;              // blocks held by every placed run and Pod
  std::vector<Holder> holders;  // one per run
  bool excluded = false;
};

}  // namespace

namespace internal {

struct PreemptionIndex::State {
  TimePoint now;
  std::unordered_map<std::string_view, RunEntry> runs;  // node-based: entries never move
  std::deque<std::string> owned;                         // ids of the cycle's placements
  std::vector<Instance> instances;                       // of LowerPriority fleets only
  std::unordered_map<std::string_view, int32_t> by_name;
  std::map<std::string_view, std::vector<int32_t>> by_fleet;

  void Hold(Instance& i, std::string_view run, int32_t blocks, const RunEntry* entry) {
    i.busy += std::max(blocks, 0);
    for (Holder& h : i.holders) {
      if (h.run == run) {
        h.blocks += std::max(blocks, 0);
        return;
      }
    }
    i.holders.push_back(Holder{run, std::max(blocks, 0), entry});
  }
};

namespace {

class Planner {
 public:
  Planner(const PreemptionIndex::State& state, const PreemptionRequest& request)
      : state_(state), request_(request), now_(state.now) {}

  std::optional<PreemptionPlan> Plan() {
    // The eligible instances: candidate fleets (all LowerPriority ones when none is named), not
    // excluded, taking new runs, and with maxDuration living long enough.
    std::vector<const Instance*> eligible;
    auto add = [&](int32_t x) {
      const Instance& i = state_.instances[x];
      if (i.excluded) return;
      if (request_.reclaimable ? i.fleet->reclaim != ReclaimPolicy::kBorrowed
                               : i.fleet->preemption != PreemptionPolicy::kLowerPriority) {
        return;
      }
      if (!TakesNewRuns(ClassifyInstance(i.spec, *i.fleet, i.layout, i.busy, now_))) return;
      if (request_.max_duration && i.spec.expires_at && *i.spec.expires_at < now_ + *request_.max_duration) return;
      eligible.push_back(&i);
    };
    if (request_.fleets.empty()) {
      for (int32_t x = 0; x < static_cast<int32_t>(state_.instances.size()); ++x) add(x);
    } else {
      std::set<std::string_view> names(request_.fleets.begin(), request_.fleets.end());
      for (std::string_view name : names) {
        auto it = state_.by_fleet.find(name);
        if (it == state_.by_fleet.end()) continue;
        for (int32_t x : it->second) add(x);
      }
    }
    std::optional<PreemptionPlan> best;
    std::optional<std::tuple<size_t, int32_t, int64_t, Duration, std::vector<std::string>>> best_key;
    auto consider = [&](const std::string& fleet, std::vector<std::string> instances,
                        const std::vector<const PlacedRunInfo*>& victims) {
      if (victims.empty()) return;  // not a preemption
      Cost c = CostOf(victims, now_);
      auto key = std::make_tuple(c.count, c.max_priority, c.sum_priority, c.lost, instances);
      if (best_key && !(key < *best_key)) return;
      best_key = key;
      PreemptionPlan p;
      p.fleet = fleet;
      p.instances = std::move(instances);
      for (const PlacedRunInfo* v : victims) p.victims.push_back(v->id);
      std::sort(p.victims.begin(), p.victims.end());
      p.max_victim_priority = c.max_priority;
      p.sum_victim_priority = c.sum_priority;
      p.work_lost = c.lost;
      best = std::move(p);
    };
    if (request_.nodes <= 1) {
      for (const Instance* i : eligible) {
        std::vector<const PlacedRunInfo*> victims;
        if (SingleNode(*i, victims)) consider(i->fleet->name, {i->spec.name}, victims);
      }
    } else {
      MultiNode(eligible, consider);
    }
    return best;
  }

 private:
  // A holder of blocks on `i` that this request may evict, or nullptr.
  const PlacedRunInfo* Evictable(const Holder& h, const Instance& i) const {
    const PlacedRunInfo* p = h.entry == nullptr ? nullptr : h.entry->info;
    if (p == nullptr) return nullptr;
    if (request_.reclaimable ? !request_.reclaimable(i.fleet->name, p->id) : p->priority >= request_.priority) {
      return nullptr;
    }
    if (now_ - p->placed_at < i.fleet->min_runtime) return nullptr;
    return p;
  }

  // The cheapest victim set on one instance that frees the blocks the request needs; false when
  // none does, or when none is needed.
  bool SingleNode(const Instance& i, std::vector<const PlacedRunInfo*>& out) const {
    std::optional<int32_t> need = i.layout.BlocksFor(request_.resources);
    if (!need) return false;
    const int32_t total = i.layout.total_blocks();
    const int32_t free = total - static_cast<int32_t>(std::min<int64_t>(i.busy, total));
    if (free >= *need) return false;  // fits without preemption
    const int32_t missing = *need - free;
    std::vector<Victim> cands;
    int64_t evictable = 0;
    for (const Holder& h : i.holders) {
      if (const PlacedRunInfo* p = Evictable(h, i)) {
        cands.push_back({p, h.blocks});
        evictable += h.blocks;
      }
    }
    if (evictable < missing) return false;
    // Fewest victims: the smallest k whose k largest holders free enough.
    std::sort(cands.begin(), cands.end(), [](const Victim& a, const Victim& b) {
      return std::make_tuple(-a.blocks_here, a.info->priority, -a.info->placed_at.time_since_epoch().count(), a.info->id) <
             std::make_tuple(-b.blocks_here, b.info->priority, -b.info->placed_at.time_since_epoch().count(), b.info->id);
    });
    int32_t acc = 0;
    size_t k = 0;
    while (k < cands.size() && acc < missing) acc += cands[k++].blocks_here;
    if (acc < missing) return false;
    // Among the sets of size k that free enough, the cheapest (exact while the count of subsets
    // is small, else the k largest found above).
    std::vector<const PlacedRunInfo*> best;
    for (size_t j = 0; j < k; ++j) best.push_back(cands[j].info);
    if (Combinations(cands.size(), k) <= kMaxCombinations) {
      std::vector<size_t> idx(k);
      for (size_t j = 0; j < k; ++j) idx[j] = j;
      auto best_key = CostOf(best, now_).Key();
      while (true) {
        int32_t freed = 0;
        std::vector<const PlacedRunInfo*> set;
        for (size_t j : idx) {
          freed += cands[j].blocks_here;
          set.push_back(cands[j].info);
        }
        if (freed >= missing) {
          auto key = CostOf(set, now_).Key();
          if (key < best_key) {
            best_key = key;
            best = set;
          }
        }
        // Next combination in lexicographic order.
        size_t pos = k;
        while (pos > 0 && idx[pos - 1] == cands.size() - k + pos - 1) --pos;
        if (pos == 0) break;
        ++idx[pos - 1];
        for (size_t j = pos; j < k; ++j) idx[j] = idx[j - 1] + 1;
      }
    }
    out = std::move(best);
    return true;
  }

  static int64_t Combinations(size_t n, size_t k) {
    k = std::min(k, n - k);
    int64_t c = 1;
    for (size_t j = 1; j <= k; ++j) {
      c = c * static_cast<int64_t>(n - k + j) / static_cast<int64_t>(j);
      if (c > kMaxCombinations) return c;
    }
    return c;
  }

  template <typename Consider>
  void MultiNode(const std::vector<const Instance*>& eligible, Consider& consider) const {
    // The eligible instances of each cluster fleet that can hold the request.
    std::map<std::string_view, std::vector<const Instance*>> fleets;
    for (const Instance* i : eligible) {
      if (i->fleet->placement == PlacementPolicy::kCluster && i->layout.BlocksFor(request_.resources)) {
        fleets[i->fleet->name].push_back(i);
      }
    }
    // Domains: of the level the request resolves to on the fleet (the whole fleet without
    // levels); an instance without a label of that level is in none. Preferred climbs outward
    // only while no domain of a level gives a plan.
    std::map<std::vector<std::string_view>, std::vector<const Instance*>> domains;
    for (const auto& [name, members] : fleets) {
      const FleetSpec& spec = *members.front()->fleet;
      const internal::LevelUse use = internal::ResolveTopologyLevel(spec, request_.topology);
      if (!use.known) continue;
      const bool levels = !spec.topology.empty() || !spec.topology_key.empty();
      for (int32_t level = use.level; level >= use.bound(); --level) {
        domains.clear();
        for (const Instance* i : members) {
          const std::span<const std::string> path = internal::TopologyPathOf(spec, i->spec);
          if ((levels && path.empty()) || static_cast<int32_t>(path.size()) <= level) continue;
          domains[std::vector<std::string_view>(path.begin(), path.begin() + (level + 1))].push_back(i);
        }
        bool found = false;
        for (const auto& [path, domain] : domains) found |= PlanInDomain(name, domain, consider);
        if (found) break;
      }
    }
  }

  // The cheapest `nodes` instances of one domain, each cleared completely (all its holders
  // evictable), offered to `consider`; false when the domain gives no plan.
  template <typename Consider>
  bool PlanInDomain(std::string_view fleet, const std::vector<const Instance*>& members, Consider& consider) const {
    if (members.size() < static_cast<size_t>(request_.nodes)) return false;
    struct Cleared {
      const Instance* inst;
      std::vector<const PlacedRunInfo*> victims;
      std::tuple<size_t, int32_t, int64_t, Duration> cost;
    };
    std::vector<Cleared> cleared;
    for (const Instance* i : members) {
      Cleared c{i, {}, {}};
      bool ok = true;
      for (const Holder& h : i->holders) {
        const PlacedRunInfo* p = Evictable(h, *i);
        if (p == nullptr) {
          ok = false;
          break;
        }
        c.victims.push_back(p);
      }
      if (!ok) continue;
      c.cost = CostOf(c.victims, now_).Key();
      cleared.push_back(std::move(c));
    }
    if (cleared.size() < static_cast<size_t>(request_.nodes)) return false;
    std::sort(cleared.begin(), cleared.end(), [](const Cleared& a, const Cleared& b) {
      return std::tie(a.cost, a.inst->spec.name) < std::tie(b.cost, b.inst->spec.name);
    });
    std::vector<std::string> chosen;
    std::vector<const PlacedRunInfo*> victims;
    std::set<std::string_view> seen;
    for (int32_t n = 0; n < request_.nodes; ++n) {
      chosen.push_back(cleared[n].inst->spec.name);
      for (const PlacedRunInfo* v : cleared[n].victims) {
        if (seen.insert(v->id).second) victims.push_back(v);
      }
    }
    std::sort(chosen.begin(), chosen.end());
    if (victims.empty()) return false;  // not a preemption
    consider(std::string(fleet), std::move(chosen), victims);
    return true;
  }

  const PreemptionIndex::State& state_;
  const PreemptionRequest& request_;
  const TimePoint now_;
};

}  // namespace

PreemptionIndex::PreemptionIndex(const ClusterSnapshot& snapshot, const std::vector<PlacedRunInfo>& placed,
                                 TimePoint now, bool reclaim_fleets)
    : state_(std::make_unique<State>()) {
  State& st = *state_;
  st.now = now;
  std::unordered_map<std::string_view, const FleetSpec*> fleets;
  for (const FleetSpec& f : snapshot.fleets) fleets.emplace(f.name, &f);  // a later duplicate is ignored
  std::unordered_set<std::string_view> seen_instances;  // the first of a name wins
  for (const InstanceSpec& inst : snapshot.instances) {
    if (!seen_instances.insert(inst.name).second) continue;
    auto f = fleets.find(inst.fleet);
    if (f == fleets.end()) continue;
    if (f->second->preemption != PreemptionPolicy::kLowerPriority &&
        (!reclaim_fleets || f->second->reclaim != ReclaimPolicy::kBorrowed)) {
      continue;
    }
    st.by_name.emplace(inst.name, static_cast<int32_t>(st.instances.size()));
    Instance i;
    i.spec = inst;
    i.fleet = f->second;
    i.layout = BlockLayout::Make(inst.allocatable, f->second->blocks);
    st.by_fleet[f->second->name].push_back(static_cast<int32_t>(st.instances.size()));
    st.instances.push_back(std::move(i));
  }
  std::unordered_map<std::string_view, const PlacedRunInfo*> info;
  for (const PlacedRunInfo& p : placed) info.emplace(p.id, &p);
  std::set<std::string_view> seen_runs;
  for (const RunningRun& r : snapshot.running) {
    if (!seen_runs.insert(r.id).second) continue;
    for (const InstanceBlocks& b : r.placement) {
      auto x = st.by_name.find(b.instance);
      if (x == st.by_name.end()) continue;
      auto [entry, added] = st.runs.try_emplace(r.id);
      if (added) {
        auto p = info.find(r.id);
        entry->second.info = p == info.end() ? nullptr : p->second;
      }
      st.Hold(st.instances[x->second], r.id, b.blocks, &entry->second);
    }
  }
}

PreemptionIndex::~PreemptionIndex() = default;

std::optional<PreemptionPlan> PreemptionIndex::Plan(const PreemptionRequest& request) const {
  return Planner(*state_, request).Plan();
}

void PreemptionIndex::AddPlacement(std::string_view run, std::string_view instance, int32_t blocks) {
  State& st = *state_;
  auto x = st.by_name.find(instance);
  if (x == st.by_name.end()) return;
  auto entry = st.runs.find(run);
  if (entry == st.runs.end()) {
    st.owned.emplace_back(run);
    entry = st.runs.try_emplace(st.owned.back()).first;  // info stays null: never a victim
  }
  Instance& i = st.instances[x->second];
  ++i.spec.runs_started;
  st.Hold(i, entry->first, blocks, &entry->second);
}

void PreemptionIndex::SetExcluded(std::string_view instance, bool excluded) {
  auto x = state_->by_name.find(instance);
  if (x != state_->by_name.end()) state_->instances[x->second].excluded = excluded;
}

void PreemptionIndex::RemoveVictim(std::string_view run) {
  auto entry = state_->runs.find(run);
  if (entry != state_->runs.end()) entry->second.info = nullptr;
}

}  // namespace internal

namespace {
}  // namespace

std::optional<PreemptionPlan> PlanPreemption(const ClusterSnapshot& snapshot, const std::vector<PlacedRunInfo>& placed,
                                             const PreemptionRequest& request, TimePoint now) {
  return internal::PreemptionIndex(snapshot, placed, now).Plan(request);
}

}  // namespace berth::scheduling
