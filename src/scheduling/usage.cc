#include "scheduling/usage.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <tuple>

namespace berth::scheduling {

namespace {

using base::Duration;
using base::TimePoint;
constexpr Duration kHour = std::chrono::hours(1);
constexpr Duration kDay = std::chrono::hours(24);
constexpr double kMsPerHour = 3600.0 * 1000.0;
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

TimePoint Floor(TimePoint t, Duration unit) {
  auto ms = t.time_since_epoch().count();
  auto u = unit.count();
  auto q = ms / u - (ms % u < 0 ? 1 : 0);
  return TimePoint(Duration(q * u));
}

// What `span` held over `ms` milliseconds.
UsageHours Held(const UsageSpan& span, int64_t ms) {
  const double hours = static_cast<double>(ms) / kMsPerHour;
  return UsageHours{.gpu = static_cast<double>(span.gpus) * hours,
                    .cpu = static_cast<double>(span.cpu_milli) / 1000.0 * hours,
                    .memory_gib = static_cast<double>(span.memory_bytes) / kBytesPerGiB * hours};
}

// The order of namespaces for naming: GPU-hours, then CPU-hours, then memory.
bool Less(const UsageHours& a, const UsageHours& b) {
  return std::tie(a.gpu, a.cpu, a.memory_gib) < std::tie(b.gpu, b.cpu, b.memory_gib);
}

// One fold's amounts of one day and fleet.
struct DayFold {
  UsageHours total;
  std::map<std::string, UsageHours> by_namespace;
  std::map<int, UsageHours> hourly;
};

// Adds `add` (one namespace's amounts of this fold) into `named`, keeping at most kNamedNamespaces
// names besides kOthers (see FoldUsage).
void AddNamespace(std::map<std::string, UsageHours>& named, const std::string& ns, const UsageHours& add) {
  if (auto it = named.find(ns); it != named.end()) {
    it->second += add;
    return;
  }
  const size_t names = named.size() - named.count(kOthers);
  if (names < kNamedNamespaces) {
    named[ns] = add;
    return;
  }
  auto smallest = named.end();
  for (auto it = named.begin(); it != named.end(); ++it) {
    if (it->first != kOthers && (smallest == named.end() || Less(it->second, smallest->second))) smallest = it;
  }
  if (smallest != named.end() && Less(smallest->second, add)) {
    named[kOthers] += smallest->second;
    named.erase(smallest);
    named[ns] = add;
  } else {
    named[kOthers] += add;
  }
}

// Figures are kept to the nanohour (3.6 microseconds): short in JSON, exact to the second however
// many folds add to them.
constexpr double kQuantum = 1e9;
double Rounded(double hours) { return std::round(hours * kQuantum) / kQuantum; }
void Round(UsageHours& h) {
  h.gpu = Rounded(h.gpu);
  h.cpu = Rounded(h.cpu);
  h.memory_gib = Rounded(h.memory_gib);
}

// Bytes of {gpuHours, cpuHours, memoryGiBHours} as members (numbers of at most 24 characters).
constexpr size_t kHoursBytes = 3 * (24 + 20);
size_t DayBytes(const UsageDay& d) {
  size_t n = 64 + d.day.size() + d.fleet.size() + kHoursBytes;
  for (const auto& [ns, h] : d.by_namespace) n += ns.size() + 8 + kHoursBytes;
  n += d.hourly.size() * (16 + kHoursBytes);
  return n;
}

// Drops detail, oldest day first, until `history` takes at most `max_bytes` (see FoldOptions).
void TrimToSize(UsageHistory& history, size_t max_bytes) {
  size_t bytes = UsageBytes(history);
  for (auto drop : {+[](UsageDay& d) { d.by_namespace.clear(); }, +[](UsageDay& d) { d.hourly.clear(); }}) {
    for (UsageDay& d : history) {  // in order: oldest first
      if (bytes <= max_bytes) return;
      const size_t before = DayBytes(d);
      drop(d);
      bytes -= before - DayBytes(d);
    }
  }
}

}  // namespace

size_t UsageBytes(const UsageHistory& history) {
  size_t n = 32;
  for (const UsageDay& d : history) n += DayBytes(d);
  return n;
}

TimePoint DayStart(TimePoint t) { return Floor(t, kDay); }

std::string UtcDay(TimePoint t) {
  // Civil date of a day count (H. Hinnant's days_from_civil inverse).
  int64_t z = DayStart(t).time_since_epoch().count() / kDay.count() + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const int64_t y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld", static_cast<long long>(y), static_cast<long long>(m),
                static_cast<long long>(d));
  return buf;
}

