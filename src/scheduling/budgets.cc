// Issue 47 (3): budgets that queue. A Team's budget (TeamBudget, snapshot.h) holds its runs
// while it is spent; the cycle asks TeamBook::Spent for each candidate fleet of a run (cycle.h,
// Cycle::DropSpentFleets) and a run whose every fleet is held waits with kBudgetExhausted.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>
#include <string>
#include <string_view>

#include "scheduling/budgets.h"
#include "scheduling/snapshot.h"
#include "scheduling/teams.h"

namespace berth::scheduling {

std::string_view BudgetResourceName(BudgetResource r) {
  switch (r) {
    case BudgetResource::kGpu:
      return "gpu";
    case BudgetResource::kCpu:
      return "cpu";
    case BudgetResource::kMemory:
      return "memory";
  }
  return "gpu";
}

namespace {

// Whether the run's request asks for the budget's resource (a run that asks for no GPU is not held
// by a GPU budget).
bool Asks(BudgetResource r, const Resources& request) {
  switch (r) {
    case BudgetResource::kGpu:
      return request.gpus > 0;
    case BudgetResource::kCpu:
      return request.cpu_millis > 0;
    case BudgetResource::kMemory:
      return request.memory_bytes > 0;
  }
  return false;
}

// Hours with at most one decimal: "5000", "5012.5"; under one hour two significant digits, so
// that a small budget reads as written ("0.05", not "0.1").
std::string Hours(double h) {
  if (h > 0 && h < 0.95) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", h);
    return buf;
  }
  const double tenths = std::round(h * 10);
  std::string s = std::to_string(static_cast<long long>(tenths / 10));
  const long long frac = static_cast<long long>(std::fabs(std::fmod(tenths, 10.0)));
  return frac == 0 ? s : s + "." + std::to_string(frac);
}

// 2026-12-03T10:00:00Z (UTC; the calendar arithmetic of the C library, no clock read).
std::string Utc(TimePoint t) {
  const std::time_t secs = std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

namespace {

constexpr Duration kHour = std::chrono::hours(1);

double Hours(Duration d) { return std::chrono::duration<double, std::ratio<3600>>(d).count(); }

// The window's usage at `t` >= now: the part of each past hour inside [t - period, now] (an hour
// is used evenly over it; the current one over [start, now)), plus `rate` per hour since now.
double WindowAt(const std::vector<UsedHour>& used, Duration period, double rate, TimePoint now, TimePoint t) {
  const TimePoint from = t - period;
  double sum = rate * Hours(t - now);
  for (const UsedHour& h : used) {
    const TimePoint end = std::min(h.start + kHour, now);
    if (end <= h.start || end <= from) continue;
    const TimePoint begin = std::max(h.start, from);
    sum += h.amount * Hours(end - begin) / Hours(end - h.start);
  }
  return sum;
}

}  // namespace

void MeasureBudget(TeamBudget& budget, const std::vector<UsedHour>& used, double rate, TimePoint now) {
  const Duration period = std::max(budget.period, kHour);
  budget.used = WindowAt(used, period, 0, now, now);
  budget.refills_at = TimePoint{};
  if (budget.used < budget.hours) return;
  // The window's usage is linear in t between the times an hour starts or ends leaving it: find the
  // first such time where it is under `hours`, then the instant inside the segment before it.
  std::vector<TimePoint> points;
  for (const UsedHour& h : used) {
    for (TimePoint p : {h.start + period, std::min(h.start + kHour, now) + period}) {
      if (p > now) points.push_back(p);
    }
  }
  points.push_back(now + period);
  std::sort(points.begin(), points.end());
  TimePoint prev = now;
  double prev_w = budget.used;
  for (TimePoint p : points) {
    const double w = WindowAt(used, period, rate, now, p);
    if (w < budget.hours) {
      // prev_w >= hours > w: where the line between them crosses `hours` (rounded up to a second).
      const double f = (prev_w - budget.hours) / (prev_w - w);
      const auto at = prev + std::chrono::duration_cast<Duration>(std::chrono::duration<double, std::milli>(
                                 f * static_cast<double>((p - prev).count())));
      budget.refills_at = std::chrono::time_point_cast<Duration>(std::chrono::ceil<std::chrono::seconds>(at + Duration(1)));
      return;
    }
    prev = p;
    prev_w = w;
  }
}

std::string BudgetSentence(const WaitReason& r) {
  if (!r.budget) return "its team's budget is spent";  // (every kBudgetExhausted has one)
  const TeamBudget& b = r.budget->budget;
  std::string s = "team " + r.budget->team + " has used " + Hours(b.used) + " of its " + Hours(b.hours) + " " +
                  std::string(BudgetResourceName(b.resource)) + "-hours over " + FormatDuration(b.period) + " on " +
                  (b.fleet.empty() ? std::string("all fleets") : "fleet " + b.fleet);
  s += b.refills_at == TimePoint{} ? std::string("; the budget refills when its usage falls under it")
                                   : "; the budget refills at " + Utc(b.refills_at);
  return s;
}

TeamBook::SpentBudget TeamBook::Spent(int32_t team, std::string_view fleet, const Resources& request,
                                      TimePoint now) const {
  if (team < 0 || static_cast<size_t>(team) >= budgets_.size()) return {};
  for (int32_t t : {team, teams_[team].parent}) {
    if (t < 0 || budgets_[t] == nullptr) continue;
    for (const TeamBudget& b : *budgets_[t]) {
      if ((b.fleet.empty() || b.fleet == fleet) && Asks(b.resource, request) && b.Spent(now)) {
        return SpentBudget{&b, teams_[t].name};
      }
    }
  }
  return {};
}

}  // namespace berth::scheduling
