#pragma once
// Internal to the codec: a usage history (Team.status.usageHistory, a Team's per-user store) as
// the member "usageHistory" of the object `r` reads / `w` writes; the named parts of each day
// under `by` ("byNamespace", "byUser"). usage_codec.cc.

#include <string>
#include <string_view>

#include "api/v1alpha1/json_io.h"
#include "base/usage.h"

namespace berth::api::v1alpha1::io {

base::UsageHistory ReadUsageHistory(Reader& r, std::string_view by, std::string& problem);
void WriteUsageHistory(Writer& w, const base::UsageHistory& history, std::string_view by);

}  // namespace berth::api::v1alpha1::io
