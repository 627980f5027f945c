// Randomized property test of the scheduling cycle over thousands of generated snapshots (fixed
// seeds): every result must satisfy the placement rules checked here from first principles, must
// equal what the plain reference implementation decides, and must not depend on input order.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fixtures.h"
#include "scheduling/block_layout.h"
#include "scheduling/reference/reference_scheduler.h"
#include "scheduling/scheduler.h"

namespace berth::scheduling {
namespace {

using namespace berth::scheduling::testing;  // NOLINT(build/namespaces)

struct Case {
  ClusterSnapshot cluster;
  std::vector<PendingRun> runs;
  Duration aging{0};
  TimePoint now = kT0;
};

class Generator {
 public:
  // `with_teams`: Teams are added after everything else, from their own random stream, so that
  // the cases without teams stay exactly what they were.
  // `whole_slices`: then, from a stream of its own, fleets of whole-instance blocks with topology
  // domains and multi-node runs made gangs of slices there (gangs of whole slices, which preempt
  // and reclaim as multi-node runs do).
  explicit Generator(uint32_t seed, bool with_teams = false, bool whole_slices = false)
      : rng_(seed), with_teams_(with_teams), whole_slices_(whole_slices), seed_(seed) {}

  Case Make() {
    Case c;
    c.aging = Chance(0.5) ? Duration(0) : minutes(15);
    const int fleets = Int(1, 4);
    for (int f = 0; f < fleets; ++f) {
      FleetSpec spec;
      spec.name = "f" + std::to_string(f);
      const int blocks = Int(0, 8);
      spec.blocks = blocks == 0 ? BlocksSetting::Auto() : BlocksSetting::Count(blocks);
      spec.placement = Chance(0.6) ? PlacementPolicy::kCluster : PlacementPolicy::kAny;
      if (spec.placement == PlacementPolicy::kCluster && Chance(0.4)) spec.topology_key = "zone";
      if (Chance(0.3)) spec.max_runs_per_instance = Int(1, 4);
      if (Chance(0.5)) spec.preemption = PreemptionPolicy::kLowerPriority;
      spec.min_runtime = minutes(Pick<int>({0, 5, 30}));
      if (Chance(0.2)) spec.gpu_resource = "amd.com/gpu";
      c.cluster.fleets.push_back(spec);
    }
    const int instances = Int(0, 30);
    for (int i = 0; i < instances; ++i) {
      InstanceSpec in;
      in.name = "i" + std::to_string(i);
      in.fleet = Chance(0.03) ? "ghost" : c.cluster.fleets[Int(0, fleets - 1)].name;
      in.allocatable = Resources{Pick<int64_t>({2, 4, 8, 16, 32}) * 1000 + (Chance(0.1) ? 500 : 0),
                                 Pick<int64_t>({4, 16, 64, 256}) * kGi, Pick<int64_t>({0, 1, 2, 4, 8})};
      in.ready = !Chance(0.08);
      if (Chance(0.35)) in.expires_at = c.now + minutes(Int(-120, 600));
      in.runs_started = Int(0, 4);
      if (!Chance(0.2)) in.topology_domain = "z" + std::to_string(Int(0, 2));
      c.cluster.instances.push_back(in);
    }
    AddRunning(c);
    const int runs = Int(0, 40);
    // spec.wholeInstances from a stream of its own, so that the rest of each case stays as it was.
    std::mt19937 shapes(seed_ * 40503u + 11);
    auto shape_chance = [&shapes](double p) { return std::bernoulli_distribution(p)(shapes); };
    for (int r = 0; r < runs; ++r) {
      PendingRun run;
      run.id = Pick<std::string>({"ns", "ml", "run"}) + "/r" + std::to_string(r);
      run.priority = Int(0, 100);
      run.submitted_at = c.now - minutes(Int(0, 300));
      run.nodes = Chance(0.7) ? 1 : Int(2, 4);
      if (Chance(0.6)) {  // small: fits most instances
        run.resources = Resources{Int(0, 8) * 500, Int(0, 8) * kGi, Chance(0.7) ? 0 : 1};
      } else {
        run.resources = Resources{Int(0, 40) * 500, Int(0, 64) * kGi / 2, Chance(0.5) ? 0 : Int(0, 8)};
      }
      if (Chance(0.35)) {
        const int k = Int(1, 2);
        for (int x = 0; x < k; ++x) run.fleets.push_back("f" + std::to_string(Int(0, 4)));
      }
      if (Chance(0.5)) run.max_duration = minutes(Int(10, 480));
      if (shape_chance(0.25)) run.whole_instances = !shape_chance(run.nodes > 1 ? 0.75 : 0.3);
      if (Chance(0.15)) {  // a queued Pod's gated Pods, already in its namespace's quota usage
        run.quota_counted = {{"requests.nvidia.com/gpu", run.resources.gpus * run.nodes}, {kQuotaPods, run.nodes}};
        if (Chance(0.5)) run.quota_counted[kQuotaCpu] = run.resources.cpu_millis * run.nodes;
      }
      c.runs.push_back(run);
    }
    // Grace periods (issue 44/45) from a stream of their own too: each fleet's maxGracePeriod, and
    // for some runs (workloads) their Pods' own grace period.
    std::mt19937 graces(seed_ * 7919u + 3);
    auto grace_pick = [&graces](std::vector<int64_t> v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(graces)]; };
    for (FleetSpec& f : c.cluster.fleets) f.max_grace_seconds = grace_pick({30, 600, 3600, 3600});
    for (PendingRun& run : c.runs) {
      if (std::bernoulli_distribution(0.08)(graces)) run.grace_seconds = grace_pick({30, 600, 3600, 31536000});
    }
    AddQuotas(c);
    AddNominations(c);
    if (with_teams_) AddTeams(c);
    if (whole_slices_) AddWholeSlices(c);
    return c;
  }

