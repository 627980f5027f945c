#include "base/time.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>

namespace berth::base {

std::string FormatDuration(Duration d) {
  const int64_t count = d.count();
  if (count == 0) return "0s";
  std::string out;
  // Magnitude in unsigned arithmetic so that the most negative value works too.
  uint64_t rest = static_cast<uint64_t>(count);
  if (count < 0) {
    out += '-';
    rest = ~rest + 1;
  }
  static constexpr std::array<std::pair<uint64_t, std::string_view>, 5> kParts = {{
      {86'400'000, "d"},
      {3'600'000, "h"},
      {60'000, "m"},
      {1'000, "s"},
      {1, "ms"},
  }};
  for (const auto& [millis, name] : kParts) {
    if (rest >= millis) {
      out += std::to_string(rest / millis);
      out += name;
      rest %= millis;
    }
  }
  return out;
}

}  // namespace berth::base
