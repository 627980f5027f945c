#include "scheduling/estimate.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "scheduling/cycle_result.h"
#include "scheduling/quota.h"
#include "scheduling/scheduler.h"

namespace berth::scheduling {
namespace {

// The forecast's state between cycles.
class Forecast {
 public:
  Forecast(EstimateInput in, const EstimateOptions& o)
      : sim_(std::move(in.snapshot)), queue_(o.aging_interval), runtime_(std::move(in.runtime)), now_(in.now), o_(o) {
    // The scheduler sees each run's expected end as the engine gives it (start + maxDuration:
    // reservations and backfill rest on it); the forecast ends runs when they are expected to
    // end (a learned end where there is one).
    for (const RunningRun& r : sim_.running) {
      if (auto it = in.running_end.find(r.id); it != in.running_end.end()) {
        end_[r.id] = it->second;
      } else if (r.expected_end) {
        end_[r.id] = *r.expected_end;
      }
    }
    for (PendingRun& r : in.queued) {
      priority_[r.id] = r.priority;
      if (!r.fleets.empty()) fleets_[r.id] = r.fleets;
      if (r.max_duration) max_duration_[r.id] = *r.max_duration;
      if (!r.quota_counted.empty()) quota_counted_[r.id] = r.quota_counted;
      queue_.Upsert(std::move(r));
    }
  }

  std::vector<StartEstimate> Run() {
    TimePoint t = now_;
    CycleResult result;
    for (int cycles = 0; !queue_.empty(); ++cycles) {
      if (cycles >= o_.max_cycles) return Finish(EstimateUnknown::kBudget);
      result = Schedule(sim_, queue_, t, true, std::move(result));
      if (cycles == 0) FirstCycle(result);
      Apply(result, t);
      if (queue_.empty()) break;
      if (!result.preemptions.empty()) continue;  // the nominees take their room at the same instant
      const std::optional<TimePoint> next = NextEnd(t);
      if (!next) return Finish(EstimateUnknown::kNoKnownEnd);
      if (*next - now_ > o_.horizon) return Finish(EstimateUnknown::kBeyondHorizon);
      t = std::max(*next, t + MinGap(t));
      EndRunsBy(t);
    }
    return Finish(EstimateUnknown::kNone);
  }

 private:
  // The cycle at `now`: queue order, the runs that can never start, and what would start them
  // at once.
  void FirstCycle(const CycleResult& r) {
    for (const Placement& p : r.placements) order_.push_back(p.run_id);
    for (const WaitingRun& w : r.waiting) {
      order_.push_back(w.run_id);
      StartEstimate& e = estimates_[w.run_id];
      if (w.unschedulable()) {
        // It stays so in a forecast without new fleets: it leaves the queue.
        e.unknown = EstimateUnknown::kUnschedulable;
        queue_.Remove(w.run_id);
      } else if (w.reason.code == WaitCode::kReserved && r.reservation && r.reservation->earliest_start &&
                 *r.reservation->earliest_start > now_) {
        e.start_now_bound = *r.reservation->earliest_start - now_;
      } else if (w.reason.code == WaitCode::kLifetimeTooShort && w.reason.lifetime_left > Duration::zero()) {
        e.start_now_bound = w.reason.lifetime_left;
      }
    }
  }

  void Apply(const CycleResult& r, TimePoint t) {
    for (const Placement& p : r.placements) {
      estimates_[p.run_id].start = t;
      RunningRun run;
      run.id = p.run_id;
      for (const RankPlacement& rank : p.ranks) run.placement.push_back({rank.instance, rank.blocks});
      if (auto it = max_duration_.find(p.run_id); it != max_duration_.end()) run.expected_end = t + it->second;
      if (auto it = runtime_.find(p.run_id); it != runtime_.end()) end_[p.run_id] = t + it->second;
      run.quota_pending = true;  // its usage counts toward its namespace's quota
      // ... instead of its Pods that existed while it waited (PendingRun::quota_counted).
      if (auto it = quota_counted_.find(p.run_id); it != quota_counted_.end()) {
        for (NamespaceQuota& q : sim_.quotas) {
          if (q.ns == NamespaceOf(p.run_id)) AddCounted(q, it->second, -1);
        }
      }
      sim_.running.push_back(std::move(run));
      sim_.placed_runs.push_back({p.run_id, priority_[p.run_id], t});
      CountStarted(p);
      queue_.Remove(p.run_id);
      std::erase_if(sim_.nominations, [&](const Nomination& n) { return n.run_id == p.run_id; });
    }
    for (const PreemptionDecision& d : r.preemptions) {
      const std::set<std::string> victims(d.plan.victims.begin(), d.plan.victims.end());
      Drop(victims);
      sim_.nominations.push_back({d.run_id, d.plan.fleet, d.plan.instances, d.plan.victims, false});
    }
    last_wait_.clear();
    for (const WaitingRun& w : r.waiting) last_wait_[w.run_id] = w.reason.code;
  }

