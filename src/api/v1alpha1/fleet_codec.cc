// Fleet: decode (spec checked as the engine needs it, status read defensively), encode, status
// patch.

#include <charconv>
#include <cmath>

#include "api/v1alpha1/codec.h"
#include "api/v1alpha1/json_io.h"
#include "k8s/duration.h"

namespace berth::api::v1alpha1 {

namespace json = k8s::json;
using io::Reader;
using io::Writer;

bool Fleet::Selects(const std::map<std::string, std::string>& labels) const {
  if (spec.node_selector.empty()) return false;
  for (const auto& [k, v] : spec.node_selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

const FleetInstance* Fleet::RecordForUid(const std::string& uid) const {
  if (instance_by_uid.size() == status.instances.size()) {
    auto it = instance_by_uid.find(uid);
    return it == instance_by_uid.end() ? nullptr : &status.instances[it->second];
  }
  for (const auto& r : status.instances) {
    if (r.uid == uid) return &r;
  }
  return nullptr;
}

namespace {

// spec.blocks: "auto" or an integer >= 1 (as a number or a string of digits).
void ReadBlocks(const json::Value& spec, FleetSpec& f, std::string& err) {
  const json::Value* b = json::Find(spec, {"blocks"});
  if (b == nullptr) return;
  if (b->IsString()) {
    const std::string s = b->GetString();
    if (s == "auto") {
      f.blocks_auto = true;
      return;
    }
    int64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end != s.data() + s.size() || n < 1) {
      err = "spec.blocks must be \"auto\" or an integer >= 1, not \"" + s + "\"";
    } else {
      f.blocks = n;
    }
  } else if (b->IsInt64()) {
    f.blocks = b->GetInt64();
    if (f.blocks < 1) err = "spec.blocks must be at least 1";
  }
}

// spec.preemption: {policy: Never|LowerPriority, minRuntime: duration, reclaim: Borrowed|Never}.
void ReadPreemption(const json::Value& spec, FleetSpec& f, std::string& err) {
  const json::Value* p = json::Find(spec, {"preemption"});
  if (p == nullptr || !p->IsObject()) return;
  const std::string policy = json::GetString(*p, "policy", "Never");
  if (policy == "LowerPriority") {
    f.preempt_lower_priority = true;
  } else if (policy != "Never" && err.empty()) {
    err = "spec.preemption.policy must be Never or LowerPriority, not \"" + policy + "\"";
  }
  const std::string reclaim = json::GetString(*p, "reclaim", "Borrowed");
  if (reclaim == "Never") {
    f.reclaim_borrowed = false;
  } else if (reclaim != "Borrowed" && err.empty()) {
    err = "spec.preemption.reclaim must be Borrowed or Never, not \"" + reclaim + "\"";
  }
  const std::string min_runtime = json::GetString(*p, "minRuntime");
  if (min_runtime.empty()) return;
  auto d = k8s::ParseDurationStrict(min_runtime);
  if (d.ok()) {
    f.min_runtime = d.value();
  } else if (err.empty()) {
    err = "spec.preemption.minRuntime: " + d.status().message();
  }
}

// spec.devices: {deviceClassName} (issue 49), exclusive with a gpuResource other than its default
// (the API server writes the default into every Fleet).
void ReadDevices(const json::Value& spec, FleetSpec& f, std::string& err) {
  const json::Value* d = json::Find(spec, {"devices"});
  if (d == nullptr || !d->IsObject()) return;
  f.device_class = json::GetString(*d, "deviceClassName");
  if (f.device_class.empty() && err.empty()) err = "spec.devices.deviceClassName is required";
  if (f.gpu_resource != "nvidia.com/gpu" && err.empty()) {
    err = "spec.devices and spec.gpuResource are exclusive: a fleet counts either DRA devices or an extended resource";
  }
  f.gpu_resource.clear();
}

// spec.costWeight (issue 47): a number from 0 to 1000, default 1.
void ReadCostWeight(const json::Value& spec, FleetSpec& f, std::string& err) {
  const json::Value* w = json::Find(spec, {"costWeight"});
  if (w == nullptr || w->IsNull()) return;
  if (!w->IsNumber() || !std::isfinite(w->GetDouble()) || w->GetDouble() < 0 || w->GetDouble() > 1000) {
    if (err.empty()) err = "spec.costWeight must be a number from 0 to 1000";
    return;
  }
  f.cost_weight = w->GetDouble();
}

void DecodeFleetSpec(const json::Value& spec, FleetSpec& f, std::string& err) {
  if (const json::Value* sel = json::Find(spec, {"nodeSelector"}); sel != nullptr && sel->IsObject()) {
    for (auto& m : sel->GetObject()) {
      if (m.value.IsString()) f.node_selector.emplace(m.name.GetString(), m.value.GetString());
    }
  }
  ReadBlocks(spec, f, err);
  f.cluster_placement = json::GetString(spec, "placement", "any") == "cluster";
  f.topology_key = json::GetString(spec, "topologyKey");
  if (const json::Value* levels = json::Find(spec, {"topology"}); levels != nullptr && levels->IsArray()) {
    for (const json::Value& level : levels->GetArray()) {
      const std::string key = json::GetString(level, "key");
      if (!key.empty()) f.topology.push_back(key);
    }
  }
  f.gpu_resource = json::GetString(spec, "gpuResource", "nvidia.com/gpu");
  ReadDevices(spec, f, err);
  if (const json::Value* m = json::Find(spec, {"maxRunsPerInstance"}); m != nullptr && m->IsInt64()) {
    f.max_runs_per_instance = m->GetInt64();
  }
  ReadPreemption(spec, f, err);
  std::string lifetime = json::GetString(spec, "instanceLifetime");
  if (!lifetime.empty()) {
    auto d = k8s::ParseDurationStrict(lifetime);
    if (d.ok()) {
      f.instance_lifetime = d.value();
    } else if (err.empty()) {
      err = "spec.instanceLifetime: " + d.status().message();
    }
  }
  ReadCostWeight(spec, f, err);
  std::string grace = json::GetString(spec, "maxGracePeriod");
  if (!grace.empty()) {
    auto d = k8s::ParseDurationStrict(grace);
    if (d.ok()) {
      f.max_grace_period = d.value();
    } else if (err.empty()) {
      err = "spec.maxGracePeriod: " + d.status().message();
    }
  }
}

FleetInstance ReadInstance(Reader& e) {
  FleetInstance r;
  r.node = e.String("node").value_or("");
  r.uid = e.String("uid").value_or("");
  r.total_blocks = e.Int("totalBlocks").value_or(0);
  r.busy_blocks = e.Int("busyBlocks").value_or(0);
  r.runs_started = e.Int("runsStarted").value_or(0);
  r.counted_runs = e.Strings("countedRuns");
  r.expires_at = e.TimeAt("expiresAt");
  if (auto state = e.String("state"); state && !state->empty()) {
    r.state = ParseInstanceState(*state);
    if (!r.state) e.Note("state", "is not an instance state: \"" + *state + "\"");
  }
  r.message = e.String("message").value_or("");
  r.held_by_other_pods = e.String("heldByOtherPods").value_or("");
  r.devices = e.String("devices").value_or("");
  r.domain = e.String("domain").value_or("");
  return r;
}

FleetStatus ReadFleetStatus(const json::Value& v, std::string& problem) {
  FleetStatus s;
  Reader st(&v, "status", &problem);
  for (Reader& e : st.Objects("instances")) s.instances.push_back(ReadInstance(e));
  s.total_instances = st.Int("totalInstances").value_or(0);
  s.ready_instances = st.Int("readyInstances").value_or(0);
  s.total_blocks = st.Int("totalBlocks").value_or(0);
  s.busy_blocks = st.Int("busyBlocks").value_or(0);
  s.observed_generation = st.Int("observedGeneration").value_or(0);
  s.conditions = io::ReadConditions(st);
  return s;
}

void WriteFleetSpec(Writer& w, const FleetSpec& s) {
  auto& raw = w.raw();
  raw.StartObject();
  w.Key("nodeSelector");
  raw.StartObject();
  for (const auto& [k, v] : s.node_selector) w.StringMember(k, v);
  raw.EndObject();
  if (s.blocks_auto) {
    w.StringMember("blocks", "auto");
  } else {
    w.IntMember("blocks", s.blocks);
  }
  w.StringMember("placement", s.cluster_placement ? "cluster" : "any");
  w.StringMemberIfSet("topologyKey", s.topology_key);
  if (!s.topology.empty()) {
    w.Key("topology");
    raw.StartArray();
    for (const std::string& key : s.topology) {
      raw.StartObject();
      w.StringMember("key", key);
      raw.EndObject();
    }
    raw.EndArray();
  }
  if (s.device_class.empty()) {
    w.StringMember("gpuResource", s.gpu_resource);
  } else {
    w.Key("devices");
    raw.StartObject();
    w.StringMember("deviceClassName", s.device_class);
    raw.EndObject();
  }
  w.IntMemberIfSet("maxRunsPerInstance", s.max_runs_per_instance);
  if (s.instance_lifetime) w.StringMember("instanceLifetime", base::FormatDuration(*s.instance_lifetime));
  w.StringMember("maxGracePeriod", base::FormatDuration(s.max_grace_period));
  if (s.cost_weight != 1) w.NumberMember("costWeight", s.cost_weight);
  w.Key("preemption");
  raw.StartObject();
  w.StringMember("policy", s.preempt_lower_priority ? "LowerPriority" : "Never");
  w.StringMember("minRuntime", base::FormatDuration(s.min_runtime));
  w.StringMember("reclaim", s.reclaim_borrowed ? "Borrowed" : "Never");
  raw.EndObject();
  raw.EndObject();
}

void WriteInstance(Writer& w, const FleetInstance& r) {
  w.raw().StartObject();
  w.StringMember("node", r.node);
  w.StringMember("uid", r.uid);
  w.IntMember("totalBlocks", r.total_blocks);
  w.IntMember("busyBlocks", r.busy_blocks);
  w.IntMember("runsStarted", r.runs_started);
  w.Key("countedRuns");
  w.StringList(r.counted_runs);
  w.TimeMemberIfSet("expiresAt", r.expires_at);
  if (r.state) w.StringMember("state", ToApi(*r.state));
  w.StringMemberIfSet("message", r.message);
  w.StringMemberIfSet("heldByOtherPods", r.held_by_other_pods);
  w.StringMemberIfSet("devices", r.devices);
  w.StringMemberIfSet("domain", r.domain);
  w.raw().EndObject();
}

void WriteFleetStatus(Writer& w, const FleetStatus& s) {
  w.raw().StartObject();
  w.Key("instances");
  w.raw().StartArray();
  for (const auto& r : s.instances) WriteInstance(w, r);
  w.raw().EndArray();
  w.IntMember("totalInstances", s.total_instances);
  w.IntMember("readyInstances", s.ready_instances);
  w.IntMember("totalBlocks", s.total_blocks);
  w.IntMember("busyBlocks", s.busy_blocks);
  w.IntMember("observedGeneration", s.observed_generation);
  w.Key("conditions");
  io::WriteConditions(w, s.conditions);
  w.raw().EndObject();
}

}  // namespace

k8s::Result<Fleet> DecodeFleet(const json::Value& obj, const FleetDecodeOptions& options) {
  if (!obj.IsObject()) return k8s::Status::Error("a Fleet must be a JSON object");
  Fleet f;
  f.meta = k8s::DecodeMeta(obj);
  if (f.meta.name.empty()) return k8s::Status::Error("a Fleet needs metadata.name");
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec != nullptr && spec->IsObject()) DecodeFleetSpec(*spec, f.spec, f.invalid_message);
  if (options.keep_spelling) {
    const bool has_spec = spec != nullptr && spec->IsObject();
    f.spelling = FleetSpelling{has_spec ? io::ScalarText(json::Find(*spec, {"placement"})) : "",
                               has_spec ? io::ScalarText(json::Find(*spec, {"blocks"})) : "",
                               has_spec ? io::ScalarText(json::Find(*spec, {"instanceLifetime"})) : "",
                               has_spec ? io::ScalarText(json::Find(*spec, {"maxGracePeriod"})) : ""};
  }
  if (f.spec.node_selector.empty() && f.invalid_message.empty()) f.invalid_message = "spec.nodeSelector is empty";
  if (const json::Value* st = json::Find(obj, {"status"}); st != nullptr && st->IsObject()) {
    f.has_status = true;
    f.status = ReadFleetStatus(*st, f.status_problem);
    f.instance_by_uid.reserve(f.status.instances.size());
    for (size_t i = 0; i < f.status.instances.size(); ++i) f.instance_by_uid.emplace(f.status.instances[i].uid, i);
  }
  return f;
}

std::string EncodeFleet(const Fleet& fleet) {
  return io::EncodeObject(
      "Fleet", fleet.meta, [&](Writer& w) { WriteFleetSpec(w, fleet.spec); },
      [&](Writer& w) { WriteFleetStatus(w, fleet.status); });
}

std::string EncodeFleetStatus(const FleetStatus& status) {
  Writer w;
  WriteFleetStatus(w, status);
  return w.Take();
}

std::string FleetStatusPatch(const FleetStatus& status, std::string_view resource_version) {
  return io::MergePatch(resource_version, "status", [&](Writer& w) { WriteFleetStatus(w, status); });
}

}  // namespace berth::api::v1alpha1
