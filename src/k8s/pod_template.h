#pragma once
// A Pod made from a user's PodTemplateSpec (issue 30 item 1): the template's JSON is kept as
// written (every field a user writes reaches the Pod, unknown ones included: the Run CRD preserves
// them), read through a typed view and changed through typed setters. What berth puts into the
// Pod (names, labels, budget, environment) is decided in reconcilers/writers/pod_builder.cc; how that is
// spelled in JSON is here, so that no JSON is handled outside src/k8s and src/api.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "k8s/result.h"

namespace berth::k8s {

// A container of the template as resource accounting reads it.
struct TemplateContainer {
  bool is_object = false;  // the other fields are empty when it is not
  std::string name;
  bool restart_always = false;  // restartPolicy Always (an init container so is a sidecar)
  // resources.requests and resources.limits (when objects): resource -> the quantity as text, a
  // string or a number as written (YAML's `cpu: 2`); "" for a value that is neither, which no
  // quantity parser reads.
  std::map<std::string, std::string> requests, limits;
};

// The template's spec as resource accounting reads it.
struct TemplateSpecView {
  // spec.containers and spec.initContainers in order (entries that are not objects included, as
  // not is_object); empty when not arrays.
  std::vector<TemplateContainer> containers, init_containers;
  // spec.overhead, spec.resources.requests, spec.resources.limits: as TemplateContainer's.
  std::map<std::string, std::string> overhead, pod_requests, pod_limits;
  // spec.resources.limits is absent or an object (a limit can be added to it).
  bool pod_limits_settable = true;
};

class PodDraft {
 public:
  // {"apiVersion":"v1","kind":"Pod","metadata":{the template's labels and annotations},
  // "spec":{the template's spec}}, each copied as written when it is an object. Error: "spec.template
  // is not an object" (also for "" or text that is not JSON).
  static Result<PodDraft> FromTemplate(const std::string& template_json);

  TemplateSpecView ReadSpec() const;

  // metadata.
  void SetName(const std::string& name, const std::string& ns);
  void SetLabel(const std::string& key, const std::string& value);
  void SetAnnotation(const std::string& key, const std::string& value);
  // metadata.ownerReferences: this one owner, controller and blockOwnerDeletion.
  void SetControllerOwner(const std::string& api_version, const std::string& kind, const std::string& name,
                          const std::string& uid);

  // spec.<key> (nodeName, schedulerName, hostname, ...), replacing what the template says.
  void SetSpecString(const char* key, const std::string& value);
  // spec.<key> only when the template does not set it.
  void DefaultSpecString(const char* key, const std::string& value);
  // spec.terminationGracePeriodSeconds = min(the template's, or Kubernetes' default of 30 when it
  // sets none or something that is not a non-negative integer, and `max_seconds`).
  void CapGracePeriod(int64_t max_seconds);
  // Appends {key, operator, value} to spec.tolerations (made a list when it is not one).
  void AddToleration(const std::string& key, const std::string& op, const std::string& value);
  // spec.containers is a list of at least one entry; its first entry is an object.
  bool HasContainers() const;
  bool FirstContainerIsObject() const;
  // resources.<kind>.<resource> of the first container (kind: requests or limits).
  void SetFirstContainerQuantity(const char* kind, const std::string& resource, const std::string& quantity);
  void RemoveFirstContainerQuantity(const char* kind, const std::string& resource);
  // spec.resources.limits.<resource>.
  void SetPodLimit(const std::string& resource, const std::string& quantity);
  // env var `name` (set or replaced) in every container that is an object.
  void SetEnvInEveryContainer(const std::string& name, const std::string& value);
  // Issue 49: required node affinity to `node` (PinnedAffinity), for a Pod kube-scheduler binds.
  void PinToNode(const std::string& node);
  // Issue 49: spec.resourceClaims gets {name, resourceClaimName: claim} and the first container
  // resources.claims {name}.
  void AddClaim(const std::string& name, const std::string& claim);

  // The Pod as JSON for a create request.
  std::string Json() const;

 private:
  PodDraft();
  json::Value& Meta();
  json::Value& Spec();
  json::Value* FirstContainer();

  std::unique_ptr<json::Document> pod_;
};

}  // namespace berth::k8s
