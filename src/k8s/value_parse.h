#pragma once
// What the parsers of Kubernetes values (duration.cc, quantity.cc, timefmt.cc) share: the error
// they refuse a text with, and ASCII digit reading (std::isdigit depends on the locale).

#include <string>
#include <string_view>
#include <utility>

#include "k8s/result.h"

namespace berth::k8s {

// `invalid <kind> "<text>": <why>`
inline Status InvalidValue(std::string_view kind, std::string_view text, std::string_view why) {
  std::string message = "invalid ";
  message += kind;
  message += " \"";
  message += text;
  message += "\": ";
  message += why;
  return Status::Error(std::move(message));
}

constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The leading ASCII digits of `rest`, removed from it ("" when it starts with none).
inline std::string_view TakeDigits(std::string_view& rest) {
  size_t n = 0;
  while (n < rest.size() && IsDigit(rest[n])) ++n;
  const std::string_view digits = rest.substr(0, n);
  rest.remove_prefix(n);
  return digits;
}

// After a number's whole part: a '.' and the digits after it, removed from `rest` ("" without a
// '.').
inline std::string_view TakeFraction(std::string_view& rest) {
  if (rest.empty() || rest[0] != '.') return {};
  rest.remove_prefix(1);
  return TakeDigits(rest);
}

}  // namespace berth::k8s
