#include "controller/usage_api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "k8s/duration.h"
#include "k8s/json.h"
#include "scheduling/usage.h"

namespace berth::controller {

namespace json = k8s::json;
namespace sched = scheduling;

namespace {

constexpr auto kMinWindow = std::chrono::hours(1);
constexpr auto kMaxWindow = std::chrono::hours(24 * base::kHistoryDays);

// The shortest text that reads back as the same double.
std::string Num(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[40];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "0";
}

struct DayRow {
  double gpu = 0, weighted = 0;
  base::WaitHistogram waits;  // the runs that started that day
};

struct Row {
  base::UsageHours hours;
  double weighted = 0;
  std::map<std::string, DayRow> days;
  base::WaitHistogram waits;
};

class Sums {
 public:
  Sums(std::string from, std::string to, const std::map<std::string, double>& weights)
      : from_(std::move(from)), to_(std::move(to)), weights_(weights) {}
  bool InWindow(const std::string& day) const { return day >= from_ && day <= to_; }
  bool InWindow(const base::UsageDay& d) const { return InWindow(d.day); }
  double Weight(const std::string& fleet) const {
    auto it = weights_.find(fleet);
    return it == weights_.end() ? 1.0 : it->second;
  }
  void Add(const std::string& key, const base::UsageDay& d, const base::UsageHours& h) {
    Row& r = rows_[key];
    const double w = h.gpu * Weight(d.fleet);
    r.hours += h;
    r.weighted += w;
    DayRow& day = r.days[d.day];
    day.gpu += h.gpu;
    day.weighted += w;
  }
  void AddStarts(const std::string& key, const std::string& day, const base::WaitHistogram& waits) {
    Row& r = rows_[key];
    r.waits += waits;
    r.days[day].waits += waits;
  }
  // The named parts of a day, and what they do not name (a day trimmed of its names) under "others".
  void AddNamed(const base::UsageDay& d) {
    base::UsageHours rest = d.total;
    for (const auto& [name, h] : d.by_namespace) {
      Add(name, d, h);
      rest.gpu -= h.gpu;
      rest.cpu -= h.cpu;
      rest.memory_gib -= h.memory_gib;
    }
    // What the named parts leave of the total; less than a microhour is the rounding of the figures
    // (each kept to the nanohour), not an "others" row.
    if (rest.gpu > 1e-6 || rest.cpu > 1e-6 || rest.memory_gib > 1e-6) {
      Add(base::kOthers, d, base::UsageHours{.gpu = std::max(0.0, rest.gpu), .cpu = std::max(0.0, rest.cpu),
                                             .memory_gib = std::max(0.0, rest.memory_gib)});
    }
  }
  std::map<std::string, Row>& rows() { return rows_; }

 private:
  std::string from_, to_;
  const std::map<std::string, double>& weights_;
  std::map<std::string, Row> rows_;
};

std::string HoursJson(const base::UsageHours& h, double weighted) {
  return R"("gpuHours":)" + Num(h.gpu) + R"(,"weightedGpuHours":)" + Num(weighted) + R"(,"cpuHours":)" + Num(h.cpu) +
         R"(,"memoryGiBHours":)" + Num(h.memory_gib);
}

// ,"runs":N,"medianWait":{"fromSeconds","underSeconds"} (underSeconds absent in the last
// bucket; null without runs); nothing when the runs are not known.
std::string RunsJson(const base::WaitHistogram& waits, bool known) {
  if (!known) return "";
  std::string out = R"(,"runs":)" + std::to_string(waits.Runs()) + R"(,"medianWait":)";
  const auto median = base::MedianWait(waits);
  if (!median) return out + "null";
  out += R"({"fromSeconds":)" + std::to_string(median->from.count());
  if (median->under) out += R"(,"underSeconds":)" + std::to_string(median->under->count());
  return out + "}";
}

std::string RowsJson(std::map<std::string, Row>& rows, double total_gpu, bool runs) {
  std::vector<std::pair<std::string, Row*>> order;
  for (auto& [name, row] : rows) order.emplace_back(name, &row);
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.second->hours.gpu > b.second->hours.gpu; });
  std::string out = "[";
  for (const auto& [name, row] : order) {
    if (out.size() > 1) out += ",";
    out += R"({"name":)" + json::Quote(name) + "," + HoursJson(row->hours, row->weighted) + R"(,"share":)" +
           Num(total_gpu > 0 ? row->hours.gpu / total_gpu : 0) + RunsJson(row->waits, runs) + R"(,"days":[)";
    bool first = true;
    for (const auto& [day, g] : row->days) {
      out += std::string(first ? "" : ",") + R"({"day":)" + json::Quote(day) + R"(,"gpuHours":)" + Num(g.gpu) +
             R"(,"weightedGpuHours":)" + Num(g.weighted) + RunsJson(g.waits, runs) + "}";
      first = false;
    }
    out += "]}";
  }
  return out + "]";
}

