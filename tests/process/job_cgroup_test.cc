// The job's cgroup with real processes (label cgroup). Skipped, saying why, where this kernel or
// this user cannot create a cgroup v2 directory.
#include "pdlaunch/job_cgroup.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>

#include "../support/test_util.h"
#include "pdlaunch/process.h"

namespace pdlaunch {
namespace {

using testutil::ReadFile;
using testutil::WaitFor;

class JobCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    cgroup_ = JobCgroup::Create(&why_not);
    if (!cgroup_) GTEST_SKIP() << "SKIPPED: no cgroup v2 here: " << why_not;
  }

  /// A shell that starts a daemon (setsid, its own session and group) and then sleeps.
  ProcessSpec ShellWithDaemon(bool clone_into) {
    ProcessSpec spec{
        "/bin/sh", {"sh", "-c", "setsid sleep 600 & sleep 600"}, {"PATH=/usr/bin:/bin"}, -1};
    if (clone_into) spec.cgroup_dir_fd = cgroup_->dir_fd();
    spec.cgroup_procs_fd = cgroup_->procs_fd();
    return spec;
  }

  std::string CgroupOf(pid_t pid) { return ReadFile("/proc/" + std::to_string(pid) + "/cgroup"); }

  std::unique_ptr<JobCgroup> cgroup_;
};

TEST_F(JobCgroupTest, ChildrenAreBornInItAndDaemonsStayInIt) {
  for (bool clone_into : {true, false}) {  // clone3(CLONE_INTO_CGROUP), and fork + move
    SCOPED_TRACE(clone_into ? "clone3" : "fork and move");
    Process shell = Process::Spawn(ShellWithDaemon(clone_into));
    const std::string name = cgroup_->dir().substr(cgroup_->dir().rfind('/'));
    EXPECT_NE(CgroupOf(shell.pid()).find(name + "\n"), std::string::npos) << CgroupOf(shell.pid());
    // The shell and both sleeps, the daemon included although it left the group and session
    // (waited for: `setsid` is in the cgroup before it has called setsid()).
    auto daemon_in_cgroup = [&] {
      const std::vector<pid_t> members = cgroup_->Members();
      bool daemon = false;
      for (pid_t pid : members) daemon |= pid != shell.pid() && ::getsid(pid) == pid;
      return members.size() == 3 && daemon &&
             std::find(members.begin(), members.end(), shell.pid()) != members.end();
    };
    EXPECT_TRUE(WaitFor(daemon_in_cgroup));

    EXPECT_TRUE(cgroup_->Kill());
    EXPECT_EQ(shell.Wait(), ExitStatus::Killed(SIGKILL));
    EXPECT_TRUE(cgroup_->WaitEmpty(10.0));
    EXPECT_TRUE(cgroup_->Members().empty());
  }
}

TEST_F(JobCgroupTest, RemovedWithNestedCgroupsAndWhatIsLeftInThem) {
  const std::string dir = cgroup_->dir();
  ASSERT_EQ(::mkdir((dir + "/pdlaunch-nested").c_str(), 0755), 0);  // a nested launcher's
  Process shell = Process::Spawn(ShellWithDaemon(true));
  ASSERT_TRUE(WaitFor([&] { return cgroup_->Members().size() == 3; }));
  cgroup_.reset();  // Kills, waits, removes.
  EXPECT_EQ(shell.Wait(), ExitStatus::Killed(SIGKILL));
  struct stat st {};
  EXPECT_NE(::stat(dir.c_str(), &st), 0) << dir << " is still there";
}

TEST_F(JobCgroupTest, KillAndRemoveOfAnEmptyCgroupIsQuick) {
  const std::string dir = cgroup_->dir();
  EXPECT_TRUE(KillAndRemoveCgroup(dir, 10.0));
  EXPECT_TRUE(KillAndRemoveCgroup(dir, 10.0));  // Already gone: fine.
}

}  // namespace
}  // namespace pdlaunch
