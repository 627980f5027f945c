#include "scheduling/scheduler.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "scheduling/block_layout.h"
#include "scheduling/capacity_index.h"
#include "scheduling/preemption.h"
#include "scheduling/quota.h"
#include "scheduling/teams.h"

namespace berth::scheduling {

namespace {

using internal::CapacityIndex;
using internal::kNoExpiry;
using internal::LifetimeRule;

constexpr int64_t kUnknownTime = std::numeric_limits<int64_t>::max();
constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max();

int64_t Ms(TimePoint t) { return t.time_since_epoch().count(); }

int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  return a + b;
}

// Instances of one fleet with the same block layout: a run needs the same number of blocks on
// each of them.
struct Pool {
  BlockLayout layout;
  int32_t valid_instances = 0;
};

struct Fleet {
  const FleetSpec* spec = nullptr;
  bool cluster = false;
  bool topology = false;
  int64_t max_runs = kUnlimited;
  std::vector<int32_t> pools;
  std::vector<int32_t> instances;  // by name
  int32_t domain_begin = 0;        // [domain_begin, domain_end): its domains, by value
  int32_t domain_end = 0;
  // Instance counts. `valid` never changes within a cycle; the others follow placements.
  int32_t valid = 0;
  int32_t invalid = 0;
  int32_t not_ready = 0;
  int32_t expired = 0;
  int32_t retired = 0;
  int32_t available = 0;  // can take new runs
  int32_t busy = 0;       // available with at least one busy block
};

// A topology domain of a cluster fleet (the whole fleet when it has no topologyKey).
struct Domain {
  int32_t fleet = 0;
  std::vector<std::pair<int32_t, int32_t>> pool_counts;  // (pool, valid instances)
};

enum class Availability : uint8_t { kAvailable, kInvalid, kNotReady, kExpired, kRetired };

struct Instance {
  const InstanceSpec* spec = nullptr;
  int32_t fleet = -1;
  int32_t pool = -1;
  int32_t domain = -1;  // -1: takes no multi-node run
  int32_t total = 0;
  int32_t free = 0;
  int64_t busy = 0;  // sum of blocks held, before clamping to `total`
  int64_t expiry = kNoExpiry;
  int64_t runs_started = 0;
  Availability availability = Availability::kAvailable;
  bool reserved = false;
  int32_t held_for = -1;  // index into Cycle::holders_: kept for that preempting run
};

// A run that instances are kept for: a nominee (its nomination from an earlier cycle) or a run
// that got a preemption plan in this cycle.
struct Holder {
  std::string_view run_id;
  const Nomination* nomination = nullptr;  // nullptr: a plan of this cycle
  std::vector<int32_t> instances;
};

// What Consider left to do: nothing, or possibly the reservation; kDeferred: it would borrow
// from other teams, which it may only after its band of effective priority (teams.h).
enum class Outcome : uint8_t { kPlaced, kWaits, kWaitsMayReserve, kDeferred };

// Blocks held on an instance until `end` (kUnknownTime when unknown).
struct BusyEntry {
  int32_t instance = 0;
  int64_t end = kUnknownTime;
  int32_t blocks = 0;
};

// One cycle's working state. Instances and fleets live in name order, so comparing indices is
// comparing names.
class Cycle {
 public:
  Cycle(const ClusterSnapshot& snapshot, TimePoint now, CycleResult& out);
  // Keeps the instances of the nominations whose nominee is queued for it.
  void ApplyNominations(const RunQueue& queue);
  void Consider(const PendingRun& run);
  bool reuse_equal_shapes = true;

  // Teams (issue 31): whether any Team exists; then runs are considered with Consider(run,
  // allow_borrow), which returns true when the run was deferred (it would borrow, and borrowing
  // was not allowed yet: it is considered again after its band, in fair-share order).
  bool teams_active() const { return teams_.active(); }
  bool Consider(const PendingRun& run, bool allow_borrow);
  const TeamBook& teams() const { return teams_; }
  // The run waits while a borrower of team `ahead`, earlier in the fair-share order, was placed.
  void NoteBehind(WaitReason& reason, int32_t team, int32_t ahead) const;

 private:
  Outcome ConsiderRun(const PendingRun& run, int32_t nominee);
  // Preemption (issue 17): a plan for a run that waits for capacity, or false.
  bool TryPreempt(const PendingRun& run, bool nominee, WaitReason& reason);
  // Reclaim (issue 31): a plan that stops other teams' borrowing runs for a run within its
  // team's unused nominal share, or false.
  bool TryReclaim(const PendingRun& run, WaitReason& reason);
  // Keeps a plan's instances for the run and records the decision; false when the run's
  // namespace quota would refuse it there.
  bool Adopt(const PendingRun& run, PreemptionPlan plan, bool reclaim, WaitReason& reason);
  // What a placement of the current run takes on one instance of pool p (whole instances for a
  // multi-node run), per instance.
  Resources UseOf(const PendingRun& run, int32_t pool) const;
  // When the team's share skipped room the run had: kDeferred (it would borrow) or it waits
  // kTeamShare (the reason is pushed); nullopt when the share skipped nothing.
  std::optional<Outcome> ShareWait(const PendingRun& run, WaitReason& reason);
  void SyncWork();
  void WorkReady(int32_t i);
  void Hold(int32_t i, int32_t holder);
  void Release(int32_t i);
  bool FindKept(int32_t nodes, const LifetimeRule& rule, bool backfill, int32_t& fleet,
                std::string_view& preemptor);

  void BuildFleets();
  void BuildInstances();
  void BuildDomains();
  void ApplyRunning();
  void BuildIndex();
  void BuildQuotas();
  // The namespace quota of a run (nullptr: unlimited), and what a placement of it would use.
  NamespaceQuota* QuotaOf(std::string_view run_id);
  QuotaUse UseOn(const Instance& in, int32_t blocks) const;
  const std::string& GpuResource(int32_t fleet) const { return fleets_[fleet].spec->gpu_resource; }
  // Whether the namespace has room for the smallest use the run could have (its request on each
  // node); fills `reason` when it has not.
  bool QuotaAllowsRequest(const PendingRun& run, const NamespaceQuota* quota, WaitReason& reason) const;
  static void SetQuotaReason(const QuotaShortfall& s, WaitReason& reason);

  int32_t FindFleet(std::string_view name) const;
  int32_t FindInstance(std::string_view name) const;

  void ResolveCandidates(const PendingRun& run);
  bool CheckStructure(const PendingRun& run, WaitReason& reason);

