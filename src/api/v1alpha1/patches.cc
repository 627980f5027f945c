// Conditions and the small patches (queue position, set-aside reason, finalizers, spec controls).

#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/json_io.h"
#include "k8s/timefmt.h"

namespace berth::api::v1alpha1 {

using io::Writer;

std::string FormatTime(const std::optional<Time>& t) { return t ? k8s::FormatRfc3339(t->point()) : std::string(); }

void SetCondition(std::vector<Condition>& conditions, ConditionKind type, ConditionStatus status, ReasonCode reason,
                  const std::string& message, int64_t generation, TimePoint now) {
  for (auto& c : conditions) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = Time(now);
    c.status = status;
    c.reason = std::move(reason);
    c.message = message;
    c.observed_generation = generation;
    return;
  }
  conditions.push_back(Condition{std::move(type), status, std::move(reason), message, Time(now), generation});
}

const Condition* FindCondition(const std::vector<Condition>& conditions, ConditionType type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

std::string QueuePositionPatch(std::optional<int64_t> position, std::string_view resource_version) {
  Writer w;
  w.raw().StartObject();
  io::WritePrecondition(w, resource_version);
  w.Key("status");
  w.raw().StartObject();
  w.Key("queuePosition");
  w.IntOrNull(position);
  w.raw().EndObject();
  w.raw().EndObject();
  return w.Take();
}

std::string ReasonPatch(const ReasonCode& reason, const std::string& message, const Condition& condition) {
  Writer w;
  w.raw().StartObject();
  w.Key("status");
  w.raw().StartObject();
  w.Key("reason");
  w.String(reason.api());
  w.Key("message");
  w.String(message);
  w.Key("conditions");
  io::WriteConditions(w, {condition});
  w.raw().EndObject();
  w.raw().EndObject();
  return w.Take();
}

std::string FinalizersPatch(std::string_view resource_version, const std::vector<std::string>& finalizers,
                            bool with_ours) {
  std::vector<std::string> list;
  for (const auto& f : finalizers) {
    if (f != kRunFinalizer) list.push_back(f);
  }
  if (with_ours) list.emplace_back(kRunFinalizer);
  Writer w;
  w.raw().StartObject();
  w.Key("metadata");
  w.raw().StartObject();
  w.Key("resourceVersion");
  w.String(resource_version);
  w.Key("finalizers");
  w.StringList(list);
  w.raw().EndObject();
  w.raw().EndObject();
  return w.Take();
}

namespace {

// {"metadata":{"resourceVersion":rv},"spec":{key:value}}, the value written by `value`.
template <typename F>
std::string SpecPatch(std::string_view resource_version, std::string_view key, F value) {
  Writer w;
  w.raw().StartObject();
  io::WritePrecondition(w, resource_version);
  w.Key("spec");
  w.raw().StartObject();
  w.Key(key);
  value(w);
  w.raw().EndObject();
  w.raw().EndObject();
  return w.Take();
}

}  // namespace

std::string PriorityPatch(int64_t priority, std::string_view resource_version) {
  return SpecPatch(resource_version, "priority", [&](Writer& w) { w.Int(priority); });
}

std::string StopPatch(std::string_view resource_version) {
  return SpecPatch(resource_version, "stop", [](Writer& w) { w.raw().Bool(true); });
}

std::string SuspendPatch(bool suspend, std::string_view resource_version) {
  return SpecPatch(resource_version, "suspend", [&](Writer& w) { w.raw().Bool(suspend); });
}

}  // namespace berth::api::v1alpha1