void FoldUsage(UsageHistory& history, const std::vector<UsageSpan>& spans, TimePoint from, TimePoint to,
               const FoldOptions& options) {
  // This fold's amounts by (day start, fleet).
  std::map<std::pair<TimePoint, std::string>, DayFold> folded;
  for (const UsageSpan& span : spans) {
    const TimePoint s = std::max(span.start, from);
    const TimePoint e = std::min(span.end.value_or(to), to);
    for (TimePoint at = s; at < e;) {
      const TimePoint hour = Floor(at, kHour);
      const TimePoint next = std::min(e, hour + kHour);
      const UsageHours held = Held(span, (next - at).count());
      DayFold& day = folded[{DayStart(at), span.fleet}];
      day.total += held;
      day.by_namespace[span.ns] += held;
      day.hourly[static_cast<int>((hour - DayStart(at)) / kHour)] += held;
      at = next;
    }
  }
  for (auto& [key, add] : folded) {
    const std::string day = UtcDay(key.first);
    const std::string& fleet = key.second;  // (a structured binding is not captured: clang)
    auto it = std::find_if(history.begin(), history.end(), [&](const UsageDay& d) { return d.day == day && d.fleet == fleet; });
    if (it == history.end()) {
      it = history.insert(history.end(), UsageDay{.day = day, .fleet = fleet, .total = {}, .by_namespace = {}, .hourly = {}});
    }
    it->total += add.total;
    // Larger first: of two namespaces new to a full day, the larger takes the name.
    std::vector<std::pair<std::string, UsageHours>> order(add.by_namespace.begin(), add.by_namespace.end());
    std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return Less(b.second, a.second); });
    for (const auto& [ns, amount] : order) AddNamespace(it->by_namespace, ns, amount);
    for (const auto& [h, amount] : add.hourly) it->hourly[h] += amount;
    Round(it->total);
    for (auto& [ns, amount] : it->by_namespace) Round(amount);
    for (auto& [h, amount] : it->hourly) Round(amount);
  }
  const TimePoint oldest = DayStart(to - Duration(1)) - (kHistoryDays - 1) * kDay;  // to's day is the last folded
  const std::string oldest_day = UtcDay(oldest);
  std::erase_if(history, [&](const UsageDay& d) { return d.day < oldest_day; });
  for (UsageDay& d : history) {
    // A day that ended before the hourly horizon keeps its totals only.
    const bool keep = options.hourly_since && d.day >= UtcDay(*options.hourly_since);
    if (!keep) d.hourly.clear();
  }
  std::sort(history.begin(), history.end(),
            [](const UsageDay& a, const UsageDay& b) { return std::tie(a.day, a.fleet) < std::tie(b.day, b.fleet); });
  TrimToSize(history, options.max_bytes);
}

namespace {

// The part of `amount` (held evenly over [s, min(s + len, until))) that falls in [t0, t1).
UsageHours ProRata(const UsageHours& amount, TimePoint s, Duration len, TimePoint until, TimePoint t0, TimePoint t1) {
  const TimePoint e = std::min(s + len, until);
  const TimePoint a = std::max(s, t0), b = std::min(e, t1);
  if (b <= a || e <= s) return {};
  if (a == s && b == e) return amount;
  const double f = static_cast<double>((b - a).count()) / static_cast<double>((e - s).count());
  return UsageHours{.gpu = amount.gpu * f, .cpu = amount.cpu * f, .memory_gib = amount.memory_gib * f};
}

// The start of UTC day "YYYY-MM-DD" (H. Hinnant's days_from_civil), nullopt when it is not one.
std::optional<TimePoint> DayStartOf(const std::string& day) {
  int y = 0;
  unsigned m = 0, d = 0;
  if (day.size() != 10 || std::sscanf(day.c_str(), "%4d-%2u-%2u", &y, &m, &d) != 3 || m < 1 || m > 12 || d < 1 || d > 31) {
    return std::nullopt;
  }
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return TimePoint((era * 146097 + doe - 719468) * kDay);
}

}  // namespace

UsageHours UsageIn(const UsageHistory& history, const std::string& fleet, TimePoint t0, TimePoint t1,
                   TimePoint folded_until) {
  UsageHours sum;
  if (t1 <= t0) return sum;
  const std::string first = UtcDay(t0), last = UtcDay(t1 - Duration(1));
  for (const UsageDay& d : history) {
    if ((!fleet.empty() && d.fleet != fleet) || d.day < first || d.day > last) continue;
    const std::optional<TimePoint> parsed = DayStartOf(d.day);
    if (!parsed) continue;
    const TimePoint start = *parsed;
    if (start >= t0 && start + kDay <= t1) {
      sum += d.total;
    } else if (d.hourly.empty()) {
      sum += ProRata(d.total, start, kDay, folded_until, t0, t1);
    } else {
      for (const auto& [h, amount] : d.hourly) sum += ProRata(amount, start + h * kHour, kHour, folded_until, t0, t1);
    }
  }
  return sum;
}

}  // namespace berth::scheduling
