#include "pdlaunch/base/seconds.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

TEST(ParseSecondsTest, DecimalNumbersAreSeconds) {
  EXPECT_EQ(ParseSeconds("10"), 10.0);
  EXPECT_EQ(ParseSeconds("0"), 0.0);
  EXPECT_EQ(ParseSeconds("0.5"), 0.5);
  EXPECT_EQ(ParseSeconds(".5"), 0.5);
  EXPECT_EQ(ParseSeconds("5."), 5.0);
  EXPECT_EQ(ParseSeconds("1e3"), 1000.0);
  EXPECT_EQ(ParseSeconds("2.5E-1"), 0.25);
  EXPECT_EQ(ParseSeconds("1e+2"), 100.0);
  EXPECT_EQ(ParseSeconds("007"), 7.0);
  EXPECT_EQ(ParseSeconds("-0"), 0.0);  // As std::from_chars: negative zero is not below zero.
}

TEST(ParseSecondsTest, AnythingElseIsRefused) {
  for (const char* text :
       {"",         " 1", "1 ", "+1", "-1", "-0.5", "0x10", "0X1p3", "inf",   "-inf", "nan",
        "infinity", "1s", "1e", "e3", ".",  "-",    "1-2",  "--1",   "1e999", "1,5",  "1_000"}) {
    EXPECT_EQ(ParseSeconds(text), std::nullopt) << "'" << text << "'";
  }
  // The text is a view: what follows it is not read.
  EXPECT_EQ(ParseSeconds(std::string_view("12x", 2)), 12.0);
}

}  // namespace
}  // namespace pdlaunch
