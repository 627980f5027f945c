#include "workloads/workload.h"

#include <cctype>
#include <cstdio>
#include <string_view>
#include <utility>

#include "base/priority.h"
#include "k8s/duration.h"
#include "workloads/job.h"
#include "workloads/jobset.h"

namespace berth::workloads {

const std::vector<const WorkloadKind*>& ObjectKinds() {
  static const std::vector<const WorkloadKind*> kinds{&Jobs(), &JobSets()};
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

namespace {

// Whether `key` is a label key: an optional DNS-subdomain prefix and "/", then a name of at most 63
// characters, alphanumeric at both ends, with "-", "_" and "." inside (what the CRD's pattern says).
bool IsLabelKey(std::string_view key) {
  const size_t slash = key.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  const std::string_view prefix = slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (name.empty() || name.size() > 63 || !alnum(name.front()) || !alnum(name.back())) return false;
  for (char c : name) {
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  if (slash == std::string_view::npos) return true;
  if (prefix.empty() || prefix.size() > 253 || !alnum(prefix.front()) || !alnum(prefix.back())) return false;
  for (char c : prefix) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')) {
      return false;
    }
  }
  return true;
}

// spec.topology from labels or annotations berth.dev/topology-required / -preferred (the
// annotation wins); `note` gets the first problem.
template <typename Note>
void ReadTopology(const Workload& w, api::v1alpha1::RunSpec& s, Note&& note) {
  auto value = [&](const char* name) {
    auto a = w.meta.annotations.find(name);
    if (a != w.meta.annotations.end()) return a->second;
    return w.meta.Label(name);
  };
  const std::string required = value(kTopologyRequiredLabel);
  const std::string preferred = value(kTopologyPreferredLabel);
  for (const auto& [name, v] : {std::pair{kTopologyRequiredLabel, &required}, std::pair{kTopologyPreferredLabel, &preferred}}) {
    if (!v->empty() && !IsLabelKey(*v)) {
      note("label " + std::string(name) + " must name a topology level's label key, not \"" + v->substr(0, 320) + "\"");
      return;
    }
  }
  if (!required.empty() && !preferred.empty()) {
    note("labels " + std::string(kTopologyRequiredLabel) + " and " + kTopologyPreferredLabel + " are exclusive");
    return;
  }
  s.topology_required = required;
  s.topology_preferred = preferred;
}

}  // namespace

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
  ReadTopology(w, s, note);
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

void PutTopology(const TicketSpec& want, api::v1alpha1::RunSpec& next) {
  if (want.problem.find(kTopologyRequiredLabel) != std::string::npos ||
      want.problem.find(kTopologyPreferredLabel) != std::string::npos) {
    return;
  }
  next.topology_required = want.spec.topology_required;
  next.topology_preferred = want.spec.topology_preferred;
}

k8s::PinSpec PinOf(const std::string& ticket, int rank, const std::string& node, const std::string& fleet) {
  return k8s::PinSpec{.node = node,
                      .gate = kAdmissionGate,
                      .toleration_key = "berth.dev/fleet",
                      .toleration_value = fleet,
                      .labels = {{kTicketLabel, ticket}, {kRankLabel, std::to_string(rank)}}};
}

}  // namespace berth::workloads
