#include "reconcilers/pod_builder.h"

#include <algorithm>
#include <string_view>

#include "k8s/quantity.h"

namespace berth::reconcilers {

namespace json = k8s::json;
namespace sched = scheduling;
using rapidjson::StringRef;

namespace {

using Alloc = json::Document::AllocatorType;

json::Value Str(const std::string& s, Alloc& a) { return json::Value(s.c_str(), static_cast<rapidjson::SizeType>(s.size()), a); }

// These use HasMember + operator[] rather than comparing FindMember with MemberEnd(): RapidJSON
// 1.1.0's mutable member iterators compare ambiguously under C++20 (clang
// -Wambiguous-reversed-operator).

// obj[key] as an object, created (or replaced when not an object).
json::Value& ObjectMember(json::Value& obj, const char* key, Alloc& a) {
  if (!obj.HasMember(key)) obj.AddMember(json::Value(key, a), json::Value(rapidjson::kObjectType), a);
  json::Value& v = obj[key];
  if (!v.IsObject()) v.SetObject();
  return v;
}

json::Value& ArrayMember(json::Value& obj, const char* key, Alloc& a) {
  if (!obj.HasMember(key)) obj.AddMember(json::Value(key, a), json::Value(rapidjson::kArrayType), a);
  json::Value& v = obj[key];
  if (!v.IsArray()) v.SetArray();
  return v;
}

void SetString(json::Value& obj, const char* key, const std::string& v, Alloc& a) {
  if (obj.HasMember(key)) {
    obj[key] = Str(v, a);
  } else {
    obj.AddMember(json::Value(key, a), Str(v, a), a);
  }
}

// Sets (or replaces) env var `name` in a container's env list.
void SetEnv(json::Value& container, const std::string& name, const std::string& value, Alloc& a) {
  json::Value& env = ArrayMember(container, "env", a);
  for (auto& e : env.GetArray()) {
    if (json::GetString(e, "name") == name) {
      e.SetObject();
      e.AddMember("name", Str(name, a), a);
      e.AddMember("value", Str(value, a), a);
      return;
    }
  }
  json::Value e(rapidjson::kObjectType);
  e.AddMember("name", Str(name, a), a);
  e.AddMember("value", Str(value, a), a);
  env.PushBack(e, a);
}

// A container's request for one resource as the API server will default it: the request, else
// the limit. -1 when a quantity cannot be read.
int64_t ContainerRequest(const json::Value& c, const char* resource) {
  for (const char* kind : {"requests", "limits"}) {
    const json::Value* q = json::Find(c, {"resources", kind, resource});
    if (q == nullptr) continue;
    if (!q->IsString()) return -1;
    auto v = std::string_view(resource) == "cpu" ? k8s::ParseMilliValue(q->GetString()) : k8s::ParseValue(q->GetString());
    return v.ok() && v.value() >= 0 ? v.value() : -1;
  }
  return 0;
}

struct OtherRequests {
  sched::Resources sum;       // containers after the first
  sched::Resources init_max;  // the largest init container, per resource
};

k8s::Result<OtherRequests> OtherContainersRequests(const json::Value& spec, const std::string& gpu_resource) {
  OtherRequests out;
  for (const char* list : {"containers", "initContainers"}) {
    const json::Value* cs = json::Find(spec, {list});
    if (cs == nullptr || !cs->IsArray()) continue;
    const bool init = std::string_view(list) == "initContainers";
    for (rapidjson::SizeType i = init ? 0 : 1; i < cs->Size(); ++i) {
      const json::Value& c = (*cs)[i];
      if (!c.IsObject()) continue;
      std::string name = json::GetString(c, "name");
      int64_t cpu = ContainerRequest(c, "cpu"), memory = ContainerRequest(c, "memory");
      int64_t gpus = ContainerRequest(c, gpu_resource.c_str());
      if (cpu < 0 || memory < 0 || gpus < 0) {
        return k8s::Status::Error(std::string(list) + " " + name + " has a resource quantity berth cannot read");
      }
      if (gpus > 0) {
        return k8s::Status::Error(std::string(init ? "init container " : "container ") + name + " asks for " + gpu_resource +
                                  ": only the first container gets the run's GPUs");
      }
      if (init) {
        out.init_max.cpu_millis = std::max(out.init_max.cpu_millis, cpu);
        out.init_max.memory_bytes = std::max(out.init_max.memory_bytes, memory);
      } else {
        out.sum.cpu_millis = std::min<int64_t>(out.sum.cpu_millis + cpu, int64_t{1} << 60);
        out.sum.memory_bytes = std::min<int64_t>(out.sum.memory_bytes + memory, int64_t{1} << 60);
      }
    }
  }
  return out;
}

}  // namespace

std::string PodName(const std::string& run, int64_t attempt, int rank) {
  if (attempt <= 0) return run + "-" + std::to_string(rank);
  return run + "-r" + std::to_string(attempt) + "-" + std::to_string(rank);
}

std::string RankAddress(const Run& run, int rank) {
  return run.meta.name + "-" + std::to_string(rank) + "." + run.meta.name + "." + run.meta.ns + ".svc";
}

namespace {

// The Pod's metadata: the template's labels and annotations, berth's labels (run, rank,
// attempt), the blocks annotation and the Run as controlling owner.
json::Value PodMeta(const Run& run, const json::Document& tmpl, const RankAssignment& me, Alloc& a) {
  json::Value meta(rapidjson::kObjectType);
  if (const json::Value* tm = json::Find(tmpl, {"metadata"}); tm != nullptr && tm->IsObject()) {
    if (const json::Value* l = json::Find(*tm, {"labels"}); l != nullptr && l->IsObject()) {
      meta.AddMember("labels", json::Value(*l, a), a);
    }
    if (const json::Value* an = json::Find(*tm, {"annotations"}); an != nullptr && an->IsObject()) {
      meta.AddMember("annotations", json::Value(*an, a), a);
    }
  }
  meta.AddMember("name", Str(PodName(run.meta.name, run.status.resubmissions, me.rank), a), a);
  meta.AddMember("namespace", Str(run.meta.ns, a), a);
  json::Value& labels = ObjectMember(meta, "labels", a);
  SetString(labels, kRunLabel, run.meta.name, a);
  SetString(labels, kRankLabel, std::to_string(me.rank), a);
  SetString(labels, kAttemptLabel, std::to_string(run.status.resubmissions), a);
  SetString(ObjectMember(meta, "annotations", a), kBlocksAnnotation, std::to_string(me.blocks), a);
  json::Value owner(rapidjson::kObjectType);
  owner.AddMember("apiVersion", StringRef(kGroupVersion), a);
  owner.AddMember("kind", "Run", a);
  owner.AddMember("name", Str(run.meta.name, a), a);
  owner.AddMember("uid", Str(run.meta.uid, a), a);
  owner.AddMember("controller", true, a);
  owner.AddMember("blockOwnerDeletion", true, a);
  json::Value owners(rapidjson::kArrayType);
  owners.PushBack(owner, a);
  meta.AddMember("ownerReferences", owners, a);
  return meta;
}

// The blocks are the Pod's whole budget, counted the way the kubelet admits it: the first
// container gets the blocks' resources less what the other containers ask for; no init container
// may ask for more than the blocks; only the first container gets GPUs.
k8s::Status SetBudget(json::Value& spec, json::Value& containers, const std::string& gpu_resource,
                      const RankAssignment& me, Alloc& a) {
  auto others = OtherContainersRequests(spec, gpu_resource);
  if (!others.ok()) return others.status();
  const sched::Resources& sidecars = others.value().sum;
  const sched::Resources& init = others.value().init_max;
  if (me.resources.cpu_millis > 0 && (sidecars.cpu_millis >= me.resources.cpu_millis || init.cpu_millis > me.resources.cpu_millis)) {
    return k8s::Status::Error("the other containers ask for " + k8s::FormatMilli(std::max(sidecars.cpu_millis, init.cpu_millis)) +
                              " CPU, but the run's blocks on " + me.node + " hold " + k8s::FormatMilli(me.resources.cpu_millis) +
                              " in all: ask for more resources in spec.resources");
  }
  if (me.resources.memory_bytes > 0 &&
      (sidecars.memory_bytes >= me.resources.memory_bytes || init.memory_bytes > me.resources.memory_bytes)) {
    return k8s::Status::Error("the other containers ask for " + k8s::FormatBytes(std::max(sidecars.memory_bytes, init.memory_bytes)) +
                              " memory, but the run's blocks on " + me.node + " hold " +
                              k8s::FormatBytes(me.resources.memory_bytes) + " in all: ask for more resources in spec.resources");
  }
  json::Value& first = containers[0];
  if (!first.IsObject()) return k8s::Status::Error("spec.template.spec.containers[0] is not an object");
  json::Value& res = ObjectMember(first, "resources", a);
  const int64_t cpu = me.resources.cpu_millis - sidecars.cpu_millis;
  const int64_t memory = me.resources.memory_bytes - sidecars.memory_bytes;
  for (const char* kind : {"requests", "limits"}) {
    json::Value& m = ObjectMember(res, kind, a);
    if (me.resources.cpu_millis > 0) SetString(m, "cpu", k8s::FormatMilli(cpu), a);
    if (me.resources.memory_bytes > 0) SetString(m, "memory", k8s::FormatBytes(memory), a);
    // Set to the blocks given: a GPU count the template asked for but the blocks lack goes.
    m.RemoveMember(gpu_resource.c_str());
    if (me.resources.gpus > 0) m.AddMember(Str(gpu_resource, a), Str(std::to_string(me.resources.gpus), a), a);
  }
  return k8s::Status();
}

// BERTH_* in every container.
void SetRunEnv(json::Value& containers, const Run& run, const std::vector<RankAssignment>& ranks,
               const RankAssignment& me, Alloc& a) {
  const int nodes = static_cast<int>(ranks.size());
  std::string master = nodes > 1 ? RankAddress(run, 0) : "localhost";
  std::string addrs;
  for (int r = 0; r < nodes; ++r) {
    if (r > 0) addrs += "\n";
    addrs += nodes > 1 ? RankAddress(run, r) : "localhost";
  }
  int64_t gpus_total = 0;
  for (const auto& r : ranks) gpus_total += r.resources.gpus;
  for (auto& c : containers.GetArray()) {
    if (!c.IsObject()) continue;
    SetEnv(c, "BERTH_RUN_NAME", run.meta.name, a);
    SetEnv(c, "BERTH_NODE_RANK", std::to_string(me.rank), a);
    SetEnv(c, "BERTH_NODES_NUM", std::to_string(nodes), a);
    SetEnv(c, "BERTH_MASTER_NODE_ADDR", master, a);
    SetEnv(c, "BERTH_NODES_ADDRS", addrs, a);
    SetEnv(c, "BERTH_GPUS_PER_NODE", std::to_string(me.resources.gpus), a);
    SetEnv(c, "BERTH_GPUS_NUM", std::to_string(gpus_total), a);
    SetEnv(c, "BERTH_BLOCKS", std::to_string(me.blocks), a);
  }
}

}  // namespace

k8s::Result<std::string> BuildPod(const Run& run, const std::string& fleet, const std::string& gpu_resource,
                                  const std::vector<RankAssignment>& ranks, size_t index) {
  const RankAssignment& me = ranks.at(index);
  json::Document tmpl;
  if (!run.template_json.empty()) tmpl.Parse<rapidjson::kParseIterativeFlag>(run.template_json.c_str());  // our own serialization: depth already capped
  if (run.template_json.empty() || tmpl.HasParseError() || !tmpl.IsObject()) {
    return k8s::Status::Error("spec.template is not an object");
  }
  json::Document pod(rapidjson::kObjectType);
  Alloc& a = pod.GetAllocator();
  pod.AddMember("apiVersion", "v1", a);
  pod.AddMember("kind", "Pod", a);
  pod.AddMember("metadata", PodMeta(run, tmpl, me, a), a);

  json::Value spec(rapidjson::kObjectType);
  if (const json::Value* ts = json::Find(tmpl, {"spec"}); ts != nullptr && ts->IsObject()) spec.CopyFrom(*ts, a);
  // Created already bound to its rank's node: no pods/binding write. The node is only ever the
  // one of the committed placement (the template's own nodeName is replaced).
  SetString(spec, "nodeName", me.node, a);
  SetString(spec, "schedulerName", kSchedulerName, a);
  if (!spec.HasMember("restartPolicy")) spec.AddMember("restartPolicy", "Never", a);
  json::Value tol(rapidjson::kObjectType);
  tol.AddMember("key", StringRef(kFleetTaintKey), a);
  tol.AddMember("operator", "Equal", a);
  tol.AddMember("value", Str(fleet, a), a);
  ArrayMember(spec, "tolerations", a).PushBack(tol, a);
  if (ranks.size() > 1) {
    SetString(spec, "hostname", run.meta.name + "-" + std::to_string(me.rank), a);
    SetString(spec, "subdomain", run.meta.name, a);
  }
  json::Value* containers = spec.HasMember("containers") ? &spec["containers"] : nullptr;
  if (containers == nullptr || !containers->IsArray() || containers->Empty()) {
    return k8s::Status::Error("spec.template.spec.containers must list at least one container");
  }
  if (k8s::Status s = SetBudget(spec, *containers, gpu_resource, me, a); !s.ok()) return s;
  SetRunEnv(*containers, run, ranks, me, a);
  pod.AddMember("spec", spec, a);
  return json::Serialize(pod);
}

std::string BuildService(const Run& run) {
  return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":)" + json::Quote(run.meta.name) +
         R"(,"namespace":)" + json::Quote(run.meta.ns) + R"(,"labels":{")" + kRunLabel + R"(":)" +
         json::Quote(run.meta.name) + R"(},"ownerReferences":[{"apiVersion":")" + kGroupVersion +
         R"(","kind":"Run","name":)" + json::Quote(run.meta.name) + R"(,"uid":)" + json::Quote(run.meta.uid) +
         R"(,"controller":true,"blockOwnerDeletion":true}]},"spec":{"clusterIP":"None","publishNotReadyAddresses":true,"selector":{")" +
         kRunLabel + R"(":)" + json::Quote(run.meta.name) + R"(}}})";
}

}  // namespace berth::reconcilers
