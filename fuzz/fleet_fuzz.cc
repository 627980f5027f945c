// Fleet decoding (src/reconcilers/objects/fleet_types.h): arbitrary bytes parsed with berth's JSON
// functions, then decoded as a Fleet. Properties: a Fleet decodes unless it has no name; a Fleet
// without invalid_message selects some nodes and has at least one block (or "auto").

#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "k8s/json.h"
#include "reconcilers/objects/fleet_types.h"

namespace {

namespace json = berth::k8s::json;

void Check(const json::Value& doc) {
  const auto fleet = berth::reconcilers::DecodeFleet(doc);
  const auto meta = berth::k8s::DecodeMeta(doc);
  FUZZ_CHECK((fleet == nullptr) == meta.name.empty(), "a Fleet decodes exactly when it has a name");
  if (fleet == nullptr) return;
  if (fleet->invalid_message.empty()) {
    FUZZ_CHECK(!fleet->spec.node_selector.empty(), "valid Fleet without a node selector");
    FUZZ_CHECK(fleet->spec.blocks_auto || fleet->spec.blocks >= 1, "valid Fleet with blocks = %lld",
               static_cast<long long>(fleet->spec.blocks));
  }
  FUZZ_CHECK(fleet->Selects(fleet->spec.node_selector) == !fleet->spec.node_selector.empty(),
             "a Fleet selects its own selector's labels");
  for (const auto& record : fleet->status.instances) {
    FUZZ_CHECK(fleet->RecordForUid(record.uid) != nullptr, "instance record not found by uid");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return berth::fuzz::FuzzJson(data, size, [](const json::Value& v) { Check(v); });
}