  bool PlaceSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill, int64_t end);
  bool FindMulti(int32_t nodes, const LifetimeRule& rule, bool include_reserved,
                 std::vector<CapacityIndex::Key>& chosen, int32_t& fleet);
  bool CollectInDomain(int32_t domain, int32_t k, const LifetimeRule& rule, bool include_reserved,
                       std::vector<CapacityIndex::Key>& out);
  void PlaceMulti(const PendingRun& run, int32_t fleet, std::vector<CapacityIndex::Key>& chosen,
                  int64_t end);
  void DiagnoseSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                      WaitReason& reason);
  void DiagnoseMulti(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                     WaitReason& reason);
  void CountUnavailable(bool cluster_only, WaitReason& reason, int64_t& available) const;

  void TryReserve(const PendingRun& run);
  void BuildBusyLists();
  bool LifetimeAllows(const Instance& in, int64_t start, const PendingRun& run) const;
  int64_t TimeWithFree(int32_t i, int32_t need) const;
  int64_t TimeWhollyFree(int32_t i) const;
  void Reserve(const PendingRun& run, int32_t fleet, std::vector<int32_t> chosen, int64_t start);

  CapacityIndex& IndexOf(const Instance& in) {
    return in.held_for >= 0 ? held_ : in.reserved ? reserved_ : open_;
  }
  // Whether instance i belongs in an index: available, and when reserved, with a run slot to
  // spare (a backfill run must not retire an instance the reserved run is waiting for).
  bool Indexable(const Instance& in) const;
  void Index(int32_t i);
  void Unindex(int32_t i);
  // Gives `blocks` blocks of instance i to a run ending at `end`.
  void Take(int32_t i, int32_t blocks, int64_t end);

  const ClusterSnapshot& snapshot_;
  const int64_t now_;
  CycleResult& out_;

  // Teams (issue 31): the shares, charged with this cycle's placements.
  TeamBook teams_;
  bool allow_borrow_ = true;
  bool reclaim_enabled_ = false;  // teams, a reclaim: Borrowed fleet and possible victims
  int32_t run_team_ = -1;         // the current run's team
  bool deferred_ = false;         // the last Consider deferred its run
  // Set by the placement search when room was skipped because of the team's share.
  std::optional<ShareCheck> share_skip_;
  int32_t share_fleet_ = -1;

  std::vector<Fleet> fleets_;
  std::vector<std::string_view> fleet_names_;
  std::vector<Pool> pools_;
  std::vector<Domain> domains_;
  std::vector<Instance> instances_;
  std::vector<std::string_view> instance_names_;
  std::vector<BusyEntry> running_entries_;  // from snapshot.running
  std::vector<BusyEntry> placed_entries_;   // from this cycle's placements

  // Namespace quotas: their usage grows with this cycle's placements.
  std::map<std::string, NamespaceQuota, std::less<>> quotas_;
  // Set by PlaceSingle when an instance with room was skipped because of the run's quota.
  std::optional<QuotaShortfall> quota_skip_;

  CapacityIndex open_;      // available, unreserved instances with free blocks
  CapacityIndex reserved_;  // available, reserved instances with free blocks
  CapacityIndex held_;      // available instances kept for a preempting run

  // Preemption (issue 17).
  bool preemption_enabled_ = false;  // some fleet is LowerPriority and some run may be a victim
  int32_t lowest_victim_priority_ = std::numeric_limits<int32_t>::max();
  std::vector<Holder> holders_;
  std::map<std::string_view, int32_t, std::less<>> nominees_;  // run id -> holder
  std::set<std::string, std::less<>> excluded_victims_;        // chosen already: never again
  uint64_t version_ = 0;  // bumped whenever what PlanPreemption would see changes
  // The cycle's working state as PlanPreemption sees it, built at its first use and kept
  // current: this cycle's placements hold blocks, reserved and kept instances are excluded,
  // victims chosen already are no victims.
  struct Work {
    std::unique_ptr<internal::PreemptionIndex> index;
    size_t synced_placements = 0;
    // Request shape -> (version, highest base priority that found no plan then). A lower
    // priority finds no plan either (fewer runs are victims).
    std::map<std::string, std::pair<uint64_t, int32_t>, std::less<>> failed;
  } work_;

  bool has_reservation_ = false;
  int64_t reservation_start_ = kUnknownTime;

  // The last run considered, when it waited and changed nothing (version_ as it was): the next
  // run of its shape waits for the same reason (see Schedule).
  struct LastWait {
    const PendingRun* run = nullptr;
    size_t waiting = 0;  // its entry in out_.waiting
    uint64_t version = 0;
  } last_wait_;
  static bool SameShape(const PendingRun& a, const PendingRun& b) {
    return a.nodes == b.nodes && a.resources == b.resources && a.max_duration == b.max_duration &&
           a.fleets == b.fleets && NamespaceOf(a.id) == NamespaceOf(b.id);
  }

  // Built once, when the reservation is computed.
  std::vector<BusyEntry> busy_;
  std::vector<int32_t> busy_begin_;  // busy_ of instance i: [busy_begin_[i], busy_begin_[i+1])

  // Scratch, reused across runs.
  std::vector<int32_t> candidates_;  // candidate fleets of the current run, by index
  std::vector<int32_t> need_;        // blocks per instance by pool for the current run; -1: no fit
  std::vector<CapacityIndex::Key> chosen_;
  std::vector<CapacityIndex::Key> scratch_;
  std::vector<CapacityIndex::Key> probe_;
};

Cycle::Cycle(const ClusterSnapshot& snapshot, TimePoint now, CycleResult& out)
    : snapshot_(snapshot), now_(Ms(now)), out_(out), teams_(snapshot) {
  out_.now = now;
  BuildFleets();
  BuildInstances();
  BuildDomains();
  BuildQuotas();
  ApplyRunning();
  BuildIndex();
  if (!snapshot_.placed_runs.empty()) {
    for (const Fleet& f : fleets_) {
      preemption_enabled_ |= f.spec->preemption == PreemptionPolicy::kLowerPriority;
    }
    for (const PlacedRunInfo& p : snapshot_.placed_runs) {
      lowest_victim_priority_ = std::min(lowest_victim_priority_, p.priority);
    }
    if (teams_.active()) {
      for (const Fleet& f : fleets_) reclaim_enabled_ |= f.spec->reclaim == ReclaimPolicy::kBorrowed;
    }
  }
}

void Cycle::ApplyNominations(const RunQueue& queue) {
  const auto& nominations = snapshot_.nominations;
  if (nominations.empty()) return;
  std::vector<int32_t> order(nominations.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return nominations[a].run_id < nominations[b].run_id;
  });
  for (int32_t n : order) {
    const Nomination& nomination = nominations[n];
    if (!queue.Contains(nomination.run_id) || nominees_.count(nomination.run_id)) continue;
    const auto h = static_cast<int32_t>(holders_.size());
    holders_.push_back(Holder{nomination.run_id, &nomination, {}});
    nominees_.emplace(nomination.run_id, h);
    for (const std::string& v : nomination.victims) excluded_victims_.insert(v);
    for (const std::string& name : nomination.instances) {
      const int32_t i = FindInstance(name);
      if (i < 0 || instances_[i].held_for >= 0) continue;  // unknown, or kept for an earlier id
      Hold(i, h);
      holders_[h].instances.push_back(i);
    }
  }
}

void Cycle::Hold(int32_t i, int32_t holder) {
  Unindex(i);
  instances_[i].held_for = holder;
  Index(i);
  WorkReady(i);
  ++version_;
}

void Cycle::Release(int32_t i) {
  Unindex(i);
  instances_[i].held_for = -1;
  Index(i);
  WorkReady(i);
  ++version_;
}

void Cycle::WorkReady(int32_t i) {
  if (!work_.index) return;
  const Instance& in = instances_[i];
  work_.index->SetExcluded(in.spec->name, in.held_for >= 0 || in.reserved);
}

void Cycle::SyncWork() {
  if (!work_.index) {
    work_.index = std::make_unique<internal::PreemptionIndex>(snapshot_, snapshot_.placed_runs,
                                                              TimePoint(Duration(now_)), reclaim_enabled_);
    for (int32_t i = 0; i < static_cast<int32_t>(instances_.size()); ++i) {
      if (instances_[i].held_for >= 0 || instances_[i].reserved) WorkReady(i);
    }
    for (const std::string& v : excluded_victims_) work_.index->RemoveVictim(v);
  }
  for (size_t k = work_.synced_placements; k < out_.placements.size(); ++k) {
    const Placement& p = out_.placements[k];
    for (const RankPlacement& rank : p.ranks) work_.index->AddPlacement(p.run_id, rank.instance, rank.blocks);
  }
  work_.synced_placements = out_.placements.size();
}

