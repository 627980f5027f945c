#include "scheduling/cycle_result.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "scheduling/budgets.h"
#include "scheduling/teams.h"

namespace berth::scheduling {

namespace {

std::string Count(int64_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

// " with 8 GPUs" / " with 4 CPUs, 16Gi memory" / "" for an empty request.
std::string PerNode(const Resources& request) {
  if (request.gpus > 0) return " with " + Count(request.gpus, "GPU", "GPUs");
  if (request.empty()) return "";
  return " with " + FormatResources(request);
}

// "1 not ready, 2 retired": instances of the run's fleets that take no new run.
std::string Unavailable(const WaitReason& r) {
  std::string out;
  auto add = [&out](int64_t n, const char* what) {
    if (n <= 0) return;
    if (!out.empty()) out += ", ";
    out += std::to_string(n) + " " + what;
  };
  add(r.not_ready, "not ready");
  add(r.expired, "expired");
  add(r.retired, "retired");
  add(r.invalid, "invalid");
  return out;
}

std::string UnavailableSuffix(const WaitReason& r) {
  const std::string u = Unavailable(r);
  return u.empty() ? "" : "; unavailable: " + u;
}

// "a, b, c"; at most 5 names, then "and 3 more".
std::string List(const std::vector<std::string>& names) {
  constexpr size_t kMax = 5;
  std::string out;
  for (size_t i = 0; i < names.size() && i < kMax; ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  if (names.size() > kMax) out += " and " + std::to_string(names.size() - kMax) + " more";
  return out;
}

std::string OtherNamespaces(size_t n) {
  return n == 1 ? "a run of another namespace" : std::to_string(n) + " runs of other namespaces";
}

// An estimate, in whole seconds (rounded up: "in 59m21s", not "in 59m20s722ms").
std::string In(TimePoint now, TimePoint at) {
  return at <= now ? "now" : "in " + FormatDuration(std::chrono::ceil<std::chrono::seconds>(at - now));
}

// The fleet a reason names, as the sentences show it.
struct Where {
  bool known = false;
  std::string fleet;     // "?" when unknown
  std::string topology;  // its topologyKey, "" when none or unknown
};

std::string FreeBlocks(const WaitReason& r, const Where& w) {
  return "needs " + Count(r.needed, "block", "blocks") + " on one instance; largest free is " +
         std::to_string(r.available) + " (fleet " + w.fleet + ")" + UnavailableSuffix(r);
}

std::string IdleInstances(const WaitReason& r, const Where& w) {
  std::string s;
  if (!r.level.empty()) {  // a required level of a fleet with topology levels (issue 48)
    s = "needs " + Count(r.needed, "idle instance", "idle instances") + PerNode(r.request) + " in one " + r.level +
        "; the largest free one has " + std::to_string(r.available) + " (fleet " + w.fleet + ", " +
        std::to_string(r.busy) + " busy)";
  } else if (!w.topology.empty()) {
    s = "needs " + Count(r.needed, "idle instance", "idle instances") + PerNode(r.request) +
        " in one " + w.topology + " domain of a cluster fleet; fleet " + w.fleet +
        " has at most " + std::to_string(r.available) + " idle in one domain, " +
        std::to_string(r.busy) + " busy";
  } else {
    s = "needs " + Count(r.needed, "idle instance", "idle instances") + PerNode(r.request) +
        " in a cluster fleet; fleet " + w.fleet + " has " + std::to_string(r.available) +
        " idle, " + std::to_string(r.busy) + " busy";
  }
  return s + UnavailableSuffix(r);
}

// A gang of whole slices kept in one domain (WaitReason::slice_domain): " and topology domain",
// or " and one example.com/rack" at a required level; where: " in one domain" (" in one <level>").
std::string SliceDomain(const WaitReason& r) {
  if (!r.slice_domain) return "";
  return r.level.empty() ? " and topology domain" : " and one " + r.level;
}
std::string InOneDomain(const WaitReason& r) {
  if (!r.slice_domain) return "";
  return r.level.empty() ? " in one domain" : " in one " + r.level;
}

// A gang of slices: "3 slices of 2 blocks each".
std::string Slices(const WaitReason& r) {
  return Count(r.needed, "slice", "slices") + " of " + Count(r.slice_blocks, "block", "blocks") + " each";
}

std::string FreeSlices(const WaitReason& r, const Where& w) {
  return "needs " + Slices(r) + " (one per Pod" + PerNode(r.request) + ") in one fleet" + SliceDomain(r) + "; fleet " +
         w.fleet + " has room for " + std::to_string(r.available) + InOneDomain(r) + " now" + UnavailableSuffix(r);
}

std::string LifetimeTooShort(const WaitReason& r, const Where& w) {
  const std::string wanted = FormatDuration(std::max(r.max_duration.value_or(Duration(0)), Duration(0)));
  const std::string left = FormatDuration(std::max(r.lifetime_left, Duration(0)));
  if (r.slice_gang) {
    return "needs " + Slices(r) + " on instances with at least " + wanted + " of lifetime left; the instances with room in fleet " +
           w.fleet + " have at most " + left + " left";
  }
  if (r.nodes <= 1) {
    return "needs " + Count(r.needed, "block", "blocks") + " on an instance with at least " + wanted +
           " of lifetime left; instances with room have at most " + left + " left (fleet " + w.fleet + ")";
  }
  return "needs " + Count(r.needed, "idle instance", "idle instances") + " with at least " + wanted +
         " of lifetime left in a cluster fleet; the best " + std::to_string(r.needed) + " idle in fleet " +
         w.fleet + " have only " + left + " left";
}

std::string Reserved(const WaitReason& r, const std::optional<Reservation>& reservation, TimePoint now,
                     std::string_view reader) {
  std::string s = "fits only on instances reserved for ";
  if (reservation) {
    s += RunNameFor(reader, reservation->run_id) + ", which expects to start " +
         (reservation->earliest_start ? In(now, *reservation->earliest_start)
                                      : std::string("when capacity frees up"));
  } else {
    s += "an earlier run";
  }
  if (!r.max_duration) {
    s += "; a run without maxDuration may not use reserved instances";
  } else {
    s += "; its maxDuration of " + FormatDuration(*r.max_duration) + " ends after that";
  }
  return s;
}

std::string Preempting(const WaitReason& r, const Where& w, std::string_view reader) {
  std::string s = "preempting " + Count(static_cast<int64_t>(r.victims.size()), "run", "runs");
  if (!r.victims.empty()) s += " (" + RunNamesFor(reader, r.victims) + ")";
  if (!r.instances.empty()) {
    s += std::string(r.instances.size() == 1 ? " on instance " : " on instances ") + List(r.instances);
  }
  if (w.known) s += " (fleet " + w.fleet + ")";
  s += r.reclaim ? "; reclaims its team's nominal share from teams that borrow it; starts when their Pods have stopped"
                 : "; starts when their Pods have stopped";
  return s;
}

std::string TeamShareSentence(const WaitReason& r, const Where& w, std::string_view run_id) {
  const TeamShareWait share = r.share.value_or(TeamShareWait{});
  const auto resource = static_cast<ShareResource>(share.resource);
  const std::string team = r.team.empty() ? "of namespace " + std::string(NamespaceOf(run_id)) : r.team;
  if (share.verdict == ShareCheck::kBorrowingLimit) {
    return "team " + team + " uses " + FormatShareAmount(resource, share.used, /*bare=*/true) + " of its " +
           FormatShareAmount(resource, share.nominal) + " on " + w.fleet + " and may borrow " +
           FormatShareAmount(resource, share.may_borrow, /*bare=*/true) + " more; it needs " +
           FormatShareAmount(resource, share.needed);
  }
  return "needs " + FormatShareAmount(resource, share.needed) + " on " + w.fleet + " beyond team " + team +
         "'s nominal share (uses " + FormatShareAmount(resource, share.used, /*bare=*/true) + " of " +
         FormatShareAmount(resource, share.nominal) + "); " + FormatShareAmount(resource, share.may_borrow) +
         " can be borrowed (the rest is other teams' nominal share they do not lend)";
}

std::string TooManyNodes(const WaitReason& r, const Where& w) {
  if (r.level_missing) {
    return "needs " + Count(r.needed, "instance", "instances") + " in one " + r.level + "; fleet " + w.fleet +
           " has no such topology level";
  }
  if (!r.level.empty()) {
    return "needs " + Count(r.needed, "instance", "instances") + " in one " + r.level + "; the largest has " +
           std::to_string(r.available) + " (fleet " + w.fleet + ")";
  }
  if (!w.topology.empty()) {
    return "needs " + Count(r.needed, "instance", "instances") + " in one " + w.topology +
           " domain; the largest has " + std::to_string(r.available) + " (fleet " + w.fleet + ")";
  }
  return "needs " + Count(r.needed, "instance", "instances") + " in one cluster fleet; the largest has " +
         std::to_string(r.available) + " (fleet " + w.fleet + ")";
}

// The Unschedulable codes: the run's fleets could never hold it.
std::string Unschedulable(const WaitReason& r, const Where& w) {
  switch (r.code) {
    case WaitCode::kNoFleet:
      return "no Fleet exists";
    case WaitCode::kFleetNotFound:
      return r.needed > 1 ? "fleets " + r.detail + " do not exist" : "fleet " + r.detail + " does not exist";
    case WaitCode::kNeedsClusterPlacement:
      return "a multi-node run (" + std::to_string(r.nodes) +
             " nodes) needs a Fleet with placement: cluster; none of its fleets has it";
    case WaitCode::kNoValidInstance:
      return r.invalid > 0
                 ? "its fleets have no instance with a valid block layout (" + std::to_string(r.invalid) + " invalid)"
                 : std::string("its fleets have no instances");
    case WaitCode::kTooLarge:
      return "requests " + FormatResources(r.request) + " per node, more than any instance of its " +
             (r.nodes > 1 && !r.slice_gang ? "cluster fleets" : "fleets") + " holds";
    case WaitCode::kTooManyNodes:
      return TooManyNodes(r, w);
    case WaitCode::kTooManySlices:
      return "needs " + Slices(r) + " (one per Pod) in one fleet" + SliceDomain(r) + "; fleet " + w.fleet +
             (r.level_missing ? " has no topology level " + r.level
                              : ", the largest, holds at most " + std::to_string(r.available) + InOneDomain(r) +
                                    " even when all its instances are idle");
    case WaitCode::kGracePeriodTooLong:
      return "its Pods' terminationGracePeriodSeconds is " + std::to_string(r.needed) +
             ", more than the maxGracePeriod of every fleet it may use (the longest: " +
             FormatDuration(std::chrono::seconds(r.available)) + ", fleet " + w.fleet +
             "), so berth could not stop them within it; lower terminationGracePeriodSeconds in its Pod template to "
             "at most " + std::to_string(r.available) + ", or raise the fleet's spec.maxGracePeriod";
    default:
      return "";
  }
}

std::string BehindTeam(const BehindTeamWait& b, const std::string& own_team) {
  auto hours = [](double h) { return std::to_string(static_cast<int64_t>(std::llround(h))); };
  return "; behind team " + b.team + ": usage " + hours(b.gpu_hours) + " GPU-h / weight " + std::to_string(b.weight) +
         " against " + (own_team.empty() ? "its own" : own_team) + " " + hours(b.own_gpu_hours) + " / " +
         std::to_string(b.own_weight);
}

std::string HoldsReservation(const Reservation& reservation, TimePoint now) {
  return "; holds " + Count(static_cast<int64_t>(reservation.instances.size()), "reserved instance",
                            "reserved instances") +
         (reservation.earliest_start ? ", expected to start " + In(now, *reservation.earliest_start)
                                     : std::string(" until capacity frees up"));
}

}  // namespace

std::string RunNameFor(std::string_view reader, std::string_view other) {
  return NamespaceOf(reader) == NamespaceOf(other) ? std::string(other) : OtherNamespaces(1);
}

std::string RunNamesFor(std::string_view reader, const std::vector<std::string>& others) {
  std::vector<std::string> names;
  size_t elsewhere = 0;
  for (const auto& id : others) {
    if (NamespaceOf(id) == NamespaceOf(reader)) {
      names.push_back(id);
    } else {
      ++elsewhere;
    }
  }
  std::string out = List(names);
  if (elsewhere > 0) out += (out.empty() ? "" : ", ") + OtherNamespaces(elsewhere);
  return out;
}

std::string CycleResult::Explain(const WaitingRun& waiting) const {
  const WaitReason& r = waiting.reason;
  Where where;
  where.known = r.fleet >= 0 && static_cast<size_t>(r.fleet) < fleets.size();
  where.fleet = where.known ? fleets[r.fleet].name : "?";
  where.topology = where.known ? fleets[r.fleet].topology_key : "";
  std::string s;
  switch (r.code) {
    case WaitCode::kNotEnoughFreeBlocks: s = FreeBlocks(r, where); break;
    case WaitCode::kNotEnoughIdleInstances: s = IdleInstances(r, where); break;
    case WaitCode::kNotEnoughSlices: s = FreeSlices(r, where); break;
    case WaitCode::kLifetimeTooShort: s = LifetimeTooShort(r, where); break;
    case WaitCode::kReserved: s = Reserved(r, reservation, now, waiting.run_id); break;
    case WaitCode::kNoAvailableInstance:
      s = "no instance of its fleets can take a new run (" + Unavailable(r) + ")";
      break;
    case WaitCode::kQuotaExceeded:
      s = ExplainQuota(NamespaceOf(waiting.run_id), r.quota.value_or(QuotaShortfall{}));
      break;
    case WaitCode::kPreempting: s = Preempting(r, where, waiting.run_id); break;
    case WaitCode::kTeamShare: s = TeamShareSentence(r, where, waiting.run_id); break;
    case WaitCode::kBudgetExhausted: s = BudgetSentence(r); break;
    case WaitCode::kKeptForPreemptor:
      s = "fits only on instances kept for " +
          (r.preemptor.empty() ? std::string("a preempting run") : RunNameFor(waiting.run_id, r.preemptor)) +
          ", which preempts runs there";
      break;
    case WaitCode::kNoFleet:
    case WaitCode::kFleetNotFound:
    case WaitCode::kNeedsClusterPlacement:
    case WaitCode::kNoValidInstance:
    case WaitCode::kTooLarge:
    case WaitCode::kTooManyNodes:
    case WaitCode::kTooManySlices:
    case WaitCode::kGracePeriodTooLong: s = Unschedulable(r, where); break;
  }
  if (r.behind && !r.behind->team.empty()) s += BehindTeam(*r.behind, r.team);
  if (reservation && reservation->run_id == waiting.run_id) s += HoldsReservation(*reservation, now);
  return s;
}

std::map<std::pair<std::string, std::string>, int64_t> CycleResult::CountWaiting() const {
  std::map<std::pair<std::string, std::string>, int64_t> out;
  int32_t fleet = -2;
  std::string_view reason;
  int64_t count = 0;
  auto flush = [&] {
    if (count > 0) out[{fleet >= 0 ? fleets[fleet].name : "none", std::string(reason)}] += count;
  };
  for (const WaitingRun& w : waiting) {
    const int32_t f = w.reason.fleet >= 0 && w.reason.fleet < static_cast<int32_t>(fleets.size()) ? w.reason.fleet : -1;
    const std::string_view r = ApiReason(w.reason.code);
    if (f != fleet || r != reason) {
      flush();
      fleet = f;
      reason = r;
      count = 0;
    }
    ++count;
  }
  flush();
  return out;
}

}  // namespace berth::scheduling
