#include "scheduling/teams.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <tuple>

#include "scheduling/block_layout.h"
#include "scheduling/quota.h"

namespace berth::scheduling {

namespace {

constexpr int64_t kNoLimit = -1;

int64_t Amount(const std::optional<int64_t>& v, int64_t absent) {
  return v ? std::max<int64_t>(*v, 0) : absent;
}

std::array<std::optional<int64_t>, kShareResources> Fields(const ResourceAmounts& a) {
  return {a.gpus, a.cpu_millis, a.memory_bytes};
}

}  // namespace

std::string FormatShareAmount(ShareResource r, int64_t amount, bool bare) {
  switch (r) {
    case ShareResource::kGpu: return FormatQuotaAmount("requests.nvidia.com/gpu", amount, bare);
    case ShareResource::kCpu: return FormatQuotaAmount(kQuotaCpu, amount, bare);
    case ShareResource::kMemory: return FormatQuotaAmount(kQuotaMemory, amount, bare);
  }
  return std::to_string(amount);
}

TeamBook::Amounts TeamBook::AmountsOf(const Resources& r) {
  return {std::max<int64_t>(r.gpus, 0), std::max<int64_t>(r.cpu_millis, 0), std::max<int64_t>(r.memory_bytes, 0)};
}

bool TeamPrecedes(const TeamSpec& a, const TeamSpec& b) {
  return a.created != b.created ? a.created < b.created : a.name < b.name;
}

TeamBook::TeamBook(const ClusterSnapshot& snapshot) {
  if (snapshot.teams.empty()) return;
  active_ = true;
  const std::vector<const TeamSpec*> specs = AddTeams(snapshot.teams);
  // Fleets named by some share.
  FleetSpecs fleet_specs;
  for (const FleetSpec& f : snapshot.fleets) fleet_specs.emplace(f.name, &f);
  AddShares(specs, fleet_specs);
  for (const FleetSpec& f : snapshot.fleets) {
    if (!fleets_.count(f.name)) pools_.try_emplace(f.name);
  }
  AddCapacityAndUse(snapshot, fleet_specs);
}

bool TeamBook::Contenders::Add(int32_t team) {
  if (several || first == team) return false;
  if (first < 0) {
    first = team;
  } else {
    several = true;
  }
  return true;
}

void TeamBook::NoteQueued(const RunQueue& queue) {
  if (!active_ || pools_.empty()) return;
  auto all_competed = [&] {
    return std::all_of(pools_.begin(), pools_.end(), [&](const auto& p) { return p.second.With(any_fleet_); });
  };
  if (all_competed()) return;
  for (RunQueue::Item item : queue) {
    const int32_t team = TeamOf(item.run.id);
    bool more = false;
    if (item.run.fleets.empty()) {
      more = any_fleet_.Add(team);
    } else {
      for (const std::string& f : item.run.fleets) {
        auto p = pools_.find(f);
        if (p != pools_.end()) more |= p->second.Add(team);
      }
    }
    if (more && all_competed()) return;
  }
}

bool TeamBook::Competed(std::string_view fleet) const {
  auto p = pools_.find(fleet);
  return p != pools_.end() && p->second.With(any_fleet_);
}

std::vector<const TeamSpec*> TeamBook::AddTeams(const std::vector<TeamSpec>& teams) {
  // Teams by name (the first of a name wins), the implicit team last.
  std::vector<const TeamSpec*> specs;
  for (const TeamSpec& t : teams) specs.push_back(&t);
  std::stable_sort(specs.begin(), specs.end(), [](const TeamSpec* a, const TeamSpec* b) { return a->name < b->name; });
  specs.erase(std::unique(specs.begin(), specs.end(), [](const TeamSpec* a, const TeamSpec* b) { return a->name == b->name; }),
              specs.end());
  std::map<std::string_view, int32_t> index;
  for (const TeamSpec* t : specs) {
    index.emplace(t->name, static_cast<int32_t>(teams_.size()));
    teams_.push_back(Team{t->name, -1, std::max<int32_t>(t->weight, 1), std::max(t->gpu_hours, 0.0),
                          std::max(t->cpu_hours, 0.0)});
  }
  implicit_ = static_cast<int32_t>(teams_.size());
  teams_.push_back(Team{"", -1, 1, 0, 0});
  for (const TeamSpec* t : specs) budgets_.push_back(t->budgets.empty() ? nullptr : &t->budgets);
  budgets_.push_back(nullptr);
  // Parents: two levels at most (a parent that has a parent itself, or is the team, is ignored).
  for (size_t x = 0; x < specs.size(); ++x) {
    auto p = index.find(specs[x]->parent);
    if (p == index.end() || p->second == static_cast<int32_t>(x)) continue;
    auto grand = index.find(specs[p->second]->parent);
    if (grand != index.end() && grand->second != p->second) continue;
    teams_[x].parent = p->second;
  }
  for (size_t x = 0; x < specs.size(); ++x) {
    if (teams_[x].parent >= 0) {
      teams_[teams_[x].parent].gpu_hours += teams_[x].gpu_hours;
      teams_[teams_[x].parent].cpu_hours += teams_[x].cpu_hours;
    }
  }
  // A namespace two Teams list: the older keeps it.
  std::vector<int32_t> order(specs.size());
  for (size_t x = 0; x < specs.size(); ++x) order[x] = static_cast<int32_t>(x);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return TeamPrecedes(*specs[a], *specs[b]); });
  for (int32_t x : order) {
    for (const std::string& ns : specs[x]->namespaces) by_namespace_.emplace(ns, x);
  }
  return specs;
}