  // runsStarted per instance (a fleet's maxRunsPerInstance counts them).
  void CountStarted(const Placement& p) {
    if (instance_index_.empty()) {
      for (size_t i = 0; i < sim_.instances.size(); ++i) instance_index_.emplace(sim_.instances[i].name, i);
    }
    for (const RankPlacement& rank : p.ranks) {
      if (auto it = instance_index_.find(rank.instance); it != instance_index_.end()) ++sim_.instances[it->second].runs_started;
    }
  }

  // The least time between two cycles at `t`: `step`, or a share of the time from now.
  Duration MinGap(TimePoint t) const {
    const auto share = std::chrono::duration_cast<Duration>(std::chrono::duration<double, Duration::period>(
        static_cast<double>((t - now_).count()) * o_.step_fraction));
    return std::max(o_.step, share);
  }

  // The next time after t when a running run ends or a spent budget refills (issue 47: a run its
  // team's budget holds starts then, at the earliest; the forecast does not count the team's own
  // later use against the budget).
  std::optional<TimePoint> NextEnd(TimePoint t) const {
    std::optional<TimePoint> next;
    for (const auto& [id, end] : end_) {
      if (end > t && (!next || end < *next)) next = end;
    }
    for (const TeamSpec& team : sim_.teams) {
      for (const TeamBudget& b : team.budgets) {
        if (b.refills_at > t && (!next || b.refills_at < *next)) next = b.refills_at;
      }
    }
    return next;
  }

  void EndRunsBy(TimePoint t) {
    std::set<std::string> ended;
    for (const auto& [id, end] : end_) {
      if (end <= t) ended.insert(id);
    }
    Drop(ended);
  }

  void Drop(const std::set<std::string>& ids) {
    std::erase_if(sim_.running, [&](const RunningRun& r) { return ids.count(r.id) != 0; });
    std::erase_if(sim_.placed_runs, [&](const PlacedRunInfo& r) { return ids.count(r.id) != 0; });
    for (const std::string& id : ids) end_.erase(id);
  }

  // Estimates in queue order at `now`; runs still queued are unknown for `why`, or for the reason
  // they last waited when it says more.
  std::vector<StartEstimate> Finish(EstimateUnknown why) {
    std::vector<StartEstimate> out;
    out.reserve(order_.size());
    for (const std::string& id : order_) {
      StartEstimate e = std::move(estimates_[id]);
      e.run_id = id;
      if (!e.start && e.unknown == EstimateUnknown::kNone) {
        const auto w = last_wait_.find(id);
        const WaitCode code = w == last_wait_.end() ? WaitCode::kNotEnoughFreeBlocks : w->second;
        e.unknown = code == WaitCode::kQuotaExceeded ? EstimateUnknown::kQuota
                    : code == WaitCode::kTeamShare && why == EstimateUnknown::kNoKnownEnd ? EstimateUnknown::kTeamShare
                    : why == EstimateUnknown::kNone ? EstimateUnknown::kNoKnownEnd
                                                    : why;
        if (e.unknown == EstimateUnknown::kNoKnownEnd) e.no_end_run = NoEndRunFor(id);
      }
      out.push_back(std::move(e));
    }
    return out;
  }

  // The run without a known end that `id` waits behind: of the runs holding blocks on one of its
  // fleets with no end in the forecast, one running at `now` (the least id), else the first the
  // forecast started; "" when none. It depends only on the run's fleets (the forecast is over):
  // found once per list of fleets, not once per run (100,000 unknown runs behind 8,000 running).
  const std::string& NoEndRunFor(const std::string& id) {
    const auto fleets = fleets_.find(id);
    static const std::vector<std::string> kAnyFleet;
    const std::vector<std::string>& key = fleets == fleets_.end() ? kAnyFleet : fleets->second;
    auto known = no_end_by_fleets_.find(key);
    if (known == no_end_by_fleets_.end()) known = no_end_by_fleets_.emplace(key, NoEndRunOn(fleets)).first;
    return known->second;
  }

