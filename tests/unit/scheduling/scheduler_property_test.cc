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
#include "scheduling/reference_scheduler.h"
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
  explicit Generator(uint32_t seed) : rng_(seed) {}

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
    for (int r = 0; r < runs; ++r) {
      PendingRun run;
      run.id = "ns/r" + std::to_string(r);
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
      c.runs.push_back(run);
    }
    return c;
  }

 private:
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
        c.cluster.running.push_back(Running("run/" + std::to_string(id++), {{in.name, blocks}}, end));
      }
    }
    if (Chance(0.2)) c.cluster.running.push_back(Running("run/lost", {{"nowhere", 3}}));
  }

  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  T Pick(std::initializer_list<T> values) {
    return *(values.begin() + Int(0, static_cast<int>(values.size()) - 1));
  }

  std::mt19937 rng_;
};

CycleResult RunCore(const Case& c, const std::vector<PendingRun>& runs) {
  RunQueue queue(c.aging);
  for (const PendingRun& r : runs) queue.Upsert(r);
  return Schedule(c.cluster, queue, c.now);
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
  for (const WaitingRun& w : r.waiting) {
    out << "W " << w.run_id << " " << w.unschedulable();
    if (w.unschedulable() || with_reasons) out << " " << static_cast<int>(w.reason.code);
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
    ASSERT_TRUE(fleets.count(p.fleet));
    const FleetSpec& fleet = *fleets.at(p.fleet);
    ASSERT_TRUE(run.fleets.empty() ||
                std::find(run.fleets.begin(), run.fleets.end(), p.fleet) != run.fleets.end());
    ASSERT_EQ(static_cast<int32_t>(p.ranks.size()), nodes);  // gangs: all or nothing
    std::set<std::string> distinct;
    std::optional<std::string> domain;
    for (size_t k = 0; k < p.ranks.size(); ++k) {
      const RankPlacement& rank = p.ranks[k];
      ASSERT_EQ(rank.rank, static_cast<int32_t>(k));
      ASSERT_TRUE(distinct.insert(rank.instance).second);
      if (k > 0) {
        ASSERT_LT(p.ranks[k - 1].instance, rank.instance);
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
      if (fleet.max_runs_per_instance) {
        ASSERT_LT(in.runs_started + added_runs[rank.instance], *fleet.max_runs_per_instance);
      }
      const auto need = layout.BlocksFor(run.resources);
      ASSERT_TRUE(need.has_value());
      const int64_t before = std::min<int64_t>(busy[rank.instance], layout.total_blocks()) +
                             added_blocks[rank.instance];
      if (nodes == 1) {
        ASSERT_EQ(rank.blocks, *need);
      } else {
        ASSERT_EQ(fleet.placement, PlacementPolicy::kCluster);
        ASSERT_EQ(before, 0) << "gang rank on a busy instance";
        ASSERT_EQ(rank.blocks, layout.total_blocks());
        if (!fleet.topology_key.empty()) {
          ASSERT_TRUE(in.topology_domain.has_value());
          if (domain) {
            ASSERT_EQ(*domain, *in.topology_domain);
          }
          domain = in.topology_domain;
        }
      }
      ASSERT_EQ(rank.resources, layout.ResourcesFor(rank.blocks));
      ASSERT_LE(before + rank.blocks, layout.total_blocks()) << "over-commit of " << rank.instance;
      if (reserved.count(rank.instance) && rank_in_queue.at(p.run_id) > holder) {
        ASSERT_TRUE(run.max_duration.has_value());
        ASSERT_TRUE(r.reservation->earliest_start.has_value());
        ASSERT_LE(c.now + *run.max_duration, *r.reservation->earliest_start);
        if (fleet.max_runs_per_instance) {  // a run slot stays for the reserved run
          ASSERT_LT(in.runs_started + added_runs[rank.instance] + 1, *fleet.max_runs_per_instance);
        }
      }
      added_blocks[rank.instance] += rank.blocks;
      ++added_runs[rank.instance];
    }
  }
  if (r.reservation) {
    const WaitingRun* w = FindWaiting(r, r.reservation->run_id);
    ASSERT_NE(w, nullptr);
    ASSERT_FALSE(w->unschedulable());
    ASSERT_FALSE(r.reservation->instances.empty());
  }
}

TEST(SchedulerProperty, RulesHoldMatchReferenceAndIgnoreInputOrder) {
  int placements = 0, waiting = 0, reservations = 0, gangs = 0, unschedulable = 0;
  for (uint32_t seed = 1; seed <= 5000; ++seed) {
    Generator gen(seed);
    const Case c = gen.Make();
    const CycleResult core = RunCore(c, c.runs);
    SCOPED_TRACE("seed " + std::to_string(seed) + "\n" + Fingerprint(core, true));
    ASSERT_NO_FATAL_FAILURE(CheckRules(c, core));

    const CycleResult reference = ReferenceSchedule(c.cluster, c.runs, c.aging, c.now);
    ASSERT_EQ(Fingerprint(core, false), Fingerprint(reference, false));

    // Same input in another order -> same output, reasons included.
    Case shuffled = c;
    std::mt19937 rng(seed);
    std::shuffle(shuffled.cluster.fleets.begin(), shuffled.cluster.fleets.end(), rng);
    std::shuffle(shuffled.cluster.instances.begin(), shuffled.cluster.instances.end(), rng);
    std::shuffle(shuffled.cluster.running.begin(), shuffled.cluster.running.end(), rng);
    std::vector<PendingRun> runs = c.runs;
    std::shuffle(runs.begin(), runs.end(), rng);
    ASSERT_EQ(Fingerprint(core, true), Fingerprint(RunCore(shuffled, runs), true));

    placements += static_cast<int>(core.placements.size());
    waiting += static_cast<int>(core.waiting.size());
    reservations += core.reservation.has_value();
    for (const Placement& p : core.placements) gangs += p.ranks.size() > 1;
    for (const WaitingRun& w : core.waiting) unschedulable += w.unschedulable();
  }
  // The generator must exercise every path, or the properties above prove little.
  EXPECT_GT(placements, 8000);
  EXPECT_GT(waiting, 8000);
  EXPECT_GT(reservations, 2000);
  EXPECT_GT(gangs, 300);
  EXPECT_GT(unschedulable, 2000);
  std::cout << "[ stats    ] " << placements << " placements (" << gangs << " gangs), " << waiting
            << " waiting (" << unschedulable << " unschedulable), " << reservations
            << " reservations\n";
}

}  // namespace
}  // namespace berth::scheduling
