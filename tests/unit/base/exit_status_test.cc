#include "pdlaunch/base/exit_status.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

namespace pdlaunch {
namespace {

TEST(ExitStatusTest, ShellCodeFollowsShellConvention) {
  for (int code = 0; code < 256; ++code) EXPECT_EQ(ExitStatus::Exited(code).ShellCode(), code);
  EXPECT_EQ(ExitStatus::Killed(SIGINT).ShellCode(), 130);
  EXPECT_EQ(ExitStatus::Killed(SIGKILL).ShellCode(), 137);
  EXPECT_EQ(ExitStatus::Killed(SIGSEGV).ShellCode(), 139);
  EXPECT_EQ(ExitStatus::Killed(SIGTERM).ShellCode(), 143);
}

TEST(ExitStatusTest, SignalOfShellCodeUndoesShellCode) {
  for (int signal = 1; signal <= 64; ++signal) {
    EXPECT_EQ(SignalOfShellCode(ExitStatus::Killed(signal).ShellCode()), signal);
  }
  EXPECT_EQ(SignalOfShellCode(0), std::nullopt);
  EXPECT_EQ(SignalOfShellCode(1), std::nullopt);
  EXPECT_EQ(SignalOfShellCode(128), std::nullopt);
  EXPECT_EQ(SignalOfShellCode(128 + 65), std::nullopt);
  EXPECT_EQ(SignalOfShellCode(255), std::nullopt);
}

TEST(ExitStatusTest, OnlyExitZeroIsSuccess) {
  EXPECT_TRUE(ExitStatus::Exited(0).success());
  EXPECT_FALSE(ExitStatus::Exited(1).success());
  EXPECT_FALSE(ExitStatus::Killed(SIGTERM).success());
}

TEST(ExitStatusTest, DecodesWaitStatus) {
  EXPECT_EQ(FromWaitStatus(3 << 8), ExitStatus::Exited(3));
  EXPECT_EQ(FromWaitStatus(SIGSEGV), ExitStatus::Killed(SIGSEGV));
  EXPECT_EQ(FromWaitStatus(SIGSEGV | 0x80), ExitStatus::Killed(SIGSEGV));  // Core dumped.
}

TEST(ExitStatusTest, DecodesSigInfo) {
  EXPECT_EQ(FromSigInfo(CLD_EXITED, 7), ExitStatus::Exited(7));
  EXPECT_EQ(FromSigInfo(CLD_KILLED, SIGTERM), ExitStatus::Killed(SIGTERM));
  EXPECT_EQ(FromSigInfo(CLD_DUMPED, SIGABRT), ExitStatus::Killed(SIGABRT));
}

TEST(ExitStatusTest, DescribesBothKinds) {
  EXPECT_EQ(ExitStatus::Exited(3).Describe(), "exit code 3");
  EXPECT_EQ(ExitStatus::Killed(SIGSEGV).Describe(), "signal 11 (SIGSEGV)");
  EXPECT_EQ(SignalName(SIGINT), "SIGINT");
}

}  // namespace
}  // namespace pdlaunch
