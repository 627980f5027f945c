#include "workloads/workload.h"

#include <cstdio>

#include "base/priority.h"
#include "k8s/duration.h"

namespace berth::workloads {

namespace json = k8s::json;
using Alloc = json::Document::AllocatorType;

bool IsQueued(const k8s::ObjectMeta& meta, bool namespace_queues_all) {
  return namespace_queues_all || meta.Label(kQueueLabel) == "true";
}

std::string TicketName(std::string_view prefix, std::string_view name) {
  std::string full = std::string(prefix) + "-" + std::string(name);
  if (full.size() <= 63) return full;
  // FNV-1a of the full name: the same in every build (a ticket is found again after a restart).
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : full) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::string cut = full.substr(0, 63 - 17);
  while (!cut.empty() && (cut.back() == '-' || cut.back() == '.')) cut.pop_back();
  return cut + "-" + hex;
}

TicketSpec TicketSpecOf(const WorkloadKind& kind, const Workload& w, const std::string& gpu_resource) {
  TicketSpec out;
  api::v1alpha1::RunSpec& s = out.spec;
  auto note = [&](std::string why) {
    if (out.problem.empty()) out.problem = std::move(why);
  };
  s.workload_ref = api::v1alpha1::WorkloadRef{std::string(kind.ApiVersion()), std::string(kind.Kind()), w.meta.name, w.meta.uid};
  s.nodes = std::max<int64_t>(1, w.pods);
  s.cpu_milli = w.requests.cpu_milli;
  s.memory_bytes = w.requests.memory_bytes;
  s.gpus = w.requests.Get(gpu_resource);
  // A workload always waits for capacity (docs/api.md).
  s.retry = api::v1alpha1::RetrySpec{.on_no_capacity = true, .on_interruption = false, .on_error = false, .duration = std::nullopt};
  if (auto it = w.meta.labels.find(kPriorityLabel); it != w.meta.labels.end()) {
    const std::string& v = it->second;
    int64_t p = -1;
    if (!v.empty() && v.size() <= 3 && v.find_first_not_of("0123456789") == std::string::npos) p = std::stoll(v);
    if (p < base::kMinPriority || p > base::kMaxPriority) {
      note("label " + std::string(kPriorityLabel) + " must be a whole number from 0 to 100, not \"" + v + "\"");
    } else {
      s.priority = p;
    }
  }
  if (std::string fleet = w.meta.Label(kFleetLabel); !fleet.empty()) s.fleets = {fleet};
  if (auto it = w.meta.labels.find(kWholeInstancesLabel); it != w.meta.labels.end()) {
    if (it->second == "true" || it->second == "false") {
      s.whole_instances = it->second == "true";
    } else {
      note("label " + std::string(kWholeInstancesLabel) + " must be \"true\" or \"false\", not \"" + it->second + "\"");
    }
  }
  if (!s.whole_instances) s.whole_instances = false;
  if (auto it = w.meta.annotations.find(kMaxDurationAnnotation); it != w.meta.annotations.end()) {
    auto d = k8s::ParseDuration(it->second);
    if (!d.ok()) {
      note("annotation " + std::string(kMaxDurationAnnotation) + ": " + d.status().message());
    } else {
      s.max_duration = *d;
    }
  }
  return out;
}

bool HasAdmissionGate(const json::Value& pod) {
  const json::Value* gates = json::Find(pod, {"spec", "schedulingGates"});
  if (gates == nullptr || !gates->IsArray()) return false;
  for (const auto& g : gates->GetArray()) {
    if (json::GetString(g, "name") == kAdmissionGate) return true;
  }
  return false;
}

std::string PinPodPatch(const json::Value& pod, const std::string& ticket, int rank, const std::string& node,
                        const std::string& fleet) {
  json::Document d(rapidjson::kObjectType);
  Alloc& a = d.GetAllocator();
  auto str = [&](const std::string& s) { return json::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a); };
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("resourceVersion", str(json::GetString(json::Find(pod, {"metadata", "resourceVersion"}))), a);
  json::Value labels(rapidjson::kObjectType);
  labels.AddMember(json::Value(kTicketLabel, a), str(ticket), a);
  labels.AddMember(json::Value(kRankLabel, a), str(std::to_string(rank)), a);
  meta.AddMember("labels", labels, a);
  d.AddMember("metadata", meta, a);

  json::Value spec(rapidjson::kObjectType);
  // The gates but berth's (a merge patch replaces the list).
  json::Value gates(rapidjson::kArrayType);
  if (const json::Value* g = json::Find(pod, {"spec", "schedulingGates"}); g != nullptr && g->IsArray()) {
    for (const auto& x : g->GetArray()) {
      if (json::GetString(x, "name") != kAdmissionGate) gates.PushBack(json::Value(x, a), a);
    }
  }
  spec.AddMember("schedulingGates", gates, a);
  // The node: matchFields metadata.name In [node], added to each of the Pod's own required terms
  // (terms are ORed: added to every one it narrows them all, as a gated Pod's affinity may change).
  json::Value field(rapidjson::kObjectType);
  field.AddMember("key", "metadata.name", a);
  field.AddMember("operator", "In", a);
  json::Value values(rapidjson::kArrayType);
  values.PushBack(str(node), a);
  field.AddMember("values", values, a);
  json::Value terms(rapidjson::kArrayType);
  const json::Value* own = json::Find(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                                            "nodeSelectorTerms"});
  if (own != nullptr && own->IsArray() && !own->Empty()) {
    for (const auto& t : own->GetArray()) {
      json::Value term(t, a);
      if (!term.IsObject()) continue;
      if (!term.HasMember("matchFields") || !term["matchFields"].IsArray()) {
        term.RemoveMember("matchFields");
        term.AddMember("matchFields", json::Value(rapidjson::kArrayType), a);
      }
      term["matchFields"].PushBack(json::Value(field, a), a);
      terms.PushBack(term, a);
    }
  } else {
    json::Value term(rapidjson::kObjectType);
    json::Value fields(rapidjson::kArrayType);
    fields.PushBack(field, a);
    term.AddMember("matchFields", fields, a);
    terms.PushBack(term, a);
  }
  json::Value required(rapidjson::kObjectType);
  required.AddMember("nodeSelectorTerms", terms, a);
  json::Value node_affinity(rapidjson::kObjectType);
  node_affinity.AddMember("requiredDuringSchedulingIgnoredDuringExecution", required, a);
  json::Value affinity(rapidjson::kObjectType);
  affinity.AddMember("nodeAffinity", node_affinity, a);
  spec.AddMember("affinity", affinity, a);
  // The fleet's toleration, after the Pod's own (a merge patch replaces the list).
  json::Value tolerations(rapidjson::kArrayType);
  bool has = false;
  if (const json::Value* t = json::Find(pod, {"spec", "tolerations"}); t != nullptr && t->IsArray()) {
    for (const auto& x : t->GetArray()) {
      if (json::GetString(x, "key") == "berth.dev/fleet" && json::GetString(x, "value") == fleet) has = true;
      tolerations.PushBack(json::Value(x, a), a);
    }
  }
  if (!has && !fleet.empty()) {
    json::Value tol(rapidjson::kObjectType);
    tol.AddMember("key", "berth.dev/fleet", a);
    tol.AddMember("operator", "Equal", a);
    tol.AddMember("value", str(fleet), a);
    tolerations.PushBack(tol, a);
  }
  spec.AddMember("tolerations", tolerations, a);
  d.AddMember("spec", spec, a);
  return json::Serialize(d);
}

}  // namespace berth::workloads
