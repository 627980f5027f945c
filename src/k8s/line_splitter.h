#pragma once
// Splits a byte stream that arrives in arbitrary chunks (a watch response body) into lines.
//
// Rules (as Go's bufio.ScanLines, which is what line-delimited JSON streams are written for):
// - a line ends at "\n"; one "\r" right before the "\n" is dropped too ("\r\n" endings);
//   a "\r" anywhere else is kept as part of the line;
// - a last line without "\n" is delivered by Finish() (with one trailing "\r" dropped);
// - empty lines (after dropping "\r") are skipped: a watch stream never carries them as data;
// - a line longer than max_line bytes (not counting its ending) is an error, reported as soon
//   as the buffered part is known to be too long, so memory stays bounded by about max_line plus
//   the largest chunk fed.
// The splitter is pure (no I/O, no threads) so it can be unit-tested and fuzzed in isolation.

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace berth::k8s {

class LineSplitter {
 public:
  // 64 MiB: far above any Kubernetes object (etcd refuses requests over 1.5 MiB by default, and a
  // watch event is one object), far below what would hurt the controller.
  static constexpr size_t kDefaultMaxLine = size_t{64} << 20;

  enum class Outcome {
    kContinue,  // all lines so far delivered; feed more
    kStopped,   // on_line returned false; the splitter delivers nothing more
    kTooLong,   // a line exceeded max_line; the splitter delivers nothing more
  };

  // Gets each line without its ending; may modify or move from the string. Returns false to stop.
  using LineFn = std::function<bool(std::string& line)>;

  explicit LineSplitter(size_t max_line = kDefaultMaxLine)
      : max_line_(std::min(max_line, static_cast<size_t>(-1) - 1)) {}

  // Delivers every line completed by `chunk`; keeps an unfinished last line for later.
  Outcome Feed(std::string_view chunk, const LineFn& on_line);
  // End of stream: delivers the unfinished last line, if any.
  Outcome Finish(const LineFn& on_line);

  size_t max_line() const { return max_line_; }
  // Bytes of the unfinished line held so far.
  size_t buffered() const { return pending_.size(); }

 private:
  Outcome Deliver(const LineFn& on_line);

  size_t max_line_;
  std::string pending_;
  Outcome state_ = Outcome::kContinue;
};

}  // namespace berth::k8s
