#include "run/launch_support.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string_view>
#include <system_error>

#include "base/small_file.h"
#include "base/unique_fd.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/nested_launch.h"
#include "pdlaunch/base/random_seed.h"
#include "pdlaunch/base/seconds.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/cli/echo_choice.h"
#include "pdlaunch/cli/options.h"
#include "pdlaunch/plan/address_lookup.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/numa.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/process/device_probe.h"
#include "pdlaunch/process/numa_probe.h"
#include "pdlaunch/process/pod_console.h"

extern char** environ;

namespace pdlaunch::internal {

namespace fs = std::filesystem;

EnvMap EnvironmentMap() {
  EnvMap env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view text = *entry;
    const size_t equals = text.find('=');
    if (equals != std::string_view::npos) {
      env.emplace(text.substr(0, equals), text.substr(equals + 1));
    }
  }
  return env;
}

std::string NewPodName() {
  std::mt19937 random(static_cast<std::mt19937::result_type>(RandomSeed()));
  std::uniform_int_distribution<int> letter('a', 'z');
  std::string name;
  for (int i = 0; i < 6; ++i) name += static_cast<char>(letter(random));
  return name;
}

const JobToken* TheJobToken() {
  static std::optional<JobToken> token;
  static bool taken = false;
  if (!taken) {
    const std::string name(kJobTokenVariable);
    token = JobToken::FromEnvironment(std::getenv(name.c_str()));
    ::unsetenv(name.c_str());
    taken = true;
  }
  return token ? &*token : nullptr;
}

// Every child also gets kNestedMarker (docs/cli.md, "Nested launches").
std::vector<std::string> ParentEnvironment() {
  const std::string marker = std::string(kNestedMarker) + "=";
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!std::string_view(*entry).starts_with(marker)) env.emplace_back(*entry);
  }
  env = WithProxyBackups(std::move(env));
  env.push_back(NestedMarkerEntry(::getpid()));
  return env;
}

std::optional<int> GivenStartPort(const LaunchOptions& options) {
  return FixedStartPort(options.start_port, GetEnv("FLAGS_START_PORT"),
                        GetEnv("PADDLE_START_PORT"));
}

NodeEnv GatherNodeEnv(const std::string& ips, const std::optional<std::string>& host,
                      std::string_view source) {
  NodeEnv env{GetEnv("POD_IP"), {}, {}};
  if (ips.find(',') != std::string::npos) env.local_addresses = LocalInterfaceAddresses();
  for (const std::string& name : HostNamesToResolve(ips, host, env.pod_ip)) {
    env.resolved[name] = ResolveHostName(name, source);
  }
  return env;
}

fs::path PrepareLogDir(const std::string& log_dir) {
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  if (ec) {
    throw LaunchError(fmt::format("cannot create log directory '{}': {}", log_dir, ec.message()));
  }
  CheckLogDirOwnership(log_dir);
  return fs::absolute(log_dir);
}

void CheckLogDirOwnership(const std::string& log_dir) {
  struct stat st {};
  if (::stat(log_dir.c_str(), &st) != 0) return;  // create_directories said it exists.
  // Its group may write it: with umask 002 (user private groups) every directory is 775, and
  // the group is the user's own; a link planted by a group member still fails O_NOFOLLOW.
  const bool others_write = st.st_uid != ::geteuid() || (st.st_mode & S_IWOTH) != 0;
  // A sticky directory (/tmp's kind) keeps each user's files to that user; the files are opened
  // without following links, so one planted there fails to open rather than being written.
  if (!others_write || (st.st_mode & S_ISVTX) != 0) return;
  throw LaunchError(fmt::format(
      "log directory '{}' can be written by another user ({}; mode {:o}): a file or link planted "
      "there would be written through; use a directory of your own, or make it sticky "
      "(chmod +t)",
      log_dir,
      st.st_uid != ::geteuid() ? fmt::format("owned by uid {}", st.st_uid)
                               : std::string("writable by all"),
      st.st_mode & 07777));
}

