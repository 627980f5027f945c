#include "reconcilers/writers/status_patch.h"

#include <spdlog/spdlog.h>

namespace berth::reconcilers {

WriteResult PatchStatus(k8s::Client& client, const std::string& path, const std::string& patch) {
  auto res = client.MergePatch(path, patch);
  if (res.ok()) return WriteResult{};
  return ResultOf(res.status());
}

void LogUnwritten(std::string_view what, const WriteResult& w) {
  spdlog::info("{}: status not written ({}); will retry", what, w.status.ToString());
}

}  // namespace berth::reconcilers
