#include "controller/admission.h"

#include "api/v1alpha1/codec.h"
#include "controller/dashboard_request.h"
#include "k8s/core_types.h"
#include "k8s/workload_objects.h"
#include "reconcilers/objects/run_types.h"
#include "workloads/workload.h"

namespace berth::controller {

namespace api = api::v1alpha1;

std::string PlacedTemplateChange(const std::string& phase) {
  return "spec.template cannot change while the run is placed (phase " + phase +
         "): its Pods were made from it; stop the run (kubectl berth stop) and submit a new one";
}

namespace {

// A refusal of the review `uid` with code 422 (Invalid) and `message`.
std::string Refuse(const std::string& uid, const std::string& message) {
  return k8s::AdmissionRefused(uid, 422, "Invalid", message);
}

// Why a template over the bound is refused ("" when it is not): only when it is new (an update
// that leaves it as it was, e.g. the finalizer's removal, goes through).
std::string TemplateRefusal(const k8s::AdmissionRequest& request, const api::Run& run) {
  if (request.operation != "CREATE" && request.operation != "UPDATE") return "";
  if (run.template_bytes <= reconcilers::kMaxTemplateBytes) return "";
  if (request.operation == "UPDATE" && request.old_object != nullptr &&
      api::DecodeRunLeniently(*request.old_object).spec.template_json == run.spec.template_json) {
    return "";
  }
  return reconcilers::TemplateTooLarge(run.template_bytes);
}

// Issue 44 (2): why an update of a placed run's template is refused ("" when it is not): its Pods
// were made from it, and berth must be able to read the template of a run that holds machines.
// The chart's admission policy (<fullname>-placed-runs) says the same.
std::string PlacedTemplateRefusal(const k8s::AdmissionRequest& request, const api::Run& run) {
  if (request.operation != "UPDATE" || request.old_object == nullptr) return "";
  const api::Run old = api::DecodeRunLeniently(*request.old_object);
  if (!api::IsPlacedPhase(old.status.phase) || old.spec.template_json == run.spec.template_json) return "";
  return PlacedTemplateChange(std::string(api::PhaseName(old.status.phase)));
}

// The JSON patch adding berth's finalizer to a Run being created, "" when it carries it.
std::string FinalizerPatch(const api::Run& run) {
  if (run.meta.HasFinalizer(reconcilers::kFinalizer)) return "";
  return !run.meta.finalizers.empty()
             ? R"([{"op":"add","path":"/metadata/finalizers/-","value":")" + std::string(reconcilers::kFinalizer) + R"("}])"
             : R"([{"op":"add","path":"/metadata/finalizers","value":[")" + std::string(reconcilers::kFinalizer) + R"("]}])";
}

// The answer allowing a workload's CREATE with `hold` (its hold patch) and, issue 47, its submitter
// recorded (the creating request's user, when the workload does not name one: the chart's
// ValidatingAdmissionPolicy <fullname>-submitted-by decides whether a value it names may stand).
std::string AllowHeld(const k8s::AdmissionRequest& request, const std::string& hold) {
  return k8s::AdmissionAllowed(request.uid, k8s::JoinPatches(hold, k8s::AnnotationAddPatch(request.object, reconcilers::kSubmittedByAnnotation, request.username)));
}

}  // namespace

k8s::Result<std::string> ReviewRun(const std::string& request_body, const CapLookup& caps) {
  // Parsed with a cap well above json::kMaxDepth (iteratively, so only memory is at stake), so that
  // a Run berth could not read is refused with a reason instead of a 400 that the API server's
  // failurePolicy: Ignore would let through (issue 29). A Run deeper than this cap still gets in
  // that way; the controller then sets it aside (k8s::SetAsideObject).
  constexpr int kMaxReviewDepth = 32 * k8s::json::kMaxDepth;
  auto review = k8s::ParseAdmissionReview(request_body, kMaxReviewDepth);
  if (!review.ok()) return review.status();
  const k8s::AdmissionRequest& request = (*review)->request;
  const std::string& uid = request.uid;
  if (request.object_too_deep) {
    return Refuse(uid, "berth cannot read a Run nested deeper than " + std::to_string(k8s::json::kMaxDepth) +
                           " levels (spec.template keeps fields it does not know): nest it less deeply");
  }
  // The object as the codec reads it (nullopt when it is not an object: a DELETE has none). The
  // old object is read only for its priority and, for a template over the bound, its template.
  std::optional<api::Run> run;
  if (request.object != nullptr) {
    api::RunDecodeOptions options;
    options.name_required = false;  // generateName: the API server names the Run after admission
    if (auto decoded = api::DecodeRun(*request.object, options); decoded.ok()) run = std::move(decoded).value();
  }
  if (!run) return k8s::AdmissionAllowed(uid, "");
  if (std::string why = TemplateRefusal(request, *run); !why.empty()) return Refuse(uid, why);
  if (std::string why = PlacedTemplateRefusal(request, *run); !why.empty()) return Refuse(uid, why);
  const bool writes = request.operation == "CREATE" || request.operation == "UPDATE";
  if (caps && writes) {
    const std::string ns = request.ns.empty() ? run->meta.ns : request.ns;
    // The namespace goes into an API path (the cap's lookup): only a namespace name may.
    if (!ns.empty() && !IsDnsLabel(ns)) {
      return k8s::Status::Error("the AdmissionReview's namespace " + k8s::json::Quote(ns) + " is not a namespace name");
    }
    const int64_t priority = api::RunPriorityOf(request.object);
    const bool changed = request.operation == "CREATE" || priority != api::RunPriorityOf(request.old_object);
    // The namespace is looked up only for a priority that is set or changed now.
    std::optional<reconcilers::PriorityCap> cap;
    if (changed && priority > 0) cap = caps(ns);
    if (cap && priority > cap->cap) {
      return k8s::AdmissionRefused(uid, 403, "Forbidden", reconcilers::PriorityRefusal(ns, priority, *cap));
    }
  }
  if (request.operation != "CREATE") return k8s::AdmissionAllowed(uid, "");
  return k8s::AdmissionAllowed(uid, k8s::JoinPatches(FinalizerPatch(*run), k8s::AnnotationAddPatch(request.object, reconcilers::kSubmittedByAnnotation, request.username)));
}

k8s::Result<std::string> ReviewJob(const std::string& request_body) {
  // A Job is a typed object: the API server never sends one nested anywhere near json::kMaxDepth,
  // and only fixed paths of it are read (no recursion).
  auto review = k8s::ParseAdmissionReview(request_body, k8s::json::kMaxDepth);
  if (!review.ok()) return review.status();
  const k8s::AdmissionRequest& request = (*review)->request;
  if (request.operation != "CREATE") return k8s::AdmissionAllowed(request.uid, "");
  if (request.object == nullptr) {
    return k8s::Status::Error("the AdmissionReview of a Job's CREATE carries no object");
  }
  auto patch = k8s::HoldJobPatch(*request.object, workloads::kAdmissionGate);
  if (!patch.ok()) return Refuse(request.uid, patch.status().message());
  return AllowHeld(request, *patch);
}

k8s::Result<std::string> ReviewJobSet(const std::string& request_body) {
  // A JobSet is a typed object; only fixed paths of it are read (no recursion).
  auto review = k8s::ParseAdmissionReview(request_body, k8s::json::kMaxDepth);
  if (!review.ok()) return review.status();
  const k8s::AdmissionRequest& request = (*review)->request;
  if (request.operation != "CREATE") return k8s::AdmissionAllowed(request.uid, "");
  if (request.object == nullptr) {
    return k8s::Status::Error("the AdmissionReview of a JobSet's CREATE carries no object");
  }
  auto patch = k8s::HoldJobSetPatch(*request.object, workloads::kAdmissionGate);
  if (!patch.ok()) return Refuse(request.uid, patch.status().message());
  return AllowHeld(request, *patch);
}

k8s::Result<std::string> ReviewPod(const std::string& request_body) {
  auto review = k8s::ParseAdmissionReview(request_body, k8s::json::kMaxDepth);
  if (!review.ok()) return review.status();
  const k8s::AdmissionRequest& request = (*review)->request;
  if (request.operation != "CREATE") return k8s::AdmissionAllowed(request.uid, "");
  if (request.object == nullptr) {
    return k8s::Status::Error("the AdmissionReview of a Pod's CREATE carries no object");
  }
  auto patch = k8s::HoldPodPatch(*request.object, workloads::kAdmissionGate);
  if (!patch.ok()) return Refuse(request.uid, patch.status().message());
  return AllowHeld(request, *patch);
}

}  // namespace berth::controller