 private:
  // Most fleets become `placement: cluster` (mostly with topologyKey zone) and `blocks: 1` (every slice
  // is a whole instance; running runs' blocks become the odd over-commit), most preempting; most
  // multi-node runs become gangs of slices.
  void AddWholeSlices(Case& c) {
    rng_.seed(seed_ * 2246822519u + 29);
    for (FleetSpec& f : c.cluster.fleets) {
      if (!Chance(0.75)) continue;
      f.placement = PlacementPolicy::kCluster;
      f.topology_key = Chance(0.8) ? "zone" : "";
      f.blocks = BlocksSetting::Count(1);
      if (Chance(0.85)) f.preemption = PreemptionPolicy::kLowerPriority;
    }
    for (PendingRun& r : c.runs) {
      if (r.nodes > 1 && Chance(0.8)) r.whole_instances = false;
    }
  }

  // Teams over the namespaces of the runs: shares with and without borrowing and lending
  // limits, on fleets that exist or not; parents (some invalid); weights and usage with ties;
  // fleets that reclaim or not; priorities squeezed so that many runs share one.
  void AddTeams(Case& c) {
    rng_.seed(seed_ * 2654435761u + 17);
    const int teams = Int(1, 4);
    for (int t = 0; t < teams; ++t) {
      TeamSpec team;
      team.name = "t" + std::to_string(Int(0, 3));  // the odd duplicate name
      for (const char* ns : {"ns", "ml", "run"}) {
        if (Chance(0.45)) team.namespaces.push_back(ns);
      }
      if (Chance(0.3)) team.parent = "t" + std::to_string(Int(0, 3));
      team.weight = Int(0, 3);
      team.gpu_hours = Pick<double>({0, 10, 10, 40, 120.5});
      team.cpu_hours = Pick<double>({0, 5, 50});
      for (int k = Int(0, 3); k > 0; --k) {
        TeamShare share;
        share.fleet = "f" + std::to_string(Chance(0.1) ? 4 : Int(0, 3));
        if (Chance(0.85)) share.nominal.gpus = Pick<int>({0, 2, 4, 8, 16, 32, 64});
        if (Chance(0.2)) share.nominal.cpu_millis = Pick<int>({0, 8, 32, 128}) * 1000;
        if (Chance(0.2)) share.nominal.memory_bytes = Int(0, 128) * kGi;
        if (Chance(0.3)) share.borrowing_limit.gpus = Int(0, 8);
        if (Chance(0.15)) share.borrowing_limit.cpu_millis = Int(0, 16) * 1000;
        if (Chance(0.3)) share.lending_limit.gpus = Int(0, 8);
        if (Chance(0.15)) share.lending_limit.cpu_millis = Int(0, 16) * 1000;
        team.shares.push_back(share);
      }
      c.cluster.teams.push_back(team);
    }
    if (Chance(0.5)) {  // namespace ns has a large share: its runs reclaim from the running ones
      TeamSpec own;
      own.name = "a-ns";
      own.namespaces = {"ns"};
      own.gpu_hours = Pick<double>({0, 40});
      for (const FleetSpec& f : c.cluster.fleets) {
        TeamShare share;
        share.fleet = f.name;
        share.nominal.gpus = Pick<int>({16, 64});
        if (Chance(0.2)) share.nominal.cpu_millis = 256000;
        own.shares.push_back(share);
      }
      c.cluster.teams.push_back(own);
    }
    for (FleetSpec& f : c.cluster.fleets) {
      if (Chance(0.2)) f.reclaim = ReclaimPolicy::kNever;
    }
    if (Chance(0.6)) {
      for (PendingRun& r : c.runs) r.priority = Pick<int>({40, 50, 50, 60});
    }
  }

