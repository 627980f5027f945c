#include "reconcilers/status_patch.h"

#include <spdlog/spdlog.h>

namespace berth::reconcilers {

bool PatchStatus(k8s::Client& client, const std::string& path, const std::string& patch, std::string_view what,
                 bool gone_is_done) {
  auto res = client.MergePatch(path, patch);
  if (res.ok() || (gone_is_done && res.status().IsNotFound())) return true;
  spdlog::info("{}: status not written ({}); will retry", what, res.status().ToString());
  return false;
}

}  // namespace berth::reconcilers
