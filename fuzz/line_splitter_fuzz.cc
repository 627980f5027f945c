// The watch-stream line splitter (src/k8s/line_splitter.h), fed the same stream in several
// chunkings (whole, byte by byte, pseudo-random sizes); the lines it delivers and its outcome must
// equal a plain reference split of the whole stream, and it must never hold more than
// max_line + 1 bytes.
//
// Input: byte 0 picks max_line (0..199, or the default for 200..255), byte 1 stops the consumer
// after that many lines (0 = never), the rest is the stream.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "k8s/line_splitter.h"

namespace {

using berth::fuzz::Escape;
using berth::k8s::LineSplitter;
using Outcome = LineSplitter::Outcome;

struct Split {
  std::vector<std::string> lines;
  Outcome outcome = Outcome::kContinue;
};

Split Reference(std::string_view stream, size_t max_line, size_t stop_after) {
  Split out;
  while (!stream.empty()) {
    const size_t newline = stream.find('\n');
    std::string_view line = stream.substr(0, newline);
    stream.remove_prefix(newline == std::string_view::npos ? stream.size() : newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_line) {
      out.outcome = Outcome::kTooLong;
      return out;
    }
    if (line.empty()) continue;
    out.lines.emplace_back(line);
    if (out.lines.size() == stop_after) {
      out.outcome = Outcome::kStopped;
      return out;
    }
  }
  return out;
}

// Splits `stream` fed in chunks of the sizes `next_size` returns (at least 1 byte each).
template <typename NextSize>
Split Run(std::string_view stream, size_t max_line, size_t stop_after, NextSize next_size) {
  LineSplitter splitter(max_line);
  Split out;
  const LineSplitter::LineFn take = [&](std::string& line) {
    out.lines.push_back(std::move(line));  // consumers may move the line away
    return out.lines.size() != stop_after;
  };
  while (!stream.empty()) {
    const size_t n = std::min(stream.size(), next_size());
    out.outcome = splitter.Feed(stream.substr(0, n), take);
    stream.remove_prefix(n);
    FUZZ_CHECK(splitter.buffered() <= max_line + 1, "holds %zu bytes with max_line %zu", splitter.buffered(),
               max_line);
    if (out.outcome != Outcome::kContinue) return out;
  }
  out.outcome = splitter.Finish(take);
  FUZZ_CHECK(splitter.buffered() == 0, "holds %zu bytes after Finish", splitter.buffered());
  return out;
}

void Compare(const Split& want, const Split& got, std::string_view stream, const char* how) {
  FUZZ_CHECK(got.outcome == want.outcome, "%s: outcome %d, want %d for \"%s\"", how, static_cast<int>(got.outcome),
             static_cast<int>(want.outcome), Escape(stream).c_str());
  FUZZ_CHECK(got.lines == want.lines, "%s: %zu lines, want %zu for \"%s\"", how, got.lines.size(), want.lines.size(),
             Escape(stream).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t max_line = data[0] < 200 ? data[0] : LineSplitter::kDefaultMaxLine;
  const size_t stop_after = data[1];
  const std::string_view stream = berth::fuzz::AsText(data + 2, size - 2);

  const Split want = Reference(stream, max_line, stop_after);
  Compare(want, Run(stream, max_line, stop_after, [&] { return stream.size(); }), stream, "whole");
  Compare(want, Run(stream, max_line, stop_after, [] { return size_t{1}; }), stream, "byte by byte");
  // Chunk sizes 1..64 from a generator seeded by the input, so each input has its own chunking.
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  for (unsigned char c : stream) state = (state ^ c) * 0x100000001b3ULL;
  Compare(want, Run(stream, max_line, stop_after, [&] {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            return static_cast<size_t>(state >> 58) + 1;
          }), stream, "random chunks");
  return 0;
}
