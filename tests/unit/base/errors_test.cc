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

// Every byte class: C0 and DEL escaped, printable ASCII kept, C1 controls (two bytes C2 80..9F)
// escaped byte by byte, valid UTF-8 from U+00A0 on kept, each byte of invalid UTF-8 escaped.
TEST(ErrorsTest, OneLineEscapesEveryByteClassThatActsOnATerminal) {
  for (int c = 0; c < 0x20; ++c) {
    const std::string shown = OneLine(std::string(1, static_cast<char>(c)));
    EXPECT_EQ(shown.front(), '\\') << c;
  }
  EXPECT_EQ(OneLine("\x7f"), "\\x7f");
  EXPECT_EQ(OneLine(" ~az09"), " ~az09");
  EXPECT_EQ(OneLine("\xc2\x9b"
                    "2J"),
            "\\xc2\\x9b2J");  // CSI
  EXPECT_EQ(OneLine("\xc2\x9d"
                    "0;t\x07"),
            "\\xc2\\x9d0;t\\x07");  // OSC ... BEL
  EXPECT_EQ(OneLine("\xc2\x80"), "\\xc2\\x80");
  EXPECT_EQ(OneLine("\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
            "\xc2\xa0\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");  // NBSP, é, €, emoji kept
  EXPECT_EQ(OneLine("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(OneLine("\x80"), "\\x80");                             // a lone continuation byte
  EXPECT_EQ(OneLine("\xc3"), "\\xc3");                             // cut short
  EXPECT_EQ(OneLine("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(OneLine("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(OneLine("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
}

}  // namespace
}  // namespace pdlaunch
