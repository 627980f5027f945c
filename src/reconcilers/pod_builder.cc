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

// A quantity of the template as the API server reads it (a string, or a number as YAML writes
// `cpu: 2`); -1 when it cannot be read.
int64_t ReadQuantity(const json::Value& q, std::string_view resource) {
  std::string text;
  if (q.IsString()) {
    text = q.GetString();
  } else if (q.IsNumber()) {
    text = json::Serialize(q);
  } else {
    return -1;
  }
  auto v = resource == "cpu" ? k8s::ParseMilliValue(text) : k8s::ParseValue(text);
  return v.ok() && v.value() >= 0 ? v.value() : -1;
}

// A container's request for one resource as the API server will default it: the request, else
// the limit. -1 when a quantity cannot be read.
int64_t ContainerRequest(const json::Value& c, const char* resource) {
  for (const char* kind : {"requests", "limits"}) {
    const json::Value* q = json::Find(c, {"resources", kind, resource});
    if (q != nullptr) return ReadQuantity(*q, resource);
  }
  return 0;
}

// A restartable init container (a sidecar): an init container with restartPolicy Always.
bool IsSidecar(const json::Value& c) { return json::GetString(c, "restartPolicy") == "Always"; }

// What a template asks of one resource (cpu or memory) beside its first container, counted the
// way kubelet 1.37 admits a Pod (k8s.io/component-helpers/resource PodRequests): the containers
// after the first and every sidecar run beside it; init containers run one at a time in order,
// each regular one beside the sidecars started before it; spec.overhead comes on top of it all;
// Pod-level requests and limits (spec.resources) set the Pod's figure for the resource instead.
struct TemplateAsk {
  const char* resource = "";
  int64_t others = 0;  // the containers after the first plus every sidecar
  bool other_containers = false, sidecars = false;
  int64_t init_peak = 0;  // the largest regular init container plus the sidecars started before it
  std::string init_peak_name;
  bool init_peak_after_sidecars = false;
  int64_t overhead = 0;
  int64_t pod_request = -1, pod_limit = -1;  // spec.resources.requests/limits; -1 when not set

  bool PodLevel() const { return pod_request >= 0 || pod_limit >= 0; }
  std::string Amount(int64_t v) const {
    return std::string_view(resource) == "cpu" ? k8s::FormatMilli(v) + " CPU" : k8s::FormatBytes(v) + " memory";
  }
  std::string Format(int64_t v) const { return std::string_view(resource) == "cpu" ? k8s::FormatMilli(v) : k8s::FormatBytes(v); }
};

// a + b for quantities (never negative), capped at 2^60: far above any machine, and no overflow.
int64_t Sum(int64_t a, int64_t b) {
  constexpr int64_t kCap = int64_t{1} << 60;
  return std::min(std::min(a, kCap) + std::min(b, kCap), kCap);
}

