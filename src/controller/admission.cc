#include "controller/admission.h"

#include "controller/dashboard_request.h"
#include "k8s/config.h"
#include "k8s/json.h"
#include "reconcilers/run_types.h"

namespace berth::controller {

namespace json = k8s::json;

namespace {

// spec.priority of a Run in a review (the CRD's default, 50, when it is not set).
int64_t PriorityOf(const json::Value* object) {
  const json::Value* p = object != nullptr ? json::Find(*object, {"spec", "priority"}) : nullptr;
  return p != nullptr && p->IsInt64() ? p->GetInt64() : 50;
}

// The JSON of spec.template ("" when there is none).
std::string TemplateJson(const json::Value* object) {
  const json::Value* t = object != nullptr ? json::Find(*object, {"spec", "template"}) : nullptr;
  return t != nullptr ? json::Serialize(*t) : std::string();
}

// A refusal of the review `uid` with code 422 (Invalid) and `message`.
std::string Refuse(const std::string& uid, const std::string& message) {
  return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)" + json::Quote(uid) +
         R"(,"allowed":false,"status":{"code":422,"reason":"Invalid","message":)" + json::Quote(message) + "}}}";
}

// Why a template over the bound is refused ("" when it is not): only when it is new (an update
// that leaves it as it was, e.g. the finalizer's removal, goes through).
std::string TemplateRefusal(const json::Value& request, const json::Value* object, const std::string& operation) {
  if (operation != "CREATE" && operation != "UPDATE") return "";
  const std::string t = TemplateJson(object);
  if (t.size() <= reconcilers::kMaxTemplateBytes) return "";
  if (operation == "UPDATE" && t == TemplateJson(json::Find(request, {"oldObject"}))) return "";
  return reconcilers::TemplateTooLarge(t.size());
}

}  // namespace

k8s::Result<std::string> ReviewRun(const std::string& request_body, const CapLookup& caps) {
  // Parsed with a cap well above json::kMaxDepth (iteratively, so only memory is at stake), so that
  // a Run berth could not read is refused with a reason instead of a 400 that the API server's
  // failurePolicy: Ignore would let through (issue 29). A Run deeper than this cap still gets in
  // that way; the controller then sets it aside (k8s::SetAsideObject).
  constexpr int kMaxReviewDepth = 32 * json::kMaxDepth;
  auto review = json::Parse(request_body, kMaxReviewDepth);
  if (!review.ok() || !review->IsObject()) return k8s::Status::Error("the body is not an AdmissionReview");
  const json::Value* request = json::Find(*review, {"request"});
  if (request == nullptr || !request->IsObject()) return k8s::Status::Error("the AdmissionReview has no request");
  std::string uid = json::GetString(*request, "uid");
  if (uid.empty()) return k8s::Status::Error("the AdmissionReview request has no uid");

  std::string patch;
  const json::Value* object = json::Find(*request, {"object"});
  const std::string operation = json::GetString(*request, "operation");
  if (object != nullptr && json::DeeperThan(*object)) {
    return Refuse(uid, "berth cannot read a Run nested deeper than " + std::to_string(json::kMaxDepth) +
                           " levels (spec.template keeps fields it does not know): nest it less deeply");
  }
  if (std::string why = TemplateRefusal(*request, object, operation); !why.empty()) return Refuse(uid, why);
  // What is left is read with json::Find only (no recursion), whatever oldObject holds.
  if (caps && object != nullptr && object->IsObject() && (operation == "CREATE" || operation == "UPDATE")) {
    std::string ns = json::GetString(*request, "namespace");
    if (ns.empty()) ns = json::GetString(json::Find(*object, {"metadata", "namespace"}));
    // The namespace goes into an API path (the cap's lookup): only a namespace name may.
    if (!ns.empty() && !IsDnsLabel(ns)) {
      return k8s::Status::Error("the AdmissionReview's namespace " + json::Quote(ns) + " is not a namespace name");
    }
    const int64_t priority = PriorityOf(object);
    const bool changed = operation == "CREATE" || priority != PriorityOf(json::Find(*request, {"oldObject"}));
    // The namespace is looked up only for a priority that is set or changed now.
    std::optional<reconcilers::PriorityCap> cap;
    if (changed && priority > 0) cap = caps(ns);
    if (cap && priority > cap->cap) {
      return R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)" + json::Quote(uid) +
             R"(,"allowed":false,"status":{"code":403,"reason":"Forbidden","message":)" +
             json::Quote(reconcilers::PriorityRefusal(ns, priority, *cap)) + "}}}";
    }
  }
  if (operation == "CREATE" && object != nullptr && object->IsObject()) {
    const json::Value* finalizers = json::Find(*object, {"metadata", "finalizers"});
    bool has = false;
    if (finalizers != nullptr && finalizers->IsArray()) {
      for (auto& f : finalizers->GetArray()) has = has || (f.IsString() && std::string(f.GetString()) == reconcilers::kFinalizer);
    }
    if (!has) {
      patch = finalizers != nullptr && finalizers->IsArray()
                  ? R"([{"op":"add","path":"/metadata/finalizers/-","value":")" + std::string(reconcilers::kFinalizer) + R"("}])"
                  : R"([{"op":"add","path":"/metadata/finalizers","value":[")" + std::string(reconcilers::kFinalizer) + R"("]}])";
    }
  }
  std::string response = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":)" +
                         json::Quote(uid) + R"(,"allowed":true)";
  if (!patch.empty()) response += R"(,"patchType":"JSONPatch","patch":)" + json::Quote(k8s::Base64Encode(patch));
  return response + "}}";
}

}  // namespace berth::controller
