// Runs a decision (job_decision.h): the auto-parallel stage, then the path it names: a master's
// rendezvous, a parameter-server job, an elastic job, or the collective job of this node alone.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "pdlaunch/base/environment.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/process/supervisor.h"
#include "run/auto_parallel.h"
#include "run/collective_plan.h"
#include "run/job_decision.h"
#include "run/job_processes.h"
#include "run/job_status.h"
#include "run/launch_paths.h"
#include "run/log_files.h"
#include "run/node_inputs.h"

namespace pdlaunch {
namespace {

namespace fs = std::filesystem;

using internal::BuildTrainerProcesses;
using internal::ChooseEcho;
using internal::CollectivePlan;
using internal::LogDevicePlan;
using internal::PlanCollective;
using internal::PrepareLogDir;
using internal::TempDir;

/// The proxies the processes do not get (docs/env.md), said once as Paddle 3 does.
void WarnOfProxies() {
  std::vector<std::string> set;
  for (const char* name : {"http_proxy", "https_proxy"}) {
    if (GetEnv(name)) set.emplace_back(name);
  }
  if (set.empty()) return;
  PDLOG_WARN("{} removed from the processes' environment (kept as {}_original)",
             fmt::join(set, " and "), fmt::join(set, "_original and "));
}

/// Paddle's tuner stage of --auto_parallel_config, once per node before its ranks (docs/cli.md,
/// "Auto-parallel"); an exit code when it ends the job.
std::optional<int> RunAutoParallelStage(const JobDecision& decision, const TrainingCommand& command,
                                        const std::function<void()>& announce, RunReport& record) {
  const LaunchOptions& options = decision.options;
  const LaunchPath& path = decision.path;
  if (!options.auto_parallel_config || decision.mode != JobMode::kCollective || decision.rpc) {
    return std::nullopt;
  }
  announce();
  const int nnodes = path.kind == LaunchPath::Kind::kMaster && path.master ? path.master->nnodes
                     : decision.meeting ? decision.meeting->nnodes
                                        : static_cast<int>(SplitAndStrip(options.ips, ',').size());
  const int replicas = std::max<int>(
      1, static_cast<int>(internal::ResolveCollectiveDevices(options).devices_per_proc.size()));
  return internal::RunAutoParallelStages(options, command, replicas, std::max(1, nnodes), record);
}

/// The collective job of this node alone (no master, no etcd): plan, logs, supervise.
int RunLocalCollective(const LaunchOptions& options, const EnvMap& env,
                       const TrainingCommand& command, const std::function<void()>& announce,
                       const JobControls& controls, RunReport& record) {
  const bool todays_console = UsesNewInterface(options);
  CollectivePlan plan = PlanCollective(options, env);
  announce();
  LogDevicePlan(plan.devices, todays_console);
  const fs::path log_dir = PrepareLogDir(options.log_dir);
  TempDir gloo_dir;
  const JobEnv job{gloo_dir.path(), GetEnv("PADDLE_WITH_GLOO").value_or("0"), log_dir.string()};
  const WorldValues world(plan.cluster);
  std::vector<SupervisedProcess> processes =
      BuildTrainerProcesses(plan.cluster, world, command, job, log_dir, options.log_overwrite);
  // One rule for the files and the console (docs/cli.md): today's interface gets the pod log
  // and today's console, the legacy one endpoints.log and its console.
  const std::string pod = todays_console ? internal::NewPodName() : std::string();
  internal::MarkRunInLogs(processes, options.job_id.value_or("default"), pod);
  internal::WriteEndpointsFile(log_dir, options.job_id.value_or("default"), pod,
                               plan.cluster.world_endpoints(), options.log_overwrite);

  const Cluster& cluster = plan.cluster;
  record.node_rank = cluster.local_index;
  record.nodes = static_cast<int>(cluster.pods.size());
  if (todays_console) {
    PDLOG_DEBUG(
        "First process distributed environment info: {}",
        FormatDistributedEnvs(TrainerTable(cluster, cluster.local_pod().trainers.at(0), world)));
  } else {
    PDLOG_INFO(
        "Local start {} processes. First process distributed environment info (Only For Debug): "
        "{}",
        processes.size(),
        FormatDistributedEnvs(TrainerTable(cluster, cluster.local_pod().trainers.at(0), world)));
    PDLOG_INFO(
        "details about PADDLE_TRAINER_ENDPOINTS can be found in {}/endpoints.log, and detail "
        "running logs maybe found in {}/workerlog.0",
        options.log_dir, options.log_dir);
  }

  SupervisorOptions supervisor;
  ConsoleSettings console;
  internal::ChooseConsole(console, pod);
  supervisor.status = internal::JobStatus(std::move(console), &record);
  if (todays_console) internal::WriteEnvLogs(processes, options.log_overwrite);
  supervisor.grace_seconds = options.grace;
  supervisor.echo_path = processes.front().log_path;
  ChooseEcho(supervisor, options, cluster.pods.size() > 1, cluster.local_pod().ip);
  supervisor.remove_if_killed = {gloo_dir.path()};
  supervisor.device_log = internal::DeviceLogOf(options, cluster, options.log_dir);
  internal::ApplyNumaBinding(options, cluster, processes);
  if (controls.deadline) {
    controls.deadline->Arm();
    supervisor.external = controls.deadline;
  }
  return RunSupervised(std::move(processes), supervisor);
}

}  // namespace

int RunDecided(JobDecision decision, const EnvMap& env, const std::function<void()>& announce,
               const JobControls& controls, RunReport& record) {
  if (decision.slurm) ApplySlurmStep(decision.options, *decision.slurm);
  const LaunchOptions& options = decision.options;
  const LaunchPath& path = decision.path;
  const JobMode mode = decision.mode;
  if (!decision.elastic.config) WarnModeBoundFlags(options);
  if (const std::optional<std::string> note = UnusedMasterNote(decision)) PDLOG_WARN("{}", *note);
  for (const std::string& warning : path.warnings) PDLOG_WARN("{}", warning);
  WarnOfProxies();
  const TrainingCommand command = CommandOf(options);
  if (const std::optional<int> code = RunAutoParallelStage(decision, command, announce, record)) {
    return *code;
  }
  if (path.kind == LaunchPath::Kind::kMaster || decision.rpc || decision.ps_counts) {
    if (!path.master) throw UsageError("--ips cannot be combined with this job's mode");
    MasterSettings settings = *path.master;
    if (!settings.ips.empty()) PlaceThisNode(options, settings, /*say=*/true);
    announce();
    return internal::RunMaster(options, settings, command, decision.ps_counts, decision.rpc,
                               controls, record, decision.token);
  }
  if (decision.meeting && mode == JobMode::kCollective) {
    MasterSettings settings = *decision.meeting;
    PlaceThisNode(options, settings, /*say=*/false);
    announce();
    return internal::RunMaster(options, settings, command, false, false, controls, record,
                               decision.token);
  }
  if (mode != JobMode::kCollective)
    return internal::RunPs(options, mode, command, announce, record);
  LogElasticDecision(decision);  // Held until the dump is out.
  if (decision.elastic.config) {
    announce();
    return internal::RunElastic(options, *decision.elastic.config, command, controls, record);
  }
  return RunLocalCollective(options, env, command, announce, controls, record);
}

RunResult RunJob(JobDecision decision, const EnvMap& env, const std::function<void()>& announce,
                 const JobControls& controls) {
  RunResult result;
  result.exit_code = RunDecided(std::move(decision), env, announce, controls, result.record);
  result.deadline_hit = controls.deadline != nullptr && controls.deadline->hit();
  return result;
}

}  // namespace pdlaunch
