#include "scheduling/instance_state.h"

#include <algorithm>
#include <map>

namespace berth::scheduling {

std::string_view InstanceStateName(InstanceState state) {
  switch (state) {
    case InstanceState::kIdle: return "Idle";
    case InstanceState::kBusy: return "Busy";
    case InstanceState::kFull: return "Full";
    case InstanceState::kRetired: return "Retired";
    case InstanceState::kExpired: return "Expired";
    case InstanceState::kNotReady: return "NotReady";
    case InstanceState::kInvalid: return "Invalid";
  }
  return "Invalid";
}

InstanceState ClassifyInstance(const InstanceSpec& instance, const FleetSpec& fleet,
                               const BlockLayout& layout, int64_t busy_blocks, TimePoint now) {
  if (!layout.valid()) return InstanceState::kInvalid;
  if (!instance.ready) return InstanceState::kNotReady;
  if (instance.expires_at && *instance.expires_at <= now) return InstanceState::kExpired;
  if (fleet.max_runs_per_instance && instance.runs_started >= *fleet.max_runs_per_instance) {
    return InstanceState::kRetired;
  }
  const int64_t busy = std::clamp<int64_t>(busy_blocks, 0, layout.total_blocks());
  if (busy == 0) return InstanceState::kIdle;
  return busy >= layout.total_blocks() ? InstanceState::kFull : InstanceState::kBusy;
}

std::vector<InstanceStatus> DescribeInstances(const ClusterSnapshot& snapshot, TimePoint now) {
  std::map<std::string_view, const FleetSpec*> fleets;
  for (const FleetSpec& f : snapshot.fleets) fleets.emplace(f.name, &f);
  std::map<std::string_view, int64_t> busy;
  for (const RunningRun& run : snapshot.running) {
    for (const InstanceBlocks& p : run.placement) busy[p.instance] += std::max(p.blocks, 0);
  }

  std::vector<InstanceStatus> out;
  out.reserve(snapshot.instances.size());
  for (const InstanceSpec& inst : snapshot.instances) {
    InstanceStatus s;
    s.name = inst.name;
    s.fleet = inst.fleet;
    s.runs_started = inst.runs_started;
    s.expires_at = inst.expires_at;
    auto fleet = fleets.find(inst.fleet);
    if (fleet == fleets.end()) {
      s.state = InstanceState::kInvalid;
      s.message = "fleet " + inst.fleet + " does not exist";
      out.push_back(std::move(s));
      continue;
    }
    const BlockLayout layout = BlockLayout::Make(inst.allocatable, fleet->second->blocks);
    s.total_blocks = layout.total_blocks();
    auto b = busy.find(inst.name);
    const int64_t used = b == busy.end() ? 0 : b->second;
    s.busy_blocks = static_cast<int32_t>(std::clamp<int64_t>(used, 0, layout.total_blocks()));
    s.state = ClassifyInstance(inst, *fleet->second, layout, used, now);
    switch (s.state) {
      case InstanceState::kInvalid: s.message = layout.error(); break;
      case InstanceState::kNotReady: s.message = "node is not ready"; break;
      case InstanceState::kExpired:
        s.message = "expired " + FormatDuration(std::max(now - *inst.expires_at, Duration(0))) + " ago";
        break;
      case InstanceState::kRetired:
        s.message = "retired after " + std::to_string(inst.runs_started) +
                    " runs (maxRunsPerInstance " +
                    std::to_string(*fleet->second->max_runs_per_instance) + ")";
        break;
      default: break;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace berth::scheduling
