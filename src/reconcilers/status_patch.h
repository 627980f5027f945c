#pragma once
// One status merge patch of a cluster-scoped object (a Fleet's, a Team's), as the status writers
// send it from a writer thread: true when written, or gone when `gone_is_done`; otherwise the
// failure is logged ("<what>: status not written (...); will retry") and false is returned, for
// the caller to note the object for the next pass.

#include <string>
#include <string_view>

#include "k8s/client.h"

namespace berth::reconcilers {

bool PatchStatus(k8s::Client& client, const std::string& path, const std::string& patch, std::string_view what,
                 bool gone_is_done);

}  // namespace berth::reconcilers
