// CaptureOutput, the device probes' runner (nvidia-smi, rocm-smi, memory_estimation_tool): one
// deadline to the program's exit, and a bound on what it writes (hostile review #38 item 6).
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "pdlaunch/process/device_probe.h"

namespace pdlaunch {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsOf(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(CaptureOutputTest, GivesTheOutputOfAProgramThatExitsZero) {
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "echo one; echo two"}), "one\ntwo\n");
  EXPECT_EQ(CaptureOutput({"/bin/sh", "-c", "echo x; exit 3"}), std::nullopt);
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

}  // namespace
}  // namespace pdlaunch