std::vector<fs::path> MissingDirectories(const std::string& dir) {
  std::vector<fs::path> missing;
  // Usually it exists: one stat, not the 15 us of getcwd and path arithmetic below.
  struct stat st {};
  if (!dir.empty() && ::stat(dir.c_str(), &st) == 0) return missing;
  std::error_code ec;
  for (fs::path p = fs::absolute(dir, ec).lexically_normal(); !p.empty(); p = p.parent_path()) {
    if (p.filename().empty() && p.has_parent_path() && p != p.root_path()) continue;  // "a/b/"
    if (fs::exists(p, ec) || ec || p == p.root_path()) break;
    missing.push_back(p);
  }
  return missing;
}

void RemoveEmptyDirectories(const std::vector<fs::path>& dirs) {
  std::error_code ec;
  for (const fs::path& dir : dirs) {
    if (!fs::remove(dir, ec)) return;  // Not empty (or gone): its parents are not ours to take.
  }
}

namespace {

// Without TMPDIR: /dev/shm where it is a writable tmpfs, else /tmp. A directory on disk costs a
// mkdir and an rmdir per job that take 0.16 ms together on ext4 mounted with `discard`
// (docs/performance.md); the gloo file store needs no more than memory.
fs::path TempBase() {
  if (std::optional<std::string> tmpdir = GetEnv("TMPDIR")) return *tmpdir;
  struct statfs shm {};
  if (::statfs("/dev/shm", &shm) == 0 && shm.f_type == TMPFS_MAGIC &&
      ::access("/dev/shm", W_OK | X_OK) == 0) {
    return "/dev/shm";
  }
  return "/tmp";
}

}  // namespace

