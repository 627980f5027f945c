#include "reconcilers/run_status.h"

#include <algorithm>

#include "k8s/json.h"
#include "k8s/timefmt.h"

namespace berth::reconcilers {

namespace json = k8s::json;

void SetCondition(std::vector<Condition>& conditions, std::string_view type, std::string_view status,
                  std::string_view reason, const std::string& message, int64_t generation, k8s::TimePoint now) {
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = k8s::FormatRfc3339(now);
    c.status = status;
    c.reason = reason;
    c.message = message;
    c.observed_generation = generation;
    return;
  }
  conditions.push_back(Condition{std::string(type), std::string(status), std::string(reason), message,
                                 k8s::FormatRfc3339(now), generation});
}

RunStatus Finish(const RunStatus& current, Outcome outcome, std::string_view reason, const std::string& message,
                 int64_t generation, k8s::TimePoint created, k8s::TimePoint now) {
  RunStatus next = current;
  const bool success = outcome == Outcome::kSucceeded;
  next.phase = ToApi(success ? Phase::kSucceeded : Phase::kFailed);
  next.reason = reason;
  next.message = message;
  next.queue_position.reset();
  next.preemption.reset();  // an ended run keeps no nodes
  next.finished_at = k8s::FormatRfc3339(now);
  if (success && next.started_at.empty()) next.started_at = next.finished_at;
  if (next.submitted_at.empty()) next.submitted_at = k8s::FormatRfc3339(created);
  next.observed_generation = generation;
  SetCondition(next.conditions, ToApi(ConditionType::kReady), "False", success ? ToApi(Reason::kFinished) : reason,
               message, generation, now);
  SetCondition(next.conditions, ToApi(ConditionType::kFinished), "True", reason, message, generation, now);
  return next;
}

bool operator==(const Condition& a, const Condition& b) {
  return a.type == b.type && a.status == b.status && a.reason == b.reason && a.message == b.message &&
         a.last_transition_time == b.last_transition_time && a.observed_generation == b.observed_generation;
}

bool operator==(const PlacementEntry& a, const PlacementEntry& b) {
  return a.rank == b.rank && a.node == b.node && a.blocks == b.blocks && a.pod == b.pod;
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
         a.preemption != b.preemption ||
         a.queue_position.has_value() != b.queue_position.has_value() ||
         !ConditionsEqualIgnoringMessage(a.conditions, b.conditions);
}

bool SameStatus(const RunStatus& a, const RunStatus& b) {
  return !DiffersInMoreThanPositionAndMessage(a, b) && a.queue_position == b.queue_position &&
         a.message == b.message && a.conditions == b.conditions;
}

