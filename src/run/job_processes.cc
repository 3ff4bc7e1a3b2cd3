#include "run/job_processes.h"

#include <fmt/format.h>

#include <algorithm>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/seconds.h"
#include "pdlaunch/base/switches.h"
#include "pdlaunch/options/echo_choice.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/numa.h"
#include "pdlaunch/process/numa_probe.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {

namespace fs = std::filesystem;

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
  if (const std::optional<std::string> period = ReadSwitch(Switch::kGpuLogPeriod)) {
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
  const std::string root = ReadSwitch(Switch::kSysfsRoot).value_or("");
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

}  // namespace pdlaunch::internal
