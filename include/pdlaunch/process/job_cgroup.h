#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace pdlaunch {

/// The job's own cgroup v2 directory, `pdlaunch-<pid>-<n>` under the launcher's own cgroup (so a
/// launcher inside a rank nests under its parent's job). Every rank is born in it (clone3 with
/// CLONE_INTO_CGROUP; where the kernel lacks it, the forked child writes itself into
/// cgroup.procs before exec), and so is everything a rank starts, whatever session or process
/// group it moves to: a daemon that called setsid() and double-forked is still found (Members)
/// and killed (Kill: cgroup.kill, Linux 5.14). No controller is enabled: the cgroup only
/// contains, it never limits.
class JobCgroup {
 public:
  /// Creates the directory. Returns null, with the reason in `*why_not`, where that cannot be
  /// done (no cgroup2 mount, a v1-only host, no permission to create under the launcher's
  /// cgroup, a kernel without cgroup.kill); the caller then falls back (see Supervise).
  static std::unique_ptr<JobCgroup> Create(std::string* why_not);
  /// Kills what is left (cgroup.kill), waits up to 5 s for it to be gone and removes the
  /// directory with any cgroups nested launchers left below it. Never throws.
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& dir() const { return dir_; }
  /// The directory (O_PATH), for clone3's CLONE_INTO_CGROUP.
  int dir_fd() const { return dir_fd_; }
  /// cgroup.procs, open for writing: a forked child writes "0" to it to move itself in.
  int procs_fd() const { return procs_fd_; }
  /// Every process in the cgroup and the cgroups below it. Never throws.
  std::vector<pid_t> Members() const noexcept;
  /// False once no process is left in the cgroup or below it (cgroup.events). Never throws.
  bool Populated() const noexcept;
  /// Removes the directory if nothing is in it (rmdir fails with EBUSY while a process or a
  /// nested cgroup is): at the end of a clean job one system call both checks and cleans up,
  /// and the destructor has nothing left to do. True when it is gone. Never throws.
  bool RemoveIfEmpty() noexcept;
  /// The processes in the cgroup itself, not in the cgroups below it (those of nested
  /// launchers, which stop their own jobs). Never throws.
  std::vector<pid_t> DirectMembers() const noexcept;
  /// Writes 1 to cgroup.kill: SIGKILL to every process of the tree, race-free against forks.
  bool Kill() const noexcept;
  /// Waits (inotify on cgroup.events, no polling) until no process is left or `seconds` pass.
  /// Returns true when empty.
  bool WaitEmpty(double seconds) const noexcept;

 private:
  JobCgroup(std::string dir, int dir_fd, int procs_fd)
      : dir_(std::move(dir)), dir_fd_(dir_fd), procs_fd_(procs_fd) {}

  std::string dir_;
  int dir_fd_ = -1;
  int procs_fd_ = -1;
  bool removed_ = false;  ///< RemoveIfEmpty succeeded.
};

/// Waits (inotify on cgroup.events, no polling) until the cgroup tree at `dir` has no process or
/// `seconds` pass. Returns true when empty. Never throws.
bool WaitCgroupEmpty(const std::string& dir, double seconds) noexcept;

/// Kills every process of the cgroup tree at `dir` (cgroup.kill), waits up to `seconds` for it to
/// empty and removes the directories, deepest first. Used by ~JobCgroup and by the watchdog when
/// the launcher was SIGKILLed. Never throws. Returns true when removed.
bool KillAndRemoveCgroup(const std::string& dir, double seconds) noexcept;

}  // namespace pdlaunch
