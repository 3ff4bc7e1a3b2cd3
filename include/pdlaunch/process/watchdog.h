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
/// group (grandchildren included, which the parent-death signal of the ranks does not reach).
/// Disarmed, it exits at once; the launcher reaps every helper it started before it exits
/// (ReapWatchdogs), and earlier helpers of a launcher that runs several jobs at the next one's
/// start, so that no `launch-watchdog` zombie is left to a PID 1 that does not reap (only a
/// SIGKILLed launcher leaves its helper to be reaped by others). It ignores terminal signals,
/// sits in its own process group and uses no CPU. On x86-64 it is cloned into the launcher's
/// address space (CLONE_VM: nothing is copied, and the address space outlives a killed launcher
/// for as long as the helper needs it) and makes raw system calls only; elsewhere it is forked.
class Watchdog {
 public:
  /// Starts the helper. It closes every descriptor but its end of the pipe (and 0-2, on
  /// /dev/null). Throws
  /// std::system_error on failure. `remove_if_killed`: directories (the launcher's temporary
  /// ones) the helper removes, with their contents, after killing the groups. `cgroup_dir`: the
  /// job's cgroup (JobCgroup), killed with cgroup.kill and removed; it reaches the processes that
  /// left the registered groups (setsid, double fork). Empty: none. `max_groups`: how many
  /// Register calls it keeps (later ones are ignored). `job_marker`: an environment entry
  /// (`PDLAUNCH_PARENT=<pid>`) that every process the launcher starts carries and their
  /// descendants inherit; the helper also kills every process it finds with it (a scan of
  /// /proc), which reaches those that left the groups where there is no cgroup. Empty: none.
  explicit Watchdog(std::vector<std::string> remove_if_killed = {}, std::string cgroup_dir = {},
                    size_t max_groups = 4096, std::string job_marker = {});
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// Disarms the helper. Never throws, never waits: its memory is freed and it is reaped by a
  /// later Watchdog, WatchdogPids() or ReapWatchdogs() once it has exited.
  ~Watchdog();

  /// Adds a process group to kill should the launcher die. Never throws. A store into the
  /// helper's area when it shares the launcher's memory (no system call, no wake-up of the
  /// helper while the ranks start); a message on the pipe when it was forked.
  void Register(pid_t pgid) noexcept;
  /// Tells the helper the launcher has cleaned up itself; it exits without killing, at once (a
  /// forked helper is told with a message, one sharing our memory with a store), and closes the
  /// pipe.
  void Disarm() noexcept;
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

/// Waits for every helper this launcher started to exit, until `limit` at most, and reaps them;
/// a launcher calls it on its way out (after Disarm, a helper exits within microseconds).
/// Returns how many are still unreaped. Never throws.
size_t ReapWatchdogs(std::chrono::milliseconds limit) noexcept;

}  // namespace pdlaunch
