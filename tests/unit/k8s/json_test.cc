#include "k8s/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace berth::k8s::json {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

Document MustParse(const std::string& text) {
  auto d = Parse(text);
  EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  return d.ok() ? std::move(d).value() : Document();
}

TEST(JsonParseTest, ParsesValidDocuments) {
  const std::vector<std::string> cases = {
      "{}", "[]", "null", "42", "\"s\"", R"({"a":{"b":[1,2,{"c":true}]}})", "  {\"a\" : 1 }\n",
  };
  for (const std::string& text : cases) {
    auto d = Parse(text);
    EXPECT_TRUE(d.ok()) << text << ": " << d.status().message();
  }
}

TEST(JsonParseTest, SyntaxErrorsNameTheOffset) {
  struct Case {
    std::string text;
    std::string offset;
  };
  const std::vector<Case> cases = {
      {"", "0"},
      {"{", "1"},
      {R"({"a":1,})", "7"},
      {R"({"a" 1})", "5"},
      {"[1,2", "4"},
      {"{} trailing", "3"},
      {"<html>502 Bad Gateway</html>", "0"},
  };
  for (const Case& c : cases) {
    auto d = Parse(c.text);
    ASSERT_FALSE(d.ok()) << "\"" << c.text << "\" parsed";
    EXPECT_THAT(d.status().message(), StartsWith("invalid JSON at offset " + c.offset + ": ")) << c.text;
    EXPECT_EQ(d.status().code(), 0);
  }
}

TEST(JsonParseTest, ParsesOnlyTheGivenLength) {
  // A string_view into a larger buffer: the bytes after it are not part of the document.
  std::string buffer = R"({"a":1}garbage)";
  auto d = Parse(std::string_view(buffer).substr(0, 7));
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(GetInt(*d, "a"), 1);
}

TEST(JsonParseInSituTest, ParsesAndReportsErrors) {
  std::string good = R"({"name":"n1","n":3})";
  Document d;
  ASSERT_TRUE(ParseInSitu(good, d).ok());
  EXPECT_EQ(GetString(d, "name"), "n1");
  EXPECT_EQ(GetInt(d, "n"), 3);

  std::string bad = R"({"name":)";
  Document e;
  Status s = ParseInSitu(bad, e);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), StartsWith("invalid JSON at offset "));
}

// Regression: a megabyte of `[` (sent to the dashboard's priority endpoint) overflowed the
// stack in RapidJSON's recursive parser and killed the controller.
TEST(JsonParseTest, RefusesDeepNestingWithoutExhaustingTheStack) {
  for (const std::string open : {"[", "{\"a\":"}) {
    std::string deep;
    for (int i = 0; i < 1 << 20; ++i) deep += open;
    auto d = Parse(deep);
    ASSERT_FALSE(d.ok()) << open;
    EXPECT_THAT(d.status().message(), HasSubstr("nested deeper than 128 levels")) << open;
    Document e;
    Status s = ParseInSitu(deep, e);
    ASSERT_FALSE(s.ok()) << open;
    EXPECT_THAT(s.message(), HasSubstr("nested deeper than 128 levels")) << open;
  }
}

TEST(JsonParseTest, AcceptsNestingUpToTheCapAndIgnoresBracketsInStrings) {
  std::string ok(kMaxDepth, '[');
  ok += std::string(kMaxDepth, ']');
  EXPECT_TRUE(Parse(ok).ok());
  std::string one_more(kMaxDepth + 1, '[');
  one_more += std::string(kMaxDepth + 1, ']');
  auto d = Parse(one_more);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), StartsWith("invalid JSON at offset 128: nested deeper"));
  // Brackets and escaped quotes inside strings are text, not nesting.
  std::string text = R"({"a":")" + std::string(1000, '[') + R"(\"[[["})";
  auto t = Parse(text);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(GetString(*t, "a").size(), 1004u);
}

TEST(JsonSerializeTest, RoundTripsCompactly) {
  const std::vector<std::string> cases = {
      "{}",
      "[]",
      R"({"a":1,"b":[true,false,null],"c":{"d":"e"}})",
      R"({"s":"quote\" backslash\\ newline\n"})",
      R"([-1,0,9223372036854775807,1.5])",
  };
  for (const std::string& text : cases) {
    Document d = MustParse(text);
    EXPECT_EQ(Serialize(d), text);
  }
  // Whitespace is dropped, member order kept.
  EXPECT_EQ(Serialize(MustParse("{ \"z\" : 1 ,\n \"a\" : [ 1 , 2 ] }")), R"({"z":1,"a":[1,2]})");
}

