// Benchmarks of the scheduling core at the scale of issue 3: 10,000 pending runs (1..8 blocks, 10%
// multi-node with 2..16 nodes, priorities 0..100) and 5,000 instances x 8 blocks in 10 fleets.
//
//   cmake --build <build> --target scheduling_bench && <build>/bench/scheduling_bench
//
// BM_CoreVsReference runs the indexed core and the plain reference implementation (re-sort the
// whole queue, scan every instance for every run) on the same input, checks that they decide the
// same, and reports both times and the speed-up as counters.

#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "scheduling/reference/reference_scheduler.h"
#include "scheduling/run_queue.h"
#include "scheduling/scheduler.h"

namespace berth::scheduling {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int kFleets = 10;
constexpr int kInstancesPerFleet = 500;
constexpr int kPending = 10'000;
const TimePoint kNow = TimePoint(Duration(1'700'000'000'000));
const Duration kAging = minutes(15);

struct World {
  ClusterSnapshot cluster;
  std::vector<PendingRun> pending;
};

// A busy cluster: 8-GPU instances split into 8 blocks; about 60% of the blocks held by running
// runs (most with a known end); fleets mix placement any / cluster, some with a topologyKey,
// some instances with a wall time.
World MakeWorld(uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
  World w;
  for (int f = 0; f < kFleets; ++f) {
    FleetSpec fleet;
    fleet.name = "fleet-" + std::to_string(f);
    fleet.blocks = BlocksSetting::Auto();
    fleet.placement = f % 2 == 0 ? PlacementPolicy::kCluster : PlacementPolicy::kAny;
    if (f % 4 == 0) fleet.topology_key = "topology.kubernetes.io/zone";
    if (f == 9) fleet.max_runs_per_instance = 50;
    w.cluster.fleets.push_back(fleet);
    for (int i = 0; i < kInstancesPerFleet; ++i) {
      InstanceSpec in;
      in.name = fleet.name + "-node-" + std::to_string(i);
      in.fleet = fleet.name;
      in.allocatable = Resources{32'000, 256 * kGi, 8};
      in.topology_domain = "zone-" + std::to_string(i % 5);
      if (f == 3 || f == 7) in.expires_at = kNow + minutes(uniform(30, 12 * 60));
      in.runs_started = uniform(0, 40);
      int free = 8;
      if (!chance(0.3)) {
        for (int h = uniform(1, 3); h > 0 && free > 0; --h) {
          const int blocks = uniform(1, free);
          free -= blocks;
          RunningRun run;
          run.id = "running/" + in.name + "-" + std::to_string(h);
          run.placement = {InstanceBlocks{in.name, blocks}};
          if (chance(0.8)) run.expected_end = kNow + minutes(uniform(5, 8 * 60));
          w.cluster.running.push_back(std::move(run));
        }
      }
      w.cluster.instances.push_back(std::move(in));
    }
  }
  for (int r = 0; r < kPending; ++r) {
    PendingRun run;
    run.id = "team-" + std::to_string(r % 37) + "/run-" + std::to_string(r);
    run.priority = uniform(0, 100);
    run.submitted_at = kNow - minutes(uniform(0, 24 * 60));
    if (chance(0.1)) {
      run.nodes = uniform(2, 16);
      run.resources = Resources{16'000, 64 * kGi, 8};
    } else {
      const int blocks = uniform(1, 8);
      run.resources = Resources{blocks * 3'000, blocks * 24 * kGi, blocks};
    }
    if (chance(0.3)) {
      run.fleets.push_back("fleet-" + std::to_string(uniform(0, kFleets - 1)));
      if (chance(0.5)) run.fleets.push_back("fleet-" + std::to_string(uniform(0, kFleets - 1)));
    }
    if (chance(0.5)) run.max_duration = minutes(uniform(30, 12 * 60));
    w.pending.push_back(std::move(run));
  }
  return w;
}

const World& TheWorld() {
  static const World world = MakeWorld(42);
  return world;
}

void FillQueue(RunQueue& queue, const World& w) {
  for (const PendingRun& r : w.pending) queue.Upsert(r);
}

std::string Decisions(const CycleResult& r) {
  std::ostringstream out;
  for (const Placement& p : r.placements) {
    out << p.run_id << "@" << p.fleet;
    for (const RankPlacement& rank : p.ranks) out << "," << rank.instance << "x" << rank.blocks;
    out << ";";
  }
  for (const WaitingRun& w : r.waiting) out << w.run_id << (w.unschedulable() ? "U;" : "W;");
  if (r.reservation) {
    out << "R" << r.reservation->run_id;
    for (const std::string& i : r.reservation->instances) out << "," << i;
  }
  return out.str();
}

// One full cycle: the queue is long-lived, time moves 5 s per cycle (aging stays current).
// Arg 0: the busy cluster (about 60% of blocks held); arg 1: the same cluster with nothing
// running, so that thousands of runs are placed in one cycle.
void BM_FullCycle(benchmark::State& state) {
  const World& w = TheWorld();
  ClusterSnapshot cluster = w.cluster;
  if (state.range(0) == 1) cluster.running.clear();
  RunQueue queue(kAging);
  FillQueue(queue, w);
  TimePoint now = kNow;
  size_t placed = 0, waiting = 0;
  for (auto _ : state) {
    CycleResult r = Schedule(cluster, queue, now);
    placed = r.placements.size();
    waiting = r.waiting.size();
    benchmark::DoNotOptimize(r);
    now += std::chrono::seconds(5);
  }
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["waiting"] = static_cast<double>(waiting);
}
BENCHMARK(BM_FullCycle)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Explaining every waiting run (what a status writer would do at worst).
void BM_ExplainAllWaiting(benchmark::State& state) {
  const World& w = TheWorld();
  RunQueue queue(kAging);
  FillQueue(queue, w);
  const CycleResult r = Schedule(w.cluster, queue, kNow);
  for (auto _ : state) {
    size_t chars = 0;
    for (const WaitingRun& wr : r.waiting) chars += r.Explain(wr).size();
    benchmark::DoNotOptimize(chars);
  }
  state.counters["sentences"] = static_cast<double>(r.waiting.size());
}
BENCHMARK(BM_ExplainAllWaiting)->Unit(benchmark::kMillisecond);

void BM_ReferenceCycle(benchmark::State& state) {
  const World& w = TheWorld();
  for (auto _ : state) {
    CycleResult r = ReferenceSchedule(w.cluster, w.pending, kAging, kNow);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_ReferenceCycle)->Unit(benchmark::kMillisecond)->Iterations(3);

// Both implementations on the same input; same decisions required; speed-up as a counter.
void BM_CoreVsReference(benchmark::State& state) {
  const World& w = TheWorld();
  RunQueue queue(kAging);
  FillQueue(queue, w);
  if (Decisions(Schedule(w.cluster, queue, kNow)) !=
      Decisions(ReferenceSchedule(w.cluster, w.pending, kAging, kNow))) {
    state.SkipWithError("core and reference decided differently");
    return;
  }
  using Clock = std::chrono::steady_clock;
  double core_s = 0, reference_s = 0;
  int64_t rounds = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    CycleResult core = Schedule(w.cluster, queue, kNow);
    auto t1 = Clock::now();
    CycleResult reference = ReferenceSchedule(w.cluster, w.pending, kAging, kNow);
    auto t2 = Clock::now();
    benchmark::DoNotOptimize(core);
    benchmark::DoNotOptimize(reference);
    const double c = std::chrono::duration<double>(t1 - t0).count();
    core_s += c;
    reference_s += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(c);
    ++rounds;
  }
  state.counters["core_ms"] = core_s * 1e3 / static_cast<double>(rounds);
  state.counters["reference_ms"] = reference_s * 1e3 / static_cast<double>(rounds);
  state.counters["speedup_x"] = reference_s / core_s;
}
BENCHMARK(BM_CoreVsReference)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(5);

// One priority change of a queued run (kubectl patch ... priority), queue of 10,000.
void BM_PriorityChange(benchmark::State& state) {
  const World& w = TheWorld();
  RunQueue queue(kAging);
  FillQueue(queue, w);
  queue.AdvanceTo(kNow);
  std::mt19937 rng(7);
  std::vector<std::pair<const std::string*, int32_t>> changes;
  for (int i = 0; i < 4096; ++i) {
    changes.push_back({&w.pending[rng() % w.pending.size()].id, static_cast<int32_t>(rng() % 101)});
  }
  size_t i = 0;
  for (auto _ : state) {
    const auto& [id, priority] = changes[i++ & 4095];
    benchmark::DoNotOptimize(queue.SetPriority(*id, priority));
  }
}
BENCHMARK(BM_PriorityChange);

// Exact queue position of one run (the JSON queue endpoint, status.queuePosition).
void BM_QueuePosition(benchmark::State& state) {
  const World& w = TheWorld();
  RunQueue queue(kAging);
  FillQueue(queue, w);
  queue.AdvanceTo(kNow);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(queue.Position(w.pending[(i++ * 7919) % w.pending.size()].id));
  }
}
BENCHMARK(BM_QueuePosition);

// Aging: the queue's clock moves by range(0) seconds from a fresh state; only runs crossing an
// interval boundary move. "moved" counts them; a full interval (900 s) moves every run below 100.
void BM_AgingAdvance(benchmark::State& state) {
  const World& w = TheWorld();
  const Duration step = std::chrono::seconds(state.range(0));
  int64_t moved = 0;
  std::unique_ptr<RunQueue> queue;
  for (auto _ : state) {
    state.PauseTiming();
    queue = std::make_unique<RunQueue>(kAging);  // the old one is destroyed untimed
    FillQueue(*queue, w);
    queue->AdvanceTo(kNow);
    moved = 0;
    for (const PendingRun& r : w.pending) {
      moved += *queue->EffectivePriority(r.id) < 100 &&
               (kNow + step - r.submitted_at) / kAging != (kNow - r.submitted_at) / kAging;
    }
    state.ResumeTiming();
    queue->AdvanceTo(kNow + step);
  }
  queue.reset();  // after the loop: not timed
  state.counters["moved"] = static_cast<double>(moved);
}
BENCHMARK(BM_AgingAdvance)->Arg(1)->Arg(60)->Arg(900)->Unit(benchmark::kMicrosecond)->Iterations(30);

// One run arriving in the queue and one (placed) run leaving it: the queue-side cost.
void BM_RunArrivesAndLeavesQueue(benchmark::State& state) {
  const World& w = TheWorld();
  RunQueue queue(kAging);
  FillQueue(queue, w);
  queue.AdvanceTo(kNow);
  PendingRun arriving = w.pending[0];
  arriving.id = "late/arrival";
  arriving.submitted_at = kNow;
  for (auto _ : state) {
    queue.Upsert(arriving);
    queue.Remove(arriving.id);
  }
}
BENCHMARK(BM_RunArrivesAndLeavesQueue);

// The end-to-end reaction: a run arrives and another one finishes (its blocks are released),
// then the next cycle decides again.
void BM_RunArrivesOneFinishesThenCycle(benchmark::State& state) {
  const World& w = TheWorld();
  ClusterSnapshot cluster = w.cluster;
  RunQueue queue(kAging);
  FillQueue(queue, w);
  PendingRun arriving = w.pending[1];
  arriving.id = "late/arrival";
  arriving.submitted_at = kNow;
  TimePoint now = kNow;
  size_t k = 0;
  for (auto _ : state) {
    queue.Upsert(arriving);
    const size_t finished = k++ % cluster.running.size();
    std::swap(cluster.running[finished], cluster.running.back());
    RunningRun done = std::move(cluster.running.back());
    cluster.running.pop_back();
    CycleResult r = Schedule(cluster, queue, now);
    benchmark::DoNotOptimize(r);
    state.PauseTiming();
    cluster.running.push_back(std::move(done));
    queue.Remove(arriving.id);
    now += std::chrono::seconds(5);
    state.ResumeTiming();
  }
}
BENCHMARK(BM_RunArrivesOneFinishesThenCycle)->Unit(benchmark::kMillisecond);

// The scale of bench/scale.sh (issue 16): fleet `big` of 10,000 free instances x 8 GPUs, fleet
// `small` of one instance held whole, and 100,000 single-GPU runs waiting for `small`. What one
// cycle costs per waiting run once no fleet they name has room (each waits for the reason of the
// run before it, copied: scheduler.h).
void BM_ScaleWaitingForAFullFleet(benchmark::State& state) {
  ClusterSnapshot cluster;
  for (const std::string name : {"big", "small"}) {
    FleetSpec fleet;
    fleet.name = name;
    fleet.blocks = BlocksSetting::Auto();
    cluster.fleets.push_back(fleet);
  }
  for (int i = 0; i < 10'000; ++i) {
    InstanceSpec in;
    in.name = "big-node-" + std::to_string(i);
    in.fleet = "big";
    in.allocatable = Resources{32'000, 256 * kGi, 8};
    cluster.instances.push_back(std::move(in));
  }
  InstanceSpec small;
  small.name = "small-node-0";
  small.fleet = "small";
  small.allocatable = Resources{32'000, 256 * kGi, 8};
  cluster.instances.push_back(small);
  RunningRun holder;
  holder.id = "bench/holder";
  holder.placement = {InstanceBlocks{small.name, 8}};
  cluster.running.push_back(holder);
  RunQueue queue(kAging);
  const auto pending = static_cast<int>(state.range(0));
  for (int r = 0; r < pending; ++r) {
    PendingRun run;
    run.id = "bench/scale-" + std::to_string(r);
    run.submitted_at = kNow - std::chrono::seconds(pending - r);
    run.resources = Resources{3'000, 24 * kGi, 1};
    run.fleets = {"small"};
    queue.Upsert(std::move(run));
  }
  TimePoint now = kNow;
  size_t waiting = 0;
  CycleResult last;  // Arg 1: each cycle reuses the buffers of the one before (as the engine does)
  for (auto _ : state) {
    CycleResult r = Schedule(cluster, queue, now, true, state.range(1) == 1 ? std::move(last) : CycleResult{});
    waiting = r.waiting.size();
    benchmark::DoNotOptimize(r);
    last = std::move(r);
    now += std::chrono::seconds(1);
  }
  state.counters["waiting"] = static_cast<double>(waiting);
}
BENCHMARK(BM_ScaleWaitingForAFullFleet)->Args({100'000, 0})->Args({100'000, 1})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace berth::scheduling

BENCHMARK_MAIN();