std::string RunStatusPatch(const RunStatus& s, const std::string& resource_version) {
  auto str = [](const std::string& v) { return v.empty() ? std::string("null") : json::Quote(v); };
  std::string out = "{";
  if (!resource_version.empty()) out += R"("metadata":{"resourceVersion":)" + json::Quote(resource_version) + "},";
  out += R"("status":{"phase":)" + str(s.phase);
  out += R"(,"reason":)" + str(s.reason);
  out += R"(,"message":)" + str(s.message);
  out += R"(,"queuePosition":)" + (s.queue_position ? std::to_string(*s.queue_position) : "null");
  out += R"(,"effectivePriority":)" + (s.effective_priority ? std::to_string(*s.effective_priority) : "null");
  out += R"(,"fleet":)" + str(s.fleet);
  if (s.placement.empty()) {
    out += R"(,"placement":null)";
  } else {
    out += R"(,"placement":[)";
    for (size_t i = 0; i < s.placement.size(); ++i) {
      const auto& p = s.placement[i];
      if (i) out += ",";
      out += R"({"rank":)" + std::to_string(p.rank) + R"(,"node":)" + json::Quote(p.node) + R"(,"blocks":)" +
             std::to_string(p.blocks) + R"(,"pod":)" + json::Quote(p.pod) + "}";
    }
    out += "]";
  }
  out += R"(,"submittedAt":)" + str(s.submitted_at);
  out += R"(,"scheduledAt":)" + str(s.scheduled_at);
  out += R"(,"startedAt":)" + str(s.started_at);
  out += R"(,"finishedAt":)" + str(s.finished_at);
  out += R"(,"resubmissions":)" + std::to_string(s.resubmissions);
  out += R"(,"retryAfter":)" + str(s.retry_after);
  out += R"(,"retryBackoffSeconds":)" + (s.retry_backoff_seconds > 0 ? std::to_string(s.retry_backoff_seconds) : "null");
  out += R"(,"observedGeneration":)" + std::to_string(s.observed_generation);
  if (!s.preemption) {
    out += R"(,"preemption":null)";
  } else {
    auto list = [](const std::vector<std::string>& v) {
      std::string l = "[";
      for (size_t i = 0; i < v.size(); ++i) l += (i ? "," : "") + json::Quote(v[i]);
      return l + "]";
    };
    out += R"(,"preemption":{"fleet":)" + json::Quote(s.preemption->fleet) + R"(,"nodes":)" +
           list(s.preemption->nodes) + R"(,"victims":)" + list(s.preemption->victims) + "}";
  }
  out += R"(,"conditions":[)";
  for (size_t i = 0; i < s.conditions.size(); ++i) {
    const auto& c = s.conditions[i];
    if (i) out += ",";
    out += R"({"type":)" + json::Quote(c.type) + R"(,"status":)" + json::Quote(c.status) + R"(,"reason":)" +
           json::Quote(c.reason) + R"(,"message":)" + json::Quote(c.message) + R"(,"lastTransitionTime":)" +
           json::Quote(c.last_transition_time) + R"(,"observedGeneration":)" + std::to_string(c.observed_generation) + "}";
  }
  out += "]}}";
  return out;
}

std::string FinalizersPatch(const std::string& resource_version, const std::vector<std::string>& finalizers,
                            bool with_ours) {
  std::string list;
  for (const auto& f : finalizers) {
    if (f == kFinalizer) continue;
    list += (list.empty() ? "" : ",") + json::Quote(f);
  }
  if (with_ours) list += (list.empty() ? "" : ",") + json::Quote(kFinalizer);
  return R"({"metadata":{"resourceVersion":)" + json::Quote(resource_version) + R"(,"finalizers":[)" + list + "]}}";
}

