#pragma once
// The cluster view kept from pass to pass: the core's snapshot (Fleets, Nodes, everyone else's
// Pods, the placed runs' records) made by reconcilers/state/cluster_view.h, made anew only when what it
// is made of changed, and the instances paused after a kubelet refused a Pod.
//
// Threads: the engine's loop thread only.
// Owns: the view, what it was made from (the caches' versions, the placed runs' records), its
// generation (moves whenever the view changes: the core decides again, the Fleet statuses are
// made again), the paused instances.
//
// Kept while the Fleet, Node, berth-Pod and other-Pod caches are unchanged (Informer::Version,
// which every applied watch event and relist moves; read before the lists), the placed runs'
// records are the same objects (RunMemo::placed: an admitted run's record is made anew when its
// object, its Pods or a Namespace change, an assumed admission's every pass) and no instance is
// paused; otherwise made anew. The pass' quotas and nominations are set into it and move the
// generation when they differ. At 10,000 nodes the view cost 30-35 ms a pass, at 80,000 running
// runs 180-225 ms. With `verify`, each kept view is compared with one made anew and the process
// aborts if they differ (tests).
// An instance whose kubelet refused one of berth's Pods takes no new runs until its situation
// (Situation) changes, or for kRefusalMaxPause at most: what the kubelet saw may be invisible to
// berth.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/snapshot.h"
#include "reconcilers/state/run_memo.h"
#include "scheduling/snapshot.h"

namespace berth::reconcilers {

class ClusterViewKeeper {
 public:
  static constexpr std::chrono::minutes kRefusalMaxPause{10};
  // `on_made` sees every view made anew (the waiting runs' sentences read its unavailable
  // instances).
  ClusterViewKeeper(const PassSnapshot& snapshot, bool verify, std::function<void(const ClusterView&)> on_made)
      : snapshot_(snapshot), verify_(verify), on_made_(std::move(on_made)) {}

  // The caches' versions the next view would be made from.
  struct Inputs {
    uint64_t fleets = 0, nodes = 0, pods = 0, others = 0;
    uint64_t slices = 0, classes = 0, claims = 0;  // issue 49: a DRA fleet's devices
    friend bool operator==(const Inputs&, const Inputs&) = default;
  };
  Inputs CurrentInputs() const;
  // The pass' view: kept or made anew from `inputs` (read before the placed runs' records),
  // `placed` and, for the Pods that count through their placement, the admitted runs of `keyed`
  // (RunMemo::placed). `pause_ends`: the earliest end of a paused instance's pause.
  ClusterView& Update(const Inputs& inputs, const Keyed& keyed,
                      const std::vector<std::shared_ptr<const PlacedRun>>& placed, k8s::TimePoint now,
                      std::optional<k8s::TimePoint>& pause_ends);
  // The pass' nominations into the view (the generation moves when they differ).
  void SetNominations(ClusterView& view, std::vector<scheduling::Nomination> nominations);
  // The pass' Teams into the view (reconcilers/objects/team_keeper.h; the generation moves when they differ).
  void SetTeams(ClusterView& view, std::vector<scheduling::TeamSpec> teams);
  uint64_t gen() const { return gen_; }
  // A kubelet refused one of berth's Pods on `node` for `why`: the instance pauses.
  void NoteRefusal(const std::string& node, const std::string& why, k8s::TimePoint now);

  // What the node's kubelet admission depends on that berth sees, as one comparable string: the
  // Node's allocatable, labels, readiness and cordon, and the Pods on it no placement accounts for.
  static std::string Situation(const std::string& node, const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                               const std::vector<NodeHold>& holds);

 private:
  std::unique_ptr<ClusterView> Make(const Keyed& keyed, const std::vector<std::shared_ptr<const PlacedRun>>& placed,
                                    k8s::TimePoint now, std::optional<k8s::TimePoint>& pause_ends);
  void PauseRefusedInstances(ClusterView& view, const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                             const std::vector<NodeHold>& holds, k8s::TimePoint now,
                             std::optional<k8s::TimePoint>& pause_ends);
  void Verify(const Keyed& keyed, const std::vector<std::shared_ptr<const PlacedRun>>& placed, k8s::TimePoint now);

  struct Refusal {
    k8s::TimePoint until;   // at the latest
    std::string why;
    std::string situation;  // Situation() as at the refusal ("" until the next pass)
  };
  const PassSnapshot& snapshot_;
  const bool verify_;
  std::function<void(const ClusterView&)> on_made_;
  std::unique_ptr<ClusterView> view_;
  Inputs inputs_;
  std::vector<std::shared_ptr<const PlacedRun>> placed_;  // the records it was made from
  bool paused_ = false;                                   // PauseRefusedInstances changed it
  uint64_t gen_ = 0;
  std::map<std::string, Refusal> refused_;
};

}  // namespace berth::reconcilers
