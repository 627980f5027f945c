// Quantity parsers (src/k8s/quantity.h) on arbitrary text, with the documented properties:
//   ParseMilliValue(FormatMilli(x)) == x and ParseValue(FormatBytes(x)) == x for every x,
//   and ParseValue agrees with ParseMilliValue (both round away from zero, so the whole-unit
//   value is the thousandths value divided by 1000, rounded away from zero).

#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz/fuzz_check.h"
#include "k8s/quantity.h"

namespace {

using berth::fuzz::Escape;

int64_t DivideAwayFromZero(int64_t milli) {
  const int64_t whole = milli / 1000;  // toward zero
  if (milli % 1000 == 0) return whole;
  return milli > 0 ? whole + 1 : whole - 1;
}

void CheckRoundTrips(int64_t x) {
  const std::string milli_text = berth::k8s::FormatMilli(x);
  const auto milli = berth::k8s::ParseMilliValue(milli_text);
  FUZZ_CHECK(milli.ok() && *milli == x, "FormatMilli(%lld) = \"%s\" does not parse back: %s", static_cast<long long>(x),
             milli_text.c_str(), milli.ok() ? std::to_string(*milli).c_str() : milli.status().message().c_str());
  const std::string bytes_text = berth::k8s::FormatBytes(x);
  const auto bytes = berth::k8s::ParseValue(bytes_text);
  FUZZ_CHECK(bytes.ok() && *bytes == x, "FormatBytes(%lld) = \"%s\" does not parse back: %s", static_cast<long long>(x),
             bytes_text.c_str(), bytes.ok() ? std::to_string(*bytes).c_str() : bytes.status().message().c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = berth::fuzz::AsText(data, size);
  const auto milli = berth::k8s::ParseMilliValue(text);
  const auto value = berth::k8s::ParseValue(text);
  if (milli.ok()) {
    CheckRoundTrips(*milli);
    // |value| <= |milli| / 1000 + 1, so it fits whenever milli does.
    FUZZ_CHECK(value.ok(), "\"%s\": ParseMilliValue = %lld but ParseValue fails: %s", Escape(text).c_str(),
               static_cast<long long>(*milli), value.status().message().c_str());
    FUZZ_CHECK(*value == DivideAwayFromZero(*milli), "\"%s\": ParseMilliValue = %lld, ParseValue = %lld",
               Escape(text).c_str(), static_cast<long long>(*milli), static_cast<long long>(*value));
  }
  if (value.ok()) CheckRoundTrips(*value);
  // The input's first 8 bytes as an arbitrary int64, for the Format* round trips on any value.
  if (size >= 8) {
    int64_t x = 0;
    std::memcpy(&x, data, sizeof x);
    CheckRoundTrips(x);
  }
  return 0;
}
