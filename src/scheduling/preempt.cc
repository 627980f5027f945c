#include "scheduling/preempt.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace berth::scheduling::internal {

Preempter::Preempter(const ClusterSnapshot& snapshot, int64_t now_ms, const ClusterState& state, Capacity& capacity,
                     const FleetFilter& filter, const TeamBook& teams, CycleResult& out)
    : snapshot_(snapshot), now_(now_ms), state_(state), capacity_(capacity), filter_(filter), teams_(teams), out_(out) {
  if (snapshot_.placed_runs.empty()) return;
  for (const Fleet& f : state_.fleets) preemption_enabled_ |= f.spec->preemption == PreemptionPolicy::kLowerPriority;
  for (const PlacedRunInfo& p : snapshot_.placed_runs) {
    lowest_victim_priority_ = std::min(lowest_victim_priority_, p.priority);
  }
  if (teams_.active()) {
    for (const Fleet& f : state_.fleets) reclaim_enabled_ |= f.spec->reclaim == ReclaimPolicy::kBorrowed;
  }
}

void Preempter::ApplyNominations(const RunQueue& queue) {
  const auto& nominations = snapshot_.nominations;
  if (nominations.empty()) return;
  std::vector<int32_t> order(nominations.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return nominations[a].run_id < nominations[b].run_id;
  });
  for (int32_t n : order) {
    const Nomination& nomination = nominations[n];
    if (!queue.Contains(nomination.run_id) || nominees_.count(nomination.run_id)) continue;
    const auto h = static_cast<int32_t>(holders_.size());
    holders_.push_back(Holder{nomination.run_id, &nomination, {}});
    nominees_.emplace(nomination.run_id, h);
    for (const std::string& v : nomination.victims) excluded_victims_.insert(v);
    for (const std::string& name : nomination.instances) {
      const int32_t i = state_.FindInstance(name);
      if (i < 0 || state_.instances[i].held_for >= 0) continue;  // unknown, or kept for an earlier id
      Hold(i, h);
      holders_[h].instances.push_back(i);
    }
  }
}

void Preempter::Open(int32_t h) {
  for (int32_t i : holders_[h].instances) {
    if (state_.instances[i].held_for == h) {
      capacity_.Keep(i, -1);
      Refresh(i);
    }
  }
}

void Preempter::Keep(int32_t h) {
  for (int32_t i : holders_[h].instances) {
    if (state_.instances[i].held_for < 0) Hold(i, h);
  }
}

void Preempter::Hold(int32_t i, int32_t holder) {
  capacity_.Keep(i, holder);
  Refresh(i);
}

void Preempter::Refresh(int32_t i) {
  if (!work_.index) return;
  const Instance& in = state_.instances[i];
  work_.index->SetExcluded(in.spec->name, in.held_for >= 0 || in.reserved);
}

bool Preempter::Try(const PendingRun& run, int32_t nominee, int32_t team, const RoomFilter* quota,
                    WaitReason& reason) {
  if (nominee >= 0 && holders_[nominee].nomination->victims_stopping) {
    WaitForVictims(*holders_[nominee].nomination, reason);
    return true;
  }
  // A run within its team's unused nominal share takes it back from borrowers first. A gang of
  // whole slices does both on its whole-slice fleets only, as a multi-node run of its shape
  // (PlanFleets). Other gangs of slices and a whole single instance neither reclaim nor preempt
  // (docs/scheduling.md): they wait for capacity (and may hold the reservation).
  if (IsWholeSingle(run)) return false;
  if (IsSliceGang(run) && std::none_of(filter_.candidates.begin(), filter_.candidates.end(), [this](int32_t f) {
        return state_.fleets[f].cluster && capacity_.SlicesAreWholeIn(f);
      })) {
    return false;
  }
  if (reclaim_enabled_ && TryReclaim(run, team, quota, reason)) return true;
  return preemption_enabled_ && TryPreempt(run, nominee >= 0, quota, reason);
}

