#include "reconcilers/objects/run_types.h"

#include <charconv>

namespace berth::reconcilers {

std::shared_ptr<const Run> DecodeRun(const k8s::json::Value& obj) {
  auto run = api::DecodeRun(obj, api::RunDecodeOptions{.keep_meta_prefix = kKeptMetaPrefix,
                                                       .kept_template_bytes = kKeptTemplateBytes,
                                                       .only_needed_meta = true});
  if (!run.ok()) return nullptr;
  return std::make_shared<const Run>(std::move(run.value()));
}

uint64_t RvNumber(const std::string& rv) {
  uint64_t n = 0;
  auto [end, err] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  return err == std::errc() && end == rv.data() + rv.size() ? n : 0;  // no exceptions on the hot path
}

}  // namespace berth::reconcilers
