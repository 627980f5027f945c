#pragma once
// Makes the Pods (and, for multi-node runs, the headless Service) of an admitted Run, exactly as
// api.md describes: deterministic names, ownerReference, labels, berth's schedulerName, the rank's
// node as spec.nodeName (created bound: no pods/binding write), block resources on the first
// container (or, for what the template sets at Pod level, the Pod's own; counted as kubelet 1.37
// counts sidecars, init containers and overhead), the fleet toleration, BERTH_* environment,
// hostname/subdomain.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "k8s/result.h"
#include "k8s/objects.h"
#include "reconcilers/objects/run_types.h"
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

// The fleet's spec.maxGracePeriod in whole seconds for a Pod's grace period: rounded up, and at
// least 1 (a grace period of 0 on a delete is a force delete: the Pod would leave the API while its
// processes still run on the node).
int64_t GraceCapSeconds(std::chrono::milliseconds max_grace_period);
inline constexpr int64_t kDefaultGraceCapSeconds = 600;  // maxGracePeriod's default, 10m

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
// A Pod is the run's only if berth made it (issue 44): the Run controls it and its uid is in the
// run's status.podUIDs. A tenant may write every label, annotation and ownerReference uid, never
// the run's status. (A run placed by a berth before status.podUIDs, Running or Succeeded with an
// empty list, keeps the ownerReference rule: it was placed before the list existed.)
bool IsRunsPod(const k8s::Pod& pod, const Run* run);
// A Pod the Run controls that berth may have made without recording its uid yet (a crash or a
// lost answer between the create and the status write): named and bound as an entry of the
// run's current placement, labelled with the current attempt. It is not the run's until berth
// records its uid (RunWrites::CreatePods, after checking that it asks no more than its blocks);
// meanwhile it is neither the run's nor a stray to delete.
bool MayBeRunsUnrecordedPod(const k8s::Pod& pod, const Run& run);
// Whether the Pod claims `run` (its berth.dev/run label names it, or its controller
// ownerReference is a Run of that name in its namespace) although berth did not make it: a stray
// that berth deletes (with a Warning Event), whatever the run's phase.
bool IsStrayPodOf(const k8s::Pod& pod, const Run& run);
// The name of the berth.dev Run `object`'s controller ownerReference names; "" when none does.
std::string OwnerRunName(const k8s::ObjectMeta& object);

// "<run>-<rank>" for the first attempt, "<run>-<rank>-r<attempt>" after a retry. No two (run,
// attempt, rank) share a name: a first attempt's name ends in "-<digits>", a retry's in
// "-r<digits>", and stripping those suffixes gives back the run (before issue 29 retries were
// "<run>-r<attempt>-<rank>": run a's retry 1 rank 0 and run a-r1's rank 0 were both a-r1-0).
// The hostname of a multi-node run's rank stays "<run>-<rank>" (RankAddress).
std::string PodName(const std::string& run, int64_t attempt, int rank);

// The Pod for `ranks[index]` as JSON for a create request. `gpu_resource` is the fleet's. An
// error (the run fails InvalidSpec with it) when the template cannot fit the rank's blocks.
// Its terminationGracePeriodSeconds is the template's (Kubernetes' default 30 when it sets none)
// capped at `max_grace_seconds` (the fleet's spec.maxGracePeriod, GraceCapSeconds).
// `device_class`: a DRA fleet's (issue 49, device_claims.h): the Pod is pinned to its node for
// kube-scheduler to bind, its GPUs a ResourceClaim of that class (BuildDeviceClaim).
k8s::Result<std::string> BuildPod(const Run& run, const std::string& fleet, const std::string& gpu_resource,
                                  const std::vector<RankAssignment>& ranks, size_t index,
                                  int64_t max_grace_seconds = kDefaultGraceCapSeconds,
                                  const std::string& device_class = {});

// The headless Service named after a multi-node Run, selecting its Pods.
std::string BuildService(const Run& run);

// The DNS name peers use for one rank of a multi-node run: "<run>-<rank>.<run>.<ns>.svc".
std::string RankAddress(const Run& run, int rank);

}  // namespace berth::reconcilers
