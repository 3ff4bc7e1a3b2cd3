#include "pdlaunch/process/watchdog.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pdlaunch/base/nested_launch.h"
#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ProcessAlive;
using testutil::ReadFile;
using testutil::ScopedTempDir;
using testutil::WaitFor;

/// Forks a stand-in launcher that starts `sh -c script` in its own process group, without a
/// parent-death signal (so only the watchdog can stop it), registers it with a watchdog, writes
/// "<child pid> <watchdog pid>" to `pid_file`, then waits to be killed (or disarms and exits).
/// With `mark_job`, the child gets PDLAUNCH_PARENT=<the stand-in's pid> as the launcher's
/// processes do, and the watchdog is told that entry (no cgroup: the subreaper path's set-up).
pid_t FakeLauncher(const std::string& script, const std::string& pid_file, bool disarm,
                   std::vector<std::string> remove_if_killed = {}, bool mark_job = false) {
  const pid_t launcher = ::fork();
  if (launcher != 0) return launcher;
  if (mark_job) ::setenv("PDLAUNCH_PARENT", std::to_string(::getpid()).c_str(), 1);
  Watchdog watchdog(std::move(remove_if_killed), {}, 4096,
                    mark_job ? NestedMarkerEntry(::getpid()) : std::string());
  const pid_t child = ::fork();
  if (child == 0) {
    ::setpgid(0, 0);
    ::execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(child, child);
  watchdog.Register(child);
  FILE* f = std::fopen(pid_file.c_str(), "w");
  std::fprintf(f, "%d %d\n", child, watchdog.pid());
  std::fclose(f);
  if (disarm) watchdog.Disarm();
  ::pause();
  ::_exit(0);
}

TEST(WatchdogTest, KillsRegisteredGroupsWhenTheLauncherIsKilled) {
  ScopedTempDir dir;
  const std::string pids = dir.File("pids");
  const std::string grandchild_file = dir.File("grandchild");
  const pid_t launcher =
      FakeLauncher("sleep 60 & echo $! > " + grandchild_file + "; wait", pids, false);
  ASSERT_TRUE(
      WaitFor([&] { return !ReadFile(pids).empty() && !ReadFile(grandchild_file).empty(); }));
  int child = 0;
  int watchdog = 0;
  ASSERT_EQ(std::sscanf(ReadFile(pids).c_str(), "%d %d", &child, &watchdog), 2);
  const pid_t grandchild = std::stoi(ReadFile(grandchild_file));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(grandchild) && !ProcessAlive(child); }));
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(watchdog); }));
}

TEST(WatchdogTest, KillsTheProcessesCarryingTheJobMarkerThatLeftTheGroups) {
  // Without a cgroup, a daemon of a rank (its own session, re-parented to init when the
  // launcher dies) is found by the environment entry it inherited. Entries that only look like
  // it (a longer pid, a longer name) are not the job's.
  ScopedTempDir dir;
  const std::string pids = dir.File("pids");
  auto daemon = [&](int i, const std::string& env) {
    return env + " setsid sh -c 'echo $$ > " + dir.File("d" + std::to_string(i)) + ".tmp; mv " +
           dir.File("d" + std::to_string(i)) + ".tmp " + dir.File("d" + std::to_string(i)) +
           "; exec sleep 60' & ";
  };
  const std::string script = daemon(0, "") + daemon(1, "PDLAUNCH_PARENT=${PDLAUNCH_PARENT}0") +
                             daemon(2, "env -u PDLAUNCH_PARENT XPDLAUNCH_PARENT=$PDLAUNCH_PARENT") +
                             "wait";
  const pid_t launcher = FakeLauncher(script, pids, false, {}, /*mark_job=*/true);
  std::vector<pid_t> daemons;
  ASSERT_TRUE(WaitFor([&] {
    for (int i = 0; i < 3; ++i) {
      if (!std::filesystem::exists(dir.File("d" + std::to_string(i)))) return false;
    }
    return !ReadFile(pids).empty();
  }));
  for (int i = 0; i < 3; ++i)
    daemons.push_back(std::stoi(ReadFile(dir.File("d" + std::to_string(i)))));
  int child = 0;
  int watchdog = 0;
  ASSERT_EQ(std::sscanf(ReadFile(pids).c_str(), "%d %d", &child, &watchdog), 2);
  for (pid_t pid : daemons) ASSERT_NE(::getsid(pid), ::getsid(child)) << pid;
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(watchdog); }));
  EXPECT_FALSE(ProcessAlive(daemons[0]));
  EXPECT_FALSE(ProcessAlive(child));
  EXPECT_TRUE(ProcessAlive(daemons[1]));
  EXPECT_TRUE(ProcessAlive(daemons[2]));
  for (pid_t pid : daemons) ::kill(pid, SIGKILL);
}

