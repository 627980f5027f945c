#include "reconcilers/state/cluster_view_keeper.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "k8s/timefmt.h"
#include "reconcilers/objects/namespace_policy.h"

namespace berth::reconcilers {

namespace sched = scheduling;

ClusterViewKeeper::Inputs ClusterViewKeeper::CurrentInputs() const {
  return Inputs{snapshot_.fleets().Version(),          snapshot_.nodes().Version(),
                snapshot_.pods().Version(),            snapshot_.others().Version(),
                snapshot_.resource_slices().Version(), snapshot_.device_classes().Version(),
                snapshot_.resource_claims().Version()};
}

namespace {

// Issue 49: the devices of the DeviceClasses the DRA fleets name (none without one: the slices and
// claims are not read).
DraDevices CountFleetDevices(const std::vector<std::shared_ptr<const Fleet>>& fleets, const CacheReads& reads,
                             const std::vector<std::shared_ptr<const PlacedRun>>& placed) {
  DraDevices out;
  std::vector<std::shared_ptr<const k8s::ResourceSlice>> slices;
  std::vector<std::shared_ptr<const k8s::ResourceClaim>> claims;
  std::unordered_set<std::string> placed_runs;
  for (const auto& f : fleets) {
    const std::string& name = f->spec.device_class;
    if (name.empty() || out.count(name) != 0) continue;
    if (out.empty()) {
      slices = reads.resource_slices().List();
      claims = reads.resource_claims().List();
      for (const auto& r : placed) placed_runs.insert(r->key);
    }
    std::shared_ptr<const k8s::DeviceClass> cls = reads.device_classes().Get(name);
    out.emplace(name, CountClassDevices(name, cls.get(), slices, claims, placed_runs));
  }
  return out;
}

}  // namespace

std::unique_ptr<ClusterView> ClusterViewKeeper::Make(const Keyed& keyed,
                                                     const std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                                     k8s::TimePoint now, std::optional<k8s::TimePoint>& pause_ends) {
  auto fleets = snapshot_.fleets().List();
  auto nodes = snapshot_.nodes().List();
  // Holds reads the runs whose Pods may count through their placement: the admitted ones (those
  // the pass gave a record: RunMemo::placed). Made only here: 80,000 entries cost 15-20 ms.
  std::unordered_map<std::string_view, const Run*> by_key;
  for (const auto& [key, run, memo] : keyed) {
    if (memo->placed_record()) by_key.emplace(key, run.get());
  }
  std::vector<NodeHold> holds = snapshot_.Holds(by_key);
  const DraDevices devices = CountFleetDevices(fleets, snapshot_, placed);
  auto view = std::make_unique<ClusterView>(BuildSharedClusterView(fleets, nodes, placed, now, holds, &devices));
  PauseRefusedInstances(*view, nodes, holds, now, pause_ends);
  on_made_(*view);
  return view;
}

ClusterView& ClusterViewKeeper::Update(const Inputs& inputs, const Keyed& keyed,
                                       const std::vector<std::shared_ptr<const PlacedRun>>& placed, k8s::TimePoint now,
                                       std::optional<k8s::TimePoint>& pause_ends) {
  // The same placed-run records (an admitted run's record is made anew when its object changes,
  // an assumed one every pass) and the same caches: Holds and the view would be as they are.
  const bool keep = view_ && inputs == inputs_ && placed == placed_ && refused_.empty() && !paused_;
  if (!keep) {
    view_ = Make(keyed, placed, now, pause_ends);
    inputs_ = inputs;
    placed_ = placed;
    paused_ = !refused_.empty();
    ++gen_;
  } else if (verify_) {
    Verify(keyed, placed, now);
  }
  std::vector<sched::NamespaceQuota> quotas = QuotaLimits(snapshot_.quotas().List());
  if (!(quotas == view_->snapshot.quotas)) {
    view_->snapshot.quotas = std::move(quotas);
    ++gen_;
  }
  return *view_;
}

void ClusterViewKeeper::Verify(const Keyed& keyed, const std::vector<std::shared_ptr<const PlacedRun>>& placed,
                               k8s::TimePoint now) {
  std::optional<k8s::TimePoint> ignored;
  std::unique_ptr<ClusterView> fresh = Make(keyed, placed, now, ignored);
  fresh->snapshot.quotas = view_->snapshot.quotas;
  fresh->snapshot.nominations = view_->snapshot.nominations;
  fresh->snapshot.teams = view_->snapshot.teams;
  if (!(fresh->snapshot == view_->snapshot) || fresh->instances != view_->instances ||
      fresh->conflicts != view_->conflicts || fresh->invalid_fleets != view_->invalid_fleets) {
    spdlog::critical("the cluster view kept from the last pass differs from one made now ({} and {} instances, {} and {} "
                     "running runs)", view_->snapshot.instances.size(), fresh->snapshot.instances.size(),
                     view_->snapshot.running.size(), fresh->snapshot.running.size());
    std::abort();
  }
}

void ClusterViewKeeper::SetNominations(ClusterView& view, std::vector<sched::Nomination> nominations) {
  if (nominations == view.snapshot.nominations) return;
  view.snapshot.nominations = std::move(nominations);
  ++gen_;
}

void ClusterViewKeeper::SetTeams(ClusterView& view, std::vector<sched::TeamSpec> teams) {
  if (teams == view.snapshot.teams) return;
  view.snapshot.teams = std::move(teams);
  ++gen_;
}

void ClusterViewKeeper::NoteRefusal(const std::string& node, const std::string& why, k8s::TimePoint now) {
  refused_[node] = Refusal{now + kRefusalMaxPause, why, {}};
}

void ClusterViewKeeper::PauseRefusedInstances(ClusterView& view,
                                              const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                                              const std::vector<NodeHold>& holds, k8s::TimePoint now,
                                              std::optional<k8s::TimePoint>& pause_ends) {
  // Instances whose kubelet refused one of our Pods take no new runs until their situation
  // changes, or for kRefusalMaxPause at most.
  if (!refused_.empty()) {
    for (auto it = refused_.begin(); it != refused_.end();) {
      std::string situation = Situation(it->first, nodes, holds);
      if (it->second.situation.empty()) it->second.situation = situation;  // as at the refusal
      if (now >= it->second.until || situation != it->second.situation) {
        it = refused_.erase(it);
        continue;
      }
      if (!pause_ends || it->second.until < *pause_ends) pause_ends = it->second.until;
      for (auto& inst : view.snapshot.instances) {
        if (inst.name != it->first || !inst.ready) continue;
        inst.ready = false;
        view.instances[inst.name].node_problem =
            it->second.why + "; no new runs here until its allocatable, labels, readiness or other Pods change (at the latest " +
            k8s::FormatRfc3339(it->second.until) + ")";
      }
      ++it;
    }
  }
}

std::string ClusterViewKeeper::Situation(const std::string& node, const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                                     const std::vector<NodeHold>& holds) {
  // What the kubelet's admission depends on and berth can see: the Node's allocatable, labels,
  // readiness and cordon, and the Pods on it that no current placement accounts for. Not the
  // whole object: its status heartbeats change it every few seconds.
  std::string s;
  for (const auto& n : nodes) {
    if (n->meta.name != node) continue;
    s += std::to_string(n->cpu_milli) + "/" + std::to_string(n->memory_bytes) + (n->ready ? "/ready" : "/notready") +
         (n->unschedulable ? "/cordoned" : "");
    for (const auto& [k, v] : n->extended) s += "/" + k + "=" + std::to_string(v);
    for (const auto& [k, v] : n->meta.labels) s += "|" + k + "=" + v;
    break;
  }
  if (s.empty()) s = "gone";
  std::vector<std::string> ids;
  for (const auto& h : holds) {
    if (h.node == node) ids.push_back(h.id);
  }
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) s += "#" + id;
  return s;
}

}  // namespace berth::reconcilers
