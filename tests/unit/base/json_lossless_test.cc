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

}  // namespace
}  // namespace pdlaunch
