#include "k8s/pod_template.h"

#include <algorithm>
#include <cstdint>

#include "k8s/workload_objects.h"

namespace berth::k8s {
namespace {

using Alloc = json::Document::AllocatorType;

json::Value Str(const std::string& s, Alloc& a) { return json::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a); }

// These use HasMember + operator[] rather than comparing FindMember with MemberEnd(): RapidJSON
// 1.1.0's mutable member iterators compare ambiguously under C++20 (clang
// -Wambiguous-reversed-operator).

// obj[key] as an object, created (or replaced when not an object).
json::Value& ObjectMember(json::Value& obj, const char* key, Alloc& a) {
  if (!obj.HasMember(key)) obj.AddMember(json::Value(key, a), json::Value(rapidjson::kObjectType), a);
  json::Value& v = obj[key];
  if (!v.IsObject()) v.SetObject();
  return v;
}

json::Value& ArrayMember(json::Value& obj, const char* key, Alloc& a) {
  if (!obj.HasMember(key)) obj.AddMember(json::Value(key, a), json::Value(rapidjson::kArrayType), a);
  json::Value& v = obj[key];
  if (!v.IsArray()) v.SetArray();
  return v;
}

void SetString(json::Value& obj, const char* key, const std::string& v, Alloc& a) {
  if (obj.HasMember(key)) {
    obj[key] = Str(v, a);
  } else {
    obj.AddMember(json::Value(key, a), Str(v, a), a);
  }
}

// Sets (or replaces) env var `name` in a container's env list.
void SetEnv(json::Value& container, const std::string& name, const std::string& value, Alloc& a) {
  json::Value& env = ArrayMember(container, "env", a);
  for (auto& e : env.GetArray()) {
    if (json::GetString(e, "name") == name) {
      e.SetObject();
      e.AddMember("name", Str(name, a), a);
      e.AddMember("value", Str(value, a), a);
      return;
    }
  }
  json::Value e(rapidjson::kObjectType);
  e.AddMember("name", Str(name, a), a);
  e.AddMember("value", Str(value, a), a);
  env.PushBack(e, a);
}

// A quantity as text: a string, or a number as written; "" otherwise.
std::string QuantityText(const json::Value& q) {
  if (q.IsString()) return std::string(q.GetString(), q.GetStringLength());
  if (q.IsNumber()) return json::Serialize(q);
  return "";
}

std::map<std::string, std::string> Quantities(const json::Value* list) {
  std::map<std::string, std::string> out;
  if (list == nullptr || !list->IsObject()) return out;
  for (auto m = list->MemberBegin(); m != list->MemberEnd(); ++m) {
    out.emplace(std::string(m->name.GetString(), m->name.GetStringLength()), QuantityText(m->value));
  }
  return out;
}

std::vector<TemplateContainer> Containers(const json::Value* list) {
  std::vector<TemplateContainer> out;
  if (list == nullptr || !list->IsArray()) return out;
  for (const auto& c : list->GetArray()) {
    TemplateContainer t;
    t.is_object = c.IsObject();
    if (t.is_object) {
      t.name = json::GetString(c, "name");
      t.restart_always = json::GetString(c, "restartPolicy") == "Always";
      t.requests = Quantities(json::Find(c, {"resources", "requests"}));
      t.limits = Quantities(json::Find(c, {"resources", "limits"}));
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

PodDraft::PodDraft() : pod_(std::make_unique<json::Document>(rapidjson::kObjectType)) {}

Result<PodDraft> PodDraft::FromTemplate(const std::string& template_json) {
  json::Document tmpl;
  // berth's own serialization of the template (the codec's): its depth is already capped.
  if (!template_json.empty()) tmpl.Parse<rapidjson::kParseIterativeFlag>(template_json.c_str());
  if (template_json.empty() || tmpl.HasParseError() || !tmpl.IsObject()) {
    return Status::Error("spec.template is not an object");
  }
  PodDraft d;
  json::Document& pod = *d.pod_;
  Alloc& a = pod.GetAllocator();
  pod.AddMember("apiVersion", "v1", a);
  pod.AddMember("kind", "Pod", a);
  json::Value meta(rapidjson::kObjectType);
  if (const json::Value* tm = json::Find(tmpl, {"metadata"}); tm != nullptr && tm->IsObject()) {
    if (const json::Value* l = json::Find(*tm, {"labels"}); l != nullptr && l->IsObject()) {
      meta.AddMember("labels", json::Value(*l, a), a);
    }
    if (const json::Value* an = json::Find(*tm, {"annotations"}); an != nullptr && an->IsObject()) {
      meta.AddMember("annotations", json::Value(*an, a), a);
    }
  }
  pod.AddMember("metadata", meta, a);
  json::Value spec(rapidjson::kObjectType);
  if (const json::Value* ts = json::Find(tmpl, {"spec"}); ts != nullptr && ts->IsObject()) spec.CopyFrom(*ts, a);
  pod.AddMember("spec", spec, a);
  return d;
}

json::Value& PodDraft::Meta() { return (*pod_)["metadata"]; }
json::Value& PodDraft::Spec() { return (*pod_)["spec"]; }

TemplateSpecView PodDraft::ReadSpec() const {
  const json::Value& spec = (*pod_)["spec"];
  TemplateSpecView v;
  v.containers = Containers(json::Find(spec, {"containers"}));
  v.init_containers = Containers(json::Find(spec, {"initContainers"}));
  v.overhead = Quantities(json::Find(spec, {"overhead"}));
  v.pod_requests = Quantities(json::Find(spec, {"resources", "requests"}));
  v.pod_limits = Quantities(json::Find(spec, {"resources", "limits"}));
  const json::Value* limits = json::Find(spec, {"resources", "limits"});
  v.pod_limits_settable = limits == nullptr || limits->IsObject();
  return v;
}

void PodDraft::SetName(const std::string& name, const std::string& ns) {
  Alloc& a = pod_->GetAllocator();
  Meta().AddMember("name", Str(name, a), a);
  Meta().AddMember("namespace", Str(ns, a), a);
}

void PodDraft::SetLabel(const std::string& key, const std::string& value) {
  Alloc& a = pod_->GetAllocator();
  SetString(ObjectMember(Meta(), "labels", a), key.c_str(), value, a);
}

void PodDraft::SetAnnotation(const std::string& key, const std::string& value) {
  Alloc& a = pod_->GetAllocator();
  SetString(ObjectMember(Meta(), "annotations", a), key.c_str(), value, a);
}

void PodDraft::SetControllerOwner(const std::string& api_version, const std::string& kind, const std::string& name,
                                  const std::string& uid) {
  Alloc& a = pod_->GetAllocator();
  json::Value owner(rapidjson::kObjectType);
  owner.AddMember("apiVersion", Str(api_version, a), a);
  owner.AddMember("kind", Str(kind, a), a);
  owner.AddMember("name", Str(name, a), a);
  owner.AddMember("uid", Str(uid, a), a);
  owner.AddMember("controller", true, a);
  owner.AddMember("blockOwnerDeletion", true, a);
  json::Value owners(rapidjson::kArrayType);
  owners.PushBack(owner, a);
  Meta().AddMember("ownerReferences", owners, a);
}

void PodDraft::SetSpecString(const char* key, const std::string& value) { SetString(Spec(), key, value, pod_->GetAllocator()); }

void PodDraft::DefaultSpecString(const char* key, const std::string& value) {
  if (!Spec().HasMember(key)) SetSpecString(key, value);
}

void PodDraft::CapGracePeriod(int64_t max_seconds) {
  constexpr int64_t kKubernetesDefault = 30;
  int64_t grace = kKubernetesDefault;
  json::Value& spec = Spec();
  // HasMember + operator[] rather than comparing FindMember with MemberEnd() (see client.cc).
  if (spec.HasMember("terminationGracePeriodSeconds")) {
    const json::Value& v = spec["terminationGracePeriodSeconds"];
    if (v.IsInt64() && v.GetInt64() >= 0) grace = v.GetInt64();
  }
  grace = std::min(grace, std::max<int64_t>(0, max_seconds));
  spec.RemoveMember("terminationGracePeriodSeconds");
  spec.AddMember("terminationGracePeriodSeconds", json::Value(grace), pod_->GetAllocator());
}

void PodDraft::AddToleration(const std::string& key, const std::string& op, const std::string& value) {
  Alloc& a = pod_->GetAllocator();
  json::Value tol(rapidjson::kObjectType);
  tol.AddMember("key", Str(key, a), a);
  tol.AddMember("operator", Str(op, a), a);
  tol.AddMember("value", Str(value, a), a);
  ArrayMember(Spec(), "tolerations", a).PushBack(tol, a);
}

bool PodDraft::HasContainers() const {
  const json::Value* cs = json::Find((*pod_)["spec"], {"containers"});
  return cs != nullptr && cs->IsArray() && !cs->Empty();
}

json::Value* PodDraft::FirstContainer() {
  if (!HasContainers()) return nullptr;
  json::Value& first = Spec()["containers"][0];
  return first.IsObject() ? &first : nullptr;
}

bool PodDraft::FirstContainerIsObject() const {
  return HasContainers() && (*pod_)["spec"]["containers"][0].IsObject();
}

void PodDraft::SetFirstContainerQuantity(const char* kind, const std::string& resource, const std::string& quantity) {
  json::Value* first = FirstContainer();
  if (first == nullptr) return;
  Alloc& a = pod_->GetAllocator();
  json::Value& list = ObjectMember(ObjectMember(*first, "resources", a), kind, a);
  SetString(list, resource.c_str(), quantity, a);
}

void PodDraft::RemoveFirstContainerQuantity(const char* kind, const std::string& resource) {
  json::Value* first = FirstContainer();
  if (first == nullptr) return;
  Alloc& a = pod_->GetAllocator();
  ObjectMember(ObjectMember(*first, "resources", a), kind, a).RemoveMember(resource.c_str());
}

void PodDraft::PinToNode(const std::string& node) {
  Alloc& a = pod_->GetAllocator();
  Spec().RemoveMember("nodeName");  // kube-scheduler binds it
  json::Value pinned = PinnedAffinity(*pod_, node, a);
  json::Value& affinity = ObjectMember(Spec(), "affinity", a);
  affinity.RemoveMember("nodeAffinity");
  affinity.AddMember("nodeAffinity", pinned["nodeAffinity"], a);
}

void PodDraft::AddClaim(const std::string& name, const std::string& claim) {
  Alloc& a = pod_->GetAllocator();
  json::Value ref(rapidjson::kObjectType);
  ref.AddMember("name", Str(name, a), a);
  ref.AddMember("resourceClaimName", Str(claim, a), a);
  ArrayMember(Spec(), "resourceClaims", a).PushBack(ref, a);
  json::Value* first = FirstContainer();
  if (first == nullptr) return;
  json::Value use(rapidjson::kObjectType);
  use.AddMember("name", Str(name, a), a);
  ArrayMember(ObjectMember(*first, "resources", a), "claims", a).PushBack(use, a);
}

void PodDraft::SetPodLimit(const std::string& resource, const std::string& quantity) {
  Alloc& a = pod_->GetAllocator();
  SetString(ObjectMember(ObjectMember(Spec(), "resources", a), "limits", a), resource.c_str(), quantity, a);
}

void PodDraft::SetEnvInEveryContainer(const std::string& name, const std::string& value) {
  if (!HasContainers()) return;
  Alloc& a = pod_->GetAllocator();
  for (auto& c : Spec()["containers"].GetArray()) {
    if (c.IsObject()) SetEnv(c, name, value, a);
  }
}

std::string PodDraft::Json() const { return json::Serialize(*pod_); }

}  // namespace berth::k8s
