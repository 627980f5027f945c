#pragma once
// `kubectl berth usage` (issue 47): the queue API's usage answer (controller/usage_api.h) as a
// table, one row per team, namespace, user or fleet, largest GPU-hours first:
//   TEAM     GPU-HOURS   WEIGHTED   SHARE   CPU-HOURS   MEMORY-GIB-HOURS
//   vision   131.5       394.5      62.0%   910.0       4200.0
// WEIGHTED (the GPU-hours times each fleet's costWeight) only when it differs from GPU-HOURS on
// some row; the header of the first column is the --by key.

#include <string>

#include "k8s/result.h"

namespace berth::cli {

// The table, or an error naming what is wrong with `body` (not the usage answer).
k8s::Result<std::string> FormatUsage(const std::string& body);

}  // namespace berth::cli
