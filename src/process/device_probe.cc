#include "pdlaunch/process/device_probe.h"

// Boost.Process v2 and Asio stay in this file and in supervisor.cc (their headers cost seconds
// of compile time per file).
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect_pipe.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/stdio.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>

#include "pdlaunch/base/logging.h"
#include "pdlaunch/plan/training_command.h"  // FindProgram

namespace pdlaunch {

namespace {

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
      if (auto output = Capture({program, "-L"})) return CountNvidiaSmiGpus(*output);
    } else if (program == "rocm-smi") {
      if (auto output = Capture({program, "--showid"})) return CountRocmSmiGpus(*output);
    } else if (program == "npu-smi") {
      if (auto output = Capture({program, "info"})) return CountNpuSmiChips(*output);
    }
    return 0;
  }

  // CaptureOutput, saying so when the program hung: the devices it would have counted are not,
  // and the job goes on with the next way to count them (device files, or CPU mode).
  static std::optional<std::string> Capture(const std::vector<std::string>& argv) {
    CaptureEnd end{};
    std::optional<std::string> output = CaptureOutput(argv, kProbeTimeoutMs, &end);
    if (end == CaptureEnd::kTimedOut) {
      PDLOG_WARN(
          "{} {} did not answer within {} s and was stopped: its devices are not counted (a hung "
          "{} usually means a broken or busy driver; run it by hand to see)",
          argv[0], argv[1], kProbeTimeoutMs / 1000, argv[0]);
    }
    return output;
  }

  std::string root_;
};

}  // namespace

namespace {

namespace asio = boost::asio;
namespace bp2 = boost::process::v2;

// What Boost.Process v2 has no option for, as its own extension point (an initializer whose
// on_exec_setup runs in the child between fork and exec): a process group of its own, so that a
// timeout kills whatever the probe started too; an empty signal mask and SIGPIPE's default (the
// launcher blocks its signals and ignores SIGPIPE, and both would survive the exec).
struct ProbeChildSetup {
  template <typename Launcher>
  bp2::error_code on_exec_setup(Launcher& /*launcher*/, const bp2::filesystem::path& /*exe*/,
                                const char* const* /*argv*/) {
    sigset_t none;
    sigemptyset(&none);
    if (::setpgid(0, 0) != 0 || ::sigprocmask(SIG_SETMASK, &none, nullptr) != 0 ||
        ::signal(SIGPIPE, SIG_DFL) == SIG_ERR) {
      return bp2::error_code(errno, bp2::system_category());
    }
    return {};
  }
  // After a failed exec, v2's child (its errno already sent to the parent) calls ::exit(), which
  // would run the launcher's atexit handlers and static destructors in the child: _exit() ends
  // it first. Boost 1.81 selects this hook through a five-argument signature and then calls the
  // four-argument one, so both are declared.
  template <typename Launcher>
  void on_exec_error(Launcher& /*launcher*/, const bp2::filesystem::path& /*exe*/,
                     const char* const*& /*argv*/, const bp2::error_code& /*ec*/) {
    ::_exit(127);
  }
  template <typename Launcher>
  void on_exec_error(Launcher& /*launcher*/, const bp2::error_code& /*ec*/,
                     const bp2::filesystem::path& /*exe*/, const char* const*& /*argv*/,
                     const bp2::error_code& /*ec2*/) {
    ::_exit(127);
  }
};

// `argv` started by Boost.Process v2's default launcher (fork, the initializers, exec; an exec
// that fails is reported back and throws), stdin and stderr on /dev/null, stdout on `out`.
template <typename Stdout>
std::optional<bp2::process> StartProbe(asio::io_context& io, const std::vector<std::string>& argv,
                                       Stdout&& out) {
  if (argv.empty()) return std::nullopt;
  const char* path = std::getenv("PATH");
  const std::optional<std::string> exe =
      FindProgram(argv.front(), path != nullptr ? path : "/bin:/usr/bin");
  if (!exe) return std::nullopt;
  try {
    return bp2::process(
        io, bp2::filesystem::path(*exe), std::vector<std::string>(argv.begin() + 1, argv.end()),
        bp2::process_stdio{nullptr, std::forward<Stdout>(out), nullptr}, ProbeChildSetup{});
  } catch (const std::exception&) {  // Not found, not executable, fork refused.
    return std::nullopt;
  }
}

}  // namespace

