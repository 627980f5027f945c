#include "k8s/core_types.h"

#include "k8s/config.h"

namespace berth::k8s {
namespace {

const json::Value* Items(const json::Value& list) {
  const json::Value* items = list.IsObject() ? json::Find(list, {"items"}) : nullptr;
  return items != nullptr && items->IsArray() ? items : nullptr;
}

bool Present(const json::Value* v) { return v != nullptr && !v->IsNull(); }

ContainerStatusView ReadContainerStatus(const json::Value& c) {
  ContainerStatusView s;
  s.name = json::GetString(c, "name");
  s.running = Present(json::Find(c, {"state", "running"}));
  if (const json::Value* t = json::Find(c, {"state", "terminated"}); Present(t)) {
    s.terminated = true;
    s.exit_code = json::GetInt(*t, "exitCode");
  }
  if (const json::Value* w = json::Find(c, {"state", "waiting"}); Present(w)) {
    s.waiting = true;
    s.waiting_reason = json::GetString(*w, "reason");
    s.waiting_message = json::GetString(*w, "message");
  }
  return s;
}

void ReadQuantities(const json::Value* list, std::map<std::string, std::string>& out) {
  if (list == nullptr || !list->IsObject()) return;
  for (auto it = list->MemberBegin(); it != list->MemberEnd(); ++it) {
    if (!it->value.IsString()) continue;
    out.emplace(std::string(it->name.GetString(), it->name.GetStringLength()),
                std::string(it->value.GetString(), it->value.GetStringLength()));
  }
}

}  // namespace

std::vector<const json::Value*> ListItems(const json::Value& list) {
  std::vector<const json::Value*> out;
  if (const json::Value* items = Items(list)) {
    for (const auto& v : items->GetArray()) out.push_back(&v);
  }
  return out;
}

std::string ListItemsJson(const json::Value& list) {
  const json::Value* items = list.IsObject() ? json::Find(list, {"items"}) : nullptr;
  return items != nullptr ? json::Serialize(*items) : "[]";
}

std::string JsonWithoutBulkMetadata(json::Value& obj) {
  // HasMember + operator[] rather than comparing FindMember with MemberEnd(): RapidJSON 1.1.0's
  // non-const member iterators make that comparison ambiguous in C++20 (clang refuses it).
  if (obj.IsObject() && obj.HasMember("metadata") && obj["metadata"].IsObject()) {
    json::Value& meta = obj["metadata"];
    meta.RemoveMember("annotations");
    meta.RemoveMember("managedFields");
  }
  return json::Serialize(obj);
}

PodView DecodePodView(const json::Value& obj) {
  PodView p;
  p.meta = DecodeMeta(obj);
  const json::Value* status = json::Find(obj, {"status"});
  if (status != nullptr) {
    p.phase = json::GetString(*status, "phase");
    p.reason = json::GetString(*status, "reason");
    if (const json::Value* cs = json::Find(*status, {"containerStatuses"}); cs != nullptr && cs->IsArray()) {
      for (const auto& c : cs->GetArray()) p.statuses.push_back(ReadContainerStatus(c));
    }
  }
  if (const json::Value* cs = json::Find(obj, {"spec", "containers"}); cs != nullptr && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) p.containers.push_back(json::GetString(c, "name"));
  }
  return p;
}

std::vector<PodView> DecodePodViews(const json::Value& list) {
  std::vector<PodView> out;
  for (const json::Value* p : ListItems(list)) out.push_back(DecodePodView(*p));
  return out;
}

Result<PodView> ParsePodView(std::string_view text) {
  auto doc = json::Parse(text);
  if (!doc.ok()) return doc.status();
  return DecodePodView(*doc);
}

EventView DecodeEventView(const json::Value& obj) {
  EventView e;
  e.name = json::GetString(json::Find(obj, {"metadata", "name"}));
  e.type = json::GetString(obj, "type");
  e.reason = json::GetString(obj, "reason");
  e.message = json::GetString(obj, "message");
  e.count = json::GetInt(obj, "count", 1);
  for (const char* key : {"lastTimestamp", "eventTime", "firstTimestamp"}) {
    e.time = json::GetString(obj, key);
    if (!e.time.empty()) return e;
  }
  e.time = json::GetString(json::Find(obj, {"metadata", "creationTimestamp"}));
  return e;
}

