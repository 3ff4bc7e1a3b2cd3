// The parameter-server run path: plan with PlanPs (pure), start servers, workers and heter
// workers under the one supervisor, and finish when the workers are done (docs/ps.md).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "pdlaunch/base/logging.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/master_config.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/process/device_probe.h"
#include "pdlaunch/process/supervisor.h"
#include "run/job_processes.h"
#include "run/job_status.h"
#include "run/launch_paths.h"
#include "run/log_files.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {
namespace {

namespace fs = std::filesystem;

std::string JoinHosts(const std::vector<std::string>& hosts) {
  return fmt::format("{}", fmt::join(hosts, ","));
}

int RoleSize(const PsPlan& plan, PsRole role) {
  switch (role) {
    case PsRole::kServer:
      return static_cast<int>(plan.servers.size());
    case PsRole::kWorker:
      return static_cast<int>(plan.workers.size());
    case PsRole::kHeterWorker: {
      size_t total = 0;
      for (const auto& stage : plan.heter_stages) total += stage.size();
      return static_cast<int>(total);
    }
  }
  return 0;
}

// Under PaddleCloud the platform starts every server and worker itself (docs/ps.md): the
// script runs once, with the environment and console as they are. Paddle then exits 0 whatever
// the script returned; its exit code is passed through here.
int RunPsDirect(const LaunchOptions& options, const TrainingCommand& command, RunReport& record) {
  PDLOG_INFO(
      "PaddleCloud parameter-server job: the platform starts each role; running {} once, "
      "as it is",
      options.training_script);
  SupervisedProcess process;
  process.role_size = 1;
  process.spec = ProcessSpec{command.executable, command.argv, ParentEnvironment(), -1};
  SupervisorOptions supervisor;
  supervisor.grace_seconds = options.grace;
  ConsoleSettings console;
  if (UsesNewInterface(options)) console.pod_name = NewPodName();
  supervisor.status = JobStatus(std::move(console), &record);
  std::vector<SupervisedProcess> processes;
  processes.push_back(std::move(process));
  const int code = RunSupervised(std::move(processes), supervisor);
  if (code != 0) {
    PDLOG_ERROR("{}'s output is above: in this mode it goes to the console, not to a log file",
                options.training_script);
  }
  return code;
}

}  // namespace

void CheckFixedPortsFree(const PsPlan& plan) {
  std::vector<int> ports;
  for (const PsProcess& p : plan.processes) ports.push_back(p.endpoint.port);
  CheckPortsFree(ports);
}

PsDecision DecidePs(const LaunchOptions& options, JobMode mode, const std::string& gloo_dir,
                    const std::string& log_dir) {
  PsDecision decision;
  PsInputs inputs;
  inputs.options = options;
  inputs.mode = mode;
  auto probe = MakeSystemDeviceProbe();
  inputs.devices = ResolveDevices(DeviceList(options), std::nullopt, "auto",
                                  DeviceEnvOf(options, VisibleDevicesOfEnvironment()), *probe);
  // Paddle's PS launcher knows GPUs and XPUs (its workers get both CUDA_ and
  // XPU_VISIBLE_DEVICES); the physical ids come from the family's own visible list.
  const bool accelerated =
      inputs.devices.mode == DeviceMode::kGpu || inputs.devices.mode == DeviceMode::kXpu;
  if (!accelerated) inputs.devices = ResolveDevices(std::nullopt, std::nullopt, "gloo", {}, *probe);
  inputs.cuda_visible_devices =
      accelerated ? GetEnv(inputs.devices.family.visible_variable.c_str()) : std::nullopt;
  decision.accelerators =
      accelerated ? static_cast<int>(inputs.devices.devices_per_proc.size()) : 0;

  const std::vector<std::string> hosts = PsNodeIps(options, mode);
  inputs.node = GatherNodeEnv(
      JoinHosts(hosts), options.host,
      options.servers.empty() && options.workers.empty() ? "--ips" : "--servers/--workers");
  inputs.start_port = GivenStartPort(options);
  // Free ports differ from host to host; a job on several hosts needs the same list everywhere.
  if (!inputs.start_port && hosts.size() > 1) inputs.start_port = kPsDefaultStartPort;
  if (!inputs.start_port) {
    decision.reservation = MakeLockingPortAllocator()->Reserve(PsPortsNeeded(options, mode));
    inputs.free_ports = decision.reservation->ports();
  }
  inputs.job = JobEnv{gloo_dir, GetEnv("PADDLE_WITH_GLOO").value_or("0"), log_dir};
  decision.plan = PlanPs(inputs);
  if (UsesNewInterface(options)) {
    // Today's launcher also names the role in PADDLE_ROLE (docs/ps.md, "Environment per role").
    for (PsProcess& p : decision.plan.processes) {
      p.env.emplace_back("PADDLE_ROLE", p.role == PsRole::kServer   ? "PSERVER"
                                        : p.role == PsRole::kWorker ? "TRAINER"
                                                                    : "HETER_TRAINER");
    }
  }
  return decision;
}

