#include "workloads/job.h"

namespace berth::workloads {

namespace json = k8s::json;

const k8s::Resource& JobKind::Resource() const {
  static const k8s::Resource kJobs{"batch", "v1", "jobs", true};
  return kJobs;
}

std::shared_ptr<const Workload> JobKind::Decode(const json::Value& obj) const {
  if (!obj.IsObject()) return nullptr;
  auto w = std::make_shared<Workload>();
  w->meta = k8s::DecodeMeta(obj, "berth.dev/");
  if (w->meta.name.empty()) return nullptr;
  w->kind = "Job";
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec == nullptr || !spec->IsObject()) return w;
  int64_t parallelism = 1;
  if (const json::Value* p = json::Find(*spec, {"parallelism"}); p != nullptr && p->IsInt64()) parallelism = p->GetInt64();
  if (const json::Value* c = json::Find(*spec, {"completions"}); c != nullptr && c->IsInt64()) {
    parallelism = std::min(parallelism, c->GetInt64());
  }
  w->pods = parallelism;
  w->suspended = json::GetBool(*spec, "suspend", false);
  // One Pod's requests as the kubelet counts them: the template's spec read as a Pod's.
  if (const json::Value* tspec = json::Find(*spec, {"template", "spec"}); tspec != nullptr && tspec->IsObject()) {
    json::Document pod(rapidjson::kObjectType);
    json::Value meta(rapidjson::kObjectType);
    meta.AddMember("name", "template", pod.GetAllocator());  // DecodePod reads only named objects
    pod.AddMember("metadata", meta, pod.GetAllocator());
    pod.AddMember("spec", json::Value(*tspec, pod.GetAllocator()), pod.GetAllocator());
    if (auto p = k8s::DecodePod(pod)) w->requests = p->requests;
  }
  if (const json::Value* conds = json::Find(obj, {"status", "conditions"}); conds != nullptr && conds->IsArray()) {
    for (const auto& c : conds->GetArray()) {
      if (json::GetString(c, "status") != "True") continue;
      const std::string type = json::GetString(c, "type");
      if (type != "Complete" && type != "Failed") continue;
      w->finished = type == "Complete";
      w->finish_reason = json::GetString(c, "reason");
      w->finish_message = json::GetString(c, "message");
    }
  }
  return w;
}

const JobKind& Jobs() {
  static const JobKind kind;
  return kind;
}

}  // namespace berth::workloads
