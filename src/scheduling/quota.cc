#include "scheduling/quota.h"

#include <algorithm>
#include <array>
#include <limits>
#include <utility>

namespace berth::scheduling {

namespace {

int64_t Sat(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) return std::numeric_limits<int64_t>::max();
  return a + b;
}

std::string Memory(int64_t bytes) {
  static constexpr std::array<std::string_view, 6> kUnits = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
  size_t unit = 0;
  while (unit + 1 < kUnits.size() && bytes % 1024 == 0 && bytes >= 1024) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + std::string(kUnits[unit]);
}

}  // namespace

std::string_view NamespaceOf(std::string_view run_id) {
  const size_t slash = run_id.find('/');
  return slash == std::string_view::npos ? run_id : run_id.substr(0, slash);
}

std::string GpuQuotaKey(const std::string& gpu_resource) { return "requests." + gpu_resource; }

std::optional<QuotaShortfall> CheckQuota(const NamespaceQuota* quota, const QuotaUse& use,
                                         const std::string& gpu_resource) {
  if (quota == nullptr) return std::nullopt;
  const std::array<std::pair<std::string, int64_t>, 4> asks = {{
      {GpuQuotaKey(gpu_resource), use.resources.gpus},
      {kQuotaCpu, use.resources.cpu_millis},
      {kQuotaMemory, use.resources.memory_bytes},
      {kQuotaPods, use.pods},
  }};
  for (const auto& [resource, amount] : asks) {
    if (amount <= 0) continue;
    auto it = quota->limits.find(resource);
    if (it == quota->limits.end()) continue;
    const QuotaLimit& limit = it->second;
    if (Sat(std::max<int64_t>(limit.used, 0), amount) > limit.hard) {
      return QuotaShortfall{resource, limit.quota, amount, std::max<int64_t>(limit.used, 0), limit.hard};
    }
  }
  return std::nullopt;
}

void ChargeQuota(NamespaceQuota& quota, const QuotaUse& use, const std::string& gpu_resource) {
  auto charge = [&](const std::string& resource, int64_t amount) {
    if (amount <= 0) return;
    auto it = quota.limits.find(resource);
    if (it != quota.limits.end()) it->second.used = Sat(it->second.used, amount);
  };
  charge(GpuQuotaKey(gpu_resource), use.resources.gpus);
  charge(kQuotaCpu, use.resources.cpu_millis);
  charge(kQuotaMemory, use.resources.memory_bytes);
  charge(kQuotaPods, use.pods);
}

void AddCounted(NamespaceQuota& quota, const std::map<std::string, int64_t>& counted, int sign) {
  for (const auto& [resource, amount] : counted) {
    auto it = quota.limits.find(resource);
    if (it != quota.limits.end() && amount > 0) it->second.used += sign * amount;
  }
}

std::string FormatQuotaAmount(std::string_view resource, int64_t amount, bool bare) {
  if (resource == kQuotaCpu) {
    if (amount % 1000 == 0) {
      const int64_t cpus = amount / 1000;
      return std::to_string(cpus) + (bare ? "" : cpus == 1 ? " CPU" : " CPUs");
    }
    return std::to_string(amount) + "m" + (bare ? "" : " CPU");
  }
  if (resource == kQuotaMemory) return Memory(amount) + (bare ? "" : " memory");
  const std::string n = std::to_string(amount);
  if (bare) return n;
  if (resource == kQuotaPods) return n + (amount == 1 ? " Pod" : " Pods");
  return n + (amount == 1 ? " GPU" : " GPUs");
}

std::string ExplainQuota(std::string_view ns, const QuotaShortfall& s) {
  std::string out = "needs " + FormatQuotaAmount(s.resource, s.needed) + "; namespace " + std::string(ns) + " uses " +
                    FormatQuotaAmount(s.resource, s.used, /*bare=*/true) + " of " +
                    FormatQuotaAmount(s.resource, s.hard) + " (" + s.resource;
  if (!s.quota.empty()) out += ", ResourceQuota " + s.quota;
  out += ")";
  if (s.needed <= s.hard) return out;
  return out + "; more than the quota allows at all";
}

}  // namespace berth::scheduling
