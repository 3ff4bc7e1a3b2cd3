// CaptureOutput, the device probes' runner (nvidia-smi, rocm-smi, memory_estimation_tool): one
// deadline to the program's exit, and a bound on what it writes (hostile review #38 item 6).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "pdlaunch/process/device_probe.h"

namespace pdlaunch {
namespace {

using Clock = std::chrono::steady_clock;

pid_t g_test_pid = 0;

double SecondsOf(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(CaptureOutputTest, GivesTheOutputOfAProgramThatExitsZero) {
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "echo one; echo two"}), "one\ntwo\n");
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "echo x; exit 3"}), std::nullopt);
}

TEST(CaptureOutputTest, SaysHowItEnded) {
  CaptureEnd end{};
  EXPECT_EQ(CaptureOutput({"/bin/true"}, 5000, &end), "");
  EXPECT_EQ(end, CaptureEnd::kOk);
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "exit 3"}, 5000, &end), std::nullopt);
  EXPECT_EQ(end, CaptureEnd::kFailed);
  EXPECT_EQ(CaptureOutput({"no-such-program-of-pdlaunch"}, 5000, &end), std::nullopt);
  EXPECT_EQ(end, CaptureEnd::kNotStarted);
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "exec sleep 30"}, 200, &end), std::nullopt);
  EXPECT_EQ(end, CaptureEnd::kTimedOut);
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "exec yes"}, 20000, &end), std::nullopt);
  EXPECT_EQ(end, CaptureEnd::kTooLong);
}

TEST(CaptureOutputTest, TheDeadlineRunsToTheExitNotToTheEndOfTheOutput) {
  // It closes its stdout at once and hangs: the deadline still holds (it did not: 25 s).
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "exec >&-; exec sleep 30"}, 500), std::nullopt);
  EXPECT_LT(SecondsOf(start), 10.0);
}

TEST(CaptureOutputTest, OutputPastTheBoundFailsTheProbe) {
  const Clock::time_point start = Clock::now();
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "exec yes 0123456789abcdef"}, 20000), std::nullopt);
  EXPECT_LT(SecondsOf(start), 15.0);  // Stopped at the bound, not at the deadline.
  const std::string under(kMaxCapturedBytes / 2, 'x');
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c",
                           "head -c " + std::to_string(under.size()) + " /dev/zero | tr '\\0' x"})
                ->size(),
            under.size());
}

TEST(CaptureOutputTest, AFailedExecRunsNoneOfTheLaunchersExitHandlersInTheChild) {
  // Boost.Process v2's child calls ::exit() after a failed exec; ProbeChildSetup's _exit() comes
  // first. A program found in PATH whose exec fails (no #! line, not ELF: ENOEXEC), and an
  // atexit handler of this process that would leave a mark if the child ran it.
  const std::string dir = ::testing::TempDir() + "/capture_exec_" + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  const std::string program = dir + "/not_a_program";
  {
    std::ofstream out(program);
    out << "\x7f\x01\x02garbage";
  }
  ::chmod(program.c_str(), 0755);
  static std::string mark;
  mark = dir + "/child_ran_atexit";
  std::atexit([] {
    if (::getpid() != g_test_pid) std::ofstream(mark) << "child";
  });
  g_test_pid = ::getpid();
  EXPECT_EQ(CaptureOutput({program}), std::nullopt);
  EXPECT_NE(::access(program.c_str(), X_OK), -1);
  EXPECT_EQ(::access(mark.c_str(), F_OK), -1) << "the child ran the launcher's atexit handlers";
}

}  // namespace
}  // namespace pdlaunch