TEST(JsonFindTest, FollowsPathsOfKeys) {
  Document d = MustParse(R"({"metadata":{"name":"x","labels":{"app":"web"}},"spec":[1],"n":null})");
  // The serialized value at a path, or "<null>" when Find finds nothing.
  auto find = [&](std::initializer_list<std::string_view> p) -> std::string {
    const Value* v = Find(d, p);
    return v == nullptr ? "<null>" : Serialize(*v);
  };
  EXPECT_EQ(find({}), Serialize(d));  // an empty path is the value itself
  EXPECT_EQ(find({"metadata", "name"}), "\"x\"");
  EXPECT_EQ(find({"metadata", "labels", "app"}), "\"web\"");
  EXPECT_EQ(find({"metadata", "labels"}), R"({"app":"web"})");
  EXPECT_EQ(find({"n"}), "null");  // present but null is found
  EXPECT_EQ(find({"missing"}), "<null>");
  EXPECT_EQ(find({"metadata", "missing", "deeper"}), "<null>");
  EXPECT_EQ(find({"metadata", "name", "deeper"}), "<null>");  // a string is not an object
  EXPECT_EQ(find({"spec", "0"}), "<null>");                   // arrays are not indexed by key
  EXPECT_EQ(find({"n", "x"}), "<null>");

  Document arr = MustParse("[1]");
  EXPECT_EQ(Find(arr, {"a"}), nullptr);
}

TEST(JsonGetTest, GetStringReadsStringsAndDefaultsOtherwise) {
  Document d = MustParse(R"({"s":"v","empty":"","n":5,"b":true,"null":null,"o":{},"nul":"a\u0000b"})");
  struct Case {
    std::string key, def, want;
  };
  const std::vector<Case> cases = {
      {"s", "d", "v"},     {"empty", "d", ""},  {"missing", "d", "d"}, {"missing", "", ""},
      {"n", "d", "d"},     {"b", "d", "d"},     {"null", "d", "d"},    {"o", "d", "d"},
      {"nul", "", std::string("a\0b", 3)},  // embedded NUL kept (length, not C string)
  };
  for (const Case& c : cases) EXPECT_EQ(GetString(d, c.key, c.def), c.want) << c.key;
  // Not an object at all.
  Document arr = MustParse(R"(["s"])");
  EXPECT_EQ(GetString(arr, "s", "def"), "def");
}

TEST(JsonGetTest, GetStringOfAPointer) {
  Document d = MustParse(R"({"s":"v","n":1})");
  EXPECT_EQ(GetString(Find(d, {"s"})), "v");
  EXPECT_EQ(GetString(Find(d, {"n"}), "def"), "def");
  EXPECT_EQ(GetString(Find(d, {"missing"}), "def"), "def");
  EXPECT_EQ(GetString(static_cast<const Value*>(nullptr)), "");
}

TEST(JsonGetTest, GetIntReadsIntegersAndTruncatesDoubles) {
  Document d = MustParse(
      R"({"i":42,"neg":-7,"big":9223372036854775807,"small":-9223372036854775808,)"
      R"("d":2.9,"nd":-2.9,"s":"42","b":true,"null":null,"u":18446744073709551615,)"
      R"("huge":333333333333333333333333333,"nhuge":-1e300,"two63":9223372036854775808.0,)"
      R"("mtwo63":-9223372036854775808.0})");
  struct Case {
    std::string key;
    int64_t def, want;
  };
  const std::vector<Case> cases = {
      {"i", 0, 42},
      {"neg", 0, -7},
      {"big", 0, std::numeric_limits<int64_t>::max()},
      {"small", 0, std::numeric_limits<int64_t>::min()},
      {"d", 0, 2},
      {"nd", 0, -2},
      {"s", -1, -1},  // a string is not a number
      {"b", -1, -1},
      {"null", -1, -1},
      {"u", -1, -1},  // does not fit int64
      {"huge", -1, -1},  // a double outside int64 does not either (was undefined behaviour)
      {"nhuge", -1, -1},
      {"two63", -1, -1},
      {"mtwo63", 0, std::numeric_limits<int64_t>::min()},
      {"missing", 99, 99},
  };
  for (const Case& c : cases) EXPECT_EQ(GetInt(d, c.key, c.def), c.want) << c.key;
  EXPECT_EQ(GetInt(MustParse("[1]"), "i", 5), 5);
}

