#pragma once
// Issue 49: the GPUs of a DRA fleet (Fleet.spec.devices) are the devices of its DeviceClass that
// the nodes' ResourceSlices publish. Pure: from the cached slices, classes and claims to a count
// per node (docs/concepts.md "DRA fleets").
//
// What is counted, per node: the devices of complete pools at their latest generation (a pool's
// slices of its highest spec.pool.generation, as many as its resourceSliceCount; an incomplete
// pool is being updated and counts nothing until it is complete) in slices local to that node
// (spec.nodeName), that the class selects. Partitions of one physical device (devices that
// consume the same counter set of their pool) count once. Of those, the devices allocated to
// claims are held by others (a partitionable device one of whose partitions is allocated is held
// whole), except claims with an admin's access and berth's own claims (label berth.dev/run) of a
// run that holds blocks now (its placement counts them); a berth claim of a run that ended is
// held until the ResourceClaim controller frees it.
//
// What berth reads of a class (it has no CEL evaluator): no selectors (every device), or
// selectors that are each `device.driver == '<driver>'` (single or double quotes) naming the
// same driver. Any other selector, or a class that does not exist, is a problem: the fleet is
// refused with it (its Ready condition, reason InvalidSpec) until the class changes.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "k8s/dra_objects.h"

namespace berth::reconcilers {

struct NodeDevices {
  int64_t total = 0;           // devices of the class on the node (partitions of one device once)
  int64_t held_by_others = 0;  // of them, allocated to claims berth did not make
  // The devices berth's claims hold here, by run ("namespace/name"; a partitioned device once).
  std::map<std::string, int64_t> runs;
  friend bool operator==(const NodeDevices&, const NodeDevices&) = default;
};

struct ClassDevices {
  std::string problem;  // why berth cannot count the class's devices; "" when it can
  std::unordered_map<std::string, NodeDevices> nodes;  // by node name
  // The nodes with a pool of the class's driver being updated (incomplete at its latest
  // generation): it counts no device until it is complete, but the node publishes devices.
  std::unordered_set<std::string> updating;
  friend bool operator==(const ClassDevices&, const ClassDevices&) = default;
};

// Every counted class by name (the DeviceClasses DRA fleets name).
using DraDevices = std::map<std::string, ClassDevices, std::less<>>;

// The driver a class selects ("" with `all`: every device), or a problem naming the selector
// berth cannot read.
struct ClassDriver {
  std::string driver;
  bool all = false;
  std::string problem;
};
ClassDriver ReadClassDriver(const k8s::DeviceClass& cls);

// The devices of class `name` (`cls`: null when no such DeviceClass exists) per node.
// `placed_runs`: the runs ("namespace/name") that hold blocks now.
ClassDevices CountClassDevices(std::string_view name, const k8s::DeviceClass* cls,
                               const std::vector<std::shared_ptr<const k8s::ResourceSlice>>& slices,
                               const std::vector<std::shared_ptr<const k8s::ResourceClaim>>& claims,
                               const std::unordered_set<std::string>& placed_runs = {});

// The sentence a fleet of class `name` is refused with, or "" when its devices can be counted.
std::string DeviceClassProblem(const DraDevices* devices, const std::string& name);
// The devices of class `name` on `node` (none when not counted).
NodeDevices DevicesOn(const DraDevices* devices, const std::string& name, const std::string& node);
// Whether `node` has a pool of class `name`'s driver being updated (ClassDevices::updating).
bool PoolBeingUpdatedOn(const DraDevices* devices, const std::string& name, const std::string& node);

}  // namespace berth::reconcilers
