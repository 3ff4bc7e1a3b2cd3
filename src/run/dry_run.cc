// --dry_run (job_decision.h): the run's own planning on a decision, as JSON; nothing is started
// or written (docs/cli.md, "--dry_run").
#include "pdlaunch/plan/dry_run.h"

#include <fmt/format.h>

#include <filesystem>

#include "pdlaunch/base/environment.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/options/echo_choice.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/trainer_env.h"
#include "run/collective_plan.h"
#include "run/job_decision.h"
#include "run/launch_paths.h"
#include "run/node_inputs.h"

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

/// Where the nodes of a master job would meet.
std::string MasterNote(const MasterSettings& master) {
  return fmt::format(
      "the cluster is decided at the rendezvous: {} nodes through the master {}", master.nnodes,
      !master.ips.empty()   ? MeetingNote(master)
      : master.master_given ? fmt::format("{}:{}", master.master_host, master.master_port)
                            : std::string("this node would host (its address and a free port)"));
}

std::string ElasticNote(const ElasticConfig& elastic) {
  return fmt::format(
      "the cluster is decided in etcd at {} when the nodes of job {} register (elastic: {} nodes)",
      elastic.server, elastic.job_id,
      elastic.np_min == elastic.np_max ? fmt::format("{}", elastic.np_min)
                                       : fmt::format("{} to {}", elastic.np_min, elastic.np_max));
}

/// A parameter-server job's plan into `plan`; returns how many processes this node runs.
size_t PlanPs(const LaunchOptions& options, JobMode mode, const EnvMap& env, DryRunPlan& plan) {
  if (DetectCloud(env)) {
    plan.notes.push_back(
        "PaddleCloud starts each role itself: the script would run once, as it is, with the "
        "launcher's environment and console");
    return 0;
  }
  const PsDecision ps = DecidePs(options, mode, "(a new temporary directory)",
                                 fs::absolute(options.log_dir).string());
  if (!ps.reservation) CheckFixedPortsFree(ps.plan);
  plan.device_mode = ps.accelerators > 0 ? "gpu" : "cpu";
  plan.ps = PsJobOf(ps.plan);
  for (const PsProcess& p : ps.plan.processes) {
    plan.processes.push_back({PsRoleName(p.role), p.global_id, p.local_index, p.log_name, p.env});
  }
  return ps.plan.processes.size();
}

/// The collective job of this node alone into `plan`; returns how many processes it runs.
size_t PlanLocalCollective(const LaunchOptions& options, const EnvMap& env, DryRunPlan& plan) {
  const CollectivePlan collective = PlanCollective(options, env);
  LogDevicePlan(collective.devices, UsesNewInterface(options), /*print_mode_line=*/false);
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
  return collective.cluster.local_pod().trainers.size();
}

/// The run's last checks before it starts anything (the echo's ranks, each variable within the
/// kernel's bound), then what the planning logged as the plan's warnings and notes.
void FinishPlan(const LaunchOptions& options, size_t local_processes, DryRunPlan& plan) {
  if (options.echo && local_processes > 0) {
    if (auto absent = EchoAbsentWarning(ParseEchoChoice(*options.echo), local_processes)) {
      PDLOG_WARN("{}", *absent);
    }
  }
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
  plan.mode = decision.rpc ? "rpc" : decision.mode == JobMode::kCollective ? "collective" : "ps";
  plan.launch_path = PathName(decision);
  const TrainingCommand command = CommandOf(options);  // A missing script: the run's error.
  plan.command = command.argv;
  if (const std::optional<std::string> note = UnusedMasterNote(decision)) PDLOG_WARN("{}", *note);
  for (const std::string& warning : decision.path.warnings) PDLOG_WARN("{}", warning);
  if (decision.meeting) plan.notes.push_back(MeetingNote(*decision.meeting));
  size_t local_processes = 0;
  if (decision.path.kind == LaunchPath::Kind::kMaster || decision.rpc || decision.ps_counts) {
    plan.notes.push_back(MasterNote(*decision.path.master));
  } else if (decision.elastic.config) {
    LogElasticDecision(decision);
    plan.notes.push_back(ElasticNote(*decision.elastic.config));
  } else if (decision.mode != JobMode::kCollective) {
    local_processes = PlanPs(options, decision.mode, env, plan);
  } else {
    LogElasticDecision(decision);
    local_processes = PlanLocalCollective(options, env, plan);
  }
  FinishPlan(options, local_processes, plan);
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
