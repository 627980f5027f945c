// Run decoding (src/api/v1alpha1/codec.h, through src/reconcilers/objects/run_types.h): arbitrary bytes parsed with berth's own JSON
// functions (both the copying parser used for lists and the in-place one used for watch events),
// then decoded as a Run, and the whole document as a Run status (every field of a wrong type).
// Properties: a Run decodes unless it has no name; a Run without invalid_message has a usable
// spec (spec.nodes from 1 to kMaxRunNodes, so it fits the scheduler's 32 bits) that reads back
// as EncodeRun wrote it; spec.template is kept as JSON that parses again.

#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "k8s/json.h"
#include "reconcilers/objects/run_types.h"

namespace {

namespace json = berth::k8s::json;
using berth::reconcilers::DecodeRun;
using berth::reconcilers::DecodeRunStatus;

void Check(const json::Value& doc) {
  const auto run = DecodeRun(doc);
  const auto meta = berth::k8s::DecodeMeta(doc);
  FUZZ_CHECK((run == nullptr) == meta.name.empty(), "a Run decodes exactly when it has a name");
  if (run != nullptr) {
    if (run->invalid_message.empty()) {
      FUZZ_CHECK(run->spec.nodes >= 1 && run->spec.nodes <= berth::reconcilers::kMaxRunNodes, "valid Run with nodes = %lld",
                 static_cast<long long>(run->spec.nodes));
      FUZZ_CHECK(run->spec.priority >= 0 && run->spec.priority <= 100, "valid Run with priority = %lld",
                 static_cast<long long>(run->spec.priority));
      FUZZ_CHECK(!run->spec.template_json.empty(), "valid Run without a template");
      // The codec's round trip: a usable spec reads back as it was written.
      auto doc2 = json::Parse(berth::api::v1alpha1::EncodeRun(*run));
      FUZZ_CHECK(doc2.ok(), "EncodeRun wrote no JSON");
      auto back = berth::api::v1alpha1::DecodeRun(*doc2);
      FUZZ_CHECK(back.ok() && back->invalid_message.empty() && back->spec == run->spec, "a Run's spec does not round-trip");
    }
    if (!run->spec.template_json.empty()) {
      FUZZ_CHECK(json::Parse(run->spec.template_json).ok(), "template_json does not parse: %s", run->spec.template_json.c_str());
    }
  }
  DecodeRunStatus(doc);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return berth::fuzz::FuzzJson(data, size, [](const json::Value& v) { Check(v); });
}
