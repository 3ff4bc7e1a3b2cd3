#pragma once

#include <sys/types.h>

namespace pdlaunch {

/// Kills the job's process groups if the launcher dies without cleaning up (e.g. SIGKILL).
/// A forked helper process blocks on a pipe whose write end only the launcher holds; EOF without
/// a prior Disarm() means the launcher is gone, and the helper sends SIGKILL to every registered
/// group (grandchildren included, which the parent-death signal of the ranks does not reach).
/// The helper ignores terminal signals, sits in its own process group and uses no CPU.
class Watchdog {
 public:
  /// Forks the helper. Throws std::system_error on failure.
  Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  /// Disarms and reaps the helper. Never throws.
  ~Watchdog();

  /// Adds a process group to kill should the launcher die. Never throws.
  void Register(pid_t pgid) noexcept;
  /// Tells the helper the launcher has cleaned up itself; it exits without killing.
  void Disarm() noexcept;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace pdlaunch
