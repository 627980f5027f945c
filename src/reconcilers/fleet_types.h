#pragma once
// The Fleet custom resource, decoded.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "k8s/json.h"
#include "k8s/objects.h"
#include "reconcilers/run_types.h"

namespace berth::reconcilers {

// One entry of Fleet status.instances, as berth last wrote it.
struct InstanceRecord {
  std::string node, uid;
  int64_t total_blocks = 0, busy_blocks = 0;
  int64_t runs_started = 0;
  // Uids of the runs already counted in runs_started that still hold blocks here; makes counting
  // idempotent across controller restarts.
  std::vector<std::string> counted_runs;
  std::string expires_at, state, message;
};

struct Fleet {
  k8s::ObjectMeta meta;
  std::map<std::string, std::string> node_selector;
  bool blocks_auto = false;
  int64_t blocks = 1;
  bool cluster_placement = false;
  std::string topology_key;
  std::string gpu_resource = "nvidia.com/gpu";
  std::optional<int64_t> max_runs_per_instance;
  std::optional<std::chrono::milliseconds> instance_lifetime;
  // spec.preemption: policy LowerPriority lets pending runs evict lower-priority runs here; a run
  // placed less than min_runtime ago is not evicted.
  bool preempt_lower_priority = false;
  std::chrono::milliseconds min_runtime{5 * 60 * 1000};
  std::string invalid_message;  // a spec berth cannot use (the schema should have refused it)

  // status as last written
  std::vector<InstanceRecord> instances;
  // instances by uid (DecodeFleet fills it: a view of 10,000 nodes looked each up in a linear
  // scan, 50 million string comparisons a pass). RecordForUid scans when it does not match.
  std::unordered_map<std::string, size_t> instance_by_uid;
  std::vector<Condition> conditions;
  int64_t observed_generation = 0;

  bool Selects(const std::map<std::string, std::string>& labels) const;
  const InstanceRecord* RecordForUid(const std::string& uid) const;
};

std::shared_ptr<const Fleet> DecodeFleet(const k8s::json::Value& obj);

}  // namespace berth::reconcilers
