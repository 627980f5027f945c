#include "reconcilers/objects/usage_spans.h"

#include <algorithm>
#include <chrono>

namespace berth::reconcilers {

namespace sched = scheduling;

bool SpanAccounted(const RunStatus& s) {
  if (!s.held_since) return true;
  return s.released_at && s.accounted_until && s.accounted_until->point() >= s.released_at->point();
}

void BeginSpan(RunStatus& next, const sched::Placement& placement, sched::TimePoint now) {
  RunStatus::Held held{placement.fleet, 0, 0, 0};
  for (const auto& rank : placement.ranks) {
    held.gpus += rank.resources.gpus;
    held.cpu_milli += rank.resources.cpu_millis;
    held.memory_bytes += rank.resources.memory_bytes;
  }
  next.held = std::move(held);
  if (SpanAccounted(next)) next.held_since = Time(now);
  next.released_at.reset();
  next.accounted_until.reset();
}

RunSpan SpanOfRun(const Run& run, bool holding) {
  RunSpan out;
  const RunStatus& s = run.status;
  if (!s.held_since || SpanAccounted(s)) return out;
  sched::UsageSpan span;
  span.ns = run.meta.ns;
  span.start = s.held_since->point();
  if (s.held) {
    span.fleet = s.held->fleet;
    span.gpus = s.held->gpus;
    span.cpu_milli = s.held->cpu_milli;
    span.memory_bytes = s.held->memory_bytes;
  }
  if (s.released_at) {
    span.end = std::max(span.start, s.released_at->point());
    out.close = RunSpan::Close::kAccount;
  } else if (!holding) {
    out.close = RunSpan::Close::kRelease;
  }
  out.span = std::move(span);
  return out;
}

ResourceSeconds SecondsIn(const sched::UsageSpan& span, sched::TimePoint from, sched::TimePoint to) {
  const sched::TimePoint a = std::max(span.start, from);
  const sched::TimePoint b = span.end ? std::min(*span.end, to) : to;
  ResourceSeconds r;
  if (b <= a) return r;
  const double secs = std::chrono::duration<double>(b - a).count();
  r.gpu = static_cast<double>(span.gpus) * secs;
  r.cpu = static_cast<double>(span.cpu_milli) / 1000.0 * secs;
  r.memory_gib = static_cast<double>(span.memory_bytes) / (1024.0 * 1024.0 * 1024.0) * secs;
  return r;
}

}  // namespace berth::reconcilers
