// Exact bytes in the report and the dry run (issue #29 item 6; docs/report.md, "Exact bytes").
#include "pdlaunch/base/json_lossless.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace pdlaunch {
namespace {

using Json = nlohmann::ordered_json;

TEST(JsonLosslessTest, ValidTextIsWhatNlohmannWrites) {
  const Json json = {{"a", "plain"}, {"b", "caf\xc3\xa9 \xf0\x9f\x99\x82"}, {"n", 3}};
  EXPECT_EQ(DumpLossless(json, 2), json.dump(2, ' ', false));
}

TEST(JsonLosslessTest, BytesThatAreNotUtf8AreSurrogateEscapes) {
  // Latin-1 "é", a stray continuation byte, a sequence cut short, an encoded surrogate.
  const Json json = {{"argv", {"caf\xe9", "\x80x", "\xe2\x82", "\xed\xa0\x80"}}};
  EXPECT_EQ(DumpLossless(json, -1),
            R"({"argv":["caf\udce9","\udc80x","\udce2\udc82","\udced\udca0\udc80"]})");
}

TEST(JsonLosslessTest, KeysToo) {
  EXPECT_EQ(DumpLossless(Json{{"K\xff", "v"}}, -1), R"({"K\udcff":"v"})");
}

TEST(JsonLosslessTest, TheMarkItUsesStaysItselfInTheText) {
  // U+10FFFE, the code point the escapes travel as, written by a process: kept, not mistaken.
  const std::string mark = "\xf4\x8f\xbf\xbe";
  EXPECT_EQ(DumpLossless(Json{{"m", mark + "\xff" + mark + mark}}, -1),
            "{\"m\":\"" + mark + "\\udcff" + mark + mark + "\"}");
}

// Reads DumpLossless's output back to bytes, as Python's surrogateescape does: each \udcXX is
// the byte XX. (Through U+F7XX, which no input of one or two bytes can hold.)
std::string ReadBack(const std::string& dumped) {
  std::string text;
  for (size_t i = 0; i < dumped.size(); ++i) {
    if (dumped.compare(i, 4, "\\udc") == 0) {
      text += "\\uf7";
      i += 3;
    } else {
      text += dumped[i];
    }
  }
  const std::string value = Json::parse(text)["s"].get<std::string>();
  std::string bytes;
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == 0xef && i + 2 < value.size() &&
        (static_cast<unsigned char>(value[i + 1]) & 0xfc) ==
            0x9c) {  // U+F700..U+F7FF: EF 9C..9F xx.
      const unsigned cp = ((c & 0x0f) << 12) | ((value[i + 1] & 0x3f) << 6) | (value[i + 2] & 0x3f);
      bytes += static_cast<char>(cp - 0xf700);
      i += 2;
    } else {
      bytes += value[i];
    }
  }
  return bytes;
}

TEST(JsonLosslessTest, EveryByteAloneAndInPairsRoundTrips) {
  // Issue #42 item 11: 0xFE came back as the UTF-8 of U+10FFFE (the mark) before.
  EXPECT_EQ(DumpLossless(Json{{"s", "acc\xfezz"}}, -1), R"({"s":"acc\udcfezz"})");
  for (int a = 0; a < 256; ++a) {
    const std::string one(1, static_cast<char>(a));
    ASSERT_EQ(ReadBack(DumpLossless(Json{{"s", one}}, -1)), one) << a;
    for (int b = 0; b < 256; ++b) {
      const std::string two = one + static_cast<char>(b);
      ASSERT_EQ(ReadBack(DumpLossless(Json{{"s", two}}, -1)), two) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace pdlaunch
