#include "k8s/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace berth::k8s {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

struct Case {
  std::string text;
  int64_t want;
};

TEST(ParseMilliValueTest, AcceptsEveryForm) {
  const std::vector<Case> cases = {
      // Plain numbers, signs, fractions, leading zeros.
      {"0", 0},
      {"00", 0},
      {"0.000", 0},
      {"-0", 0},
      {"2", 2000},
      {"1.5", 1500},
      {"0.5", 500},
      {".5", 500},
      {"1.", 1000},
      {"+1", 1000},
      {"-1", -1000},
      {"+.25", 250},
      {"000100m", 100},
      // Decimal SI suffixes.
      {"100m", 100},
      {"-100m", -100},
      {"1m", 1},
      {"1500m", 1500},
      {"250000u", 250},
      {"1u", 1},  // 0.001m rounds up
      {"1n", 1},
      {"1000000n", 1},
      {"1000001n", 2},
      {"1k", 1'000'000},
      {"1.5k", 1'500'000},
      {"2M", 2'000'000'000},
      {"1G", 1'000'000'000'000},
      {"1.G", 1'000'000'000'000},
      {"3T", 3'000'000'000'000'000},
      {"1P", 1'000'000'000'000'000'000},
      // Binary SI suffixes.
      {"1Ki", 1'024'000},
      {"0.5Ki", 512'000},
      {"1Mi", 1'048'576'000},
      // Decimal exponents.
      {"2e3", 2'000'000},
      {"1E3", 1'000'000},
      {"1e+3", 1'000'000},
      {"1e0", 1000},
      {"1e-3", 1},
      {"1.5e-3", 2},  // 1.5m rounds up
      {"15e-4", 2},
      {"1e-1000000", 1},
      {"0e999", 0},
      // Rounding: any remainder rounds away from zero.
      {"0.1m", 1},
      {"-0.1m", -1},
      {"1.0001", 1001},
      {"-1.0001", -1001},
      {"0.000000000000000000000000000001", 1},
      // Limits.
      {"9223372036854775", 9'223'372'036'854'775'000},
      {"9223372036854775807m", kMax},
      {"-9223372036854775808m", kMin},
      {"9223372036854775.807", kMax},
  };
  for (const Case& c : cases) {
    Result<int64_t> got = ParseMilliValue(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

TEST(ParseValueTest, AcceptsEveryForm) {
  const std::vector<Case> cases = {
      {"0", 0},
      {"1", 1},
      {"-7", -7},
      {"1500", 1500},
      // Decimal SI.
      {"1k", 1000},
      {"500M", 500'000'000},
      {"1G", 1'000'000'000},
      {"1T", 1'000'000'000'000},
      {"1P", 1'000'000'000'000'000},
      {"1E", 1'000'000'000'000'000'000},
      {"9E", 9'000'000'000'000'000'000},
      {"100m", 1},
      {"1m", 1},
      {"1000m", 1},
      {"1001m", 2},
      {"-100m", -1},
      {"1n", 1},
      {"0.4", 1},
      {"-0.4", -1},
      {"2.5k", 2500},
      // Binary SI.
      {"1Ki", 1024},
      {"1Mi", 1'048'576},
      {"1Gi", 1'073'741'824},
      {"1Ti", 1'099'511'627'776},
      {"1Pi", 1'125'899'906'842'624},
      {"1Ei", 1'152'921'504'606'846'976},
      {"7Ei", 8'070'450'532'247'928'832},
      {"-8Ei", kMin},
      {"1.5Gi", 1'610'612'736},
      {"16Gi", 17'179'869'184},
      {"1.5Ki", 1536},
      {"0.1Ki", 103},  // 102.4 rounds up
      {".5Mi", 524'288},
      {"-1.5Ki", -1536},
      {"0.000000001Ki", 1},
      // Exponents.
      {"1e9", 1'000'000'000},
      {"1E6", 1'000'000},
      {"12e-1", 2},
      {"1e18", 1'000'000'000'000'000'000},
      {"123456789012345678901234567890e-20", 1'234'567'891},
      // Limits.
      {"9223372036854775807", kMax},
      {"-9223372036854775808", kMin},
      {"0009223372036854775807", kMax},
      {"9223372036854775806.1", kMax},
  };
  for (const Case& c : cases) {
    Result<int64_t> got = ParseValue(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.text;
  }
}

struct ErrorCase {
  std::string text;
  std::string message;  // the whole message for the first few, else a fragment
};

TEST(ParseValueTest, RejectsMalformedText) {
  const std::vector<ErrorCase> cases = {
      {"", "invalid quantity \"\": empty string"},
      {"abc",
       "invalid quantity \"abc\": must start with a number, e.g. \"100m\", \"1.5\", \"2Gi\" or "
       "\"1e3\""},
      {"1K",
       "invalid quantity \"1K\": unknown suffix \"K\" (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, "
       "Ti, Pi, Ei or an exponent such as e3)"},
      {".", "must start with a number"},
      {"+", "must start with a number"},
      {"-", "must start with a number"},
      {"+-1", "must start with a number"},
      {"--1", "must start with a number"},
      {"e3", "must start with a number"},
      {"Gi", "must start with a number"},
      {" 1", "must start with a number"},
      {"1 ", "unknown suffix \" \""},
      {"1 Gi", "unknown suffix \" Gi\""},
      {"1Gi ", "unknown suffix \"Gi \""},
      {"1kb", "unknown suffix \"kb\""},
      {"1KiB", "unknown suffix \"KiB\""},
      {"1KI", "unknown suffix \"KI\""},
      {"1ki", "unknown suffix \"ki\""},
      {"1mi", "unknown suffix \"mi\""},
      {"1i", "unknown suffix \"i\""},
      {"1e", "unknown suffix \"e\""},
      {"1e+", "unknown suffix \"e+\""},
      {"1e-", "unknown suffix \"e-\""},
      {"1e1.5", "unknown suffix \"e1.5\""},
      {"1Ee3", "unknown suffix \"Ee3\""},
      {"1e3k", "unknown suffix \"e3k\""},
      {"1.2.3", "unknown suffix \".3\""},
      {"1,5", "unknown suffix \",5\""},
      {"0x10", "unknown suffix \"x10\""},
      {"1µ", "unknown suffix"},
      {"1e1000000001", "exponent \"e1000000001\" is out of range"},
      {"1e-99999999999999999999", "exponent \"e-99999999999999999999\" is out of range"},
  };
  for (const ErrorCase& c : cases) {
    for (auto parse : {&ParseValue, &ParseMilliValue}) {
      Result<int64_t> got = parse(c.text);
      ASSERT_FALSE(got.ok()) << c.text;
      EXPECT_EQ(got.status().code(), 0);
      EXPECT_NE(got.status().message().find(c.message), std::string::npos)
          << c.text << " -> " << got.status().message();
      EXPECT_EQ(got.status().message().rfind("invalid quantity \"" + c.text + "\": ", 0), 0u)
          << got.status().message();
    }
  }
}

TEST(ParseValueTest, RejectsValuesOutsideInt64) {
  for (const char* text : {"9223372036854775808", "-9223372036854775809", "8Ei", "10E", "1e19",
                           "99999999999999999999", "1e1000000000", "9223372036854775807.1",
                           "100000000000000000000000000000000000000000e-10"}) {
    Result<int64_t> got = ParseValue(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().message(), "invalid quantity \"" + std::string(text) +
                                          "\": out of range: the value in units does not fit in "
                                          "a 64-bit integer");
  }
}

TEST(ParseMilliValueTest, RejectsValuesOutsideInt64) {
  for (const char* text : {"9223372036854776", "-9223372036854776", "1E", "9223372036854775808m",
                           "-9223372036854775809m", "10Pi", "1e16"}) {
    Result<int64_t> got = ParseMilliValue(text);
    ASSERT_FALSE(got.ok()) << text;
    EXPECT_EQ(got.status().message(), "invalid quantity \"" + std::string(text) +
                                          "\": out of range: the value in thousandths (m) does "
                                          "not fit in a 64-bit integer");
  }
}

TEST(FormatMilliTest, WholeNumbersHaveNoSuffix) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "0"},
      {1, "1m"},
      {100, "100m"},
      {1500, "1500m"},
      {2000, "2"},
      {64000, "64"},
      {-500, "-500m"},
      {-3000, "-3"},
      {kMax, "9223372036854775807m"},
      {kMin, "-9223372036854775808m"},
  };
  for (const auto& [milli, want] : cases) EXPECT_EQ(FormatMilli(milli), want) << milli;
}

TEST(FormatBytesTest, UsesTheLargestExactBinarySuffix) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {0, "0"},
      {1, "1"},
      {1000, "1000"},
      {1500, "1500"},
      {1023, "1023"},
      {1024, "1Ki"},
      {1536, "1536"},  // 1.5Ki is not a whole number of Ki
      {3072, "3Ki"},
      {1'610'612'736, "1536Mi"},
      {17'179'869'184, "16Gi"},
      {int64_t{3} << 40, "3Ti"},
      {int64_t{1} << 50, "1Pi"},
      {int64_t{1} << 60, "1Ei"},
      {-2048, "-2Ki"},
      {-1, "-1"},
      {kMax, "9223372036854775807"},
      {kMin, "-8Ei"},
  };
  for (const auto& [bytes, want] : cases) EXPECT_EQ(FormatBytes(bytes), want) << bytes;
}

TEST(FormatTest, RoundTripsThroughTheParsers) {
  const std::vector<int64_t> values = {0,
                                       1,
                                       -1,
                                       999,
                                       1000,
                                       1001,
                                       1024,
                                       1536,
                                       1 << 20,
                                       (1 << 20) + 1,
                                       kMax,
                                       kMin,
                                       kMax - 1,
                                       kMin + 1,
                                       17'179'869'184,
                                       -17'179'869'184};
  for (int64_t v : values) {
    Result<int64_t> milli = ParseMilliValue(FormatMilli(v));
    ASSERT_TRUE(milli.ok()) << FormatMilli(v) << ": " << milli.status().ToString();
    EXPECT_EQ(*milli, v);
    Result<int64_t> bytes = ParseValue(FormatBytes(v));
    ASSERT_TRUE(bytes.ok()) << FormatBytes(v) << ": " << bytes.status().ToString();
    EXPECT_EQ(*bytes, v);
  }
}

}  // namespace
}  // namespace berth::k8s