bool Cycle::TryPreempt(const PendingRun& run, bool nominee, WaitReason& reason) {
  if (run.priority <= lowest_victim_priority_) return false;
  bool any = false;
  for (int32_t f : candidates_) any |= fleets_[f].spec->preemption == PreemptionPolicy::kLowerPriority;
  if (!any) return false;
  // The shape of the request: equal shapes see the same instances and victims (a nominee sees
  // its own kept instances too, so it is not cached).
  std::string key;
  if (!nominee) {
    key = std::to_string(run.nodes) + "|" + std::to_string(run.resources.cpu_millis) + "|" +
          std::to_string(run.resources.memory_bytes) + "|" + std::to_string(run.resources.gpus) + "|" +
          (run.max_duration ? std::to_string(run.max_duration->count()) : "-");
    for (int32_t f : candidates_) key += "|" + std::to_string(f);
    auto it = work_.failed.find(key);
    if (it != work_.failed.end() && it->second.first == version_ && run.priority <= it->second.second) {
      return false;
    }
  }
  SyncWork();
  PreemptionRequest request;
  request.id = run.id;
  request.priority = run.priority;
  request.nodes = std::max<int32_t>(run.nodes, 1);
  request.resources = run.resources;
  for (int32_t f : candidates_) request.fleets.push_back(fleets_[f].spec->name);
  request.max_duration = run.max_duration;
  std::optional<PreemptionPlan> plan = work_.index->Plan(request);
  if (!plan) {
    if (!nominee) {
      auto& entry = work_.failed[key];
      if (entry.first != version_) entry = {version_, run.priority};
      entry.second = std::max(entry.second, run.priority);
    }
    return false;
  }
  return Adopt(run, std::move(*plan), false, reason);
}

bool Cycle::TryReclaim(const PendingRun& run, WaitReason& reason) {
  // The fleets where the run is within its team's unused nominal share, whatever instance of
  // the fleet it would get.
  PreemptionRequest request;
  for (int32_t f : candidates_) {
    if (fleets_[f].spec->reclaim != ReclaimPolicy::kBorrowed) continue;
    bool any = false;
    bool within = true;
    for (int32_t p : fleets_[f].pools) {
      if (need_[p] < 0) continue;
      any = true;
      within = within && teams_.WithinNominal(run_team_, fleets_[f].spec->name, UseOf(run, p));
    }
    if (any && within) request.fleets.push_back(fleets_[f].spec->name);
  }
  if (request.fleets.empty()) return false;
  request.id = run.id;
  request.priority = run.priority;
  request.nodes = std::max<int32_t>(run.nodes, 1);
  request.resources = run.resources;
  request.max_duration = run.max_duration;
  const int32_t team = run_team_;
  request.reclaimable = [this, team](std::string_view fleet, std::string_view victim) {
    const int32_t t = teams_.TeamOf(victim);
    return t != team && teams_.Borrowing(t, fleet);
  };
  SyncWork();
  std::optional<PreemptionPlan> plan = work_.index->Plan(request);
  return plan && Adopt(run, std::move(*plan), true, reason);
}

Resources Cycle::UseOf(const PendingRun& run, int32_t pool) const {
  const BlockLayout& layout = pools_[pool].layout;
  const Resources one = layout.ResourcesFor(run.nodes <= 1 ? need_[pool] : layout.total_blocks());
  const int64_t n = std::max<int32_t>(run.nodes, 1);
  return Resources{one.cpu_millis * n, one.memory_bytes * n, one.gpus * n};
}

bool Cycle::Adopt(const PendingRun& run, PreemptionPlan plan, bool reclaim, WaitReason& reason) {
  const int32_t fleet = FindFleet(plan.fleet);
  std::vector<int32_t> chosen;
  for (const std::string& name : plan.instances) chosen.push_back(FindInstance(name));
  if (fleet < 0 || std::find(chosen.begin(), chosen.end(), -1) != chosen.end()) return false;
  // No eviction for a run its namespace's quota would stop once the victims are gone.
  if (NamespaceQuota* quota = QuotaOf(run.id)) {
    QuotaUse use;
    for (int32_t i : chosen) {
      const Instance& in = instances_[i];
      const QuotaUse one = UseOn(in, run.nodes <= 1 ? need_[in.pool] : in.total);
      use.resources.cpu_millis += one.resources.cpu_millis;
      use.resources.memory_bytes += one.resources.memory_bytes;
      use.resources.gpus += one.resources.gpus;
      ++use.pods;
    }
    if (CheckQuota(quota, use, GpuResource(fleet))) return false;
  }
  const auto h = static_cast<int32_t>(holders_.size());
  holders_.push_back(Holder{run.id, nullptr, chosen});
  for (int32_t i : chosen) Hold(i, h);
  for (const std::string& v : plan.victims) {
    excluded_victims_.insert(v);
    work_.index->RemoveVictim(v);
  }
  reason.code = WaitCode::kPreempting;
  reason.fleet = fleet;
  reason.victims = plan.victims;
  reason.instances = plan.instances;
  reason.victims_stopping = false;
  reason.reclaim = reclaim;
  out_.preemptions.push_back(PreemptionDecision{run.id, std::move(plan), reclaim});
  return true;
}

std::optional<Outcome> Cycle::ShareWait(const PendingRun& run, WaitReason& reason) {
  if (!share_skip_) return std::nullopt;
  if (share_skip_->verdict == ShareCheck::kBorrows) return Outcome::kDeferred;
  reason.code = WaitCode::kTeamShare;
  reason.fleet = share_fleet_;
  reason.share_verdict = share_skip_->verdict;
  reason.share_resource = static_cast<uint8_t>(share_skip_->resource);
  reason.share_needed = share_skip_->needed;
  reason.share_used = share_skip_->used;
  reason.share_nominal = share_skip_->nominal;
  reason.share_may_borrow = share_skip_->may_borrow;
  out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
  return Outcome::kWaits;
}

void Cycle::NoteBehind(WaitReason& reason, int32_t team, int32_t ahead) const {
  const auto [theirs, ours] = teams_.Deciding(ahead, team);
  reason.behind_team = theirs.team;
  reason.behind_gpu_hours = theirs.gpu_hours;
  reason.behind_weight = theirs.weight;
  reason.own_gpu_hours = ours.gpu_hours;
  reason.own_weight = ours.weight;
}

void Cycle::BuildQuotas() {
  for (const NamespaceQuota& q : snapshot_.quotas) quotas_.emplace(q.ns, q);  // first one wins
}

NamespaceQuota* Cycle::QuotaOf(std::string_view run_id) {
  if (quotas_.empty()) return nullptr;
  auto it = quotas_.find(NamespaceOf(run_id));
  return it == quotas_.end() ? nullptr : &it->second;
}

QuotaUse Cycle::UseOn(const Instance& in, int32_t blocks) const {
  return QuotaUse{pools_[in.pool].layout.ResourcesFor(blocks), 1};
}

void Cycle::SetQuotaReason(const QuotaShortfall& s, WaitReason& reason) {
  reason.code = WaitCode::kQuotaExceeded;
  reason.quota_resource = s.resource;
  reason.quota_name = s.quota;
  reason.quota_needed = s.needed;
  reason.quota_used = s.used;
  reason.quota_hard = s.hard;
}

bool Cycle::QuotaAllowsRequest(const PendingRun& run, const NamespaceQuota* quota, WaitReason& reason) const {
  if (quota == nullptr) return true;
  const int64_t n = std::max<int32_t>(run.nodes, 1);
  auto times = [n](int64_t v) {
    v = std::max<int64_t>(v, 0);
    return v > std::numeric_limits<int64_t>::max() / n ? std::numeric_limits<int64_t>::max() : v * n;
  };
  const QuotaUse use{Resources{times(run.resources.cpu_millis), times(run.resources.memory_bytes),
                               times(run.resources.gpus)},
                     n};
  // Room in the quota of any candidate fleet's GPU resource is enough (fleets may name different
  // GPU resources); the first candidate's shortfall is the one reported.
  std::optional<QuotaShortfall> first;
  for (int32_t f : candidates_) {
    auto s = CheckQuota(quota, use, GpuResource(f));
    if (!s) return true;
    if (!first) first = std::move(s);
  }
  if (!first) return true;
  SetQuotaReason(*first, reason);
  return false;
}