  std::string NoEndRunOn(std::map<std::string, std::vector<std::string>>::const_iterator fleets) {
    if (instance_index_.empty()) {
      for (size_t i = 0; i < sim_.instances.size(); ++i) instance_index_.emplace(sim_.instances[i].name, i);
    }
    const auto on_fleet = [&](const RunningRun& r) {
      if (fleets == fleets_.end()) return true;
      return std::any_of(r.placement.begin(), r.placement.end(), [&](const InstanceBlocks& b) {
        const auto i = instance_index_.find(b.instance);
        return i != instance_index_.end() &&
               std::find(fleets->second.begin(), fleets->second.end(), sim_.instances[i->second].fleet) != fleets->second.end();
      });
    };
    const std::string* best = nullptr;
    std::optional<TimePoint> best_start;  // nullopt: running at now
    for (const RunningRun& r : sim_.running) {
      if (end_.count(r.id) != 0 || !on_fleet(r)) continue;
      const auto e = estimates_.find(r.id);
      const std::optional<TimePoint> start = e == estimates_.end() ? std::nullopt : e->second.start;
      const bool better = best == nullptr || (start.has_value() != best_start.has_value() ? !start.has_value()
                                              : start && *start != *best_start       ? *start < *best_start
                                                                                     : r.id < *best);
      if (better) {
        best = &r.id;
        best_start = start;
      }
    }
    return best == nullptr ? std::string() : *best;
  }

  ClusterSnapshot sim_;
  RunQueue queue_;
  std::map<std::string, Duration> runtime_;
  std::map<std::string, int32_t> priority_;
  std::map<std::string, Duration> max_duration_;  // what the engine's expected end rests on
  std::map<std::string, std::vector<std::string>> fleets_;  // of the queued runs that name some
  std::map<std::string, std::map<std::string, int64_t>> quota_counted_;  // of the queued runs that have some
  std::map<std::string, TimePoint> end_;          // when the forecast ends each running run
  TimePoint now_;
  EstimateOptions o_;
  std::vector<std::string> order_;
  std::map<std::string, StartEstimate> estimates_;
  std::map<std::string, WaitCode> last_wait_;
  std::map<std::string, size_t> instance_index_;  // instance name -> index in sim_.instances
  std::map<std::vector<std::string>, std::string> no_end_by_fleets_;  // NoEndRunFor by fleets ({}: any)
};

}  // namespace

std::string_view ExplainUnknown(EstimateUnknown why) {
  switch (why) {
    case EstimateUnknown::kNone:
      return "";
    case EstimateUnknown::kUnschedulable:
      return "it cannot be scheduled on any fleet as it is";
    case EstimateUnknown::kNoKnownEnd:
      return "the capacity it waits for is held by runs without a known end (no maxDuration)";
    case EstimateUnknown::kQuota:
      return "it waits for its namespace's ResourceQuota, whose usage is not forecast";
    case EstimateUnknown::kTeamShare:
      return "it waits for its team's share, and no run with a known end frees it";
    case EstimateUnknown::kBeyondHorizon:
      return "it would start beyond the forecast's horizon";
    case EstimateUnknown::kBudget:
      return "the forecast stopped at its budget before it started";
    case EstimateUnknown::kQueueDepth:
      return "more runs wait ahead of it than the forecast looks at";
  }
  return "";
}

std::string ExplainEstimate(const StartEstimate& e) {
  if (e.unknown != EstimateUnknown::kNoKnownEnd || e.no_end_run.empty()) return std::string(ExplainUnknown(e.unknown));
  const std::string_view ns = NamespaceOf(e.run_id);
  if (NamespaceOf(e.no_end_run) != ns) {
    return "a run of another namespace ahead of it has no maxDuration and no finished runs like it";
  }
  const size_t slash = e.no_end_run.find('/');
  return (slash == std::string::npos ? e.no_end_run : e.no_end_run.substr(slash + 1)) +
         " has no maxDuration and no finished runs like it";
}

namespace {

// A fixed point in [0, 1) for `id`, the same in every build: FNV-1a, then splitmix64's finalizer
// (FNV alone barely changes its top bits for ids that differ in their last character).
double UnitHash(const std::string& id) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : id) h = (h ^ c) * 1099511628211ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  h ^= h >> 31;
  return static_cast<double>(h >> 11) / static_cast<double>(uint64_t{1} << 53);
}

template <typename T>
const T& Draw(const std::vector<T>& sorted, double u, int k, int samples) {
  double q = u + (k + 0.5) / samples;
  q -= static_cast<int>(q);
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * static_cast<double>(sorted.size())))];
}

// Forecast k of `samples`: each run with a spread at its draw.
EstimateInput Sample(const EstimateInput& in, int k, int samples) {
  EstimateInput one = in;
  one.runtime_spread.clear();
  one.running_end_spread.clear();
  for (const auto& [id, spread] : in.runtime_spread) {
    if (spread.size() > 1) one.runtime[id] = Draw(spread, UnitHash(id), k, samples);
  }
  for (const auto& [id, spread] : in.running_end_spread) {
    if (spread.size() > 1) one.running_end[id] = Draw(spread, UnitHash(id), k, samples);
  }
  return one;
}

}  // namespace

