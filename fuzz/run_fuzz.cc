// Run decoding (src/reconcilers/run_types.h): arbitrary bytes parsed with berth's own JSON
// functions (both the copying parser used for lists and the in-place one used for watch events),
// then decoded as a Run, and the whole document as a Run status (every field of a wrong type).
// Properties: a Run decodes unless it has no name; a Run without invalid_message has a usable
// spec (spec.nodes from 1 to kMaxRunNodes, so it fits the scheduler's 32 bits); spec.template is
// kept as JSON that parses again.

#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "k8s/json.h"
#include "reconcilers/run_types.h"

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
      FUZZ_CHECK(run->nodes >= 1 && run->nodes <= berth::reconcilers::kMaxRunNodes, "valid Run with nodes = %lld",
                 static_cast<long long>(run->nodes));
      FUZZ_CHECK(run->priority >= 0 && run->priority <= 100, "valid Run with priority = %lld",
                 static_cast<long long>(run->priority));
      FUZZ_CHECK(!run->template_json.empty(), "valid Run without a template");
    }
    if (!run->template_json.empty()) {
      FUZZ_CHECK(json::Parse(run->template_json).ok(), "template_json does not parse: %s", run->template_json.c_str());
    }
  }
  DecodeRunStatus(doc);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return berth::fuzz::FuzzJson(data, size, [](const json::Value& v) { Check(v); });
}
