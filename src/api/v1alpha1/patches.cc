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

namespace {

// A merge patch {"metadata":{"resourceVersion":rv},part:{key:value}}, the value as `value(w)` writes it.
template <typename F>
std::string OneMemberPatch(std::string_view resource_version, std::string_view part, std::string_view key, F value) {
  return io::MergePatch(resource_version, part, [&](Writer& w) {
    w.raw().StartObject();
    w.Key(key);
    value(w);
    w.raw().EndObject();
  });
}

}  // namespace

std::string QueuePositionPatch(std::optional<int64_t> position, std::string_view resource_version) {
  return OneMemberPatch(resource_version, "status", "queuePosition", [&](Writer& w) { w.IntOrNull(position); });
}

std::string ReasonPatch(const ReasonCode& reason, const std::string& message, const Condition& condition) {
  Writer w;
  w.raw().StartObject();
  w.Key("status");
  w.raw().StartObject();
  w.StringMember("reason", reason.api());
  w.StringMember("message", message);
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
  w.StringMember("resourceVersion", resource_version);
  w.Key("finalizers");
  w.StringList(list);
  w.raw().EndObject();
  w.raw().EndObject();
  return w.Take();
}

std::string FinalizerPatch(const k8s::ObjectMeta& meta, bool with_ours, bool& json_patch) {
  json_patch = meta.finalizers_left_out > 0;
  if (!json_patch) return FinalizersPatch(meta.resource_version, meta.finalizers, with_ours);
  // Others' finalizers were not kept: change only berth's, at its place, if the Run is still the
  // version seen.
  Writer w;
  auto& raw = w.raw();
  raw.StartArray();
  raw.StartObject();
  w.StringMember("op", "test");
  w.StringMember("path", "/metadata/resourceVersion");
  w.StringMember("value", meta.resource_version);
  raw.EndObject();
  if (with_ours) {
    if (meta.kept_finalizer_index < 0) {
      raw.StartObject();
      w.StringMember("op", "add");
      w.StringMember("path", "/metadata/finalizers/-");
      w.StringMember("value", kRunFinalizer);
      raw.EndObject();
    }
  } else if (meta.kept_finalizer_index >= 0) {
    const std::string path = "/metadata/finalizers/" + std::to_string(meta.kept_finalizer_index);
    raw.StartObject();
    w.StringMember("op", "test");
    w.StringMember("path", path);
    w.StringMember("value", kRunFinalizer);
    raw.EndObject();
    raw.StartObject();
    w.StringMember("op", "remove");
    w.StringMember("path", path);
    raw.EndObject();
  }
  raw.EndArray();
  return w.Take();
}

std::string PriorityPatch(int64_t priority, std::string_view resource_version) {
  return OneMemberPatch(resource_version, "spec", "priority", [&](Writer& w) { w.Int(priority); });
}

std::string StopPatch(std::string_view resource_version) {
  return OneMemberPatch(resource_version, "spec", "stop", [](Writer& w) { w.raw().Bool(true); });
}

std::string SuspendPatch(bool suspend, std::string_view resource_version) {
  return OneMemberPatch(resource_version, "spec", "suspend", [&](Writer& w) { w.raw().Bool(suspend); });
}

}  // namespace berth::api::v1alpha1
