#pragma once
// One status merge patch of a cluster-scoped object (a Fleet's, a Team's), as the status writers
// send it from a writer thread. The caller switches on the outcome (write_outcome.h): what is
// done, what is written again by the next pass (LogUnwritten says so in the log).

#include <string>
#include <string_view>

#include "k8s/client.h"
#include "reconcilers/writers/write_outcome.h"

namespace berth::reconcilers {

WriteResult PatchStatus(k8s::Client& client, const std::string& path, const std::string& patch);

// "<what>: status not written (<the API's answer>); will retry" (info).
void LogUnwritten(std::string_view what, const WriteResult& w);

}  // namespace berth::reconcilers
