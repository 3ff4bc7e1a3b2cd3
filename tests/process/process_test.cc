#include "pdlaunch/process/process.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <vector>

#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ProcessAlive;
using testutil::ReadFile;
using testutil::ScopedTempDir;
using testutil::WaitFor;

/// How many children the kernel lists for this process (zombies included).
size_t ChildCount() {
  const std::string list = ReadFile("/proc/self/task/" + std::to_string(::gettid()) + "/children");
  size_t count = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] != ' ' && (i == 0 || list[i - 1] == ' ')) ++count;
  }
  return count;
}

mode_t CurrentUmask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

ProcessSpec Shell(const std::string& script, int output_fd = -1) {
  return ProcessSpec{"/bin/sh", {"sh", "-c", script}, {"PATH=/usr/bin:/bin"}, output_fd};
}

TEST(ProcessTest, PassesExitCodeThrough) {
  for (int code : {0, 1, 3, 127, 255}) {
    Process p = Process::Spawn(Shell("exit " + std::to_string(code)));
    EXPECT_EQ(p.Wait(), ExitStatus::Exited(code));
  }
}

TEST(ProcessTest, ReportsDeathBySignal) {
  Process p = Process::Spawn(Shell("kill -SEGV $$"));
  EXPECT_EQ(p.Wait(), ExitStatus::Killed(SIGSEGV));
}

TEST(ProcessTest, PidfdBecomesReadableOnExit) {
  Process p = Process::Spawn(Shell("sleep 0.1"));
  EXPECT_FALSE(p.TryWait().has_value());
  pollfd pfd{p.pidfd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 10000), 1);
  EXPECT_EQ(p.TryWait(), ExitStatus::Exited(0));
}

TEST(ProcessTest, ChildLeadsItsOwnProcessGroup) {
  Process p = Process::Spawn(Shell("sleep 30"));
  EXPECT_EQ(::getpgid(p.pid()), p.pid());
  EXPECT_TRUE(p.SignalGroup(SIGTERM));
  EXPECT_EQ(p.Wait(), ExitStatus::Killed(SIGTERM));
}

TEST(ProcessTest, GroupSignalReachesGrandchildren) {
  ScopedTempDir dir;
  const std::string pid_file = dir.File("grandchild.pid");
  Process p = Process::Spawn(Shell("sleep 30 & echo $! > " + pid_file + "; wait"));
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(pid_file).empty(); }));
  const pid_t grandchild = std::stoi(ReadFile(pid_file));
  EXPECT_TRUE(p.SignalGroup(SIGKILL));
  p.Wait();
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(grandchild); }));
}

TEST(ProcessTest, GroupOutlivesExitedLeaderWhileGrandchildrenRun) {
  ScopedTempDir dir;
  const std::string pid_file = dir.File("grandchild.pid");
  Process p = Process::Spawn(Shell("sleep 30 & echo $! > " + pid_file));
  EXPECT_EQ(p.Wait(), ExitStatus::Exited(0));
  const pid_t grandchild = std::stoi(ReadFile(pid_file));
  EXPECT_TRUE(p.GroupAlive());
  EXPECT_TRUE(p.SignalGroup(SIGKILL));
  EXPECT_TRUE(WaitFor([&] { return !p.GroupAlive(); }));
  EXPECT_FALSE(ProcessAlive(grandchild));
}

TEST(ProcessTest, OutputGoesToTheGivenFdAndStdinIsDevNull) {
  ScopedTempDir dir;
  const std::string log = dir.File("out.log");
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  Process p = Process::Spawn(Shell("echo out; echo err >&2; cat; echo done", fd));
  ::close(fd);
  EXPECT_EQ(p.Wait(), ExitStatus::Exited(0));
  EXPECT_EQ(ReadFile(log), "out\nerr\ndone\n");
}

