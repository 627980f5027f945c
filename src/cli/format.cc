#include "cli/format.h"

#include <cstdio>
#include <algorithm>
#include <cstdint>

#include "k8s/timefmt.h"

namespace berth::cli {

std::string Printable(std::string_view text, TextLines lines) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      if (c == '\n' || c == '\t') {
        out += lines == TextLines::kMany ? static_cast<char>(c) : ' ';
      } else if (c >= 0x20 && c != 0x7f) {
        out += static_cast<char>(c);
      }  // other C0 (ESC, BEL, CR, ...) and DEL: removed
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, each continuation byte 10xxxxxx, no
    // overlong form, no surrogate, at most U+10FFFF.
    size_t len = 0;
    uint32_t cp = 0;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    }
    bool valid = len != 0 && i + len <= n;
    for (size_t k = 1; valid && k < len; ++k) {
      if ((s[i + k] & 0xc0) != 0x80) valid = false;
      cp = (cp << 6) | (s[i + k] & 0x3f);
    }
    if (valid) {
      valid = !(len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) && !(len == 4 && (cp < 0x10000 || cp > 0x10ffff));
    }
    if (!valid) {
      // A C1 control as a lone byte (0x80-0x9f) is removed; any other stray byte shows as '?'.
      if (c > 0x9f) out += '?';
      ++i;
      continue;
    }
    if (cp > 0x9f) out.append(text.substr(i, len));  // C1 (U+0080-U+009F): removed
    i += len;
  }
  return out;
}

std::string PrintableJson(std::string_view json) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    const auto c = static_cast<unsigned char>(json[i]);
    unsigned code = 0x100;  // none
    if (c == 0x7f) {
      code = 0x7f;
    } else if (c == 0xc2 && i + 1 < json.size() && static_cast<unsigned char>(json[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(json[i + 1]) <= 0x9f) {
      code = static_cast<unsigned char>(json[++i]);
    }
    if (code == 0x100) {
      out += json[i];
    } else {
      out += "\\u00";
      out += kHex[code >> 4];
      out += kHex[code & 15];
    }
  }
  return out;
}

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

std::string Hours(double h) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", h);
  return buf;
}

std::vector<std::string> Split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  if (text.empty()) return parts;
  size_t start = 0;
  for (size_t at = text.find(sep); at != std::string_view::npos; at = text.find(sep, start)) {
    parts.emplace_back(text.substr(start, at - start));
    start = at + 1;
  }
  parts.emplace_back(text.substr(start));
  return parts;
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

namespace {
// The columns a cell takes: its UTF-8 code points (each continuation byte 10xxxxxx belongs to the
// code point before it), so "20m–1h" (an en dash: 3 bytes) is as wide as it looks.
size_t Columns(const std::string& s) {
  return static_cast<size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}
}  // namespace

std::string Table::Render(const std::string& indent) const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], Columns(row[i]));
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line = indent;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - Columns(row[i]) + 3, ' ');
    }
    while (line.size() > indent.size() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace berth::cli
