// The job's cgroup with real processes (label cgroup). Skipped, saying why, where this kernel or
// this user cannot create a cgroup v2 directory.
#include "pdlaunch/process/job_cgroup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>

#include "pdlaunch/process/process.h"
#include "support/test_util.h"

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

TEST_F(JobCgroupTest, RemoveIfEmptyRemovesOnlyAnEmptyCgroup) {
  const std::string dir = cgroup_->dir();
  ProcessSpec spec{"/bin/sleep", {"sleep", "600"}, {}, -1};
  spec.cgroup_dir_fd = cgroup_->dir_fd();
  spec.cgroup_procs_fd = cgroup_->procs_fd();
  Process sleeper = Process::Spawn(spec);
  EXPECT_FALSE(cgroup_->RemoveIfEmpty());  // A process in it.
  EXPECT_TRUE(std::filesystem::is_directory(dir));
  ::kill(sleeper.pid(), SIGKILL);
  sleeper.Wait();
  ASSERT_EQ(::mkdir((dir + "/nested").c_str(), 0755), 0);
  EXPECT_FALSE(cgroup_->RemoveIfEmpty());  // Empty, but a nested launcher's cgroup below it.
  EXPECT_FALSE(cgroup_->Populated());
  ASSERT_EQ(::rmdir((dir + "/nested").c_str()), 0);
  EXPECT_TRUE(cgroup_->RemoveIfEmpty());
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_TRUE(cgroup_->RemoveIfEmpty());  // Once removed, it stays so.
  cgroup_.reset();                        // Nothing left for the destructor.
  EXPECT_FALSE(std::filesystem::exists(dir));
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

// JobCgroup::Create looks for the unified hierarchy at its usual mount point first, without
// reading mountinfo. A mount there that shows only a subtree of the hierarchy (a container
// without a cgroup namespace of its own) must still give the right directory: mountinfo's
// root field decides once the mkdir under the guessed path fails. Set up in a child, in a mount
// namespace of its own: the subtree <job cgroup>/subtree mounted where the hierarchy was, and
// the child moved into <subtree>/inner.
TEST_F(JobCgroupTest, ASubtreeAtTheUsualMountPointIsFoundThroughMountinfo) {
  const std::string dir = cgroup_->dir();
  std::string usual;
  for (const char* candidate : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (dir.starts_with(std::string(candidate) + "/")) {
      usual = candidate;
      break;
    }
  }
  if (usual.empty()) GTEST_SKIP() << "SKIPPED: the hierarchy is not at a usual place: " << dir;
  const std::string subtree = dir + "/subtree";
  ASSERT_EQ(::mkdir(subtree.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((subtree + "/inner").c_str(), 0755), 0);
  char aside[] = "/tmp/pdlaunch-cgroup-XXXXXX";
  ASSERT_NE(::mkdtemp(aside), nullptr);
  int result[2];
  ASSERT_EQ(::pipe(result), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto fail = [&](const std::string& what) {
      const std::string text = "FAIL " + what + ": " + std::strerror(errno);
      (void)!::write(result[1], text.data(), text.size());
      ::_exit(1);
    };
    const int fd = ::open((subtree + "/inner/cgroup.procs").c_str(), O_WRONLY);
    if (fd < 0 || ::write(fd, "0", 1) != 1) fail("joining the inner cgroup");
    if (::unshare(CLONE_NEWNS) != 0) fail("unshare");
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) fail("private /");
    // The subtree is bound aside, the hierarchy unmounted, and the subtree moved in its place.
    if (::mount(subtree.c_str(), aside, nullptr, MS_BIND, nullptr) != 0) fail("bind");
    if (::umount2(usual.c_str(), MNT_DETACH) != 0) fail("umount " + usual);
    if (::mount(aside, usual.c_str(), nullptr, MS_MOVE, nullptr) != 0) fail("move");
    std::string why_not;
    std::unique_ptr<JobCgroup> inner = JobCgroup::Create(&why_not);
    const std::string text = inner ? inner->dir() : "NONE " + why_not;
    inner.reset();  // Removes it (_exit runs no destructor).
    (void)!::write(result[1], text.data(), text.size());
    ::_exit(0);
  }
  ::close(result[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = ::read(result[0], buffer, sizeof buffer)) > 0;) text.append(buffer, n);
  ::close(result[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::rmdir(aside);
  if (text.starts_with("FAIL unshare") || text.starts_with("FAIL umount")) {
    GTEST_SKIP() << "SKIPPED: no mount namespace here: " << text;
  }
  // The child's directory as it sees the hierarchy: the mount point, then "inner". (Guessed
  // from /proc/self/cgroup alone, it was <mount point><job cgroup>/subtree/inner: not there.)
  const std::string prefix = usual + "/inner/pdlaunch-" + std::to_string(child) + "-";
  EXPECT_TRUE(text.starts_with(prefix)) << text;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  // The child's cgroup was removed by its JobCgroup; the test's cgroup removes the rest.
  if (text.starts_with(prefix)) {
    struct stat st {};
    EXPECT_NE(::stat((subtree + "/inner" + text.substr(text.rfind('/'))).c_str(), &st), 0);
  }
}

}  // namespace
}  // namespace pdlaunch
