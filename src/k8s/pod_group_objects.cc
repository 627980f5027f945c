#include "k8s/pod_group_objects.h"

namespace berth::k8s {

std::shared_ptr<const GroupPod> DecodeGroupPod(const json::Value& obj, const std::string& gate) {
  auto p = DecodePodKeeping(obj, MetaKeep{.label_prefix = "berth.dev/", .also_label_prefix = {}, .only_needed = true, .finalizer = {}});
  if (!p) return nullptr;
  auto g = std::make_shared<GroupPod>();
  g->pod = *p;
  if (const json::Value* gates = json::Find(obj, {"spec", "schedulingGates"}); gates != nullptr && gates->IsArray()) {
    for (const auto& x : gates->GetArray()) {
      if (json::GetString(x, "name") == gate) g->gated = true;
    }
  }
  return g;
}

}  // namespace berth::k8s
