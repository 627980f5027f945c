#include "scheduling/preemption.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "scheduling/block_layout.h"
#include "scheduling/instance_state.h"

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

struct Instance {
  const InstanceSpec* spec = nullptr;
  const FleetSpec* fleet = nullptr;
  BlockLayout layout;
  int32_t busy = 0;                         // blocks held by every placed run and Pod
  std::vector<std::string_view> holders;  // runs with blocks here (RunningRun ids)
};

class Planner {
 public:
  Planner(const ClusterSnapshot& snapshot, const std::vector<PlacedRunInfo>& placed, const PreemptionRequest& request,
          TimePoint now)
      : request_(request), now_(now) {
    for (const PlacedRunInfo& p : placed) info_.emplace(p.id, &p);
    std::set<std::string_view> candidates(request.fleets.begin(), request.fleets.end());
    for (const FleetSpec& f : snapshot.fleets) {
      if (fleets_.count(f.name)) continue;  // a later duplicate is ignored
      fleets_.emplace(f.name, &f);
    }
    std::map<std::string_view, int32_t> busy;
    std::map<std::string_view, std::vector<std::string_view>> holders;
    std::set<std::string_view> seen_runs;
    for (const RunningRun& r : snapshot.running) {
      if (!seen_runs.insert(r.id).second) continue;
      for (const InstanceBlocks& b : r.placement) {
        busy[b.instance] += std::max(b.blocks, 0);
        holders[b.instance].push_back(r.id);
        blocks_[{r.id, b.instance}] += std::max(b.blocks, 0);
      }
    }
    std::set<std::string_view> seen;
    for (const InstanceSpec& inst : snapshot.instances) {
      if (!seen.insert(inst.name).second) continue;
      auto f = fleets_.find(inst.fleet);
      if (f == fleets_.end() || f->second->preemption != PreemptionPolicy::kLowerPriority) continue;
      if (!candidates.empty() && !candidates.count(inst.fleet)) continue;
      Instance i;
      i.spec = &inst;
      i.fleet = f->second;
      i.layout = BlockLayout::Make(inst.allocatable, f->second->blocks);
      i.busy = static_cast<int32_t>(std::min<int64_t>(busy[inst.name], i.layout.total_blocks()));
      i.holders = holders[inst.name];
      if (!TakesNewRuns(ClassifyInstance(inst, *f->second, i.layout, i.busy, now))) continue;
      if (request.max_duration && inst.expires_at && *inst.expires_at < now + *request.max_duration) continue;
      instances_.push_back(std::move(i));
    }
  }

  std::optional<PreemptionPlan> Plan() {
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
      for (const Instance& i : instances_) {
        std::vector<const PlacedRunInfo*> victims;
        if (SingleNode(i, victims)) consider(i.fleet->name, {i.spec->name}, victims);
      }
    } else {
      MultiNode(consider);
    }
    return best;
  }

 private:
  // A holder of blocks on `i` that this request may evict, or nullptr.
  const PlacedRunInfo* Evictable(std::string_view run, const Instance& i) const {
    auto it = info_.find(run);
    if (it == info_.end()) return nullptr;
    const PlacedRunInfo* p = it->second;
    if (p->priority >= request_.priority) return nullptr;
    if (now_ - p->placed_at < i.fleet->min_runtime) return nullptr;
    return p;
  }

  int32_t BlocksOf(std::string_view run, std::string_view instance) const {
    auto it = blocks_.find({run, instance});
    return it == blocks_.end() ? 0 : it->second;
  }

  // The cheapest victim set on one instance that frees the blocks the request needs; false when
  // none does, or when none is needed.
  bool SingleNode(const Instance& i, std::vector<const PlacedRunInfo*>& out) const {
    std::optional<int32_t> need = i.layout.BlocksFor(request_.resources);
    if (!need) return false;
    const int32_t free = i.layout.total_blocks() - i.busy;
    if (free >= *need) return false;  // fits without preemption
    const int32_t missing = *need - free;
    std::vector<Victim> cands;
    for (std::string_view h : i.holders) {
      if (const PlacedRunInfo* p = Evictable(h, i)) cands.push_back({p, BlocksOf(h, i.spec->name)});
    }
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
  void MultiNode(Consider& consider) const {
    // Domains: (fleet, topology value) of cluster fleets; an instance without the label of its
    // fleet's topologyKey takes no multi-node run.
    std::map<std::pair<std::string_view, std::string_view>, std::vector<const Instance*>> domains;
    for (const Instance& i : instances_) {
      if (i.fleet->placement != PlacementPolicy::kCluster) continue;
      std::optional<int32_t> need = i.layout.BlocksFor(request_.resources);
      if (!need) continue;
      std::string_view domain;
      if (!i.fleet->topology_key.empty()) {
        if (!i.spec->topology_domain) continue;
        domain = *i.spec->topology_domain;
      }
      domains[{i.fleet->name, domain}].push_back(&i);
    }
    for (auto& [key, members] : domains) {
      // Each instance's cost: every holder evicted (all must be evictable).
      struct Cleared {
        const Instance* inst;
        std::vector<const PlacedRunInfo*> victims;
        std::tuple<size_t, int32_t, int64_t, Duration> cost;
      };
      std::vector<Cleared> cleared;
      for (const Instance* i : members) {
        Cleared c{i, {}, {}};
        bool ok = true;
        std::set<std::string_view> unique;
        for (std::string_view h : i->holders) {
          if (!unique.insert(h).second) continue;
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
      if (cleared.size() < static_cast<size_t>(request_.nodes)) continue;
      std::sort(cleared.begin(), cleared.end(), [](const Cleared& a, const Cleared& b) {
        return std::tie(a.cost, a.inst->spec->name) < std::tie(b.cost, b.inst->spec->name);
      });
      std::vector<std::string> chosen;
      std::vector<const PlacedRunInfo*> victims;
      std::set<std::string_view> seen;
      for (int32_t n = 0; n < request_.nodes; ++n) {
        chosen.push_back(cleared[n].inst->spec->name);
        for (const PlacedRunInfo* v : cleared[n].victims) {
          if (seen.insert(v->id).second) victims.push_back(v);
        }
      }
      std::sort(chosen.begin(), chosen.end());
      consider(std::string(key.first), std::move(chosen), victims);
    }
  }

  const PreemptionRequest& request_;
  const TimePoint now_;
  std::unordered_map<std::string_view, const PlacedRunInfo*> info_;
  std::map<std::string_view, const FleetSpec*> fleets_;
  std::map<std::pair<std::string_view, std::string_view>, int32_t> blocks_;
  std::vector<Instance> instances_;
};

}  // namespace

std::optional<PreemptionPlan> PlanPreemption(const ClusterSnapshot& snapshot, const std::vector<PlacedRunInfo>& placed,
                                             const PreemptionRequest& request, TimePoint now) {
  return Planner(snapshot, placed, request, now).Plan();
}

}  // namespace berth::scheduling