  void AddRunning(Case& c) {
    std::map<std::string, const FleetSpec*> fleets;
    for (const FleetSpec& f : c.cluster.fleets) fleets[f.name] = &f;
    int id = 0;
    for (const InstanceSpec& in : c.cluster.instances) {
      auto f = fleets.find(in.fleet);
      if (f == fleets.end()) continue;
      const BlockLayout layout = BlockLayout::Make(in.allocatable, f->second->blocks);
      int32_t free = layout.total_blocks();
      const int holders = Chance(0.5) ? 0 : Int(1, 3);
      for (int h = 0; h < holders && free > 0; ++h) {
        // Mostly consistent input, with the odd over-commit the core must tolerate.
        const int32_t blocks = Chance(0.05) ? free + 1 : Int(1, free);
        free -= std::min(blocks, free);
        std::optional<TimePoint> end;
        if (Chance(0.7)) end = c.now + minutes(Int(-30, 360));
        c.cluster.running.push_back(Running(Pick<std::string>({"run", "ml"}) + "/p" + std::to_string(id++),
                                            {{in.name, blocks}}, end));
        c.cluster.running.back().quota_pending = Chance(0.2);
      }
    }
    // The odd gang that holds whole instances of one fleet.
    if (!c.cluster.instances.empty() && Chance(0.3)) {
      RunningRun gang = Running("run/gang", {});
      for (int k = Int(2, 3); k > 0; --k) {
        const InstanceSpec& in = c.cluster.instances[Int(0, static_cast<int>(c.cluster.instances.size()) - 1)];
        if (std::none_of(gang.placement.begin(), gang.placement.end(),
                         [&](const InstanceBlocks& b) { return b.instance == in.name; })) {
          gang.placement.push_back({in.name, 8});
        }
      }
      c.cluster.running.push_back(gang);
    }
    if (Chance(0.2)) c.cluster.running.push_back(Running("run/lost", {{"nowhere", 3}}));
    // Most runs may be victims: base priority and placement time.
    for (const RunningRun& r : c.cluster.running) {
      if (Chance(0.85)) c.cluster.placed_runs.push_back(PlacedRunInfo{r.id, Int(0, 100), c.now - minutes(Int(0, 90))});
    }
  }

  void AddQuotas(Case& c) {
    for (const char* ns : {"ns", "ml", "run"}) {
      if (!Chance(0.3)) continue;
      NamespaceQuota q;
      q.ns = ns;
      auto limit = [&](const std::string& resource, int64_t unit, int max_units) {
        if (!Chance(0.5)) return;
        const int64_t hard = Int(0, max_units) * unit;
        q.limits[resource] = QuotaLimit{Int(0, max_units) * unit * 3 / 4, hard, "q-" + resource};
      };
      limit(kQuotaCpu, 1000, 64);
      limit(kQuotaMemory, kGi, 256);
      limit(kQuotaPods, 1, 12);
      limit("requests.nvidia.com/gpu", 1, 24);
      limit("requests.amd.com/gpu", 1, 24);
      c.cluster.quotas.push_back(q);
    }
  }

  // Nominations of earlier cycles: mostly for queued runs, on random instances, with random
  // victims (placed runs or not), stopping or not.
  void AddNominations(Case& c) {
    if (c.runs.empty() || c.cluster.instances.empty() || !Chance(0.4)) return;
    std::set<std::string> nominated;
    for (int k = Int(1, 3); k > 0; --k) {
      Nomination n;
      n.run_id = Chance(0.9) ? c.runs[Int(0, static_cast<int>(c.runs.size()) - 1)].id : "ns/gone";
      if (!nominated.insert(n.run_id).second) continue;
      const InstanceSpec& first = c.cluster.instances[Int(0, static_cast<int>(c.cluster.instances.size()) - 1)];
      n.fleet = first.fleet;
      n.instances.push_back(first.name);
      if (Chance(0.3)) {
        n.instances.push_back(c.cluster.instances[Int(0, static_cast<int>(c.cluster.instances.size()) - 1)].name);
      }
      for (const RunningRun& r : c.cluster.running) {
        for (const InstanceBlocks& b : r.placement) {
          if (b.instance == first.name && Chance(0.7)) n.victims.push_back(r.id);
        }
      }
      n.victims_stopping = Chance(0.5);
      n.reclaim = Chance(0.3);
      c.cluster.nominations.push_back(n);
    }
  }

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  T Pick(std::initializer_list<T> values) {
    return *(values.begin() + Int(0, static_cast<int>(values.size()) - 1));
  }