TEST(JsonGetTest, GetBoolReadsBooleansOnly) {
  Document d = MustParse(R"({"t":true,"f":false,"s":"true","n":1,"null":null})");
  struct Case {
    std::string key;
    bool def, want;
  };
  const std::vector<Case> cases = {
      {"t", false, true}, {"f", true, false},     {"s", false, false},      {"n", false, false},
      {"null", true, true}, {"missing", true, true}, {"missing", false, false},
  };
  for (const Case& c : cases) EXPECT_EQ(GetBool(d, c.key, c.def), c.want) << c.key << " def " << c.def;
  EXPECT_TRUE(GetBool(MustParse("1"), "t", true));
}

TEST(JsonQuoteTest, EscapesAsAJsonStringLiteral) {
  struct Case {
    std::string in, want;
  };
  const std::vector<Case> cases = {
      {"", R"("")"},
      {"plain", R"("plain")"},
      {"a\"b", R"("a\"b")"},
      {"back\\slash", R"("back\\slash")"},
      {"line\nbreak\ttab\rcr", R"("line\nbreak\ttab\rcr")"},
      {std::string("nul\0byte", 8), R"("nul\u0000byte")"},
      {"\x01\x1f", R"("\u0001\u001F")"},
      {"caf\xc3\xa9 \xe2\x9c\x93", "\"caf\xc3\xa9 \xe2\x9c\x93\""},  // UTF-8 passes through
      {"a/b", R"("a/b")"},
  };
  for (const Case& c : cases) {
    std::string quoted = Quote(c.in);
    EXPECT_EQ(quoted, c.want);
    // And it parses back to the same string.
    Document d = MustParse(quoted);
    ASSERT_TRUE(d.IsString()) << quoted;
    EXPECT_EQ(std::string(d.GetString(), d.GetStringLength()), c.in);
  }
}

TEST(JsonQuoteTest, QuotedValuesBuildValidDocuments) {
  // The codecs splice Quote() into hand-built JSON; a hostile name must not break out of it.
  std::string name = R"(x","injected":"yes)";
  std::string doc = R"({"name":)" + Quote(name) + "}";
  Document d = MustParse(doc);
  EXPECT_EQ(GetString(d, "name"), name);
  EXPECT_EQ(Find(d, {"injected"}), nullptr);
}

// Issue 29: list pages and watch events are parsed without a cap; each object is then measured.
TEST(JsonDeeperThanTest, MeasuresNestingIteratively) {
  auto nest = [](int n) { return std::string(n, '[') + std::string(n, ']'); };
  for (int n : {1, 2, kMaxDepth - 1, kMaxDepth}) {
    auto d = Parse(nest(n));
    ASSERT_TRUE(d.ok());
    EXPECT_FALSE(DeeperThan(*d)) << n;
    EXPECT_TRUE(DeeperThan(*d, n - 1)) << n;
  }
  auto scalar = Parse("7");
  ASSERT_TRUE(scalar.ok());
  EXPECT_FALSE(DeeperThan(*scalar, 0));
  // A million levels: parsed without a cap, measured without recursion.
  const int big = 1 << 20;
  EXPECT_FALSE(Parse(nest(big)).ok()) << "the default cap refuses it";
  auto deep = Parse(nest(big), kNoDepthCap);
  ASSERT_TRUE(deep.ok()) << deep.status().message();
  EXPECT_TRUE(DeeperThan(*deep));
  EXPECT_FALSE(DeeperThan(*deep, big));
  // Objects count like arrays; the deepest branch decides.
  auto mixed = Parse(R"({"a":[1,{"b":{"c":[[]]}}],"d":{}})");
  ASSERT_TRUE(mixed.ok());
  EXPECT_FALSE(DeeperThan(*mixed, 6));
  EXPECT_TRUE(DeeperThan(*mixed, 5));
}

}  // namespace
}  // namespace berth::k8s::json
