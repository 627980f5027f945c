#include "k8s/workload_objects.h"

namespace berth::k8s {

using Alloc = json::Document::AllocatorType;

namespace {

// A Pod template's spec read as a Pod's (DecodePod): one Pod's requests as the kubelet counts
// them, and its terminationGracePeriodSeconds (Kubernetes' 30 when absent). Null when not an object.
std::shared_ptr<const Pod> TemplatePod(const json::Value* tspec) {
  if (tspec == nullptr || !tspec->IsObject()) return nullptr;
  json::Document pod(rapidjson::kObjectType);
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", "template", pod.GetAllocator());  // DecodePod reads only named objects
  pod.AddMember("metadata", meta, pod.GetAllocator());
  pod.AddMember("spec", json::Value(*tspec, pod.GetAllocator()), pod.GetAllocator());
  return DecodePod(pod);
}

// Pods a Job spec runs at once: spec.parallelism (default 1), at most spec.completions when set.
int64_t PodsAtOnce(const json::Value& spec) {
  int64_t parallelism = 1;
  if (const json::Value* p = json::Find(spec, {"parallelism"}); p != nullptr && p->IsInt64()) parallelism = p->GetInt64();
  if (const json::Value* c = json::Find(spec, {"completions"}); c != nullptr && c->IsInt64()) {
    parallelism = std::min(parallelism, c->GetInt64());
  }
  return std::max<int64_t>(0, parallelism);
}

// The terminal condition `done` or `failed` (status True) of an object's status.conditions.
void ReadFinished(const json::Value& obj, const char* done, const char* failed, JobView& j) {
  const json::Value* conds = json::Find(obj, {"status", "conditions"});
  if (conds == nullptr || !conds->IsArray()) return;
  for (const auto& c : conds->GetArray()) {
    if (json::GetString(c, "status") != "True") continue;
    const std::string type = json::GetString(c, "type");
    if (type != done && type != failed) continue;
    j.finished = type == done;
    j.finish_reason = json::GetString(c, "reason");
    j.finish_message = json::GetString(c, "message");
  }
}

}  // namespace

std::shared_ptr<const JobView> DecodeJob(const json::Value& obj) {
  if (!obj.IsObject()) return nullptr;
  auto j = std::make_shared<JobView>();
  j->meta = DecodeMeta(obj, "berth.dev/");
  if (j->meta.name.empty()) return nullptr;
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec == nullptr || !spec->IsObject()) return j;
  j->pods_at_once = PodsAtOnce(*spec);
  j->suspended = json::GetBool(*spec, "suspend", false);
  if (const json::Value* c = json::Find(*spec, {"completions"}); c != nullptr && c->IsInt64()) j->completions = c->GetInt64();
  j->indexed = json::GetString(*spec, "completionMode") == "Indexed";
  if (auto p = TemplatePod(json::Find(*spec, {"template", "spec"}))) {
    j->requests = p->requests;
    j->grace_seconds = p->grace_seconds;
  }
  ReadFinished(obj, "Complete", "Failed", *j);
  return j;
}

std::shared_ptr<const JobView> DecodeJobSet(const json::Value& obj) {
  if (!obj.IsObject()) return nullptr;
  auto j = std::make_shared<JobView>();
  j->meta = DecodeMeta(obj, "berth.dev/");
  if (j->meta.name.empty()) return nullptr;
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec == nullptr || !spec->IsObject()) return j;
  j->suspended = json::GetBool(*spec, "suspend", false);
  j->pods_at_once = 0;
  j->grace_seconds = 0;
  if (const json::Value* rjobs = json::Find(*spec, {"replicatedJobs"}); rjobs != nullptr && rjobs->IsArray()) {
    for (const auto& rj : rjobs->GetArray()) {
      int64_t replicas = 1;
      if (const json::Value* r = json::Find(rj, {"replicas"}); r != nullptr && r->IsInt64()) replicas = std::max<int64_t>(0, r->GetInt64());
      const json::Value* jspec = json::Find(rj, {"template", "spec"});
      if (jspec == nullptr || !jspec->IsObject()) continue;
      const int64_t pods = PodsAtOnce(*jspec);
      if (replicas == 0 || pods == 0) continue;
      j->pods_at_once += replicas * pods;
      // Every Pod's block must hold it: each resource the most any replicated Job's Pod asks;
      // and the longest grace period any of them has.
      auto p = TemplatePod(json::Find(*jspec, {"template", "spec"}));
      const PodRequests r = p ? p->requests : PodRequests{};
      j->grace_seconds = std::max(j->grace_seconds, p ? p->grace_seconds : int64_t{30});
      j->requests.cpu_milli = std::max(j->requests.cpu_milli, r.cpu_milli);
      j->requests.memory_bytes = std::max(j->requests.memory_bytes, r.memory_bytes);
      for (const auto& [name, v] : r.extended) j->requests.extended[name] = std::max(j->requests.Get(name), v);
    }
  }
  ReadFinished(obj, "Completed", "Failed", *j);
  return j;
}

