#include "k8s/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace berth::k8s {
namespace {

using Outcome = LineSplitter::Outcome;

struct Collected {
  std::vector<std::string> lines;
  Outcome outcome = Outcome::kContinue;
};

// Feeds `chunks` one by one, then finishes.
Collected Split(const std::vector<std::string_view>& chunks, size_t max_line = LineSplitter::kDefaultMaxLine) {
  LineSplitter s(max_line);
  Collected c;
  const LineSplitter::LineFn collect = [&](std::string& line) {
    c.lines.push_back(line);
    return true;
  };
  for (std::string_view chunk : chunks) {
    c.outcome = s.Feed(chunk, collect);
    if (c.outcome != Outcome::kContinue) return c;
  }
  c.outcome = s.Finish(collect);
  return c;
}

using Lines = std::vector<std::string>;

TEST(LineSplitterTest, SplitsOnNewline) {
  Collected c = Split({"{\"a\":1}\n{\"b\":2}\n"});
  EXPECT_EQ(c.outcome, Outcome::kContinue);
  EXPECT_EQ(c.lines, (Lines{"{\"a\":1}", "{\"b\":2}"}));
}

TEST(LineSplitterTest, DropsCarriageReturnBeforeNewline) {
  EXPECT_EQ(Split({"one\r\ntwo\r\n"}).lines, (Lines{"one", "two"}));
  // Only one "\r" is part of the ending; a "\r" elsewhere is data.
  EXPECT_EQ(Split({"a\rb\r\r\n"}).lines, (Lines{"a\rb\r"}));
}

TEST(LineSplitterTest, CarriageReturnAndNewlineInDifferentChunks) {
  EXPECT_EQ(Split({"one\r", "\ntwo\r", "\n"}).lines, (Lines{"one", "two"}));
}

TEST(LineSplitterTest, LastLineWithoutNewlineComesOnFinish) {
  LineSplitter s;
  Lines got;
  const LineSplitter::LineFn collect = [&](std::string& line) {
    got.push_back(line);
    return true;
  };
  EXPECT_EQ(s.Feed("first\nsec", collect), Outcome::kContinue);
  EXPECT_EQ(got, (Lines{"first"}));
  EXPECT_EQ(s.buffered(), 3u);
  EXPECT_EQ(s.Feed("ond", collect), Outcome::kContinue);
  EXPECT_EQ(got, (Lines{"first"}));
  EXPECT_EQ(s.Finish(collect), Outcome::kContinue);
  EXPECT_EQ(got, (Lines{"first", "second"}));
  EXPECT_EQ(s.buffered(), 0u);
  EXPECT_EQ(Split({"last\r"}).lines, (Lines{"last"}));
}

TEST(LineSplitterTest, SkipsEmptyLines) {
  EXPECT_EQ(Split({"\n\r\n\na\n\n\nb\r\n\r\n"}).lines, (Lines{"a", "b"}));
  EXPECT_TRUE(Split({""}).lines.empty());
  EXPECT_TRUE(Split({"\r"}).lines.empty());
}

TEST(LineSplitterTest, ByteByByteEqualsWhole) {
  const std::string stream = "{\"type\":\"ADDED\"}\r\n\n{\"type\":\"MODIFIED\"}\nx\ry\nend";
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < stream.size(); ++i) bytes.push_back(std::string_view(stream).substr(i, 1));
  EXPECT_EQ(Split(bytes).lines, Split({stream}).lines);
  EXPECT_EQ(Split({stream}).lines, (Lines{"{\"type\":\"ADDED\"}", "{\"type\":\"MODIFIED\"}", "x\ry", "end"}));
}

TEST(LineSplitterTest, StopsWhenAskedTo) {
  LineSplitter s;
  Lines got;
  const LineSplitter::LineFn first_only = [&](std::string& line) {
    got.push_back(line);
    return false;
  };
  EXPECT_EQ(s.Feed("a\nb\nc", first_only), Outcome::kStopped);
  EXPECT_EQ(s.Feed("d\n", first_only), Outcome::kStopped);
  EXPECT_EQ(s.Finish(first_only), Outcome::kStopped);
  EXPECT_EQ(got, (Lines{"a"}));
}

TEST(LineSplitterTest, CallbackMayTakeTheLine) {
  LineSplitter s;
  Lines got;
  const LineSplitter::LineFn take = [&](std::string& line) {
    got.push_back(std::move(line));
    return true;
  };
  EXPECT_EQ(s.Feed("abc\ndef\ngh", take), Outcome::kContinue);
  EXPECT_EQ(s.Feed("i\n", take), Outcome::kContinue);
  EXPECT_EQ(got, (Lines{"abc", "def", "ghi"}));
}

TEST(LineSplitterTest, LineOfExactlyMaxLengthPasses) {
  EXPECT_EQ(Split({"12345\n"}, 5).lines, (Lines{"12345"}));
  EXPECT_EQ(Split({"12345\r\n"}, 5).lines, (Lines{"12345"}));
  EXPECT_EQ(Split({"123", "45\r", "\n"}, 5).lines, (Lines{"12345"}));
  EXPECT_EQ(Split({"12345"}, 5).lines, (Lines{"12345"}));
  EXPECT_EQ(Split({"12345\r"}, 5).lines, (Lines{"12345"}));
}

TEST(LineSplitterTest, LongerLineIsAnErrorWithoutWaitingForItsEnd) {
  Collected c = Split({"ok\n123456\nnever\n"}, 5);
  EXPECT_EQ(c.outcome, Outcome::kTooLong);
  EXPECT_EQ(c.lines, (Lines{"ok"}));

  // Reported while the line is still arriving: nothing unbounded is buffered.
  LineSplitter s(5);
  const LineSplitter::LineFn ignore = [](std::string&) { return true; };
  EXPECT_EQ(s.Feed("1234", ignore), Outcome::kContinue);
  EXPECT_EQ(s.Feed("5\r", ignore), Outcome::kContinue);  // may still be "12345\r\n"
  EXPECT_EQ(s.Feed("6", ignore), Outcome::kTooLong);
  EXPECT_EQ(s.buffered(), 0u);
  EXPECT_EQ(s.Feed("\n", ignore), Outcome::kTooLong);  // stays failed
  EXPECT_EQ(s.Finish(ignore), Outcome::kTooLong);

  EXPECT_EQ(Split({"123", "456"}, 5).outcome, Outcome::kTooLong);
  EXPECT_EQ(Split({"12345\r\r\n"}, 5).outcome, Outcome::kTooLong);  // "12345\r" is 6 bytes of data
  EXPECT_EQ(Split({"123456"}, 5).outcome, Outcome::kTooLong);       // also without a newline
  EXPECT_EQ(Split({"12345x"}, 5).outcome, Outcome::kTooLong);
}

TEST(LineSplitterTest, ZeroMaximumAllowsOnlyEmptyLines) {
  EXPECT_EQ(Split({"\n\r\n"}, 0).outcome, Outcome::kContinue);
  EXPECT_EQ(Split({"\n\r\na\n"}, 0).outcome, Outcome::kTooLong);
}

}  // namespace
}  // namespace berth::k8s