void Preempter::WaitForVictims(const Nomination& n, WaitReason& reason) const {
  reason.code = WaitCode::kPreempting;
  reason.fleet = state_.FindFleet(n.fleet);
  reason.victims = n.victims;
  std::sort(reason.victims.begin(), reason.victims.end());
  reason.instances = n.instances;
  std::sort(reason.instances.begin(), reason.instances.end());
  reason.victims_stopping = true;
  reason.reclaim = n.reclaim;
}

void Preempter::PlanFleets(const PendingRun& run, std::vector<int32_t>& out) const {
  out.clear();
  for (int32_t f : filter_.candidates) {
    if (!IsSliceGang(run) || (state_.fleets[f].cluster && capacity_.SlicesAreWholeIn(f))) out.push_back(f);
  }
}

Resources Preempter::UseOf(const PendingRun& run, int32_t pool) const {
  const BlockLayout& layout = state_.pools[pool].layout;
  const Resources one = layout.ResourcesFor(run.nodes <= 1 ? filter_.need[pool] : layout.total_blocks());
  const int64_t n = std::max<int32_t>(run.nodes, 1);
  return Resources{one.cpu_millis * n, one.memory_bytes * n, one.gpus * n};
}

bool Preempter::TryReclaim(const PendingRun& run, int32_t team, const RoomFilter* quota, WaitReason& reason) {
  // The fleets where the run is within its team's unused nominal share, whatever instance of
  // the fleet it would get (a gang of whole slices: of its whole-slice fleets, PlanFleets).
  PreemptionRequest request;
  PlanFleets(run, plan_fleets_);
  for (int32_t f : plan_fleets_) {
    if (state_.fleets[f].spec->reclaim != ReclaimPolicy::kBorrowed) continue;
    bool any = false;
    bool within = true;
    for (int32_t p : state_.fleets[f].pools) {
      if (filter_.need[p] < 0) continue;
      any = true;
      within = within && teams_.WithinNominal(team, state_.fleets[f].spec->name, UseOf(run, p));
    }
    if (any && within) request.fleets.push_back(state_.fleets[f].spec->name);
  }
  if (request.fleets.empty()) return false;
  request.id = run.id;
  request.priority = run.priority;
  request.nodes = std::max<int32_t>(run.nodes, 1);
  request.resources = run.resources;
  request.max_duration = run.max_duration;
  request.topology = run.topology;
  request.reclaimable = [this, team](std::string_view fleet, std::string_view victim) {
    const int32_t t = teams_.TeamOf(victim);
    return t != team && teams_.Borrowing(t, fleet);
  };
  SyncWork();
  std::optional<PreemptionPlan> plan = work_.index->Plan(request);
  return plan && Adopt(run, std::move(*plan), true, quota, reason);
}

void Preempter::SyncWork() {
  if (!work_.index) {
    work_.index = std::make_unique<PreemptionIndex>(snapshot_, snapshot_.placed_runs, TimePoint(Duration(now_)),
                                                    reclaim_enabled_);
    for (int32_t i = 0; i < static_cast<int32_t>(state_.instances.size()); ++i) {
      if (state_.instances[i].held_for >= 0 || state_.instances[i].reserved) Refresh(i);
    }
    for (const std::string& v : excluded_victims_) work_.index->RemoveVictim(v);
  }
  for (size_t k = work_.synced_placements; k < out_.placements.size(); ++k) {
    const Placement& p = out_.placements[k];
    // One run started per instance: ranks of a gang of slices sharing one (neighbours) add up.
    for (size_t r = 0; r < p.ranks.size();) {
      const std::string& instance = p.ranks[r].instance;
      int32_t blocks = 0;
      for (; r < p.ranks.size() && p.ranks[r].instance == instance; ++r) blocks += p.ranks[r].blocks;
      work_.index->AddPlacement(p.run_id, instance, blocks);
    }
  }
  work_.synced_placements = out_.placements.size();
}

