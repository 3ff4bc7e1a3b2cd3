#include "pdlaunch/process/console_echo.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace pdlaunch {
namespace {

TEST(LineAssemblerTest, HoldsPartialLineUntilNewline) {
  LineAssembler a;
  EXPECT_EQ(a.Feed("hel"), "");
  EXPECT_EQ(a.pending(), 3u);
  EXPECT_EQ(a.Feed("lo\nwor"), "hello\n");
  EXPECT_EQ(a.Feed("ld\n"), "world\n");
  EXPECT_EQ(a.pending(), 0u);
}

TEST(LineAssemblerTest, ReturnsAllCompleteLinesOfAChunk) {
  LineAssembler a;
  EXPECT_EQ(a.Feed("a\nb\nc"), "a\nb\n");
  EXPECT_EQ(a.Finish(), "c");
  EXPECT_EQ(a.Finish(), "");
}

TEST(LineAssemblerTest, ByteByByteNeverSplitsLines) {
  LineAssembler a;
  const std::string input = "line one\nline two\n\nlast";
  std::string out;
  for (char c : input) {
    const std::string got = a.Feed(std::string(1, c));
    if (!got.empty()) {
      EXPECT_EQ(got.back(), '\n');
    }
    out += got;
  }
  out += a.Finish();
  EXPECT_EQ(out, input);
}

TEST(WriteAllTest, WritesEverythingThroughAPipe) {
  ::signal(SIGPIPE, SIG_IGN);  // As the launcher's Main does.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  EXPECT_TRUE(WriteAll(fds[1], "abc\n"));
  char buf[8] = {};
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), 4);
  EXPECT_STREQ(buf, "abc\n");
  ::close(fds[0]);
  EXPECT_FALSE(WriteAll(fds[1], "x"));  // EPIPE, reported instead of killing us (SIGPIPE ignored).
  ::close(fds[1]);
}

}  // namespace
}  // namespace pdlaunch