k8s::Result<std::vector<TemplateAsk>> ReadTemplateAsks(const json::Value& spec, const std::string& gpu_resource) {
  std::vector<TemplateAsk> asks(2);
  asks[0].resource = "cpu";
  asks[1].resource = "memory";
  for (const char* list : {"containers", "initContainers"}) {
    const json::Value* cs = json::Find(spec, {list});
    if (cs == nullptr || !cs->IsArray()) continue;
    const bool init = std::string_view(list) == "initContainers";
    std::vector<int64_t> sidecars_so_far(asks.size(), 0);
    for (rapidjson::SizeType i = init ? 0 : 1; i < cs->Size(); ++i) {
      const json::Value& c = (*cs)[i];
      if (!c.IsObject()) continue;
      const std::string name = json::GetString(c, "name");
      const bool sidecar = init && IsSidecar(c);
      const std::string what = sidecar ? "sidecar " : init ? "init container " : "container ";
      const int64_t gpus = ContainerRequest(c, gpu_resource.c_str());
      if (gpus < 0) return k8s::Status::Error(what + name + " has a resource quantity berth cannot read");
      if (gpus > 0) {
        return k8s::Status::Error(what + name + " asks for " + gpu_resource + ": only the first container gets the run's GPUs");
      }
      for (size_t k = 0; k < asks.size(); ++k) {
        TemplateAsk& ask = asks[k];
        const int64_t v = ContainerRequest(c, ask.resource);
        if (v < 0) return k8s::Status::Error(what + name + " has a resource quantity berth cannot read");
        if (!init || sidecar) {
          ask.others = Sum(ask.others, v);
          if (v > 0) (sidecar ? ask.sidecars : ask.other_containers) = true;
        }
        if (sidecar) {
          sidecars_so_far[k] = Sum(sidecars_so_far[k], v);  // never above `others`: no peak of its own
        } else if (init && Sum(v, sidecars_so_far[k]) > ask.init_peak) {
          ask.init_peak = Sum(v, sidecars_so_far[k]);
          ask.init_peak_name = name;
          ask.init_peak_after_sidecars = sidecars_so_far[k] > 0;
        }
      }
    }
  }
  for (TemplateAsk& ask : asks) {
    if (const json::Value* q = json::Find(spec, {"overhead", ask.resource}); q != nullptr) {
      ask.overhead = ReadQuantity(*q, ask.resource);
      if (ask.overhead < 0) return k8s::Status::Error(std::string("spec.template.spec.overhead.") + ask.resource + " is a quantity berth cannot read");
    }
    for (const char* kind : {"requests", "limits"}) {
      const json::Value* q = json::Find(spec, {"resources", kind, ask.resource});
      if (q == nullptr) continue;
      const int64_t v = ReadQuantity(*q, ask.resource);
      if (v < 0) {
        return k8s::Status::Error(std::string("spec.template.spec.resources.") + kind + "." + ask.resource +
                                  " is a quantity berth cannot read");
      }
      (std::string_view(kind) == "requests" ? ask.pod_request : ask.pod_limit) = v;
    }
  }
  return asks;
}

// Whether the template's Pod fits `budget` (the blocks' amount of the resource) as the kubelet
// will count it once the first container has what is left (or, with Pod-level resources, as the
// template sets it).
k8s::Status CheckFits(const TemplateAsk& ask, int64_t budget, const std::string& node) {
  const std::string blocks = "the run's blocks on " + node + " hold " + ask.Format(budget) + " in all";
  const std::string overhead = ask.overhead > 0 ? " (the Pod's overhead of " + ask.Format(ask.overhead) + " included)" : "";
  if (ask.PodLevel()) {
    for (const char* kind : {"requests", "limits"}) {
      const int64_t v = std::string_view(kind) == "requests" ? ask.pod_request : ask.pod_limit;
      if (v < 0 || Sum(v, ask.overhead) <= budget) continue;
      const std::string with_overhead =
          ask.overhead > 0 ? " (" + ask.Format(Sum(v, ask.overhead)) + " with the Pod's overhead of " + ask.Format(ask.overhead) + ")" : "";
      return k8s::Status::Error(std::string("spec.template.spec.resources.") + kind + "." + ask.resource + " is " +
                                ask.Format(v) + with_overhead + ", more than the run's blocks on " + node + " hold (" +
                                ask.Format(budget) + "): set spec.resources." + ask.resource + " to at least " +
                                ask.Format(Sum(v, ask.overhead)) + " so that the run is given blocks that hold it");
    }
    return k8s::Status();
  }
  if (Sum(ask.others, ask.overhead) >= budget) {
    std::vector<std::string> who;
    if (ask.other_containers) who.push_back("the other containers");
    if (ask.sidecars) who.push_back("the sidecars");
    if (ask.overhead > 0) who.push_back("the Pod's overhead");
    std::string subject = who.empty() ? "the other containers" : who[0];
    for (size_t i = 1; i < who.size(); ++i) subject += (i + 1 == who.size() ? " and " : ", ") + who[i];
    return k8s::Status::Error(subject + " ask for " + ask.Amount(Sum(ask.others, ask.overhead)) + ", but " + blocks +
                              ", which leaves nothing for the first container: ask for more resources in spec.resources");
  }
  if (Sum(ask.init_peak, ask.overhead) > budget) {
    return k8s::Status::Error("init container " + ask.init_peak_name +
                              (ask.init_peak_after_sidecars ? " and the sidecars started before it ask" : " asks") +
                              " for " + ask.Amount(Sum(ask.init_peak, ask.overhead)) + overhead + ", but " + blocks +
                              ": ask for more resources in spec.resources");
  }
  return k8s::Status();
}

}  // namespace

