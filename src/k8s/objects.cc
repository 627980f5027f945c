#include "k8s/objects.h"

#include <algorithm>
#include <cstdint>

#include "k8s/quantity.h"
#include "k8s/timefmt.h"

namespace berth::k8s {
namespace {

void ReadStringMap(const json::Value* v, std::map<std::string, std::string>& out, std::string_view prefix) {
  if (v == nullptr || !v->IsObject()) return;
  for (auto& m : v->GetObject()) {
    if (!m.value.IsString()) continue;
    std::string_view key(m.name.GetString(), m.name.GetStringLength());
    if (key.substr(0, prefix.size()) == prefix) out.emplace(key, m.value.GetString());
  }
}

TimePoint ReadTime(const json::Value* v) {
  if (v == nullptr || !v->IsString()) return TimePoint{};
  auto t = ParseRfc3339(v->GetString());
  return t.ok() ? t.value() : TimePoint{};
}

}  // namespace

bool ObjectMeta::HasFinalizer(const std::string& f) const {
  for (const auto& x : finalizers) {
    if (x == f) return true;
  }
  return false;
}

const OwnerRef* ObjectMeta::ControllerRef() const {
  for (const auto& o : owners) {
    if (o.controller) return &o;
  }
  return nullptr;
}

std::string ResourceVersionOf(const json::Value& obj) {
  return json::GetString(json::Find(obj, {"metadata", "resourceVersion"}));
}

ObjectMeta DecodeMeta(const json::Value& obj, std::string_view keep_prefix) {
  return DecodeMeta(obj, MetaKeep{.label_prefix = keep_prefix});
}

ObjectMeta DecodeMeta(const json::Value& obj, const MetaKeep& keep) {
  ObjectMeta m;
  const json::Value* meta = json::Find(obj, {"metadata"});
  if (meta == nullptr || !meta->IsObject()) return m;
  m.ns = json::GetString(*meta, "namespace");
  m.name = json::GetString(*meta, "name");
  m.uid = json::GetString(*meta, "uid");
  m.resource_version = json::GetString(*meta, "resourceVersion");
  m.generation = json::GetInt(*meta, "generation");
  m.created = ReadTime(json::Find(*meta, {"creationTimestamp"}));
  const json::Value* deletion = json::Find(*meta, {"deletionTimestamp"});
  m.deleting = deletion != nullptr && !deletion->IsNull();  // null is "not set", as Go decodes it
  ReadStringMap(json::Find(*meta, {"labels"}), m.labels, keep.label_prefix);
  if (!keep.also_label_prefix.empty() && !keep.label_prefix.empty()) {
    ReadStringMap(json::Find(*meta, {"labels"}), m.labels, keep.also_label_prefix);
  }
  ReadStringMap(json::Find(*meta, {"annotations"}), m.annotations, keep.label_prefix);
  if (const json::Value* f = json::Find(*meta, {"finalizers"}); f != nullptr && f->IsArray()) {
    int32_t index = 0;
    for (auto& x : f->GetArray()) {
      if (!x.IsString()) continue;
      const std::string_view name(x.GetString(), x.GetStringLength());
      if (!keep.finalizer.empty() && name == keep.finalizer && m.kept_finalizer_index < 0) m.kept_finalizer_index = index;
      if (!keep.only_needed || (!keep.finalizer.empty() && name == keep.finalizer && m.finalizers.empty())) {
        m.finalizers.emplace_back(name);
      } else {
        ++m.finalizers_left_out;
      }
      ++index;
    }
  }
  if (const json::Value* o = json::Find(*meta, {"ownerReferences"}); o != nullptr && o->IsArray()) {
    bool have_controller = false;
    for (auto& x : o->GetArray()) {
      const bool controller = json::GetBool(x, "controller");
      if (keep.only_needed && (!controller || have_controller)) {
        ++m.owners_left_out;
        continue;
      }
      have_controller |= controller;
      OwnerRef r;
      r.api_version = json::GetString(x, "apiVersion");
      r.kind = json::GetString(x, "kind");
      r.name = json::GetString(x, "name");
      r.uid = json::GetString(x, "uid");
      r.controller = controller;
      m.owners.push_back(std::move(r));
    }
  }
  return m;
}

std::shared_ptr<const Node> DecodeNode(const json::Value& obj) {
  auto n = std::make_shared<Node>();
  n->meta = DecodeMeta(obj);
  if (n->meta.name.empty()) return nullptr;
  n->unschedulable = json::Find(obj, {"spec", "unschedulable"}) != nullptr &&
                     json::Find(obj, {"spec", "unschedulable"})->IsBool() &&
                     json::Find(obj, {"spec", "unschedulable"})->GetBool();
  if (const json::Value* alloc = json::Find(obj, {"status", "allocatable"}); alloc != nullptr && alloc->IsObject()) {
    for (auto& m : alloc->GetObject()) {
      if (!m.value.IsString()) continue;
      std::string key = m.name.GetString();
      if (key == "cpu") {
        auto v = ParseMilliValue(m.value.GetString());
        if (v.ok()) n->cpu_milli = v.value();
        if (!v.ok()) n->unreadable[key] = v.status().message();
      } else {
        auto v = ParseValue(m.value.GetString());
        if (!v.ok()) {
          n->unreadable[key] = v.status().message();
          continue;
        }
        if (key == "memory") n->memory_bytes = v.value();
        n->extended[key] = v.value();
      }
    }
  }
  if (const json::Value* conds = json::Find(obj, {"status", "conditions"}); conds != nullptr && conds->IsArray()) {
    for (auto& c : conds->GetArray()) {
      if (json::GetString(c, "type") == "Ready") n->ready = json::GetString(c, "status") == "True";
    }
  }
  return n;
}

namespace {

// Adds (or maxes, for init containers) one resource list into `out`.
void AccumulateRequests(const json::Value* list, PodRequests& out, bool take_max) {
  if (list == nullptr || !list->IsObject()) return;
  for (auto m = list->MemberBegin(); m != list->MemberEnd(); ++m) {
    if (!m->value.IsString()) continue;
    std::string name = m->name.GetString();
    int64_t* slot = nullptr;
    Result<int64_t> v = name == "cpu" ? ParseMilliValue(m->value.GetString()) : ParseValue(m->value.GetString());
    if (!v.ok() || v.value() < 0) continue;
    if (name == "cpu") {
      slot = &out.cpu_milli;
    } else if (name == "memory") {
      slot = &out.memory_bytes;
    } else {
      slot = &out.extended[name];
    }
    if (take_max) {
      *slot = std::max(*slot, v.value());
    } else if (*slot > INT64_MAX - v.value()) {
      *slot = INT64_MAX;
    } else {
      *slot += v.value();
    }
  }
}

// Requests of one container (the API server has already defaulted requests from limits).
PodRequests ContainerRequests(const json::Value& c) {
  PodRequests r;
  AccumulateRequests(json::Find(c, {"resources", "requests"}), r, false);
  return r;
}

void Add(PodRequests& into, const PodRequests& r, bool take_max) {
  auto add = [take_max](int64_t& a, int64_t b) {
    if (take_max) {
      a = std::max(a, b);
    } else {
      a = a > INT64_MAX - b ? INT64_MAX : a + b;
    }
  };
  add(into.cpu_milli, r.cpu_milli);
  add(into.memory_bytes, r.memory_bytes);
  for (const auto& [k, v] : r.extended) add(into.extended[k], v);
}

// A restartable init container (a sidecar, Kubernetes 1.29+): an init container with
// restartPolicy Always. It starts in init order and keeps running beside the containers.
bool IsSidecar(const json::Value& c) { return json::GetString(c, "restartPolicy") == "Always"; }

// Resources a Pod may set at Pod level (spec.resources, PodLevelResources: beta and on by default
// since 1.34): cpu, memory and hugepages. Others (extended resources such as GPUs) are refused
// there by the API server and always come from the containers.
bool IsPodLevelResource(const std::string& name) {
  return name == "cpu" || name == "memory" || name.rfind("hugepages-", 0) == 0;
}

// As k8s.io/component-helpers/resource PodRequests (what kubelet 1.37 admits and kube-scheduler
// fits), from the spec: the containers summed plus every sidecar; the init containers taken in
// order, each regular one needing its own request plus the sidecars started before it, each
// sidecar raising what the later ones stand on; the Pod needs the larger of the two. Pod-level
// requests then replace that for the resources they set, and spec.overhead is added. (The kubelet
// counts a Pod it runs by its allocated resources, which are its spec except while a resize is
// in flight.)
PodRequests EffectiveRequests(const json::Value& obj) {
  PodRequests sum, sidecars, init_peak;
  if (const json::Value* cs = json::Find(obj, {"spec", "containers"}); cs != nullptr && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) Add(sum, ContainerRequests(c), false);
  }
  if (const json::Value* cs = json::Find(obj, {"spec", "initContainers"}); cs != nullptr && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) {
      const PodRequests r = ContainerRequests(c);
      if (IsSidecar(c)) {
        Add(sum, r, false);
        Add(sidecars, r, false);
        Add(init_peak, sidecars, true);
      } else {
        PodRequests step = r;
        Add(step, sidecars, false);
        Add(init_peak, step, true);
      }
    }
  }
  Add(sum, init_peak, true);
  if (const json::Value* pod = json::Find(obj, {"spec", "resources", "requests"}); pod != nullptr && pod->IsObject()) {
    for (auto m = pod->MemberBegin(); m != pod->MemberEnd(); ++m) {
      const std::string name = m->name.GetString();
      if (!IsPodLevelResource(name) || !m->value.IsString()) continue;
      Result<int64_t> v = name == "cpu" ? ParseMilliValue(m->value.GetString()) : ParseValue(m->value.GetString());
      if (!v.ok() || v.value() < 0) continue;  // unreadable: the containers' sum stands
      if (name == "cpu") {
        sum.cpu_milli = v.value();
      } else if (name == "memory") {
        sum.memory_bytes = v.value();
      } else {
        sum.extended[name] = v.value();
      }
    }
  }
  PodRequests overhead;
  AccumulateRequests(json::Find(obj, {"spec", "overhead"}), overhead, false);
  Add(sum, overhead, false);
  return sum;
}

