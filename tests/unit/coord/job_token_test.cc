#include "pdlaunch/coord/job_token.h"

#include <gtest/gtest.h>

#include <string>

#include "pdlaunch/base/errors.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ErrorOf;

TEST(JobTokenTest, AbsentOrEmptyIsNoToken) {
  EXPECT_FALSE(JobToken::FromEnvironment(nullptr));
  EXPECT_FALSE(JobToken::FromEnvironment(""));
  EXPECT_TRUE(JobToken::FromEnvironment("0123456789abcdef"));
}

TEST(JobTokenTest, AMalformedTokenIsAUsageErrorThatNeverShowsIt) {
  const std::string short_one = ErrorOf<UsageError>([] { JobToken::Parse("hunter2"); });
  EXPECT_EQ(short_one, "PDLAUNCH_JOB_TOKEN: the token is 7 characters long; it takes 16 to 1024");
  const std::string spaced =
      ErrorOf<UsageError>([] { JobToken::Parse("correct horse battery staple"); });
  EXPECT_EQ(spaced.substr(0, 59), "PDLAUNCH_JOB_TOKEN: the token holds a space, a control char");
  EXPECT_EQ(spaced.find("horse"), std::string::npos);
  EXPECT_THROW(JobToken::Parse(std::string(1025, 'x')), UsageError);
  EXPECT_THROW(JobToken::Parse("0123456789abcdef\r\nX: y"), UsageError);
}

TEST(JobTokenTest, MatchesOnlyTheTokenItself) {
  const JobToken token = JobToken::Parse("0123456789abcdef-secret");
  EXPECT_TRUE(token.Matches("0123456789abcdef-secret"));
  EXPECT_FALSE(token.Matches("0123456789abcdef-secreT"));
  EXPECT_FALSE(token.Matches("0123456789abcdef-secret "));
  EXPECT_FALSE(token.Matches(""));
  EXPECT_EQ(token.Authorization(), "Bearer 0123456789abcdef-secret");
}

TEST(JobTokenTest, TheMacIsHmacSha256) {
  const JobToken token = JobToken::Parse("0123456789abcdef-secret");
  // Python: hmac.new(b"0123456789abcdef-secret", b"The quick ... dog", hashlib.sha256).
  const std::string mac = token.Mac("The quick brown fox jumps over the lazy dog");
  EXPECT_EQ(mac, "2243d28ece95e3def6e54e1387962510f4a2e59316194f369f7547696ccb12a8");
  EXPECT_TRUE(token.Verify("The quick brown fox jumps over the lazy dog", mac));
  EXPECT_FALSE(token.Verify("The quick brown fox jumps over the lazy cat", mac));
  EXPECT_FALSE(token.Verify("The quick brown fox jumps over the lazy dog", mac.substr(1)));
  EXPECT_NE(JobToken::Parse("another-token-of-16+").Mac("x"), token.Mac("x"));
}

}  // namespace
}  // namespace pdlaunch