void TeamBook::AddShares(const std::vector<const TeamSpec*>& specs, const FleetSpecs& fleet_specs) {
  for (size_t x = 0; x < specs.size(); ++x) {
    std::set<std::string_view> seen;  // the first share of a fleet wins
    for (const TeamShare& s : specs[x]->shares) {
      if (!fleet_specs.count(s.fleet) || !seen.insert(s.fleet).second) continue;
      auto [it, added] = fleets_.try_emplace(s.fleet);
      FleetBook& book = it->second;
      if (added) {
        book.shares.assign(teams_.size(), Share{{}, {kNoLimit, kNoLimit, kNoLimit}, {kNoLimit, kNoLimit, kNoLimit}});
        book.used.assign(teams_.size(), Amounts{});
      }
      Share& share = book.shares[x];
      const auto nominal = Fields(s.nominal);
      const auto borrowing = Fields(s.borrowing_limit);
      const auto lending = Fields(s.lending_limit);
      for (int r = 0; r < kShareResources; ++r) {
        share.nominal[r] = Amount(nominal[r], 0);
        share.borrowing_limit[r] = Amount(borrowing[r], kNoLimit);
        share.lending_limit[r] = Amount(lending[r], kNoLimit);
        book.accounted[r] = book.accounted[r] || nominal[r] || borrowing[r] || lending[r];
      }
    }
  }
}

void TeamBook::AddCapacityAndUse(const ClusterSnapshot& snapshot, const FleetSpecs& fleet_specs) {
  // Capacity: the blocks of the valid instances; use: the blocks running runs hold.
  std::map<std::string_view, std::pair<const InstanceSpec*, BlockLayout>> instances;
  for (const InstanceSpec& in : snapshot.instances) {
    auto f = fleet_specs.find(in.fleet);
    if (f == fleet_specs.end() || instances.count(in.name)) continue;
    BlockLayout layout = BlockLayout::Make(in.allocatable, f->second->blocks);
    if (!layout.valid()) continue;
    auto book = fleets_.find(in.fleet);
    if (book != fleets_.end()) {
      const Amounts a = AmountsOf(layout.ResourcesFor(layout.total_blocks()));
      for (int r = 0; r < kShareResources; ++r) book->second.capacity[r] += a[r];
    }
    instances.emplace(in.name, std::make_pair(&in, std::move(layout)));
  }
  std::set<std::string_view> runs;
  for (const RunningRun& run : snapshot.running) {
    if (!runs.insert(run.id).second) continue;
    const int32_t team = TeamOf(run.id);
    for (const InstanceBlocks& b : run.placement) {
      auto in = instances.find(b.instance);
      if (in == instances.end() || b.blocks <= 0) continue;
      const BlockLayout& layout = in->second.second;
      if (auto p = pools_.find(in->second.first->fleet); p != pools_.end()) p->second.Add(team);
      Charge(team, in->second.first->fleet, layout.ResourcesFor(std::min(b.blocks, layout.total_blocks())));
    }
  }
}

