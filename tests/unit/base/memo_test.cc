#include "base/memo.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace berth::base {
namespace {

TEST(Memo, MakesTheValueOncePerInputs) {
  Memo<int, std::string> memo("greeting");
  int made = 0;
  auto make = [&made](const char* v) {
    return [&made, v] {
      ++made;
      return std::string(v);
    };
  };
  EXPECT_FALSE(memo.Holds(1));
  EXPECT_EQ(memo.Get(1, make("hello")), "hello");
  const int first = made;
  EXPECT_EQ(first, 1);
  EXPECT_TRUE(memo.Holds(1));
  EXPECT_EQ(memo.Get(1, make("hello")), "hello");
  // Made again only to check it where checks are on; the kept value is what a read returns.
  EXPECT_EQ(made, MemoChecksOn() ? 2 : 1);
  EXPECT_EQ(memo.Get(2, make("bye")), "bye") << "other inputs: made anew";
  EXPECT_FALSE(memo.Holds(1));
  memo.Reset();
  EXPECT_FALSE(memo.Holds(2));
  EXPECT_EQ(memo.Peek(), nullptr);
}

TEST(Memo, SharedPointersCompareWhatTheyPointTo) {
  SetMemoChecks(true);
  Memo<int, std::shared_ptr<const std::string>, DerefEqual> memo("a record");
  auto kept = memo.Get(7, [] { return std::make_shared<const std::string>("x"); });
  // A new object with the same content: a current memo, the kept object is returned.
  EXPECT_EQ(memo.Get(7, [] { return std::make_shared<const std::string>("x"); }), kept);
  SetMemoChecks(false);
}

TEST(MemoDeathTest, AStaleMemoIsCaughtWhenChecksAreOn) {
  SetMemoChecks(true);
  ASSERT_TRUE(MemoChecksOn());
  // The value depends on `source`, which its inputs leave out: a stale memo.
  std::string source = "v1";
  Memo<int, std::string> memo("the derived value");
  EXPECT_EQ(memo.Get(1, [&] { return source; }), "v1");
  source = "v2";
  EXPECT_DEATH((void)memo.Get(1, [&] { return source; }), "stale memo: the derived value");
  SetMemoChecks(false);
}

}  // namespace
}  // namespace berth::base
