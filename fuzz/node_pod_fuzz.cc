// Node, Pod and metadata decoding (src/k8s/objects.h): arbitrary bytes parsed with berth's JSON
// functions, then decoded as each. Properties: Nodes and Pods decode unless they have no name;
// the metadata lookups work on what was decoded.

#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "k8s/json.h"
#include "k8s/objects.h"

namespace {

namespace json = berth::k8s::json;

void Check(const json::Value& doc) {
  const berth::k8s::ObjectMeta meta = berth::k8s::DecodeMeta(doc);
  const auto node = berth::k8s::DecodeNode(doc);
  const auto pod = berth::k8s::DecodePod(doc);
  FUZZ_CHECK((node == nullptr) == meta.name.empty(), "a Node decodes exactly when it has a name");
  FUZZ_CHECK((pod == nullptr) == meta.name.empty(), "a Pod decodes exactly when it has a name");
  for (const std::string& f : meta.finalizers) FUZZ_CHECK(meta.HasFinalizer(f), "finalizer not found");
  if (const auto* owner = meta.ControllerRef()) FUZZ_CHECK(owner->controller, "ControllerRef is not a controller");
  for (const auto& [key, value] : meta.labels) FUZZ_CHECK(meta.Label(key) == value, "label lookup");
  if (node != nullptr) {
    for (const auto& [resource, amount] : node->extended) {
      FUZZ_CHECK(node->Allocatable(resource) == amount, "allocatable lookup");
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return berth::fuzz::FuzzJson(data, size, [](const json::Value& v) { Check(v); });
}
