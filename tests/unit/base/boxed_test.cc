// base::Boxed: a value kept out of line, copied and compared by value (scheduling::WaitReason's
// budget relies on both: reasons are copied into results and compared with ==).
#include "base/boxed.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace berth::base {
namespace {

TEST(Boxed, CopiesAndComparesByValueAndEmptyBoxesAreEqual) {
  Boxed<std::string> a, b;
  EXPECT_FALSE(a);
  EXPECT_EQ(a.get(), nullptr);
  EXPECT_TRUE(a == b);  // both empty
  a = std::string("spent");
  EXPECT_TRUE(a);
  EXPECT_FALSE(a == b);
  b = std::string("spent");
  EXPECT_TRUE(a == b);           // equal values in two boxes
  EXPECT_NE(a.get(), b.get());   // not the same allocation
  Boxed<std::string> c = a;      // a copy is its own value
  EXPECT_TRUE(c == a);
  EXPECT_NE(c.get(), a.get());
  c = std::string("other");
  EXPECT_EQ(*a, "spent");
  EXPECT_FALSE(c == a);
  Boxed<std::string> d = std::move(c);
  EXPECT_EQ(*d, "other");
  d = b;  // copy-assignment replaces the value
  EXPECT_EQ(*d, "spent");
  d = Boxed<std::string>();
  EXPECT_FALSE(d);
  EXPECT_EQ(sizeof(Boxed<std::string>), sizeof(void*));
}

TEST(Boxed, ValueOrGivesTheValueOrTheFallback) {
  Boxed<std::string> a;
  EXPECT_FALSE(a.has_value());
  EXPECT_EQ(a.value_or("none"), "none");
  a = std::string("set");
  EXPECT_TRUE(a.has_value());
  EXPECT_EQ(a.value_or("none"), "set");
  EXPECT_EQ(*a, "set");  // value_or copies: the box keeps its value
}

}  // namespace
}  // namespace berth::base
