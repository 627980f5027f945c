#include "cli/format.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "k8s/timefmt.h"

namespace berth::cli {
namespace {

using std::chrono::seconds;

TEST(FormatTest, HumanDurationLikeKubectl) {
  struct Case {
    int64_t seconds;
    std::string want;
  };
  const std::vector<Case> cases = {
      {-5, "0s"},
      {0, "0s"},
      {59, "59s"},
      {119, "119s"},
      {120, "2m"},
      {192, "3m12s"},
      {599, "9m59s"},
      {600, "10m"},
      {10799, "179m"},
      {10800, "3h"},
      {3 * 3600 + 12 * 60 + 59, "3h12m"},
      {8 * 3600 - 1, "7h59m"},
      {8 * 3600, "8h"},
      {47 * 3600 + 3599, "47h"},
      {48 * 3600, "2d"},
      {53 * 3600, "2d5h"},
      {8 * 86400 - 1, "7d23h"},
      {8 * 86400, "8d"},
      {45 * 86400, "45d"},
      {2 * 365 * 86400, "2y"},
      {(3 * 365 + 30) * 86400, "3y30d"},
      {9 * 365 * 86400, "9y"},
  };
  for (const auto& c : cases) EXPECT_EQ(HumanDuration(seconds(c.seconds)), c.want) << c.seconds;
}

TEST(FormatTest, BlockBar) {
  struct Case {
    int64_t busy, total;
    std::string want;
  };
  const std::vector<Case> cases = {
      {4, 8, "[####....] 4/8"},
      {0, 8, "[........] 0/8"},
      {8, 8, "[########] 8/8"},
      {0, 1, "[.] 0/1"},
      {1, 1, "[#] 1/1"},
      {0, 0, "[] 0/0"},
      // More blocks than cells: each cell stands for two blocks.
      {16, 32, "[########........] 16/32"},
      // One busy block never looks idle; one free block never looks full.
      {1, 64, "[#...............] 1/64"},
      {63, 64, "[###############.] 63/64"},
      {64, 64, "[################] 64/64"},
      // Reported numbers out of range are drawn clamped but written as reported.
      {9, 8, "[########] 9/8"},
  };
  for (const auto& c : cases) EXPECT_EQ(BlockBar(c.busy, c.total), c.want) << c.busy << "/" << c.total;
}

TEST(FormatTest, RelativeExpiry) {
  const k8s::TimePoint now = *k8s::ParseRfc3339("2026-11-21T20:00:00Z");
  EXPECT_EQ(RelativeExpiry("", now), "-");
  EXPECT_EQ(RelativeExpiry("not a time", now), "-");
  EXPECT_EQ(RelativeExpiry("2026-11-21T19:59:59Z", now), "expired");
  EXPECT_EQ(RelativeExpiry("2026-11-21T20:00:00Z", now), "expired");
  EXPECT_EQ(RelativeExpiry("2026-11-21T23:12:00Z", now), "in 3h12m");
  EXPECT_EQ(RelativeExpiry("2026-11-21T20:00:45Z", now), "in 45s");
  EXPECT_EQ(RelativeExpiry("2026-11-24T02:00:00Z", now), "in 2d6h");
}

TEST(FormatTest, TableAlignsColumnsWithoutTrailingSpaces) {
  Table t({"NAME", "PRIORITY", "MESSAGE"});
  t.AddRow({"train", "50", "needs 2 idle instances"});
  t.AddRow({"a-much-longer-name", "7", ""});
  EXPECT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.Render(),
            "NAME                 PRIORITY   MESSAGE\n"
            "train                50         needs 2 idle instances\n"
            "a-much-longer-name   7\n");
  Table small({"A", "B"});
  small.AddRow({"x", "y"});
  EXPECT_EQ(small.Render("  "), "  A   B\n  x   y\n");
}

// Issue 44, item 8: text from the API is printed without the control characters a terminal acts
// on (C0 but \n and \t in a block of lines, DEL, C1 as UTF-8 or as a lone byte); words, other
// UTF-8 and punctuation are kept; a byte that is not UTF-8 shows as '?'.
TEST(FormatTest, PrintableRemovesWhatATerminalActsOn) {
  const std::string evil = "\x1b]0;owned\x07\x1b[2Jcleared \x1b[31mred\x1b[0m \xc2\x9b" "6n\x7f" "done\r\x08!";
  EXPECT_EQ(Printable(evil), "]0;owned[2Jcleared [31mred[0m 6ndone!");
  EXPECT_EQ(Printable(evil, TextLines::kMany), "]0;owned[2Jcleared [31mred[0m 6ndone!");
  // Line breaks and tabs: kept in a block of lines, a space in one line.
  EXPECT_EQ(Printable("a\tb\nc", TextLines::kMany), "a\tb\nc");
  EXPECT_EQ(Printable("a\tb\nc"), "a b c");
  // Every C0 control but those two, and DEL.
  for (int c = 0; c < 0x20; ++c) {
    if (c == '\n' || c == '\t') continue;
    EXPECT_EQ(Printable(std::string("x") + static_cast<char>(c) + "y", TextLines::kMany), "xy") << c;
  }
  EXPECT_EQ(Printable("x\x7fy"), "xy");
  // C1 (U+0080-U+009F) as UTF-8 and as lone bytes (an 8-bit terminal reads 0x9b as CSI).
  for (int c = 0x80; c <= 0x9f; ++c) {
    EXPECT_EQ(Printable(std::string("x\xc2") + static_cast<char>(c) + "y"), "xy") << c;
    EXPECT_EQ(Printable(std::string("x") + static_cast<char>(c) + "y"), "xy") << c;
  }
  // Printable UTF-8 stays: U+00A0 and beyond, 3- and 4-byte forms.
  EXPECT_EQ(Printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x9a\x80 \xc2\xa0."), "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x9a\x80 \xc2\xa0.");
  // Not UTF-8: overlong forms (an ESC spelled in two bytes), surrogates, cut-off sequences.
  EXPECT_EQ(Printable("a\xc0\x9b" "b"), "a?b");
  EXPECT_EQ(Printable("a\xe0\x80\x9b" "b"), "a?b");
  EXPECT_EQ(Printable("a\xed\xa0\x80" "b"), "a??b");
  EXPECT_EQ(Printable("a\xe2\x9c"), "a?");
  EXPECT_EQ(Printable(""), "");
}

TEST(FormatTest, PrintableJsonEscapesDelAndC1AndKeepsTheValue) {
  EXPECT_EQ(PrintableJson("{\"m\":\"a\x7f" "b\xc2\x9b" "6n \xc3\xa9\\u001b\"}"), "{\"m\":\"a\\u007fb\\u009b6n \xc3\xa9\\u001b\"}");
  EXPECT_EQ(PrintableJson("[1,2]"), "[1,2]");
}

// A cell with a multi-byte character (the ETA's en dash) is as wide as its characters.
TEST(FormatTest, TableCountsCharactersNotBytes) {
  Table t({"ETA", "NODES"});
  t.AddRow({"~40m (20m\u20131h)", "2"});
  EXPECT_EQ(t.Render(), "ETA             NODES\n~40m (20m\u20131h)   2\n");
}

TEST(FormatTest, TableCellsArePrintableOnOneLineAndAlignAsPrinted) {
  Table t({"NAME", "MESSAGE"});
  t.AddRow({"a\x1b[31m", "two\nlines\x07"});
  t.AddRow({"bb", "ok"});
  EXPECT_EQ(t.Render(), "NAME    MESSAGE\na[31m   two lines\nbb      ok\n");
}

}  // namespace
}  // namespace berth::cli
