#include "cli/format.h"

#include <algorithm>

#include "k8s/timefmt.h"

namespace berth::cli {

std::string HumanDuration(std::chrono::seconds d) {
  const int64_t seconds = d.count();
  if (seconds < 0) return "0s";
  if (seconds < 120) return std::to_string(seconds) + "s";
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return std::to_string(minutes) + "m" + (s == 0 ? "" : std::to_string(s) + "s");
  }
  if (minutes < 180) return std::to_string(minutes) + "m";
  const int64_t hours = minutes / 60;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return std::to_string(hours) + "h" + (m == 0 ? "" : std::to_string(m) + "m");
  }
  if (hours < 48) return std::to_string(hours) + "h";
  const int64_t days = hours / 24;
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return std::to_string(days) + "d" + (h == 0 ? "" : std::to_string(h) + "h");
  }
  if (hours < 24 * 365 * 2) return std::to_string(days) + "d";
  const int64_t years = days / 365;
  if (hours < 24 * 365 * 8) {
    const int64_t dy = days % 365;
    return std::to_string(years) + "y" + (dy == 0 ? "" : std::to_string(dy) + "d");
  }
  return std::to_string(years) + "y";
}

std::string BlockBar(int64_t busy, int64_t total, int max_cells) {
  const std::string counts = std::to_string(busy) + "/" + std::to_string(total);
  if (total <= 0) return "[] " + counts;
  const int64_t cells = std::min<int64_t>(total, std::max(max_cells, 1));
  const int64_t clamped = std::clamp<int64_t>(busy, 0, total);
  int64_t filled = (clamped * cells + total / 2) / total;  // rounded to the nearest cell
  if (clamped > 0 && filled == 0) filled = 1;
  if (clamped < total && filled == cells) filled = cells - 1;
  return "[" + std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(cells - filled), '.') +
         "] " + counts;
}

std::string RelativeExpiry(const std::string& expires_at_rfc3339, k8s::TimePoint now) {
  if (expires_at_rfc3339.empty()) return "-";
  auto t = k8s::ParseRfc3339(expires_at_rfc3339);
  if (!t.ok()) return "-";
  if (*t <= now) return "expired";
  return "in " + HumanDuration(std::chrono::duration_cast<std::chrono::seconds>(*t - now));
}

std::string Table::Render(const std::string& indent) const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 3, ' ');
    }
    while (line.size() > indent.size() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace berth::cli