void Cycle::BuildFleets() {
  const auto& specs = snapshot_.fleets;
  std::vector<int32_t> order(specs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return specs[a].name < specs[b].name; });
  for (int32_t s : order) {
    const FleetSpec& spec = specs[s];
    if (!fleet_names_.empty() && fleet_names_.back() == spec.name) continue;  // duplicate
    Fleet f;
    f.spec = &spec;
    f.cluster = spec.placement == PlacementPolicy::kCluster;
    f.topology = f.cluster && !spec.topology_key.empty();
    if (spec.max_runs_per_instance) f.max_runs = std::max<int64_t>(*spec.max_runs_per_instance, 1);
    fleets_.push_back(std::move(f));
    fleet_names_.push_back(spec.name);
    out_.fleets.push_back(FleetRef{spec.name, spec.topology_key});
  }
}

int32_t Cycle::FindFleet(std::string_view name) const {
  auto it = std::lower_bound(fleet_names_.begin(), fleet_names_.end(), name);
  if (it == fleet_names_.end() || *it != name) return -1;
  return static_cast<int32_t>(it - fleet_names_.begin());
}

int32_t Cycle::FindInstance(std::string_view name) const {
  auto it = std::lower_bound(instance_names_.begin(), instance_names_.end(), name);
  if (it == instance_names_.end() || *it != name) return -1;
  return static_cast<int32_t>(it - instance_names_.begin());
}

void Cycle::BuildInstances() {
  const auto& specs = snapshot_.instances;
  std::vector<int32_t> order(specs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return specs[a].name < specs[b].name; });
  instances_.reserve(specs.size());
  instance_names_.reserve(specs.size());
  for (int32_t s : order) {
    const InstanceSpec& spec = specs[s];
    if (!instance_names_.empty() && instance_names_.back() == spec.name) continue;  // duplicate
    const int32_t f = FindFleet(spec.fleet);
    if (f < 0) continue;  // not part of any fleet: invisible to scheduling
    Fleet& fleet = fleets_[f];
    Instance in;
    in.spec = &spec;
    in.fleet = f;
    BlockLayout layout = BlockLayout::Make(spec.allocatable, fleet.spec->blocks);
    if (!layout.valid()) {
      in.availability = Availability::kInvalid;
      ++fleet.invalid;
    } else {
      for (int32_t p : fleet.pools) {
        const BlockLayout& l = pools_[p].layout;
        if (l.total_blocks() == layout.total_blocks() && l.per_block() == layout.per_block()) {
          in.pool = p;
          break;
        }
      }
      if (in.pool < 0) {
        in.pool = static_cast<int32_t>(pools_.size());
        pools_.push_back(Pool{layout, 0});
        fleet.pools.push_back(in.pool);
      }
      ++pools_[in.pool].valid_instances;
      ++fleet.valid;
      in.total = in.free = layout.total_blocks();
      if (spec.expires_at) in.expiry = Ms(*spec.expires_at);
      in.runs_started = spec.runs_started;
      if (!spec.ready) {
        in.availability = Availability::kNotReady;
      } else if (in.expiry <= now_) {
        in.availability = Availability::kExpired;
      } else if (in.runs_started >= fleet.max_runs) {
        in.availability = Availability::kRetired;
      }
    }
    fleet.instances.push_back(static_cast<int32_t>(instances_.size()));
    instances_.push_back(in);
    instance_names_.push_back(spec.name);
  }
}

void Cycle::BuildDomains() {
  std::vector<std::string_view> values;
  for (int32_t f = 0; f < static_cast<int32_t>(fleets_.size()); ++f) {
    Fleet& fleet = fleets_[f];
    fleet.domain_begin = fleet.domain_end = static_cast<int32_t>(domains_.size());
    if (!fleet.cluster) continue;
    values.clear();
    if (fleet.topology) {
      for (int32_t i : fleet.instances) {
        const Instance& in = instances_[i];
        if (in.pool >= 0 && in.spec->topology_domain) values.push_back(*in.spec->topology_domain);
      }
      std::sort(values.begin(), values.end());
      values.erase(std::unique(values.begin(), values.end()), values.end());
      for (size_t v = 0; v < values.size(); ++v) domains_.push_back(Domain{f, {}});
    } else {
      domains_.push_back(Domain{f, {}});
    }
    fleet.domain_end = static_cast<int32_t>(domains_.size());
    for (int32_t i : fleet.instances) {
      Instance& in = instances_[i];
      if (in.pool < 0) continue;
      if (fleet.topology) {
        if (!in.spec->topology_domain) continue;
        in.domain = fleet.domain_begin +
                    static_cast<int32_t>(std::lower_bound(values.begin(), values.end(),
                                                          *in.spec->topology_domain) -
                                         values.begin());
      } else {
        in.domain = fleet.domain_begin;
      }
      auto& counts = domains_[in.domain].pool_counts;
      auto it = std::find_if(counts.begin(), counts.end(),
                             [&](const auto& pc) { return pc.first == in.pool; });
      if (it == counts.end()) {
        counts.push_back({in.pool, 1});
      } else {
        ++it->second;
      }
    }
  }
}

void Cycle::ApplyRunning() {
  const auto& running = snapshot_.running;
  std::vector<int32_t> order(running.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return running[a].id < running[b].id; });
  const std::string* previous = nullptr;
  for (int32_t r : order) {
    const RunningRun& run = running[r];
    if (previous != nullptr && *previous == run.id) continue;  // duplicate
    previous = &run.id;
    const int64_t end = run.expected_end ? Ms(*run.expected_end) : kUnknownTime;
    NamespaceQuota* quota = run.quota_pending ? QuotaOf(run.id) : nullptr;
    for (const InstanceBlocks& held : run.placement) {
      const int32_t i = FindInstance(held.instance);
      if (i < 0 || instances_[i].pool < 0 || held.blocks <= 0) continue;
      instances_[i].busy += held.blocks;
      running_entries_.push_back(BusyEntry{i, end, held.blocks});
      if (quota != nullptr) {
        const int32_t blocks = std::min<int32_t>(held.blocks, instances_[i].total);
        ChargeQuota(*quota, UseOn(instances_[i], blocks), GpuResource(instances_[i].fleet));
      }
    }
  }
  for (Instance& in : instances_) {
    in.free = in.total - static_cast<int32_t>(std::min<int64_t>(in.busy, in.total));
  }
}

void Cycle::BuildIndex() {
  std::vector<int32_t> pool_blocks(pools_.size());
  for (size_t p = 0; p < pools_.size(); ++p) pool_blocks[p] = pools_[p].layout.total_blocks();
  std::vector<int32_t> domain_fleet(domains_.size());
  for (size_t d = 0; d < domains_.size(); ++d) domain_fleet[d] = domains_[d].fleet;
  const auto fleet_count = static_cast<int32_t>(fleets_.size());
  open_.Reset(pool_blocks, domain_fleet, fleet_count);
  reserved_.Reset(pool_blocks, domain_fleet, fleet_count);
  held_.Reset(pool_blocks, domain_fleet, fleet_count);
  need_.assign(pools_.size(), -1);

  for (int32_t i = 0; i < static_cast<int32_t>(instances_.size()); ++i) {
    const Instance& in = instances_[i];
    Fleet& fleet = fleets_[in.fleet];
    switch (in.availability) {
      case Availability::kInvalid: break;  // counted while building
      case Availability::kNotReady: ++fleet.not_ready; break;
      case Availability::kExpired: ++fleet.expired; break;
      case Availability::kRetired: ++fleet.retired; break;
      case Availability::kAvailable:
        ++fleet.available;
        if (in.free < in.total) ++fleet.busy;
        Index(i);
        break;
    }
  }
}

bool Cycle::Indexable(const Instance& in) const {
  if (in.availability != Availability::kAvailable) return false;
  return !in.reserved || in.runs_started + 1 < fleets_[in.fleet].max_runs;
}

void Cycle::Index(int32_t i) {
  const Instance& in = instances_[i];
  if (Indexable(in)) IndexOf(in).Add(i, in.pool, in.domain, in.free, in.total, in.expiry);
}

