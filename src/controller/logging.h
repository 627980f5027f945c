#pragma once
// Process-wide logging: human text or one JSON object per line (--log-format json).

#include <string>

namespace berth::controller {

void SetUpLogging(const std::string& format, const std::string& level);

}  // namespace berth::controller
