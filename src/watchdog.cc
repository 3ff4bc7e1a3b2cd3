#include "pdlaunch/watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "pdlaunch/errors.h"
#include "pdlaunch/job_cgroup.h"

namespace pdlaunch {
namespace {

/// One message on the pipe; 8 bytes, so each write is atomic.
struct Message {
  char op;  // 'R': register `pgid`; 'Q': the launcher cleaned up, exit quietly.
  char padding[3];
  int32_t pgid;
};

bool ReadMessage(int fd, Message* message) {
  size_t got = 0;
  auto* bytes = reinterpret_cast<char*>(message);
  while (got < sizeof *message) {
    const ssize_t n = ::read(fd, bytes + got, sizeof *message - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

void CloseAllExcept(std::vector<int> keep) {
  keep.push_back(2);  // Never closed: it becomes /dev/null.
  std::sort(keep.begin(), keep.end());
  unsigned first = 3;
  for (int fd : keep) {
    if (fd < 3) continue;
    if (static_cast<unsigned>(fd) > first) {
      ::syscall(SYS_close_range, first, static_cast<unsigned>(fd - 1), 0U);
    }
    first = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, first, ~0U, 0U);
}

void DetachFromLauncher(int read_fd, const std::vector<int>& inherit_fds) {
  ::setpgid(0, 0);  // Out of the terminal's foreground group: Ctrl-C is not for us.
  for (int sig :
       {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) {
    ::signal(sig, SIG_IGN);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Hold nothing of the launcher's: not its console (a reader waiting for EOF), not its log
  // files, not its port locks.
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2 && devnull >= 0; ++fd) ::dup2(devnull, fd);
  std::vector<int> keep = inherit_fds;
  keep.push_back(read_fd);
  CloseAllExcept(std::move(keep));
}

[[noreturn]] void WatchdogMain(int read_fd, const std::vector<int>& inherit_fds,
                               const std::vector<std::string>& remove_if_killed,
                               const std::string& cgroup_dir) {
  DetachFromLauncher(read_fd, inherit_fds);
  std::vector<pid_t> groups;
  Message message{};
  while (ReadMessage(read_fd, &message)) {
    if (message.op == 'Q') ::_exit(0);
    if (message.op == 'R') groups.push_back(message.pgid);
  }
  // EOF without 'Q': the launcher died without tearing down. Nothing else will stop these.
  if (!cgroup_dir.empty()) KillAndRemoveCgroup(cgroup_dir, 5.0);
  for (pid_t pgid : groups) ::kill(-pgid, SIGKILL);
  for (const std::string& path : remove_if_killed) {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  ::_exit(0);
}

}  // namespace

Watchdog::Watchdog(const std::vector<int>& inherit_fds,
                   std::vector<std::string> remove_if_killed, std::string cgroup_dir) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) ThrowSystemError(errno, "pipe2 for the watchdog");
  pid_ = ::fork();
  if (pid_ == 0) WatchdogMain(fds[0], inherit_fds, remove_if_killed, cgroup_dir);
  const int fork_errno = errno;
  ::close(fds[0]);
  if (pid_ < 0) {
    ::close(fds[1]);
    ThrowSystemError(fork_errno, "cannot fork the watchdog");
  }
  fd_ = fds[1];
}

Watchdog::~Watchdog() { Disarm(); }

void Watchdog::Register(pid_t pgid) noexcept {
  if (fd_ < 0) return;
  const Message message{'R', {}, static_cast<int32_t>(pgid)};
  while (::write(fd_, &message, sizeof message) < 0 && errno == EINTR) {
  }
}

void Watchdog::Disarm() noexcept {
  if (fd_ < 0) return;
  const Message message{'Q', {}, 0};
  while (::write(fd_, &message, sizeof message) < 0 && errno == EINTR) {
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace pdlaunch
