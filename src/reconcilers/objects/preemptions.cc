#include "reconcilers/objects/preemptions.h"

#include <set>
#include <string_view>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "reconcilers/writers/pod_builder.h"
#include "reconcilers/writers/run_status.h"
#include "reconcilers/objects/team_types.h"
#include "workloads/workload.h"
#include "scheduling/cycle_result.h"

namespace berth::reconcilers {

namespace sched = scheduling;

std::vector<sched::Nomination> Preemptions::Nominations(const Keyed& keyed,
                                                        const std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                                        const ClusterView& view, const sched::RunQueue& queue,
                                                        const std::unordered_set<std::string>& frozen,
                                                        k8s::TimePoint now) {
  std::vector<sched::Nomination> out;
  std::unordered_map<std::string_view, const PlacedRun*> placed_by_key;  // made for the first record
  std::unordered_map<std::string_view, std::string_view> placed_by_uid;    // uid -> key, the same
  std::unordered_set<std::string_view> held;  // nodes where the view has berth Pods outliving their placement
  for (const auto& [key, run, memo] : keyed) {
    if (!memo->has_preemption) continue;  // (Memo::Read: without reading the run)
    const auto& record = run->status.preemption;
    if (!record || !IsPendingPhase(run->status.phase) || run->meta.deleting || queue.Find(key) == nullptr) continue;
    if (placed_by_key.empty()) {
      for (const auto& pr : placed) {
        placed_by_key.emplace(pr->key, pr.get());
        if (!pr->uid.empty()) placed_by_uid.emplace(pr->uid, pr->key);
      }
      for (const auto& r : view.snapshot.running) {
        if (IsHoldId(r.id)) held.insert(r.placement.front().instance);
      }
    }
    std::set<std::string> stopping;  // victims with a Pod still stopping on the record's nodes
    sched::Nomination n{key, record->fleet, record->nodes, VictimKeys(*record, placed_by_uid, stopping), false, record->reclaim};
    const std::unordered_set<std::string> nodes(record->nodes.begin(), record->nodes.end());
    bool holds = true;
    for (const auto& id : n.victims) {
      auto victim = snapshot_.runs().Get(id);
      auto it = placed_by_key.find(id);
      if (victim && it != placed_by_key.end() && !it->second->assumed) {
        // Still placed: it may be evicted only while it is still of lower priority (a reclaim's
        // victims whatever their priority: the core chose borrowers, issue 31).
        if (!record->reclaim && snapshot_.QueuePriority(*victim) >= snapshot_.QueuePriority(*run)) {
          holds = false;
          break;
        }
        n.victims_stopping = true;
        if (!frozen.count(id)) Evict(*victim, *run, record->fleet, record->reclaim, now);  // not while a write of it is unseen
        continue;
      }
      if (!victim) continue;
      if (stopping.count(id)) n.victims_stopping = true;
      for (const auto& p : snapshot_.PodsOf(*victim)) {
        if (nodes.count(p->node_name) && !IsTerminalPod(*p)) n.victims_stopping = true;
      }
    }
    // The core decides on this pass' view, made before the caches read above: where it still
    // holds a stopped Pod's blocks on a kept node (its deletion seen since), the victims are
    // stopping for it too, else it would plan again with other victims (issue 31: a second
    // borrower stopped for nothing).
    for (const auto& node : record->nodes) n.victims_stopping = n.victims_stopping || held.count(node) != 0;
    if (holds) out.push_back(std::move(n));
  }
  return out;
}

std::vector<std::string> Preemptions::VictimKeys(
    const RunStatus::Preemption& record,
    const std::unordered_map<std::string_view, std::string_view>& placed_by_uid, std::set<std::string>& stopping) const {
  if (record.victim_uids.empty()) return record.victims;  // an older berth's record: every victim by name
  const std::unordered_set<std::string_view> uids(record.victim_uids.begin(), record.victim_uids.end());
  std::set<std::string> keys;
  for (const auto& uid : record.victim_uids) {
    if (auto it = placed_by_uid.find(uid); it != placed_by_uid.end()) keys.emplace(it->second);
  }
  // Victims no longer placed matter while their Pods still stop on the kept nodes: berth's Pods
  // there name their run (label and namespace), which must still be the victim (its uid); a
  // workload's Pods pinned for its ticket name the ticket (issue 45: a reclaimed Job's Pods, in
  // the informer of other Pods).
  auto consider = [&](const k8s::Pod& p, const std::string& run) {
    if (IsTerminalPod(p) || run.empty()) return;
    const std::string key = k8s::ObjectKey(p.meta.ns, run);
    if (stopping.count(key)) return;
    auto victim = snapshot_.runs().Get(key);
    if (victim && uids.count(victim->meta.uid)) {
      keys.insert(key);
      stopping.insert(key);
    }
  };
  for (const auto& node : record.nodes) {
    for (const auto& p : snapshot_.pods().ByIndex("node", node)) consider(*p, p->meta.Label(kRunLabel));
    for (const auto& p : snapshot_.others().ByIndex("ticket-node", node)) consider(*p, p->meta.Label(workloads::kTicketLabel));
  }
  return {keys.begin(), keys.end()};
}

void Preemptions::Evict(const Run& victim, const Run& preemptor, const std::string& fleet, bool reclaim,
                        k8s::TimePoint now) {
  const std::string victim_team = reclaim ? TeamNameOf(snapshot_.teams(), victim.meta.ns) : std::string();
  // The victim's status names the preemptor only when its namespace is the victim's (issue 44).
  const std::string preemptor_name = sched::RunNameFor(RunKey(victim), RunKey(preemptor));
  const std::string why =
      reclaim ? "reclaimed by team " + TeamNameOf(snapshot_.teams(), preemptor.meta.ns) + " for " + preemptor_name +
                    " (within its nominal share) on fleet " + fleet + ": team " +
                    (victim_team.empty() ? "of namespace " + victim.meta.ns : victim_team) + " borrowed it"
              : "preempted by " + preemptor_name + " (priority " + std::to_string(snapshot_.QueuePriority(preemptor)) +
                    ") on fleet " + fleet;
  spdlog::info("run {}: {} (by {})", RunKey(victim), why, RunKey(preemptor));
  writes_.FailOrRetry(victim, /*interruption=*/true, why, now, reclaim ? Reason::kReclaimed : Reason::kPreempted,
                      /*stopped=*/false, /*preempted=*/true, victim_team);
}

}  // namespace berth::reconcilers
