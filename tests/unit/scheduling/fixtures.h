#pragma once
// Helpers shared by the scheduling tests: terse builders and a small discrete-time simulator
// that plays the reconciler's part (start placed runs, finish them, count runs per instance).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduling/cycle_result.h"
#include "scheduling/run_queue.h"
#include "scheduling/scheduler.h"
#include "scheduling/snapshot.h"

namespace berth::scheduling::testing {

using std::chrono::hours;
using std::chrono::minutes;

inline constexpr int64_t kGi = int64_t{1} << 30;
// The topology tests' levels (outermost first) and their request modes.
inline constexpr const char* kSpine = "example.com/spine";
inline constexpr const char* kRack = "example.com/rack";
using Mode = TopologyRequest::Mode;
inline const TimePoint kT0 = TimePoint(Duration(1'700'000'000'000));

inline Resources Cpus(int64_t cpus, int64_t mem_gi = 0, int64_t gpus = 0) {
  return Resources{cpus * 1000, mem_gi * kGi, gpus};
}

inline FleetSpec Fleet(std::string name, BlocksSetting blocks = BlocksSetting(),
                       PlacementPolicy placement = PlacementPolicy::kAny,
                       std::string topology_key = "",
                       std::optional<int64_t> max_runs_per_instance = std::nullopt) {
  FleetSpec f;
  f.name = std::move(name);
  f.blocks = blocks;
  f.placement = placement;
  f.topology_key = std::move(topology_key);
  f.max_runs_per_instance = max_runs_per_instance;
  return f;
}

// A fleet whose runs may be preempted (policy LowerPriority, minRuntime 5m).
inline FleetSpec Preempting(std::string name, int64_t blocks, PlacementPolicy placement = PlacementPolicy::kAny,
                            std::string topology_key = "") {
  FleetSpec f = Fleet(std::move(name), BlocksSetting::Count(blocks), placement, std::move(topology_key));
  f.preemption = PreemptionPolicy::kLowerPriority;
  f.min_runtime = std::chrono::minutes(5);
  return f;
}

inline InstanceSpec Instance(std::string name, std::string fleet, Resources allocatable) {
  InstanceSpec i;
  i.name = std::move(name);
  i.fleet = std::move(fleet);
  i.allocatable = allocatable;
  return i;
}

inline PendingRun Pending(std::string id, int32_t priority = 50, TimePoint submitted = kT0,
                          int32_t nodes = 1, Resources per_node = {}) {
  PendingRun r;
  r.id = std::move(id);
  r.priority = priority;
  r.submitted_at = submitted;
  r.nodes = nodes;
  r.resources = per_node;
  return r;
}

inline RunningRun Running(std::string id, std::vector<InstanceBlocks> placement,
                          std::optional<TimePoint> end = std::nullopt) {
  return RunningRun{std::move(id), std::move(placement), end};
}

inline const Placement* FindPlacement(const CycleResult& r, const std::string& id) {
  for (const Placement& p : r.placements) {
    if (p.run_id == id) return &p;
  }
  return nullptr;
}

inline const WaitingRun* FindWaiting(const CycleResult& r, const std::string& id) {
  for (const WaitingRun& w : r.waiting) {
    if (w.run_id == id) return &w;
  }
  return nullptr;
}

// Instance names of a placement in rank order; empty when the run was not placed.
inline std::vector<std::string> PlacedOn(const CycleResult& r, const std::string& id) {
  std::vector<std::string> out;
  if (const Placement* p = FindPlacement(r, id)) {
    for (const RankPlacement& rank : p->ranks) out.push_back(rank.instance);
  }
  return out;
}

inline std::string Explain(const CycleResult& r, const std::string& id) {
  const WaitingRun* w = FindWaiting(r, id);
  return w == nullptr ? "<not waiting>" : r.Explain(*w);
}

// Plays the reconciler: each Step() runs one cycle at now(), starts what was placed (removes it
// from the queue, holds its blocks until it finishes, counts runsStarted per instance), and
// finishes runs whose actual runtime has passed when time moves on.
class Simulator {
 public:
  Simulator(ClusterSnapshot cluster, Duration aging) : cluster_(std::move(cluster)), queue_(aging) {}

  TimePoint now() const { return now_; }
  RunQueue& queue() { return queue_; }
  ClusterSnapshot& cluster() { return cluster_; }

  void Submit(PendingRun run, Duration runtime) {
    runtime_[run.id] = runtime;
    queue_.Upsert(std::move(run));
  }

  // A run that is already running when the simulation starts.
  void AddRunning(RunningRun run, TimePoint finish) {
    finish_at_[run.id] = finish;
    cluster_.running.push_back(std::move(run));
  }

  CycleResult Step() {
    CycleResult result = Schedule(cluster_, queue_, now_);
    for (const Placement& p : result.placements) {
      const PendingRun* run = queue_.Find(p.run_id);
      EXPECT_NE(run, nullptr);
      RunningRun r;
      r.id = p.run_id;
      if (run->max_duration) r.expected_end = now_ + *run->max_duration;
      for (const RankPlacement& rank : p.ranks) {
        r.placement.push_back(InstanceBlocks{rank.instance, rank.blocks});
        for (InstanceSpec& in : cluster_.instances) {
          if (in.name == rank.instance) ++in.runs_started;
        }
      }
      cluster_.running.push_back(std::move(r));
      finish_at_[p.run_id] = now_ + runtime_[p.run_id];
      started_.push_back(p.run_id);
      started_at_[p.run_id] = now_;
      queue_.Remove(p.run_id);
    }
    return result;
  }

  void AdvanceTo(TimePoint t) {
    now_ = t;
    std::erase_if(cluster_.running,
                  [&](const RunningRun& r) { return finish_at_.at(r.id) <= now_; });
  }

  const std::vector<std::string>& started() const { return started_; }
  std::optional<TimePoint> StartedAt(const std::string& id) const {
    auto it = started_at_.find(id);
    if (it == started_at_.end()) return std::nullopt;
    return it->second;
  }

 private:
  ClusterSnapshot cluster_;
  RunQueue queue_;
  TimePoint now_ = kT0;
  std::map<std::string, Duration> runtime_;
  std::map<std::string, TimePoint> finish_at_;
  std::map<std::string, TimePoint> started_at_;
  std::vector<std::string> started_;
};

}  // namespace berth::scheduling::testing
