#include "k8s/timefmt.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

namespace berth::k8s {
namespace {

using std::chrono::milliseconds;

TimePoint At(int64_t ms) { return TimePoint(milliseconds(ms)); }

constexpr int64_t k20261121T193738 = 1'795'289'858'000;  // 2026-11-21T19:37:38Z

struct Case {
  std::string text;
  int64_t want_ms;
};

TEST(ParseRfc3339Test, AcceptsEveryForm) {
  const std::vector<Case> cases = {
      {"2026-11-21T19:37:38Z", k20261121T193738},
      // Fractions of any length, truncated to the millisecond.
      {"2026-11-21T19:37:38.123456Z", k20261121T193738 + 123},
      {"2026-11-21T19:37:38.1Z", k20261121T193738 + 100},
      {"2026-11-21T19:37:38.12Z", k20261121T193738 + 120},
      {"2026-11-21T19:37:38.000Z", k20261121T193738},
      {"2026-11-21T19:37:38.999999999Z", k20261121T193738 + 999},
      {"2026-11-21T19:37:38.1234567890123Z", k20261121T193738 + 123},
      // Offsets.
      {"2026-11-21T21:37:38+02:00", k20261121T193738},
      {"2026-11-21T14:07:38-05:30", k20261121T193738},
      {"2026-11-21T19:37:38+00:00", k20261121T193738},
      {"2026-11-21T19:37:38-00:00", k20261121T193738},
      {"2026-11-22T19:36:38+23:59", k20261121T193738},
      {"2026-11-21T21:37:38.5+02:00", k20261121T193738 + 500},
      {"2026-11-21T00:30:00+01:00", 1'795'217'400'000},  // 2026-11-20T23:30:00Z
      // Lower case separators.
      {"2026-11-21t19:37:38z", k20261121T193738},
      {"2026-11-21t19:37:38.250z", k20261121T193738 + 250},
      // Calendar corners.
      {"1970-01-01T00:00:00Z", 0},
      {"1969-12-31T23:59:59.999Z", -1},
      {"2024-02-29T12:00:00Z", 1'709'208'000'000},
      {"2000-02-29T00:00:00Z", 951'782'400'000},
      {"0000-01-01T00:00:00Z", -62'167'219'200'000},
      {"9999-12-31T23:59:59.999Z", 253'402'300'799'999},
  };
  for (const Case& c : cases) {
    Result<TimePoint> got = ParseRfc3339(c.text);
    ASSERT_TRUE(got.ok()) << c.text << ": " << got.status().ToString();
    EXPECT_EQ(got->time_since_epoch().count(), c.want_ms) << c.text;
  }
}

struct ErrorCase {
  std::string text;
  std::string message;  // a fragment of the message
};

TEST(ParseRfc3339Test, RejectsMalformedText) {
  const std::vector<ErrorCase> cases = {
      {"", "expected a 4-digit year and '-'"},
      {"26-11-21T19:37:38Z", "expected a 4-digit year and '-'"},
      {"+2026-11-21T19:37:38Z", "expected a 4-digit year and '-'"},
      {"yesterday", "expected a 4-digit year and '-'"},
      {"2026-1-21T19:37:38Z", "expected a 2-digit month and '-'"},
      {"2026-11-1T19:37:38Z", "expected a 2-digit day"},
      {"2026-11-21", "expected 'T' after the date"},
      {"2026-11-21 19:37:38Z", "expected 'T' after the date"},
      {"2026-11-21T9:37:38Z", "expected a 2-digit hour and ':'"},
      {"2026-11-21T19:37Z", "expected a 2-digit minute and ':'"},
      {"2026-11-21T19:37:3Z", "expected 2-digit seconds"},
      {"2026-11-21T19:37:38", "expected 'Z' or a time zone offset after the time"},
      {"2026-11-21T19:37:38,5Z", "expected 'Z' or a time zone offset after the time"},
      {"2026-11-21T19:37:38 Z", "expected 'Z' or a time zone offset after the time"},
      {"2026-11-21T19:37:38.Z", "expected digits after '.'"},
      {"2026-11-21T19:37:38+0200", "expected a time zone offset as +HH:MM or -HH:MM"},
      {"2026-11-21T19:37:38+02", "expected a time zone offset as +HH:MM or -HH:MM"},
      {"2026-11-21T19:37:38+2:00", "expected a time zone offset as +HH:MM or -HH:MM"},
      {"2026-11-21T19:37:38+24:00", "time zone offset hour out of range"},
      {"2026-11-21T19:37:38+02:60", "time zone offset minute out of range"},
      {"2026-11-21T19:37:38ZZ", "unexpected \"Z\" after the time"},
      {"2026-11-21T19:37:38Z ", "unexpected \" \" after the time"},
      {"2026-11-21T19:37:38+02:00Z", "unexpected \"Z\" after the time"},
      {"2026-13-01T00:00:00Z", "month out of range"},
      {"2026-00-01T00:00:00Z", "month out of range"},
      {"2026-01-00T00:00:00Z", "day out of range"},
      {"2026-01-32T00:00:00Z", "day out of range"},
      {"2026-02-29T00:00:00Z", "day out of range"},
      {"2100-02-29T00:00:00Z", "day out of range"},
      {"2026-04-31T00:00:00Z", "day out of range"},
      {"2026-11-21T24:00:00Z", "hour out of range"},
      {"2026-11-21T23:60:00Z", "minute out of range"},
      {"2026-12-31T23:59:60Z", "second out of range"},
  };
  for (const ErrorCase& c : cases) {
    Result<TimePoint> got = ParseRfc3339(c.text);
    ASSERT_FALSE(got.ok()) << c.text;
    EXPECT_EQ(got.status().code(), 0);
    EXPECT_NE(got.status().message().find(c.message), std::string::npos)
        << c.text << " -> " << got.status().message();
    EXPECT_EQ(got.status().message().rfind("invalid RFC 3339 time \"" + c.text + "\": ", 0), 0u)
        << got.status().message();
  }
}

TEST(ParseRfc3339Test, MalformedMessageShowsTheLayout) {
  Result<TimePoint> got = ParseRfc3339("2026-11-21");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(),
            "invalid RFC 3339 time \"2026-11-21\": expected 'T' after the date (layout "
            "YYYY-MM-DDTHH:MM:SSZ, e.g. 2026-11-21T19:37:38Z or 2026-11-21T21:37:38.5+02:00)");
}

struct FormatCase {
  int64_t ms;
  std::string seconds;
  std::string micro;
};

TEST(FormatRfc3339Test, WritesUtcLikeMetav1) {
  const std::vector<FormatCase> cases = {
      {k20261121T193738, "2026-11-21T19:37:38Z", "2026-11-21T19:37:38.000000Z"},
      {k20261121T193738 + 123, "2026-11-21T19:37:38Z", "2026-11-21T19:37:38.123000Z"},
      {k20261121T193738 + 999, "2026-11-21T19:37:38Z", "2026-11-21T19:37:38.999000Z"},
      {0, "1970-01-01T00:00:00Z", "1970-01-01T00:00:00.000000Z"},
      {-1, "1969-12-31T23:59:59Z", "1969-12-31T23:59:59.999000Z"},
      {1'700'000'000'000, "2023-11-14T22:13:20Z", "2023-11-14T22:13:20.000000Z"},
      {1'709'208'000'000, "2024-02-29T12:00:00Z", "2024-02-29T12:00:00.000000Z"},
      {-62'167'219'200'000, "0000-01-01T00:00:00Z", "0000-01-01T00:00:00.000000Z"},
      {253'402'300'799'999, "9999-12-31T23:59:59Z", "9999-12-31T23:59:59.999000Z"},
  };
  for (const FormatCase& c : cases) {
    EXPECT_EQ(FormatRfc3339(At(c.ms)), c.seconds) << c.ms;
    EXPECT_EQ(FormatRfc3339Micro(At(c.ms)), c.micro) << c.ms;
  }
}

TEST(FormatRfc3339Test, RoundTripsThroughTheParser) {
  // Steps that are not a whole number of days or seconds, across year 0000 to 9999.
  const int64_t first = -62'167'219'200'000;
  const int64_t last = 253'402'300'799'999;
  for (int64_t ms = first; ms <= last; ms += 9'876'543'210'987 / 1000) {
    const TimePoint t = At(ms);
    Result<TimePoint> micro = ParseRfc3339(FormatRfc3339Micro(t));
    ASSERT_TRUE(micro.ok()) << micro.status().ToString();
    EXPECT_EQ(*micro, t) << FormatRfc3339Micro(t);
    Result<TimePoint> whole = ParseRfc3339(FormatRfc3339(t));
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    EXPECT_EQ(*whole, std::chrono::floor<std::chrono::seconds>(t)) << FormatRfc3339(t);
  }
}

TEST(TimefmtTest, IgnoresTheProcessTimeZone) {
  const char* old = std::getenv("TZ");
  const std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  for (const char* tz : {"America/New_York", "Asia/Kolkata", "UTC"}) {
    setenv("TZ", tz, /*overwrite=*/1);
    tzset();
    EXPECT_EQ(FormatRfc3339(At(k20261121T193738)), "2026-11-21T19:37:38Z") << tz;
    Result<TimePoint> got = ParseRfc3339("2026-11-21T19:37:38Z");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(got->time_since_epoch().count(), k20261121T193738) << tz;
  }
  if (saved) {
    setenv("TZ", saved->c_str(), 1);
  } else {
    unsetenv("TZ");
  }
  tzset();
}

}  // namespace
}  // namespace berth::k8s