bool IsOwnedByRun(const k8s::ObjectMeta& object, const Run* run) {
  if (run == nullptr || run->meta.uid.empty() || object.ns != run->meta.ns) return false;
  const k8s::OwnerRef* ref = object.ControllerRef();
  return ref != nullptr && ref->kind == "Run" && ref->uid == run->meta.uid && ref->name == run->meta.name &&
         ref->api_version.rfind("berth.dev/", 0) == 0;
}

std::string PodName(const std::string& run, int64_t attempt, int rank) {
  if (attempt <= 0) return run + "-" + std::to_string(rank);
  return run + "-" + std::to_string(rank) + "-r" + std::to_string(attempt);
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
  meta.AddMember("name", Str(me.pod.empty() ? PodName(run.meta.name, run.status.resubmissions, me.rank) : me.pod, a), a);
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

// The blocks are the Pod's whole budget, counted the way the kubelet admits it. For cpu and
// memory: the first container gets the blocks less what the other containers, the sidecars and
// the overhead ask for (requests and limits); no init step may need more than the blocks. A
// resource the template sets at Pod level (spec.resources) keeps the template's figures, which
// must fit the blocks; a Pod-level limit it leaves out becomes the blocks' amount (the Pod may use
// its blocks, never more), and the first container keeps what the template gives it. Only the
// first container gets GPUs (Kubernetes has no Pod-level GPUs).
// `spec` gets members here: references into it taken before are not valid after.
k8s::Status SetBudget(json::Value& spec, const std::string& gpu_resource, const RankAssignment& me, Alloc& a) {
  auto asks = ReadTemplateAsks(spec, gpu_resource);
  if (!asks.ok()) return asks.status();
  const int64_t budgets[] = {me.resources.cpu_millis, me.resources.memory_bytes};
  for (size_t k = 0; k < asks.value().size(); ++k) {
    if (budgets[k] <= 0) continue;
    if (k8s::Status s = CheckFits(asks.value()[k], budgets[k], me.node); !s.ok()) return s;
  }
  json::Value& first = spec["containers"][0];
  if (!first.IsObject()) return k8s::Status::Error("spec.template.spec.containers[0] is not an object");
  json::Value& res = ObjectMember(first, "resources", a);
  for (const char* kind : {"requests", "limits"}) {
    json::Value& m = ObjectMember(res, kind, a);
    for (size_t k = 0; k < asks.value().size(); ++k) {
      const TemplateAsk& ask = asks.value()[k];
      if (budgets[k] > 0 && !ask.PodLevel()) SetString(m, ask.resource, ask.Format(budgets[k] - ask.others - ask.overhead), a);
    }
    // Set to the blocks given: a GPU count the template asked for but the blocks lack goes.
    m.RemoveMember(gpu_resource.c_str());
    if (me.resources.gpus > 0) m.AddMember(Str(gpu_resource, a), Str(std::to_string(me.resources.gpus), a), a);
  }
  for (size_t k = 0; k < asks.value().size(); ++k) {
    const TemplateAsk& ask = asks.value()[k];
    if (budgets[k] <= 0 || !ask.PodLevel() || ask.pod_limit >= 0) continue;
    const json::Value* given = json::Find(spec, {"resources", "limits"});
    if (given != nullptr && !given->IsObject()) continue;  // the API server refuses the template's own
    json::Value& limits = ObjectMember(ObjectMember(spec, "resources", a), "limits", a);
    SetString(limits, ask.resource, ask.Format(budgets[k] - ask.overhead), a);
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
  if (!run.spec.template_json.empty()) tmpl.Parse<rapidjson::kParseIterativeFlag>(run.spec.template_json.c_str());  // our own serialization: depth already capped
  if (run.spec.template_json.empty() || tmpl.HasParseError() || !tmpl.IsObject()) {
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
  const json::Value* containers = spec.HasMember("containers") ? &spec["containers"] : nullptr;
  if (containers == nullptr || !containers->IsArray() || containers->Empty()) {
    return k8s::Status::Error("spec.template.spec.containers must list at least one container");
  }
  if (k8s::Status s = SetBudget(spec, gpu_resource, me, a); !s.ok()) return s;
  SetRunEnv(spec["containers"], run, ranks, me, a);
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
