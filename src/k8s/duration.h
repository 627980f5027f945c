#pragma once
// Durations as berth's API writes them (`maxDuration`, `retry.duration`, `instanceLifetime`):
// Go's time.ParseDuration syntax plus a day unit and the literal "off".
//
// Accepted grammar:
//   duration  ::= "off" | "0" | ["+"] component { component }
//   component ::= number unit                       ("90s", "1.5h", ".5m", "1.h")
//   unit      ::= ns | us | µs | μs | ms | s | m | h | d      (d = 24h)
// Components add up in any order ("1h30m", "1d12h", "30m1h"). Negative durations, a missing
// unit ("90"), unknown units ("1y", "1H") and spaces are errors. As in Go, the total must fit in
// int64 nanoseconds (about 292 years); digits finer than a nanosecond are dropped.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "k8s/result.h"

#include "base/time.h"

namespace berth::k8s {

// Parses a duration or "off". Returns std::nullopt for "off" (no limit), else the duration
// rounded up to a whole millisecond ("500us" -> 1ms, "1.0001s" -> 1001ms), so a duration of a
// nanosecond or more never becomes zero.
Result<std::optional<std::chrono::milliseconds>> ParseDuration(std::string_view text);

// As ParseDuration, for fields where "off" makes no sense: "off" is an error.
Result<std::chrono::milliseconds> ParseDurationStrict(std::string_view text);

// Human text for messages, largest units first, zero parts left out: "2d3h", "1h30m", "45s",
// "1s500ms", "1d1s"; zero is "0s" and negatives get a leading "-". For values from zero up to
// ParseDuration's limit, 9'223'372'036'854ms (int64 nanoseconds in whole milliseconds), the result
// parses back to the same value. ParseDuration itself can return one millisecond more, because it
// rounds up ("9223372036854775807ns" -> 9'223'372'036'855ms); that one value does not parse back.
using base::FormatDuration;

}  // namespace berth::k8s
