#include "reconcilers/objects/team_budgets.h"

#include <algorithm>
#include <chrono>

#include "k8s/timefmt.h"

namespace berth::reconcilers {

namespace sched = scheduling;

namespace {

constexpr sched::Duration kHour = std::chrono::hours(1);
constexpr sched::Duration kDay = std::chrono::hours(24);

double Weight(const std::map<std::string, double>& weights, const std::string& fleet) {
  auto w = weights.find(fleet);
  return w == weights.end() ? 1.0 : std::max(w->second, 0.0);
}

double Of(const base::UsageHours& h, const std::string& resource) {
  return resource == "cpu" ? h.cpu : resource == "memory" ? h.memory_gib : h.gpu;
}

// Per hour of the running use of a resource (GPUs, CPUs, GiB).
double PerHour(const sched::Resources& r, const std::string& resource) {
  if (resource == "cpu") return static_cast<double>(r.cpu_millis) / 1000.0;
  if (resource == "memory") return static_cast<double>(r.memory_bytes) / static_cast<double>(int64_t{1} << 30);
  return static_cast<double>(r.gpus);
}

sched::TimePoint HourFloor(sched::TimePoint t) {
  return sched::TimePoint(t.time_since_epoch() - (t.time_since_epoch() % kHour + kHour) % kHour);
}

sched::BudgetResource ResourceOf(const std::string& r) {
  return r == "cpu" ? sched::BudgetResource::kCpu : r == "memory" ? sched::BudgetResource::kMemory : sched::BudgetResource::kGpu;
}

// The team and its sub-teams (a parent's budget counts theirs).
std::vector<const Team*> WithChildren(const Team& team, const std::vector<std::shared_ptr<const Team>>& teams) {
  std::vector<const Team*> out{&team};
  for (const auto& t : teams) {
    if (t->spec.parent == team.meta.name && t->meta.name != team.meta.name) out.push_back(t.get());
  }
  return out;
}

}  // namespace

std::vector<sched::UsedHour> UsedHours(const Team& team, const std::string& resource, const std::string& fleet,
                                       const std::map<std::string, double>& weights, sched::TimePoint since) {
  std::map<sched::TimePoint, double> hours;
  const std::optional<sched::TimePoint> folded =
      team.status.usage_folded_until ? std::optional<sched::TimePoint>(team.status.usage_folded_until->point()) : std::nullopt;
  if (!folded) return {};
  for (const base::UsageDay& d : team.status.usage_history) {
    if (!fleet.empty() && d.fleet != fleet) continue;
    auto parsed = k8s::ParseRfc3339(d.day + "T00:00:00Z");
    if (!parsed.ok()) continue;
    const sched::TimePoint start = std::chrono::time_point_cast<sched::Duration>(*parsed);
    if (start + kDay <= since) continue;
    const double w = Weight(weights, d.fleet);
    if (!d.hourly.empty()) {
      for (const auto& [h, amount] : d.hourly) hours[start + h * kHour] += w * Of(amount, resource);
      continue;
    }
    // No hourly detail: the day's total spread evenly over the part of it folded.
    const sched::Duration part = std::min(start + kDay, *folded) - start;
    if (part <= sched::Duration::zero()) continue;
    for (sched::TimePoint h = start; h < start + part; h += kHour) {
      const double share = std::chrono::duration<double>(std::min(h + kHour, start + part) - h) / part;
      hours[h] += w * Of(d.total, resource) * share;
    }
  }
  std::vector<sched::UsedHour> out;
  for (const auto& [start, amount] : hours) {
    if (start + kHour > since && amount > 0) out.push_back(sched::UsedHour{start, amount});
  }
  return out;
}

std::vector<sched::TeamBudget> MeasureTeamBudgets(const Team& team, const std::vector<std::shared_ptr<const Team>>& teams,
                                                  const HeldByFleet& held, const std::map<std::string, double>& weights,
                                                  sched::TimePoint now) {
  std::vector<sched::TeamBudget> out;
  const std::vector<const Team*> members = WithChildren(team, teams);
  for (const api::TeamBudget& spec : team.spec.budgets) {
    sched::TeamBudget b;
    b.resource = ResourceOf(spec.resource);
    b.fleet = spec.fleet;
    b.hours = spec.hours;
    b.period = std::max<sched::Duration>(spec.period_ms, kHour);
    const sched::TimePoint since = now - b.period;
    std::map<sched::TimePoint, double> hours;
    double rate = 0;
    for (const Team* m : members) {
      for (const sched::UsedHour& h : UsedHours(*m, spec.resource, spec.fleet, weights, since)) hours[h.start] += h.amount;
      // What its running runs hold: from usageFoldedUntil (or now, without a fold yet) to now, and on.
      double running = 0;
      if (auto it = held.find(m->meta.name); it != held.end()) {
        for (const auto& [fleet, use] : it->second) {
          if (spec.fleet.empty() || spec.fleet == fleet) running += Weight(weights, fleet) * PerHour(use, spec.resource);
        }
      }
      rate += running;
      const sched::TimePoint from =
          std::max(since, m->status.usage_folded_until ? std::min(m->status.usage_folded_until->point(), now) : now);
      for (sched::TimePoint h = HourFloor(from); h < now && running > 0; h += kHour) {
        const sched::TimePoint a = std::max(h, from), z = std::min(h + kHour, now);
        if (z > a) hours[h] += running * std::chrono::duration<double, std::ratio<3600>>(z - a).count();
      }
    }
    std::vector<sched::UsedHour> used;
    used.reserve(hours.size());
    for (const auto& [start, amount] : hours) used.push_back(sched::UsedHour{start, amount});
    sched::MeasureBudget(b, used, rate, now);
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace berth::reconcilers
