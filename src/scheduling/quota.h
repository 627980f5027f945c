#pragma once
// Namespace ResourceQuotas as the scheduling cycle honours them (issue 17, "quotas that queue
// instead of failing"). Pure: the reconcilers read the ResourceQuota objects and pass each
// namespace's tightest limits in (ClusterSnapshot::quotas); the cycle checks a placement's Pods
// against them and charges what it places, so one cycle never overcommits a namespace.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "scheduling/snapshot.h"
#include "scheduling/types.h"

namespace berth::scheduling {

// What the Pods of one placement ask for, summed over its Pods.
struct QuotaUse {
  Resources resources;
  int64_t pods = 0;
};

// Adds one Pod asking for `pod` to `use`.
inline void AddPod(QuotaUse& use, const Resources& pod) {
  use.resources = Resources{use.resources.cpu_millis + pod.cpu_millis, use.resources.memory_bytes + pod.memory_bytes,
                            use.resources.gpus + pod.gpus};
  ++use.pods;
}

// The first resource of a use that does not fit: the numbers a waiting run's message shows.
struct QuotaShortfall {
  std::string resource;  // as the ResourceQuota spells it: "requests.nvidia.com/gpu"
  std::string quota;     // the ResourceQuota object's name
  int64_t needed = 0;
  int64_t used = 0;
  int64_t hard = 0;
  friend bool operator==(const QuotaShortfall&, const QuotaShortfall&) = default;
};

// "ml" for "ml/train"; the whole id when it has no '/'.
std::string_view NamespaceOf(std::string_view run_id);

// The quota key of a fleet's GPUs: "requests.nvidia.com/gpu".
std::string GpuQuotaKey(const std::string& gpu_resource);

// Whether `use` fits what `quota` has left (hard - used, per resource); nullopt when it fits or
// `quota` is null (no quota: unlimited). Checked in this order: GPUs (of `gpu_resource`), CPU,
// memory, Pods; the first that does not fit is returned. Zero asks always fit, even a quota
// already over its limit (a ResourceQuota refuses only what asks for the resource).
std::optional<QuotaShortfall> CheckQuota(const NamespaceQuota* quota, const QuotaUse& use,
                                         const std::string& gpu_resource);

// Adds `use` to the quota's usage (a placement of this cycle, or one whose Pods are not yet
// counted by the API server).
void ChargeQuota(NamespaceQuota& quota, const QuotaUse& use, const std::string& gpu_resource);

// Adds `sign` (1 or -1) times each amount of `counted` (by quota key: PendingRun::quota_counted)
// to the quota's usage of that key; keys the quota does not limit are ignored.
void AddCounted(NamespaceQuota& quota, const std::map<std::string, int64_t>& counted, int sign);

// One amount of a quota resource in words: "8 GPUs", "4 CPUs", "500m CPU", "16Gi memory", "2 Pods".
// With `bare`, the number alone ("8", "4", "500m", "16Gi").
std::string FormatQuotaAmount(std::string_view resource, int64_t amount, bool bare = false);

// "needs 8 GPUs; namespace ml uses 24 of 32 GPUs (requests.nvidia.com/gpu, ResourceQuota gpus)"
std::string ExplainQuota(std::string_view ns, const QuotaShortfall& s);

}  // namespace berth::scheduling