void Cycle::Unindex(int32_t i) {
  const Instance& in = instances_[i];
  if (Indexable(in)) IndexOf(in).Remove(i, in.pool, in.domain, in.free, in.total, in.expiry);
}

void Cycle::Take(int32_t i, int32_t blocks, int64_t end) {
  Instance& in = instances_[i];
  Fleet& fleet = fleets_[in.fleet];
  Unindex(i);
  if (in.free == in.total) ++fleet.busy;
  in.free -= blocks;
  in.busy += blocks;
  ++in.runs_started;
  if (in.runs_started >= fleet.max_runs) {
    in.availability = Availability::kRetired;
    --fleet.available;
    --fleet.busy;
    ++fleet.retired;
  }
  Index(i);
  placed_entries_.push_back(BusyEntry{i, end, blocks});
  ++version_;
}

void Cycle::ResolveCandidates(const PendingRun& run) {
  candidates_.clear();
  if (run.fleets.empty()) {
    for (int32_t f = 0; f < static_cast<int32_t>(fleets_.size()); ++f) candidates_.push_back(f);
    return;
  }
  for (const std::string& name : run.fleets) {
    const int32_t f = FindFleet(name);
    if (f >= 0) candidates_.push_back(f);
  }
  std::sort(candidates_.begin(), candidates_.end());
  candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
}

bool Cycle::CheckStructure(const PendingRun& run, WaitReason& reason) {
  if (candidates_.empty()) {
    if (run.fleets.empty()) {
      reason.code = WaitCode::kNoFleet;
      return false;
    }
    reason.code = WaitCode::kFleetNotFound;
    std::vector<std::string_view> names(run.fleets.begin(), run.fleets.end());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (std::string_view n : names) {
      if (!reason.detail.empty()) reason.detail += ", ";
      reason.detail += n;
    }
    reason.needed = static_cast<int64_t>(names.size());
    return false;
  }
  for (int32_t f : candidates_) {
    for (int32_t p : fleets_[f].pools) need_[p] = pools_[p].layout.BlocksFor(run.resources).value_or(-1);
  }

  int64_t valid = 0;
  int64_t invalid = 0;
  if (run.nodes <= 1) {
    for (int32_t f : candidates_) {
      valid += fleets_[f].valid;
      invalid += fleets_[f].invalid;
      for (int32_t p : fleets_[f].pools) {
        if (need_[p] >= 0 && pools_[p].valid_instances > 0) return true;
      }
    }
    reason.code = valid == 0 ? WaitCode::kNoValidInstance : WaitCode::kTooLarge;
    reason.invalid = invalid;
    return false;
  }

  bool any_cluster = false;
  bool any_fit = false;
  int64_t largest = 0;
  int32_t largest_fleet = -1;
  for (int32_t f : candidates_) {
    const Fleet& fleet = fleets_[f];
    if (!fleet.cluster) continue;
    any_cluster = true;
    valid += fleet.valid;
    invalid += fleet.invalid;
    if (largest_fleet < 0) largest_fleet = f;
    for (int32_t p : fleet.pools) any_fit |= need_[p] >= 0 && pools_[p].valid_instances > 0;
    for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
      int64_t count = 0;
      for (auto [p, n] : domains_[d].pool_counts) {
        if (need_[p] >= 0) count += n;
      }
      if (count > largest) {
        largest = count;
        largest_fleet = f;
      }
    }
  }
  if (!any_cluster) {
    reason.code = WaitCode::kNeedsClusterPlacement;
    return false;
  }
  if (valid == 0) {
    reason.code = WaitCode::kNoValidInstance;
    reason.invalid = invalid;
    return false;
  }
  if (!any_fit) {
    reason.code = WaitCode::kTooLarge;
    return false;
  }
  if (largest >= run.nodes) return true;
  reason.code = WaitCode::kTooManyNodes;
  reason.fleet = largest_fleet;
  reason.needed = run.nodes;
  reason.available = largest;
  return false;
}

bool Cycle::PlaceSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                        int64_t end) {
  // Preference: no GPU taken by a run that asked for none, then a reserved instance (when
  // allowed, its room is otherwise unused until the reservation starts), then a partly used
  // instance, then the fewest blocks left over, then lifetime, then name.
  CapacityIndex::Fit best;
  int32_t best_need = 0;
  int32_t best_left = 0;
  bool best_whole = false;
  bool best_reserved = false;
  bool best_waste = false;
  NamespaceQuota* quota = QuotaOf(run.id);
  quota_skip_.reset();
  auto consider = [&](const CapacityIndex& index, bool reserved, int32_t f, int32_t p, int32_t need) {
    if (index.LargestFree(p) < need) return;
    const CapacityIndex::Fit fit = index.BestFit(p, need, rule);
    if (fit.instance < 0) return;
    if (quota != nullptr) {
      // The Pod asks for its blocks' resources, which may be more than the run's request.
      if (auto s = CheckQuota(quota, QuotaUse{pools_[p].layout.ResourcesFor(need), 1}, GpuResource(f))) {
        if (!quota_skip_) quota_skip_ = std::move(s);
        return;
      }
    }
    if (run_team_ >= 0) {
      const ShareCheck share = teams_.Check(run_team_, fleets_[f].spec->name, pools_[p].layout.ResourcesFor(need), allow_borrow_);
      if (!share.fits()) {
        if (!share_skip_) {
          share_skip_ = share;
          share_fleet_ = f;
        }
        return;
      }
    }
    const bool whole = fit.free == pools_[p].layout.total_blocks();
    const int32_t left = fit.free - need;
    const bool waste = run.resources.gpus <= 0 && pools_[p].layout.ResourcesFor(need).gpus > 0;
    if (best.instance >= 0) {
      if (waste != best_waste) {
        if (waste) return;
      } else if (reserved != best_reserved) {
        if (!reserved) return;
      } else if (whole != best_whole) {
        if (whole) return;
      } else if (left != best_left) {
        if (left > best_left) return;
      } else if (!rule.Prefers(fit.expiry, fit.instance, best.expiry, best.instance)) {
        return;
      }
    }
    best = fit;
    best_need = need;
    best_left = left;
    best_whole = whole;
    best_reserved = reserved;
    best_waste = waste;
  };
  for (int32_t f : candidates_) {
    for (int32_t p : fleets_[f].pools) {
      const int32_t need = need_[p];
      if (need < 0) continue;
      consider(open_, false, f, p, need);
      if (backfill && !reserved_.empty()) consider(reserved_, true, f, p, need);
    }
  }
  if (best.instance < 0) return false;

  const Instance& in = instances_[best.instance];
  Placement placement;
  placement.run_id = run.id;
  placement.fleet = fleets_[in.fleet].spec->name;
  placement.ranks.push_back(RankPlacement{0, in.spec->name, best_need,
                                          pools_[in.pool].layout.ResourcesFor(best_need)});
  placement.takes_unasked_gpus = best_waste;
  out_.placements.push_back(std::move(placement));
  if (quota != nullptr) ChargeQuota(*quota, UseOn(in, best_need), GpuResource(in.fleet));
  if (run_team_ >= 0) teams_.Charge(run_team_, fleets_[in.fleet].spec->name, pools_[in.pool].layout.ResourcesFor(best_need));
  Take(best.instance, best_need, end);
  return true;
}

bool Cycle::CollectInDomain(int32_t domain, int32_t k, const LifetimeRule& rule,
                            bool include_reserved, std::vector<CapacityIndex::Key>& out) {
  // Reserved instances first when allowed (as for single-node runs), then open ones.
  out.clear();
  const auto limit = static_cast<size_t>(k);
  auto collect = [&](const CapacityIndex::Key& key) {
    if (need_[instances_[key.second].pool] >= 0) out.push_back(key);
    return out.size() < limit;
  };
  if (include_reserved && reserved_.IdleIn(domain) > 0) reserved_.ForEachIdle(domain, rule, collect);
  if (out.size() < limit) open_.ForEachIdle(domain, rule, collect);
  return out.size() == limit;
}