int RunPs(const LaunchOptions& options, JobMode mode, const TrainingCommand& command,
          const std::function<void()>& announce, RunReport& record) {
  if (mode == JobMode::kPs && DetectCloud(EnvironmentMap())) {
    announce();
    return RunPsDirect(options, command, record);
  }
  TempDir gloo_dir;
  const PsDecision decision =
      DecidePs(options, mode, gloo_dir.path(), fs::absolute(options.log_dir).string());
  announce();
  const fs::path log_dir = PrepareLogDir(options.log_dir);
  const PsPlan& plan = decision.plan;
  // Logged once the command line has proven valid: a usage error stays one line. Today's
  // launcher does not print the legacy mode line: DEBUG there.
  const bool todays_console = UsesNewInterface(options);
  if (todays_console) {
    PDLOG_DEBUG("{}", FormatPsModeLine(options, decision.accelerators));
  } else {
    PDLOG_INFO("{}", FormatPsModeLine(options, decision.accelerators));
  }
  for (const std::string& line : plan.warnings) PDLOG_WARN("{}", line);
  if (!decision.reservation) CheckFixedPortsFree(plan);
  const std::vector<PsProcess>& ps = plan.processes;
  const std::string pod = todays_console ? NewPodName() : std::string();
  if (todays_console) {
    // Today's interface: the pod log (docs/cli.md, "Files").
    WritePodLog(log_dir / fmt::format("{}.{}.log", options.job_id.value_or("default"), pod),
                PythonListRepr({JoinEndpoints(plan.servers), JoinEndpoints(plan.workers)}),
                options.log_overwrite);
  }
  std::vector<SupervisedProcess> processes =
      BuildPsProcesses(ps,
                       {{PsRole::kServer, RoleSize(plan, PsRole::kServer)},
                        {PsRole::kWorker, RoleSize(plan, PsRole::kWorker)},
                        {PsRole::kHeterWorker, RoleSize(plan, PsRole::kHeterWorker)}},
                       command, log_dir, options.log_overwrite);
  MarkRunInLogs(processes, options.job_id.value_or("default"));
  for (const std::string& line : plan.info) PDLOG_INFO("{}", line);

  SupervisorOptions supervisor;
  supervisor.grace_seconds = options.grace;
  ConsoleSettings console;
  console.pod_name = pod;
  if (todays_console) WriteEnvLogs(processes, options.log_overwrite);
  supervisor.remove_if_killed = {gloo_dir.path()};
  SetPsSupervision(processes, supervisor, console);
  supervisor.status = JobStatus(std::move(console), &record);
  ChooseEcho(supervisor, options, false, "");  // Roles and ranks name a PS process already.
  return RunSupervised(std::move(processes), supervisor);
}

}  // namespace pdlaunch::internal
