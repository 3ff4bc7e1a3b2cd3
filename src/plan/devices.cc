#include "pdlaunch/plan/devices.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/cli/options.h"  // PythonListRepr
#include "pdlaunch/plan/training_command.h"

extern char** environ;

namespace pdlaunch {

namespace {

// A driver in a bad state can make nvidia-smi hang for minutes; the job should not wait for it.
constexpr int kProbeTimeoutMs = 10000;

// `flag`: the name the list was given under (--gpus, --devices, PADDLE_DEVICES).
int ParseDeviceId(const std::string& token, const std::string& flag) {
  const bool digits = !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || token.size() > 9) {
    throw UsageError(fmt::format("{}: '{}' is not a device id", flag, token));
  }
  return std::stoi(token);
}

// CUDA enumerates CUDA_VISIBLE_DEVICES up to the first invalid entry, so "-1" hides every GPU.
int CountVisibleDevices(const std::string& cuda_visible_devices) {
  int count = 0;
  for (const std::string& entry : SplitAndStrip(cuda_visible_devices, ',')) {
    if (entry.empty() || entry.front() == '-') break;
    ++count;
  }
  return count;
}

// --gpus with a non-empty CUDA_VISIBLE_DEVICES: physical ids become positions in it.
std::vector<int> RelativeIds(const std::string& gpus, const std::vector<std::string>& tokens,
                             const std::string& cuda_visible_devices, const std::string& flag,
                             DevicePlan& plan) {
  const std::vector<std::string> visible = SplitAndStrip(cuda_visible_devices, ',');
  std::vector<int> ids;
  for (const std::string& token : tokens) {
    ParseDeviceId(token, flag);
    auto it = std::find(visible.begin(), visible.end(), token);
    if (it == visible.end()) {
      throw UsageError(fmt::format("Can't find your gpus {} in CUDA_VISIBLE_DEVICES[{}].", token,
                                   cuda_visible_devices));
    }
    ids.push_back(static_cast<int>(it - visible.begin()));
  }
  plan.info.push_back(fmt::format(
      "Change selected_gpus into reletive values. --ips:{} will change into relative_ips:[{}] "
      "according to your CUDA_VISIBLE_DEVICES:{}",
      gpus, fmt::join(ids, ", "), PythonListRepr(visible)));
  return ids;
}

std::vector<int> GpusFromFlag(const std::string& gpus, const DeviceEnv& env, DeviceProbe& probe,
                              DevicePlan& plan) {
  std::vector<std::string> tokens = SplitAndStrip(gpus, ',');
  if (tokens.empty()) tokens.emplace_back();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (std::find(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens[i]) !=
        tokens.begin() + static_cast<std::ptrdiff_t>(i)) {
      plan.warnings.push_back(
          fmt::format("{}={} lists device {} more than once: its processes share that device",
                      env.gpus_name, gpus, tokens[i]));
      break;
    }
  }
  const std::string cvd = env.cuda_visible_devices.value_or("");
  if (!cvd.empty()) return RelativeIds(gpus, tokens, cvd, env.gpus_name, plan);
  std::vector<int> ids;
  for (const std::string& token : tokens) ids.push_back(ParseDeviceId(token, env.gpus_name));
  if (probe.CountGpus() == 0) {
    plan.warnings.push_back(fmt::format(
        "{}={} given but no GPU was found on this machine; running as asked", env.gpus_name, gpus));
  }
  return ids;
}

std::vector<int> FindGpus(const std::optional<std::string>& gpus, const DeviceEnv& env,
                          DeviceProbe& probe, DevicePlan& plan) {
  if (gpus) return GpusFromFlag(*gpus, env, probe, plan);
  const std::string cvd = env.cuda_visible_devices.value_or("");
  const int count = cvd.empty() ? probe.CountGpus() : CountVisibleDevices(cvd);
  std::vector<int> ids;
  for (int id = 0; id < count; ++id) ids.push_back(id);
  return ids;
}

std::vector<std::vector<int>> SplitAmongProcesses(const std::vector<int>& ids,
                                                  const std::optional<int>& nproc_per_node) {
  const int count = static_cast<int>(ids.size());
  const int nproc = nproc_per_node.value_or(count);
  if (count % nproc != 0) {
    throw UsageError(
        fmt::format("gpus' number:{} mod args.nproc_per_node:{} must == 0", count, nproc));
  }
  const int chunk = count / nproc;
  std::vector<std::vector<int>> per_proc;
  for (int first = 0; first < count; first += chunk) {
    per_proc.emplace_back(ids.begin() + first, ids.begin() + first + chunk);
  }
  return per_proc;
}