std::string WaitingReason(const json::Value& obj) {
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const json::Value* cs = json::Find(obj, {"status", list});
    if (cs == nullptr || !cs->IsArray()) continue;
    for (const auto& c : cs->GetArray()) {
      const json::Value* w = json::Find(c, {"state", "waiting"});
      if (w == nullptr || !w->IsObject()) continue;
      std::string reason = json::GetString(*w, "reason");
      if (reason.empty() || reason == "ContainerCreating" || reason == "PodInitializing") continue;
      std::string message = json::GetString(*w, "message");
      return message.empty() ? reason : reason + ": " + message;
    }
  }
  return "";
}

// Issue 49: the message of condition PodScheduled False with reason Unschedulable (kube-scheduler
// could not place the Pod; at most 2 KiB of it); "" otherwise.
std::string UnschedulableMessage(const json::Value& obj) {
  const json::Value* conds = json::Find(obj, {"status", "conditions"});
  if (conds == nullptr || !conds->IsArray()) return "";
  for (const auto& c : conds->GetArray()) {
    if (json::GetString(c, "type") != "PodScheduled" || json::GetString(c, "status") != "False" ||
        json::GetString(c, "reason") != "Unschedulable") {
      continue;
    }
    std::string m = json::GetString(c, "message", "Unschedulable");
    if (m.size() > 2048) m = m.substr(0, 2048) + "...";
    return m;
  }
  return "";
}

