#pragma once
// Kubernetes resource quantities ("100m", "2", "1.5Gi", "500M", "1e3"), read and written the way
// apimachinery's resource.Quantity does, for the two scales berth uses: thousandths (CPU) and
// whole units (bytes, counts).
//
// Accepted grammar (as resource.Quantity):
//   quantity ::= [+-] number [suffix]
//   number   ::= digits | digits "." | digits "." digits | "." digits
//   suffix   ::= decimal SI: n u m k M G T P E   (10^-9 .. 10^18; "" is 10^0)
//              | binary SI:  Ki Mi Gi Ti Pi Ei  (2^10 .. 2^60)
//              | exponent:   (e|E) [+-] digits  ("1e3" = 1000; "1E" alone is 10^18, exa)
// No spaces, no other suffixes ("K", "kb", "KiB" are errors).
//
// Differences from resource.Quantity, on purpose: a value that does not fit the result is an
// error instead of being silently capped, and "." / "+" / "-" without digits are errors (the CRD
// validation pattern rejects them too).

#include <cstdint>
#include <string>
#include <string_view>

#include "k8s/result.h"

namespace berth::k8s {

// The quantity in thousandths, as Quantity.MilliValue(): "100m" -> 100, "2" -> 2000,
// "1.5" -> 1500, "1k" -> 1000000. A value with a finer part is rounded away from zero
// ("0.1m" -> 1, "-0.1m" -> -1), so asking for a little never becomes asking for nothing.
// Errors: malformed text, unknown suffix, or a result outside int64.
Result<int64_t> ParseMilliValue(std::string_view text);

// The quantity in whole units (bytes, counts), as Quantity.Value(): "1.5Gi" -> 1610612736,
// "500M" -> 500000000, "1k" -> 1000, "100m" -> 1 (rounded away from zero, as ParseMilliValue).
// Errors: as ParseMilliValue.
Result<int64_t> ParseValue(std::string_view text);

// Canonical text for a value in thousandths: whole numbers without a suffix ("2", "-3", "0"),
// anything else in milli ("1500m", "100m"). ParseMilliValue(FormatMilli(x)) == x for every x.
std::string FormatMilli(int64_t milli);

// Canonical text for a value in bytes: the largest binary suffix that divides it exactly
// ("16Gi", "1536Mi", "-2Ki"), else the plain integer ("1500", "0").
// ParseValue(FormatBytes(x)) == x for every x.
std::string FormatBytes(int64_t bytes);

}  // namespace berth::k8s