DevicePlan CpuPlan(const std::optional<int>& nproc_per_node, DevicePlan plan) {
  plan.mode = DeviceMode::kCpu;
  plan.backend = "gloo";
  plan.mode_line = "launch train in CPU mode";
  plan.devices_per_proc.assign(static_cast<size_t>(nproc_per_node.value_or(1)), {});
  return plan;
}

void CheckBackend(const std::string& backend) {
  if (backend != "auto" && backend != "nccl" && backend != "gloo") {
    throw UsageError(
        fmt::format("--backend: '{}' is not supported (use auto, nccl or gloo)", backend));
  }
}

// Reads `fd` to EOF; false when the deadline passes first or reading fails.
bool ReadUntilEof(int fd, std::string& output) {
  using std::chrono::steady_clock;
  const auto deadline = steady_clock::now() + std::chrono::milliseconds(kProbeTimeoutMs);
  char buffer[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return false;
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n == 0;
    output.append(buffer, static_cast<size_t>(n));
  }
}

// Starts `argv` (no shell) with stdin and stderr on /dev/null and stdout on `out_fd`.
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
std::optional<std::string> CaptureOutput(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  const pid_t pid = SpawnWithStdout(argv, fds[1]);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return std::nullopt;
  }
  std::string output;
  const bool complete = ReadUntilEof(fds[0], output);
  close(fds[0]);
  if (!complete) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!complete || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return output;
}

int CountGpuLines(const std::string& output) {
  int count = 0;
  for (size_t begin = 0; begin < output.size();) {
    if (output.compare(begin, 4, "GPU ") == 0) ++count;
    const size_t end = output.find('\n', begin);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return count;
}

int CountDirectoryEntries(const char* path) {
  DIR* dir = opendir(path);
  if (dir == nullptr) return 0;
  int count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

class SystemDeviceProbe : public DeviceProbe {
 public:
  explicit SystemDeviceProbe(std::string nvidia_smi) : nvidia_smi_(std::move(nvidia_smi)) {}

  int CountGpus() override {
    try {
      // Most CPU machines have no nvidia-smi: skip the fork then (it is on the start-up path).
      const char* path = std::getenv("PATH");
      if (FindProgram(nvidia_smi_, path != nullptr ? path : "/bin:/usr/bin")) {
        if (auto output = CaptureOutput({nvidia_smi_, "-L"})) return CountGpuLines(*output);
      }
      return CountDirectoryEntries("/proc/driver/nvidia/gpus");
    } catch (...) {
      return 0;
    }
  }

 private:
  std::string nvidia_smi_;
};

}  // namespace

std::unique_ptr<DeviceProbe> MakeSystemDeviceProbe(std::string nvidia_smi) {
  return std::make_unique<SystemDeviceProbe>(std::move(nvidia_smi));
}

DevicePlan ResolveDevices(const std::optional<std::string>& gpus,
                          const std::optional<int>& nproc_per_node, const std::string& backend,
                          const DeviceEnv& env, DeviceProbe& probe) {
  CheckBackend(backend);
  if (nproc_per_node) CheckProcessCount(env.nproc_per_node_name, *nproc_per_node, 1);
  DevicePlan plan;
  if (backend == "gloo") {
    if (gpus) {
      plan.warnings.push_back(
          fmt::format("{}={} ignored: --backend=gloo runs on CPU", env.gpus_name, *gpus));
    }
    return CpuPlan(nproc_per_node, std::move(plan));
  }
  const std::vector<int> ids = FindGpus(gpus, env, probe, plan);
  if (ids.empty()) {
    if (backend == "nccl") {
      throw LaunchError(
          "--backend=nccl needs a GPU, but none was found on this machine; "
          "pass --gpus or use --backend=gloo");
    }
    return CpuPlan(nproc_per_node, std::move(plan));
  }
  plan.mode = DeviceMode::kGpu;
  plan.backend = "nccl";
  plan.mode_line = "launch train in GPU mode!";
  plan.devices_per_proc = SplitAmongProcesses(ids, nproc_per_node);
  return plan;
}

}  // namespace pdlaunch
