#pragma once

// A run's processes and how they are supervised (internal to run/): the trainers and the
// parameter-server roles as processes, their console and echo, the GPU log, NUMA binding.

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/topology.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/process/console_status.h"
#include "pdlaunch/process/device_log.h"
#include "pdlaunch/process/supervisor.h"

namespace pdlaunch::internal {

/// The <job_id>.gpu.log of a collective job (docs/cli.md, "GPU log"): GPU mode with
/// --enable_gpu_log (the default), else none, saying why at INFO once (XPU and custom devices
/// have no sampler); the sampler itself says so when nvidia-smi is not on PATH. The period is
/// PDLAUNCH_GPU_LOG_PERIOD (seconds, default 30).
std::optional<DeviceLogSettings> DeviceLogOf(const LaunchOptions& options, const Cluster& cluster,
                                             const std::string& log_dir);

/// --numa_binding (docs/cli.md, "NUMA binding"): sets each trainer process's CPUs and preferred
/// memory node from the NUMA node of its first GPU (nvidia-smi's PCI address, then sysfs under
/// PDLAUNCH_SYSFS_ROOT, "" by default). Processes without a GPU, or whose node is unknown, are
/// left alone with one INFO line each. `processes` are the local trainers, in order.
void ApplyNumaBinding(const LaunchOptions& options, const Cluster& cluster,
                      std::vector<SupervisedProcess>& processes);

/// --echo for a run: the choice, and the node's host in the prefix when the job spans nodes
/// (`multi_node`). Without --echo the supervisor echoes `echo_path` as it is.
void ChooseEcho(SupervisorOptions& supervisor, const LaunchOptions& options, bool multi_node,
                const std::string& host);

/// The console of a run (docs/cli.md, "Console"): today's, its lines naming `pod`, or with an
/// empty `pod` the legacy one and its "launch proc_id" lines.
void ChooseConsole(ConsoleSettings& console, const std::string& pod);

/// The local trainers of `cluster` as processes to supervise: `command` with the parent's
/// environment, TrainerVariables and then `extra` (elastic), output to
/// `log_dir`/workerlog.<local rank> (truncated when `truncate`). No file is opened here: each
/// child creates its own log, the supervisor those it echoes (ProcessSpec::output_path).
std::vector<SupervisedProcess> BuildTrainerProcesses(const Cluster& cluster,
                                                     const WorldValues& world,
                                                     const TrainingCommand& command,
                                                     const JobEnv& job,
                                                     const std::filesystem::path& log_dir,
                                                     bool truncate, const EnvList& extra = {});

/// The local trainers of `cluster` as processes to supervise, each with the parent's
/// environment and `vars_of(trainer)` over it, output to `log_dir`/workerlog.<local rank> (or
/// <global rank>: RPC jobs).
std::vector<SupervisedProcess> BuildProcesses(const Cluster& cluster,
                                              const TrainingCommand& command,
                                              const std::filesystem::path& log_dir, bool truncate,
                                              const std::function<EnvList(const Trainer&)>& vars_of,
                                              bool log_by_global_rank = false);

/// This node's parameter-server processes to supervise: `command` with the parent's environment
/// and each process's variables, output to `log_dir`/its log name; `role_sizes` for the ABORT
/// line. Workers are the primaries (their clean exit completes the job); on a node without
/// workers the servers are.
std::vector<SupervisedProcess> BuildPsProcesses(const std::vector<PsProcess>& ps,
                                                const std::map<PsRole, int>& role_sizes,
                                                const TrainingCommand& command,
                                                const std::filesystem::path& log_dir,
                                                bool overwrite);

/// Paddle's PS supervision: the first local worker echoed live, and the lines Paddle logs when
/// the workers are done and the servers stopped (only where workers run).
void SetPsSupervision(const std::vector<SupervisedProcess>& processes,
                      SupervisorOptions& supervisor, ConsoleSettings& console);

}  // namespace pdlaunch::internal
