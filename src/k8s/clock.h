#pragma once
// Time is injected: everything that needs "now" takes a Clock, so tests drive time by hand.
// The types live in base/time.h (shared with the scheduling core); these are their k8s names.

#include "base/time.h"

namespace berth::k8s {

using base::Clock;
using base::FakeClock;
using base::SystemClock;
using base::TimePoint;

}  // namespace berth::k8s