int32_t TeamBook::TeamOf(std::string_view run_id) const {
  auto it = by_namespace_.find(NamespaceOf(run_id));
  return it == by_namespace_.end() ? implicit_ : it->second;
}

const TeamBook::FleetBook* TeamBook::Find(std::string_view fleet) const {
  auto it = fleets_.find(fleet);
  return it == fleets_.end() ? nullptr : &it->second;
}

ShareCheck TeamBook::Check(int32_t team, std::string_view fleet, const Resources& use, bool allow_borrow) const {
  ShareCheck check;
  const FleetBook* book = Find(fleet);
  if (book == nullptr) {
    // A fleet no share names: all common pool (issue 47), borrowed in fair-share order where
    // teams compete for it.
    if (!allow_borrow && Competed(fleet)) check.verdict = ShareCheck::kBorrows;
    return check;
  }
  const Amounts x = AmountsOf(use);
  const Share& own = book->shares[team];
  for (int r = 0; r < kShareResources; ++r) {
    if (!book->accounted[r] || x[r] == 0) continue;
    const int64_t u = book->used[team][r];
    const int64_t n = own.nominal[r];
    if (u + x[r] <= n) continue;
    check.resource = static_cast<ShareResource>(r);
    check.needed = x[r];
    check.used = u;
    check.nominal = n;
    if (!allow_borrow) {
      check.verdict = ShareCheck::kBorrows;
      return check;
    }
    if (own.borrowing_limit[r] != kNoLimit && u + x[r] > n + own.borrowing_limit[r]) {
      check.verdict = ShareCheck::kBorrowingLimit;
      check.may_borrow = std::max<int64_t>(0, n + own.borrowing_limit[r] - std::max(u, n));
      return check;
    }
    int64_t kept = 0;  // nominal other teams neither use nor lend
    for (size_t t = 0; t < book->shares.size(); ++t) {
      const Share& s = book->shares[t];
      if (static_cast<int32_t>(t) == team || s.lending_limit[r] == kNoLimit) continue;
      kept += std::max<int64_t>(0, s.nominal[r] - s.lending_limit[r] - book->used[t][r]);
    }
    const int64_t room = book->capacity[r] - book->total_used[r] - kept;
    if (x[r] > room) {
      check.verdict = ShareCheck::kNothingToLend;
      check.may_borrow = std::max<int64_t>(0, room);
      return check;
    }
  }
  check = ShareCheck{};
  return check;
}

bool TeamBook::WithinNominal(int32_t team, std::string_view fleet, const Resources& use) const {
  const FleetBook* book = Find(fleet);
  if (book == nullptr) return false;
  const Amounts x = AmountsOf(use);
  bool any = false;
  for (int r = 0; r < kShareResources; ++r) {
    if (!book->accounted[r]) continue;
    any |= book->shares[team].nominal[r] > 0;
    if (book->used[team][r] + x[r] > book->shares[team].nominal[r]) return false;
  }
  return any;
}

bool TeamBook::Borrowing(int32_t team, std::string_view fleet) const {
  const FleetBook* book = Find(fleet);
  if (book == nullptr) return false;
  for (int r = 0; r < kShareResources; ++r) {
    if (book->accounted[r] && book->used[team][r] > book->shares[team].nominal[r]) return true;
  }
  return false;
}

