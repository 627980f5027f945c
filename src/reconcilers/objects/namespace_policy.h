#pragma once
// What a namespace says about the runs in it (issue 17), read from the API and turned into what
// the scheduling core and the admission webhook need. Pure: no I/O.
//
// - Priority cap: the namespace label berth.dev/max-priority: "N" (N a whole number 0..100, set
//   by cluster admins) caps spec.priority of the namespace's runs. The webhook refuses a create
//   or a priority change above it; without the webhook the engine queues the run at the cap and
//   says so in its message. A malformed value caps at 0 (fail closed, as Pod Security Admission
//   treats an invalid level label as its most restrictive level), and the messages say why.
// - ResourceQuota: the namespace's ResourceQuota objects (hard from status, else spec; used from
//   status) become the core's per-namespace limits (scheduling::NamespaceQuota), the tightest
//   object per resource. Quotas with scopes or a scopeSelector are not read (they apply to some
//   Pods only); the API server still enforces them when berth creates the Pods.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "k8s/json.h"
#include "k8s/objects.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

inline constexpr const char* kMaxPriorityLabel = "berth.dev/max-priority";

struct PriorityCap {
  int32_t cap = 100;
  bool malformed = false;  // the label's value is not a whole number 0..100: capped at 0
  std::string value;       // the label's value as written
  // Issue 44 (7): no label; the cap is berth's default (--default-max-priority, chart value
  // defaultMaxPriority) for namespaces without one.
  bool by_default = false;
};

// The highest --default-max-priority (and its default): no cap for namespaces without the label.
inline constexpr int32_t kNoDefaultCap = 100;

// The cap a namespace's labels set; without the label, `default_max` (the cap of namespaces
// without one) when it is below 100, else nullopt.
std::optional<PriorityCap> ParsePriorityCap(const std::map<std::string, std::string>& labels,
                                            int32_t default_max = kNoDefaultCap);
// The cap of a namespace berth has not read (nullopt when `default_max` is 100).
std::optional<PriorityCap> DefaultPriorityCap(int32_t default_max);

// "spec.priority 80 is above 70, the highest priority runs in namespace ml may have (namespace
// label berth.dev/max-priority: \"70\")"; for a malformed label it says the value and that it
// counts as 0; for the default cap "(no namespace label berth.dev/max-priority: berth's default
// cap, defaultMaxPriority)". The chart's admission policy writes the same sentences.
std::string PriorityRefusal(const std::string& ns, int64_t priority, const PriorityCap& cap);
// The sentence a capped run's status message ends with: "priority capped at 70 by namespace ml
// (label berth.dev/max-priority: \"70\"); spec.priority is 80".
std::string PriorityCapNote(const std::string& ns, int64_t priority, const PriorityCap& cap);

// A Namespace as the engine caches it: its name and labels.
struct NamespaceInfo {
  std::string name;
  std::map<std::string, std::string> labels;
};
std::shared_ptr<const NamespaceInfo> DecodeNamespace(const k8s::json::Value& obj);

// A ResourceQuota as the engine caches it: amounts in berth's units (millicores for cpu, plain
// values otherwise), keyed as the core expects (scheduling::kQuotaCpu, kQuotaMemory, kQuotaPods,
// "requests.<extended resource>"; "cpu", "memory" and "count/pods" are read as those).
struct ResourceQuotaInfo {
  std::string ns, name;
  bool scoped = false;  // has scopes or a scopeSelector: not read
  std::map<std::string, int64_t> hard, used;
};
std::shared_ptr<const ResourceQuotaInfo> DecodeResourceQuota(const k8s::json::Value& obj);

// Per namespace and resource, the quota with the least room (hard - used).
std::vector<scheduling::NamespaceQuota> QuotaLimits(const std::vector<std::shared_ptr<const ResourceQuotaInfo>>& quotas);

}  // namespace berth::reconcilers
