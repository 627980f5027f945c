#include "reconcilers/objects/usage_keeper.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "reconcilers/state/cache_reads.h"
#include "reconcilers/writers/status_patch.h"
#include "scheduling/teams.h"
#include "scheduling/usage.h"

namespace berth::reconcilers {

namespace sched = scheduling;
using k8s::resources::kRuns;
using k8s::resources::kTeams;

namespace {
// Hourly detail is kept for the last 31 days (a month's budget window has its edges in hours).
constexpr auto kHourlyFor = std::chrono::hours(24 * 31);
constexpr int kTeamWriteTries = 3;

// A run's wait until `start` (its admission): from its submission, or from its return to the
// queue after a retry (status.retryAfter): the rule of berth_admission_wait_seconds.
std::chrono::seconds WaitBefore(const Run& run, sched::TimePoint start) {
  sched::TimePoint since = run.meta.created;
  if (run.status.resubmissions > 0 && run.status.retry_after) since = std::max(since, run.status.retry_after->point());
  return std::max(std::chrono::seconds(0), std::chrono::duration_cast<std::chrono::seconds>(start - since));
}
}  // namespace

bool UsageKeeper::Holding(const Run& run) const {
  if (IsPlacedPhase(run.status.phase) && !run.meta.deleting) return true;
  for (const auto& p : caches_.PodsOf(run)) {
    if (!p->node_name.empty() && KubeletCountsPod(*p)) return true;
  }
  return false;
}

std::map<std::string, std::vector<UsageKeeper::Item>> UsageKeeper::ItemsByTeam(const ClusterView& view) const {
  // The team of a namespace: the oldest Team that lists it (scheduling::TeamBook).
  std::vector<const sched::TeamSpec*> specs;
  for (const sched::TeamSpec& t : view.snapshot.teams) specs.push_back(&t);
  std::stable_sort(specs.begin(), specs.end(), [](const auto* a, const auto* b) { return sched::TeamPrecedes(*a, *b); });
  std::map<std::string, std::string> team_of;
  for (const auto* t : specs) {
    for (const std::string& ns : t->namespaces) team_of.emplace(ns, t->name);
  }
  std::map<std::string, std::vector<Item>> out;
  for (const auto& run : caches_.runs().List()) {
    if (SpanAccounted(run->status)) continue;  // most runs: nothing to fold
    RunSpan rs = SpanOfRun(*run, Holding(*run));
    if (!rs.span) continue;
    auto t = team_of.find(run->meta.ns);
    const std::chrono::seconds wait = WaitBefore(*run, rs.span->start);
    out[t == team_of.end() ? std::string() : t->second].push_back(
        Item{.span = std::move(*rs.span), .close = rs.close, .ns = run->meta.ns, .name = run->meta.name,
             .resource_version = run->meta.resource_version, .user = SubmitterOf(run->meta), .wait = wait});
  }
  for (const auto& t : view.snapshot.teams) out.try_emplace(t.name);  // the watermark moves on
  return out;
}

sched::TimePoint UsageKeeper::Update(const ClusterView& view, sched::TimePoint now,
                                     const std::vector<std::shared_ptr<const PlacedRun>>& placed) {
  if (next_ && now < *next_ && !wanted_.exchange(false)) return *next_;
  wanted_ = false;
  // Whole seconds, as the status records times; no later than an admission not seen yet.
  sched::TimePoint until = now;
  for (const auto& p : placed) {
    if (p->assumed) until = std::min(until, p->placed_at);
  }
  const sched::TimePoint to = Time(until).point();
  bool all = true;
  for (auto& [team, items] : ItemsByTeam(view)) {
    Fold fold;
    fold.team = team;
    fold.to = to;
    fold.items = std::move(items);
    if (!team.empty()) {
      auto t = caches_.teams().Get(team);
      if (t == nullptr) continue;
      sched::TimePoint from = to;
      for (const Item& i : fold.items) from = std::min(from, i.span.start);
      if (t->status.usage_folded_until) fold.read_until = from = t->status.usage_folded_until->point();
      if (from > to) continue;
      fold.from = from;
      fold.history = t->status.usage_history;
      fold.resource_version = t->meta.resource_version;
      sched::FoldOptions options;
      options.hourly_since = to - kHourlyFor;
      std::vector<sched::UsageSpan> spans;
      spans.reserve(fold.items.size());
      for (const Item& i : fold.items) spans.push_back(i.span);
      sched::FoldUsage(fold.history, spans, from, to, options);
    } else {
      // No Team: counted at once (the metric), written only when a span is to be recorded.
      if (counted_) counted_(Increments(fold));
      if (std::none_of(fold.items.begin(), fold.items.end(), [](const Item& i) { return i.close != RunSpan::Close::kNone; })) {
        continue;
      }
    }
    all = Dispatch(std::move(fold)) && all;
  }
  // A fold not taken (its key still busy) is tried again at the next pass.
  next_ = all ? Time(now).point() + interval_ : now;
  return all ? *next_ : now + std::chrono::seconds(1);
}

bool UsageKeeper::Dispatch(Fold fold) {
  const std::string key = "usage:" + fold.team;
  auto shared = std::make_shared<const Fold>(std::move(fold));
  auto patch = std::make_shared<const std::string>(
      shared->from ? api::TeamUsagePatch(shared->history, Time(shared->to), shared->resource_version) : std::string());
  return dispatch_(PassWrite{.key = key, .kind = WriteKind::kTeamStatus, .target = shared->team,
                             .body = [patch] { return *patch; },
                             .write = [this, shared, patch] {
                               if (shared->from) WriteUsers(*shared);
                               if (shared->from && !WriteTeam(*shared, *patch)) return true;  // the next fold
                               if (shared->from && counted_) counted_(Increments(*shared));
                               WriteRuns(*shared);
                               return true;
                             },
                             .background = false,
                             // Refused when carried out: folded again at the next pass, as if
                             // never decided (issue 46: every decided write comes back).
                             .refused = [this] { Want(); }});
}

bool UsageKeeper::WriteTeam(const Fold& fold, const std::string& patch) {
  const std::string path = kTeams.Path("", fold.team, "status");
  std::string body = patch;
  for (int i = 0; i < kTeamWriteTries; ++i) {
    const WriteResult w = PatchStatus(*client_, path, body);
    if (w.outcome == WriteOutcome::kWritten) return true;
    if (w.outcome != WriteOutcome::kConflict) {
      LogUnwritten("team " + fold.team + " usage", w);
      return false;
    }
    // Another write came first: only the same watermark means nobody else folded.
    auto got = client_->Get(kTeams.Path("", fold.team));
    if (!got.ok()) return false;
    auto team = api::DecodeTeam(*got);
    if (!team.ok()) return false;
    const std::optional<Time>& t = team->status.usage_folded_until;
    if ((t ? std::optional<sched::TimePoint>(t->point()) : std::nullopt) != fold.read_until) {
      spdlog::info("team {}: usage folded up to {} meanwhile; folded again at the next interval", fold.team,
                   FormatTime(t));
      return false;
    }
    body = api::TeamUsagePatch(fold.history, Time(fold.to), team->meta.resource_version);
  }
  return false;
}

void UsageKeeper::WriteUsers(const Fold& fold) {
  if (users_ns_.empty() || !fold.from) return;
  std::vector<sched::UsageSpan> spans;
  std::vector<RunStart> starts;
  spans.reserve(fold.items.size());
  for (const Item& i : fold.items) {
    spans.push_back(i.span);
    spans.back().ns = i.user;
    starts.push_back(RunStart{.user = i.user, .ns = i.ns, .fleet = i.span.fleet, .at = i.span.start, .wait = i.wait});
  }
  const std::string dir = "/api/v1/namespaces/" + users_ns_ + "/configmaps";
  const std::string path = dir + "/" + api::UserUsageName(fold.team);
  for (int i = 0; i < kTeamWriteTries; ++i) {
    api::UserUsage usage;
    usage.team = fold.team;
    auto got = client_->Get(path);
    if (got.ok()) {
      auto decoded = api::DecodeUserUsage(*got);
      if (!decoded.ok()) {
        spdlog::warn("team {}: per-user usage not folded: {}", fold.team, decoded.status().message());
        return;
      }
      usage = std::move(decoded).value();
    } else if (!got.status().IsNotFound()) {
      spdlog::warn("team {}: per-user usage not read: {}", fold.team, got.status().ToString());
      return;
    } else if (spans.empty()) {
      return;  // nothing to keep yet
    }
    if (!FoldUserUsage(usage, spans, *fold.from, fold.to, starts)) return;  // folded up to here already
    const std::string body = api::EncodeUserUsage(usage, users_ns_);
    auto w = usage.resource_version.empty() ? client_->Create(dir, body) : client_->Update(path, body);
    if (w.ok()) return;
    // Another fold wrote first (a conflict, or made it meanwhile): read again, fold from its watermark.
    if (!w.status().IsConflict() && !w.status().IsAlreadyExists()) {
      spdlog::warn("team {}: per-user usage not written: {}", fold.team, w.status().ToString());
      return;
    }
  }
}

void UsageKeeper::WriteRuns(const Fold& fold) {
  for (const Item& i : fold.items) {
    std::optional<Time> released;
    Time accounted;
    if (i.close == RunSpan::Close::kRelease) {
      released = Time(fold.to);
      accounted = Time(fold.to);
    } else if (i.close == RunSpan::Close::kAccount && i.span.end && *i.span.end <= fold.to) {
      accounted = Time(*i.span.end);
    } else {
      continue;
    }
    const WriteResult w = PatchStatus(*client_, kRuns.Path(i.ns, i.name, "status"),
                                      api::RunSpanPatch(released, accounted, i.resource_version));
    // A conflict (the run changed meanwhile): the next fold records it (a release then ends later,
    // and the span as recorded is what was folded).
    if (w.outcome != WriteOutcome::kWritten && w.outcome != WriteOutcome::kGone) LogUnwritten("run " + i.ns + "/" + i.name + " usage", w);
  }
}

std::vector<UsageIncrement> UsageKeeper::Increments(const Fold& fold) {
  sched::TimePoint from = fold.to;
  if (fold.from) {
    from = *fold.from;
  } else {
    std::lock_guard<std::mutex> lock(labels_mu_);
    from = last_unteamed_.value_or(fold.to);
    last_unteamed_ = fold.to;
  }
  std::map<std::tuple<std::string, std::string>, ResourceSeconds> sums;  // (ns, fleet)
  for (const Item& i : fold.items) {
    const ResourceSeconds s = SecondsIn(i.span, from, fold.to);
    ResourceSeconds& sum = sums[{i.ns, i.span.fleet}];
    sum.gpu += s.gpu;
    sum.cpu += s.cpu;
    sum.memory_gib += s.memory_gib;
  }
  std::vector<UsageIncrement> out;
  std::lock_guard<std::mutex> lock(labels_mu_);
  for (const auto& [key, s] : sums) {
    const auto& [ns, fleet] = key;
    std::set<std::string>& named = labels_[{fold.team, fleet}];
    if (named.size() < sched::kNamedNamespaces) named.insert(ns);
    out.push_back(UsageIncrement{fold.team, named.count(ns) ? ns : std::string(sched::kOthers), fleet, s});
  }
  return out;
}

}  // namespace berth::reconcilers