namespace {

// One element of Fleet status.instances.
std::string InstanceJson(const scheduling::InstanceStatus& d, const InstanceInfo& info) {
  const std::string message = info.node_problem.empty() ? d.message : info.node_problem;
  std::string out = R"({"node":)" + json::Quote(d.name) + R"(,"uid":)" + json::Quote(info.uid) + R"(,"totalBlocks":)" +
                    std::to_string(d.total_blocks) + R"(,"busyBlocks":)" + std::to_string(d.busy_blocks) +
                    R"(,"runsStarted":)" + std::to_string(d.runs_started - info.assumed_uncounted) + R"(,"countedRuns":[)";
  std::vector<std::string> uids = info.placed_run_uids;
  std::sort(uids.begin(), uids.end());
  for (size_t i = 0; i < uids.size(); ++i) out += (i ? "," : "") + json::Quote(uids[i]);
  out += "]";
  if (d.expires_at) out += R"(,"expiresAt":)" + json::Quote(k8s::FormatRfc3339(*d.expires_at));
  out += R"(,"state":)" + json::Quote(std::string(scheduling::InstanceStateName(d.state)));
  if (!message.empty()) out += R"(,"message":)" + json::Quote(message);
  // Resources that other Pods hold on the node (taken off before it is cut into blocks).
  if (!info.held_by_others.empty()) {
    out += R"(,"heldByOtherPods":)" + json::Quote(scheduling::FormatResources(info.held_by_others));
  }
  return out + "}";
}

// The Fleet's Ready and Conflict conditions.
std::vector<Condition> FleetConditions(const Fleet& fleet, const ClusterView& view, int64_t total, int64_t ready,
                                       k8s::TimePoint now) {
  std::vector<Condition> conds = fleet.conditions;
  const int64_t gen = fleet.meta.generation;
  auto invalid = view.invalid_fleets.find(fleet.meta.name);
  if (invalid != view.invalid_fleets.end()) {
    SetCondition(conds, ToApi(ConditionType::kReady), "False", ToApi(Reason::kInvalidSpec), invalid->second, gen, now);
  } else if (ready > 0) {
    SetCondition(conds, ToApi(ConditionType::kReady), "True", ToApi(Reason::kInstancesReady),
                 std::to_string(ready) + " of " + std::to_string(total) + " instances take new runs", gen, now);
  } else {
    SetCondition(conds, ToApi(ConditionType::kReady), "False", ToApi(Reason::kNoReadyInstances),
                 total == 0 ? "no Node matches the nodeSelector" : "no instance takes new runs", gen, now);
  }
  auto conflict = view.conflicts.find(fleet.meta.name);
  if (conflict != view.conflicts.end()) {
    std::string nodes_list;
    for (size_t i = 0; i < conflict->second.size() && i < 10; ++i) nodes_list += (i ? ", " : "") + conflict->second[i];
    if (conflict->second.size() > 10) nodes_list += " and " + std::to_string(conflict->second.size() - 10) + " more";
    SetCondition(conds, ToApi(ConditionType::kConflict), "True", ToApi(Reason::kNodesClaimedByOlderFleet),
                 "nodes also matched by an older fleet belong to it: " + nodes_list, gen, now);
  } else {
    bool had = false;
    for (const auto& c : conds) had |= IsConditionType(c.type, ConditionType::kConflict);
    if (had) SetCondition(conds, ToApi(ConditionType::kConflict), "False", ToApi(Reason::kNoConflict), "", gen, now);
  }
  return conds;
}

std::string ConditionsJson(const std::vector<Condition>& conds) {
  std::string out = "[";
  for (size_t i = 0; i < conds.size(); ++i) {
    const auto& c = conds[i];
    out += (i ? "," : "") + std::string(R"({"type":)") + json::Quote(c.type) + R"(,"status":)" + json::Quote(c.status) +
           R"(,"reason":)" + json::Quote(c.reason) + R"(,"message":)" + json::Quote(c.message) +
           R"(,"lastTransitionTime":)" + json::Quote(c.last_transition_time) + R"(,"observedGeneration":)" +
           std::to_string(c.observed_generation) + "}";
  }
  return out + "]";
}

}  // namespace

std::string FleetStatusJson(const Fleet& fleet, const ClusterView& view,
                            const std::vector<const scheduling::InstanceStatus*>& instances, k8s::TimePoint now) {
  std::string items = "[";
  int64_t total = 0, ready = 0, blocks = 0, busy = 0;
  for (const scheduling::InstanceStatus* d : instances) {
    auto info = view.instances.find(d->name);
    if (info == view.instances.end()) continue;
    ++total;
    if (scheduling::TakesNewRuns(d->state)) ++ready;
    blocks += d->total_blocks;
    busy += d->busy_blocks;
    items += (total > 1 ? "," : "") + InstanceJson(*d, info->second);
  }
  items += "]";
  const std::vector<Condition> conds = FleetConditions(fleet, view, total, ready, now);
  return R"({"instances":)" + items + R"(,"totalInstances":)" + std::to_string(total) + R"(,"readyInstances":)" +
         std::to_string(ready) + R"(,"totalBlocks":)" + std::to_string(blocks) + R"(,"busyBlocks":)" +
         std::to_string(busy) + R"(,"observedGeneration":)" + std::to_string(fleet.meta.generation) +
         R"(,"conditions":)" + ConditionsJson(conds) + "}";
}

}  // namespace berth::reconcilers