TEST(ProcessTest, ChildCreatesItsOutputFileAppendingOrTruncating) {
  ScopedTempDir dir;
  const std::string log = dir.File("child.log");
  ProcessSpec spec = Shell("echo out; echo err >&2");
  spec.output_path = log;  // Does not exist yet: the child creates it.
  EXPECT_EQ(Process::Spawn(spec).Wait(), ExitStatus::Exited(0));
  EXPECT_EQ(ReadFile(log), "out\nerr\n");
  EXPECT_EQ(Process::Spawn(spec).Wait(), ExitStatus::Exited(0));  // Appended to.
  EXPECT_EQ(ReadFile(log), "out\nerr\nout\nerr\n");
  spec.output_truncate = true;
  EXPECT_EQ(Process::Spawn(spec).Wait(), ExitStatus::Exited(0));
  EXPECT_EQ(ReadFile(log), "out\nerr\n");
  struct stat st {};
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644 & ~CurrentUmask());
  // The launcher can make the same file itself (the supervisor does, for what it echoes).
  const int fd = OpenOutput(spec);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(ReadFile(log), "");  // Truncated, as the child would have.
  ::close(fd);
}

TEST(ProcessTest, OutputFileTheChildCannotOpenThrowsNamingItAndLeavesNoChild) {
  ScopedTempDir dir;
  ProcessSpec spec = Shell("echo never");
  spec.output_path = dir.File("missing-dir/child.log");
  const size_t children = ChildCount();
  try {
    Process::Spawn(spec);
    FAIL() << "expected a throw";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("cannot open log file '" + spec.output_path + "'"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(ChildCount(), children);  // Reaped: nothing left, not even a zombie.
  EXPECT_THROW(OpenOutput(spec), std::system_error);
}

TEST(ProcessTest, ChildOpensItsOutputBeforeTheOriginalFileLimitIsBack) {
  // A large job: the launcher (limit raised) holds more descriptors than the soft limit its
  // ranks get back, so the log a child opens gets a number above that limit.
  struct rlimit limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max < 1024) GTEST_SKIP() << "hard RLIMIT_NOFILE below 1024";
  limit.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  RaiseOpenFileLimit();
  std::vector<int> held;
  while (held.empty() || held.back() < 300) {
    held.push_back(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_GE(held.back(), 0);
  }
  ScopedTempDir dir;
  ProcessSpec spec = Shell("echo ok; ulimit -n");
  spec.output_path = dir.File("big-job.log");
  const ExitStatus status = Process::Spawn(spec).Wait();
  for (int fd : held) ::close(fd);
  EXPECT_EQ(status, ExitStatus::Exited(0));
  EXPECT_EQ(ReadFile(spec.output_path), "ok\n256\n");  // And the rank's limit is its own.
}

TEST(ProcessTest, OnlyStandardFdsReachTheChild) {
  const int leaked = ::open("/dev/null", O_RDONLY);  // Deliberately without O_CLOEXEC.
  ASSERT_GE(leaked, 3);
  ScopedTempDir dir;
  const std::string log = dir.File("fds.log");
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  Process p = Process::Spawn(ProcessSpec{"/bin/ls", {"ls", "/proc/self/fd"}, {}, fd});
  ::close(fd);
  ::close(leaked);
  EXPECT_EQ(p.Wait(), ExitStatus::Exited(0));
  EXPECT_EQ(ReadFile(log), "0\n1\n2\n3\n");  // 3 is ls's own handle on the directory.
}

TEST(ProcessTest, EnvironmentIsExactlyTheSpec) {
  ScopedTempDir dir;
  const std::string log = dir.File("env.log");
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  Process p = Process::Spawn(ProcessSpec{"/usr/bin/env", {"env"}, {"A=1", "B=two words"}, fd});
  ::close(fd);
  p.Wait();
  EXPECT_EQ(ReadFile(log), "A=1\nB=two words\n");
}

// Started together (the children prepare and exec while the launcher goes on), each child gets
// its own argv and environment, and a failing exec among them is reported for that one alone.
TEST(ProcessTest, ChildrenStartedTogetherEachGetTheirOwnSpec) {
  ScopedTempDir dir;
  constexpr int kChildren = 48;
  std::vector<ProcessSpec> specs;
  for (int i = 0; i < kChildren; ++i) {
    specs.push_back(ProcessSpec{"/bin/sh",
                                {"sh", "-c", "printf '%s %s' \"$X\" \"$0\" > \"$1\"",
                                 "arg-" + std::to_string(i), dir.File(std::to_string(i))},
                                {"X=env-" + std::to_string(i)},
                                -1});
  }
  specs[kChildren / 2].executable = "/nonexistent/prog";
  std::vector<Process> processes;
  for (const ProcessSpec& spec : specs) processes.push_back(Process::Start(spec));
  for (int i = 0; i < kChildren; ++i) {
    if (i == kChildren / 2) {
      EXPECT_THROW(processes[i].ConfirmStarted(), std::system_error);
      EXPECT_TRUE(processes[i].reaped());
      continue;
    }
    processes[i].ConfirmStarted();
    EXPECT_EQ(processes[i].Wait(), ExitStatus::Exited(0));
    EXPECT_EQ(ReadFile(dir.File(std::to_string(i))),
              "env-" + std::to_string(i) + " arg-" + std::to_string(i));
  }
}

TEST(ProcessTest, ExecFailureThrowsAndLeavesNoChild) {
  try {
    Process::Spawn(ProcessSpec{"/nonexistent/prog", {"prog"}, {}, -1});
    FAIL() << "expected a throw";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/prog"), std::string::npos);
  }
  EXPECT_EQ(::waitpid(-1, nullptr, WNOHANG), -1);  // ECHILD: nothing left to reap.
}

TEST(ProcessTest, ChildStartsWithDefaultSignalDispositions) {
  ::signal(SIGUSR1, SIG_IGN);  // Ignored in the parent...
  Process p = Process::Spawn(Shell("exec sleep 30"));
  ::signal(SIGUSR1, SIG_DFL);
  ASSERT_TRUE(
      WaitFor([&] { return ReadFile("/proc/" + std::to_string(p.pid()) + "/comm") == "sleep\n"; }));
  ::kill(p.pid(), SIGUSR1);  // ...but fatal in the child.
  EXPECT_EQ(p.Wait(), ExitStatus::Killed(SIGUSR1));
}

TEST(ProcessTest, ChildResetsExactlyTheSignalsItIsGiven) {
  ::signal(SIGUSR1, SIG_IGN);
  ::signal(SIGUSR2, SIG_IGN);
  const uint64_t non_default = NonDefaultSignals();
  EXPECT_NE(non_default & (uint64_t{1} << (SIGUSR1 - 1)), 0U);
  EXPECT_NE(non_default & (uint64_t{1} << (SIGUSR2 - 1)), 0U);
  EXPECT_EQ(non_default & (uint64_t{1} << (SIGWINCH - 1)), 0U);
  ProcessSpec spec{"/bin/sleep", {"sleep", "30"}, {}, -1};
  spec.reset_signals = uint64_t{1} << (SIGUSR2 - 1);  // Not SIGUSR1: it stays ignored.
  Process p = Process::Spawn(spec);
  ::signal(SIGUSR1, SIG_DFL);
  ::signal(SIGUSR2, SIG_DFL);
  ::kill(p.pid(), SIGUSR1);
  ::usleep(100 * 1000);
  EXPECT_FALSE(p.TryWait().has_value());  // Ignored, as it was in the parent.
  ::kill(p.pid(), SIGUSR2);
  EXPECT_EQ(p.Wait(), ExitStatus::Killed(SIGUSR2));
}

TEST(ProcessTest, DestructorKillsAndReapsAForgottenChild) {
  pid_t pid;
  {
    Process p = Process::Spawn(Shell("sleep 30"));
    pid = p.pid();
  }
  EXPECT_FALSE(ProcessAlive(pid));
  EXPECT_EQ(::kill(pid, 0), -1);  // Reaped, not a zombie.
}

TEST(ProcessTest, ParentDeathSignalKillsTheChild) {
  // An intermediate process spawns a child through Process and then dies by SIGKILL.
  ScopedTempDir dir;
  const std::string pid_file = dir.File("child.pid");
  const pid_t middle = ::fork();
  if (middle == 0) {
    // sleep itself, not a shell that would fork it: the parent-death signal reaches the direct
    // child only (the watchdog covers the rest of the group; see watchdog_test.cc).
    Process p = Process::Spawn(ProcessSpec{"/bin/sleep", {"sleep", "30"}, {}, -1});
    FILE* f = std::fopen(pid_file.c_str(), "w");
    std::fprintf(f, "%d", p.pid());
    std::fclose(f);
    ::pause();
    ::_exit(0);
  }
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(pid_file).empty(); }));
  const pid_t child = std::stoi(ReadFile(pid_file));
  ::kill(middle, SIGKILL);
  ::waitpid(middle, nullptr, 0);
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(child); }));
}