// The runs that started in the window from the per-user stores: of the Teams there are (every
// store's with by=user, as the users' hours).
void AddRunStarts(const UsageQuery& query, const UsageInputs& in, Sums& rows, Sums& totals) {
  std::set<std::string> teams;
  for (const auto& t : in.teams) teams.insert(t->meta.name);
  for (const auto& store : in.users) {
    const bool teamed = teams.count(store.team) != 0;
    if (!teamed && query.by != "user") continue;
    for (const base::RunStartsDay& d : store.starts) {
      if (!rows.InWindow(d.day)) continue;
      if (teamed) totals.AddStarts("", d.day, d.total);
      if (query.by == "team") rows.AddStarts(store.team, d.day, d.total);
      if (query.by == "fleet") rows.AddStarts(d.fleet, d.day, d.total);
      const auto* named = query.by == "user" ? &d.by_user : query.by == "namespace" ? &d.by_namespace : nullptr;
      if (named == nullptr) continue;
      for (const auto& [name, waits] : *named) rows.AddStarts(name, d.day, waits);
    }
  }
}

}  // namespace

int ParseUsageQuery(const HttpRequestView& req, UsageQuery& out, std::string& message) {
  for (const char* key : {"since", "by"}) {
    if (std::find(req.repeated_query.begin(), req.repeated_query.end(), key) != req.repeated_query.end()) {
      message = std::string(key) + " must be given once (the query names it more than once)";
      return 400;
    }
  }
  if (auto it = req.query.find("since"); it != req.query.end() && !it->second.empty()) {
    auto d = k8s::ParseDurationStrict(it->second);
    if (!d.ok() || *d < kMinWindow || *d > kMaxWindow) {
      message = "since must be a duration from 1h to 90d (the usage history berth keeps), e.g. 7d or 12h";
      return 400;
    }
    out.since = it->second;
    out.window = *d;
  }
  if (auto it = req.query.find("by"); it != req.query.end() && !it->second.empty()) {
    if (std::none_of(std::begin(kUsageBys), std::end(kUsageBys), [&](const char* b) { return it->second == b; })) {
      message = "by must be team, namespace, user or fleet";
      return 400;
    }
    out.by = it->second;
  }
  return 0;
}

std::string UsageJson(const UsageQuery& query, const UsageInputs& in, base::TimePoint now) {
  const base::TimePoint first = sched::DayStart(now - query.window);
  const std::string from = sched::UtcDay(first), to = sched::UtcDay(now);
  Sums rows(from, to, in.cost_weights);
  Sums totals(from, to, in.cost_weights);
  for (const auto& team : in.teams) {
    for (const base::UsageDay& d : team->status.usage_history) {
      if (!rows.InWindow(d)) continue;
      totals.Add("", d, d.total);
      if (query.by == "team") rows.Add(team->meta.name, d, d.total);
      if (query.by == "fleet") rows.Add(d.fleet, d, d.total);
      if (query.by == "namespace") rows.AddNamed(d);
    }
  }
  if (query.by == "user") {
    for (const auto& store : in.users) {
      for (const base::UsageDay& d : store.history) {
        if (rows.InWindow(d)) rows.AddNamed(d);
      }
    }
  }
  if (in.runs_known) AddRunStarts(query, in, rows, totals);
  if (query.by == "user" && !in.only_user.empty()) {
    std::erase_if(rows.rows(), [&](const auto& r) { return r.first != in.only_user; });
  }
  const Row total = totals.rows().count("") ? totals.rows()[""] : Row{};
  std::string days;
  for (base::TimePoint t = first; t <= now; t += std::chrono::hours(24)) {
    days += (days.empty() ? "" : ",") + json::Quote(sched::UtcDay(t));
  }
  return R"({"kind":"Usage","apiVersion":"queue.berth.dev/v1alpha1","by":)" + json::Quote(query.by) + R"(,"since":)" +
         json::Quote(query.since) + R"(,"from":)" + json::Quote(from) + R"(,"to":)" + json::Quote(to) + R"(,"days":[)" + days +
         R"(],"total":{)" + HoursJson(total.hours, total.weighted) + RunsJson(total.waits, in.runs_known) + R"(},"rows":)" +
         RowsJson(rows.rows(), total.hours.gpu, in.runs_known) + "}";
}

}  // namespace berth::controller