  std::mt19937 rng_;
  bool with_teams_ = false;
  bool whole_slices_ = false;
  uint32_t seed_ = 0;
};

CycleResult RunCore(const Case& c, const std::vector<PendingRun>& runs, bool reuse_equal_shapes = true) {
  RunQueue queue(c.aging);
  for (const PendingRun& r : runs) queue.Upsert(r);
  return Schedule(c.cluster, queue, c.now, reuse_equal_shapes);
}

// Everything observable about a result, as one string: equal strings mean equal decisions.
std::string Fingerprint(const CycleResult& r, bool with_reasons) {
  std::ostringstream out;
  for (const Placement& p : r.placements) {
    out << "P " << p.run_id << " " << p.fleet << (p.takes_unasked_gpus ? " gpu-unasked" : "");
    for (const RankPlacement& rank : p.ranks) {
      out << " " << rank.rank << ":" << rank.instance << "x" << rank.blocks << "("
          << rank.resources.cpu_millis << "," << rank.resources.memory_bytes << ","
          << rank.resources.gpus << ")";
    }
    out << "\n";
  }
  for (const PreemptionDecision& d : r.preemptions) {
    out << "X " << d.run_id << " " << d.plan.fleet << " on";
    for (const std::string& i : d.plan.instances) out << " " << i;
    out << " evicts";
    for (const std::string& v : d.plan.victims) out << " " << v;
    if (d.reclaim) out << " reclaim";
    out << "\n";
  }
  for (const WaitingRun& w : r.waiting) {
    out << "W " << w.run_id << " " << w.unschedulable() << " " << ApiReason(w.reason.code);
    if (w.unschedulable() || with_reasons) out << " " << static_cast<int>(w.reason.code);
    if (w.reason.code == WaitCode::kPreempting) {
      out << " stopping=" << w.reason.victims_stopping << " on";
      for (const std::string& i : w.reason.instances) out << " " << i;
      out << " evicts";
      for (const std::string& v : w.reason.victims) out << " " << v;
    }
    if (with_reasons) out << " " << r.Explain(w);
    out << "\n";
  }
  if (r.reservation) {
    out << "R " << r.reservation->run_id << " " << r.reservation->fleet;
    for (const std::string& i : r.reservation->instances) out << " " << i;
    out << " @" << (r.reservation->earliest_start
                        ? r.reservation->earliest_start->time_since_epoch().count()
                        : -1)
        << "\n";
  }
  return out.str();
}

// The placement rules, checked from first principles against the input.
void CheckRules(const Case& c, const CycleResult& r) {
  // With teams, the borrowers of one effective priority are placed after the others, in
  // fair-share order (waiting runs stay in queue order).
  const bool teams = !c.cluster.teams.empty();
  std::map<std::string, const FleetSpec*> fleets;
  for (const FleetSpec& f : c.cluster.fleets) fleets[f.name] = &f;
  std::map<std::string, const InstanceSpec*> instances;
  for (const InstanceSpec& i : c.cluster.instances) instances[i.name] = &i;
  std::map<std::string, int64_t> busy;
  for (const RunningRun& run : c.cluster.running) {
    for (const InstanceBlocks& b : run.placement) busy[b.instance] += b.blocks;
  }
  std::map<std::string, const PendingRun*> runs;
  for (const PendingRun& run : c.runs) runs[run.id] = &run;

  // Queue order from a brute-force sort.
  std::vector<const PendingRun*> order;
  for (const PendingRun& run : c.runs) order.push_back(&run);
  auto effective = [&](const PendingRun* run) -> int64_t {
    const int64_t p = std::clamp(run->priority, 0, 100);
    if (c.aging.count() == 0 || c.now <= run->submitted_at) return p;
    return std::min<int64_t>(100, p + (c.now - run->submitted_at) / c.aging);
  };
  std::sort(order.begin(), order.end(), [&](const PendingRun* a, const PendingRun* b) {
    if (effective(a) != effective(b)) return effective(a) > effective(b);
    if (a->submitted_at != b->submitted_at) return a->submitted_at < b->submitted_at;
    return a->id < b->id;
  });
  std::map<std::string, size_t> rank_in_queue;
  for (size_t i = 0; i < order.size(); ++i) rank_in_queue[order[i]->id] = i;

  // Every run exactly once; placements and waiting runs each in queue order.
  ASSERT_EQ(r.placements.size() + r.waiting.size(), c.runs.size());
  std::set<std::string> seen;
  size_t next = 0;  // queue order is strictly increasing within each list
  for (const Placement& p : r.placements) {
    ASSERT_TRUE(seen.insert(p.run_id).second);
    if (teams) continue;
    ASSERT_GE(rank_in_queue.at(p.run_id), next);
    next = rank_in_queue.at(p.run_id) + 1;
  }
  next = 0;
  for (const WaitingRun& w : r.waiting) {
    ASSERT_TRUE(seen.insert(w.run_id).second);
    ASSERT_GE(rank_in_queue.at(w.run_id), next);
    next = rank_in_queue.at(w.run_id) + 1;
    ASSERT_FALSE(r.Explain(w).empty());
  }

  std::map<std::string, int64_t> added_blocks;
  std::map<std::string, int64_t> added_runs;
  const size_t holder = r.reservation ? rank_in_queue.at(r.reservation->run_id) : order.size();
  std::set<std::string> reserved;
  if (r.reservation) reserved.insert(r.reservation->instances.begin(), r.reservation->instances.end());

  for (const Placement& p : r.placements) {
    const PendingRun& run = *runs.at(p.run_id);
    const int32_t nodes = std::max(run.nodes, 1);
    const bool slices = IsSliceGang(run);  // ranks may share an instance
    const bool whole = !slices && (nodes > 1 || IsWholeSingle(run));
    std::set<std::string> counted;  // instances this run started on (one run each)
    ASSERT_TRUE(fleets.count(p.fleet));
    const FleetSpec& fleet = *fleets.at(p.fleet);
    ASSERT_LE(run.grace_seconds, fleet.max_grace_seconds);  // its Pods stop within the fleet's cap
    ASSERT_TRUE(run.fleets.empty() ||
                std::find(run.fleets.begin(), run.fleets.end(), p.fleet) != run.fleets.end());
    ASSERT_EQ(static_cast<int32_t>(p.ranks.size()), nodes);  // gangs: all or nothing
    std::set<std::string> distinct;
    std::optional<std::string> domain;
    for (size_t k = 0; k < p.ranks.size(); ++k) {
      const RankPlacement& rank = p.ranks[k];
      ASSERT_EQ(rank.rank, static_cast<int32_t>(k));
      ASSERT_TRUE(distinct.insert(rank.instance).second || slices);
      if (k > 0) {
        ASSERT_LE(p.ranks[k - 1].instance, rank.instance);
        ASSERT_TRUE(slices || p.ranks[k - 1].instance != rank.instance);
      }
      const InstanceSpec& in = *instances.at(rank.instance);
      ASSERT_EQ(in.fleet, p.fleet);
      const BlockLayout layout = BlockLayout::Make(in.allocatable, fleet.blocks);
      ASSERT_TRUE(layout.valid());
      ASSERT_TRUE(in.ready);
      ASSERT_TRUE(!in.expires_at || *in.expires_at > c.now);
      if (run.max_duration) {
        ASSERT_TRUE(!in.expires_at || *in.expires_at >= c.now + *run.max_duration);
      }
      const bool started_here = counted.count(rank.instance) > 0;
      if (fleet.max_runs_per_instance) {
        ASSERT_LT(in.runs_started + added_runs[rank.instance] - (started_here ? 1 : 0), *fleet.max_runs_per_instance);
      }
      const auto need = layout.BlocksFor(run.resources);
      ASSERT_TRUE(need.has_value());
      const int64_t before = std::min<int64_t>(busy[rank.instance], layout.total_blocks()) +
                             added_blocks[rank.instance];
      if (!whole) {
        ASSERT_EQ(rank.blocks, *need);
      } else {
        if (nodes > 1) {
          ASSERT_EQ(fleet.placement, PlacementPolicy::kCluster);
        }
        ASSERT_EQ(before, 0) << "whole-instance rank on a busy instance";
        ASSERT_EQ(rank.blocks, layout.total_blocks());
        if (nodes > 1 && !fleet.topology_key.empty()) {
          ASSERT_TRUE(in.topology_domain.has_value());
          if (domain) {
            ASSERT_EQ(*domain, *in.topology_domain);
          }
          domain = in.topology_domain;
        }
      }
      ASSERT_EQ(rank.resources, layout.ResourcesFor(rank.blocks));
      ASSERT_LE(before + rank.blocks, layout.total_blocks()) << "over-commit of " << rank.instance;
      // (With teams a run of the holder's effective priority may be considered before it.)
      if (reserved.count(rank.instance) && rank_in_queue.at(p.run_id) > holder &&
          (!teams || effective(&run) < effective(order[holder]))) {
        ASSERT_TRUE(run.max_duration.has_value());
        ASSERT_TRUE(r.reservation->earliest_start.has_value());
        ASSERT_LE(c.now + *run.max_duration, *r.reservation->earliest_start);
        if (fleet.max_runs_per_instance) {  // a run slot stays for the reserved run
          ASSERT_LT(in.runs_started + added_runs[rank.instance] - (started_here ? 1 : 0) + 1,
                    *fleet.max_runs_per_instance);
        }
      }
      added_blocks[rank.instance] += rank.blocks;
      if (counted.insert(rank.instance).second) ++added_runs[rank.instance];
    }
  }
  if (r.reservation) {
    const WaitingRun* w = FindWaiting(r, r.reservation->run_id);
    ASSERT_NE(w, nullptr);
    ASSERT_FALSE(w->unschedulable());
    ASSERT_FALSE(r.reservation->instances.empty());
    ASSERT_NE(w->reason.code, WaitCode::kPreempting) << "a preempting run holds no reservation";
  }

  // Preemption: kept instances and victims are never shared, nor taken by a later run.
  std::set<std::string> queued;
  for (const PendingRun& run : c.runs) queued.insert(run.id);
  std::map<std::string, std::string> kept;  // instance -> the run it is kept for
  std::set<std::string> victims;
  std::map<std::string, const Nomination*> nominations;
  for (const Nomination& n : c.cluster.nominations) {
    if (queued.count(n.run_id)) nominations.emplace(n.run_id, &n);
  }
  for (const auto& [id, n] : nominations) {
    victims.insert(n->victims.begin(), n->victims.end());
    for (const std::string& i : n->instances) kept.emplace(i, id);
  }
  const std::map<std::string, std::string> nominated = kept;  // before this cycle's plans
  std::map<std::string, const PlacedRunInfo*> placed;
  for (const PlacedRunInfo& p : c.cluster.placed_runs) placed.emplace(p.id, &p);
  for (const PreemptionDecision& d : r.preemptions) {
    const WaitingRun* w = FindWaiting(r, d.run_id);
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(w->reason.code, WaitCode::kPreempting);
    ASSERT_EQ(w->reason.victims, d.plan.victims);
    ASSERT_FALSE(d.plan.victims.empty());
    const FleetSpec& fleet = *fleets.at(d.plan.fleet);
    if (!d.reclaim) {
      ASSERT_EQ(fleet.preemption, PreemptionPolicy::kLowerPriority);
    }
    for (const std::string& v : d.plan.victims) {
      ASSERT_TRUE(victims.insert(v).second) << v << " chosen twice";
      ASSERT_TRUE(placed.count(v));
      if (d.reclaim) {
        ASSERT_TRUE(teams);
        ASSERT_NE(fleet.reclaim, ReclaimPolicy::kNever);
        continue;
      }
      ASSERT_LT(placed.at(v)->priority, runs.at(d.run_id)->priority) << "base priorities";
    }
    for (const std::string& i : d.plan.instances) {
      auto k = kept.find(i);
      // A placed nominee's instances are open to the runs behind it.
      const bool released = k != kept.end() && FindPlacement(r, k->second) != nullptr &&
                            rank_in_queue.at(k->second) < rank_in_queue.at(d.run_id);
      ASSERT_TRUE(k == kept.end() || k->second == d.run_id || released) << i << " kept for " << k->second;
      kept[i] = d.run_id;
      if (r.reservation) {
        ASSERT_EQ(std::count(r.reservation->instances.begin(), r.reservation->instances.end(), i), 0);
      }
      // No later run is placed there.
      for (const Placement& p : r.placements) {
        if (rank_in_queue.at(p.run_id) < rank_in_queue.at(d.run_id)) continue;
        if (teams && effective(runs.at(p.run_id)) == effective(runs.at(d.run_id))) continue;  // maybe before it
        for (const RankPlacement& rank : p.ranks) ASSERT_NE(rank.instance, i);
      }
    }
  }
  // A queued nominee's instances go to no other run placed before it.
  for (const auto& [id, n] : nominations) {
    const Placement* own = FindPlacement(r, id);
    for (const Placement& p : r.placements) {
      // Placements are listed in the order they were decided.
      if (p.run_id == id || (own != nullptr && &p > own)) continue;
      for (const RankPlacement& rank : p.ranks) {
        auto k = nominated.find(rank.instance);  // the first nominee by id keeps a shared instance
        ASSERT_TRUE(k == nominated.end() || k->second != id) << p.run_id << " placed on an instance kept for " << id;
      }
    }
    if (own == nullptr && n->victims_stopping) {
      const WaitingRun* w = FindWaiting(r, id);
      ASSERT_TRUE(w->unschedulable() || w->reason.code == WaitCode::kQuotaExceeded ||
                  w->reason.code == WaitCode::kTeamShare || w->reason.code == WaitCode::kPreempting);
    }
  }
}

// Runs of one shape in a row (Schedule: a waiting run's reason is reused for the next run of its
// shape): the same decisions and the same reasons, sentence for sentence, as considering every
// run, on the generated cases with twins (same request, priority and submission time, so they
// sit side by side in the queue; mostly in the same namespace) added to many of their runs.
TEST(SchedulerProperty, RunsOfOneShapeInARowGetWhatConsideringEachGives) {
  int twins_waiting = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    Generator gen(seed);
    Case c = gen.Make();
    std::mt19937 rng(seed * 7919u);
    std::vector<PendingRun> runs;
    for (const PendingRun& r : c.runs) {
      runs.push_back(r);
      const int twins = std::uniform_int_distribution<int>(0, 3)(rng);
      for (int t = 0; t < twins; ++t) {
        PendingRun twin = r;
        // Mostly in the run's namespace; sometimes in another (whose quota may differ).
        const std::string ns = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                                   ? std::vector<std::string>{"ns", "ml", "run"}[std::uniform_int_distribution<int>(0, 2)(rng)]
                                   : std::string(NamespaceOf(r.id));
        twin.id = ns + "/" + std::string(r.id.substr(r.id.find('/') + 1)) + "-twin" + std::to_string(t);
        runs.push_back(twin);
      }
    }
    c.runs = runs;
    const CycleResult reused = RunCore(c, c.runs, true);
    const CycleResult each = RunCore(c, c.runs, false);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + Fingerprint(each, true));
    ASSERT_NO_FATAL_FAILURE(CheckRules(c, reused));
    ASSERT_EQ(Fingerprint(reused, true), Fingerprint(each, true));
    ASSERT_EQ(reused.waiting.size(), each.waiting.size());
    for (size_t i = 0; i < each.waiting.size(); ++i) {
      ASSERT_EQ(reused.waiting[i].run_id, each.waiting[i].run_id);
      ASSERT_TRUE(reused.waiting[i].reason == each.waiting[i].reason) << each.waiting[i].run_id;
      ASSERT_EQ(reused.waiting[i].effective_priority, each.waiting[i].effective_priority);
      twins_waiting += each.waiting[i].run_id.find("-twin") != std::string::npos;
    }
  }
  EXPECT_GT(twins_waiting, 10000) << "the twins must exercise the reuse";
}

