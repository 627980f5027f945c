#pragma once
// Compact decoded forms of the objects berth caches: metadata, Nodes and Pods.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/clock.h"
#include "k8s/json.h"

namespace berth::k8s {

struct OwnerRef {
  std::string api_version, kind, name, uid;
  bool controller = false;
};

struct ObjectMeta {
  std::string ns, name, uid, resource_version;
  int64_t generation = 0;
  TimePoint created{};
  bool deleting = false;  // deletionTimestamp is set
  std::map<std::string, std::string> labels, annotations;
  std::vector<std::string> finalizers;
  std::vector<OwnerRef> owners;
  // Decoded with MetaKeep::only_needed (a cache's copy): how many finalizers and ownerReferences
  // were left out, and where the kept finalizer stands in the object's list (-1: absent).
  int32_t finalizers_left_out = 0, owners_left_out = 0;
  int32_t kept_finalizer_index = -1;

  std::string Label(const std::string& k) const {
    auto it = labels.find(k);
    return it == labels.end() ? std::string() : it->second;
  }
  std::string Annotation(const std::string& k) const {
    auto it = annotations.find(k);
    return it == annotations.end() ? std::string() : it->second;
  }
  bool HasFinalizer(const std::string& f) const;
  const OwnerRef* ControllerRef() const;
};

// `keep_prefix`: only the labels and annotations whose key starts with it are kept (empty: all).
// A cache that reads none of the others keeps none (a template's annotations may be 256 KiB).
ObjectMeta DecodeMeta(const json::Value& obj, std::string_view keep_prefix = {});
// What a cache keeps of an object's metadata (issue 44: a tenant's thousands of ownerReferences or
// finalizers cost the cache nothing).
struct MetaKeep {
  std::string_view label_prefix = {};  // as DecodeMeta's keep_prefix
  // Labels (not annotations) whose key starts with this are kept too ("" : none), e.g. the
  // JobSet controller's jobset.sigs.k8s.io/jobset- labels on its Pods (issue 45).
  std::string_view also_label_prefix = {};
  // Only the controller ownerReference and the finalizer `finalizer` ("" : none) are kept; the
  // others are counted (ObjectMeta::*_left_out), not copied.
  bool only_needed = false;
  std::string_view finalizer = {};
};
ObjectMeta DecodeMeta(const json::Value& obj, const MetaKeep& keep);
// metadata.resourceVersion of an object (e.g. the API's answer to a write); "" when absent.
std::string ResourceVersionOf(const json::Value& obj);

struct Node {
  ObjectMeta meta;
  // Allocatable resources: cpu in millicores, everything else (memory, GPUs) as plain values.
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::map<std::string, int64_t> extended;  // e.g. "nvidia.com/gpu" -> 8
  // Allocatable quantities berth cannot read (outside int64 at its scale): resource -> why.
  std::map<std::string, std::string> unreadable;
  bool ready = false;          // condition Ready=True
  bool unschedulable = false;  // cordoned

  int64_t Allocatable(const std::string& resource) const {
    auto it = extended.find(resource);
    return it == extended.end() ? 0 : it->second;
  }
};

std::shared_ptr<const Node> DecodeNode(const json::Value& obj);

// A Pod's effective resource request, computed the way kubelet 1.37 admits it (and kube-scheduler
// fits it; k8s.io/component-helpers/resource PodRequests): the larger of the containers' sum plus
// every sidecar (restartable init container) and each init step (a regular init container plus
// the sidecars started before it); Pod-level requests (spec.resources.requests: cpu, memory,
// hugepages) replace that for the resources they set; plus spec.overhead. cpu in millicores,
// everything else as plain values; a container quantity that cannot be read counts as 0, a
// Pod-level one that cannot be read leaves the containers' figure.
struct PodRequests {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  std::map<std::string, int64_t> extended;

  int64_t Get(const std::string& resource) const {
    auto it = extended.find(resource);
    return it == extended.end() ? 0 : it->second;
  }
};

struct Pod {
  ObjectMeta meta;
  std::string node_name;
  std::string scheduler_name;
  std::string phase;   // Pending, Running, Succeeded, Failed, Unknown ("" = not reported yet)
  std::string reason;  // status.reason, e.g. "Evicted", "OutOfcpu"
  std::string message;
  PodRequests requests;
  // The first container (init containers first) waiting with a reason other than
  // ContainerCreating/PodInitializing, e.g. ErrImagePull: "reason: message".
  std::string waiting;
  // Some container (init containers too) is running or has run: there is a process to stop.
  bool started = false;
  // spec.terminationGracePeriodSeconds (Kubernetes' default of 30 when absent).
  int64_t grace_seconds = 30;
  // Issue 45: a Job's Pod waiting on berth's admission gate, what pinning it needs
  // (k8s::PinSource, workload_objects.h); "" otherwise and in DecodePod.
  std::string pin_source;
  // Issue 49: unbound, kube-scheduler could not place it (PodScheduled False, Unschedulable): its
  // message; "" otherwise.
  std::string unschedulable;
};

std::shared_ptr<const Pod> DecodePod(const json::Value& obj);
// The same, keeping only the labels and annotations whose key starts with `keep_prefix`.
std::shared_ptr<const Pod> DecodePodKeeping(const json::Value& obj, std::string_view keep_prefix);
// The same, keeping of the metadata only what `keep` says (a cache of every Pod of the cluster).
std::shared_ptr<const Pod> DecodePodKeeping(const json::Value& obj, const MetaKeep& keep);

}  // namespace berth::k8s
