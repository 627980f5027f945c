#pragma once
// What the parsers of Kubernetes values (duration.cc, quantity.cc, timefmt.cc) share: the error
// they refuse a text with, and an ASCII digit test (std::isdigit depends on the locale).

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

}  // namespace berth::k8s