bool Cycle::FindMulti(int32_t nodes, const LifetimeRule& rule, bool include_reserved,
                      std::vector<CapacityIndex::Key>& chosen, int32_t& fleet_out) {
  int32_t best_count = std::numeric_limits<int32_t>::max();
  bool found = false;
  for (int32_t f : candidates_) {
    const Fleet& fleet = fleets_[f];
    if (!fleet.cluster) continue;
    if (!include_reserved || reserved_.empty()) {
      if (open_.MaxIdleInDomain(f) < nodes) continue;
      const auto& domains = open_.DomainsByIdle(f);
      for (auto it = domains.lower_bound({nodes, std::numeric_limits<int32_t>::min()});
           it != domains.end() && it->first < best_count; ++it) {
        if (CollectInDomain(it->second, nodes, rule, false, scratch_)) {
          best_count = it->first;
          fleet_out = f;
          chosen.swap(scratch_);
          found = true;
          break;
        }
      }
    } else {
      for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
        const int32_t count = open_.IdleIn(d) + reserved_.IdleIn(d);
        if (count < nodes || count >= best_count) continue;
        if (CollectInDomain(d, nodes, rule, true, scratch_)) {
          best_count = count;
          fleet_out = f;
          chosen.swap(scratch_);
          found = true;
        }
      }
    }
  }
  return found;
}