TempDir::TempDir() {
  const fs::path base = TempBase();
  std::string pattern = (base / "tmpXXXXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) ThrowSystemError(errno, "mkdtemp in " + base.string());
  path_ = pattern;
}

TempDir::~TempDir() {
  if (::rmdir(path_.c_str()) == 0) return;  // Usually empty: one call instead of a walk.
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

LocalPorts PlanLocalPorts(std::optional<int> start, int num_local) {
  LocalPorts plan;
  if (start) {
    for (int i = 0; i < num_local; ++i) plan.ports.push_back(*start + i);
    plan.master_port = *start + num_local;
    return plan;
  }
  plan.reservation = MakeLockingPortAllocator()->Reserve(num_local + 1);
  plan.ports = plan.reservation->ports();
  plan.master_port = plan.ports.back();
  plan.ports.pop_back();
  return plan;
}

DeviceEnv DeviceEnvOf(const LaunchOptions& options, const VisibleDevices& visible) {
  if (options.gpus && options.xpus) {
    throw UsageError(fmt::format("{} and {} both list devices: give one of them",
                                 options.FlagName("gpus"), options.FlagName("xpus")));
  }
  return DeviceEnvFrom(visible, options.FlagName("nproc_per_node"),
                       options.FlagName(options.xpus ? "xpus" : "gpus"), options.xpus.has_value());
}

std::optional<std::string> DeviceList(const LaunchOptions& options) {
  return options.xpus ? options.xpus : options.gpus;
}

VisibleDevices VisibleDevicesOfEnvironment() {
  return ReadVisibleDevices([](const std::string& name) { return GetEnv(name.c_str()); });
}

std::optional<DeviceLogSettings> DeviceLogOf(const LaunchOptions& options, const Cluster& cluster,
                                             const std::string& log_dir) {
  if (!options.enable_gpu_log || cluster.mode == DeviceMode::kCpu) return std::nullopt;
  const std::string name = options.job_id.value_or("default") + ".gpu.log";
  // Ascend NPUs (PaddleCustomDevice "npu") through npu-smi, as Paddle 3's nvsmi.py.
  const bool npu = cluster.mode == DeviceMode::kCustom && cluster.family.type == "npu";
  if (cluster.mode != DeviceMode::kGpu && !npu) {
    PDLOG_INFO("gpu log: no sampler for {} devices; {} is not written", cluster.family.type, name);
    return std::nullopt;
  }
  DeviceLogSettings settings;  // The program is looked for once the ranks run (off start-up).
  if (npu) {
    settings.tool = DeviceLogTool::kNpuSmi;
    settings.program = "npu-smi";
  }
  settings.path = (fs::path(log_dir) / name).string();
  if (const std::optional<std::string> period = GetEnv("PDLAUNCH_GPU_LOG_PERIOD")) {
    const std::optional<double> seconds = ParseSeconds(StripSpace(*period));
    if (seconds && *seconds >= 0.05) {
      settings.period_seconds = *seconds;
    } else {
      PDLOG_WARN("PDLAUNCH_GPU_LOG_PERIOD='{}' is not a period of at least 0.05 s: 30 s is used",
                 OneLine(*period));
    }
  }
  settings.deadline_seconds = std::min(3.0, std::max(0.5, settings.period_seconds));
  // The physical indices nvidia-smi knows: the positions in CUDA_VISIBLE_DEVICES mapped back.
  std::vector<int> ids;
  for (const Trainer& trainer : cluster.local_pod().trainers) {
    ids.insert(ids.end(), trainer.devices.begin(), trainer.devices.end());
  }
  settings.labels = PhysicalLabels(ids, GetEnv("CUDA_VISIBLE_DEVICES"));
  return settings;
}

void ApplyNumaBinding(const LaunchOptions& options, const Cluster& cluster,
                      std::vector<SupervisedProcess>& processes) {
  const NumaBinding binding = ParseNumaBinding(options.numa_binding).value_or(NumaBinding::kNone);
  if (binding == NumaBinding::kNone) return;
  if (cluster.mode != DeviceMode::kGpu) {
    PDLOG_INFO("numa binding: {} processes are left alone (only GPUs have a PCI address probe)",
               cluster.family.type);
    return;
  }
  const std::string root = GetEnv("PDLAUNCH_SYSFS_ROOT").value_or("");
  const NumaTopology topology = ReadNumaTopology(root);
  if (topology.node_cpus.empty()) {
    PDLOG_INFO("numa binding: no NUMA node in {}/sys/devices/system/node; processes left alone",
               root);
    return;
  }
  const std::map<std::string, std::string> addresses = NvidiaPciAddresses();
  const std::optional<std::string> visible = GetEnv("CUDA_VISIBLE_DEVICES");
  const std::vector<Trainer>& trainers = cluster.local_pod().trainers;
  std::vector<std::optional<int>> nodes(processes.size());
  for (size_t i = 0; i < processes.size() && i < trainers.size(); ++i) {
    if (trainers[i].devices.empty()) continue;
    const std::string label = PhysicalLabels({trainers[i].devices.front()}, visible).front();
    const auto address = addresses.find(label);
    if (address == addresses.end()) {
      PDLOG_INFO("numa binding: nvidia-smi gave no PCI address for GPU {}", label);
      continue;
    }
    nodes[i] = PciNumaNode(root, address->second);
    // The firmware gives no proximity (-1) on most one-node machines and VMs: the GPU is on the
    // only node there is (nvidia-smi topo -m says NUMA affinity 0 then too).
    if (!nodes[i] && topology.node_cpus.size() == 1) {
      nodes[i] = topology.node_cpus.begin()->first;
      PDLOG_INFO(
          "numa binding: GPU {} ({}) has no NUMA node in sysfs; this machine has one, node {}, "
          "which is used",
          label, address->second, *nodes[i]);
    } else if (!nodes[i]) {
      PDLOG_INFO("numa binding: GPU {} ({}) has no NUMA node in sysfs", label, address->second);
    }
  }
  std::vector<std::string> lines;
  const std::vector<NumaPlacement> placements = PlaceOnNuma(binding, topology, nodes, lines);
  for (const std::string& line : lines) PDLOG_INFO("{}", line);
  for (size_t i = 0; i < processes.size(); ++i) {
    processes[i].spec.cpus = placements[i].cpus;
    int node = placements[i].preferred_node;
    // set_mempolicy takes only nodes this kernel has (a PDLAUNCH_SYSFS_ROOT tree may name others).
    if (node >= 0 && !fs::exists(fmt::format("/sys/devices/system/node/node{}", node))) {
      PDLOG_INFO(
          "numa binding: local process {}: this kernel has no NUMA node {}; its memory "
          "policy is left alone",
          i, node);
      node = -1;
    }
    processes[i].spec.preferred_numa_node = node;
  }
}

DevicePlan ResolveCollectiveDevices(const LaunchOptions& options) {
  auto probe = MakeSystemDeviceProbe();
  return ResolveDevices(DeviceList(options), options.nproc_per_node, options.backend,
                        DeviceEnvOf(options, VisibleDevicesOfEnvironment()), *probe);
}

void WriteTextFile(const std::filesystem::path& path, const std::string& content) {
  // Written over in place and then cut to length, not truncated first: truncating frees the
  // file's blocks and the write allocates them again, which on ext4 mounted with `discard`
  // costs about 0.25 ms (a discard per run; measured, docs/performance.md). Same result.
  // O_NOFOLLOW: a link planted in a shared log directory is not written through.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  bool ok = fd >= 0 && WriteAll(fd, content);
  ok = ok && ::ftruncate(fd, static_cast<off_t>(content.size())) == 0;
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) ThrowSystemError(error, fmt::format("cannot write '{}'", path.string()));
}

std::vector<SupervisedProcess> BuildProcesses(const Cluster& cluster,
                                              const TrainingCommand& command,
                                              const std::filesystem::path& log_dir, bool truncate,
                                              const std::function<EnvList(const Trainer&)>& vars_of,
                                              bool log_by_global_rank) {
  const std::vector<Trainer>& trainers = cluster.local_pod().trainers;
  std::vector<EnvList> vars;
  vars.reserve(trainers.size());
  for (const Trainer& trainer : trainers) vars.push_back(vars_of(trainer));
  SplitEnvironments envs = ComposeEnvironments(ParentEnvironment(), vars);
  std::vector<SupervisedProcess> processes;
  processes.reserve(trainers.size());
  for (size_t i = 0; i < trainers.size(); ++i) {
    const Trainer& trainer = trainers[i];
    SupervisedProcess p;
    p.rank = trainer.global_rank;
    p.role_size = cluster.world_size();
    p.log_path = (log_dir / fmt::format("workerlog.{}", log_by_global_rank ? trainer.global_rank
                                                                           : trainer.local_rank))
                     .string();
    p.spec.executable = command.executable;
    p.spec.argv = command.argv;
    p.spec.env = std::move(envs.own[i]);
    p.spec.shared_env = envs.common;
    p.spec.output_path = p.log_path;  // Created by the child (ProcessSpec::output_path).
    p.spec.output_truncate = truncate;
    processes.push_back(std::move(p));
  }
  return processes;
}

std::vector<SupervisedProcess> BuildTrainerProcesses(
    const Cluster& cluster, const WorldValues& world, const TrainingCommand& command,
    const JobEnv& job, const std::filesystem::path& log_dir, bool truncate, const EnvList& extra) {
  return BuildProcesses(cluster, command, log_dir, truncate, [&](const Trainer& trainer) {
    EnvList vars = TrainerVariables(cluster, trainer, job, world);
    vars.insert(vars.end(), extra.begin(), extra.end());
    return vars;
  });
}

std::vector<SupervisedProcess> BuildPsProcesses(const std::vector<PsProcess>& ps,
                                                const std::map<PsRole, int>& role_sizes,
                                                const TrainingCommand& command,
                                                const std::filesystem::path& log_dir,
                                                bool overwrite) {
  const bool has_worker = std::any_of(ps.begin(), ps.end(),
                                      [](const PsProcess& p) { return p.role == PsRole::kWorker; });
  std::vector<const EnvList*> vars;
  vars.reserve(ps.size());
  for (const PsProcess& one : ps) vars.push_back(&one.env);
  SplitEnvironments envs = ComposeEnvironments(ParentEnvironment(), vars);
  std::vector<SupervisedProcess> processes;
  processes.reserve(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    const PsProcess& one = ps[i];
    SupervisedProcess p;
    p.rank = one.global_id;
    p.role = PsRoleName(one.role);
    const auto size = role_sizes.find(one.role);
    p.role_size = size == role_sizes.end() ? 0 : size->second;
    // Workers finish the job; on a node without workers, the servers' own exit does (Paddle).
    p.primary = !has_worker || one.role == PsRole::kWorker;
    p.log_path = (log_dir / one.log_name).string();
    p.spec.executable = command.executable;
    p.spec.argv = command.argv;
    p.spec.env = std::move(envs.own[i]);
    p.spec.shared_env = envs.common;
    p.spec.output_path = p.log_path;
    p.spec.output_truncate = overwrite;
    processes.push_back(std::move(p));
  }
  return processes;
}

void ChooseEcho(SupervisorOptions& supervisor, const LaunchOptions& options, bool multi_node,
                const std::string& host) {
  if (!options.echo) return;
  supervisor.echo = ParseEchoChoice(*options.echo);
  supervisor.echo_host = multi_node ? host : std::string();
}

void SetPsSupervision(const std::vector<SupervisedProcess>& processes,
                      SupervisorOptions& supervisor, ConsoleSettings& console) {
  for (const SupervisedProcess& p : processes) {
    if (p.role != PsRoleName(PsRole::kWorker)) continue;
    supervisor.echo_path = p.log_path;  // The first local worker's output, live.
    // Paddle's line, only where workers run: a servers-only node completes silently.
    console.primaries_done_message =
        "all workers exit, going to finish parameter server and heter_worker.";
    console.role_stopped_messages = {
        {PsRoleName(PsRole::kHeterWorker), "all heter_worker are killed"},
        {PsRoleName(PsRole::kServer), "all parameter server are killed"}};
    return;
  }
}

void ChooseConsole(ConsoleSettings& console, const std::string& pod) {
  console.pod_name = pod;
  console.print_started = pod.empty();
  // Paddle 3's container __str__: "true" or "1", any case.
  const std::string print_env = AsciiLower(GetEnv("FLAGS_print_launcher_env").value_or(""));
  console.print_env_on_failure = !pod.empty() && (print_env == "true" || print_env == "1");
}

void WriteEnvLogs(const std::vector<SupervisedProcess>& processes, bool truncate) {
  for (size_t i = 0; i < processes.size(); ++i) {
    const SupervisedProcess& p = processes[i];
    if (p.log_path.empty()) continue;
    const fs::path path = fs::path(p.log_path).parent_path() / fmt::format("envlog.{}", i);
    // It holds every variable the launcher had, secrets included: this user's only (Paddle
    // writes it with the umask's 0644).
    const UniqueFd fd(::open(
        path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncate ? O_TRUNC : O_APPEND),
        0600));
    const std::string text = FormatEnvLog(p.spec.shared_env.get(), p.spec.env);
    if (fd.get() < 0 || !WriteAll(fd.get(), text)) {
      PDLOG_ERROR("save pod env log failed because {}: {}", path.string(),
                  std::system_category().message(errno));
    }
  }
}