pid_t SpawnWithStdout(const std::vector<std::string>& argv, int out_fd) {
  asio::io_context io;
  std::optional<bp2::process> probe = StartProbe(io, argv, out_fd);
  if (!probe) return -1;
  const pid_t pid = probe->id();
  // The caller waits for it on its own loop (device_log.cc, through a pidfd): v2 lets it go.
  static_cast<void>(probe->detach());
  return pid;
}

// The stdout of `argv`, or nullopt unless it exits 0 within the timeout. The child is reaped.
// One deadline to the program's exit, not to the end of its output (a program that closed its
// stdout and hung held --dry_run 25 s against 10 s), and its output bounded (300 MB of it took
// 528 MB of the launcher's memory): hostile review #38 item 6. The reads, the wait for the exit
// (v2's process handle, a pidfd) and the deadline run on an Asio loop of this call's own.
std::optional<std::string> CaptureOutput(const std::vector<std::string>& argv, int timeout_ms,
                                         CaptureEnd* end) {
  CaptureEnd ignored_end{};
  CaptureEnd& how = end != nullptr ? *end : ignored_end;
  how = CaptureEnd::kNotStarted;
  asio::io_context io;
  asio::readable_pipe from_child(io);
  asio::writable_pipe to_parent(io);
  boost::system::error_code ec;
  asio::connect_pipe(from_child, to_parent, ec);
  if (ec) return std::nullopt;
  std::optional<bp2::process> probe = StartProbe(io, argv, to_parent);
  to_parent.close(ec);
  if (!probe) return std::nullopt;
  const pid_t pid = probe->id();
  std::string output;
  std::array<char, 4096> chunk{};
  bool eof = false;
  bool over = false;
  std::optional<int> exit_code;
  std::function<void(const boost::system::error_code&, size_t)> on_read =
      [&](const boost::system::error_code& read_ec, size_t n) {
        if (output.size() + n > kMaxCapturedBytes) {
          over = true;
          return;
        }
        output.append(chunk.data(), n);
        if (read_ec) {
          eof = true;  // EOF, or the pipe failed: nothing more comes either way.
          return;
        }
        from_child.async_read_some(asio::buffer(chunk), on_read);
      };
  from_child.async_read_some(asio::buffer(chunk), on_read);
  probe->async_wait(
      [&](const boost::system::error_code& wait_ec, int code) { exit_code = wait_ec ? -1 : code; });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!(eof && exit_code) && !over && io.run_one_until(deadline) > 0) {
  }
  const bool complete = eof && exit_code && !over;
  if (!complete) {
    how = over ? CaptureEnd::kTooLong : CaptureEnd::kTimedOut;
    ::kill(-pid, SIGKILL);  // The group: whatever it started goes too.
    from_child.close(ec);
    // SIGKILL ends it: its wait completes at once; bounded all the same.
    const auto reap_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!exit_code && io.run_one_until(reap_deadline) > 0) {
    }
    if (!exit_code) static_cast<void>(probe->detach());  // Unkillable (D state): let go.
    return std::nullopt;
  }
  how = *exit_code == 0 ? CaptureEnd::kOk : CaptureEnd::kFailed;
  if (*exit_code != 0) return std::nullopt;
  return output;
}

std::unique_ptr<DeviceProbe> MakeSystemDeviceProbe(std::string root) {
  return std::make_unique<SystemDeviceProbe>(std::move(root));
}

}  // namespace pdlaunch
