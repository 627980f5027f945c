#pragma once
// Dynamic Resource Allocation objects (resource.k8s.io/v1; issue 49): what berth reads of
// ResourceSlices (the devices a driver publishes per node), DeviceClasses (which devices a class
// selects) and ResourceClaims (the devices allocated to Pods). Nothing outside src/k8s spells
// their JSON. Each decoder bounds what it keeps (the API server's own limits: 128 devices a slice,
// 32 selectors a class, 32 results a claim, 10 KiB an expression) and returns null for an object
// without a name.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "k8s/client.h"
#include "k8s/json.h"
#include "k8s/objects.h"

namespace berth::k8s {

namespace resources {
inline const Resource kResourceSlices{"resource.k8s.io", "v1", "resourceslices", false};
inline const Resource kDeviceClasses{"resource.k8s.io", "v1", "deviceclasses", false};
inline const Resource kResourceClaims{"resource.k8s.io", "v1", "resourceclaims", true};
}  // namespace resources

inline constexpr size_t kMaxSliceDevices = 128;
inline constexpr size_t kMaxClassSelectors = 32;
inline constexpr size_t kMaxClaimResults = 32;
inline constexpr size_t kMaxExpressionBytes = 10 * 1024;

struct SliceDevice {
  std::string name;
  // The first counter set it consumes from (spec.devices[].consumesCounters[0].counterSet), ""
  // when none: the devices that consume one counter set are partitions of one physical device.
  std::string counter_set;
};

struct ResourceSlice {
  std::string name, driver, pool;
  std::string node;  // spec.nodeName; "" for a slice not local to one node
  int64_t generation = 0, slice_count = 0;  // spec.pool.generation, spec.pool.resourceSliceCount
  std::vector<SliceDevice> devices;
  bool devices_left_out = false;  // more devices than kMaxSliceDevices
};
std::shared_ptr<const ResourceSlice> DecodeResourceSlice(const json::Value& obj);

struct DeviceClass {
  std::string name;
  // spec.selectors[].cel.expression; a selector of another kind is kept as "" (none is known).
  std::vector<std::string> expressions;
  bool selectors_left_out = false;  // more than kMaxClassSelectors or a longer expression
};
std::shared_ptr<const DeviceClass> DecodeDeviceClass(const json::Value& obj);

struct AllocatedDevice {
  std::string driver, pool, device;
  bool admin_access = false;  // an admin's access: the device stays usable by others
};

struct ResourceClaim {
  ObjectMeta meta;  // labels under berth.dev/ only
  std::vector<AllocatedDevice> allocated;  // status.allocation.devices.results
  bool results_left_out = false;
};
std::shared_ptr<const ResourceClaim> DecodeResourceClaim(const json::Value& obj);

// A ResourceClaim for a create request: `count` devices of `device_class` (one request named
// "gpus", allocation mode ExactCount), labelled `label`=`value`, controlled by `owner`.
std::string DeviceClaimJson(const std::string& name, const std::string& ns, const std::string& device_class,
                            int64_t count, const std::string& label, const std::string& value, const OwnerRef& owner);

}  // namespace berth::k8s
