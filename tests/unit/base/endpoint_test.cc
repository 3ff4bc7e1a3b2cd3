#include "pdlaunch/base/endpoint.h"

#include <gtest/gtest.h>

#include <climits>

#include "pdlaunch/base/errors.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

TEST(EndpointTest, ParseEndpointSplitsHostAndPort) {
  EXPECT_EQ(ParseEndpoint("10.0.0.1:6070"), (Endpoint{"10.0.0.1", 6070}));
  EXPECT_EQ(ParseEndpoint("node-a:1"), (Endpoint{"node-a", 1}));
}

TEST(EndpointTest, ToStringJoinsHostAndPort) {
  EXPECT_EQ((Endpoint{"127.0.0.1", 65535}).ToString(), "127.0.0.1:65535");
}

TEST(EndpointTest, ParseEndpointRejectsMissingColon) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseEndpoint("10.0.0.1"); }),
            "'10.0.0.1' is not an endpoint (expected host:port)");
}

TEST(EndpointTest, ParseEndpointRejectsMissingHostOrPort) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseEndpoint(":6070"); }),
            "':6070' is not an endpoint (expected host:port)");
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseEndpoint("host:"); }),
            "'host:' is not an endpoint (expected host:port)");
}

TEST(EndpointTest, ParseEndpointRejectsPortOutOfRange) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseEndpoint("host:0"); }),
            "port of endpoint 'host:0': '0' must be between 1 and 65535");
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseEndpoint("host:65536"); }),
            "port of endpoint 'host:65536': '65536' must be between 1 and 65535");
}

TEST(EndpointTest, ParseEndpointRejectsNonNumericPort) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseEndpoint("host:80x"); }),
            "port of endpoint 'host:80x': '80x' is not an integer");
}

TEST(EndpointTest, JoinEndpointsUsesCommaByDefault) {
  EXPECT_EQ(JoinEndpoints({{"10.0.0.1", 6070}, {"10.0.0.2", 6071}}), "10.0.0.1:6070,10.0.0.2:6071");
}

TEST(EndpointTest, EndpointStringsKeepsTheOrder) {
  EXPECT_EQ(EndpointStrings({{"10.0.0.2", 6071}, {"10.0.0.1", 6070}}),
            (std::vector<std::string>{"10.0.0.2:6071", "10.0.0.1:6070"}));
  EXPECT_EQ(EndpointStrings({}), std::vector<std::string>{});
}

TEST(EndpointTest, JoinEndpointsUsesGivenSeparator) {
  EXPECT_EQ(JoinEndpoints({{"a", 1}, {"b", 2}}, "\n"), "a:1\nb:2");
  EXPECT_EQ(JoinEndpoints({}), "");
}

TEST(EndpointTest, SplitAndStripStripsEachItem) {
  EXPECT_EQ(SplitAndStrip(" 10.0.0.1 ,\t10.0.0.2\n", ','),
            (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
}

TEST(EndpointTest, SplitAndStripGivesEmptyListForEmptyText) {
  EXPECT_TRUE(SplitAndStrip("", ',').empty());
}

TEST(EndpointTest, SplitAndStripKeepsEmptyItems) {
  EXPECT_EQ(SplitAndStrip("0,,1,", ','), (std::vector<std::string>{"0", "", "1", ""}));
  EXPECT_EQ(SplitAndStrip(" ", ','), (std::vector<std::string>{""}));
}

TEST(EndpointTest, ParseIntAcceptsValuesWithinBounds) {
  EXPECT_EQ(ParseInt("1", "--nproc_per_node", 1, 64), 1);
  EXPECT_EQ(ParseInt("64", "--nproc_per_node", 1, 64), 64);
  EXPECT_EQ(ParseInt("-3", "offset", -5, 5), -3);
}

TEST(EndpointTest, ParseIntRejectsTrailingJunk) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt("12ab", "--nproc_per_node", 1, 64); }),
            "--nproc_per_node: '12ab' is not an integer");
}

TEST(EndpointTest, ParseIntRejectsSignsSpacesAndEmptyText) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt("+3", "n", 0, 9); }), "n: '+3' is not an integer");
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt(" 3", "n", 0, 9); }), "n: ' 3' is not an integer");
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt("", "n", 0, 9); }), "n: '' is not an integer");
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt("0x10", "n", 0, 99); }),
            "n: '0x10' is not an integer");
}

TEST(EndpointTest, ParseIntRejectsValuesOutOfRange) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt("0", "FLAGS_START_PORT", 1, 65535); }),
            "FLAGS_START_PORT: '0' must be between 1 and 65535");
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt("0", "--nproc_per_node", 1, INT_MAX); }),
            "--nproc_per_node: '0' must be at least 1");
}

TEST(EndpointTest, ParseIntRejectsOverflow) {
  EXPECT_EQ(ErrorOf<UsageError>([] { ParseInt("99999999999", "n", 1, INT_MAX); }),
            "n: '99999999999' is out of range");
}

TEST(TextTest, AsciiCaseChangesLettersOnly) {
  EXPECT_EQ(AsciiLower("Content-Type: GPU_0 \xc3\x89"), "content-type: gpu_0 \xc3\x89");
  EXPECT_EQ(AsciiUpper("log_dir warn-9 \xc3\xa9"), "LOG_DIR WARN-9 \xc3\xa9");
  EXPECT_EQ(AsciiUpper(""), "");
}

}  // namespace
}  // namespace pdlaunch
