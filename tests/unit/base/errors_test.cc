#include "pdlaunch/base/errors.h"

#include <gtest/gtest.h>

#include <string>

namespace pdlaunch {
namespace {

TEST(ErrorsTest, OneLineEscapesWhatWouldBreakTheLine) {
  EXPECT_EQ(OneLine("training program not found: 'a b.py'"),
            "training program not found: 'a b.py'");
  EXPECT_EQ(OneLine("not found: '\n'"), "not found: '\\n'");
  EXPECT_EQ(OneLine("a\rb\tc\x1b[31md\x7f"), "a\\rb\\tc\\x1b[31md\\x7f");
  EXPECT_EQ(OneLine("C:\\dir é"), "C:\\dir é");  // Backslashes and UTF-8 stay as they are.
  EXPECT_EQ(OneLine(std::string("nul\0x", 5)), "nul\\x00x");
}

}  // namespace
}  // namespace pdlaunch
