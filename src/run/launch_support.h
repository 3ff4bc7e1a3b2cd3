#pragma once

// Pieces shared by the run paths of the launcher (launch.cc: collective, launch_ps.cc: parameter
// server, launch_elastic.cc: elastic). Internal to src/.

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/base/environment.h"
#include "pdlaunch/cli/master_config.h"
#include "pdlaunch/cli/options.h"
#include "pdlaunch/coord/elastic.h"
#include "pdlaunch/coord/job_token.h"
#include "pdlaunch/coord/kv_store.h"
#include "pdlaunch/coord/node_exchange.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/topology.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/process/console_status.h"
#include "pdlaunch/process/device_log.h"
#include "pdlaunch/process/job_controls.h"
#include "pdlaunch/process/supervisor.h"

namespace pdlaunch::internal {

/// The job token (docs/master.md, "Exposure"): read from PDLAUNCH_JOB_TOKEN at the first call
/// and removed from this process's environment, so that no child (a rank, a probe, a hook)
/// inherits it; nullptr without one. The first call throws UsageError for a malformed one.
const JobToken* TheJobToken();

/// The environment as a map, variables set to "" included (PaddleCloud detection counts them).
EnvMap EnvironmentMap();

/// A pod name as Paddle makes them: six random lowercase letters.
std::string NewPodName();

/// The launcher's environment as "NAME=value" entries.
std::vector<std::string> ParentEnvironment();

/// The fixed start port: --start_port, FLAGS_START_PORT, PADDLE_START_PORT, in that order.
std::optional<int> GivenStartPort(const LaunchOptions& options);

/// POD_IP, the local interface addresses (only when `ips` lists several nodes) and the
/// addresses of the host names in `ips` that need resolving (forward only).
NodeEnv GatherNodeEnv(const std::string& ips, const std::optional<std::string>& host,
                      std::string_view source = "--ips");

/// The ports of a node's local trainers, plus MASTER_PORT.
struct LocalPorts {
  std::vector<int> ports;  ///< One per local trainer.
  int master_port = 0;
  std::unique_ptr<PortReservation> reservation;  ///< Held for the whole job when free ports.
};

/// `start`, start+1, ... and MASTER_PORT after them when `start` is given; otherwise
/// `num_local` + 1 free locked ports, the last one MASTER_PORT.
LocalPorts PlanLocalPorts(std::optional<int> start, int num_local);

/// ResolveDevices' environment input: the visible-devices variables, and the names the device
/// list and the process count were given under (LaunchOptions::FlagName), for its messages.
/// UsageError when both --gpus (or an alias) and --xpus are given.
DeviceEnv DeviceEnvOf(const LaunchOptions& options, const VisibleDevices& visible);

/// The device list: --xpus (or --selected_xpus) when given, else --devices and its aliases.
std::optional<std::string> DeviceList(const LaunchOptions& options);

/// The visible-devices variables of this process's environment.
VisibleDevices VisibleDevicesOfEnvironment();

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

/// The collective device plan: the device list, --nproc_per_node, --backend, the visible-devices
/// variables and the system's devices (process/device_probe.h).
DevicePlan ResolveCollectiveDevices(const LaunchOptions& options);

/// --echo for a run: the choice, and the node's host in the prefix when the job spans nodes
/// (`multi_node`). Without --echo the supervisor echoes `echo_path` as it is.
void ChooseEcho(SupervisorOptions& supervisor, const LaunchOptions& options, bool multi_node,
                const std::string& host);

/// The console of a run (docs/cli.md, "Console"): today's, its lines naming `pod`, or with an
/// empty `pod` the legacy one and its "launch proc_id" lines.
void ChooseConsole(ConsoleSettings& console, const std::string& pod);

/// Paddle 3's envlog.N beside each process's log (today's interface): every variable the process
/// starts with, `NAME=value` sorted by name, appended or (`truncate`) rewritten; created 0600.
/// A file that cannot be written is logged (Paddle's "save pod env log failed") and skipped.
void WriteEnvLogs(const std::vector<SupervisedProcess>& processes, bool truncate);

/// LaunchError when another user can write `log_dir` (it belongs to another user, or everyone
/// may write it) and it is not sticky: a link planted there would be written through
/// (hostile review #38 item 7). The launcher's files there are opened with O_NOFOLLOW anyway.
void CheckLogDirOwnership(const std::string& log_dir);

/// Creates `log_dir` (and parents); returns its absolute path. Throws LaunchError naming it, and
/// when CheckLogDirOwnership refuses it.
std::filesystem::path PrepareLogDir(const std::string& log_dir);

/// The directories of `dir` and its parents that do not exist yet, deepest first: what
/// PrepareLogDir would make, and what a refused run removes again (RemoveEmptyDirectories).
std::vector<std::filesystem::path> MissingDirectories(const std::string& dir);

/// Removes each of `dirs` (deepest first) that is empty; stops at the first that is not.
void RemoveEmptyDirectories(const std::vector<std::filesystem::path>& dirs);

/// A temporary directory (PADDLE_GLOO_FS_PATH), removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Writes `content` to `path`, replacing it. Throws LaunchError naming the file.
void WriteTextFile(const std::filesystem::path& path, const std::string& content);

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

/// Marks this run in the logs its processes append to (docs/cli.md, "Runs that share a log
/// directory"): a process whose log already holds an earlier run's output writes, before its
/// own, "===== pdlaunch: job <job_id>[, pod <pod>], run of <local time> (launcher pid <pid>)
/// =====". `pod`: the pod of today's interface (its pod log's name), or empty.
void MarkRunInLogs(std::vector<SupervisedProcess>& processes, std::string_view job_id,
                   std::string_view pod = {});

/// Paddle's PS supervision: the first local worker echoed live, and the lines Paddle logs when
/// the workers are done and the servers stopped (only where workers run).
void SetPsSupervision(const std::vector<SupervisedProcess>& processes,
                      SupervisorOptions& supervisor, ConsoleSettings& console);

/// Writes today's launcher's pod log `path` (<job_id>.<pod>.log; docs/cli.md, "Today's launcher
/// (paddle.distributed.launch since Paddle 2.3)"): when the file is empty (or `truncate`), the
/// launcher's environment as a Python dict first; then `topology` (the peers or the endpoints)
/// and a newline.
void WritePodLog(const std::filesystem::path& path, const std::string& topology, bool truncate);

/// A collective job's endpoint file, by the one rule of docs/cli.md ("Files"): with a `pod`
/// (today's interface) its endpoints appended to the pod log `<job_id>.<pod>.log`
/// (WritePodLog); with an empty `pod` the legacy `endpoints.log`, rewritten.
void WriteEndpointsFile(const std::filesystem::path& log_dir, const std::string& job_id,
                        const std::string& pod, const std::vector<Endpoint>& world, bool truncate);

/// Runs this node of a master-rendezvous job (launch_master.cc, docs/master.md); returns the
/// launcher's exit code. What it records for --report goes into `record`.
int RunMaster(const LaunchOptions& options, MasterSettings settings, const TrainingCommand& command,
              bool ps, bool rpc, const JobControls& controls, RunReport& record);

/// A job without processes through the master of `settings` (job id `job_id`): this node
/// publishes `value` and gets every node's, within `timeout` seconds (the auto tuner's
/// agreement between nodes, docs/auto-tuner.md). Its rendezvous's own progress lines are
/// DEBUG (a job's are INFO); its warnings and errors show.
ExchangeResult ExchangeOverMaster(const LaunchOptions& options, MasterSettings settings,
                                  const std::string& job_id, const std::string& value,
                                  double timeout);

/// The auto tuner's agreement between nodes through etcd (etcd_exchange.cc, --master etcd://):
/// made once per search, for `nodes` nodes of job `scope`. Each call publishes `value` in
/// exchange `name` and gets every node's, in one order on every node, within `timeout` seconds
/// (code 1, logged, past it, or once etcd was unreachable for `unavailable_limit` seconds in a
/// row; 128 + n for a signal meanwhile); the first call's nodes make the session of the later
/// ones. A value over its bound throws LaunchError. Called with an empty `name`: every node is
/// past the last exchange (a job of them all ran since, the best's), so its key goes now rather
/// than with its lease.
using StoreExchangeCall = std::function<ExchangeResult(const std::string& name,
                                                       const std::string& value, double timeout)>;
StoreExchangeCall MakeStoreExchange(std::shared_ptr<KvStore> store, std::string scope, int nodes,
                                    double unavailable_limit,
                                    std::optional<JobToken> token = std::nullopt);

/// Runs a parameter-server job (launch_ps.cc); returns the launcher's exit code. `announce`
/// (the configuration dump) is called once the plan has passed its checks. What it records for
/// --report goes into `record`.
int RunPs(const LaunchOptions& options, JobMode mode, const TrainingCommand& command,
          const std::function<void()>& announce, RunReport& record);

/// What a parameter-server run decides on this node before it starts anything: the plan, with
/// PADDLE_ROLE added for today's interface, and the free ports it holds (none with fixed ports).
struct PsDecision {
  PsPlan plan;
  std::unique_ptr<PortReservation> reservation;
  int accelerators = 0;  ///< GPUs found for the mode line (0: CPU).
};

/// The decisions of RunPs (devices, hosts, this node, ports, PlanPs), shared with --dry_run;
/// `gloo_dir` and `log_dir` are the paths the processes are told. Throws as PlanPs.
PsDecision DecidePs(const LaunchOptions& options, JobMode mode, const std::string& gloo_dir,
                    const std::string& log_dir);

/// Fixed ports are checked before anything starts (reserved free ports need no check): a port in
/// use is a LaunchError naming it.
void CheckFixedPortsFree(const PsPlan& plan);

/// Runs this node of an elastic collective job (launch_elastic.cc, docs/elastic.md); returns the
/// launcher's exit code: 0 completed, 101 or 3 failed for good, 128+signal. Every generation's
/// processes are recorded in `record` (--report).
int RunElastic(const LaunchOptions& options, const ElasticConfig& config,
               const TrainingCommand& command, const JobControls& controls, RunReport& record);

}  // namespace pdlaunch::internal
