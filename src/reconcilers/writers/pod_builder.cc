#include "reconcilers/writers/pod_builder.h"

#include <algorithm>
#include <string_view>

#include "k8s/core_types.h"
#include "k8s/pod_template.h"
#include "k8s/quantity.h"
#include "reconcilers/writers/device_claims.h"

namespace berth::reconcilers {

namespace sched = scheduling;

namespace {

// A quantity of the template as the API server reads it (k8s::TemplateContainer's text: a string,
// or a number as YAML writes `cpu: 2`); -1 when it cannot be read.
int64_t ReadQuantity(const std::string& text, std::string_view resource) {
  auto v = resource == "cpu" ? k8s::ParseMilliValue(text) : k8s::ParseValue(text);
  return v.ok() && v.value() >= 0 ? v.value() : -1;
}

// A container's request for one resource as the API server will default it: the request, else
// the limit. -1 when a quantity cannot be read.
int64_t ContainerRequest(const k8s::TemplateContainer& c, const std::string& resource) {
  for (const auto* list : {&c.requests, &c.limits}) {
    if (auto q = list->find(resource); q != list->end()) return ReadQuantity(q->second, resource);
  }
  return 0;
}

// What a template asks of one resource (cpu or memory) beside its first container, counted the
// way kubelet 1.37 admits a Pod (k8s.io/component-helpers/resource PodRequests): the containers
// after the first and every sidecar run beside it; init containers run one at a time in order,
// each regular one beside the sidecars started before it; spec.overhead comes on top of it all;
// Pod-level requests and limits (spec.resources) set the Pod's figure for the resource instead.
struct TemplateAsk {
  const char* resource = "";
  int64_t others = 0;  // the containers after the first plus every sidecar
  bool other_containers = false, sidecars = false;
  int64_t init_peak = 0;  // the largest regular init container plus the sidecars started before it
  std::string init_peak_name;
  bool init_peak_after_sidecars = false;
  int64_t overhead = 0;
  int64_t pod_request = -1, pod_limit = -1;  // spec.resources.requests/limits; -1 when not set

