// ProcessLauncher: the job's processes started by pdlaunch's spawner and owned by Boost.Process
// v2's basic_process, waited on through Asio.
#include "process/process_launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <string>
#include <system_error>
#include <vector>

#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ProcessAlive;
using testutil::ScopedTempDir;
using testutil::WaitFor;

ProcessSpec Shell(const std::string& script) {
  return ProcessSpec{"/bin/sh", {"sh", "-c", script}, {"PATH=/usr/bin:/bin"}, -1};
}

TEST(ProcessLauncherTest, V2OwnsTheChildAndAsioReportsItsExit) {
  boost::asio::io_context io;
  ProcessLauncher::Child child = ProcessLauncher()(io.get_executor(), Shell("exit 7"));
  EXPECT_GT(child.id(), 0);
  int wait_status = -1;
  boost::system::error_code error;
  child.handle().async_wait([&](boost::system::error_code ec, int status) {
    error = ec;
    wait_status = status;
  });
  io.run();
  ASSERT_FALSE(error) << error.message();
  ASSERT_TRUE(WIFEXITED(wait_status));
  EXPECT_EQ(WEXITSTATUS(wait_status), 7);
  child.detach();
}

TEST(ProcessLauncherTest, EachChildLeadsAProcessGroupOfItsOwn) {
  boost::asio::io_context io;
  ProcessLauncher::Child child =
      ProcessLauncher()(io.get_executor(), Shell("sleep 30 & exec sleep 30"));
  EXPECT_EQ(::getpgid(child.id()), child.id());
  // The group is what stops the job's processes: the background sleep too.
  ASSERT_TRUE(SignalProcessGroup(child.id(), SIGKILL));
  EXPECT_EQ(child.wait(), SIGKILL);  // v2's exit code for a killed child: the signal.
  EXPECT_TRUE(WaitFor([&] { return LiveGroupMembers({child.id()}).empty(); }));
}

TEST(ProcessLauncherTest, ABatchCallsBackForEachChildBeforeItReturns) {
  boost::asio::io_context io;
  const std::vector<ProcessSpec> specs = {Shell("exit 0"), Shell("exit 1"), Shell("exit 2")};
  std::vector<pid_t> created;
  std::vector<ProcessLauncher::Child> children = ProcessLauncher()(
      io.get_executor(), {&specs[0], &specs[1], &specs[2]}, [&](size_t index, pid_t pid) {
        EXPECT_EQ(index, created.size());
        created.push_back(pid);
      });
  ASSERT_EQ(children.size(), 3u);
  for (size_t i = 0; i < children.size(); ++i) {
    EXPECT_EQ(children[i].id(), created[i]);
    EXPECT_EQ(children[i].wait(), static_cast<int>(i));
  }
}

TEST(ProcessLauncherTest, AFailedExecInABatchLeavesNoProcessOfIt) {
  boost::asio::io_context io;
  ScopedTempDir dir;
  const std::vector<ProcessSpec> specs = {
      Shell("exec sleep 30"), ProcessSpec{dir.path().string() + "/missing", {"missing"}, {}, -1}};
  std::vector<pid_t> created;
  try {
    ProcessLauncher()(io.get_executor(), {&specs[0], &specs[1]},
                      [&](size_t, pid_t pid) { created.push_back(pid); });
    FAIL() << "a batch with a missing program started";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot execute '" + dir.path().string() + "/missing'"),
              std::string::npos)
        << e.what();
  }
  ASSERT_EQ(created.size(), 2u);
  for (pid_t pid : created) EXPECT_FALSE(ProcessAlive(pid)) << pid;  // Killed and reaped.
}

}  // namespace
}  // namespace pdlaunch