namespace {

// Whether the list of scheduling gates at `path` in `obj` (a Pod's spec.schedulingGates by
// default) holds `gate`.
bool HasGate(const json::Value& obj, const std::string& gate,
             std::initializer_list<std::string_view> path = {"spec", "schedulingGates"}) {
  const json::Value* gates = json::Find(obj, path);
  if (gates == nullptr || !gates->IsArray()) return false;
  for (const auto& g : gates->GetArray()) {
    if (json::GetString(g, "name") == gate) return true;
  }
  return false;
}

json::Value Str(const std::string& s, Alloc& a) { return json::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a); }

}  // namespace

json::Value PinnedAffinity(const json::Value& pod, const std::string& node, Alloc& a) {
  json::Value field(rapidjson::kObjectType);
  field.AddMember("key", "metadata.name", a);
  field.AddMember("operator", "In", a);
  json::Value values(rapidjson::kArrayType);
  values.PushBack(Str(node, a), a);
  field.AddMember("values", values, a);
  json::Value terms(rapidjson::kArrayType);
  const json::Value* own = json::Find(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                                            "nodeSelectorTerms"});
  if (own != nullptr && own->IsArray() && !own->Empty()) {
    for (const auto& t : own->GetArray()) {
      if (!t.IsObject()) continue;
      json::Value term(t, a);
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
  return affinity;
}

namespace {

// The Pod's tolerations and the pin's (a merge patch replaces the list).
json::Value PinnedTolerations(const json::Value& pod, const PinSpec& pin, Alloc& a) {
  json::Value tolerations(rapidjson::kArrayType);
  bool has = false;
  if (const json::Value* t = json::Find(pod, {"spec", "tolerations"}); t != nullptr && t->IsArray()) {
    for (const auto& x : t->GetArray()) {
      if (json::GetString(x, "key") == pin.toleration_key && json::GetString(x, "value") == pin.toleration_value) has = true;
      tolerations.PushBack(json::Value(x, a), a);
    }
  }
  if (!has && !pin.toleration_key.empty()) {
    json::Value tol(rapidjson::kObjectType);
    tol.AddMember("key", Str(pin.toleration_key, a), a);
    tol.AddMember("operator", "Equal", a);
    tol.AddMember("value", Str(pin.toleration_value, a), a);
    tolerations.PushBack(tol, a);
  }
  return tolerations;
}

}  // namespace

WorkloadPodView DecodeWorkloadPod(const json::Value& pod, const std::string& gate) {
  WorkloadPodView v;
  v.name = json::GetString(json::Find(pod, {"metadata", "name"}));
  if (const json::Value* labels = json::Find(pod, {"metadata", "labels"}); labels != nullptr && labels->IsObject()) {
    v.ticket = json::GetString(*labels, "berth.dev/ticket");
    v.rank = json::GetString(*labels, "berth.dev/rank");
  }
  const std::string phase = json::GetString(json::Find(pod, {"status", "phase"}));
  v.done = phase == "Succeeded" || phase == "Failed";
  v.deleting = json::Find(pod, {"metadata", "deletionTimestamp"}) != nullptr;
  v.gated = HasGate(pod, gate);
  return v;
}

std::string LabelPatch(const std::string& key, const std::string& value) {
  return R"({"metadata":{"labels":{)" + json::Quote(key) + ":" + json::Quote(value) + "}}}";
}

std::string WithUidPrecondition(const std::string& patch, const std::string& uid) {
  auto doc = json::Parse(patch);
  if (!doc.ok() || !doc->IsObject()) return patch;
  Alloc& a = doc->GetAllocator();
  if (!doc->HasMember("metadata") || !(*doc)["metadata"].IsObject()) {
    doc->RemoveMember("metadata");
    doc->AddMember("metadata", json::Value(rapidjson::kObjectType), a);
  }
  (*doc)["metadata"].RemoveMember("uid");
  (*doc)["metadata"].AddMember("uid", Str(uid, a), a);
  return json::Serialize(*doc);
}

std::string PinPodPatch(const json::Value& pod, const PinSpec& pin) {
  json::Document d(rapidjson::kObjectType);
  Alloc& a = d.GetAllocator();
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("resourceVersion", Str(json::GetString(json::Find(pod, {"metadata", "resourceVersion"})), a), a);
  json::Value labels(rapidjson::kObjectType);
  for (const auto& [k, v] : pin.labels) labels.AddMember(Str(k, a), Str(v, a), a);
  meta.AddMember("labels", labels, a);
  d.AddMember("metadata", meta, a);
  json::Value spec(rapidjson::kObjectType);
  json::Value gates(rapidjson::kArrayType);
  if (const json::Value* g = json::Find(pod, {"spec", "schedulingGates"}); g != nullptr && g->IsArray()) {
    for (const auto& x : g->GetArray()) {
      if (json::GetString(x, "name") != pin.gate) gates.PushBack(json::Value(x, a), a);
    }
  }
  spec.AddMember("schedulingGates", gates, a);
  spec.AddMember("affinity", PinnedAffinity(pod, pin.node, a), a);
  spec.AddMember("tolerations", PinnedTolerations(pod, pin, a), a);
  d.AddMember("spec", spec, a);
  return json::Serialize(d);
}

std::string PinSource(const json::Value& pod, const std::string& gate) {
  if (!pod.IsObject() || !HasGate(pod, gate)) return "";
  const json::Value* owners = json::Find(pod, {"metadata", "ownerReferences"});
  bool controlled = false;
  if (owners != nullptr && owners->IsArray()) {
    for (const auto& o : owners->GetArray()) controlled = controlled || json::GetBool(o, "controller");
  }
  if (!controlled) return "";
  json::Document d(rapidjson::kObjectType);
  Alloc& a = d.GetAllocator();
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("resourceVersion", Str(json::GetString(json::Find(pod, {"metadata", "resourceVersion"})), a), a);
  d.AddMember("metadata", meta, a);
  json::Value spec(rapidjson::kObjectType);
  for (const char* field : {"schedulingGates", "affinity", "tolerations"}) {
    if (const json::Value* v = json::Find(pod, {"spec", field}); v != nullptr) spec.AddMember(rapidjson::StringRef(field), json::Value(*v, a), a);
  }
  d.AddMember("spec", spec, a);
  return json::Serialize(d);
}

std::string PinPodPatch(const std::string& source, const PinSpec& pin) {
  auto doc = json::Parse(source);
  if (!doc.ok() || !doc->IsObject()) return "";
  return PinPodPatch(*doc, pin);
}

Result<std::string> HoldJobPatch(const json::Value& job, const std::string& gate) {
  const json::Value* pod_spec = job.IsObject() ? json::Find(job, {"spec", "template", "spec"}) : nullptr;
  if (pod_spec == nullptr || !pod_spec->IsObject()) {
    return Status::Error("berth cannot hold a Job without spec.template.spec: there is no Pod template to gate");
  }
  std::string patch = R"([{"op":"add","path":"/spec/suspend","value":true})";
  const std::string gate_object = R"({"name":)" + json::Quote(gate) + "}";
  const json::Value* gates = json::Find(*pod_spec, {"schedulingGates"});
  if (gates == nullptr || !gates->IsArray()) {
    // Absent (or not a list, which "add" replaces): the list of the one gate.
    patch += R"(,{"op":"add","path":"/spec/template/spec/schedulingGates","value":[)" + gate_object + "]}";
  } else if (!HasGate(job, gate, {"spec", "template", "spec", "schedulingGates"})) {
    patch += R"(,{"op":"add","path":"/spec/template/spec/schedulingGates/-","value":)" + gate_object + "}";
  }
  return patch + "]";
}

Result<std::string> HoldJobSetPatch(const json::Value& jobset, const std::string& gate) {
  const json::Value* spec = jobset.IsObject() ? json::Find(jobset, {"spec"}) : nullptr;
  if (spec == nullptr || !spec->IsObject()) {
    return Status::Error("berth cannot hold a JobSet without a spec object");
  }
  std::string patch = R"([{"op":"add","path":"/spec/suspend","value":true})";
  const json::Value* jobs = json::Find(*spec, {"replicatedJobs"});
  if (jobs == nullptr || jobs->IsNull()) return patch + "]";  // no Pod template: suspend only (as the policy)
  if (!jobs->IsArray()) {
    return Status::Error("berth cannot hold a JobSet whose spec.replicatedJobs is not a list");
  }
  const std::string gate_object = R"({"name":)" + json::Quote(gate) + "}";
  for (rapidjson::SizeType i = 0; i < jobs->Size(); ++i) {
    const json::Value& rj = (*jobs)[i];
    const json::Value* pod_spec = rj.IsObject() ? json::Find(rj, {"template", "spec", "template", "spec"}) : nullptr;
    if (pod_spec == nullptr || !pod_spec->IsObject()) {
      return Status::Error("berth cannot hold a JobSet whose spec.replicatedJobs[" + std::to_string(i) +
                           "] has no template.spec.template.spec: there is no Pod template to gate");
    }
    const std::string path = "/spec/replicatedJobs/" + std::to_string(i) + "/template/spec/template/spec/schedulingGates";
    const json::Value* gates = json::Find(*pod_spec, {"schedulingGates"});
    if (gates == nullptr || !gates->IsArray()) {
      patch += R"(,{"op":"add","path":")" + path + R"(","value":[)" + gate_object + "]}";
    } else if (!HasGate(*pod_spec, gate, {"schedulingGates"})) {
      patch += R"(,{"op":"add","path":")" + path + R"(/-","value":)" + gate_object + "}";
    }
  }
  return patch + "]";
}

bool PodHeldAtCreation(const json::Value& pod) {
  if (!pod.IsObject()) return false;
  const json::Value* labels = json::Find(pod, {"metadata", "labels"});
  const bool has_labels = labels != nullptr && labels->IsObject();
  if (has_labels && labels->HasMember("berth.dev/run")) return false;  // berth's own Pod
  if (const json::Value* owners = json::Find(pod, {"metadata", "ownerReferences"}); owners != nullptr && owners->IsArray()) {
    for (const auto& o : owners->GetArray()) {
      if (!o.IsObject()) continue;
      const json::Value* controller = json::Find(o, {"controller"});
      if (controller != nullptr && controller->IsBool() && controller->GetBool() && json::GetString(o, "kind") == "Job" &&
          json::GetString(o, "apiVersion") == "batch/v1") {
        return false;  // a Job's Pod: the Job is held, its template carries the gate
      }
    }
  }
  if (!has_labels) return false;
  return json::GetString(*labels, "berth.dev/queue") == "true" || labels->HasMember("berth.dev/pod-group");
}

Result<std::string> HoldPodPatch(const json::Value& pod, const std::string& gate) {
  if (!PodHeldAtCreation(pod)) return std::string();
  const json::Value* spec = json::Find(pod, {"spec"});
  if (spec == nullptr || !spec->IsObject()) {
    return Status::Error("berth cannot hold a Pod without a spec object");
  }
  const std::string gate_object = R"({"name":)" + json::Quote(gate) + "}";
  const json::Value* gates = json::Find(*spec, {"schedulingGates"});
  if (gates == nullptr || !gates->IsArray()) {
    return R"([{"op":"add","path":"/spec/schedulingGates","value":[)" + gate_object + "]}]";
  }
  if (HasGate(pod, gate)) return std::string();
  return R"([{"op":"add","path":"/spec/schedulingGates/-","value":)" + gate_object + "}]";
}

}  // namespace berth::k8s