void TeamBook::Charge(int32_t team, std::string_view fleet, const Resources& use) {
  auto it = fleets_.find(fleet);
  if (it == fleets_.end()) return;
  const Amounts x = AmountsOf(use);
  for (int r = 0; r < kShareResources; ++r) {
    it->second.used[team][r] += x[r];
    it->second.total_used[r] += x[r];
  }
}

std::vector<TeamFleetReport> TeamBook::Report() const {
  std::vector<TeamFleetReport> out;
  for (const auto& [fleet, book] : fleets_) {
    std::vector<TeamFleetReport> rows(teams_.size());
    for (int r = 0; r < kShareResources; ++r) {
      if (!book.accounted[r]) continue;
      int64_t borrowed = 0, nominal = 0;
      for (size_t t = 0; t < teams_.size(); ++t) {
        borrowed += std::max<int64_t>(0, book.used[t][r] - book.shares[t].nominal[r]);
        nominal += book.shares[t].nominal[r];
      }
      // What the common pool does not cover comes from idle nominal shares, lenders by name.
      int64_t from_shares = std::max<int64_t>(0, borrowed - std::max<int64_t>(0, book.capacity[r] - nominal));
      for (size_t t = 0; t < teams_.size(); ++t) {
        const Share& s = book.shares[t];
        const int64_t idle = std::max<int64_t>(0, s.nominal[r] - book.used[t][r]);
        const int64_t lends = std::min(from_shares, s.lending_limit[r] == kNoLimit ? idle : std::min(idle, s.lending_limit[r]));
        from_shares -= lends;
        TeamFleetReport& row = rows[t];
        row.accounted[r] = true;
        row.nominal[r] = s.nominal[r];
        row.used[r] = book.used[t][r];
        row.borrowed[r] = std::max<int64_t>(0, book.used[t][r] - s.nominal[r]);
        row.lent[r] = lends;
      }
    }
    for (size_t t = 0; t < teams_.size(); ++t) {
      if (static_cast<int32_t>(t) == implicit_) continue;
      rows[t].team = teams_[t].name;
      rows[t].fleet = fleet;
      out.push_back(std::move(rows[t]));
    }
  }
  std::sort(out.begin(), out.end(), [](const TeamFleetReport& a, const TeamFleetReport& b) {
    return std::tie(a.team, a.fleet) < std::tie(b.team, b.fleet);
  });
  return out;
}

namespace {

// Calls fn(team name, fleet, the blocks' resources) for each block hold of each running run (once
// per run id) on an instance with a valid layout; the team of a namespace as TeamBook counts it
// ("" for the implicit team).
template <typename Fn>
void ForEachRunningUse(const ClusterSnapshot& snapshot, Fn fn) {
  // The team of a namespace: the oldest Team that lists it (as TeamBook).
  std::map<std::string_view, std::string_view> team_of;
  std::vector<const TeamSpec*> specs;
  for (const TeamSpec& t : snapshot.teams) specs.push_back(&t);
  std::stable_sort(specs.begin(), specs.end(), [](const TeamSpec* a, const TeamSpec* b) { return TeamPrecedes(*a, *b); });
  for (const TeamSpec* t : specs) {
    for (const std::string& ns : t->namespaces) team_of.emplace(ns, t->name);
  }
  std::map<std::string_view, const FleetSpec*> fleets;
  for (const FleetSpec& f : snapshot.fleets) fleets.emplace(f.name, &f);
  std::map<std::string_view, std::pair<BlockLayout, const FleetSpec*>> layouts;
  for (const InstanceSpec& in : snapshot.instances) {
    auto f = fleets.find(in.fleet);
    if (f == fleets.end() || layouts.count(in.name)) continue;
    BlockLayout layout = BlockLayout::Make(in.allocatable, f->second->blocks);
    if (layout.valid()) layouts.emplace(in.name, std::make_pair(std::move(layout), f->second));
  }
  std::set<std::string_view> runs;
  for (const RunningRun& run : snapshot.running) {
    if (!runs.insert(run.id).second) continue;
    auto t = team_of.find(NamespaceOf(run.id));
    const std::string_view team = t == team_of.end() ? std::string_view() : t->second;
    for (const InstanceBlocks& b : run.placement) {
      auto l = layouts.find(b.instance);
      if (l == layouts.end() || b.blocks <= 0) continue;
      const BlockLayout& layout = l->second.first;
      fn(team, *l->second.second, layout.ResourcesFor(std::min(b.blocks, layout.total_blocks())));
    }
  }
}

}  // namespace