std::vector<EventView> DecodeEventViews(const json::Value& list) {
  std::vector<EventView> out;
  for (const json::Value* e : ListItems(list)) out.push_back(DecodeEventView(*e));
  return out;
}

Lease DecodeLease(const json::Value& obj) {
  Lease l;
  l.name = json::GetString(json::Find(obj, {"metadata", "name"}));
  l.ns = json::GetString(json::Find(obj, {"metadata", "namespace"}));
  l.resource_version = ResourceVersionOf(obj);
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec == nullptr) return l;
  l.holder = json::GetString(*spec, "holderIdentity");
  l.renew_time = json::GetString(*spec, "renewTime");
  l.acquire_time = json::GetString(*spec, "acquireTime");
  l.transitions = json::GetInt(*spec, "leaseTransitions");
  constexpr int64_t kUnreadable = INT64_MIN;
  if (const int64_t d = json::GetInt(*spec, "leaseDurationSeconds", kUnreadable); d != kUnreadable) l.duration_seconds = d;
  return l;
}

std::string EncodeLease(const Lease& l) {
  std::string meta = R"({"name":)" + json::Quote(l.name) + R"(,"namespace":)" + json::Quote(l.ns);
  if (!l.resource_version.empty()) meta += R"(,"resourceVersion":)" + json::Quote(l.resource_version);
  return R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":)" + meta +
         R"(},"spec":{"holderIdentity":)" + json::Quote(l.holder) + R"(,"leaseDurationSeconds":)" +
         std::to_string(l.duration_seconds.value_or(1)) + R"(,"acquireTime":)" + json::Quote(l.acquire_time) +
         R"(,"renewTime":)" + json::Quote(l.renew_time) + R"(,"leaseTransitions":)" + std::to_string(l.transitions) +
         "}}";
}

std::string LeaseReleasePatch(std::string_view resource_version, std::string_view renew_time) {
  return R"({"metadata":{"resourceVersion":)" + json::Quote(resource_version) +
         R"(},"spec":{"holderIdentity":"","leaseDurationSeconds":1,"renewTime":)" + json::Quote(renew_time) + "}}";
}

ResourceQuotaView DecodeResourceQuotaView(const json::Value& obj) {
  ResourceQuotaView q;
  q.meta = DecodeMeta(obj);
  const json::Value* scopes = json::Find(obj, {"spec", "scopes"});
  const json::Value* selector = json::Find(obj, {"spec", "scopeSelector"});
  q.scoped = (scopes != nullptr && scopes->IsArray() && !scopes->Empty()) || (selector != nullptr && selector->IsObject());
  ReadQuantities(json::Find(obj, {"spec", "hard"}), q.spec_hard);
  ReadQuantities(json::Find(obj, {"status", "hard"}), q.status_hard);
  ReadQuantities(json::Find(obj, {"status", "used"}), q.status_used);
  return q;
}

std::string SelfSubjectAccessReviewBody(std::string_view group, std::string_view resource, std::string_view verb,
                                        std::string_view ns) {
  std::string attrs = R"({"group":)" + json::Quote(group) + R"(,"resource":)" + json::Quote(resource) +
                      R"(,"verb":)" + json::Quote(verb);
  if (!ns.empty()) attrs += R"(,"namespace":)" + json::Quote(ns);
  return R"({"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":)" +
         attrs + "}}}";
}

std::map<std::string, std::string> DecodeConfigMapData(const json::Value& config_map) {
  std::map<std::string, std::string> out;
  const json::Value* data = json::Find(config_map, {"data"});
  if (data == nullptr || !data->IsObject()) return out;
  for (const auto& m : data->GetObject()) {
    if (m.value.IsString()) out[std::string(m.name.GetString(), m.name.GetStringLength())] = std::string(m.value.GetString(), m.value.GetStringLength());
  }
  return out;
}

