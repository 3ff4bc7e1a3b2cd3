#include "pdlaunch/process/device_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>

#include "pdlaunch/plan/training_command.h"  // FindProgram

extern char** environ;

namespace pdlaunch {

namespace {

// Reads `fd` to EOF; false when the deadline passes first or reading fails.
using Deadline = std::chrono::steady_clock::time_point;

int MillisecondsLeft(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

/// Reads `fd` to its end into `output`, at most `max_bytes`; false past `deadline` or the bound.
bool ReadUntilEof(int fd, std::string& output, Deadline deadline, size_t max_bytes) {
  char buffer[4096];
  while (true) {
    const int left = MillisecondsLeft(deadline);
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, left);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    if (output.size() + static_cast<size_t>(n) > max_bytes) return false;
    output.append(buffer, static_cast<size_t>(n));
  }
}

/// Whether `pid` exits before `deadline` (its pidfd polled). Without pidfds (Linux < 5.3) it is
/// taken as exited: the caller's waitpid then blocks, as it did before this bound existed.
bool ExitsBefore(pid_t pid, Deadline deadline) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return true;
  bool exited = false;
  while (true) {
    pollfd pfd{pidfd, POLLIN, 0};
    const int ready = poll(&pfd, 1, MillisecondsLeft(deadline));
    if (ready < 0 && errno == EINTR) continue;
    exited = ready > 0;
    break;
  }
  close(pidfd);
  return exited;
}

int CountDirectoryEntries(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return 0;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

// Files <prefix>0, <prefix>1, ... as long as they exist: one stat() on a machine without them
// (a readdir of /dev cost the 8-rank start-up 0.1 ms; docs/performance.md).
int CountDeviceFiles(const std::string& prefix) {
  int count = 0;
  struct stat info;
  while (count < 4096 && ::stat(fmt::format("{}{}", prefix, count).c_str(), &info) == 0) ++count;
  return count;
}

class SystemDeviceProbe : public DeviceProbe {
 public:
  explicit SystemDeviceProbe(std::string root) : root_(std::move(root)) {}

  int Count(const DeviceFamily& family) override {
    try {
      for (const std::string& program : family.probe_programs) {
        // rocm-smi only where the ROCm driver is (its /dev/kfd): no PATH walk elsewhere.
        struct stat info;
        if (program == "rocm-smi" && ::stat((root_ + "/dev/kfd").c_str(), &info) != 0) continue;
        if (const int n = Run(program); n > 0) return n;
        if (program == "nvidia-smi") {
          if (const int n = CountDirectoryEntries(root_ + "/proc/driver/nvidia/gpus"); n > 0) {
            return n;
          }
        }
      }
      return family.device_files.empty() ? 0 : CountDeviceFiles(root_ + family.device_files);
    } catch (...) {
      return 0;
    }
  }

 private:
  // Most machines lack most of these programs: no fork then (this is on the start-up path).
  static int Run(const std::string& program) {
    const char* path = std::getenv("PATH");
    if (!FindProgram(program, path != nullptr ? path : "/bin:/usr/bin")) return 0;
    if (program == "nvidia-smi") {
      if (auto output = CaptureOutput({program, "-L"})) return CountNvidiaSmiGpus(*output);
    } else if (program == "rocm-smi") {
      if (auto output = CaptureOutput({program, "--showid"})) return CountRocmSmiGpus(*output);
    } else if (program == "npu-smi") {
      if (auto output = CaptureOutput({program, "info"})) return CountNpuSmiChips(*output);
    }
    return 0;
  }

  std::string root_;
};

}  // namespace

pid_t SpawnWithStdout(const std::vector<std::string>& argv, int out_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attr, &signals);
  sigaddset(&signals, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &signals);
  // Its own process group, so that a timeout kills whatever it started too.
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The stdout of `argv`, or nullopt unless it exits 0 within the timeout. The child is reaped.
std::optional<std::string> CaptureOutput(const std::vector<std::string>& argv, int timeout_ms) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  const pid_t pid = SpawnWithStdout(argv, fds[1]);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return std::nullopt;
  }
  // One deadline to the program's exit, not to the end of its output (a program that closed
  // its stdout and hung held --dry_run 25 s against 10 s), and its output bounded (300 MB of it
  // took 528 MB of the launcher's memory): hostile review #38 item 6.
  const Deadline deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string output;
  const bool complete =
      ReadUntilEof(fds[0], output, deadline, kMaxCapturedBytes) && ExitsBefore(pid, deadline);
  close(fds[0]);
  if (!complete) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return output;
}

std::unique_ptr<DeviceProbe> MakeSystemDeviceProbe(std::string root) {
  return std::make_unique<SystemDeviceProbe>(std::move(root));
}

}  // namespace pdlaunch
