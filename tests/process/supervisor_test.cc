#include "pdlaunch/supervisor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>

#include "../support/test_util.h"
#include "pdlaunch/logging.h"

namespace pdlaunch {
namespace {

using Clock = std::chrono::steady_clock;
using testutil::ProcessAlive;
using testutil::ReadFile;
using testutil::ScopedTempDir;
using testutil::WaitFor;

class SupervisorTest : public ::testing::Test {
 protected:
  SupervisorTest() { SetupLogging(); }
  ~SupervisorTest() override {
    for (int fd : fds_) ::close(fd);
  }

  /// A rank running `script` under /bin/sh with its output in log.<rank>.
  void AddRank(const std::string& script) {
    const int rank = static_cast<int>(processes_.size());
    SupervisedProcess p;
    p.rank = rank;
    p.log_path = dir_.File("log." + std::to_string(rank));
    const int fd = ::open(p.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    fds_.push_back(fd);
    p.spec = ProcessSpec{"/bin/sh", {"sh", "-c", script}, {"PATH=/usr/bin:/bin"}, fd};
    processes_.push_back(std::move(p));
  }

  int Run(double grace = 5.0) {
    SupervisorOptions options;
    options.grace_seconds = grace;
    for (SupervisedProcess& p : processes_) p.role_size = static_cast<int>(processes_.size());
    options.on_spawn = [this](pid_t pid) { pids_.push_back(pid); };
    const auto start = Clock::now();
    const int code = RunSupervised(std::move(processes_), options);
    elapsed_ = Clock::now() - start;
    return code;
  }

  double elapsed_seconds() const { return std::chrono::duration<double>(elapsed_).count(); }

  ScopedTempDir dir_;
  std::vector<SupervisedProcess> processes_;
  std::vector<int> fds_;
  std::vector<pid_t> pids_;
  Clock::duration elapsed_{};
};

TEST_F(SupervisorTest, AllSucceedGivesZero) {
  for (int i = 0; i < 4; ++i) AddRank("exit 0");
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(pids_.size(), 4u);
}

TEST_F(SupervisorTest, FailureStopsSiblingsAndPassesTheCodeThrough) {
  AddRank("sleep 60");
  AddRank("exit 7");
  AddRank("sleep 60");
  EXPECT_EQ(Run(), 7);
  EXPECT_LT(elapsed_seconds(), 4.0);  // Siblings honour SIGTERM: no grace wait (bound generous).
  for (pid_t pid : pids_) EXPECT_FALSE(ProcessAlive(pid));
}

TEST_F(SupervisorTest, SignalDeathGives128PlusSignal) {
  AddRank("sleep 60");
  AddRank("kill -SEGV $$");
  EXPECT_EQ(Run(), 139);
}

TEST_F(SupervisorTest, SigtermIgnoringSiblingsShareOneGracePeriod) {
  for (int i = 0; i < 4; ++i) AddRank("trap '' TERM; sleep 60 & wait; sleep 60");
  AddRank("sleep 0.3; exit 2");
  EXPECT_EQ(Run(/*grace=*/1.0), 2);
  // One shared grace of 1 s, then SIGKILL: well under 4 x grace.
  EXPECT_GE(elapsed_seconds(), 1.0);
  EXPECT_LT(elapsed_seconds(), 3.5);
}

TEST_F(SupervisorTest, GrandchildrenOfAFailedRankAreKilled) {
  const std::string pid_file = dir_.File("grandchild.pid");
  AddRank("trap '' TERM; sleep 60 & echo $! > " + pid_file + "; exit 3");
  EXPECT_EQ(Run(/*grace=*/0.5), 3);
  ASSERT_FALSE(ReadFile(pid_file).empty());
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(std::stoi(ReadFile(pid_file))); }));
}

TEST_F(SupervisorTest, StragglersOfACleanExitAreStopped) {
  const std::string pid_file = dir_.File("straggler.pid");
  AddRank("sleep 60 & echo $! > " + pid_file + "; exit 0");
  EXPECT_EQ(Run(/*grace=*/0.5), 0);
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(std::stoi(ReadFile(pid_file))); }));
}

TEST_F(SupervisorTest, InterruptIsForwardedAndGives130) {
  const std::string marker = dir_.File("got-int");
  AddRank("trap 'echo int > " + marker + "; exit 1' INT; sleep 60 & wait");
  AddRank("sleep 0.3; kill -INT $PPID; sleep 60 & wait");
  EXPECT_EQ(Run(), 130);
  EXPECT_EQ(ReadFile(marker), "int\n");
}

TEST_F(SupervisorTest, TerminateGives143) {
  AddRank("sleep 0.3; kill -TERM $PPID; sleep 60 & wait");
  EXPECT_EQ(Run(), 143);
}

TEST_F(SupervisorTest, SecondInterruptSkipsGracePeriod) {
  AddRank("trap '' INT TERM; sleep 0.3; kill -INT $PPID; sleep 0.3; kill -INT $PPID; sleep 60");
  EXPECT_EQ(Run(/*grace=*/30.0), 130);
  EXPECT_LT(elapsed_seconds(), 10.0);
}

TEST_F(SupervisorTest, UserSignalsAreForwardedWithoutTeardown) {
  const std::string marker = dir_.File("got-usr1");
  AddRank("trap 'echo usr1 > " + marker + "' USR1; sleep 0.3; kill -USR1 $PPID; sleep 1; exit 0");
  EXPECT_EQ(Run(), 0);
  EXPECT_EQ(ReadFile(marker), "usr1\n");
}

TEST_F(SupervisorTest, FailedRankLogTailIsShown) {
  AddRank("for i in $(seq 1 30); do echo line$i; done; exit 1");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Run(), 1);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ABORT!!! Out of all 1 trainers, the trainer process with rank=[0] was "
                     "aborted. Please check its log."),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("line30\n"), std::string::npos);
  EXPECT_NE(err.find("line11\n"), std::string::npos);
  EXPECT_EQ(err.find("line10\n"), std::string::npos);  // Only the last 20 lines.
}

}  // namespace
}  // namespace pdlaunch