std::vector<std::string> DecodeStringArray(std::string_view text) {
  std::vector<std::string> out;
  auto doc = json::Parse(text);
  if (!doc.ok() || !doc->IsArray()) return out;
  for (const auto& v : doc->GetArray()) {
    if (v.IsString()) out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return out;
}

bool AccessReviewAllowed(const json::Value& answer) {
  const json::Value* allowed = json::Find(answer, {"status", "allowed"});
  return allowed != nullptr && allowed->IsBool() && allowed->GetBool();
}

std::string HeadlessServiceJson(const std::string& name, const std::string& ns, const std::string& label,
                                const std::string& value, const OwnerRef& owner) {
  return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":)" + json::Quote(name) + R"(,"namespace":)" +
         json::Quote(ns) + R"(,"labels":{)" + json::Quote(label) + ":" + json::Quote(value) +
         R"(},"ownerReferences":[{"apiVersion":)" + json::Quote(owner.api_version) + R"(,"kind":)" +
         json::Quote(owner.kind) + R"(,"name":)" + json::Quote(owner.name) + R"(,"uid":)" + json::Quote(owner.uid) +
         R"(,"controller":true,"blockOwnerDeletion":true}]},"spec":{"clusterIP":"None","publishNotReadyAddresses":true,"selector":{)" +
         json::Quote(label) + ":" + json::Quote(value) + "}}}";
}

Result<AdmissionRequest> DecodeAdmissionRequest(const json::Value& review) {
  if (!review.IsObject()) return Status::Error("the body is not an AdmissionReview");
  const json::Value* request = json::Find(review, {"request"});
  if (request == nullptr || !request->IsObject()) return Status::Error("the AdmissionReview has no request");
  AdmissionRequest r;
  r.uid = json::GetString(*request, "uid");
  if (r.uid.empty()) return Status::Error("the AdmissionReview request has no uid");
  r.operation = json::GetString(*request, "operation");
  r.ns = json::GetString(*request, "namespace");
  r.object = json::Find(*request, {"object"});
  r.old_object = json::Find(*request, {"oldObject"});
  r.object_too_deep = r.object != nullptr && json::DeeperThan(*r.object);
  r.username = json::GetString(json::Find(*request, {"userInfo", "username"}));
  return r;
}

Result<std::unique_ptr<AdmissionReview>> ParseAdmissionReview(std::string_view body, int max_depth) {
  auto parsed = json::Parse(body, max_depth);
  if (!parsed.ok()) return Status::Error("the body is not an AdmissionReview");
  auto review = std::make_unique<AdmissionReview>();
  review->doc = std::move(parsed).value();
  auto request = DecodeAdmissionRequest(review->doc);
  if (!request.ok()) return request.status();
  review->request = std::move(request).value();
  return review;
}

std::string AdmissionAllowed(std::string_view uid, std::string_view json_patch) {
  std::string response = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)" +
                         json::Quote(uid) + R"(,"allowed":true)";
  if (!json_patch.empty()) response += R"(,"patchType":"JSONPatch","patch":)" + json::Quote(Base64Encode(json_patch));
  return response + "}}";
}

std::string AdmissionRefused(std::string_view uid, int code, std::string_view reason, std::string_view message) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)" + json::Quote(uid) +
         R"(,"allowed":false,"status":{"code":)" + std::to_string(code) + R"(,"reason":)" + json::Quote(reason) +
         R"(,"message":)" + json::Quote(message) + "}}}";
}

std::string AnnotationAddPatch(const json::Value* object, std::string_view key, std::string_view value) {
  if (object == nullptr || !object->IsObject() || value.empty()) return "";
  const json::Value* annotations = json::Find(*object, {"metadata", "annotations"});
  if (annotations != nullptr && annotations->IsObject()) {
    if (json::Find(*annotations, {key}) != nullptr) return "";
    std::string pointer;  // the key as a JSON Pointer token (RFC 6901)
    for (char c : key) pointer += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    return R"([{"op":"add","path":)" + json::Quote("/metadata/annotations/" + pointer) + R"(,"value":)" + json::Quote(value) +
           "}]";
  }
  return R"([{"op":"add","path":"/metadata/annotations","value":{)" + json::Quote(key) + ":" + json::Quote(value) + "}}]";
}

std::string JoinPatches(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a.substr(0, a.size() - 1) + "," + b.substr(1);
}

}  // namespace berth::k8s
