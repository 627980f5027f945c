#include "reconcilers/run_status.h"

#include "k8s/json.h"
#include "k8s/timefmt.h"

namespace berth::reconcilers {

namespace json = k8s::json;

void SetCondition(std::vector<Condition>& conditions, const std::string& type, const std::string& status,
                  const std::string& reason, const std::string& message, int64_t generation, k8s::TimePoint now) {
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = k8s::FormatRfc3339(now);
    c.status = status;
    c.reason = reason;
    c.message = message;
    c.observed_generation = generation;
    return;
  }
  conditions.push_back(Condition{type, status, reason, message, k8s::FormatRfc3339(now), generation});
}

RunStatus Finish(const RunStatus& current, Outcome outcome, const std::string& reason, const std::string& message,
                 int64_t generation, k8s::TimePoint created, k8s::TimePoint now) {
  RunStatus next = current;
  const bool success = outcome == Outcome::kSucceeded;
  next.phase = success ? "Succeeded" : "Failed";
  next.reason = reason;
  next.message = message;
  next.queue_position.reset();
  next.finished_at = k8s::FormatRfc3339(now);
  if (success && next.started_at.empty()) next.started_at = next.finished_at;
  if (next.submitted_at.empty()) next.submitted_at = k8s::FormatRfc3339(created);
  next.observed_generation = generation;
  SetCondition(next.conditions, "Ready", "False", success ? "Finished" : reason, message, generation, now);
  SetCondition(next.conditions, "Finished", "True", reason, message, generation, now);
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

}  // namespace berth::reconcilers