// One generated case: the core keeps the placement rules, equals the reference, and gives the same
// output (reasons included) for the same input in another order. `core` is the core's result.
void CheckCase(uint32_t seed, const Case& c, CycleResult& core) {
  core = RunCore(c, c.runs);
  SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + Fingerprint(core, true));
  ASSERT_NO_FATAL_FAILURE(CheckRules(c, core));
  const CycleResult reference = ReferenceSchedule(c.cluster, c.runs, c.aging, c.now);
  ASSERT_EQ(Fingerprint(core, false), Fingerprint(reference, false));
  Case shuffled = c;
  std::mt19937 rng(seed);
  std::shuffle(shuffled.cluster.fleets.begin(), shuffled.cluster.fleets.end(), rng);
  std::shuffle(shuffled.cluster.instances.begin(), shuffled.cluster.instances.end(), rng);
  std::shuffle(shuffled.cluster.running.begin(), shuffled.cluster.running.end(), rng);
  std::vector<PendingRun> runs = c.runs;
  std::shuffle(runs.begin(), runs.end(), rng);
  ASSERT_EQ(Fingerprint(core, true), Fingerprint(RunCore(shuffled, runs), true));
}

TEST(SchedulerProperty, RulesHoldMatchReferenceAndIgnoreInputOrder) {
  int placements = 0, waiting = 0, reservations = 0, gangs = 0, unschedulable = 0;
  int slice_gangs = 0, shared = 0, slice_waits = 0, slice_reservations = 0;
  int preemptions = 0, gang_preemptions = 0, nominee_waits = 0, kept_waits = 0, quota_waits = 0, nominees_placed = 0;
  int grace_waits = 0, grace_placed = 0;
  for (uint32_t seed = 1; seed <= 5000; ++seed) {
    Generator gen(seed);
    const Case c = gen.Make();
    CycleResult core;
    ASSERT_NO_FATAL_FAILURE(CheckCase(seed, c, core));

    placements += static_cast<int>(core.placements.size());
    waiting += static_cast<int>(core.waiting.size());
    reservations += core.reservation.has_value();
    for (const Placement& p : core.placements) gangs += p.ranks.size() > 1;
    std::map<std::string, const PendingRun*> by_id;
    for (const PendingRun& run : c.runs) by_id[run.id] = &run;
    for (const Placement& p : core.placements) {
      if (!IsSliceGang(*by_id.at(p.run_id))) continue;
      ++slice_gangs;
      for (size_t k = 1; k < p.ranks.size(); ++k) shared += p.ranks[k - 1].instance == p.ranks[k].instance;
    }
    for (const WaitingRun& w : core.waiting) slice_waits += IsSliceGang(*by_id.at(w.run_id));
    slice_reservations += core.reservation && IsSliceGang(*by_id.at(core.reservation->run_id));
    for (const WaitingRun& w : core.waiting) {
      unschedulable += w.unschedulable();
      nominee_waits += w.reason.code == WaitCode::kPreempting && w.reason.victims_stopping;
      kept_waits += w.reason.code == WaitCode::kKeptForPreemptor;
      quota_waits += w.reason.code == WaitCode::kQuotaExceeded;
      grace_waits += w.reason.code == WaitCode::kGracePeriodTooLong;
    }
    for (const Placement& p : core.placements) grace_placed += by_id.at(p.run_id)->grace_seconds > 30;
    preemptions += static_cast<int>(core.preemptions.size());
    for (const PreemptionDecision& d : core.preemptions) gang_preemptions += d.plan.instances.size() > 1;
    for (const Nomination& n : c.cluster.nominations) nominees_placed += FindPlacement(core, n.run_id) != nullptr;
  }
  // The generator must exercise every path, or the properties above prove little.
  EXPECT_GT(placements, 8000);
  EXPECT_GT(waiting, 8000);
  EXPECT_GT(reservations, 2000);
  EXPECT_GT(gangs, 300);
  EXPECT_GT(unschedulable, 2000);
  EXPECT_GT(preemptions, 1000);
  EXPECT_GT(gang_preemptions, 50);
  EXPECT_GT(nominee_waits, 200);
  EXPECT_GT(kept_waits, 50);
  EXPECT_GT(quota_waits, 1000);
  EXPECT_GT(nominees_placed, 100);
  EXPECT_GT(grace_waits, 500);   // workloads whose Pods' grace no fleet of theirs allows
  EXPECT_GT(grace_placed, 300);  // and workloads with a long grace placed where it is allowed
  EXPECT_GT(slice_gangs, 300);
  EXPECT_GT(shared, 100);
  EXPECT_GT(slice_waits, 1000);
  EXPECT_GT(slice_reservations, 100);
  std::cout << "[ stats    ] gangs of slices: " << slice_gangs << " placed (" << shared << " ranks beside another rank), "
            << slice_waits << " waiting, " << slice_reservations << " holding the reservation\n";
  std::cout << "[ stats    ] " << placements << " placements (" << gangs << " gangs), " << waiting
            << " waiting (" << unschedulable << " unschedulable, " << quota_waits << " quota, "
            << nominee_waits << " nominees preempting, " << kept_waits << " kept for a preemptor), "
            << reservations << " reservations, " << preemptions << " preemptions (" << gang_preemptions
            << " gangs), " << nominees_placed << " nominees placed, " << grace_waits << " grace period too long, "
            << grace_placed << " placed with a grace period above 30 s\n";
}

