#pragma once
// Makes the Pods (and, for multi-node runs, the headless Service) of an admitted Run, exactly as
// api.md describes: deterministic names, ownerReference, labels, berth's schedulerName, the rank's
// node as spec.nodeName (created bound: no pods/binding write), block resources on the first
// container (or, for what the template sets at Pod level, the Pod's own; counted as kubelet 1.37
// counts sidecars, init containers and overhead), the fleet toleration, BERTH_* environment,
// hostname/subdomain.

#include <string>
#include <vector>

#include "k8s/result.h"
#include "k8s/objects.h"
#include "reconcilers/run_types.h"
#include "scheduling/types.h"

namespace berth::reconcilers {

inline constexpr const char* kSchedulerName = "berth";
inline constexpr const char* kRunLabel = "berth.dev/run";
inline constexpr const char* kRankLabel = "berth.dev/rank";
inline constexpr const char* kAttemptLabel = "berth.dev/attempt";
// Blocks the Pod was given on its node: a Pod that outlives its placement (terminating after the
// run ended, was retried or deleted) holds these until the kubelet confirms it is gone.
inline constexpr const char* kBlocksAnnotation = "berth.dev/blocks";
inline constexpr const char* kFleetTaintKey = "berth.dev/fleet";

struct RankAssignment {
  int rank = 0;
  std::string pod;  // the name its placement entry gives (empty: PodName)
  std::string node;
  int blocks = 0;
  scheduling::Resources resources;  // what the Pod gets (blocks x per-block)
};

// True when `run` (not null) controls `object` (a Pod or Service): its controller ownerReference
// names a berth.dev Run with `run`'s uid, in `run`'s namespace. Anyone who may create Pods can
// label one berth.dev/run; only what a Run owns is that run's (issue 29).
bool IsOwnedByRun(const k8s::ObjectMeta& object, const Run* run);
inline bool IsRunsPod(const k8s::Pod& pod, const Run* run) { return IsOwnedByRun(pod.meta, run); }

// "<run>-<rank>" for the first attempt, "<run>-<rank>-r<attempt>" after a retry. No two (run,
// attempt, rank) share a name: a first attempt's name ends in "-<digits>", a retry's in
// "-r<digits>", and stripping those suffixes gives back the run (before issue 29 retries were
// "<run>-r<attempt>-<rank>": run a's retry 1 rank 0 and run a-r1's rank 0 were both a-r1-0).
// The hostname of a multi-node run's rank stays "<run>-<rank>" (RankAddress).
std::string PodName(const std::string& run, int64_t attempt, int rank);

// The Pod for `ranks[index]` as JSON for a create request. `gpu_resource` is the fleet's. An
// error (the run fails InvalidSpec with it) when the template cannot fit the rank's blocks.
k8s::Result<std::string> BuildPod(const Run& run, const std::string& fleet, const std::string& gpu_resource,
                                  const std::vector<RankAssignment>& ranks, size_t index);

// The headless Service named after a multi-node Run, selecting its Pods.
std::string BuildService(const Run& run);

// The DNS name peers use for one rank of a multi-node run: "<run>-<rank>.<run>.<ns>.svc".
std::string RankAddress(const Run& run, int rank);

}  // namespace berth::reconcilers
