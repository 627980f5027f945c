#include "workloads/workload.h"

#include <cstdio>

#include "base/priority.h"
#include "k8s/duration.h"
#include "workloads/job.h"

namespace berth::workloads {

const std::vector<const WorkloadKind*>& ObjectKinds() {
  static const std::vector<const WorkloadKind*> kinds{&Jobs()};
  return kinds;
}

const WorkloadKind* KindOf(std::string_view kind) {
  for (const WorkloadKind* k : ObjectKinds()) {
    if (k->Kind() == kind) return k;
  }
  return nullptr;
}

bool IsQueued(const k8s::ObjectMeta& meta, bool namespace_queues_all) {
  return namespace_queues_all || meta.Label(kQueueLabel) == "true";
}

std::string TicketName(std::string_view prefix, std::string_view name) {
  std::string full = std::string(prefix) + "-" + std::string(name);
  if (full.size() <= 63) return full;
  // FNV-1a of the full name: the same in every build (a ticket is found again after a restart).
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : full) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  std::string cut = full.substr(0, 63 - 17);
  while (!cut.empty() && (cut.back() == '-' || cut.back() == '.')) cut.pop_back();
  return cut + "-" + hex;
}

TicketSpec TicketSpecOf(const WorkloadKind& kind, const Workload& w, const std::string& gpu_resource) {
  TicketSpec out;
  api::v1alpha1::RunSpec& s = out.spec;
  auto note = [&](std::string why) {
    if (out.problem.empty()) out.problem = std::move(why);
  };
  s.workload_ref = api::v1alpha1::WorkloadRef{std::string(kind.ApiVersion()), std::string(kind.Kind()), w.meta.name, w.meta.uid};
  s.nodes = std::max<int64_t>(1, w.pods);
  s.cpu_milli = w.requests.cpu_milli;
  s.memory_bytes = w.requests.memory_bytes;
  s.gpus = w.requests.Get(gpu_resource);
  // A workload always waits for capacity (docs/api.md).
  s.retry = api::v1alpha1::RetrySpec{.on_no_capacity = true, .on_interruption = false, .on_error = false, .duration = std::nullopt};
  if (auto it = w.meta.labels.find(kPriorityLabel); it != w.meta.labels.end()) {
    const std::string& v = it->second;
    int64_t p = -1;
    if (!v.empty() && v.size() <= 3 && v.find_first_not_of("0123456789") == std::string::npos) p = std::stoll(v);
    if (p < base::kMinPriority || p > base::kMaxPriority) {
      note("label " + std::string(kPriorityLabel) + " must be a whole number from 0 to 100, not \"" + v + "\"");
    } else {
      s.priority = p;
    }
  }
  if (std::string fleet = w.meta.Label(kFleetLabel); !fleet.empty()) s.fleets = {fleet};
  if (auto it = w.meta.labels.find(kWholeInstancesLabel); it != w.meta.labels.end()) {
    if (it->second == "true" || it->second == "false") {
      s.whole_instances = it->second == "true";
    } else {
      note("label " + std::string(kWholeInstancesLabel) + " must be \"true\" or \"false\", not \"" + it->second + "\"");
    }
  }
  if (!s.whole_instances) s.whole_instances = false;
  if (auto it = w.meta.annotations.find(kMaxDurationAnnotation); it != w.meta.annotations.end()) {
    auto d = k8s::ParseDuration(it->second);
    if (!d.ok()) {
      note("annotation " + std::string(kMaxDurationAnnotation) + ": " + d.status().message());
    } else {
      s.max_duration = *d;
    }
  }
  return out;
}

k8s::PinSpec PinOf(const std::string& ticket, int rank, const std::string& node, const std::string& fleet) {
  return k8s::PinSpec{.node = node,
                      .gate = kAdmissionGate,
                      .toleration_key = "berth.dev/fleet",
                      .toleration_value = fleet,
                      .labels = {{kTicketLabel, ticket}, {kRankLabel, std::to_string(rank)}}};
}

}  // namespace berth::workloads
