// Duration parsers (src/k8s/duration.h) on arbitrary text, with the documented properties:
// ParseDurationStrict agrees with ParseDuration except for "off", results are never negative,
// and FormatDuration's text parses back to the same value up to the documented limit.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "fuzz/fuzz_check.h"
#include "k8s/duration.h"

namespace {

using berth::fuzz::Escape;
using std::chrono::milliseconds;

// The largest duration ParseDuration accepts: int64 nanoseconds, in whole milliseconds.
constexpr int64_t kMaxMillis = std::numeric_limits<int64_t>::max() / 1'000'000;

void CheckFormatRoundTrip(milliseconds d, std::string_view from) {
  const std::string text = berth::k8s::FormatDuration(d);
  const auto back = berth::k8s::ParseDuration(text);
  FUZZ_CHECK(back.ok() && back->has_value() && **back == d,
             "\"%s\" -> %lld ms -> FormatDuration \"%s\" -> %s", Escape(from).c_str(),
             static_cast<long long>(d.count()), text.c_str(),
             !back.ok() ? back.status().message().c_str()
                        : (back->has_value() ? std::to_string((*back)->count()).c_str() : "off"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = berth::fuzz::AsText(data, size);
  const auto parsed = berth::k8s::ParseDuration(text);
  const auto strict = berth::k8s::ParseDurationStrict(text);
  if (text == "off") {
    FUZZ_CHECK(parsed.ok() && !parsed->has_value(), "\"off\" must parse as no limit");
    FUZZ_CHECK(!strict.ok(), "ParseDurationStrict must refuse \"off\"");
    return 0;
  }
  FUZZ_CHECK(parsed.ok() == strict.ok(), "\"%s\": ParseDuration %s but ParseDurationStrict %s", Escape(text).c_str(),
             parsed.ok() ? "accepts" : "refuses", strict.ok() ? "accepts" : "refuses");
  if (parsed.ok()) {
    FUZZ_CHECK(parsed->has_value(), "\"%s\": only \"off\" means no limit", Escape(text).c_str());
    const milliseconds d = **parsed;
    FUZZ_CHECK(d == *strict, "\"%s\": ParseDuration and ParseDurationStrict differ", Escape(text).c_str());
    FUZZ_CHECK(d.count() >= 0, "\"%s\": negative result %lld", Escape(text).c_str(), static_cast<long long>(d.count()));
    // The documented round trip holds up to kMaxMillis; ParseDuration rounds up, so the top
    // 0.775 ms of its range gives kMaxMillis + 1 (see duration.h).
    FUZZ_CHECK(d.count() <= kMaxMillis + 1, "\"%s\": %lld ms is past the limit", Escape(text).c_str(),
               static_cast<long long>(d.count()));
    if (d.count() <= kMaxMillis) CheckFormatRoundTrip(d, text);
  }
  // The input's first 8 bytes as a duration in range, for the round trip on any value.
  if (size >= 8) {
    uint64_t x = 0;
    std::memcpy(&x, data, sizeof x);
    CheckFormatRoundTrip(milliseconds(static_cast<int64_t>(x % (static_cast<uint64_t>(kMaxMillis) + 1))), text);
  }
  return 0;
}
