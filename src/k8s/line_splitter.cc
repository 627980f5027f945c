#include "k8s/line_splitter.h"

namespace berth::k8s {

LineSplitter::Outcome LineSplitter::Deliver(const LineFn& on_line) {
  if (!pending_.empty() && pending_.back() == '\r') pending_.pop_back();
  if (pending_.size() > max_line_) {
    pending_.clear();
    return state_ = Outcome::kTooLong;
  }
  if (pending_.empty()) return Outcome::kContinue;
  const bool go_on = on_line(pending_);
  pending_.clear();  // also after a move from it: clear() gives a valid empty string
  if (!go_on) return state_ = Outcome::kStopped;
  return Outcome::kContinue;
}

LineSplitter::Outcome LineSplitter::Feed(std::string_view chunk, const LineFn& on_line) {
  while (state_ == Outcome::kContinue && !chunk.empty()) {
    const size_t newline = chunk.find('\n');
    const std::string_view part = chunk.substr(0, newline);  // the whole chunk when npos
    // One byte more than max_line may still be a "\r" whose "\n" is in the next chunk.
    if (part.size() > max_line_ + 1 || pending_.size() > max_line_ + 1 - part.size()) {
      pending_.clear();
      return state_ = Outcome::kTooLong;
    }
    pending_.append(part);
    if (newline == std::string_view::npos) {
      if (pending_.size() == max_line_ + 1 && pending_.back() != '\r') {
        pending_.clear();
        return state_ = Outcome::kTooLong;
      }
      return Outcome::kContinue;
    }
    chunk.remove_prefix(newline + 1);
    Deliver(on_line);
  }
  return state_;
}

LineSplitter::Outcome LineSplitter::Finish(const LineFn& on_line) {
  if (state_ != Outcome::kContinue) return state_;
  Deliver(on_line);
  return state_;
}

}  // namespace berth::k8s