std::optional<TimePoint> Percentile(const std::vector<TimePoint>& sorted, size_t n, double q) {
  if (n == 0 || sorted.empty()) return std::nullopt;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1);
  const auto lo = static_cast<size_t>(rank);
  const size_t hi = std::min(lo + 1, n - 1);
  if (hi >= sorted.size() && rank > static_cast<double>(lo)) return std::nullopt;
  if (lo >= sorted.size()) return std::nullopt;
  const TimePoint a = sorted[lo];
  if (hi == lo || rank == static_cast<double>(lo)) return a;
  const double frac = rank - static_cast<double>(lo);
  return a + std::chrono::duration_cast<Duration>((sorted[hi] - a) * frac);
}

void EstimateCalibration::Observe(TimePoint at, TimePoint start, const std::optional<StartRange>& sampled,
                                  TimePoint actual) {
  const std::chrono::duration<double> wait = start - at;
  if (wait < std::chrono::minutes(1) || window_ == 0) return;
  const StartRange shown = sampled.value_or(StartRange{start, start});
  const std::chrono::duration<double> outside = std::max(shown.earliest - actual, actual - shown.latest);
  const double score = outside / wait;
  if (scores_.size() < window_) {
    scores_.push_back(score);
  } else {
    scores_[next_] = score;
    next_ = (next_ + 1) % window_;
  }
  if (scores_.size() < kMinObservations) return;
  std::vector<double> sorted = scores_;
  std::sort(sorted.begin(), sorted.end());
  // The ceil((n + 1) x coverage)-th smallest: split conformal prediction's finite-sample rank.
  const double n = static_cast<double>(sorted.size());
  const auto rank = static_cast<size_t>(std::ceil((n + 1) * coverage_));
  margin_ = std::max(0.0, sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1]);
}

std::optional<StartRange> EstimateCalibration::Range(TimePoint now, TimePoint start,
                                                     const std::optional<StartRange>& sampled) const {
  if (start <= now) return std::nullopt;
  if (!margin_) return sampled;
  const StartRange base = sampled.value_or(StartRange{start, start});
  const auto widen = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(start - now) * *margin_);
  return StartRange{std::max(now, base.earliest - widen), base.latest + widen};
}

std::vector<StartEstimate> EstimateStarts(EstimateInput input, const EstimateOptions& options) {
  const bool spread = std::any_of(input.runtime_spread.begin(), input.runtime_spread.end(),
                                  [](const auto& e) { return e.second.size() > 1; }) ||
                      std::any_of(input.running_end_spread.begin(), input.running_end_spread.end(),
                                  [](const auto& e) { return e.second.size() > 1; });
  if (options.samples <= 1 || !spread) return Forecast(std::move(input), options).Run();
  struct Draws {
    std::vector<TimePoint> starts;
    EstimateUnknown why = EstimateUnknown::kNone;  // the first forecast's reason where it had none
    std::string no_end_run;                        // ... and the run it named
  };
  std::map<std::string, Draws> draws;
  std::vector<StartEstimate> first;
  for (int k = 0; k < options.samples; ++k) {
    std::vector<StartEstimate> one = Forecast(Sample(input, k, options.samples), options).Run();
    for (const StartEstimate& e : one) {
      Draws& d = draws[e.run_id];
      if (e.start) {
        d.starts.push_back(*e.start);
      } else if (d.why == EstimateUnknown::kNone) {
        d.why = e.unknown;
        d.no_end_run = e.no_end_run;
      }
    }
    if (k == 0) first = std::move(one);
  }
  const size_t half = static_cast<size_t>(options.samples) / 2;
  for (StartEstimate& e : first) {
    Draws& d = draws[e.run_id];
    if (d.starts.size() <= half) {  // unknown in half of the forecasts or more
      e.start.reset();
      e.unknown = d.why;
      e.no_end_run = d.no_end_run;
      continue;
    }
    // The median of all `samples` starts, the unknown ones counted as the latest.
    std::sort(d.starts.begin(), d.starts.end());
    e.start = d.starts[half];
    e.unknown = EstimateUnknown::kNone;
    e.no_end_run.clear();
    const size_t n = static_cast<size_t>(options.samples);
    const std::optional<TimePoint> earliest = Percentile(d.starts, n, 0.1), latest = Percentile(d.starts, n, 0.9);
    if (earliest && latest) e.range = StartRange{*earliest, *latest};
  }
  return first;
}

}  // namespace berth::scheduling
