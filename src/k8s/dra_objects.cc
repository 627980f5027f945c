#include "k8s/dra_objects.h"

namespace berth::k8s {

std::shared_ptr<const ResourceSlice> DecodeResourceSlice(const json::Value& obj) {
  auto s = std::make_shared<ResourceSlice>();
  s->name = json::GetString(json::Find(obj, {"metadata", "name"}));
  if (s->name.empty()) return nullptr;
  const json::Value* spec = json::Find(obj, {"spec"});
  if (spec == nullptr || !spec->IsObject()) return s;
  s->driver = json::GetString(*spec, "driver");
  s->node = json::GetString(*spec, "nodeName");
  if (const json::Value* pool = json::Find(*spec, {"pool"}); pool != nullptr && pool->IsObject()) {
    s->pool = json::GetString(*pool, "name");
    s->generation = json::GetInt(*pool, "generation");
    s->slice_count = json::GetInt(*pool, "resourceSliceCount");
  }
  const json::Value* devices = json::Find(*spec, {"devices"});
  if (devices == nullptr || !devices->IsArray()) return s;
  for (const json::Value& d : devices->GetArray()) {
    if (s->devices.size() >= kMaxSliceDevices) {
      s->devices_left_out = true;
      break;
    }
    SliceDevice dev;
    dev.name = json::GetString(d, "name");
    if (dev.name.empty()) continue;
    if (const json::Value* c = json::Find(d, {"consumesCounters"}); c != nullptr && c->IsArray() && !c->Empty()) {
      dev.counter_set = json::GetString((*c)[0], "counterSet");
    }
    s->devices.push_back(std::move(dev));
  }
  return s;
}

std::shared_ptr<const DeviceClass> DecodeDeviceClass(const json::Value& obj) {
  auto c = std::make_shared<DeviceClass>();
  c->name = json::GetString(json::Find(obj, {"metadata", "name"}));
  if (c->name.empty()) return nullptr;
  const json::Value* sel = json::Find(obj, {"spec", "selectors"});
  if (sel == nullptr || !sel->IsArray()) return c;
  for (const json::Value& s : sel->GetArray()) {
    std::string expr = json::GetString(json::Find(s, {"cel", "expression"}));
    if (c->expressions.size() >= kMaxClassSelectors || expr.size() > kMaxExpressionBytes) {
      c->selectors_left_out = true;
      break;
    }
    c->expressions.push_back(std::move(expr));
  }
  return c;
}

std::shared_ptr<const ResourceClaim> DecodeResourceClaim(const json::Value& obj) {
  auto c = std::make_shared<ResourceClaim>();
  c->meta = DecodeMeta(obj, MetaKeep{.label_prefix = "berth.dev/", .only_needed = true});
  if (c->meta.name.empty()) return nullptr;
  const json::Value* results = json::Find(obj, {"status", "allocation", "devices", "results"});
  if (results == nullptr || !results->IsArray()) return c;
  for (const json::Value& r : results->GetArray()) {
    if (c->allocated.size() >= kMaxClaimResults) {
      c->results_left_out = true;
      break;
    }
    c->allocated.push_back(AllocatedDevice{json::GetString(r, "driver"), json::GetString(r, "pool"),
                                           json::GetString(r, "device"), json::GetBool(r, "adminAccess")});
  }
  return c;
}

std::string DeviceClaimJson(const std::string& name, const std::string& ns, const std::string& device_class,
                            int64_t count, const std::string& label, const std::string& value, const OwnerRef& owner) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":)" + json::Quote(name) +
         R"(,"namespace":)" + json::Quote(ns) + R"(,"labels":{)" + json::Quote(label) + ":" + json::Quote(value) +
         R"(},"ownerReferences":[{"apiVersion":)" + json::Quote(owner.api_version) + R"(,"kind":)" +
         json::Quote(owner.kind) + R"(,"name":)" + json::Quote(owner.name) + R"(,"uid":)" + json::Quote(owner.uid) +
         R"(,"controller":true,"blockOwnerDeletion":true}]},"spec":{"devices":{"requests":[{"name":"gpus","exactly":{)" +
         R"("deviceClassName":)" + json::Quote(device_class) + R"(,"allocationMode":"ExactCount","count":)" +
         std::to_string(count) + "}}]}}}";
}

}  // namespace berth::k8s
