#include "pdlaunch/process/cgroup_path.h"

#include <gtest/gtest.h>

namespace pdlaunch {
namespace {

// This machine's kind: a hybrid host, v1 controllers plus the unified hierarchy.
constexpr const char* kHybridMountinfo =
    "25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "31 25 0:27 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 "
    "cgroup2 rw,nsdelegate\n"
    "42 31 0:39 / /sys/fs/cgroup/memory rw,relatime shared:11 - cgroup cgroup rw,memory\n";

constexpr const char* kPureV2Mountinfo =
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(OwnCgroupDirTest, PureV2Host) {
  EXPECT_EQ(OwnCgroupDir(kPureV2Mountinfo, "0::/user.slice/user-1000.slice/session-3.scope\n"),
            "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope");
}

TEST(OwnCgroupDirTest, HybridHostUsesTheUnifiedMount) {
  EXPECT_EQ(OwnCgroupDir(kHybridMountinfo, "9:name=systemd:/\n8:pids:/\n1:memory:/x\n0::/\n"),
            "/sys/fs/cgroup/unified");
  EXPECT_EQ(OwnCgroupDir(kHybridMountinfo, "0::/pdlaunch-12-0\n"),
            "/sys/fs/cgroup/unified/pdlaunch-12-0");
}

TEST(OwnCgroupDirUnderTest, TheMountPointPlusTheUnifiedPath) {
  EXPECT_EQ(OwnCgroupDirUnder("/sys/fs/cgroup", "0::/user.slice/session-3.scope\n"),
            "/sys/fs/cgroup/user.slice/session-3.scope");
  EXPECT_EQ(OwnCgroupDirUnder("/sys/fs/cgroup/unified", "9:name=systemd:/\n1:memory:/x\n0::/\n"),
            "/sys/fs/cgroup/unified");
  EXPECT_EQ(OwnCgroupDirUnder("/sys/fs/cgroup", "0::/a\n"), "/sys/fs/cgroup/a");
}

TEST(OwnCgroupDirUnderTest, NoUnifiedLineIsNoDirectory) {
  EXPECT_EQ(OwnCgroupDirUnder("/sys/fs/cgroup", "9:name=systemd:/\n1:memory:/x\n"), std::nullopt);
  EXPECT_EQ(OwnCgroupDirUnder("/sys/fs/cgroup", ""), std::nullopt);
  EXPECT_EQ(OwnCgroupDirUnder("/sys/fs/cgroup", "0::relative\n"), std::nullopt);
}

TEST(OwnCgroupDirTest, ContainerMountOfASubtreeIsTakenOffThePath) {
  // A container whose /sys/fs/cgroup is the host's /kubepods/pod1 subtree.
  const char* mountinfo =
      "700 600 0:30 /kubepods/pod1 /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(OwnCgroupDir(mountinfo, "0::/kubepods/pod1/ctr\n"), "/sys/fs/cgroup/ctr");
  EXPECT_EQ(OwnCgroupDir(mountinfo, "0::/kubepods/pod1\n"), "/sys/fs/cgroup");
  // Not below the mounted subtree (a sibling whose name only starts the same): unusable.
  EXPECT_EQ(OwnCgroupDir(mountinfo, "0::/kubepods/pod10/ctr\n"), std::nullopt);
}

TEST(OwnCgroupDirTest, EscapedMountPoint) {
  const char* mountinfo = "41 31 0:38 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n";
  EXPECT_EQ(OwnCgroupDir(mountinfo, "0::/a\n"), "/mnt/cg two/a");
}

TEST(OwnCgroupDirTest, NoUnifiedHierarchy) {
  const char* v1_only = "42 31 0:39 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  EXPECT_EQ(OwnCgroupDir(v1_only, "0::/\n"), std::nullopt);
  EXPECT_EQ(OwnCgroupDir(kHybridMountinfo, "1:memory:/\n"), std::nullopt);  // no 0:: line
  EXPECT_EQ(OwnCgroupDir(kHybridMountinfo, ""), std::nullopt);
  EXPECT_EQ(OwnCgroupDir("", "0::/\n"), std::nullopt);
  EXPECT_EQ(OwnCgroupDir(kHybridMountinfo, "0::relative\n"), std::nullopt);
  EXPECT_EQ(OwnCgroupDir("garbage - cgroup2\n- cgroup2\n", "0::/\n"), std::nullopt);
}

TEST(CgroupEventsValueTest, ReadsTheKeys) {
  EXPECT_EQ(CgroupEventsValue("populated 1\nfrozen 0\n", "populated"), 1);
  EXPECT_EQ(CgroupEventsValue("populated 0\nfrozen 1\n", "frozen"), 1);
  EXPECT_EQ(CgroupEventsValue("populated 0\n", "frozen"), std::nullopt);
  EXPECT_EQ(CgroupEventsValue("populated x\n", "populated"), std::nullopt);
  EXPECT_EQ(CgroupEventsValue("", "populated"), std::nullopt);
}

}  // namespace
}  // namespace pdlaunch
