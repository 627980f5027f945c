#pragma once
// The fleet status writer: each Fleet's status (its instances' states, blocks, runs started, the
// durable run counts) as the pass' cluster view says, written when it differs from what was last
// written or queued.
//
// Threads. Update and TakeFailures: the engine's loop thread. The writes it dispatches run on the
// engine's writer threads (KeyedWriter, key "fleet:<name>"), which answer each write to the
// last-written cache (LastWritten::Finish, under its own lock) for TakeFailures.
// Owns: the instances' states of the last pass (scheduling::DescribeInstances) and what was last
// written per Fleet. Reads the view the caller hands in.
//
// Kept from pass to pass (at 10,000 nodes the instances' states cost tens of ms): the states are
// made again only when the view changed (the caller's view generation), when the next instance's
// end of life comes (an expired one's message counts its age: made again every pass), or when a
// Fleet's status was not written or queued (a failed Fleet write makes it again).
// Durability: step 3 of an admission (reconcilers/engine/run_controller.h) is this write: the run's Pods
// are made only once the cache shows the Fleet's durable count with the run (ClusterView::Counted).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "base/memo.h"
#include "k8s/client.h"
#include "reconcilers/engine/pass_writes.h"
#include "reconcilers/state/cluster_view.h"
#include "reconcilers/state/write_cache.h"
#include "scheduling/instance_state.h"

namespace berth::reconcilers {

class FleetStatusWriter {
 public:
  // Hands a write to a writer thread under `key` (false: not taken, the next pass tries again).
  using Dispatch = DispatchWrite;
  FleetStatusWriter(k8s::ClientPtr client, Dispatch dispatch)
      : client_(std::move(client)), dispatch_(std::move(dispatch)) {}

  // Loop thread: the writes that failed since the last call are made again by the next Update.
  void TakeFailures();
  // Loop thread: the instances' states for `view` (generation `view_gen`, which moves whenever
  // the view changes) at `now`, and the Fleet status writes they call for.
  const std::vector<scheduling::InstanceStatus>& Update(const ClusterView& view, uint64_t view_gen,
                                                        scheduling::TimePoint now);

 private:
  // Queues each Fleet's status write whose body differs from the last one; false when one could
  // not be queued.
  bool Write(const ClusterView& view, scheduling::TimePoint now);
  // Writer thread: one Fleet's status patch (the write `ticket` of written_); false (logged)
  // unless written.
  bool Patch(const std::string& name, uint64_t ticket, const std::string& patch);

  k8s::ClientPtr client_;
  Dispatch dispatch_;
  // The instances' states, made from the view of this generation (a checked memo: base/memo.h),
  // and kept until this time at most (an instance's end of life).
  base::Memo<uint64_t, std::vector<scheduling::InstanceStatus>> described_{"the instances' states"};
  scheduling::TimePoint described_until_{};
  bool settled_ = false;                         // every Fleet's status written or queued
  LastWritten<FleetStatus> written_;             // fleet -> last status written or queued
};

}  // namespace berth::reconcilers
