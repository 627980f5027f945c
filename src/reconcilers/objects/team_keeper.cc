#include "reconcilers/objects/team_keeper.h"

#include <algorithm>
#include <cmath>

#include "reconcilers/writers/run_status.h"
#include "reconcilers/writers/status_patch.h"

namespace berth::reconcilers {

namespace sched = scheduling;

double DecayedUsage(double hours, double rate, std::chrono::duration<double> dt, std::chrono::duration<double> half_life) {
  if (dt.count() <= 0) return hours;
  if (half_life.count() <= 0) return 0;  // no memory at all
  const double keep = std::exp2(-dt.count() / half_life.count());
  const double half_life_hours = half_life.count() / 3600.0;
  return hours * keep + rate * half_life_hours / std::log(2.0) * (1 - keep);
}

namespace {

// The namespaces of younger Teams that an older Team lists (a namespace belongs to the older Team
// that lists it, creation time then name, as scheduling::TeamBook counts it; issue 44): team -> one
// of them.
std::map<std::string, std::string> NamespaceConflicts(const std::vector<std::shared_ptr<const Team>>& teams) {
  std::vector<const Team*> sorted;
  for (const auto& t : teams) sorted.push_back(t.get());
  std::sort(sorted.begin(), sorted.end(), [](const Team* a, const Team* b) { return OlderTeam(*a, *b); });
  std::map<std::string, std::string> owner, conflicts;  // namespace -> team; team -> "ns (team)"
  for (const Team* t : sorted) {
    for (const auto& ns : t->spec.namespaces) {
      auto [it, added] = owner.emplace(ns, t->meta.name);
      if (!added && it->second != t->meta.name && !conflicts.count(t->meta.name)) {
        conflicts[t->meta.name] = "namespace " + ns + " belongs to Team " + it->second + " (the older Team that lists it)";
      }
    }
  }
  return conflicts;
}

api::ResourceAmounts AmountsOf(const std::array<bool, sched::kShareResources>& accounted,
                               const std::array<int64_t, sched::kShareResources>& v) {
  api::ResourceAmounts a;
  if (accounted[static_cast<int>(sched::ShareResource::kGpu)]) a.gpus = v[static_cast<int>(sched::ShareResource::kGpu)];
  if (accounted[static_cast<int>(sched::ShareResource::kCpu)]) a.cpu_milli = v[static_cast<int>(sched::ShareResource::kCpu)];
  if (accounted[static_cast<int>(sched::ShareResource::kMemory)]) {
    a.memory_bytes = v[static_cast<int>(sched::ShareResource::kMemory)];
  }
  return a;
}

// Usage compared for "what changed": a status that differs only in usage waits for the interval.
TeamStatus WithoutUsage(TeamStatus s) {
  s.gpu_hours = s.cpu_hours = 0;
  s.weighted_gpu_hours.reset();
  s.weighted_cpu_hours.reset();
  s.usage_updated_at.reset();
  return s;
}

}  // namespace

void TeamKeeper::Accrue(const std::vector<std::shared_ptr<const Team>>& teams, sched::TimePoint now) {
  std::map<std::string, Usage> next;
  for (const auto& t : teams) {
    auto it = usage_.find(t->meta.name);
    Usage u;
    if (it != usage_.end() && it->second.uid == t->meta.uid) {
      u = it->second;
    } else {
      // First seen (a start, a failover, a new Team): what the last writer wrote, decayed since.
      u.uid = t->meta.uid;
      u.gpu_hours = std::max(0.0, t->status.gpu_hours);
      u.cpu_hours = std::max(0.0, t->status.cpu_hours);
      u.at = t->status.usage_updated_at ? std::min(t->status.usage_updated_at->point(), now) : now;
      u.weighted_gpu_hours = std::max(0.0, t->status.weighted_gpu_hours.value_or(t->status.gpu_hours));
      u.weighted_cpu_hours = std::max(0.0, t->status.weighted_cpu_hours.value_or(t->status.cpu_hours));
    }
    const sched::Resources use = use_.count(t->meta.name) ? use_.at(t->meta.name) : sched::Resources{};
    const auto dt = std::chrono::duration<double>(now - u.at);
    const auto h = std::chrono::duration<double>(half_life_);
    u.gpu_hours = DecayedUsage(u.gpu_hours, static_cast<double>(use.gpus), dt, h);
    u.cpu_hours = DecayedUsage(u.cpu_hours, static_cast<double>(use.cpu_millis) / 1000.0, dt, h);
    const auto weighted = weighted_use_.find(t->meta.name);
    const sched::WeightedUse wuse = weighted != weighted_use_.end() ? weighted->second : sched::WeightedUse{};
    u.weighted_gpu_hours = DecayedUsage(u.weighted_gpu_hours, wuse.gpus, dt, h);
    u.weighted_cpu_hours = DecayedUsage(u.weighted_cpu_hours, wuse.cpus, dt, h);
    u.at = std::max(u.at, now);
    next.emplace(t->meta.name, std::move(u));
  }
  usage_ = std::move(next);
}

std::vector<sched::TeamSpec> TeamKeeper::Specs(sched::TimePoint now) {
  std::vector<std::shared_ptr<const Team>> teams = caches_.teams().List();
  Accrue(teams, now);
  std::vector<sched::TeamSpec> specs;
  if (teams.empty()) {
    published_.clear();
    published_at_.reset();
    return specs;
  }
  const bool publish = !published_at_ || now >= *published_at_ + interval_;
  if (publish) {
    published_.clear();
    for (const auto& [name, u] : usage_) published_[name] = {u.weighted_gpu_hours, u.weighted_cpu_hours};
    published_at_ = now;
  }
  MeasureBudgets(teams, publish, now);
  std::sort(teams.begin(), teams.end(), [](const auto& a, const auto& b) { return a->meta.name < b->meta.name; });
  specs.reserve(teams.size());
  for (const auto& t : teams) {
    auto p = published_.find(t->meta.name);
    // A Team new since the last publication: its usage as read now.
    const Usage& now_usage = usage_[t->meta.name];
    const auto usage = p != published_.end() ? p->second : std::make_pair(now_usage.weighted_gpu_hours, now_usage.weighted_cpu_hours);
    specs.push_back(TeamSpecOf(*t, usage.first, usage.second));
    if (auto b = budgets_.find(t->meta.name); b != budgets_.end()) specs.back().budgets = b->second.budgets;
  }
  return specs;
}

void TeamKeeper::MeasureBudgets(const std::vector<std::shared_ptr<const Team>>& teams, bool all, sched::TimePoint now) {
  std::map<std::string, Measured> next;
  for (const auto& t : teams) {
    if (t->spec.budgets.empty()) continue;
    auto it = budgets_.find(t->meta.name);
    if (!all && it != budgets_.end() && it->second.uid == t->meta.uid && it->second.generation == t->meta.generation) {
      next.emplace(t->meta.name, std::move(it->second));
      continue;
    }
    next.emplace(t->meta.name, Measured{t->meta.uid, t->meta.generation, MeasureTeamBudgets(*t, teams, held_, weights_, now)});
  }
  budgets_ = std::move(next);
}

std::optional<sched::TimePoint> TeamKeeper::Update(const ClusterView& view, uint64_t view_gen, sched::TimePoint now) {
  if (view.snapshot.teams.empty()) {
    use_.clear();
    weighted_use_.clear();
    held_.clear();
    report_.clear();
    return std::nullopt;
  }
  if (view_gen != use_gen_ || report_.empty()) {
    use_ = sched::RunningUseByTeam(view.snapshot);
    weighted_use_ = sched::WeightedUseByTeam(view.snapshot);
    held_ = sched::RunningUseByTeamAndFleet(view.snapshot);
    weights_.clear();
    for (const sched::FleetSpec& f : view.snapshot.fleets) weights_[f.name] = f.cost_weight;
    report_ = sched::TeamBook(view.snapshot).Report();
    use_gen_ = view_gen;
  }
  std::vector<std::shared_ptr<const Team>> teams = caches_.teams().List();
  conflicts_ = NamespaceConflicts(teams);
  // Due at every publication of usage (Specs), and whenever the rest differs.
  const bool due = published_at_ && *published_at_ == now;
  settled_ = Write(teams, due || !settled_, now);
  return published_at_ ? std::optional<sched::TimePoint>(*published_at_ + interval_) : std::nullopt;
}

TeamStatus TeamKeeper::StatusOf(const Team& team, const Usage& usage, sched::TimePoint now) const {
  TeamStatus s;
  for (const auto& row : report_) {
    if (row.team != team.meta.name) continue;
    api::TeamFleetStatus f;
    f.fleet = row.fleet;
    f.nominal = AmountsOf(row.accounted, row.nominal);
    f.used = AmountsOf(row.accounted, row.used);
    f.borrowed = AmountsOf(row.accounted, row.borrowed);
    f.lent = AmountsOf(row.accounted, row.lent);
    s.fleets.push_back(std::move(f));
  }
  s.gpu_hours = usage.gpu_hours;
  s.cpu_hours = usage.cpu_hours;
  s.weighted_gpu_hours = usage.weighted_gpu_hours;
  s.weighted_cpu_hours = usage.weighted_cpu_hours;
  s.usage_updated_at = Time(usage.at);
  s.observed_generation = team.meta.generation;
  s.conditions = team.status.conditions;
  if (auto b = budgets_.find(team.meta.name); b != budgets_.end()) {
    for (size_t i = 0; i < b->second.budgets.size() && i < team.spec.budgets.size(); ++i) {
      const sched::TeamBudget& m = b->second.budgets[i];
      const api::TeamBudget& spec = team.spec.budgets[i];
      api::TeamBudgetStatus e{spec.resource, spec.period, spec.fleet, spec.hours, m.used, std::nullopt};
      if (m.refills_at != sched::TimePoint{}) e.refills_at = Time(m.refills_at);
      s.budgets.push_back(std::move(e));
    }
  }
  auto conflict = conflicts_.find(team.meta.name);
  if (conflict != conflicts_.end()) {
    SetCondition(s.conditions, ConditionType::kConflict, ConditionStatus::kTrue, Reason::kNamespaceInAnotherTeam,
                 conflict->second, team.meta.generation, now);
  } else if (std::any_of(s.conditions.begin(), s.conditions.end(), [](const auto& c) { return c.type == ConditionType::kConflict; })) {
    SetCondition(s.conditions, ConditionType::kConflict, ConditionStatus::kFalse, Reason::kNoConflict, "", team.meta.generation, now);
  }
  return s;
}

bool TeamKeeper::Patch(const std::string& name, uint64_t ticket, const std::string& patch) {
  const WriteResult w = PatchStatus(*client_, k8s::resources::kTeams.Path("", name, "status"), patch);
  // Gone: deleted meanwhile, nothing to write (its usage leaves with it).
  const bool done = w.outcome == WriteOutcome::kWritten || w.outcome == WriteOutcome::kGone;
  if (!done) LogUnwritten("team " + name, w);
  written_.Finish(name, ticket, done);
  return done;
}

bool TeamKeeper::Write(const std::vector<std::shared_ptr<const Team>>& teams, bool due, sched::TimePoint now) {
  bool settled = true;
  for (const auto& t : teams) {
    auto u = usage_.find(t->meta.name);
    if (u == usage_.end()) continue;
    TeamStatus status = StatusOf(*t, u->second, now);
    const std::string name = t->meta.name;
    auto same = [due](const TeamStatus& a, const TeamStatus& b) { return !due && WithoutUsage(a) == WithoutUsage(b); };
    auto queue = [this, &name](uint64_t ticket, const TeamStatus& s) {
      auto patch = std::make_shared<const std::string>(api::TeamStatusPatch(s, ""));
      return dispatch_(PassWrite{.key = "team:" + name, .kind = WriteKind::kTeamStatus, .target = name,
                                 .body = [patch] { return *patch; },
                                 .write = [this, name, ticket, patch] { return Patch(name, ticket, *patch); },
                                 // Refused when carried out: not written (TakeFailures: written again).
                                 .refused = [this, name, ticket] { written_.Finish(name, ticket, false); }});
    };
    if (!written_.Offer(name, std::move(status), same, queue)) settled = false;
  }
  written_.Retain([this](const std::string& name) { return usage_.count(name) != 0; });
  return settled;
}

void TeamKeeper::TakeFailures() {
  if (written_.Settle()) settled_ = false;
}

std::optional<std::pair<double, double>> TeamKeeper::UsageOf(const std::string& team) const {
  auto it = usage_.find(team);
  if (it == usage_.end()) return std::nullopt;
  return std::make_pair(it->second.gpu_hours, it->second.cpu_hours);
}

}  // namespace berth::reconcilers
