#include "reconcilers/objects/namespace_policy.h"

#include <algorithm>

#include "k8s/core_types.h"
#include "k8s/quantity.h"

namespace berth::reconcilers {

namespace json = k8s::json;

std::optional<PriorityCap> DefaultPriorityCap(int32_t default_max) {
  if (default_max >= kNoDefaultCap) return std::nullopt;
  PriorityCap cap;
  cap.cap = std::max<int32_t>(default_max, 0);
  cap.by_default = true;
  return cap;
}

std::optional<PriorityCap> ParsePriorityCap(const std::map<std::string, std::string>& labels, int32_t default_max) {
  auto it = labels.find(kMaxPriorityLabel);
  if (it == labels.end()) return DefaultPriorityCap(default_max);
  PriorityCap cap;
  cap.value = it->second;
  const std::string& v = it->second;
  int32_t n = 0;
  bool ok = !v.empty() && v.size() <= 3;
  for (char c : v) {
    if (c < '0' || c > '9') ok = false;
    if (ok) n = n * 10 + (c - '0');
  }
  if (!ok || n > 100) {
    cap.malformed = true;
    cap.cap = 0;
  } else {
    cap.cap = n;
  }
  return cap;
}

namespace {
std::string LabelText(const PriorityCap& cap) {
  return std::string("label ") + kMaxPriorityLabel + ": " + json::Quote(cap.value);
}
}  // namespace

// Why a namespace without the label is capped.
constexpr const char* kDefaultCapText = "berth's default cap, defaultMaxPriority";

std::string PriorityRefusal(const std::string& ns, int64_t priority, const PriorityCap& cap) {
  if (cap.by_default) {
    return "spec.priority " + std::to_string(priority) + " is above " + std::to_string(cap.cap) +
           ", the highest priority runs in namespace " + ns + " may have (no namespace label " + kMaxPriorityLabel +
           ": " + kDefaultCapText + ")";
  }
  if (cap.malformed) {
    return "spec.priority " + std::to_string(priority) + " is above 0, the highest priority runs in namespace " + ns +
           " may have: its " + LabelText(cap) + " is not a whole number from 0 to 100, so berth counts it as 0 " +
           "until a cluster admin fixes it";
  }
  return "spec.priority " + std::to_string(priority) + " is above " + std::to_string(cap.cap) +
         ", the highest priority runs in namespace " + ns + " may have (namespace " + LabelText(cap) + ")";
}

std::string PriorityCapNote(const std::string& ns, int64_t priority, const PriorityCap& cap) {
  if (cap.by_default) {
    return "priority capped at " + std::to_string(cap.cap) + " by namespace " + ns + " (no label " + kMaxPriorityLabel +
           ": " + kDefaultCapText + "); spec.priority is " + std::to_string(priority);
  }
  std::string s = "priority capped at " + std::to_string(cap.cap) + " by namespace " + ns + " (" + LabelText(cap);
  if (cap.malformed) s += ", not a whole number from 0 to 100: counted as 0";
  return s + "); spec.priority is " + std::to_string(priority);
}

std::shared_ptr<const NamespaceInfo> DecodeNamespace(const json::Value& obj) {
  auto meta = k8s::DecodeMeta(obj);  // empty for anything but an object
  if (meta.name.empty()) return nullptr;
  auto n = std::make_shared<NamespaceInfo>();
  n->name = meta.name;
  n->labels = std::move(meta.labels);
  return n;
}

namespace {

// The core's key for a quota resource name, or "" for resources berth's Pods do not use.
std::string QuotaKey(const std::string& name) {
  if (name == "cpu" || name == "requests.cpu") return scheduling::kQuotaCpu;
  if (name == "memory" || name == "requests.memory") return scheduling::kQuotaMemory;
  if (name == "pods" || name == "count/pods") return scheduling::kQuotaPods;
  if (name.rfind("requests.", 0) == 0) return name;  // requests.nvidia.com/gpu and other extended resources
  return "";
}

void ReadAmounts(const std::map<std::string, std::string>& list, std::map<std::string, int64_t>& out) {
  for (const auto& [name, text] : list) {
    const std::string key = QuotaKey(name);
    if (key.empty()) continue;
    auto v = key == scheduling::kQuotaCpu ? k8s::ParseMilliValue(text) : k8s::ParseValue(text);
    if (!v.ok()) continue;  // beyond what berth can count: not a limit berth can check
    // Two names for one resource (cpu and requests.cpu): the smaller hard limit binds.
    auto [slot, fresh] = out.emplace(key, *v);
    if (!fresh) slot->second = std::min(slot->second, *v);
  }
}

}  // namespace

std::shared_ptr<const ResourceQuotaInfo> DecodeResourceQuota(const json::Value& obj) {
  const k8s::ResourceQuotaView view = k8s::DecodeResourceQuotaView(obj);
  if (view.meta.name.empty()) return nullptr;
  auto q = std::make_shared<ResourceQuotaInfo>();
  q->ns = view.meta.ns;
  q->name = view.meta.name;
  q->scoped = view.scoped;
  ReadAmounts(view.status_hard, q->hard);
  if (q->hard.empty()) ReadAmounts(view.spec_hard, q->hard);
  ReadAmounts(view.status_used, q->used);
  return q;
}

std::vector<scheduling::NamespaceQuota> QuotaLimits(const std::vector<std::shared_ptr<const ResourceQuotaInfo>>& quotas) {
  std::map<std::string, scheduling::NamespaceQuota> by_ns;
  std::vector<std::shared_ptr<const ResourceQuotaInfo>> sorted = quotas;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a->ns != b->ns ? a->ns < b->ns : a->name < b->name;
  });
  for (const auto& q : sorted) {
    if (q == nullptr || q->scoped) continue;
    for (const auto& [resource, hard] : q->hard) {
      auto u = q->used.find(resource);
      const int64_t used = u == q->used.end() ? 0 : u->second;
      scheduling::NamespaceQuota& nq = by_ns[q->ns];
      nq.ns = q->ns;
      auto [slot, fresh] = nq.limits.emplace(resource, scheduling::QuotaLimit{used, hard, q->name});
      // The tightest object binds: the least room (ties: the first by name).
      if (!fresh && hard - used < slot->second.hard - slot->second.used) slot->second = {used, hard, q->name};
    }
  }
  std::vector<scheduling::NamespaceQuota> out;
  out.reserve(by_ns.size());
  for (auto& [ns, q] : by_ns) out.push_back(std::move(q));
  return out;
}

}  // namespace berth::reconcilers
