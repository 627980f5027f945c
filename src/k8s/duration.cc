#include "k8s/duration.h"

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "k8s/value_parse.h"

namespace berth::k8s {
namespace {

constexpr std::string_view kUnitHelp = "use ns, us, ms, s, m, h or d, e.g. \"90s\" or \"1h30m\"";

Status Invalid(std::string_view text, std::string_view why) { return InvalidValue("duration", text, why); }

struct Unit {
  std::string_view name;
  uint64_t nanos;
};

constexpr uint64_t kSecond = 1'000'000'000;
constexpr std::array<Unit, 9> kUnits = {{{"ns", 1},
                                         {"us", 1'000},
                                         {"\u00b5s", 1'000},  // micro sign
                                         {"\u03bcs", 1'000},  // Greek small letter mu
                                         {"ms", 1'000'000},
                                         {"s", kSecond},
                                         {"m", 60 * kSecond},
                                         {"h", 3600 * kSecond},
                                         {"d", 86400 * kSecond}}};

// The largest total, as in Go: int64 nanoseconds.
constexpr uint64_t kMaxNanos = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

// Exact arithmetic for fraction * unit: with at most 24 fraction digits, 10^24 * 8.64e13 < 2^128.
__extension__ using Uint128 = unsigned __int128;
constexpr size_t kMaxFractionDigits = 24;

Status TooLong(std::string_view text) { return Invalid(text, "too long (the maximum is about 292 years)"); }

// The number of a term: its whole part and its fraction digits; `rest` is advanced past them.
Status ParseNumber(std::string_view text, std::string_view& rest, uint64_t& whole, std::string_view& fraction) {
  // Whole part. Anything above kMaxNanos is too long whatever the unit.
  size_t n = 0;
  for (; n < rest.size() && IsDigit(rest[n]); ++n) {
    whole = whole * 10 + static_cast<uint64_t>(rest[n] - '0');
    if (whole > kMaxNanos) return TooLong(text);
  }
  const bool has_whole = n > 0;
  rest.remove_prefix(n);
  fraction = TakeFraction(rest);
  if (!has_whole && fraction.empty()) {
    std::string why = "expected a number";
    if (!rest.empty() && rest[0] != '.') why += " before \"" + std::string(rest) + "\"";
    why += " (a duration looks like \"90s\", \"1h30m\", \"2d\" or \"off\")";
    return Invalid(text, why);
  }
  return Status();
}

// The unit of a term; `rest` is advanced past it.
Result<const Unit*> ParseUnit(std::string_view text, std::string_view& rest) {
  size_t n = 0;
  while (n < rest.size() && rest[n] != '.' && !IsDigit(rest[n])) ++n;
  const std::string_view unit_name = rest.substr(0, n);
  rest.remove_prefix(n);
  if (unit_name.empty()) {
    std::string why = "missing unit (";
    why += kUnitHelp;
    why += ")";
    return Invalid(text, why);
  }
  for (const Unit& u : kUnits) {
    if (u.name == unit_name) return &u;
  }
  std::string why = "unknown unit \"" + std::string(unit_name) + "\" (";
  why += kUnitHelp;
  why += ")";
  return Invalid(text, why);
}

// whole.fraction units in nanoseconds, at most kMaxNanos.
Result<uint64_t> TermNanos(std::string_view text, uint64_t whole, std::string_view fraction, const Unit& unit) {
  if (whole != 0 && unit.nanos > kMaxNanos / whole) return TooLong(text);
  uint64_t part = whole * unit.nanos;
  // fraction * unit, truncated to whole nanoseconds. Digits past kMaxFractionDigits are worth
  // less than 1e-10 ns and are dropped.
  if (fraction.size() > kMaxFractionDigits) fraction = fraction.substr(0, kMaxFractionDigits);
  Uint128 numerator = 0;
  Uint128 denominator = 1;
  for (char c : fraction) {
    numerator = numerator * 10 + static_cast<unsigned>(c - '0');
    denominator *= 10;
  }
  const uint64_t frac_nanos = static_cast<uint64_t>(numerator * unit.nanos / denominator);
  if (part > kMaxNanos - frac_nanos) return TooLong(text);
  return part + frac_nanos;
}

// One term ("1.5h"), in nanoseconds; `rest` is advanced past it.
Result<uint64_t> ParseTerm(std::string_view text, std::string_view& rest) {
  uint64_t whole = 0;
  std::string_view fraction;
  if (Status s = ParseNumber(text, rest, whole, fraction); !s.ok()) return s;
  Result<const Unit*> unit = ParseUnit(text, rest);
  if (!unit) return unit.status();
  return TermNanos(text, whole, fraction, **unit);
}

}  // namespace

Result<std::optional<std::chrono::milliseconds>> ParseDuration(std::string_view text) {
  if (text.empty()) return Invalid(text, "empty string (use a duration such as \"1h\" or \"off\")");
  if (text == "off") return std::optional<std::chrono::milliseconds>();

  std::string_view rest = text;
  if (rest[0] == '-') return Invalid(text, "negative durations are not allowed");
  if (rest[0] == '+') rest.remove_prefix(1);
  if (rest == "0") return std::optional<std::chrono::milliseconds>(std::chrono::milliseconds(0));
  if (rest.empty()) return Invalid(text, "expected a number after \"+\"");

  uint64_t total = 0;  // nanoseconds, at most kMaxNanos
  while (!rest.empty()) {
    Result<uint64_t> part = ParseTerm(text, rest);
    if (!part) return part.status();
    if (total > kMaxNanos - *part) return TooLong(text);
    total += *part;
  }
  constexpr uint64_t kNanosPerMilli = 1'000'000;
  const uint64_t millis = total / kNanosPerMilli + (total % kNanosPerMilli != 0 ? 1 : 0);
  return std::optional<std::chrono::milliseconds>(
      std::chrono::milliseconds(static_cast<int64_t>(millis)));
}

Result<std::chrono::milliseconds> ParseDurationStrict(std::string_view text) {
  if (text == "off") {
    return Invalid(text, "\"off\" is not allowed here (use a duration such as \"1h\")");
  }
  Result<std::optional<std::chrono::milliseconds>> parsed = ParseDuration(text);
  if (!parsed.ok()) return parsed.status();
  return **parsed;
}

}  // namespace berth::k8s
