#include "reconcilers/writers/fleet_status_writer.h"

#include <algorithm>

#include "reconcilers/writers/run_status.h"
#include "reconcilers/writers/status_patch.h"

namespace berth::reconcilers {

namespace sched = scheduling;

void FleetStatusWriter::TakeFailures() {
  if (written_.Settle()) settled_ = false;  // written again by the next Update
}

const std::vector<sched::InstanceStatus>& FleetStatusWriter::Update(const ClusterView& view, uint64_t view_gen,
                                                                     sched::TimePoint now) {
  // The instances' states follow the view, and the time only through an instance's end of life.
  auto describe = [&] { return sched::DescribeInstances(view.snapshot, now); };
  if (settled_ && now < described_until_ && described_.Holds(view_gen)) return described_.Get(view_gen, describe);
  const std::vector<sched::InstanceStatus>& described = described_.Set(view_gen, describe());
  described_until_ = sched::TimePoint::max();
  for (const auto& inst : view.snapshot.instances) {
    // An expired one's message says since when ("expired 5m ago"): made again every pass.
    if (inst.expires_at) described_until_ = std::min(described_until_, std::max(*inst.expires_at, now));
  }
  settled_ = Write(view, now);
  return described;
}

bool FleetStatusWriter::Patch(const std::string& name, uint64_t ticket, const std::string& patch) {
  const WriteResult w = PatchStatus(*client_, k8s::resources::kFleets.Path("", name, "status"), patch);
  // Anything but written: the Fleet changed since the pass read it (its resourceVersion guards
  // the patch), or it is gone and the informer drops it, or the API failed: either way the next
  // pass decides from the cache again.
  const bool written = w.outcome == WriteOutcome::kWritten;
  if (!written) LogUnwritten("fleet " + name, w);
  written_.Finish(name, ticket, written);
  return written;
}

bool FleetStatusWriter::Write(const ClusterView& view, sched::TimePoint now) {
  bool settled = true;
  std::map<std::string, std::vector<const sched::InstanceStatus*>> by_fleet;
  for (const auto& d : *described_.Peek()) by_fleet[d.fleet].push_back(&d);
  for (const auto& [name, fleet] : view.fleets) {
    FleetStatus status = BuildFleetStatus(*fleet, view, by_fleet[name], now);
    const std::string key = "fleet:" + name;  // ':' never appears in a namespace
    const std::string& rv = fleet->meta.resource_version;
    // An init-capture: clang 14 cannot capture a structured binding by name.
    auto queue = [&, name = name](uint64_t ticket, const FleetStatus& s) {
      auto patch = std::make_shared<const std::string>(api::FleetStatusPatch(s, rv));
      return dispatch_(PassWrite{.key = key, .kind = WriteKind::kFleetStatus, .target = name,
                                 .body = [patch] { return *patch; },
                                 .write = [this, name, ticket, patch] { return Patch(name, ticket, *patch); },
                                 // Refused when carried out: not written (TakeFailures: written again).
                                 .refused = [this, name, ticket] { written_.Finish(name, ticket, false); }});
    };
    const bool taken = written_.Offer(name, std::move(status), std::equal_to<FleetStatus>(), queue);
    if (!taken) settled = false;  // the writer took nothing: the next pass tries again
  }
  return settled;
}

}  // namespace berth::reconcilers
