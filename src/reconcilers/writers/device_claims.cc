#include "reconcilers/writers/device_claims.h"

#include "k8s/dra_objects.h"
#include "reconcilers/writers/pod_builder.h"

namespace berth::reconcilers {

std::string DeviceClaimName(const std::string& pod) { return pod + "-gpus"; }

std::string BuildDeviceClaim(const Run& run, const std::string& pod, const std::string& device_class, int64_t gpus) {
  return k8s::DeviceClaimJson(DeviceClaimName(pod), run.meta.ns, device_class, gpus, kRunLabel, run.meta.name,
                              k8s::OwnerRef{kGroupVersion, "Run", run.meta.name, run.meta.uid, true});
}

void PinForDeviceClaim(k8s::PodDraft& draft, const std::string& pod, const std::string& node, int64_t gpus) {
  draft.PinToNode(node);
  draft.SetSpecString("schedulerName", kDefaultScheduler);
  draft.SetAnnotation(kDeviceClaimAnnotation, gpus > 0 ? DeviceClaimName(pod) : "");
  if (gpus > 0) draft.AddClaim(kDeviceClaimRef, DeviceClaimName(pod));
}

bool AwaitsKubeScheduler(const k8s::Pod& pod) { return pod.meta.annotations.count(kDeviceClaimAnnotation) != 0; }

}  // namespace berth::reconcilers
