#pragma once
// A Pod that is a workload of its own, or one of a Pod group (issue 45, docs/api.md "Pod
// groups"): the fields berth reads of it, and the patch that pins it (workload_objects.h's
// PinPodPatch). src/workloads/pod_group.h turns these into a ticket's workload; nothing outside
// src/k8s spells a Pod's JSON.

#include <memory>
#include <string>

#include "k8s/json.h"
#include "k8s/objects.h"

namespace berth::k8s {

struct GroupPod {
  Pod pod;             // labels and annotations under berth.dev/ only, the controller ownerReference
  bool gated = false;  // spec.schedulingGates holds the gate it was decoded with
};
// Null when `obj` is not a Pod with a name. `gate`: the scheduling gate `gated` looks for.
std::shared_ptr<const GroupPod> DecodeGroupPod(const json::Value& obj, const std::string& gate);

}  // namespace berth::k8s