bool AnyContainerStarted(const json::Value& obj) {
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const json::Value* cs = json::Find(obj, {"status", list});
    if (cs == nullptr || !cs->IsArray()) continue;
    for (const auto& c : cs->GetArray()) {
      for (const char* state : {"running", "terminated"}) {
        const json::Value* st = json::Find(c, {"state", state});
        if (st != nullptr && st->IsObject()) return true;
      }
      const json::Value* last = json::Find(c, {"lastState", "terminated"});
      if (last != nullptr && last->IsObject()) return true;
    }
  }
  return false;
}

}  // namespace

std::shared_ptr<const Pod> DecodePod(const json::Value& obj) { return DecodePodKeeping(obj, MetaKeep{}); }

std::shared_ptr<const Pod> DecodePodKeeping(const json::Value& obj, std::string_view keep_prefix) {
  return DecodePodKeeping(obj, MetaKeep{.label_prefix = keep_prefix});
}

std::shared_ptr<const Pod> DecodePodKeeping(const json::Value& obj, const MetaKeep& keep) {
  auto p = std::make_shared<Pod>();
  p->meta = DecodeMeta(obj, keep);
  if (p->meta.name.empty()) return nullptr;
  p->node_name = json::GetString(json::Find(obj, {"spec", "nodeName"}));
  p->scheduler_name = json::GetString(json::Find(obj, {"spec", "schedulerName"}));
  p->phase = json::GetString(json::Find(obj, {"status", "phase"}));
  p->reason = json::GetString(json::Find(obj, {"status", "reason"}));
  p->message = json::GetString(json::Find(obj, {"status", "message"}));
  p->requests = EffectiveRequests(obj);
  p->waiting = WaitingReason(obj);
  p->started = AnyContainerStarted(obj);
  if (p->node_name.empty()) p->unschedulable = UnschedulableMessage(obj);
  if (const json::Value* g = json::Find(obj, {"spec", "terminationGracePeriodSeconds"}); g != nullptr && g->IsInt64() &&
                                                                                           g->GetInt64() >= 0) {
    p->grace_seconds = g->GetInt64();
  }
  return p;
}

}  // namespace berth::k8s