void Cycle::PlaceMulti(const PendingRun& run, int32_t fleet,
                       std::vector<CapacityIndex::Key>& chosen, int64_t end) {
  std::sort(chosen.begin(), chosen.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  Placement placement;
  placement.run_id = run.id;
  placement.fleet = fleets_[fleet].spec->name;
  placement.ranks.reserve(chosen.size());
  for (size_t r = 0; r < chosen.size(); ++r) {
    const int32_t i = chosen[r].second;
    const Instance& in = instances_[i];
    placement.ranks.push_back(RankPlacement{static_cast<int32_t>(r), in.spec->name, in.total,
                                            pools_[in.pool].layout.ResourcesFor(in.total)});
    if (run_team_ >= 0) teams_.Charge(run_team_, fleets_[fleet].spec->name, placement.ranks.back().resources);
    Take(i, in.total, end);
  }
  out_.placements.push_back(std::move(placement));
}

void Cycle::CountUnavailable(bool cluster_only, WaitReason& reason, int64_t& available) const {
  available = 0;
  for (int32_t f : candidates_) {
    const Fleet& fleet = fleets_[f];
    if (cluster_only && !fleet.cluster) continue;
    reason.not_ready += fleet.not_ready;
    reason.expired += fleet.expired;
    reason.retired += fleet.retired;
    reason.invalid += fleet.invalid;
    available += fleet.available;
  }
}

void Cycle::DiagnoseSingle(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                           WaitReason& reason) {
  int64_t available = 0;
  CountUnavailable(false, reason, available);
  if (!backfill && !reserved_.empty()) {
    for (int32_t f : candidates_) {
      for (int32_t p : fleets_[f].pools) {
        const int32_t need = need_[p];
        if (need < 0 || reserved_.LargestFree(p) < need) continue;
        if (reserved_.BestFit(p, need, rule).instance >= 0) {
          reason.code = WaitCode::kReserved;
          reason.fleet = f;
          reason.needed = need;
          return;
        }
      }
    }
  }
  if (!held_.empty()) {
    for (int32_t f : candidates_) {
      for (int32_t p : fleets_[f].pools) {
        const int32_t need = need_[p];
        if (need < 0 || held_.LargestFree(p) < need) continue;
        const CapacityIndex::Fit fit = held_.BestFit(p, need, rule);
        if (fit.instance >= 0) {
          reason.code = WaitCode::kKeptForPreemptor;
          reason.fleet = f;
          reason.needed = need;
          reason.preemptor = holders_[instances_[fit.instance].held_for].run_id;
          return;
        }
      }
    }
  }
  if (run.max_duration) {
    int64_t latest = -1;
    for (int32_t f : candidates_) {
      for (int32_t p : fleets_[f].pools) {
        const int32_t need = need_[p];
        if (need < 0 || open_.LargestFree(p) < need) continue;
        const int64_t expiry = open_.LatestExpiryWithRoom(p, need);
        if (expiry > latest) {
          latest = expiry;
          reason.fleet = f;
          reason.needed = need;
        }
      }
    }
    if (latest >= 0) {
      reason.code = WaitCode::kLifetimeTooShort;
      reason.lifetime_left = Duration(std::max<int64_t>(0, latest - now_));
      return;
    }
  }
  if (available == 0) {
    reason.code = WaitCode::kNoAvailableInstance;
    return;
  }
  reason.code = WaitCode::kNotEnoughFreeBlocks;
  int64_t best_margin = std::numeric_limits<int64_t>::min();
  for (int32_t f : candidates_) {
    for (int32_t p : fleets_[f].pools) {
      const int32_t need = need_[p];
      if (need < 0) continue;
      const int32_t largest = std::max(open_.LargestFree(p), reserved_.LargestFree(p));
      if (largest - need > best_margin) {
        best_margin = largest - need;
        reason.fleet = f;
        reason.needed = need;
        reason.available = largest;
      }
    }
  }
}

void Cycle::DiagnoseMulti(const PendingRun& run, const LifetimeRule& rule, bool backfill,
                          WaitReason& reason) {
  int64_t available = 0;
  CountUnavailable(true, reason, available);
  reason.needed = run.nodes;
  int32_t fleet = -1;
  if (!backfill && !reserved_.empty() && FindMulti(run.nodes, rule, true, probe_, fleet)) {
    reason.code = WaitCode::kReserved;
    reason.fleet = fleet;
    return;
  }
  std::string_view preemptor;
  if (!held_.empty() && FindKept(run.nodes, rule, backfill, fleet, preemptor)) {
    reason.code = WaitCode::kKeptForPreemptor;
    reason.fleet = fleet;
    reason.preemptor = preemptor;
    return;
  }
  if (run.max_duration &&
      FindMulti(run.nodes, LifetimeRule{now_ + 1, true}, false, chosen_, fleet)) {
    int64_t shortest = kNoExpiry;
    for (const auto& key : chosen_) shortest = std::min(shortest, key.first);
    reason.code = WaitCode::kLifetimeTooShort;
    reason.fleet = fleet;
    reason.lifetime_left = Duration(std::max<int64_t>(0, shortest - now_));
    return;
  }
  if (available == 0) {
    reason.code = WaitCode::kNoAvailableInstance;
    return;
  }
  reason.code = WaitCode::kNotEnoughIdleInstances;
  reason.available = -1;
  for (int32_t f : candidates_) {
    if (!fleets_[f].cluster) continue;
    const int32_t idle = open_.MaxIdleInDomain(f);
    if (idle > reason.available) {
      reason.available = idle;
      reason.fleet = f;
    }
  }
  reason.busy = fleets_[reason.fleet].busy;
}

bool Cycle::FindKept(int32_t nodes, const LifetimeRule& rule, bool backfill, int32_t& fleet_out,
                     std::string_view& preemptor) {
  // Whether `nodes` idle instances of one domain would do if the kept ones were open (kept ones
  // first, then what the run may use anyway).
  const auto limit = static_cast<size_t>(nodes);
  for (int32_t f : candidates_) {
    const Fleet& fleet = fleets_[f];
    if (!fleet.cluster) continue;
    for (int32_t d = fleet.domain_begin; d < fleet.domain_end; ++d) {
      if (held_.IdleIn(d) == 0) continue;
      const int32_t count = held_.IdleIn(d) + open_.IdleIn(d) + (backfill ? reserved_.IdleIn(d) : 0);
      if (count < nodes) continue;
      probe_.clear();
      auto collect = [&](const CapacityIndex::Key& key) {
        if (need_[instances_[key.second].pool] >= 0) probe_.push_back(key);
        return probe_.size() < limit;
      };
      held_.ForEachIdle(d, rule, collect);
      if (probe_.empty()) continue;
      const int32_t first = probe_.front().second;
      if (probe_.size() < limit && backfill) reserved_.ForEachIdle(d, rule, collect);
      if (probe_.size() < limit) open_.ForEachIdle(d, rule, collect);
      if (probe_.size() == limit) {
        fleet_out = f;
        preemptor = holders_[instances_[first].held_for].run_id;
        return true;
      }
    }
  }
  return false;
}

void Cycle::BuildBusyLists() {
  busy_ = running_entries_;
  busy_.insert(busy_.end(), placed_entries_.begin(), placed_entries_.end());
  std::sort(busy_.begin(), busy_.end(), [](const BusyEntry& a, const BusyEntry& b) {
    if (a.instance != b.instance) return a.instance < b.instance;
    return a.end < b.end;
  });
  busy_begin_.assign(instances_.size() + 1, 0);
  for (const BusyEntry& e : busy_) ++busy_begin_[e.instance + 1];
  for (size_t i = 1; i < busy_begin_.size(); ++i) busy_begin_[i] += busy_begin_[i - 1];
}

bool Cycle::LifetimeAllows(const Instance& in, int64_t start, const PendingRun& run) const {
  if (in.expiry == kNoExpiry) return true;
  if (start == kUnknownTime) return false;
  const int64_t needed_until =
      run.max_duration ? SaturatingAdd(start, std::max<int64_t>(run.max_duration->count(), 0))
                       : start + 1;
  return in.expiry >= needed_until;
}

int64_t Cycle::TimeWithFree(int32_t i, int32_t need) const {
  const Instance& in = instances_[i];
  if (in.free >= need) return now_;
  int64_t busy = in.busy;
  for (int32_t e = busy_begin_[i]; e < busy_begin_[i + 1]; ++e) {
    if (busy_[e].end == kUnknownTime) return kUnknownTime;
    busy -= busy_[e].blocks;
    if (in.total - std::min<int64_t>(busy, in.total) >= need) return std::max(busy_[e].end, now_);
  }
  return kUnknownTime;
}

int64_t Cycle::TimeWhollyFree(int32_t i) const {
  const Instance& in = instances_[i];
  if (in.free == in.total) return now_;
  const int32_t last = busy_begin_[i + 1] - 1;
  if (last < busy_begin_[i]) return kUnknownTime;
  return busy_[last].end == kUnknownTime ? kUnknownTime : std::max(busy_[last].end, now_);
}

void Cycle::TryReserve(const PendingRun& run) {
  BuildBusyLists();
  int64_t best_start = kUnknownTime;
  int32_t best_fleet = -1;
  std::vector<int32_t> best;

  if (run.nodes <= 1) {
    int32_t best_instance = -1;
    for (int32_t f : candidates_) {
      for (int32_t i : fleets_[f].instances) {
        const Instance& in = instances_[i];
        if (in.availability != Availability::kAvailable || in.held_for >= 0 || need_[in.pool] < 0) {
          continue;
        }
        const int64_t start = TimeWithFree(i, need_[in.pool]);
        if (!LifetimeAllows(in, start, run)) continue;
        if (best_instance < 0 || start < best_start ||
            (start == best_start && i < best_instance)) {
          best_instance = i;
          best_start = start;
          best_fleet = f;
        }
      }
    }
    if (best_instance < 0) return;
    best.push_back(best_instance);
  } else {
    const auto k = static_cast<size_t>(run.nodes);
    std::vector<std::vector<std::pair<int64_t, int32_t>>> by_domain;
    std::vector<int32_t> eligible;
    for (int32_t f : candidates_) {
      const Fleet& fleet = fleets_[f];
      if (!fleet.cluster) continue;
      by_domain.assign(fleet.domain_end - fleet.domain_begin, {});
      for (int32_t i : fleet.instances) {
        const Instance& in = instances_[i];
        if (in.availability != Availability::kAvailable || in.domain < 0 || in.held_for >= 0 ||
            need_[in.pool] < 0) {
          continue;
        }
        by_domain[in.domain - fleet.domain_begin].push_back({TimeWhollyFree(i), i});
      }
      for (auto& group : by_domain) {
        if (group.size() < k) continue;
        std::sort(group.begin(), group.end());
        // The group starts when its k-th instance frees; with lifetimes in play a later start
        // may be needed for k instances to outlive the run.
        for (size_t j = k - 1; j < group.size(); ++j) {
          const int64_t start = group[j].first;
          if (best_fleet >= 0 && start >= best_start) break;
          eligible.clear();
          for (size_t x = 0; x <= j && eligible.size() < k; ++x) {
            if (LifetimeAllows(instances_[group[x].second], start, run)) {
              eligible.push_back(group[x].second);
            }
          }
          if (eligible.size() == k) {
            best_start = start;
            best_fleet = f;
            best = eligible;
            break;
          }
        }
      }
    }
    if (best_fleet < 0) return;
  }
  Reserve(run, best_fleet, std::move(best), best_start);
}

void Cycle::Reserve(const PendingRun& run, int32_t fleet, std::vector<int32_t> chosen,
                    int64_t start) {
  std::sort(chosen.begin(), chosen.end());
  Reservation reservation;
  reservation.run_id = run.id;
  reservation.fleet = fleets_[fleet].spec->name;
  for (int32_t i : chosen) {
    Unindex(i);
    instances_[i].reserved = true;
    Index(i);
    WorkReady(i);
    reservation.instances.push_back(instances_[i].spec->name);
  }
  if (start != kUnknownTime) reservation.earliest_start = TimePoint(Duration(start));
  has_reservation_ = true;
  reservation_start_ = start;
  ++version_;
  out_.reservation = std::move(reservation);
}

void Cycle::Consider(const PendingRun& run) {
  // A nominee may use the instances kept for it (and any others); when it does not start they
  // stay kept for it.
  int32_t nominee = -1;
  if (!nominees_.empty()) {
    auto it = nominees_.find(run.id);
    if (it != nominees_.end()) nominee = it->second;
  }
  const bool reusable = reuse_equal_shapes && nominee < 0 && !preemption_enabled_ && !teams_.active();
  if (reusable && last_wait_.run != nullptr && last_wait_.version == version_ && SameShape(*last_wait_.run, run)) {
    WaitReason reason = out_.waiting[last_wait_.waiting].reason;
    out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
    return;
  }
  last_wait_.run = nullptr;
  const uint64_t version = version_;
  const size_t waiting = out_.waiting.size();
  if (nominee >= 0) {
    for (int32_t i : holders_[nominee].instances) {
      if (instances_[i].held_for == nominee) Release(i);
    }
  }
  const Outcome outcome = ConsiderRun(run, nominee);
  if (nominee >= 0 && outcome != Outcome::kPlaced) {
    for (int32_t i : holders_[nominee].instances) {
      if (instances_[i].held_for < 0) Hold(i, nominee);
    }
  }
  deferred_ = outcome == Outcome::kDeferred;
  if (outcome == Outcome::kWaitsMayReserve && !has_reservation_) TryReserve(run);
  if (reusable && outcome != Outcome::kPlaced && version_ == version && out_.waiting.size() == waiting + 1) {
    last_wait_ = LastWait{&run, waiting, version_};
  }
}

bool Cycle::Consider(const PendingRun& run, bool allow_borrow) {
  allow_borrow_ = allow_borrow;
  Consider(run);
  allow_borrow_ = true;
  return deferred_;
}

Outcome Cycle::ConsiderRun(const PendingRun& run, int32_t nominee) {
  ResolveCandidates(run);
  share_skip_.reset();
  run_team_ = teams_.active() ? teams_.TeamOf(run.id) : -1;
  WaitReason reason;
  if (run_team_ >= 0) reason.team = teams_.Name(run_team_);
  reason.nodes = run.nodes;
  reason.request = run.resources;
  reason.max_duration = run.max_duration;
  if (!CheckStructure(run, reason)) {
    out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
    return Outcome::kWaits;
  }
  const int64_t duration =
      run.max_duration ? std::max<int64_t>(run.max_duration->count(), 0) : 0;
  const int64_t end = run.max_duration ? SaturatingAdd(now_, duration) : kUnknownTime;
  const LifetimeRule rule{run.max_duration ? end : now_ + 1, !run.max_duration};
  const bool backfill = has_reservation_ && reservation_start_ != kUnknownTime &&
                        run.max_duration && end <= reservation_start_;

  // A run that waits for its own namespace's quota is skipped like one that does not fit, and
  // never holds the reservation: capacity kept for it could not be used by it.
  NamespaceQuota* quota = QuotaOf(run.id);
  if (!QuotaAllowsRequest(run, quota, reason)) {
    out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
    return Outcome::kWaits;
  }
  if (run.nodes <= 1) {
    if (PlaceSingle(run, rule, backfill, end)) return Outcome::kPlaced;
    if (quota_skip_) {
      SetQuotaReason(*quota_skip_, reason);
      out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
      return Outcome::kWaits;
    }
    if (auto outcome = ShareWait(run, reason)) return *outcome;
    DiagnoseSingle(run, rule, backfill, reason);
  } else {
    int32_t fleet = -1;
    bool found = FindMulti(run.nodes, rule, backfill, chosen_, fleet);
    if (found && run_team_ >= 0) {
      // The best (fleet, domain) whose instances the team's share allows: a fleet it does not
      // allow is dropped and the next best is taken.
      const std::vector<int32_t> all = candidates_;
      while (found) {
        Resources use;
        for (const auto& key : chosen_) {
          const Instance& in = instances_[key.second];
          const Resources r = pools_[in.pool].layout.ResourcesFor(in.total);
          use = Resources{use.cpu_millis + r.cpu_millis, use.memory_bytes + r.memory_bytes, use.gpus + r.gpus};
        }
        const ShareCheck share = teams_.Check(run_team_, fleets_[fleet].spec->name, use, allow_borrow_);
        if (share.fits()) break;
        if (!share_skip_) {
          share_skip_ = share;
          share_fleet_ = fleet;
        }
        candidates_.erase(std::find(candidates_.begin(), candidates_.end(), fleet));
        found = FindMulti(run.nodes, rule, backfill, chosen_, fleet);
      }
      candidates_ = all;
    }
    if (found) {
      if (quota != nullptr) {
        QuotaUse use;
        for (const auto& key : chosen_) {
          const Instance& in = instances_[key.second];
          const QuotaUse one = UseOn(in, in.total);
          use.resources.cpu_millis += one.resources.cpu_millis;
          use.resources.memory_bytes += one.resources.memory_bytes;
          use.resources.gpus += one.resources.gpus;
          ++use.pods;
        }
        if (auto s = CheckQuota(quota, use, GpuResource(fleet))) {
          SetQuotaReason(*s, reason);
          out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
          return Outcome::kWaits;
        }
        ChargeQuota(*quota, use, GpuResource(fleet));
      }
      PlaceMulti(run, fleet, chosen_, end);
      return Outcome::kPlaced;
    }
    if (auto outcome = ShareWait(run, reason)) return *outcome;
    DiagnoseMulti(run, rule, backfill, reason);
  }
  // It waits for capacity. A nominee whose victims are still stopping waits for them (no new
  // plan: never more victims than needed); another run may preempt. A run that preempts does not
  // hold the reservation.
  bool preempting = false;
  if (nominee >= 0 && holders_[nominee].nomination->victims_stopping) {
    const Nomination& n = *holders_[nominee].nomination;
    reason.code = WaitCode::kPreempting;
    reason.fleet = FindFleet(n.fleet);
    reason.victims = n.victims;
    std::sort(reason.victims.begin(), reason.victims.end());
    reason.instances = n.instances;
    std::sort(reason.instances.begin(), reason.instances.end());
    reason.victims_stopping = true;
    preempting = true;
  } else {
    // A run within its team's unused nominal share takes it back from borrowers first.
    if (reclaim_enabled_) preempting = TryReclaim(run, reason);
    if (!preempting && preemption_enabled_) preempting = TryPreempt(run, nominee >= 0, reason);
  }
  out_.waiting.push_back(WaitingRun{run.id, std::move(reason)});
  return preempting ? Outcome::kWaits : Outcome::kWaitsMayReserve;
}

// Teams (issue 31): queue order, except that within one effective priority the runs that would
// borrow from other teams (or the common pool) are considered after the others, in fair-share
// order of their teams (then queue order). Waiting runs are reported in queue order.
void ConsiderWithTeams(Cycle& cycle, const RunQueue& queue, CycleResult& result) {
  struct Entry {
    const PendingRun* run;
    int32_t effective;
    size_t index;  // in queue order
  };
  std::vector<Entry> band;
  std::vector<Entry> deferred;
  std::vector<size_t> order;  // queue index of each waiting entry of the band
  const TeamBook& teams = cycle.teams();
  auto waited = [&](const Entry& e, size_t before) {
    if (result.waiting.size() == before) return false;
    result.waiting.back().effective_priority = e.effective;
    result.waiting.back().owner = e.run->owner;
    order.push_back(e.index);
    return true;
  };
  auto flush = [&] {
    const size_t band_start = result.waiting.size();
    order.clear();
    deferred.clear();
    for (const Entry& e : band) {
      const size_t before = result.waiting.size();
      if (cycle.Consider(*e.run, false)) {
        deferred.push_back(e);
      } else {
        waited(e, before);
      }
    }
    std::stable_sort(deferred.begin(), deferred.end(), [&](const Entry& a, const Entry& b) {
      return teams.FairBefore(teams.TeamOf(a.run->id), teams.TeamOf(b.run->id));
    });
    int32_t first = -1;  // the team of the first borrower placed
    for (const Entry& e : deferred) {
      const size_t before = result.waiting.size();
      const size_t placed = result.placements.size();
      cycle.Consider(*e.run, true);
      const int32_t team = teams.TeamOf(e.run->id);
      if (result.placements.size() > placed) {
        if (first < 0) first = team;
      } else if (waited(e, before) && first >= 0 && first != team) {
        cycle.NoteBehind(result.waiting.back().reason, team, first);
      }
    }
    if (!deferred.empty()) {
      std::vector<std::pair<size_t, WaitingRun>> sorted;
      for (size_t k = band_start; k < result.waiting.size(); ++k) {
        sorted.emplace_back(order[k - band_start], std::move(result.waiting[k]));
      }
      std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t k = 0; k < sorted.size(); ++k) result.waiting[band_start + k] = std::move(sorted[k].second);
    }
    band.clear();
  };
  size_t index = 0;
  for (RunQueue::Item item : queue) {
    if (!band.empty() && band.back().effective != item.effective_priority) flush();
    band.push_back(Entry{&item.run, item.effective_priority, index++});
  }
  flush();
}

}  // namespace

CycleResult Schedule(const ClusterSnapshot& snapshot, RunQueue& queue, TimePoint now, bool reuse_equal_shapes,
                     CycleResult recycled) {
  queue.AdvanceTo(now);
  CycleResult result = std::move(recycled);
  result.placements.clear();
  result.waiting.clear();
  result.reservation.reset();
  result.preemptions.clear();
  result.fleets.clear();
  Cycle cycle(snapshot, now, result);
  cycle.reuse_equal_shapes = reuse_equal_shapes;
  cycle.ApplyNominations(queue);
  result.waiting.reserve(queue.size());
  if (cycle.teams_active()) {
    ConsiderWithTeams(cycle, queue, result);
    return result;
  }
  for (RunQueue::Item item : queue) {
    const size_t waiting = result.waiting.size();
    cycle.Consider(item.run);
    if (result.waiting.size() > waiting) {
      result.waiting.back().effective_priority = item.effective_priority;
      result.waiting.back().owner = item.run.owner;
    }
  }
  return result;
}

}  // namespace berth::scheduling
