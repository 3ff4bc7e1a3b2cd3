#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace pdlaunch {

struct WatchdogArea;  // watchdog.cc

/// Kills the job's process groups (and its cgroup, or without one the processes carrying the
/// job's environment marker) if the launcher dies without cleaning up (e.g.
/// SIGKILL). A helper process blocks on a pipe whose write end only the launcher holds; EOF without
/// a prior Disarm() means the launcher is gone, and the helper sends SIGKILL to every registered
/// group (grandchildren included, which the parent-death signal of the ranks does not reach). The
/// helper is a child that a top-level launcher does not wait for at its exit: it exits right after
/// the launcher (or after killing), and is then re-parented and reaped by init; earlier helpers of
/// a launcher that runs several jobs are reaped by it (WatchdogPids), and a launcher inside another
/// pdlaunch job waits for its own (AwaitExit; docs/design.md, Parent death). It ignores terminal
/// signals, sits in its own process group and uses no CPU. On x86-64 it is cloned into the
/// launcher's address space (CLONE_VM: nothing is copied, and the address space outlives a killed
/// launcher for as long as the helper needs it) and makes raw system calls only; elsewhere it is
/// forked.
class Watchdog {
 public:
  /// Starts the helper. It keeps `inherit_fds` open until it exits (see ConsoleEcho: closing the
  /// last reference to an inotify instance blocks for an SRCU grace period, 5-25 ms, which the
  /// helper pays instead of the launcher's exit) and closes every other descriptor. Throws
  /// std::system_error on failure. `remove_if_killed`: directories (the launcher's temporary
  /// ones) the helper removes, with their contents, after killing the groups. `cgroup_dir`: the
  /// job's cgroup (JobCgroup), killed with cgroup.kill and removed; it reaches the processes that
  /// left the registered groups (setsid, double fork). Empty: none. `max_groups`: how many
  /// Register calls it keeps (later ones are ignored). `job_marker`: an environment entry
  /// (`PDLAUNCH_PARENT=<pid>`) that every process the launcher starts carries and their
  /// descendants inherit; the helper also kills every process it finds with it (a scan of
  /// /proc), which reaches those that left the groups where there is no cgroup. Empty: none.
  explicit Watchdog(const std::vector<int>& inherit_fds = {},
                    std::vector<std::string> remove_if_killed = {}, std::string cgroup_dir = {},
                    size_t max_groups = 4096, std::string job_marker = {});
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// Disarms the helper. Never throws, never waits: its memory is freed and it is reaped by a
  /// later Watchdog or WatchdogPids() once it has exited; the last one of a launcher is left to
  /// exit after the launcher (docs/design.md, Parent death).
  ~Watchdog();

  /// Adds a process group to kill should the launcher die. Never throws. A store into the
  /// helper's area when it shares the launcher's memory (no system call, no wake-up of the
  /// helper while the ranks start); a message on the pipe when it was forked.
  void Register(pid_t pgid) noexcept;
  /// Tells the helper the launcher has cleaned up itself; it exits without killing. A forked
  /// helper is told with a message and exits at once. One sharing our memory is told with a
  /// store, no system call, and exits when it sees the pipe's EOF: at the launcher's exit, or
  /// when the next helper starts or AwaitExit is called. Until then it holds the address space,
  /// so that the launcher's exit does not unmap it (50 us at the end of every job here).
  void Disarm() noexcept;
  /// After Disarm: waits until the helper has exited, at most `limit`, and reaps it. Its exit
  /// includes the last close of the echo's inotify instance (8 ms median here), which is why
  /// only a launcher inside another pdlaunch job waits (its outer launcher would otherwise see
  /// the helper as a process its rank left behind). True when it was reaped. Never throws.
  bool AwaitExit(std::chrono::milliseconds limit) noexcept;
  /// The helper's pid.
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  WatchdogArea* area_ = nullptr;  ///< The helper's stack and state, until it has exited.
};

/// The helpers this launcher started that are still its children (running, or exited and not
/// yet reaped): children that are not the job's. Reaps those that have exited first.
std::vector<pid_t> WatchdogPids();

}  // namespace pdlaunch