/// Forks a stand-in launcher with a watchdog for `max_groups` groups that starts `count`
/// `sleep 60`s, each in its own group, registers them all, writes their pids and the watchdog's
/// to `pid_file` (one per line, the watchdog last), then waits to be killed.
pid_t FakeLauncherOf(int count, size_t max_groups, const std::string& pid_file) {
  const pid_t launcher = ::fork();
  if (launcher != 0) return launcher;
  Watchdog watchdog({}, {}, max_groups);
  std::string lines;
  for (int i = 0; i < count; ++i) {
    const pid_t child = ::fork();
    if (child == 0) {
      ::setpgid(0, 0);
      ::execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::setpgid(child, child);
    watchdog.Register(child);
    lines += std::to_string(child) + "\n";
  }
  lines += std::to_string(watchdog.pid()) + "\n";
  std::ofstream(pid_file + ".tmp") << lines;
  std::filesystem::rename(pid_file + ".tmp", pid_file);
  ::pause();
  ::_exit(0);
}

std::vector<pid_t> ReadPids(const std::string& path) {
  std::vector<pid_t> pids;
  std::ifstream in(path);
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

/// A FakeLauncherOf that has started its groups: its pid, and what it wrote (none when it did
/// not write in time).
struct FakeJob {
  pid_t launcher = -1;
  std::vector<pid_t> pids;  ///< The groups, then the watchdog.
};

FakeJob StartFakeJob(int count, size_t max_groups, const ScopedTempDir& dir) {
  const std::string file = dir.File("pids");
  FakeJob job{FakeLauncherOf(count, max_groups, file), {}};
  if (WaitFor([&] { return std::filesystem::exists(file); })) job.pids = ReadPids(file);
  return job;
}

void KillLauncher(const FakeJob& job) {
  ::kill(job.launcher, SIGKILL);
  ::waitpid(job.launcher, nullptr, 0);
}

TEST(WatchdogTest, FindsTheJobMarkerWhereverTheScansReadsCutTheEnvironment) {
  // The helper reads /proc/<pid>/environ 4096 bytes at a time: the entry must be matched across
  // that cut, where it starts, ends or has its NUL on either side of it.
  ScopedTempDir dir;
  const std::string file = dir.File("pids");
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    std::string marker = NestedMarkerEntry(::getpid());
    Watchdog watchdog({}, {}, 16, marker);
    std::string lines;
    for (size_t offset : {size_t{4085}, 4096 - marker.size(), size_t{4095}, size_t{4096}}) {
      std::string pad = "PAD=" + std::string(offset - 5, 'x');  // `offset` bytes, NUL included.
      const pid_t child = ::fork();
      if (child == 0) {
        ::setsid();  // Out of every group: only the scan can find it.
        char sleep[] = "sleep";
        char seconds[] = "60";
        char* argv[] = {sleep, seconds, nullptr};
        char* envp[] = {pad.data(), marker.data(), nullptr};
        ::execve("/bin/sleep", argv, envp);
        ::_exit(127);
      }
      lines += std::to_string(child) + "\n";
    }
    lines += std::to_string(watchdog.pid()) + "\n";
    std::ofstream(file + ".tmp") << lines;
    std::filesystem::rename(file + ".tmp", file);
    ::pause();
    ::_exit(0);
  }
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(file); }));
  const std::vector<pid_t> pids = ReadPids(file);
  ASSERT_EQ(pids.size(), 5U);
  // Each has exec'ed (its environment is the one given) before the launcher dies.
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(WaitFor([&] {
      return ReadFile("/proc/" + std::to_string(pids[i]) + "/comm") == "sleep\n";
    })) << pids[i];
  }
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(pids[4]); }));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(ProcessAlive(pids[i])) << "offset case " << i;
    ::kill(pids[i], SIGKILL);
  }
}

TEST(WatchdogTest, KillsEveryRegisteredGroup) {
  // Where the helper shares the launcher's memory, the launcher writes the groups into it with
  // no message: each of several must be seen by the helper after the launcher's death.
  ScopedTempDir dir;
  const FakeJob job = StartFakeJob(5, 5, dir);
  ASSERT_EQ(job.pids.size(), 6U);
  for (pid_t pid : job.pids) EXPECT_TRUE(ProcessAlive(pid));
  KillLauncher(job);
  for (pid_t pid : job.pids) EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(pid); })) << pid;
}

