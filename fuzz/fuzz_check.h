#pragma once
// Shared helpers for berth's fuzz targets (fuzz/*_fuzz.cc).
//
// Each target defines LLVMFuzzerTestOneInput. With clang and -DBERTH_FUZZ=ON it is linked with
// libFuzzer; in every build it is also linked with replay_main.cc, which runs it once on every
// file of the target's seed corpus and regressions folder (a ctest entry labelled `unit`).
//
// A property that does not hold is a bug like a crash: FUZZ_CHECK prints what failed and aborts,
// so libFuzzer saves the input.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "k8s/json.h"

#define FUZZ_CHECK(cond, ...)                                                          \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n  ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                               \
      std::fprintf(stderr, "\n");                                                      \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace berth::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// The JSON targets: `check` runs on the document parsed both ways berth parses (copying and in
// situ), whenever the bytes are JSON at all.
template <typename Check>
int FuzzJson(const uint8_t* data, size_t size, Check check) {
  const std::string_view text = AsText(data, size);
  auto doc = k8s::json::Parse(text);
  if (doc.ok()) check(*doc);
  std::string buffer(text);
  k8s::json::Document in_situ;
  if (k8s::json::ParseInSitu(buffer, in_situ).ok()) check(in_situ);
  return 0;
}

// Printable form of arbitrary bytes for failure messages.
inline std::string Escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace berth::fuzz
