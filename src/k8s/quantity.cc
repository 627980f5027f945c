#include "k8s/quantity.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "k8s/value_parse.h"

namespace berth::k8s {
namespace {

constexpr std::string_view kSuffixHelp =
    "use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3";

// The largest exponent we accept after e/E; far beyond anything that fits int64 either way, but
// small enough that exponent arithmetic below cannot overflow.
constexpr int64_t kMaxExponent = 1'000'000'000;

Status Invalid(std::string_view text, std::string_view why) { return InvalidValue("quantity", text, why); }

// A parsed quantity: (-1 if negative) * digits * 10^exp10 * 2^exp2, exactly.
struct Decomposed {
  bool negative = false;
  std::string digits;  // decimal digits without leading zeros; empty means zero
  int64_t exp10 = 0;
  int exp2 = 0;
};

struct NamedSuffix {
  std::string_view name;
  int exp10;
  int exp2;
};

constexpr std::array<NamedSuffix, 16> kSuffixes = {{{"", 0, 0},
                                                    {"n", -9, 0},
                                                    {"u", -6, 0},
                                                    {"m", -3, 0},
                                                    {"k", 3, 0},
                                                    {"M", 6, 0},
                                                    {"G", 9, 0},
                                                    {"T", 12, 0},
                                                    {"P", 15, 0},
                                                    {"E", 18, 0},
                                                    {"Ki", 0, 10},
                                                    {"Mi", 0, 20},
                                                    {"Gi", 0, 30},
                                                    {"Ti", 0, 40},
                                                    {"Pi", 0, 50},
                                                    {"Ei", 0, 60}}};

// Reads the suffix into exp10/exp2 of `out`.
Status ParseSuffix(std::string_view text, std::string_view suffix, Decomposed& out) {
  for (const NamedSuffix& s : kSuffixes) {
    if (s.name == suffix) {
      out.exp10 += s.exp10;
      out.exp2 = s.exp2;
      return Status();
    }
  }
  if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view rest = suffix.substr(1);
    bool negative = false;
    if (rest[0] == '+' || rest[0] == '-') {
      negative = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (!rest.empty() && std::all_of(rest.begin(), rest.end(), IsDigit)) {
      int64_t exponent = 0;
      for (char c : rest) {
        exponent = exponent * 10 + (c - '0');
        if (exponent > kMaxExponent) {
          return Invalid(text, "exponent \"" + std::string(suffix) + "\" is out of range");
        }
      }
      out.exp10 += negative ? -exponent : exponent;
      return Status();
    }
  }
  std::string why = "unknown suffix \"" + std::string(suffix) + "\" (";
  why += kSuffixHelp;
  why += ")";
  return Invalid(text, why);
}

Result<Decomposed> Decompose(std::string_view text) {
  if (text.empty()) return Invalid(text, "empty string");
  Decomposed out;
  std::string_view rest = text;
  if (rest[0] == '+' || rest[0] == '-') {
    out.negative = rest[0] == '-';
    rest.remove_prefix(1);
  }
  const std::string_view whole = TakeDigits(rest);
  const std::string_view fraction = TakeFraction(rest);
  if (whole.empty() && fraction.empty()) {
    return Invalid(text, "must start with a number, e.g. \"100m\", \"1.5\", \"2Gi\" or \"1e3\"");
  }
  Status suffix = ParseSuffix(text, rest, out);
  if (!suffix.ok()) return suffix;

  out.digits.reserve(whole.size() + fraction.size());
  out.digits.append(whole);
  out.digits.append(fraction);
  out.digits.erase(0, std::min(out.digits.find_first_not_of('0'), out.digits.size()));
  out.exp10 -= static_cast<int64_t>(fraction.size());
  return out;
}

// digits *= 2^power, on a decimal digit string.
void MultiplyByPowerOfTwo(std::string& digits, int power) {
  while (power > 0) {
    const int step = std::min(power, 30);
    power -= step;
    uint64_t carry = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      const uint64_t x = (static_cast<uint64_t>(*it - '0') << step) + carry;
      *it = static_cast<char>('0' + x % 10);
      carry = x / 10;
    }
    std::string head;
    for (; carry > 0; carry /= 10) head.insert(head.begin(), static_cast<char>('0' + carry % 10));
    digits.insert(0, head);
  }
}

// The quantity times 10^scale10, rounded away from zero to an integer.
Result<int64_t> ToScaledInt(std::string_view text, int scale10, std::string_view unit) {
  Result<Decomposed> parsed = Decompose(text);
  if (!parsed.ok()) return parsed.status();
  Decomposed& q = *parsed;
  if (q.digits.empty()) return int64_t{0};

  MultiplyByPowerOfTwo(q.digits, q.exp2);
  int64_t exp10 = q.exp10 + scale10;
  while (q.digits.back() == '0') {  // digits has a non-zero digit, so this stops
    q.digits.pop_back();
    ++exp10;
  }

  // Up to 19 decimal digits always fit uint64 (10^19 - 1 < 2^64 - 1).
  constexpr int64_t kMaxDigits = 19;
  const auto parse_digits = [](std::string_view d) {
    uint64_t v = 0;
    for (char c : d) v = v * 10 + static_cast<uint64_t>(c - '0');
    return v;
  };
  const auto out_of_range = [&] {
    std::string why = "out of range: the value in ";
    why += unit;
    why += " does not fit in a 64-bit integer";
    return Invalid(text, why);
  };

  const int64_t size = static_cast<int64_t>(q.digits.size());
  uint64_t magnitude = 0;
  if (exp10 >= 0) {
    if (size + exp10 > kMaxDigits) return out_of_range();
    magnitude = parse_digits(q.digits);
    for (int64_t i = 0; i < exp10; ++i) magnitude *= 10;
  } else if (-exp10 >= size) {
    magnitude = 1;  // 0 < |value| < 1: rounds up to 1
  } else {
    const int64_t whole_digits = size + exp10;
    if (whole_digits > kMaxDigits) return out_of_range();
    // Trailing zeros were stripped, so the dropped fraction is non-zero: round up.
    magnitude = parse_digits(std::string_view(q.digits).substr(0, whole_digits)) + 1;
  }

  constexpr uint64_t kMaxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (magnitude > kMaxPositive + (q.negative ? 1 : 0)) return out_of_range();
  if (!q.negative) return static_cast<int64_t>(magnitude);
  // -(2^63) is representable; negate in unsigned arithmetic to reach it without overflow.
  return static_cast<int64_t>(~magnitude + 1);
}

}  // namespace

Result<int64_t> ParseMilliValue(std::string_view text) {
  return ToScaledInt(text, 3, "thousandths (m)");
}

Result<int64_t> ParseValue(std::string_view text) { return ToScaledInt(text, 0, "units"); }

std::string FormatMilli(int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

std::string FormatBytes(int64_t bytes) {
  if (bytes == 0) return "0";
  static constexpr std::array<std::string_view, 6> kBinary = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  for (int i = static_cast<int>(kBinary.size()); i >= 1; --i) {
    const int64_t unit = int64_t{1} << (10 * i);
    if (bytes % unit == 0) return std::to_string(bytes / unit) + std::string(kBinary[i - 1]);
  }
  return std::to_string(bytes);
}

}  // namespace berth::k8s