TEST(WatchdogTest, KeepsAtMostMaxGroups) {
  ScopedTempDir dir;
  const FakeJob job = StartFakeJob(3, 2, dir);
  ASSERT_EQ(job.pids.size(), 4U);
  KillLauncher(job);
  const std::vector<pid_t>& pids = job.pids;
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(pids[0]) && !ProcessAlive(pids[1]); }));
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(pids[3]); }));  // The watchdog is done.
  EXPECT_TRUE(ProcessAlive(pids[2]));  // The third was beyond what it keeps.
  ::kill(-pids[2], SIGKILL);
}

TEST(WatchdogTest, RemovesTheLaunchersTemporaryDirectoriesWhenItIsKilled) {
  ScopedTempDir dir;
  const std::string pids = dir.File("pids");
  const std::string gloo = dir.File("gloo");
  std::filesystem::create_directories(gloo + "/sub");
  std::ofstream(gloo + "/sub/file") << "x";
  const pid_t launcher = FakeLauncher("exec sleep 60", pids, false, {gloo});
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(pids).empty(); }));
  EXPECT_TRUE(std::filesystem::exists(gloo));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  EXPECT_TRUE(WaitFor([&] { return !std::filesystem::exists(gloo); }));
}

TEST(WatchdogTest, DisarmedWatchdogKillsNothing) {
  ScopedTempDir dir;
  const std::string pids = dir.File("pids");
  const pid_t launcher = FakeLauncher("exec sleep 60", pids, true);
  ASSERT_TRUE(WaitFor([&] { return !ReadFile(pids).empty(); }));
  int child = 0;
  int watchdog = 0;
  ASSERT_EQ(std::sscanf(ReadFile(pids).c_str(), "%d %d", &child, &watchdog), 2);
  // Told with a message (forked) or a flag and EOF (sharing our memory), it exits at once,
  // before the launcher (docs/design.md, Parent death), and kills nothing.
  EXPECT_TRUE(WaitFor([&] { return !ProcessAlive(watchdog); }));
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  ::usleep(200 * 1000);
  EXPECT_TRUE(ProcessAlive(child));
  ::kill(-child, SIGKILL);
}

TEST(WatchdogTest, ReapWatchdogsLetsADisarmedHelperGoAndReapsIt) {
  // What Main does on its way out (docs/design.md, Parent death): a disarmed helper, sharing
  // our memory or not, exits at once and is reaped, so none is left a zombie.
  Watchdog watchdog;
  const pid_t pid = watchdog.pid();
  watchdog.Disarm();
  EXPECT_EQ(ReapWatchdogs(std::chrono::seconds(10)), 0u);
  siginfo_t info{};
  EXPECT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);  // Reaped.
}

TEST(WatchdogTest, AnEarlierWatchdogIsReapedOnceItHasExitedAndNoLongerCountsAsOurs) {
  // A launcher running several jobs (elastic generations) keeps no zombie of an earlier helper.
  pid_t first = -1;
  {
    Watchdog watchdog;
    first = watchdog.pid();
    const std::vector<pid_t> armed = WatchdogPids();
    EXPECT_NE(std::find(armed.begin(), armed.end(), first), armed.end());
  }
  Watchdog next;  // Lets a disarmed helper that shares our memory go.
  ASSERT_TRUE(WaitFor([&] { return !ProcessAlive(first); }));  // Exited: a zombie of ours.
  const std::vector<pid_t> ours = WatchdogPids();
  EXPECT_EQ(std::find(ours.begin(), ours.end(), first), ours.end());
  EXPECT_NE(std::find(ours.begin(), ours.end(), next.pid()), ours.end());
  siginfo_t info{};
  EXPECT_EQ(::waitid(P_PID, static_cast<id_t>(first), &info, WEXITED | WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);  // Already reaped.
}

TEST(WatchdogTest, TerminalSignalsDoNotStopIt) {
  Watchdog watchdog;
  ASSERT_TRUE(WaitFor([&] { return ::getpgid(watchdog.pid()) == watchdog.pid(); }));
  ::kill(watchdog.pid(), SIGINT);
  ::kill(watchdog.pid(), SIGTERM);
  ::kill(watchdog.pid(), SIGHUP);
  ::usleep(100 * 1000);
  EXPECT_TRUE(ProcessAlive(watchdog.pid()));
}

}  // namespace
}  // namespace pdlaunch
