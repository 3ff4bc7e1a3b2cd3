// base/small_file.h against real descriptors.
#include "base/small_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace pdlaunch {
namespace {

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
