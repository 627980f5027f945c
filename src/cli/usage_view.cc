#include "cli/usage_view.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <utility>
#include <vector>

#include "api/v1alpha1/http_api.h"
#include "base/time.h"
#include "cli/format.h"

namespace berth::cli {

namespace api = api::v1alpha1;

namespace {

// The bucket of the median wait: "5m–10m", "<10s", "≥30d"; "-" without runs.
std::string MedianWaitCell(const std::optional<std::pair<int64_t, int64_t>>& m) {
  if (!m) return "-";
  auto text = [](int64_t s) { return base::FormatDuration(std::chrono::seconds(s)); };
  if (m->first <= 0 && m->second > 0) return "<" + text(m->second);
  if (m->second < 0) return "\u2265" + text(m->first);
  return text(m->first) + "\u2013" + text(m->second);
}

}  // namespace

k8s::Result<std::string> FormatUsage(const std::string& body) {
  auto answer = api::DecodeUsageAnswer(body);
  if (!answer.ok()) return answer.status();
  bool weighted = false;
  for (const api::UsageRow& r : answer->rows) weighted = weighted || std::abs(r.weighted_gpu_hours - r.gpu_hours) >= 0.05;
  std::string key = answer->by;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::vector<std::string> header = {key.empty() ? std::string("NAME") : key, "GPU-HOURS"};
  if (weighted) header.push_back("WEIGHTED");
  for (const char* h : {"SHARE", "CPU-HOURS", "MEMORY-GIB-HOURS"}) header.push_back(h);
  if (answer->runs_known) {
    header.push_back("RUNS");
    header.push_back("MEDIAN-WAIT");
  }
  Table table(header);
  for (const api::UsageRow& r : answer->rows) {
    char share[16];
    std::snprintf(share, sizeof share, "%.1f%%", 100 * r.share);
    std::vector<std::string> row = {r.name, Hours(r.gpu_hours)};
    if (weighted) row.push_back(Hours(r.weighted_gpu_hours));
    row.push_back(share);
    row.push_back(Hours(r.cpu_hours));
    row.push_back(Hours(r.memory_gib_hours));
    if (answer->runs_known) {
      row.push_back(std::to_string(r.runs));
      row.push_back(MedianWaitCell(r.median_wait));
    }
    table.AddRow(std::move(row));
  }
  const std::string window = answer->from + " to " + answer->to;
  if (table.rows() == 0) return "No usage recorded from " + window + " (UTC days).\n";
  return table.Render() + "(UTC days " + window + ")\n";
}

}  // namespace berth::cli