void WriteEndpointsFile(const std::filesystem::path& log_dir, const std::string& job_id,
                        const std::string& pod, const std::vector<Endpoint>& world, bool truncate) {
  if (pod.empty()) {
    WriteTextFile(log_dir / "endpoints.log", FormatEndpointsLog(world));
    return;
  }
  WritePodLog(log_dir / fmt::format("{}.{}.log", job_id, pod),
              PythonListRepr(EndpointStrings(world)), truncate);
}

void MarkRunInLogs(std::vector<SupervisedProcess>& processes, std::string_view job_id,
                   std::string_view pod) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &local);
  const std::string banner =
      fmt::format("===== pdlaunch: job {}{}{}, run of {} (launcher pid {}) =====\n", job_id,
                  pod.empty() ? "" : ", pod ", pod, when, ::getpid());
  for (SupervisedProcess& p : processes) {
    if (!p.spec.output_truncate) p.spec.output_banner = banner;
  }
}

void WritePodLog(const std::filesystem::path& path, const std::string& topology, bool truncate) {
  // open(2) and write(2), as WriteTextFile: an std::ofstream would set up the C++ locale on the
  // start of every job of today's interface (small_file.h).
  // It holds the launcher's whole environment, secrets included: this user's only, and never
  // written through a planted link.
  const UniqueFd fd(
      ::open(path.c_str(),
             O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncate ? O_TRUNC : O_APPEND), 0600));
  struct stat st {};
  const bool ok = fd.get() >= 0 && ::fstat(fd.get(), &st) == 0;
  std::string text;
  if (ok && st.st_size == 0) {
    text = "{";
    for (const std::string& entry : ParentEnvironment()) {
      const size_t equals = entry.find('=');
      if (equals == std::string::npos) continue;
      text += (text.size() > 1 ? ", " : "") + PythonStrRepr(entry.substr(0, equals)) + ": " +
              PythonStrRepr(entry.substr(equals + 1));
    }
    text += "}\n";
  }
  text += topology + "\n";
  if (!ok || !WriteAll(fd.get(), text)) {
    throw LaunchError(fmt::format("cannot write '{}'", path.string()));
  }
}

}  // namespace pdlaunch::internal
