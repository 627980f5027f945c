#include "reconcilers/state/cluster_view.h"

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <unordered_map>

#include "k8s/timefmt.h"
#include "reconcilers/writers/pod_builder.h"
#include "scheduling/block_layout.h"

namespace berth::reconcilers {

namespace sched = scheduling;

std::string HoldId(std::string_view pod_key) {
  const size_t slash = pod_key.find('/');
  if (slash == std::string_view::npos) return "pod:" + std::string(pod_key);
  return std::string(pod_key.substr(0, slash)) + "/pod:" + std::string(pod_key.substr(slash + 1));
}

bool IsHoldId(std::string_view id) {
  const size_t slash = id.find('/');
  return id.substr(slash == std::string_view::npos ? 0 : slash + 1).rfind("pod:", 0) == 0;
}

bool ClusterView::Counted(const PlacedRun& run) const {
  for (const auto& p : run.placement) {
    auto inst = instances.find(p.node);
    if (inst == instances.end()) return false;
    auto f = fleets.find(inst->second.fleet);
    if (f == fleets.end()) return false;
    const InstanceRecord* rec = f->second->RecordForUid(inst->second.uid);
    if (rec == nullptr) return false;
    if (std::find(rec->counted_runs.begin(), rec->counted_runs.end(), run.uid) == rec->counted_runs.end()) return false;
  }
  return true;
}

namespace {

sched::FleetSpec FleetSpecOf(const Fleet& f) {
  sched::FleetSpec spec;
  spec.name = f.meta.name;
  spec.blocks = f.spec.blocks_auto ? sched::BlocksSetting::Auto() : sched::BlocksSetting::Count(f.spec.blocks);
  spec.placement = f.spec.cluster_placement ? sched::PlacementPolicy::kCluster : sched::PlacementPolicy::kAny;
  spec.topology_key = f.spec.topology_key;
  spec.topology = f.spec.topology;
  spec.max_runs_per_instance = f.spec.max_runs_per_instance;
  spec.gpu_resource = f.spec.gpu_resource;
  spec.preemption = f.spec.preempt_lower_priority ? sched::PreemptionPolicy::kLowerPriority : sched::PreemptionPolicy::kNever;
  spec.min_runtime = f.spec.min_runtime;
  spec.reclaim = f.spec.reclaim_borrowed ? sched::ReclaimPolicy::kBorrowed : sched::ReclaimPolicy::kNever;
  spec.max_grace_seconds = GraceCapSeconds(f.spec.max_grace_period);
  spec.cost_weight = f.spec.cost_weight;
  return spec;
}

// Other Pods' requests come off the node before it is cut into blocks; labelled Pods are held as
// blocks (BlocksHeld, once the node's layout is known).
void TakeHolds(const std::vector<const NodeHold*>& holds, const Fleet& owner, sched::InstanceSpec& inst, InstanceInfo& info) {
  for (const NodeHold* h : holds) {
    if (h->blocks) {
      ++info.lingering_pods;
      continue;
    }
    auto take = [](int64_t& have, int64_t& noted, int64_t used) {
      noted = noted > INT64_MAX - used ? INT64_MAX : noted + used;
      have = std::max<int64_t>(0, have - used);
    };
    take(inst.allocatable.cpu_millis, info.held_by_others.cpu_millis, h->requests.cpu_milli);
    take(inst.allocatable.memory_bytes, info.held_by_others.memory_bytes, h->requests.memory_bytes);
    take(inst.allocatable.gpus, info.held_by_others.gpus, h->requests.Get(owner.spec.gpu_resource));
  }
}

// The blocks a labelled Pod holds on its instance: the larger of its annotation and the blocks
// that cover its requests (all of them when no number of blocks does); 0 when it asks for
// nothing and says nothing.
int32_t BlocksHeld(const NodeHold& h, const sched::BlockLayout& layout, const std::string& gpu_resource) {
  const sched::Resources asks{h.requests.cpu_milli, h.requests.memory_bytes, h.requests.Get(gpu_resource)};
  int32_t by_requests = 0;
  if (asks.cpu_millis > 0 || asks.memory_bytes > 0 || asks.gpus > 0) {
    by_requests = layout.BlocksFor(asks).value_or(std::max<int32_t>(1, layout.total_blocks()));
  }
  return std::max(h.blocks.value_or(0), by_requests);
}

// The blocks of the labelled Pods among `holds` (BlocksHeld) on the instance, once the other Pods'
// requests are off it, as running runs charged to their namespace (HoldId).
void HoldBlocks(const std::vector<const NodeHold*>& holds, const Fleet& owner, const sched::InstanceSpec& inst,
                std::vector<sched::RunningRun>& held) {
  std::optional<sched::BlockLayout> layout;  // made for the first labelled Pod
  for (const NodeHold* h : holds) {
    if (!h->blocks) continue;
    if (!layout) layout = sched::BlockLayout::Make(inst.allocatable, FleetSpecOf(owner).blocks);
    const int32_t blocks = BlocksHeld(*h, *layout, owner.spec.gpu_resource);
    if (blocks <= 0) continue;
    sched::RunningRun rr;
    rr.id = HoldId(h->id);
    rr.placement.push_back(sched::InstanceBlocks{h->node, blocks});
    held.push_back(std::move(rr));
  }
}

// Why a Node takes no new runs although it says Ready (a NotReady one gets the instance's "node
// is not ready"), its end of life (annotation, else the fleet's instanceLifetime) and topology
// domain.
void ReadNodeState(const k8s::Node& node, const Fleet& owner, sched::InstanceSpec& inst, InstanceInfo& info) {
  if (node.meta.deleting) {
    info.node_problem = "node is being deleted";
  } else if (node.ready && node.unschedulable) {
    info.node_problem = "node is cordoned (spec.unschedulable): runs on it continue, new ones go elsewhere";
  }
  std::string ann = node.meta.Annotation(kExpiresAtAnnotation);
  if (!ann.empty()) {
    auto t = k8s::ParseRfc3339(ann);
    if (t.ok()) {
      inst.expires_at = t.value();
    } else {
      info.node_problem = std::string(kExpiresAtAnnotation) + " is not an RFC 3339 time: " + ann;
      inst.ready = false;
    }
  } else if (owner.spec.instance_lifetime) {
    inst.expires_at = node.meta.created + *owner.spec.instance_lifetime;
  }
  info.expires_at = inst.expires_at;
  for (const std::string& res : {std::string("cpu"), std::string("memory"), owner.spec.gpu_resource}) {
    auto bad = node.unreadable.find(res);
    if (bad == node.unreadable.end()) continue;
    info.node_problem = "allocatable " + res + " cannot be used: " + bad->second;
    inst.ready = false;
    break;
  }
  if (!owner.spec.topology_key.empty()) {
    std::string v = node.meta.Label(owner.spec.topology_key);
    if (!v.empty() || node.meta.labels.count(owner.spec.topology_key)) inst.topology_domain = v;
  }
  // Topology levels (issue 48): the Node's values of the levels' labels, up to the first missing.
  for (const std::string& key : owner.spec.topology) {
    auto label = node.meta.labels.find(key);
    if (label == node.meta.labels.end()) break;
    inst.topology_path.push_back(label->second);
    info.domain += (info.domain.empty() ? "" : "/") + label->second;
  }
  if (owner.spec.topology.empty() && inst.topology_domain) info.domain = *inst.topology_domain;
}

// Durable count (same Node uid only: a new Node with the same name is a new instance) plus the
// placed runs the count does not have yet.
void CountRuns(const k8s::Node& node, const Fleet& owner, const std::vector<const PlacedRun*>& runs,
               sched::InstanceSpec& inst, InstanceInfo& info) {
  const InstanceRecord* rec = owner.RecordForUid(node.meta.uid);
  inst.runs_started = rec ? rec->runs_started : 0;
  for (const PlacedRun* r : runs) {
    bool counted = rec && std::find(rec->counted_runs.begin(), rec->counted_runs.end(), r->uid) != rec->counted_runs.end();
    if (r->assumed) {
      if (!counted) {
        ++inst.runs_started;
        ++info.assumed_uncounted;
      }
      continue;
    }
    info.placed_run_uids.push_back(r->uid);
    if (!counted) {
      ++inst.runs_started;
      info.all_counted = false;
    }
  }
}

// The fleet that owns `node` (the oldest that selects it); the others that select it are noted
// as conflicts.
const Fleet* OwnerOf(const k8s::Node& node, const std::vector<const Fleet*>& ordered, ClusterView& view) {
  const Fleet* owner = nullptr;
  for (const Fleet* f : ordered) {
    if (!f->Selects(node.meta.labels)) continue;
    if (owner == nullptr) {
      owner = f;
    } else {
      view.conflicts[f->meta.name].push_back(node.meta.name);
    }
  }
  return owner;
}

// Issue 49: a DRA fleet does not mix extended-resource and DRA nodes. The first node it selects
// that publishes no device of its class but advertises a GPU extended resource (nvidia.com/gpu, or
// any Fleet's gpuResource) refuses it with a sentence: that node's GPUs would be invisible to the
// fleet; "" when none. (A node that publishes devices of the class is a DRA node: its extended
// resources are not read; so is a node whose pool of the class's driver is being updated, though
// it counts no device meanwhile.)
std::string MixedNodeProblem(const Fleet& fleet, const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                             const std::vector<std::string>& gpu_resources, const DraDevices* devices) {
  for (const auto& node : nodes) {
    if (!fleet.Selects(node->meta.labels)) continue;
    if (DevicesOn(devices, fleet.spec.device_class, node->meta.name).total > 0 ||
        PoolBeingUpdatedOn(devices, fleet.spec.device_class, node->meta.name)) {
      continue;
    }
    for (const std::string& r : gpu_resources) {
      const int64_t n = node->Allocatable(r);
      if (n <= 0) continue;
      return "a DRA fleet does not mix extended-resource and DRA nodes: node " + node->meta.name +
             " publishes no device of DeviceClass " + fleet.spec.device_class + " but advertises the extended "
             "resource " + r + ": " + std::to_string(n) + ", which this fleet does not count; narrow "
             "spec.nodeSelector to the DRA nodes (a Fleet with gpuResource " + r + " for the others)";
    }
  }
  return {};
}

// What a DRA instance shows of its devices (InstanceInfo::devices): at most 10 runs named.
std::string DevicesLine(const NodeDevices& d, const std::string& device_class) {
  std::string out = std::to_string(d.total) + (d.total == 1 ? " device of " : " devices of ") + device_class;
  size_t shown = 0;
  for (const auto& [run, n] : d.runs) {
    if (shown++ == 10) {
      out += "; and " + std::to_string(d.runs.size() - 10) + " more runs";
      break;
    }
    out += "; run " + run + " holds " + std::to_string(n);
  }
  return out;
}

// Every GPU extended resource the fleets name (gpuResource), and nvidia.com/gpu (the default).
std::vector<std::string> GpuResources(const std::vector<std::shared_ptr<const Fleet>>& fleets) {
  std::vector<std::string> out{"nvidia.com/gpu"};
  for (const auto& f : fleets) {
    const std::string& r = f->spec.gpu_resource;
    if (!r.empty() && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

// The valid fleets, oldest first (it wins contested nodes), into the view's snapshot; every fleet
// by name and the invalid ones with their reason into the view.
std::vector<const Fleet*> OrderedFleets(const std::vector<std::shared_ptr<const Fleet>>& fleets, ClusterView& view,
                                        const DraDevices* devices,
                                        const std::vector<std::shared_ptr<const k8s::Node>>& nodes) {
  std::vector<const Fleet*> ordered;
  std::vector<std::string> gpu_resources;  // filled at the first DRA fleet
  for (const auto& f : fleets) {
    view.fleets[f->meta.name] = f.get();
    std::string invalid = f->invalid_message;
    if (invalid.empty() && !f->spec.device_class.empty()) invalid = DeviceClassProblem(devices, f->spec.device_class);
    if (invalid.empty() && !f->spec.device_class.empty()) {
      if (gpu_resources.empty()) gpu_resources = GpuResources(fleets);
      invalid = MixedNodeProblem(*f, nodes, gpu_resources, devices);
    }
    if (!invalid.empty()) {
      view.invalid_fleets[f->meta.name] = std::move(invalid);
      continue;
    }
    ordered.push_back(f.get());
  }
  std::sort(ordered.begin(), ordered.end(), [](const Fleet* a, const Fleet* b) {
    if (a->meta.created != b->meta.created) return a->meta.created < b->meta.created;
    return a->meta.name < b->meta.name;
  });
  for (const Fleet* f : ordered) view.snapshot.fleets.push_back(FleetSpecOf(*f));
  return ordered;
}

// Placed runs as the core's running runs; placed runs with a priority may be preempted
// (placed_runs). Then the blocks of labelled Pods no placement accounts for (`held`).
void AddRunning(const std::vector<const PlacedRun*>& placed, std::vector<sched::RunningRun>& held,
                sched::ClusterSnapshot& snapshot) {
  snapshot.running.reserve(snapshot.running.size() + placed.size() + held.size());
  for (const PlacedRun* run : placed) {
    const PlacedRun& r = *run;
    sched::RunningRun rr;
    rr.id = r.key;
    for (const auto& p : r.placement) rr.placement.push_back(sched::InstanceBlocks{p.node, p.blocks});
    rr.expected_end = r.expected_end;
    rr.quota_pending = r.quota_pending;
    snapshot.running.push_back(std::move(rr));
    if (r.priority && !r.assumed) snapshot.placed_runs.push_back(sched::PlacedRunInfo{r.key, *r.priority, r.placed_at});
  }
  // Labelled Pods that outlived their placement hold their blocks until they are gone.
  for (auto& rr : held) snapshot.running.push_back(std::move(rr));
}

ClusterView Build(const std::vector<std::shared_ptr<const Fleet>>& fleets,
                  const std::vector<std::shared_ptr<const k8s::Node>>& nodes, const std::vector<const PlacedRun*>& placed,
                  const std::vector<NodeHold>& holds, const DraDevices* devices) {
  ClusterView view;
  view.owned_fleets = fleets;
  const std::vector<const Fleet*> ordered = OrderedFleets(fleets, view, devices, nodes);

  // By node name (views into `placed`, `holds` and the nodes, which outlive this function).
  std::unordered_map<std::string_view, std::vector<const PlacedRun*>> runs_on_node;  // runs holding blocks
  for (const PlacedRun* r : placed) {
    for (const auto& p : r->placement) {
      // Once per node: ranks of a gang of slices may share one (one run started there).
      auto& on = runs_on_node[p.node];
      if (on.empty() || on.back() != r) on.push_back(r);
    }
  }
  std::unordered_map<std::string_view, std::vector<const NodeHold*>> holds_on_node;
  for (const auto& h : holds) holds_on_node[h.node].push_back(&h);
  static const std::vector<const PlacedRun*> kNoRuns;
  static const std::vector<const NodeHold*> kNoHolds;

  std::vector<sched::RunningRun> held;  // labelled Pods' blocks (NodeHold)
  std::vector<std::shared_ptr<const k8s::Node>> sorted_nodes = nodes;
  std::sort(sorted_nodes.begin(), sorted_nodes.end(),
            [](const auto& a, const auto& b) { return a->meta.name < b->meta.name; });
  view.snapshot.instances.reserve(sorted_nodes.size());
  for (const auto& node : sorted_nodes) {
    const Fleet* owner = OwnerOf(*node, ordered, view);
    if (owner == nullptr) continue;
    sched::InstanceSpec inst;
    inst.name = node->meta.name;
    inst.fleet = owner->meta.name;
    inst.allocatable.cpu_millis = node->cpu_milli;
    inst.allocatable.memory_bytes = node->memory_bytes;
    inst.allocatable.gpus = node->Allocatable(owner->spec.gpu_resource);
    inst.ready = node->ready && !node->unschedulable && !node->meta.deleting;
    InstanceInfo info;
    if (!owner->spec.device_class.empty()) {  // a DRA fleet: its devices, less others' claims
      const NodeDevices d = DevicesOn(devices, owner->spec.device_class, node->meta.name);
      inst.allocatable.gpus = std::max<int64_t>(0, d.total - d.held_by_others);
      info.held_by_others.gpus = d.held_by_others;
      info.devices = DevicesLine(d, owner->spec.device_class);
    }
    auto h = holds_on_node.find(node->meta.name);
    const std::vector<const NodeHold*>& node_holds = h == holds_on_node.end() ? kNoHolds : h->second;
    TakeHolds(node_holds, *owner, inst, info);
    HoldBlocks(node_holds, *owner, inst, held);
    info.node = node->meta.name;
    info.uid = node->meta.uid;
    info.fleet = owner->meta.name;
    ReadNodeState(*node, *owner, inst, info);
    auto r = runs_on_node.find(node->meta.name);
    CountRuns(*node, *owner, r == runs_on_node.end() ? kNoRuns : r->second, inst, info);
    view.instances[node->meta.name] = std::move(info);
    view.snapshot.instances.push_back(std::move(inst));
  }

  AddRunning(placed, held, view.snapshot);
  return view;
}

}  // namespace

ClusterView BuildClusterView(const std::vector<std::shared_ptr<const Fleet>>& fleets,
                             const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                             const std::vector<PlacedRun>& placed, sched::TimePoint /*now*/,
                             const std::vector<NodeHold>& holds, const DraDevices* devices) {
  std::vector<const PlacedRun*> runs;
  runs.reserve(placed.size());
  for (const auto& r : placed) runs.push_back(&r);
  return Build(fleets, nodes, runs, holds, devices);
}

ClusterView BuildSharedClusterView(const std::vector<std::shared_ptr<const Fleet>>& fleets,
                             const std::vector<std::shared_ptr<const k8s::Node>>& nodes,
                             const std::vector<std::shared_ptr<const PlacedRun>>& placed, sched::TimePoint /*now*/,
                             const std::vector<NodeHold>& holds, const DraDevices* devices) {
  std::vector<const PlacedRun*> runs;
  runs.reserve(placed.size());
  for (const auto& r : placed) runs.push_back(r.get());
  return Build(fleets, nodes, runs, holds, devices);
}

}  // namespace berth::reconcilers