bool Preempter::TryPreempt(const PendingRun& run, bool nominee, const RoomFilter* quota, WaitReason& reason) {
  if (run.priority <= lowest_victim_priority_) return false;
  PlanFleets(run, plan_fleets_);  // a gang of whole slices: its whole-slice fleets only
  bool any = false;
  for (int32_t f : plan_fleets_) any |= state_.fleets[f].spec->preemption == PreemptionPolicy::kLowerPriority;
  if (!any) return false;
  // The shape of the request: equal shapes see the same instances and victims (a nominee sees
  // its own kept instances too, so it is not cached). A gang of whole slices asks what a
  // multi-node run of its shape on those fleets asks, and gets the same answer.
  std::string key;
  if (!nominee) {
    key = std::to_string(run.nodes) + "|" + std::to_string(run.resources.cpu_millis) + "|" +
          std::to_string(run.resources.memory_bytes) + "|" + std::to_string(run.resources.gpus) + "|" +
          (run.max_duration ? std::to_string(run.max_duration->count()) : "-") + "|" +
          std::to_string(static_cast<int>(run.topology.mode)) + run.topology.key;
    for (int32_t f : plan_fleets_) key += "|" + std::to_string(f);
    auto it = work_.failed.find(key);
    if (it != work_.failed.end() && it->second.first == capacity_.version() && run.priority <= it->second.second) {
      return false;
    }
  }
  SyncWork();
  PreemptionRequest request;
  request.id = run.id;
  request.priority = run.priority;
  request.nodes = std::max<int32_t>(run.nodes, 1);
  request.resources = run.resources;
  for (int32_t f : plan_fleets_) request.fleets.push_back(state_.fleets[f].spec->name);
  request.max_duration = run.max_duration;
  request.topology = run.topology;
  std::optional<PreemptionPlan> plan = work_.index->Plan(request);
  if (!plan) {
    if (!nominee) {
      auto& entry = work_.failed[key];
      if (entry.first != capacity_.version()) entry = {capacity_.version(), run.priority};
      entry.second = std::max(entry.second, run.priority);
    }
    return false;
  }
  return Adopt(run, std::move(*plan), false, quota, reason);
}

bool Preempter::Adopt(const PendingRun& run, PreemptionPlan plan, bool reclaim, const RoomFilter* quota,
                      WaitReason& reason) {
  const int32_t fleet = state_.FindFleet(plan.fleet);
  std::vector<int32_t> chosen;
  for (const std::string& name : plan.instances) chosen.push_back(state_.FindInstance(name));
  if (fleet < 0 || std::find(chosen.begin(), chosen.end(), -1) != chosen.end()) return false;
  // No eviction for a run its namespace's quota would stop once the victims are gone.
  if (quota != nullptr) {
    QuotaUse use;
    for (int32_t i : chosen) {
      const Instance& in = state_.instances[i];
      AddPod(use, state_.pools[in.pool].layout.ResourcesFor(run.nodes <= 1 ? filter_.need[in.pool] : in.total));
    }
    if (quota->Check(fleet, use).quota) return false;
  }
  const auto h = static_cast<int32_t>(holders_.size());
  holders_.push_back(Holder{run.id, nullptr, chosen});
  for (int32_t i : chosen) Hold(i, h);
  for (const std::string& v : plan.victims) {
    excluded_victims_.insert(v);
    work_.index->RemoveVictim(v);
  }
  reason.code = WaitCode::kPreempting;
  reason.fleet = fleet;
  reason.victims = plan.victims;
  reason.instances = plan.instances;
  reason.victims_stopping = false;
  reason.reclaim = reclaim;
  out_.preemptions.push_back(PreemptionDecision{run.id, std::move(plan), reclaim});
  return true;
}

}  // namespace berth::scheduling::internal
