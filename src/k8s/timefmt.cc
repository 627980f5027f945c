#include "k8s/timefmt.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>

#include "k8s/value_parse.h"

namespace berth::k8s {
namespace {

constexpr std::string_view kLayout = "YYYY-MM-DDTHH:MM:SSZ";

Status Invalid(std::string_view text, std::string_view why) { return InvalidValue("RFC 3339 time", text, why); }

// Reads `width` digits at `pos`; -1 when any is not a digit or the text is too short.
int ReadNumber(std::string_view text, size_t pos, size_t width) {
  if (pos + width > text.size()) return -1;
  int value = 0;
  for (size_t i = pos; i < pos + width; ++i) {
    if (!IsDigit(text[i])) return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

bool CharAt(std::string_view text, size_t pos, char want) {
  return pos < text.size() && text[pos] == want;
}

std::string Format(TimePoint t, bool micro) {
  using namespace std::chrono;
  const sys_days day = floor<days>(t);
  const year_month_day ymd(day);
  const milliseconds in_day = t - day;  // 0 .. 86'399'999
  const long long ms = in_day.count();
  char buffer[128];
  int n = std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02lld:%02lld:%02lld",
                        static_cast<int>(ymd.year()), static_cast<unsigned>(ymd.month()),
                        static_cast<unsigned>(ymd.day()), ms / 3'600'000, ms / 60'000 % 60,
                        ms / 1'000 % 60);
  std::string out(buffer, static_cast<size_t>(n));
  if (micro) {
    n = std::snprintf(buffer, sizeof buffer, ".%03lld000", ms % 1'000);
    out.append(buffer, static_cast<size_t>(n));
  }
  out += 'Z';
  return out;
}

Status Malformed(std::string_view text, std::string_view what) {
  std::string why = "expected ";
  why += what;
  why += " (layout ";
  why += kLayout;
  why += ", e.g. 2026-11-21T19:37:38Z or 2026-11-21T21:37:38.5+02:00)";
  return Invalid(text, why);
}

// An optional ".digits" at pos, kept to milliseconds; pos is advanced past it.
Status ParseFraction(std::string_view text, size_t& pos, int& fraction_ms) {
  if (!CharAt(text, pos, '.')) return Status();
  ++pos;
  const size_t start = pos;
  while (pos < text.size() && IsDigit(text[pos])) {
    if (pos - start < 3) fraction_ms = fraction_ms * 10 + (text[pos] - '0');
    ++pos;
  }
  if (pos == start) return Malformed(text, "digits after '.'");
  for (size_t digits = pos - start; digits < 3; ++digits) fraction_ms *= 10;
  return Status();
}

// "Z" or "+HH:MM" / "-HH:MM" at pos; pos is advanced past it.
Status ParseOffset(std::string_view text, size_t& pos, int& offset_minutes) {
  if (CharAt(text, pos, 'Z') || CharAt(text, pos, 'z')) {
    ++pos;
    return Status();
  }
  if (!CharAt(text, pos, '+') && !CharAt(text, pos, '-')) {
    return Malformed(text, "'Z' or a time zone offset after the time");
  }
  const int sign = text[pos] == '-' ? -1 : 1;
  const int oh = ReadNumber(text, pos + 1, 2);
  const int om = ReadNumber(text, pos + 4, 2);
  if (oh < 0 || !CharAt(text, pos + 3, ':') || om < 0) {
    return Malformed(text, "a time zone offset as +HH:MM or -HH:MM");
  }
  if (oh > 23) return Invalid(text, "time zone offset hour out of range");
  if (om > 59) return Invalid(text, "time zone offset minute out of range");
  offset_minutes = sign * (oh * 60 + om);
  pos += 6;
  return Status();
}

}  // namespace

Result<TimePoint> ParseRfc3339(std::string_view text) {
  using namespace std::chrono;
  const int y = ReadNumber(text, 0, 4);
  if (y < 0 || !CharAt(text, 4, '-')) return Malformed(text, "a 4-digit year and '-'");
  const int mo = ReadNumber(text, 5, 2);
  if (mo < 0 || !CharAt(text, 7, '-')) return Malformed(text, "a 2-digit month and '-'");
  const int d = ReadNumber(text, 8, 2);
  if (d < 0) return Malformed(text, "a 2-digit day");
  if (!CharAt(text, 10, 'T') && !CharAt(text, 10, 't')) return Malformed(text, "'T' after the date");
  const int h = ReadNumber(text, 11, 2);
  if (h < 0 || !CharAt(text, 13, ':')) return Malformed(text, "a 2-digit hour and ':'");
  const int mi = ReadNumber(text, 14, 2);
  if (mi < 0 || !CharAt(text, 16, ':')) return Malformed(text, "a 2-digit minute and ':'");
  const int s = ReadNumber(text, 17, 2);
  if (s < 0) return Malformed(text, "2-digit seconds");

  size_t pos = 19;
  int fraction_ms = 0;
  if (Status st = ParseFraction(text, pos, fraction_ms); !st.ok()) return st;
  int offset_minutes = 0;
  if (Status st = ParseOffset(text, pos, offset_minutes); !st.ok()) return st;
  if (pos != text.size()) {
    return Invalid(text, "unexpected \"" + std::string(text.substr(pos)) + "\" after the time");
  }

  if (mo < 1 || mo > 12) return Invalid(text, "month out of range");
  const year_month_day ymd{year(y), month(static_cast<unsigned>(mo)),
                           day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return Invalid(text, "day out of range");
  if (h > 23) return Invalid(text, "hour out of range");
  if (mi > 59) return Invalid(text, "minute out of range");
  if (s > 59) return Invalid(text, "second out of range");

  return TimePoint(sys_days(ymd)) + hours(h) + minutes(mi) + seconds(s) +
         milliseconds(fraction_ms) - minutes(offset_minutes);
}

std::string FormatRfc3339(TimePoint t) { return Format(t, /*micro=*/false); }

std::string FormatRfc3339Micro(TimePoint t) { return Format(t, /*micro=*/true); }

}  // namespace berth::k8s