// Teams (issue 31): the same generated cases with Teams added. The cycle must keep the placement
// rules, equal the reference scheduler (which models shares, borrowing and lending limits, the
// fair-share order of borrowers and reclaim in its own plain way) and ignore input order.
TEST(SchedulerProperty, TeamsMatchReferenceAndIgnoreInputOrder) {
  int placements = 0, team_waits = 0, reclaims = 0, gang_reclaims = 0, preemptions = 0, borrowers_reordered = 0;
  for (uint32_t seed = 1; seed <= 4000; ++seed) {
    Generator gen(seed, /*with_teams=*/true);
    const Case c = gen.Make();
    CycleResult core;
    ASSERT_NO_FATAL_FAILURE(CheckCase(seed, c, core));

    placements += static_cast<int>(core.placements.size());
    for (const WaitingRun& w : core.waiting) team_waits += w.reason.code == WaitCode::kTeamShare;
    for (const PreemptionDecision& d : core.preemptions) {
      preemptions += !d.reclaim;
      reclaims += d.reclaim;
      gang_reclaims += d.reclaim && d.plan.instances.size() > 1;
    }
    for (size_t k = 1; k < core.placements.size(); ++k) {
      const PendingRun* a = nullptr;
      const PendingRun* b = nullptr;
      for (const PendingRun& r : c.runs) {
        if (r.id == core.placements[k - 1].run_id) a = &r;
        if (r.id == core.placements[k].run_id) b = &r;
      }
      borrowers_reordered += a->priority == b->priority && a->submitted_at > b->submitted_at;
    }
  }
  EXPECT_GT(placements, 8000);
  EXPECT_GT(team_waits, 300);
  EXPECT_GT(reclaims, 250);
  EXPECT_GT(gang_reclaims, 20);
  EXPECT_GT(preemptions, 300);
  EXPECT_GT(borrowers_reordered, 150);
  std::cout << "[ stats    ] " << placements << " placements, " << team_waits << " team-share waits, " << reclaims
            << " reclaims (" << gang_reclaims << " gangs), " << preemptions << " preemptions, "
            << borrowers_reordered << " placements out of submission order\n";
}