// The fallback containment: as the subreaper, the launcher inherits what its ranks orphan.
// Both ways of listing its children: the kernel's list, and the /proc scan a kernel without
// CONFIG_PROC_CHILDREN leaves.
class AdoptedChildrenTest : public ::testing::TestWithParam<ChildListing> {};

TEST_P(AdoptedChildrenTest, ListsLiveOrphansAndReapsExitedOnes) {
  const ChildListing how = GetParam();
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  ScopedTempDir dir;
  const std::string live_file = dir.File("live.pid");
  const std::string gone_file = dir.File("gone.pid");
  // Both are orphaned when the shell exits: one sleeps on, one exits soon after (a zombie
  // re-parented to us, which nobody else will reap).
  Process shell = Process::Spawn(
      Shell("sleep 30 & echo $! > " + live_file + "; sleep 0.2 & echo $! > " + gone_file));
  EXPECT_EQ(shell.Wait(), ExitStatus::Exited(0));
  const pid_t live = std::stoi(ReadFile(live_file));
  const pid_t gone = std::stoi(ReadFile(gone_file));
  ASSERT_TRUE(WaitFor([&] { return !ProcessAlive(gone); }));
  Process rank = Process::Spawn(ProcessSpec{"/bin/sleep", {"sleep", "30"}, {}, -1});  // Ours.

  const std::vector<pid_t> adopted = AdoptedChildren({rank.pid()}, how);
  EXPECT_NE(std::find(adopted.begin(), adopted.end(), live), adopted.end());
  EXPECT_EQ(std::find(adopted.begin(), adopted.end(), gone), adopted.end());
  EXPECT_EQ(::kill(gone, 0), -1);  // Reaped, not left a zombie.
  EXPECT_EQ(std::find(adopted.begin(), adopted.end(), rank.pid()), adopted.end());  // Known.
  const std::vector<pid_t> unknown = AdoptedChildren({}, how);
  EXPECT_NE(std::find(unknown.begin(), unknown.end(), rank.pid()), unknown.end());

  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
  const std::vector<pid_t> after = AdoptedChildren({}, how);
  EXPECT_EQ(std::find(after.begin(), after.end(), live), after.end());
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

INSTANTIATE_TEST_SUITE_P(BothListings, AdoptedChildrenTest,
                         ::testing::Values(ChildListing::kAuto, ChildListing::kProcScan),
                         [](const ::testing::TestParamInfo<ChildListing>& param) {
                           return param.param == ChildListing::kAuto ? std::string("KernelList")
                                                                     : std::string("ProcScan");
                         });

TEST(ProcessTest, OpenFileLimitIsRaisedForTheLauncherOnly) {
  struct rlimit limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max < 512) GTEST_SKIP() << "hard RLIMIT_NOFILE below 512";
  limit.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  RaiseOpenFileLimit();
  struct rlimit raised {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &raised), 0);
  EXPECT_EQ(raised.rlim_cur, limit.rlim_max);
  ScopedTempDir dir;
  const std::string out = dir.File("out");
  const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  Process p = Process::Spawn(Shell("ulimit -n", fd));
  ::close(fd);
  EXPECT_EQ(p.Wait(), ExitStatus::Exited(0));
  EXPECT_EQ(ReadFile(out), "256\n");
}

}  // namespace
}  // namespace pdlaunch
