#include "reconcilers/fleet_types.h"

#include <charconv>

#include "k8s/duration.h"

namespace berth::reconcilers {

namespace json = k8s::json;

bool Fleet::Selects(const std::map<std::string, std::string>& labels) const {
  if (node_selector.empty()) return false;
  for (const auto& [k, v] : node_selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

const InstanceRecord* Fleet::RecordForUid(const std::string& uid) const {
  if (instance_by_uid.size() == instances.size()) {
    auto it = instance_by_uid.find(uid);
    return it == instance_by_uid.end() ? nullptr : &instances[it->second];
  }
  for (const auto& r : instances) {
    if (r.uid == uid) return &r;
  }
  return nullptr;
}

namespace {

// spec.blocks: "auto" or an integer >= 1 (as a number or a string of digits).
void ReadBlocks(const json::Value& spec, Fleet& f) {
  const json::Value* b = json::Find(spec, {"blocks"});
  if (b == nullptr) return;
  if (b->IsString()) {
    const std::string s = b->GetString();
    if (s == "auto") {
      f.blocks_auto = true;
      return;
    }
    int64_t n = 0;
    auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (err != std::errc() || end != s.data() + s.size() || n < 1) {
      f.invalid_message = "spec.blocks must be \"auto\" or an integer >= 1, not \"" + s + "\"";
    } else {
      f.blocks = n;
    }
  } else if (b->IsInt64()) {
    f.blocks = b->GetInt64();
    if (f.blocks < 1) f.invalid_message = "spec.blocks must be at least 1";
  }
}

// spec.preemption: {policy: Never|LowerPriority, minRuntime: duration}.
void ReadPreemption(const json::Value& spec, Fleet& f) {
  const json::Value* p = json::Find(spec, {"preemption"});
  if (p == nullptr || !p->IsObject()) return;
  const std::string policy = json::GetString(*p, "policy", "Never");
  if (policy == "LowerPriority") {
    f.preempt_lower_priority = true;
  } else if (policy != "Never" && f.invalid_message.empty()) {
    f.invalid_message = "spec.preemption.policy must be Never or LowerPriority, not \"" + policy + "\"";
  }
  const std::string min_runtime = json::GetString(*p, "minRuntime");
  if (min_runtime.empty()) return;
  auto d = k8s::ParseDurationStrict(min_runtime);
  if (d.ok()) {
    f.min_runtime = d.value();
  } else if (f.invalid_message.empty()) {
    f.invalid_message = "spec.preemption.minRuntime: " + d.status().message();
  }
}

InstanceRecord DecodeInstanceRecord(const json::Value& e) {
  InstanceRecord r;
  r.node = json::GetString(e, "node");
  r.uid = json::GetString(e, "uid");
  r.total_blocks = json::GetInt(e, "totalBlocks");
  r.busy_blocks = json::GetInt(e, "busyBlocks");
  r.runs_started = json::GetInt(e, "runsStarted");
  r.expires_at = json::GetString(e, "expiresAt");
  r.state = json::GetString(e, "state");
  r.message = json::GetString(e, "message");
  if (const json::Value* c = json::Find(e, {"countedRuns"}); c != nullptr && c->IsArray()) {
    for (auto& u : c->GetArray()) {
      if (u.IsString()) r.counted_runs.emplace_back(u.GetString());
    }
  }
  return r;
}

}  // namespace

std::shared_ptr<const Fleet> DecodeFleet(const json::Value& obj) {
  auto f = std::make_shared<Fleet>();
  f->meta = k8s::DecodeMeta(obj);
  if (f->meta.name.empty()) return nullptr;
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec != nullptr && spec->IsObject()) {
    if (const json::Value* sel = json::Find(*spec, {"nodeSelector"}); sel != nullptr && sel->IsObject()) {
      for (auto& m : sel->GetObject()) {
        if (m.value.IsString()) f->node_selector.emplace(m.name.GetString(), m.value.GetString());
      }
    }
    ReadBlocks(*spec, *f);
    f->cluster_placement = json::GetString(*spec, "placement", "any") == "cluster";
    f->topology_key = json::GetString(*spec, "topologyKey");
    f->gpu_resource = json::GetString(*spec, "gpuResource", "nvidia.com/gpu");
    if (const json::Value* m = json::Find(*spec, {"maxRunsPerInstance"}); m != nullptr && m->IsInt64()) {
      f->max_runs_per_instance = m->GetInt64();
    }
    ReadPreemption(*spec, *f);
    std::string lifetime = json::GetString(*spec, "instanceLifetime");
    if (!lifetime.empty()) {
      auto d = k8s::ParseDurationStrict(lifetime);
      if (d.ok()) {
        f->instance_lifetime = d.value();
      } else if (f->invalid_message.empty()) {
        f->invalid_message = "spec.instanceLifetime: " + d.status().message();
      }
    }
  }
  if (f->node_selector.empty() && f->invalid_message.empty()) f->invalid_message = "spec.nodeSelector is empty";
  if (const json::Value* st = json::Find(obj, {"status"}); st != nullptr && st->IsObject()) {
    f->observed_generation = json::GetInt(*st, "observedGeneration");
    if (const json::Value* inst = json::Find(*st, {"instances"}); inst != nullptr && inst->IsArray()) {
      for (auto& e : inst->GetArray()) f->instances.push_back(DecodeInstanceRecord(e));
      f->instance_by_uid.reserve(f->instances.size());
      for (size_t i = 0; i < f->instances.size(); ++i) f->instance_by_uid.emplace(f->instances[i].uid, i);
    }
    RunStatus conds = DecodeRunStatus(*st);  // same condition shape
    f->conditions = std::move(conds.conditions);
  }
  return f;
}

}  // namespace berth::reconcilers
