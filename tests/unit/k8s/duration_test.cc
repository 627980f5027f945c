#include "k8s/duration.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace berth::k8s {
namespace {

using std::chrono::milliseconds;

struct Case {
  std::string text;
  int64_t want_ms;
};

TEST(ParseDurationTest, AcceptsEveryForm) {
  const std::vector<Case> cases = {
      // Single units.
      {"90s", 90'000},
      {"90m", 5'400'000},
      {"4h", 14'400'000},
      {"500ms", 500},
      {"2d", 172'800'000},
      {"1000us", 1},
      {"1000\u00b5s", 1},  // micro sign
      {"2000\u03bcs", 2},  // Greek mu
      {"3000000ns", 3},
      // Combinations, in any order, repeated units add up.
      {"1h30m", 5'400'000},
      {"30m1h", 5'400'000},
      {"1h1h", 7'200'000},
      {"1d12h", 129'600'000},
      {"1d1s", 86'401'000},
      {"1h2m3s4ms", 3'723'004},
      {"1m30s500ms", 90'500},
      // Fractions.
      {"1.5h", 5'400'000},
      {"0.5d", 43'200'000},
      {".5m", 30'000},
      {"1.m", 60'000},
      {"1h0.5m", 3'630'000},
      {"1.0001s", 1'001},
      {"0.001s", 1},
      {"1.000000000000000000000000000001s", 1'000},
      // Zero, and an explicit plus sign as Go allows.
      {"0", 0},
      {"+0", 0},
      {"0s", 0},
      {"0h0m", 0},
      {"+5s", 5'000},
      // Rounding up to whole milliseconds; finer than a nanosecond is dropped as in Go.
      {"1ns", 1},
      {"999999ns", 1},
      {"1000000ns", 1},
      {"1000001ns", 2},
      {"500us", 1},
      {"1500us", 2},
      {"0.1ns", 0},
      // Limits: int64 nanoseconds, as Go.
      {"106751d", 9'223'286'400'000},
      {"2562047h", 9'223'369'200'000},
      {"2562047h47m16.854775807s", 9'223'372'036'855},
      {"9223372036854775807ns", 9'223'372'036'855},
  };
  for (const Case& c : cases) {
    Result<std::optional<milliseconds>> got = ParseDuration(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    ASSERT_TRUE(got->has_value()) << c.text;
    EXPECT_EQ(got->value(), milliseconds(c.want_ms)) << c.text;

    Result<milliseconds> strict = ParseDurationStrict(c.text);
    ASSERT_TRUE(strict.ok()) << c.text << ": " << strict.status().ToString();
    EXPECT_EQ(*strict, milliseconds(c.want_ms)) << c.text;
  }
}

TEST(ParseDurationTest, OffMeansNoLimit) {
  Result<std::optional<milliseconds>> got = ParseDuration("off");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_FALSE(got->has_value());
}

TEST(ParseDurationStrictTest, RejectsOff) {
  Result<milliseconds> got = ParseDurationStrict("off");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(
      got.status().message(),
      "invalid duration \"off\": \"off\" is not allowed here (use a duration such as \"1h\")");
}

struct ErrorCase {
  std::string text;
  std::string message;  // the whole message for the first few, else a fragment
};

TEST(ParseDurationTest, RejectsMalformedText) {
  const std::vector<ErrorCase> cases = {
      {"", "invalid duration \"\": empty string (use a duration such as \"1h\" or \"off\")"},
      {"-5m", "invalid duration \"-5m\": negative durations are not allowed"},
      {"90",
       "invalid duration \"90\": missing unit (use ns, us, ms, s, m, h or d, e.g. \"90s\" or "
       "\"1h30m\")"},
      {"5y",
       "invalid duration \"5y\": unknown unit \"y\" (use ns, us, ms, s, m, h or d, e.g. \"90s\" "
       "or \"1h30m\")"},
      {"h",
       "invalid duration \"h\": expected a number before \"h\" (a duration looks like \"90s\", "
       "\"1h30m\", \"2d\" or \"off\")"},
      {"+", "invalid duration \"+\": expected a number after \"+\""},
      {"-0", "negative durations are not allowed"},
      {"-1h", "negative durations are not allowed"},
      {"1h30", "missing unit"},
      {"00", "missing unit"},
      {"1.5.5h", "missing unit"},
      {"1H", "unknown unit \"H\""},
      {"1D", "unknown unit \"D\""},
      {"1sec", "unknown unit \"sec\""},
      {"1e3s", "unknown unit \"e\""},
      {"1 h", "unknown unit \" h\""},
      {"1h 30m", "unknown unit \"h \""},
      {"1h\t", "unknown unit \"h\t\""},
      {" 1h", "expected a number before \" 1h\""},
      {"Off", "expected a number before \"Off\""},
      {"OFF", "expected a number before \"OFF\""},
      {"never", "expected a number before \"never\""},
      {".", "expected a number (a duration looks like"},
      {".s", "expected a number before \"s\""},
      {"1h.", "expected a number (a duration looks like"},
      {"1h+1m", "unknown unit \"h+\""},
      {"106752d", "too long (the maximum is about 292 years)"},
      {"2562047h47m16.854775808s", "too long"},
      {"9223372036854775808ns", "too long"},
      {"99999999999999999999999s", "too long"},
      {"2000000h2000000h", "too long"},
  };
  for (const ErrorCase& c : cases) {
    Result<std::optional<milliseconds>> got = ParseDuration(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), 0);
    EXPECT_NE(got.status().message().find(c.message), std::string::npos)
        << c.text << " -> " << got.status().message();
    EXPECT_EQ(got.status().message().rfind("invalid duration \"" + c.text + "\": ", 0), 0u)
        << got.status().message();

    Result<milliseconds> strict = ParseDurationStrict(c.text);
    ASSERT_FALSE(strict.ok()) << c.text;
    EXPECT_EQ(strict.status().message(), got.status().message());
  }
}

TEST(FormatDurationTest, LargestUnitsFirstWithoutZeroParts) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "0s"},
      {1, "1ms"},
      {500, "500ms"},
      {1'500, "1s500ms"},
      {45'000, "45s"},
      {90'000, "1m30s"},
      {3'600'000, "1h"},
      {5'400'000, "1h30m"},
      {3'723'004, "1h2m3s4ms"},
      {86'400'000, "1d"},
      {86'401'000, "1d1s"},
      {183'600'000, "2d3h"},
      {-90'000, "-1m30s"},
      {std::numeric_limits<int64_t>::min(), "-106751991167d7h12m55s808ms"},
      {std::numeric_limits<int64_t>::max(), "106751991167d7h12m55s807ms"},
  };
  for (const auto& [ms, want] : cases) EXPECT_EQ(FormatDuration(milliseconds(ms)), want) << ms;
}

TEST(FormatDurationTest, RoundTripsThroughTheParser) {
  for (int64_t ms :
       {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1'000}, int64_t{61'001}, int64_t{86'399'999},
        int64_t{90'061'001}, int64_t{9'223'286'400'000}, int64_t{9'223'372'036'854}}) {
    const std::string text = FormatDuration(milliseconds(ms));
    Result<milliseconds> got = ParseDurationStrict(text);
    ASSERT_TRUE(got.ok()) << text << ": " << got.status().ToString();
    EXPECT_EQ(*got, milliseconds(ms)) << text;
  }
}

}  // namespace
}  // namespace berth::k8s
