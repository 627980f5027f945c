#include "workloads/pod_group.h"

#include <algorithm>

namespace berth::workloads {

const k8s::Resource& PodKind::Resource() const {
  static const k8s::Resource kPods{"", "v1", "pods", true};
  return kPods;
}

PodOwner PodKind::WorkloadOfPod(const k8s::Pod& pod) const {
  auto id = PodWorkloadOf(pod.meta, false, /*held=*/true);
  if (!id || id->kind != Kind()) return {};
  return group_ ? PodOwner{id->name, ""} : PodOwner{pod.meta.name, pod.meta.uid};
}

std::string PodKind::PodSelector(const std::string& name, const std::string&) const {
  return group_ ? std::string(kPodGroupLabel) + "=" + name : std::string(kQueueLabel) + "=true,!" + kPodGroupLabel;
}

const PodKind& SinglePods() {
  static const PodKind kind(false);
  return kind;
}

const PodKind& PodGroups() {
  static const PodKind kind(true);
  return kind;
}

bool IsPodKind(std::string_view kind) { return kind == "Pod" || kind == "PodGroup"; }

std::optional<PodWorkloadId> PodWorkloadOf(const k8s::ObjectMeta& pod, bool namespace_queues_all, bool held) {
  if (pod.name.empty() || pod.labels.count("berth.dev/run")) return std::nullopt;
  if (const k8s::OwnerRef* o = pod.ControllerRef(); o != nullptr && o->kind == "Job") return std::nullopt;
  const bool labelled = pod.Label(kQueueLabel) == "true";
  if (const std::string group = pod.Label(kPodGroupLabel); !group.empty()) {
    if (labelled || (namespace_queues_all && held)) return PodWorkloadId{"PodGroup", group};
    return std::nullopt;
  }
  if (labelled) return PodWorkloadId{"Pod", pod.name};
  return std::nullopt;
}

std::optional<PodWorkloadId> PodWorkloadOf(const k8s::GroupPod& pod, bool namespace_queues_all) {
  return PodWorkloadOf(pod.pod.meta, namespace_queues_all, pod.gated || !pod.pod.meta.Label(kTicketLabel).empty());
}

std::string PodTicketName(const PodWorkloadId& id) {
  return TicketName(id.kind == "PodGroup" ? PodGroups().TicketPrefix() : SinglePods().TicketPrefix(), id.name);
}

namespace {

// N as the annotation says; nullopt when it is not a whole number from 1 to kMaxPodGroupSize.
std::optional<int64_t> ParseSize(const std::string& v) {
  if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const int64_t n = std::stoll(v);
  if (n < 1 || n > kMaxPodGroupSize) return std::nullopt;
  return n;
}

void TakeLarger(k8s::PodRequests& into, const k8s::PodRequests& r) {
  into.cpu_milli = std::max(into.cpu_milli, r.cpu_milli);
  into.memory_bytes = std::max(into.memory_bytes, r.memory_bytes);
  for (const auto& [k, v] : r.extended) into.extended[k] = std::max(into.Get(k), v);
}

// A group's size N (s.size) from its Pods' annotation (`sorted`: the first Pod first), or the
// problem with it (s.problem): unreadable, or not the same on every Pod.
void ReadGroupSize(const std::string& group, const std::vector<const k8s::GroupPod*>& sorted, PodGroupState& s) {
  const k8s::Pod& first = sorted.front()->pod;
  const std::string declared = first.meta.Annotation(kPodGroupSizeAnnotation);
  if (auto n = ParseSize(declared)) {
    s.size = *n;
  } else {
    s.problem = "annotation " + std::string(kPodGroupSizeAnnotation) + " must be a whole number from 1 to " +
                std::to_string(kMaxPodGroupSize) + ", not \"" + declared + "\"";
  }
  for (const k8s::GroupPod* p : sorted) {
    if (s.problem.empty() && p->pod.meta.Annotation(kPodGroupSizeAnnotation) != declared) {
      s.problem = "annotation " + std::string(kPodGroupSizeAnnotation) + " differs between Pods " + first.meta.name +
                  " (\"" + declared + "\") and " + p->pod.meta.name + " (\"" +
                  p->pod.meta.Annotation(kPodGroupSizeAnnotation) + "\") of group " + group;
    }
  }
}

}  // namespace

PodGroupState PodGroupOf(const PodWorkloadId& id, const std::vector<const k8s::GroupPod*>& pods) {
  PodGroupState s;
  std::vector<const k8s::GroupPod*> sorted = pods;
  std::sort(sorted.begin(), sorted.end(), [](const k8s::GroupPod* a, const k8s::GroupPod* b) {
    if (a->pod.meta.created != b->pod.meta.created) return a->pod.meta.created < b->pod.meta.created;
    return a->pod.meta.name < b->pod.meta.name;
  });
  const bool group = id.kind == "PodGroup";
  Workload& w = s.workload;
  w.kind = id.kind;
  if (sorted.empty()) return s;
  const k8s::Pod& first = sorted.front()->pod;
  w.meta = first.meta;
  w.meta.name = id.name;
  w.meta.owners.clear();
  if (group) ReadGroupSize(id.name, sorted, s);
  w.pods = s.size;
  w.grace_seconds = 0;
  int64_t succeeded = 0;
  for (const k8s::GroupPod* p : sorted) {
    TakeLarger(w.requests, p->pod.requests);
    if (!p->pod.meta.deleting) w.grace_seconds = std::max(w.grace_seconds, p->pod.grace_seconds);
    if (!p->pod.meta.deleting) ++s.live;
    if (p->gated && !p->pod.meta.deleting) w.suspended = true;
    if (p->pod.phase == "Succeeded") ++succeeded;
    // A Pod that fails because it is being deleted (its kubelet kills it) was taken away, not
    // failed: the group's Pods all gone, its ticket goes (pod_group_tickets.h).
    if (p->pod.phase == "Failed" && !p->pod.meta.deleting && !w.finished) {
      w.finished = false;
      w.finish_reason = "PodFailed";
      w.finish_message = "Pod " + p->pod.meta.name + " failed" +
                         (p->pod.reason.empty() && p->pod.message.empty() ? "" : ": " + p->pod.reason +
                                                                                    (p->pod.message.empty() ? "" : " " + p->pod.message));
    }
  }
  if (!w.finished && succeeded >= s.size) {
    w.finished = true;
    w.finish_message = group ? "all " + std::to_string(s.size) + " Pods of the group succeeded" : "the Pod succeeded";
  }
  if (group && s.problem.empty() && s.live < s.size) {
    s.waiting = std::to_string(s.live) + " of " + std::to_string(s.size) + " Pods of the group exist";
  } else if (group && s.problem.empty() && s.live > s.size) {
    s.waiting = std::to_string(s.live) + " Pods carry group " + id.name + " but its size is " + std::to_string(s.size) +
                ": delete the extra Pods";
  }
  return s;
}

}  // namespace berth::workloads
