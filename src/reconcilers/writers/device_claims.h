#pragma once
// Issue 49: the Pods of a run on a DRA fleet (Fleet.spec.devices). Each rank's Pod with GPUs gets a
// ResourceClaim berth makes for it, asking the rank's GPUs as devices of the fleet's DeviceClass,
// and is created pinned to its booked node (required node affinity), not bound: kube-scheduler
// binds it and its DRA plugin allocates the claim there (berth writes no allocation and evaluates
// no CEL). A Pod kube-scheduler cannot place on its node (PodScheduled False, Unschedulable)
// interrupts the run with kube-scheduler's message (lifecycle.h). docs/concepts.md "DRA fleets".

#include <cstdint>
#include <string>

#include "k8s/objects.h"
#include "k8s/pod_template.h"
#include "reconcilers/objects/run_types.h"

namespace berth::reconcilers {

// The claim a DRA run's Pod uses (its name in the Pod: kDeviceClaimRef); the annotation names it.
inline constexpr const char* kDeviceClaimAnnotation = "berth.dev/device-claim";
inline constexpr const char* kDeviceClaimRef = "berth-gpus";
// The scheduler that binds a DRA run's Pods (the cluster's kube-scheduler).
inline constexpr const char* kDefaultScheduler = "default-scheduler";

// "<pod>-gpus".
std::string DeviceClaimName(const std::string& pod);
// The ResourceClaim of `pod` for a create request: `gpus` devices of `device_class`, labelled
// berth.dev/run, controlled by the Run (deleted with it).
std::string BuildDeviceClaim(const Run& run, const std::string& pod, const std::string& device_class, int64_t gpus);
// The Pod `pod` (named so) of a DRA fleet's rank on `node` with `gpus` GPUs: pinned to the node for
// kube-scheduler to bind, with its claim when it has GPUs.
void PinForDeviceClaim(k8s::PodDraft& draft, const std::string& pod, const std::string& node, int64_t gpus);
// Whether berth left binding the Pod to kube-scheduler (a DRA run's Pod): berth never binds it.
bool AwaitsKubeScheduler(const k8s::Pod& pod);

}  // namespace berth::reconcilers