  bool PodLevel() const { return pod_request >= 0 || pod_limit >= 0; }
  std::string Amount(int64_t v) const {
    return std::string_view(resource) == "cpu" ? k8s::FormatMilli(v) + " CPU" : k8s::FormatBytes(v) + " memory";
  }
  std::string Format(int64_t v) const { return std::string_view(resource) == "cpu" ? k8s::FormatMilli(v) : k8s::FormatBytes(v); }
};

// a + b for quantities (never negative), capped at 2^60: far above any machine, and no overflow.
int64_t Sum(int64_t a, int64_t b) {
  constexpr int64_t kCap = int64_t{1} << 60;
  return std::min(std::min(a, kCap) + std::min(b, kCap), kCap);
}

// One resource of the containers after the first and of the init containers, in order (a restartable
// init container, restartPolicy Always, is a sidecar).
k8s::Status AddContainerAsks(const std::vector<k8s::TemplateContainer>& cs, bool init, const std::string& gpu_resource,
                             std::vector<TemplateAsk>& asks) {
  std::vector<int64_t> sidecars_so_far(asks.size(), 0);
  for (size_t i = init ? 0 : 1; i < cs.size(); ++i) {
    const k8s::TemplateContainer& c = cs[i];
    if (!c.is_object) continue;
    const bool sidecar = init && c.restart_always;
    const std::string what = sidecar ? "sidecar " : init ? "init container " : "container ";
    const int64_t gpus = ContainerRequest(c, gpu_resource);
    if (gpus < 0) return k8s::Status::Error(what + c.name + " has a resource quantity berth cannot read");
    if (gpus > 0) {
      return k8s::Status::Error(what + c.name + " asks for " + gpu_resource + ": only the first container gets the run's GPUs");
    }
    for (size_t k = 0; k < asks.size(); ++k) {
      TemplateAsk& ask = asks[k];
      const int64_t v = ContainerRequest(c, ask.resource);
      if (v < 0) return k8s::Status::Error(what + c.name + " has a resource quantity berth cannot read");
      if (!init || sidecar) {
        ask.others = Sum(ask.others, v);
        if (v > 0) (sidecar ? ask.sidecars : ask.other_containers) = true;
      }
      if (sidecar) {
        sidecars_so_far[k] = Sum(sidecars_so_far[k], v);  // never above `others`: no peak of its own
      } else if (init && Sum(v, sidecars_so_far[k]) > ask.init_peak) {
        ask.init_peak = Sum(v, sidecars_so_far[k]);
        ask.init_peak_name = c.name;
        ask.init_peak_after_sidecars = sidecars_so_far[k] > 0;
      }
    }
  }
  return k8s::Status();
}

k8s::Result<std::vector<TemplateAsk>> ReadTemplateAsks(const k8s::TemplateSpecView& spec, const std::string& gpu_resource) {
  std::vector<TemplateAsk> asks(2);
  asks[0].resource = "cpu";
  asks[1].resource = "memory";
  if (k8s::Status s = AddContainerAsks(spec.containers, false, gpu_resource, asks); !s.ok()) return s;
  if (k8s::Status s = AddContainerAsks(spec.init_containers, true, gpu_resource, asks); !s.ok()) return s;
  for (TemplateAsk& ask : asks) {
    if (auto q = spec.overhead.find(ask.resource); q != spec.overhead.end()) {
      ask.overhead = ReadQuantity(q->second, ask.resource);
      if (ask.overhead < 0) return k8s::Status::Error(std::string("spec.template.spec.overhead.") + ask.resource + " is a quantity berth cannot read");
    }
    for (const char* kind : {"requests", "limits"}) {
      const bool requests = std::string_view(kind) == "requests";
      const auto& list = requests ? spec.pod_requests : spec.pod_limits;
      auto q = list.find(ask.resource);
      if (q == list.end()) continue;
      const int64_t v = ReadQuantity(q->second, ask.resource);
      if (v < 0) {
        return k8s::Status::Error(std::string("spec.template.spec.resources.") + kind + "." + ask.resource +
                                  " is a quantity berth cannot read");
      }
      (requests ? ask.pod_request : ask.pod_limit) = v;
    }
  }
  return asks;
}

// Whether the template's Pod fits `budget` (the blocks' amount of the resource) as the kubelet
// will count it once the first container has what is left (or, with Pod-level resources, as the
// template sets it).
k8s::Status CheckFits(const TemplateAsk& ask, int64_t budget, const std::string& node) {
  const std::string blocks = "the run's blocks on " + node + " hold " + ask.Format(budget) + " in all";
  const std::string overhead = ask.overhead > 0 ? " (the Pod's overhead of " + ask.Format(ask.overhead) + " included)" : "";
  if (ask.PodLevel()) {
    for (const char* kind : {"requests", "limits"}) {
      const int64_t v = std::string_view(kind) == "requests" ? ask.pod_request : ask.pod_limit;
      if (v < 0 || Sum(v, ask.overhead) <= budget) continue;
      const std::string with_overhead =
          ask.overhead > 0 ? " (" + ask.Format(Sum(v, ask.overhead)) + " with the Pod's overhead of " + ask.Format(ask.overhead) + ")" : "";
      return k8s::Status::Error(std::string("spec.template.spec.resources.") + kind + "." + ask.resource + " is " +
                                ask.Format(v) + with_overhead + ", more than the run's blocks on " + node + " hold (" +
                                ask.Format(budget) + "): set spec.resources." + ask.resource + " to at least " +
                                ask.Format(Sum(v, ask.overhead)) + " so that the run is given blocks that hold it");
    }
    return k8s::Status();
  }
  if (Sum(ask.others, ask.overhead) >= budget) {
    std::vector<std::string> who;
    if (ask.other_containers) who.push_back("the other containers");
    if (ask.sidecars) who.push_back("the sidecars");
    if (ask.overhead > 0) who.push_back("the Pod's overhead");
    std::string subject = who.empty() ? "the other containers" : who[0];
    for (size_t i = 1; i < who.size(); ++i) subject += (i + 1 == who.size() ? " and " : ", ") + who[i];
    return k8s::Status::Error(subject + " ask for " + ask.Amount(Sum(ask.others, ask.overhead)) + ", but " + blocks +
                              ", which leaves nothing for the first container: ask for more resources in spec.resources");
  }
  if (Sum(ask.init_peak, ask.overhead) > budget) {
    return k8s::Status::Error("init container " + ask.init_peak_name +
                              (ask.init_peak_after_sidecars ? " and the sidecars started before it ask" : " asks") +
                              " for " + ask.Amount(Sum(ask.init_peak, ask.overhead)) + overhead + ", but " + blocks +
                              ": ask for more resources in spec.resources");
  }
  return k8s::Status();
}

}  // namespace

bool IsOwnedByRun(const k8s::ObjectMeta& object, const Run* run) {
  if (run == nullptr || run->meta.uid.empty() || object.ns != run->meta.ns) return false;
  const k8s::OwnerRef* ref = object.ControllerRef();
  return ref != nullptr && ref->kind == "Run" && ref->uid == run->meta.uid && ref->name == run->meta.name &&
         ref->api_version.rfind("berth.dev/", 0) == 0;
}

bool IsRunsPod(const k8s::Pod& pod, const Run* run) {
  if (!IsOwnedByRun(pod.meta, run)) return false;
  const auto& uids = run->status.pod_uids;
  if (uids.empty()) {
    // Placed by a berth before status.podUIDs: a Running or Succeeded run with no list (berth
    // writes the list before a run it places can become Running).
    return run->status.phase == Phase::kRunning || run->status.phase == Phase::kSucceeded;
  }
  return std::find(uids.begin(), uids.end(), pod.meta.uid) != uids.end();
}

bool MayBeRunsUnrecordedPod(const k8s::Pod& pod, const Run& run) {
  if (!IsPlacedPhase(run.status.phase) || run.meta.deleting || !IsOwnedByRun(pod.meta, &run)) return false;
  if (pod.meta.Label(kRunLabel) != run.meta.name ||
      pod.meta.Label(kAttemptLabel) != std::to_string(run.status.resubmissions)) {
    return false;
  }
  for (const auto& e : run.status.placement) {
    const std::string name = e.pod.empty() ? PodName(run.meta.name, run.status.resubmissions, e.rank) : e.pod;
    if (name == pod.meta.name && (pod.node_name.empty() || pod.node_name == e.node)) return true;
  }
  return false;
}

std::string OwnerRunName(const k8s::ObjectMeta& object) {
  const k8s::OwnerRef* ref = object.ControllerRef();
  if (ref == nullptr || ref->kind != "Run" || ref->api_version.rfind("berth.dev/", 0) != 0) return {};
  return ref->name;
}

bool IsStrayPodOf(const k8s::Pod& pod, const Run& run) {
  if (pod.meta.ns != run.meta.ns) return false;
  const bool claims = pod.meta.Label(kRunLabel) == run.meta.name || OwnerRunName(pod.meta) == run.meta.name;
  // (A Pod of an earlier Run of the same name claims this one too: it would be deleted with its
  // Run anyway.)
  return claims && !IsRunsPod(pod, &run) && !MayBeRunsUnrecordedPod(pod, run);
}

std::string PodName(const std::string& run, int64_t attempt, int rank) {
  if (attempt <= 0) return run + "-" + std::to_string(rank);
  return run + "-" + std::to_string(rank) + "-r" + std::to_string(attempt);
}

std::string RankAddress(const Run& run, int rank) {
  return run.meta.name + "-" + std::to_string(rank) + "." + run.meta.name + "." + run.meta.ns + ".svc";
}

namespace {

// The Pod's metadata: the template's labels and annotations (kept by PodDraft), berth's labels
// (run, rank, attempt), the blocks annotation and the Run as controlling owner.
void SetPodMeta(k8s::PodDraft& pod, const Run& run, const RankAssignment& me) {
  pod.SetName(me.pod.empty() ? PodName(run.meta.name, run.status.resubmissions, me.rank) : me.pod, run.meta.ns);
  pod.SetLabel(kRunLabel, run.meta.name);
  pod.SetLabel(kRankLabel, std::to_string(me.rank));
  pod.SetLabel(kAttemptLabel, std::to_string(run.status.resubmissions));
  pod.SetAnnotation(kBlocksAnnotation, std::to_string(me.blocks));
  pod.SetControllerOwner(kGroupVersion, "Run", run.meta.name, run.meta.uid);
}

// The blocks are the Pod's whole budget, counted the way the kubelet admits it. For cpu and
// memory: the first container gets the blocks less what the other containers, the sidecars and
// the overhead ask for (requests and limits); no init step may need more than the blocks. A
// resource the template sets at Pod level (spec.resources) keeps the template's figures, which
// must fit the blocks; a Pod-level limit it leaves out becomes the blocks' amount (the Pod may use
// its blocks, never more), and the first container keeps what the template gives it. Only the
// first container gets GPUs (Kubernetes has no Pod-level GPUs).
k8s::Status SetBudget(k8s::PodDraft& pod, const std::string& gpu_resource, const RankAssignment& me) {
  const k8s::TemplateSpecView spec = pod.ReadSpec();
  auto asks = ReadTemplateAsks(spec, gpu_resource);
  if (!asks.ok()) return asks.status();
  const int64_t budgets[] = {me.resources.cpu_millis, me.resources.memory_bytes};
  for (size_t k = 0; k < asks.value().size(); ++k) {
    if (budgets[k] <= 0) continue;
    if (k8s::Status s = CheckFits(asks.value()[k], budgets[k], me.node); !s.ok()) return s;
  }
  if (!pod.FirstContainerIsObject()) return k8s::Status::Error("spec.template.spec.containers[0] is not an object");
  for (const char* kind : {"requests", "limits"}) {
    for (size_t k = 0; k < asks.value().size(); ++k) {
      const TemplateAsk& ask = asks.value()[k];
      if (budgets[k] > 0 && !ask.PodLevel()) {
        pod.SetFirstContainerQuantity(kind, ask.resource, ask.Format(budgets[k] - ask.others - ask.overhead));
      }
    }
    // Set to the blocks given: a GPU count the template asked for but the blocks lack goes. A DRA
    // fleet's (no extended resource: "") are not an extended resource of the Pod.
    if (gpu_resource.empty()) continue;
    pod.RemoveFirstContainerQuantity(kind, gpu_resource);
    if (me.resources.gpus > 0) pod.SetFirstContainerQuantity(kind, gpu_resource, std::to_string(me.resources.gpus));
  }
  for (size_t k = 0; k < asks.value().size(); ++k) {
    const TemplateAsk& ask = asks.value()[k];
    if (budgets[k] <= 0 || !ask.PodLevel() || ask.pod_limit >= 0) continue;
    if (!spec.pod_limits_settable) continue;  // the API server refuses the template's own
    pod.SetPodLimit(ask.resource, ask.Format(budgets[k] - ask.overhead));
  }
  return k8s::Status();
}

// BERTH_* in every container.
void SetRunEnv(k8s::PodDraft& pod, const Run& run, const std::vector<RankAssignment>& ranks, const RankAssignment& me) {
  const int nodes = static_cast<int>(ranks.size());
  std::string master = nodes > 1 ? RankAddress(run, 0) : "localhost";
  std::string addrs;
  for (int r = 0; r < nodes; ++r) {
    if (r > 0) addrs += "\n";
    addrs += nodes > 1 ? RankAddress(run, r) : "localhost";
  }
  int64_t gpus_total = 0;
  for (const auto& r : ranks) gpus_total += r.resources.gpus;
  pod.SetEnvInEveryContainer("BERTH_RUN_NAME", run.meta.name);
  pod.SetEnvInEveryContainer("BERTH_NODE_RANK", std::to_string(me.rank));
  pod.SetEnvInEveryContainer("BERTH_NODES_NUM", std::to_string(nodes));
  pod.SetEnvInEveryContainer("BERTH_MASTER_NODE_ADDR", master);
  pod.SetEnvInEveryContainer("BERTH_NODES_ADDRS", addrs);
  pod.SetEnvInEveryContainer("BERTH_GPUS_PER_NODE", std::to_string(me.resources.gpus));
  pod.SetEnvInEveryContainer("BERTH_GPUS_NUM", std::to_string(gpus_total));
  pod.SetEnvInEveryContainer("BERTH_BLOCKS", std::to_string(me.blocks));
}

}  // namespace

int64_t GraceCapSeconds(std::chrono::milliseconds max_grace_period) {
  const int64_t ms = max_grace_period.count();
  if (ms <= 1000) return 1;
  return ms / 1000 + (ms % 1000 != 0 ? 1 : 0);
}

k8s::Result<std::string> BuildPod(const Run& run, const std::string& fleet, const std::string& gpu_resource,
                                  const std::vector<RankAssignment>& ranks, size_t index, int64_t max_grace_seconds,
                                  const std::string& device_class) {
  const RankAssignment& me = ranks.at(index);
  auto draft = k8s::PodDraft::FromTemplate(run.spec.template_json);
  if (!draft.ok()) return draft.status();
  k8s::PodDraft& pod = *draft;
  SetPodMeta(pod, run, me);
  // Created already bound to its rank's node: no pods/binding write. The node is only ever the
  // one of the committed placement (the template's own nodeName is replaced).
  if (device_class.empty()) {
    pod.SetSpecString("nodeName", me.node);
    pod.SetSpecString("schedulerName", kSchedulerName);
  } else {  // issue 49: kube-scheduler binds it there and allocates its claim
    PinForDeviceClaim(pod, me.pod.empty() ? PodName(run.meta.name, run.status.resubmissions, me.rank) : me.pod, me.node,
                      me.resources.gpus);
  }
  pod.DefaultSpecString("restartPolicy", "Never");
  pod.AddToleration(kFleetTaintKey, "Equal", fleet);
  // A Pod that ignores SIGTERM keeps its blocks for its whole grace period once it is stopped:
  // never longer than the fleet allows (issue 44).
  pod.CapGracePeriod(max_grace_seconds);
  if (ranks.size() > 1) {
    pod.SetSpecString("hostname", run.meta.name + "-" + std::to_string(me.rank));
    pod.SetSpecString("subdomain", run.meta.name);
  }
  if (!pod.HasContainers()) return k8s::Status::Error("spec.template.spec.containers must list at least one container");
  if (k8s::Status s = SetBudget(pod, gpu_resource, me); !s.ok()) return s;
  SetRunEnv(pod, run, ranks, me);
  return pod.Json();
}

std::string BuildService(const Run& run) {
  return k8s::HeadlessServiceJson(run.meta.name, run.meta.ns, kRunLabel, run.meta.name,
                                  k8s::OwnerRef{kGroupVersion, "Run", run.meta.name, run.meta.uid, true});
}

}  // namespace berth::reconcilers
