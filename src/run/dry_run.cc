// --dry_run (job_decision.h): the run's own planning on a decision, as JSON; nothing is started
// or written (docs/cli.md, "--dry_run").
#include "pdlaunch/plan/dry_run.h"

#include <fmt/format.h>

#include <filesystem>

#include "pdlaunch/base/environment.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/cli/echo_choice.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/trainer_env.h"
#include "run/collective_plan.h"
#include "run/job_decision.h"
#include "run/launch_support.h"

namespace pdlaunch {
namespace {

namespace fs = std::filesystem;

using internal::CheckFixedPortsFree;
using internal::CollectivePlan;
using internal::DecidePs;
using internal::EnvironmentMap;
using internal::LogDevicePlan;
using internal::PlanCollective;
using internal::PsDecision;

/// Where the nodes of an --ips job meet, for --dry_run.
std::string MeetingNote(const MasterSettings& m) {
  return fmt::format(
      "the nodes of --ips meet at the master on node {} ({}), port {}, before any rank starts",
      m.master_index, m.master_host,
      m.handshake ? fmt::format("found by Paddle's handshake ({}-{})", kHandshakeFirstPort,
                                kHandshakeLastPort)
                  : std::to_string(m.master_port));
}

DryRunPlan::PsJob PsJobOf(const PsPlan& plan) {
  DryRunPlan::PsJob job;
  job.servers = EndpointStrings(plan.servers);
  job.workers = EndpointStrings(plan.workers);
  for (const auto& stage : plan.heter_stages) job.heter_stages.push_back(EndpointStrings(stage));
  job.gloo_http = plan.http.ToString();
  job.hosts = plan.node.node_ips;
  if (!job.hosts.empty()) job.this_host = job.hosts[static_cast<size_t>(plan.node.node_index)];
  return job;
}

/// --dry_run: the decisions and the plan of a real run as JSON; nothing is started or written.
int PlanDryRun(JobDecision decision) {
  if (decision.slurm) ApplySlurmStep(decision.options, *decision.slurm);
  const LaunchOptions& options = decision.options;
  const EnvMap env = EnvironmentMap();
  DryRunPlan plan;
  // What the planning logs, the run's own code, becomes the JSON's warnings and notes.
  HoldLines();
  if (!decision.elastic.config) WarnModeBoundFlags(options);
  size_t local_processes = 0;
  plan.mode = decision.rpc ? "rpc" : decision.mode == JobMode::kCollective ? "collective" : "ps";
  plan.launch_path = PathName(decision);
  const TrainingCommand command = CommandOf(options);  // A missing script: the run's error.
  plan.command = command.argv;
  if (const std::optional<std::string> note = UnusedMasterNote(decision)) PDLOG_WARN("{}", *note);
  for (const std::string& warning : decision.path.warnings) PDLOG_WARN("{}", warning);
  if (decision.meeting) plan.notes.push_back(MeetingNote(*decision.meeting));
  if (decision.path.kind == LaunchPath::Kind::kMaster || decision.rpc || decision.ps_counts) {
    const MasterSettings& master = *decision.path.master;
    plan.notes.push_back(fmt::format(
        "the cluster is decided at the rendezvous: {} nodes through the master {}", master.nnodes,
        !master.ips.empty()   ? MeetingNote(master)
        : master.master_given ? fmt::format("{}:{}", master.master_host, master.master_port)
                              : std::string("this node would host (its address and a free port)")));
  } else if (decision.elastic.config) {
    LogElasticDecision(decision);
    const ElasticConfig& elastic = *decision.elastic.config;
    plan.notes.push_back(fmt::format(
        "the cluster is decided in etcd at {} when the nodes of job {} register (elastic: {} "
        "nodes)",
        elastic.server, elastic.job_id,
        elastic.np_min == elastic.np_max
            ? fmt::format("{}", elastic.np_min)
            : fmt::format("{} to {}", elastic.np_min, elastic.np_max)));
  } else if (decision.mode != JobMode::kCollective) {
    if (DetectCloud(env)) {
      plan.notes.push_back(
          "PaddleCloud starts each role itself: the script would run once, as it is, with the "
          "launcher's environment and console");
    } else {
      const PsDecision ps = DecidePs(options, decision.mode, "(a new temporary directory)",
                                     fs::absolute(options.log_dir).string());
      if (!ps.reservation) CheckFixedPortsFree(ps.plan);
      plan.device_mode = ps.accelerators > 0 ? "gpu" : "cpu";
      plan.ps = PsJobOf(ps.plan);
      for (const PsProcess& p : ps.plan.processes) {
        plan.processes.push_back(
            {PsRoleName(p.role), p.global_id, p.local_index, p.log_name, p.env});
      }
      local_processes = ps.plan.processes.size();
    }
  } else {
    LogElasticDecision(decision);
    const CollectivePlan collective = PlanCollective(options, env);
    LogDevicePlan(collective.devices, UsesNewInterface(options), /*print_mode_line=*/false);
    local_processes = collective.cluster.local_pod().trainers.size();
    plan.device_mode = collective.devices.family.type;
    plan.cluster = collective.cluster;
    const JobEnv job{"(a new temporary directory)", GetEnv("PADDLE_WITH_GLOO").value_or("0"),
                     fs::absolute(options.log_dir).string()};
    const WorldValues world(collective.cluster);
    for (const Trainer& trainer : collective.cluster.local_pod().trainers) {
      plan.processes.push_back({"trainer", trainer.global_rank, trainer.local_rank,
                                fmt::format("workerlog.{}", trainer.local_rank),
                                TrainerVariables(collective.cluster, trainer, job, world)});
    }
  }
  if (options.echo && local_processes > 0) {
    if (auto absent = EchoAbsentWarning(ParseEchoChoice(*options.echo), local_processes)) {
      PDLOG_WARN("{}", *absent);
    }
  }
  // The run refuses a variable past the kernel's bound before it starts anything: so does this.
  for (const DryRunPlan::Process& process : plan.processes) {
    std::vector<std::string> entries;
    entries.reserve(process.env.size());
    for (const auto& [name, value] : process.env) entries.push_back(name + "=" + value);
    CheckEnvironmentSizes(entries);
  }
  for (auto& [level, line] : TakeHeldLines()) {
    if (level >= LogLevel::kWarn) {
      plan.warnings.push_back(std::move(line));
    } else if (level == LogLevel::kInfo) {
      plan.notes.push_back(std::move(line));
    }
  }
  fmt::print("{}", FormatDryRun(plan));
  return 0;
}

}  // namespace

int RunDryRun(JobDecision decision) {
  try {
    return PlanDryRun(std::move(decision));
  } catch (const LaunchError& e) {
    if (e.exit_code() == kExitUsageError) {
      DropHeldLines();
    } else {
      ReleaseHeldLines();
    }
    throw;
  } catch (...) {
    ReleaseHeldLines();
    throw;
  }
}

}  // namespace pdlaunch
