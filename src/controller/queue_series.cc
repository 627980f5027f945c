#include "controller/queue_series.h"

#include <spdlog/fmt/fmt.h>

#include <vector>

#include "k8s/json.h"
#include "k8s/timefmt.h"

namespace berth::controller {

void QueueSeries::SamplePending(int64_t pending) {
  const auto now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  history_.SamplePending(now, pending);
}

void QueueSeries::NoteStart(std::chrono::milliseconds wait) {
  const auto now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  history_.NoteStart(now, wait);
}

std::string QueueSeries::Json(bool leader) const {
  const auto now = clock_.Now();
  std::vector<base::QueueMinute> minutes;
  std::optional<base::TimePoint> since;
  {
    std::lock_guard<std::mutex> lock(mu_);
    minutes = history_.Minutes(now);
    since = history_.RecordingSince();
  }
  std::string out = R"({"kind":"QueueHistory","apiVersion":"queue.berth.dev/v1alpha1","leader":)" +
                    std::string(leader ? "true" : "false") + R"(,"generatedAt":)" + k8s::json::Quote(k8s::FormatRfc3339(now)) +
                    R"(,"recordingSince":)" + (since ? k8s::json::Quote(k8s::FormatRfc3339(*since)) : "null") +
                    R"(,"stepSeconds":60,"minutes":[)";
  for (size_t i = 0; i < minutes.size(); ++i) {
    const base::QueueMinute& m = minutes[i];
    out += (i ? "," : "") + std::string(R"({"at":)") + k8s::json::Quote(k8s::FormatRfc3339(m.at));
    if (m.pending) out += R"(,"pending":)" + std::to_string(*m.pending);
    out += fmt::format(R"(,"starts":{},"medianWaitSeconds":{},"maxWaitSeconds":{}}})", m.starts, m.median_wait_seconds,
                       m.max_wait_seconds);
  }
  return out + "]}";
}

}  // namespace berth::controller