// Gangs of whole slices (a Job's Pods that each take a whole instance): in the cases above they are
// rare, so fleets of whole-instance blocks with topology domains are generated for them, with and
// without teams. They preempt and reclaim as multi-node runs of their shape do, on the fleets where
// they are whole slices only, and the cycle equals the reference scheduler.
TEST(SchedulerProperty, GangsOfWholeSlicesPreemptAndReclaimAsTheReferenceSays) {
  int slice_preemptions = 0, slice_reclaims = 0, slice_placements = 0, nominees_placed = 0;
  for (uint32_t seed = 1; seed <= 3000; ++seed) {
    Generator gen(seed, /*with_teams=*/seed % 2 == 0, /*whole_slices=*/true);
    const Case c = gen.Make();
    CycleResult core;
    ASSERT_NO_FATAL_FAILURE(CheckCase(seed, c, core));
    std::map<std::string, const PendingRun*> by_id;
    for (const PendingRun& run : c.runs) by_id[run.id] = &run;
    for (const PreemptionDecision& d : core.preemptions) {
      if (!IsSliceGang(*by_id.at(d.run_id))) continue;
      EXPECT_EQ(d.plan.instances.size(), static_cast<size_t>(by_id.at(d.run_id)->nodes)) << "seed " << seed;
      slice_preemptions += !d.reclaim;
      slice_reclaims += d.reclaim;
    }
    for (const Placement& p : core.placements) {
      if (!IsSliceGang(*by_id.at(p.run_id))) continue;
      ++slice_placements;
      for (const Nomination& n : c.cluster.nominations) nominees_placed += n.run_id == p.run_id;
    }
  }
  EXPECT_GT(slice_preemptions, 50);
  EXPECT_GT(slice_reclaims, 8);
  EXPECT_GT(slice_placements, 300);
  std::cout << "[ stats    ] gangs of slices: " << slice_placements << " placed (" << nominees_placed
            << " nominees), " << slice_preemptions << " preempting, " << slice_reclaims << " reclaiming\n";
}

}  // namespace
}  // namespace berth::scheduling
