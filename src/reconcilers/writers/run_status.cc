#include "reconcilers/writers/run_status.h"

#include <algorithm>


namespace berth::reconcilers {

RunStatus Finish(const RunStatus& current, Outcome outcome, const ReasonCode& reason, const std::string& message,
                 int64_t generation, k8s::TimePoint created, k8s::TimePoint now) {
  RunStatus next = current;
  const bool success = outcome == Outcome::kSucceeded;
  next.phase = success ? Phase::kSucceeded : Phase::kFailed;
  next.reason = reason;
  next.message = message;
  next.queue_position.reset();
  next.estimated_start_at.reset();  // only a Pending run in the queue shows one
  next.estimated_start_range.reset();
  next.preemption.reset();  // an ended run keeps no nodes
  next.finished_at = Time(now);
  if (success && !next.started_at) next.started_at = next.finished_at;
  if (!next.submitted_at) next.submitted_at = Time(created);
  next.observed_generation = generation;
  SetCondition(next.conditions, ConditionType::kReady, ConditionStatus::kFalse, success ? ReasonCode(Reason::kFinished) : reason,
               message, generation, now);
  SetCondition(next.conditions, ConditionType::kFinished, ConditionStatus::kTrue, reason, message, generation, now);
  return next;
}

namespace {
bool ConditionsEqualIgnoringMessage(const std::vector<Condition>& a, const std::vector<Condition>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].type != b[i].type || a[i].status != b[i].status || a[i].reason != b[i].reason ||
        a[i].observed_generation != b[i].observed_generation) {
      return false;
    }
  }
  return true;
}
}  // namespace

bool DiffersInMoreThanPositionAndMessage(const RunStatus& a, const RunStatus& b) {
  return a.phase != b.phase || a.reason != b.reason || a.effective_priority != b.effective_priority ||
         a.fleet != b.fleet || a.placement != b.placement || a.submitted_at != b.submitted_at ||
         a.scheduled_at != b.scheduled_at || a.started_at != b.started_at || a.finished_at != b.finished_at ||
         a.resubmissions != b.resubmissions || a.observed_generation != b.observed_generation ||
         a.retry_after != b.retry_after || a.retry_backoff_seconds != b.retry_backoff_seconds ||
         a.preemption != b.preemption || a.estimated_start_at != b.estimated_start_at ||
         a.estimated_start_range != b.estimated_start_range ||
         a.template_hash != b.template_hash || a.pod_uids != b.pod_uids || a.held_since != b.held_since ||
         a.released_at != b.released_at || a.accounted_until != b.accounted_until || a.held != b.held ||
         a.queue_position.has_value() != b.queue_position.has_value() ||
         !ConditionsEqualIgnoringMessage(a.conditions, b.conditions);
}

bool SameStatus(const RunStatus& a, const RunStatus& b) {
  return !DiffersInMoreThanPositionAndMessage(a, b) && a.queue_position == b.queue_position &&
         a.message == b.message && a.conditions == b.conditions;
}

namespace {

// One element of Fleet status.instances.
api::FleetInstance Instance(const scheduling::InstanceStatus& d, const InstanceInfo& info) {
  api::FleetInstance out;
  out.node = d.name;
  out.uid = info.uid;
  out.total_blocks = d.total_blocks;
  out.busy_blocks = d.busy_blocks;
  out.runs_started = d.runs_started - info.assumed_uncounted;
  out.counted_runs = info.placed_run_uids;
  std::sort(out.counted_runs.begin(), out.counted_runs.end());
  if (d.expires_at) out.expires_at = Time(*d.expires_at);
  out.state = ToApiState(d.state);
  out.message = info.node_problem.empty() ? d.message : info.node_problem;
  // Resources that other Pods hold on the node (taken off before it is cut into blocks).
  if (!info.held_by_others.empty()) out.held_by_other_pods = scheduling::FormatResources(info.held_by_others);
  out.devices = info.devices;
  out.domain = info.domain;
  return out;
}

// The Fleet's Ready and Conflict conditions.
std::vector<Condition> FleetConditions(const Fleet& fleet, const ClusterView& view, int64_t total, int64_t ready,
                                       k8s::TimePoint now) {
  std::vector<Condition> conds = fleet.status.conditions;
  const int64_t gen = fleet.meta.generation;
  auto invalid = view.invalid_fleets.find(fleet.meta.name);
  if (invalid != view.invalid_fleets.end()) {
    SetCondition(conds, ConditionType::kReady, ConditionStatus::kFalse, Reason::kInvalidSpec, invalid->second, gen, now);
  } else if (ready > 0) {
    SetCondition(conds, ConditionType::kReady, ConditionStatus::kTrue, Reason::kInstancesReady,
                 std::to_string(ready) + " of " + std::to_string(total) + " instances take new runs", gen, now);
  } else {
    SetCondition(conds, ConditionType::kReady, ConditionStatus::kFalse, Reason::kNoReadyInstances,
                 total == 0 ? "no Node matches the nodeSelector" : "no instance takes new runs", gen, now);
  }
  auto conflict = view.conflicts.find(fleet.meta.name);
  if (conflict != view.conflicts.end()) {
    std::string nodes_list;
    for (size_t i = 0; i < conflict->second.size() && i < 10; ++i) nodes_list += (i ? ", " : "") + conflict->second[i];
    if (conflict->second.size() > 10) nodes_list += " and " + std::to_string(conflict->second.size() - 10) + " more";
    SetCondition(conds, ConditionType::kConflict, ConditionStatus::kTrue, Reason::kNodesClaimedByOlderFleet,
                 "nodes also matched by an older fleet belong to it: " + nodes_list, gen, now);
  } else {
    bool had = false;
    for (const auto& c : conds) had |= c.type == ConditionType::kConflict;
    if (had) SetCondition(conds, ConditionType::kConflict, ConditionStatus::kFalse, Reason::kNoConflict, "", gen, now);
  }
  return conds;
}

}  // namespace

FleetStatus BuildFleetStatus(const Fleet& fleet, const ClusterView& view,
                             const std::vector<const scheduling::InstanceStatus*>& instances, k8s::TimePoint now) {
  FleetStatus out;
  for (const scheduling::InstanceStatus* d : instances) {
    auto info = view.instances.find(d->name);
    if (info == view.instances.end()) continue;
    ++out.total_instances;
    if (scheduling::TakesNewRuns(d->state)) ++out.ready_instances;
    out.total_blocks += d->total_blocks;
    out.busy_blocks += d->busy_blocks;
    out.instances.push_back(Instance(*d, info->second));
  }
  out.observed_generation = fleet.meta.generation;
  out.conditions = FleetConditions(fleet, view, out.total_instances, out.ready_instances, now);
  return out;
}

api::InstanceState ToApiState(scheduling::InstanceState state) {
  switch (state) {
    case scheduling::InstanceState::kIdle: return api::InstanceState::kIdle;
    case scheduling::InstanceState::kBusy: return api::InstanceState::kBusy;
    case scheduling::InstanceState::kFull: return api::InstanceState::kFull;
    case scheduling::InstanceState::kRetired: return api::InstanceState::kRetired;
    case scheduling::InstanceState::kExpired: return api::InstanceState::kExpired;
    case scheduling::InstanceState::kNotReady: return api::InstanceState::kNotReady;
    case scheduling::InstanceState::kInvalid: return api::InstanceState::kInvalid;
  }
  return api::InstanceState::kInvalid;
}

}  // namespace berth::reconcilers
