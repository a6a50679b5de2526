// Boxed<T> (core/boxed.h): an optional on the heap that copies and compares as a value.
#include "core/boxed.h"

#include <gtest/gtest.h>

#include <string>

namespace baton {
namespace {

TEST(Boxed, CopiesAreValuesOfTheirOwnAndCompareByValue) {
  Boxed<std::string> empty;
  EXPECT_FALSE(empty);
  EXPECT_EQ(empty.value_or("none"), "none");
  Boxed<std::string> a = std::string("loss");
  Boxed<std::string> b = a;
  EXPECT_TRUE(b.has_value());
  EXPECT_EQ(a, b);
  EXPECT_NE(&*a, &*b);  // a copy, not a shared value
  *b = "acc";
  EXPECT_EQ(*a, "loss");
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == empty);
  EXPECT_TRUE(empty == Boxed<std::string>());
  b = a;
  EXPECT_EQ(*b, "loss");
  Boxed<std::string> moved = std::move(b);
  EXPECT_EQ(*moved, "loss");
  moved.reset();
  EXPECT_FALSE(moved.has_value());
  EXPECT_EQ(sizeof(Boxed<std::string>), sizeof(void*));
}

}  // namespace
}  // namespace baton