std::map<std::string, Resources> RunningUseByTeam(const ClusterSnapshot& snapshot) {
  std::map<std::string, Resources> out;
  if (snapshot.teams.empty()) return out;
  ForEachRunningUse(snapshot, [&](std::string_view team, const FleetSpec&, const Resources& r) {
    Resources& use = out[std::string(team)];
    use.cpu_millis += r.cpu_millis;
    use.memory_bytes += r.memory_bytes;
    use.gpus += r.gpus;
  });
  return out;
}

std::map<std::string, std::map<std::string, Resources>> RunningUseByTeamAndFleet(const ClusterSnapshot& snapshot) {
  std::map<std::string, std::map<std::string, Resources>> out;
  if (snapshot.teams.empty()) return out;
  ForEachRunningUse(snapshot, [&](std::string_view team, const FleetSpec& fleet, const Resources& r) {
    Resources& use = out[std::string(team)][fleet.name];
    use.cpu_millis += r.cpu_millis;
    use.memory_bytes += r.memory_bytes;
    use.gpus += r.gpus;
  });
  return out;
}

std::map<std::string, WeightedUse> WeightedUseByTeam(const ClusterSnapshot& snapshot) {
  std::map<std::string, WeightedUse> out;
  if (snapshot.teams.empty()) return out;
  ForEachRunningUse(snapshot, [&](std::string_view team, const FleetSpec& fleet, const Resources& r) {
    WeightedUse& use = out[std::string(team)];
    const double w = std::max(fleet.cost_weight, 0.0);
    use.gpus += w * static_cast<double>(r.gpus);
    use.cpus += w * static_cast<double>(r.cpu_millis) / 1000.0;
  });
  return out;
}

std::vector<const TeamBook::Team*> TeamBook::Path(int32_t team) const {
  std::vector<const Team*> path;
  if (teams_[team].parent >= 0) path.push_back(&teams_[teams_[team].parent]);
  path.push_back(&teams_[team]);
  return path;
}

std::pair<TeamBook::Score, TeamBook::Score> TeamBook::Deciding(int32_t a, int32_t b) const {
  const auto pa = Path(a);
  const auto pb = Path(b);
  size_t level = 0;
  while (level + 1 < pa.size() && level + 1 < pb.size() && pa[level] == pb[level]) ++level;
  auto score = [](const Team* t) { return Score{t->name, t->gpu_hours, t->cpu_hours, t->weight}; };
  return {score(pa[level]), score(pb[level])};
}

bool TeamBook::FairBefore(int32_t a, int32_t b) const {
  if (a == b) return false;
  if (Implicit(a) != Implicit(b)) return Implicit(b);
  const auto pa = Path(a);
  const auto pb = Path(b);
  for (size_t level = 0; level < std::min(pa.size(), pb.size()); ++level) {
    const Team* x = pa[level];
    const Team* y = pb[level];
    if (x == y) continue;
    // Compared without division: usage_x / weight_x < usage_y / weight_y.
    const double gx = x->gpu_hours * y->weight, gy = y->gpu_hours * x->weight;
    if (gx != gy) return gx < gy;
    const double cx = x->cpu_hours * y->weight, cy = y->cpu_hours * x->weight;
    if (cx != cy) return cx < cy;
    return x->name < y->name;
  }
  return pa.size() < pb.size();  // a parent's own runs before its children's
}

}  // namespace berth::scheduling
