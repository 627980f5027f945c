#include "reconcilers/objects/user_usage.h"

#include <algorithm>
#include <tuple>

namespace berth::reconcilers {

namespace sched = scheduling;

namespace {

size_t WaitsBytes(const base::WaitHistogram& h) {
  size_t n = 2;  // {}
  for (int64_t c : h.counts) n += c != 0 ? 24 : 0;  // "2592000":<count>, (a count of 13 digits at most)
  return n;
}

size_t NamedBytes(const std::map<std::string, base::WaitHistogram>& named) {
  size_t n = 16;
  for (const auto& [name, h] : named) n += name.size() + 4 + WaitsBytes(h);
  return n;
}

size_t DayBytes(const base::RunStartsDay& d) {
  return 64 + d.day.size() + d.fleet.size() + WaitsBytes(d.total) + NamedBytes(d.by_user) + NamedBytes(d.by_namespace);
}

// The start under `name` in `named`: a new name on a full day goes under kOthers.
void AddNamed(std::map<std::string, base::WaitHistogram>& named, const std::string& name, std::chrono::seconds wait) {
  auto it = named.find(name);
  if (it == named.end()) {
    const size_t names = named.size() - named.count(sched::kOthers);
    it = named.try_emplace(names < sched::kNamedNamespaces ? name : std::string(sched::kOthers)).first;
  }
  it->second.Add(wait);
}

void AddStart(base::RunStartsHistory& starts, const RunStart& s) {
  const std::string day = sched::UtcDay(s.at);
  auto it = std::lower_bound(starts.begin(), starts.end(), std::tie(day, s.fleet),
                             [](const base::RunStartsDay& d, const auto& key) { return std::tie(d.day, d.fleet) < key; });
  if (it == starts.end() || it->day != day || it->fleet != s.fleet) {
    it = starts.insert(it, base::RunStartsDay{.day = day, .fleet = s.fleet, .total = {}, .by_user = {}, .by_namespace = {}});
  }
  it->total.Add(s.wait);
  AddNamed(it->by_user, s.user, s.wait);
  AddNamed(it->by_namespace, s.ns, s.wait);
}

// The days of the history's window (as FoldUsage keeps them: `to`'s day the last), at most
// kMaxRunStartsBytes.
void TrimStarts(base::RunStartsHistory& starts, base::TimePoint to) {
  const base::TimePoint oldest = sched::DayStart(to - base::Duration(1)) - (sched::kHistoryDays - 1) * std::chrono::hours(24);
  const std::string oldest_day = sched::UtcDay(oldest);
  std::erase_if(starts, [&](const base::RunStartsDay& d) { return d.day < oldest_day; });
  size_t bytes = RunStartsBytes(starts);
  for (auto& d : starts) {
    if (bytes <= kMaxRunStartsBytes) return;
    const size_t before = DayBytes(d);
    d.by_user.clear();
    d.by_namespace.clear();
    bytes -= before - DayBytes(d);
  }
  while (bytes > kMaxRunStartsBytes && !starts.empty()) {
    bytes -= DayBytes(starts.front());
    starts.erase(starts.begin());
  }
}

}  // namespace

size_t RunStartsBytes(const base::RunStartsHistory& starts) {
  size_t n = 16;
  for (const auto& d : starts) n += DayBytes(d);
  return n;
}

bool FoldUserUsage(::berth::api::v1alpha1::UserUsage& usage, const std::vector<sched::UsageSpan>& spans,
                   base::TimePoint first, base::TimePoint to, const std::vector<RunStart>& starts) {
  const base::TimePoint from = usage.folded_until ? usage.folded_until->point() : first;
  if (from >= to) return false;
  sched::FoldUsage(usage.history, spans, from, to,
                   sched::FoldOptions{.hourly_since = std::nullopt, .max_bytes = sched::kMaxUsageBytes});
  for (const RunStart& s : starts) {
    if (s.at >= from && s.at < to) AddStart(usage.starts, s);
  }
  TrimStarts(usage.starts, to);
  usage.folded_until = ::berth::api::v1alpha1::Time(to);
  return true;
}

}  // namespace berth::reconcilers
