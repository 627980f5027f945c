#pragma once
// RFC 3339 timestamps as the Kubernetes API writes them: metav1.Time ("2026-11-21T19:37:38Z",
// whole seconds, UTC) and metav1.MicroTime ("2026-11-21T19:37:38.123456Z"). Pure calendar
// arithmetic: nothing here reads or depends on the process time zone.

#include <string>
#include <string_view>

#include "k8s/clock.h"
#include "k8s/result.h"

namespace berth::k8s {

// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"; 't' and 'z' may be lower case.
// The fraction may have any number of digits and is truncated to the millisecond (toward the
// past). Checked: the date exists (leap years included), hour <= 23, minute <= 59,
// second <= 59 (leap seconds are rejected, as Go's time.Parse does), offset hour <= 23 and
// minute <= 59. Years are 0000..9999. Errors name the part that is wrong.
Result<TimePoint> ParseRfc3339(std::string_view text);

// "2026-11-21T19:37:38Z": UTC, the sub-second part truncated toward the past, as metav1.Time
// serializes. Defined for years 0000..9999 (what ParseRfc3339 accepts); outside that range the
// year is written with as many digits and the sign it needs, which is not RFC 3339.
std::string FormatRfc3339(TimePoint t);

// "2026-11-21T19:37:38.123000Z": as FormatRfc3339 with six fraction digits, as metav1.MicroTime
// serializes (the last three are always 0 at TimePoint's millisecond precision).
std::string FormatRfc3339Micro(TimePoint t);

}  // namespace berth::k8s
