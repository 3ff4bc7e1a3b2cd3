#include "pdlaunch/run/launch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string_view>
#include <system_error>

#include "base/small_file.h"
#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/base/version.h"
#include "pdlaunch/cli/address_syntax.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/cli/echo_choice.h"
#include "pdlaunch/cli/master_config.h"
#include "pdlaunch/coord/elastic.h"
#include "pdlaunch/plan/address_lookup.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/dry_run.h"
#include "pdlaunch/plan/messages.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/plan/ps.h"
#include "pdlaunch/plan/slurm.h"
#include "pdlaunch/plan/topology.h"
#include "pdlaunch/plan/trainer_env.h"
#include "pdlaunch/plan/training_command.h"
#include "pdlaunch/process/device_probe.h"
#include "pdlaunch/process/launcher_signals.h"
#include "pdlaunch/process/pod_console.h"
#include "pdlaunch/process/process.h"
#include "pdlaunch/process/run_recorder.h"
#include "pdlaunch/process/supervisor.h"
#include "pdlaunch/process/watchdog.h"
#include "pdlaunch/tuner/driver.h"
#include "run/auto_parallel.h"
#include "run/collective_plan.h"
#include "run/job_status.h"
#include "run/launch_support.h"

namespace pdlaunch {
namespace fs = std::filesystem;

namespace {

using internal::BuildTrainerProcesses;
using internal::CheckFixedPortsFree;
using internal::ChooseEcho;
using internal::CollectivePlan;
using internal::DecidePs;
using internal::EnvironmentMap;
using internal::GatherNodeEnv;
using internal::GivenStartPort;
using internal::LocalPorts;
using internal::LogDevicePlan;
using internal::PlanCollective;
using internal::PrepareLogDir;
using internal::PsDecision;
using internal::ResolveCollectiveDevices;
using internal::TempDir;

}  // namespace

/// What a command line asks for, decided before anything is printed or started: every check
/// that can end in a usage error (exit 2) happens here, before the configuration dump and before
/// any check that gives exit 1 (a missing script must not hide a bad --gpus).
struct JobDecision {
  LaunchOptions options;  ///< With `--master etcd://` mapped to the elastic flags.
  LaunchPath path;
  /// A collective job of the legacy interface over several --ips nodes, which meet at this
  /// master before any rank starts (docs/multi-node.md, "The nodes meet").
  std::optional<MasterSettings> meeting;
  JobMode mode = JobMode::kCollective;
  bool rpc = false;
  bool ps_counts = false;  ///< Today's PS form: counts, not endpoint lists (§7.2.2).
  ElasticDecision elastic;
  std::optional<SlurmStep> slurm;  ///< Inside an srun step of several nodes (docs/slurm.md).
};

/// A Slurm step of several nodes is the --ips job of its nodes, this node chosen by SLURM_NODEID;
/// the names are resolved once, forward only (docs/slurm.md).
void ApplySlurmStep(LaunchOptions& options, const SlurmStep& step) {
  std::vector<std::string> addresses;
  for (const std::string& name : step.nodes) {
    if (IsIpLiteral(name)) {
      addresses.push_back(name);
      continue;
    }
    std::vector<std::string> found;
    try {
      found = ResolveHostName(name);
    } catch (const LaunchError&) {
    }
    if (found.empty()) {
      throw LaunchError(
          fmt::format("cannot resolve the Slurm node name '{}' (from {})", name, step.source));
    }
    addresses.push_back(found.front());
  }
  const std::string& self = addresses.at(static_cast<size_t>(step.node_rank));
  PDLOG_INFO("Slurm step of {} nodes [{}] ({}); this node is {} ({}), SLURM_NODEID {}",
             step.nodes.size(), fmt::join(step.nodes, ", "), step.source,
             step.nodes[static_cast<size_t>(step.node_rank)], self, step.node_rank);
  options.ips = fmt::format("{}", fmt::join(addresses, ","));
  options.given.insert("ips");
  if (!options.host) options.host = self;
}

/// Flags that act only in elastic jobs; given to another job they are said to do nothing.
void WarnModeBoundFlags(const LaunchOptions& options) {
  for (const char* dest : {"max_restart", "elastic_pre_hook", "scale", "force", "elastic_level"}) {
    if (!options.WasGiven(dest) || options.from_env.count(dest) != 0) continue;
    PDLOG_WARN(
        "--{} has no effect here: it applies to elastic jobs (--elastic_server, --job_id and "
        "--np, or --master etcd://host:port); this job runs once and is not restarted "
        "(docs/elastic.md)",
        dest);
  }
}

/// A --master (HTTP) that the job does not use because a multi-node --ips gives the nodes
/// (docs/master.md, "Which path"): said once, by the run and by --dry_run.
std::optional<std::string> UnusedMasterNote(const JobDecision& d) {
  const LaunchOptions& options = d.options;
  // The auto tuner uses it: the nodes of --ips agree on each trial through it.
  if (d.path.kind != LaunchPath::Kind::kDefault || d.rpc || d.ps_counts || !options.master ||
      options.auto_tuner_json || !options.WasGiven("ips") ||
      SplitAndStrip(options.ips, ',').size() < 2) {
    return std::nullopt;
  }
  return fmt::format(
      "--master {} is not used: --ips lists the nodes, and the job forms from that list without "
      "a master (give one of the two)",
      *options.master);
}

/// --gpus and --nproc_per_node against CUDA_VISIBLE_DEVICES, and the fixed ports they need,
/// without probing the machine (the real plan comes later).
void CheckDeviceUsage(const LaunchOptions& options, const EnvMap& env) {
  const VisibleDevices visible = ReadVisibleDevices([&env](const std::string& name) {
    const auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  const DeviceEnv device_env = internal::DeviceEnvOf(options, visible);
  const std::optional<int> start = GivenStartPort(options);
  if (!internal::DeviceList(options) && !Decides(visible.cuda) && !Decides(visible.xpu) &&
      !visible.xccl_backend && !options.nproc_per_node && !start) {
    return;
  }
  NoDeviceProbe probe;  // No device unless listed: never a usage error the machine would not give.
  DevicePlan plan;
  try {
    plan = ResolveDevices(internal::DeviceList(options), options.nproc_per_node, options.backend,
                          device_env, probe);
  } catch (const UsageError&) {
    throw;
  } catch (const LaunchError&) {
    return;  // Not a usage error (e.g. nccl without GPUs): Run reports it.
  }
  // At least one process (GPUs the machine has but the command does not list may add more:
  // those are checked when the ports are planned).
  const int processes = std::max<int>(1, static_cast<int>(plan.devices_per_proc.size()));
  const int needed = processes + 1;  // + MASTER_PORT.
  if (start && *start + needed - 1 > 65535) {
    throw UsageError(
        fmt::format("--start_port {}: {} process{} and MASTER_PORT need ports {}..{}, past 65535",
                    *start, processes, processes == 1 ? "" : "es", *start, *start + needed - 1));
  }
}

/// --ips from a file (Paddle 3 reads the first token of each line when the value opens as a
/// file), in both interfaces; then today's interface cuts it to --nnodes, saying so.
void ReadIpsList(LaunchOptions& options, std::vector<std::string>& warnings) {
  if (!options.WasGiven("ips")) return;
  struct stat st {};
  if (::stat(options.ips.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    constexpr off_t kMaxHostfile = 16 << 20;
    const std::optional<std::string> text =
        st.st_size <= kMaxHostfile ? ReadSmallFile(options.ips) : std::nullopt;
    const std::vector<std::string> nodes = text ? ParseHostfile(*text) : std::vector<std::string>();
    if (nodes.empty()) {
      throw UsageError(fmt::format("--ips {}: {}", options.ips,
                                   !text ? "cannot be read (or over 16 MiB)"
                                         : "the file lists no address (one host per line)"));
    }
    PDLOG_DEBUG("--ips {}: {} nodes read from the file", options.ips, nodes.size());
    options.ips = fmt::format("{}", fmt::join(nodes, ","));
  }
  const std::string nnodes = options.nnodes.value_or("");
  if (options.WasGiven("nnodes") && nnodes.find(':') == std::string::npos &&
      UsesNewInterface(options) && options.nodes_meet) {
    std::string warning;
    const int count = ParseInt(StripSpace(nnodes), "argument --nnodes", 1, 1 << 24);
    const std::vector<std::string> cut =
        CutIpsToNnodes(SplitAndStrip(options.ips, ','), count, &warning);
    if (!warning.empty()) {
      warnings.push_back(std::move(warning));
      options.ips = fmt::format("{}", fmt::join(cut, ","));
    }
  }
}

JobDecision Decide(const LaunchOptions& given_options, const EnvMap& env) {
  JobDecision d;
  d.options = given_options;
  LaunchOptions& options = d.options;
  std::vector<std::string> warnings;
  ReadIpsList(options, warnings);
  CheckAddressArguments(options);  // A malformed address never reaches the resolver.
  CheckAddressVariables(options, env);
  d.path = SelectLaunchPath(options, env);
  d.path.warnings.insert(d.path.warnings.begin(), warnings.begin(), warnings.end());
  // --start_port, FLAGS_START_PORT and PADDLE_START_PORT, in every mode: a bad one must not wait
  // until a path plans its ports (a --master node would be hosting by then).
  GivenStartPort(options);
  if (d.path.kind == LaunchPath::Kind::kEtcd) {
    // --master etcd://host:port is the elastic controller with --nnodes as its np (docs/master.md).
    options.elastic_server = d.path.etcd_server;
    options.np = d.path.etcd_np;
    options.given.insert("elastic_server");
    options.given.insert("np");
    // Today's launcher's job id: `default` unless given (or PADDLE_JOB_ID), as for the HTTP
    // master; not the legacy PADDLE_ELASTIC_JOB_ID.
    if (!options.job_id) options.job_id = "default";
  }
  d.rpc = options.run_mode == "rpc";
  if (d.rpc && !options.master) {
    throw UsageError("--run_mode rpc needs --master host:port (the RPC master endpoint)");
  }
  d.mode = d.rpc ? JobMode::kCollective : SelectMode(options);
  d.ps_counts = d.mode == JobMode::kPs && options.servers.empty() && options.workers.empty() &&
                (d.path.kind == LaunchPath::Kind::kMaster || UsesNewInterface(options) ||
                 (!options.server_num && !options.worker_num));
  if (d.ps_counts) {
    // Today's form takes 0 (or nothing) as one, as Paddle's `args.server_num or 1`; a negative
    // count is no count at all (Paddle would start no process of that role).
    for (const auto& [count, dest] : {std::pair{options.server_num, "server_num"},
                                      std::pair{options.worker_num, "worker_num"}}) {
      if (!count) continue;
      CheckProcessCount(options.FlagName(dest), *count, 0, " (0 means 1)");
    }
  }
  if (d.path.kind == LaunchPath::Kind::kMaster && d.mode != JobMode::kCollective && !d.ps_counts) {
    throw UsageError(
        "--master/--nnodes takes --server_num/--trainer_num, not --servers/--trainers lists or "
        "heter workers (give the lists to every node without --master instead)");
  }
  if (d.mode == JobMode::kCollective && d.path.kind != LaunchPath::Kind::kMaster && !d.rpc) {
    d.elastic = ResolveElasticConfig(options, env);
  }
  if (d.mode == JobMode::kCollective) CheckDeviceUsage(options, env);
  if (options.auto_parallel_config) {
    // A file the tuner stage could not use is refused before anything starts.
    try {
      internal::TunerRunMode(*options.auto_parallel_config);
    } catch (const LaunchError& e) {
      throw UsageError(e.what());
    }
  }
  // Explicit flags, PaddleCloud and Kubeflow always win over Slurm.
  if (d.mode == JobMode::kCollective && d.path.kind == LaunchPath::Kind::kDefault && !d.rpc &&
      !d.elastic.config && !options.WasGiven("ips") && !options.master && !DetectCloud(env)) {
    d.slurm = DetectSlurmStep(env);
    if (d.slurm && d.slurm->nodes.size() < 2) d.slurm.reset();  // One node: nothing to do.
  }
  // The legacy interface's nodes of --ips meet too, unless told not to (a job mixed with
  // Paddle 2's launchers) or the cluster comes from elsewhere (PaddleCloud, etcd).
  if (d.mode == JobMode::kCollective && d.path.kind == LaunchPath::Kind::kDefault && !d.rpc &&
      !d.elastic.config && options.nodes_meet && options.WasGiven("ips") &&
      SplitAndStrip(options.ips, ',').size() > 1 && !DetectCloud(env) &&
      !UsesNewInterface(options)) {
    d.meeting = IpsMasterSettings(options, env, &d.path.warnings);
    d.meeting->legacy_ips = true;
  }
  return d;
}

/// This node's entry of an --ips job's list: its rank, its address, and whether it hosts the
/// master. `say` logs which entry it is (the legacy job's plan says it again otherwise).
void PlaceThisNode(const LaunchOptions& options, MasterSettings& settings, bool say) {
  const NodeIdentity node =
      internal::ResolveThisNode(fmt::format("{}", fmt::join(settings.ips, ",")), options.host, say);
  settings.rank = node.node_index;
  settings.host = node.node_ips.at(static_cast<size_t>(node.node_index));
  settings.hosting = static_cast<size_t>(node.node_index) == settings.master_index;
}

/// Where the run's topology comes from, for --report and --dry_run.
const char* PathName(const JobDecision& d) {
  if (d.elastic.config) return "elastic";
  if (d.slurm) return "slurm";
  switch (d.path.kind) {
    case LaunchPath::Kind::kMaster:
      return "master";
    case LaunchPath::Kind::kEtcd:
      return "elastic";
    case LaunchPath::Kind::kDefault:
      break;
  }
  return d.options.WasGiven("ips") ? "ips" : "local";
}

/// The program each rank runs. For `run_check`, Paddle's own distributed check, as its test
/// plugin runs it: paddle/distributed/launch/plugins/test.py of the interpreter's paddle
/// (found without importing it: `import paddle` takes seconds).
TrainingCommand CommandOf(const LaunchOptions& options) {
  const std::optional<std::string> python = GetEnv("PADDLE_LAUNCH_PYTHON");
  const std::string path = GetEnv("PATH").value_or("/bin:/usr/bin");
  if (options.training_script != kRunCheck) {
    return ResolveTrainingCommand(options.training_script, options.training_script_args, python,
                                  path);
  }
  PDLOG_INFO("Paddle Distributed Test begin...");
  const std::string interpreter = ResolveTrainingCommand("-m", {"paddle"}, python, path).executable;
  const std::optional<std::string> origin =
      CaptureOutput({interpreter, "-c",
                     "import importlib.util as u; s = u.find_spec('paddle'); "
                     "print(s.origin if s and s.origin else '')"});
  const std::string init = origin ? std::string(StripSpace(*origin)) : std::string();
  const fs::path test =
      fs::path(init).parent_path() / "distributed" / "launch" / "plugins" / "test.py";
  std::error_code ec;
  if (init.empty() || !fs::is_regular_file(test, ec)) {
    throw LaunchError(fmt::format(
        "run_check runs PaddlePaddle's own check, and {} cannot import paddle{} (install "
        "paddlepaddle or paddlepaddle-gpu there, or set PADDLE_LAUNCH_PYTHON to a Python that "
        "has it)",
        interpreter, init.empty() ? "" : fmt::format(" ({} is not there)", test.string())));
  }
  return ResolveTrainingCommand(test.string(), options.training_script_args, python, path);
}

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

/// What the run says of its elastic mode, the dry run too: the legacy launcher's note when the
/// environment only half asks for it, and that --ips plays no part in it.
void LogElasticDecision(const JobDecision& decision) {
  if (!decision.elastic.info.empty() && !UsesNewInterface(decision.options)) {
    PDLOG_INFO("{}", decision.elastic.info);
  }
  if (decision.elastic.config && decision.options.WasGiven("ips")) {
    PDLOG_WARN("--ips is ignored in elastic mode: the nodes come from etcd");
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

/// --dry_run: what the run would decide, as JSON. A planning error is said as the run says it:
/// after what the planning logged (a usage error alone).
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

// `announce` prints the configuration dump: called once the job's usage checks have passed
// (the cluster, the PS plan, the start port, PaddleCloud's variables), before anything starts,
// so that a usage error stays one line on stderr and nothing on stdout (docs/cli.md).
int RunDecided(JobDecision decision, const EnvMap& env, const std::function<void()>& announce,
               const JobControls& controls = {}) {
  if (decision.slurm) ApplySlurmStep(decision.options, *decision.slurm);
  const LaunchOptions& options = decision.options;
  const LaunchPath& path = decision.path;
  const JobMode mode = decision.mode;
  const bool rpc = decision.rpc;
  const bool ps_counts = decision.ps_counts;
  if (!decision.elastic.config) WarnModeBoundFlags(options);
  if (const std::optional<std::string> note = UnusedMasterNote(decision)) PDLOG_WARN("{}", *note);
  for (const std::string& warning : path.warnings) PDLOG_WARN("{}", warning);
  WarnOfProxies();
  const TrainingCommand command = CommandOf(options);
  if (options.auto_parallel_config && mode == JobMode::kCollective && !rpc) {
    // Paddle's tuner stage, once per node before its ranks (docs/cli.md, "Auto-parallel").
    announce();
    const int nnodes = path.kind == LaunchPath::Kind::kMaster && path.master ? path.master->nnodes
                       : decision.meeting
                           ? decision.meeting->nnodes
                           : static_cast<int>(SplitAndStrip(options.ips, ',').size());
    const int replicas = std::max<int>(
        1, static_cast<int>(internal::ResolveCollectiveDevices(options).devices_per_proc.size()));
    if (const std::optional<int> code =
            internal::RunAutoParallelStages(options, command, replicas, std::max(1, nnodes))) {
      return *code;
    }
  }
  if (path.kind == LaunchPath::Kind::kMaster || rpc || ps_counts) {
    if (!path.master) throw UsageError("--ips cannot be combined with this job's mode");
    MasterSettings settings = *path.master;
    if (!settings.ips.empty()) PlaceThisNode(options, settings, /*say=*/true);
    announce();
    return internal::RunMaster(options, settings, command, ps_counts, rpc, controls);
  }
  if (decision.meeting && mode == JobMode::kCollective) {
    MasterSettings settings = *decision.meeting;
    PlaceThisNode(options, settings, /*say=*/false);
    announce();
    return internal::RunMaster(options, settings, command, false, false, controls);
  }
  if (mode != JobMode::kCollective) return internal::RunPs(options, mode, command, announce);
  const ElasticDecision& elastic = decision.elastic;
  const bool todays_console = UsesNewInterface(options);
  LogElasticDecision(decision);  // Held until the dump is out.
  if (elastic.config) {
    announce();
    return internal::RunElastic(options, *elastic.config, command, controls);
  }
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
  TheRunReport().node_rank = cluster.local_index;
  TheRunReport().nodes = static_cast<int>(cluster.pods.size());
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
  supervisor.status = internal::JobStatus(std::move(console));
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

// One job as a caller that runs several sees it (the auto tuner): run as `launch` would, under
// `controls`, and told how it ended.
RunResult RunJob(JobDecision decision, const EnvMap& env, const std::function<void()>& announce,
                 const JobControls& controls) {
  RunResult result;
  result.exit_code = RunDecided(std::move(decision), env, announce, controls);
  result.deadline_hit = controls.deadline != nullptr && controls.deadline->hit();
  return result;
}

int Run(const LaunchOptions& options) {
  const EnvMap env = EnvironmentMap();
  return RunDecided(Decide(options, env), env, [] {});
}

namespace {

/// A launch refused at set-up (a missing script, a bad #! line, a duplicate endpoint) must not
/// leave behind a log directory it created: removed when this run created it and no process
/// wrote a byte there (what is left are empty logs and the launcher's own endpoints/pod logs).
class LogDirGuard {
 public:
  explicit LogDirGuard(std::string dir)
      : dir_(std::move(dir)), made_(internal::MissingDirectories(dir_)) {}
  void CleanUp() const {
    std::error_code ec;
    if (made_.empty() || !fs::is_directory(dir_, ec)) return;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_, ec)) {
      const std::string name = entry.path().filename().string();
      const bool output = name.starts_with("workerlog.") || name.starts_with("serverlog.") ||
                          name.starts_with("heterlog.");
      if (!entry.is_regular_file(ec) || (output && entry.file_size(ec) != 0)) return;
    }
    fs::remove_all(dir_, ec);
    internal::RemoveEmptyDirectories(made_);  // The parents this run made, if still empty.
  }

 private:
  std::string dir_;
  std::vector<fs::path> made_;  // Deepest first; empty: the directory existed.
};

}  // namespace

namespace {

/// Fills in the outcome and writes --report, if asked; the launcher's exit code is unchanged.
int Finish(const std::optional<std::string>& report_path, int code, const std::string& error) {
  if (!report_path) return code;
  RunReport& report = TheRunReport();
  report.exit_code = code;
  report.end_time = WallClockNow();
  if (!error.empty()) {
    report.reason = error;
  } else if (!report.reason.empty() && code != 0) {
    // Set where the error was said (a rendezvous that failed: its message).
  } else if (code == 0) {
    report.reason = "success";
  } else if (report.root_cause) {
    report.reason = "process failure";
  } else if (report.signal) {
    report.reason = "signal " + SignalName(*report.signal);
  } else {
    report.reason = fmt::format("exit code {}", code);
  }
  if (const auto failed = WriteRunReport(*report_path, report)) {
    fmt::print(stderr, "launch: warning: --report: {}\n", *failed);
  }
  return code;
}

std::string HostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
}

}  // namespace

// How the nodes of a search agree on each trial (docs/auto-tuner.md, "Several nodes"): through
// the job's HTTP master or through etcd; no exchange for a search of one node. With a
// multi-node --ips, each trial is an --ips job of the list and the --master is the search's
// own (`ips_search`).
struct TunerWiring {
  TunerExchange exchange;
  bool ips_search = false;
};

TunerWiring WireTuner(const LaunchOptions& options, const JobDecision& decision,
                      const EnvMap& env) {
  // A search across nodes agrees on each trial through the job's own master (HTTP or etcd).
  TunerWiring wiring;
  // Without --master, the first node would host each job on a port of its own, printing a
  // new command for the others every time: a search across nodes needs the address given.
  const size_t ips_count = SplitAndStrip(decision.options.ips, ',').size();
  const bool several_nodes =
      (decision.elastic.config && decision.elastic.config->np_max > 1) || decision.slurm ||
      (decision.path.master && decision.path.master->nnodes > 1) || ips_count > 1;
  // With a multi-node --ips, an HTTP --master beside it is where the nodes agree, while each
  // trial is an --ips job of the list (docs/auto-tuner.md, "Several nodes").
  std::optional<MasterSettings> agreement;
  wiring.ips_search = options.WasGiven("ips") && ips_count > 1 &&
                      decision.path.kind == LaunchPath::Kind::kDefault &&
                      !decision.elastic.config && options.master &&
                      !options.master->starts_with("etcd://");
  if (wiring.ips_search) {
    LaunchOptions as_master = options;
    as_master.given.erase("ips");
    as_master.ips = "127.0.0.1";
    as_master.nnodes = std::to_string(ips_count);
    agreement = SelectLaunchPath(as_master, env).master;
  } else if (decision.path.kind == LaunchPath::Kind::kMaster && decision.path.master &&
             decision.path.master->nnodes > 1 && decision.path.master->master_given) {
    agreement = decision.path.master;
  }
  if (agreement) {
    wiring.exchange = [&options, settings = *agreement](const std::string& job_id,
                                                        const std::string& value, bool first,
                                                        const std::string& /*trial*/, double wait) {
      if (job_id.empty()) return ExchangeResult{};  // Jobs of a master hold nothing.
      LaunchOptions at = options;
      at.auto_tuner_json.reset();
      at.report.reset();
      // No log of its own: the directory of the tuner's file, which exists.
      const fs::path dir = fs::path(*options.auto_tuner_json).parent_path();
      at.log_dir = dir.empty() ? "." : dir.string();
      // The plan waits for the nodes to start, as a rendezvous does; an outcome, for nodes
      // that ended the same trial: their jobs end within a heartbeat of each other.
      const double timeout =
          first ? settings.rendezvous_timeout : 3 * settings.heartbeat_timeout + options.grace + 10;
      return internal::ExchangeOverMaster(at, settings, job_id, value, std::max(timeout, wait));
    };
  }
  if (decision.elastic.config) {
    // Through etcd (Paddle's way): each trial an etcd job of all the nodes, run once.
    const ElasticConfig& elastic = *decision.elastic.config;
    if (elastic.elastic_level()) {
      throw UsageError(fmt::format(
          "--auto_tuner_json through etcd needs a fixed --nnodes, not {}:{}: every trial "
          "runs on the same nodes",
          elastic.np_min, elastic.np_max));
    }
    if (elastic.level != -1) {
      throw UsageError(fmt::format(
          "--auto_tuner_json runs each trial once: --elastic_level {} would restart or shrink "
          "it (leave it at -1, the default through --master etcd://)",
          elastic.level));
    }
  }
  if (decision.path.kind == LaunchPath::Kind::kEtcd && decision.elastic.config &&
      decision.elastic.config->np_min > 1) {
    // Across nodes, the agreement goes through etcd too.
    const ElasticConfig& elastic = *decision.elastic.config;
    // One client: the exchange's, which also removes each trial's keys.
    std::shared_ptr<KvStore> store = MakeEtcdStore(elastic.server, std::chrono::milliseconds(3000));
    std::optional<JobToken> token;
    if (const JobToken* given = internal::TheJobToken()) token = *given;
    auto call = internal::MakeStoreExchange(store, options.job_id.value_or("default"),
                                            elastic.np_min, elastic.timeout_seconds, token);
    wiring.exchange = [&options, call, store, rendezvous = options.rendezvous_timeout,
                       outcome = elastic.ttl_seconds + options.grace + 10](
                          const std::string& job_id, const std::string& value, bool first,
                          const std::string& trial_job, double wait) {
      // The plan waits for the nodes to start, as a rendezvous does; an outcome, for nodes
      // that ended the same trial: a node's departure ends it on the others within its TTL.
      if (job_id.empty()) return call("", "", 0);
      ExchangeResult result = call(job_id, value, std::max(first ? rendezvous : outcome, wait));
      if (result.code == 0 && !trial_job.empty()) {
        // Every node is past the trial's job: its keys go (a failed etcd job keeps its
        // failure record for nodes that come late; none of a trial's does).
        const ElasticKeys trial(TrialKeyJob(options, trial_job));
        try {
          store->DeletePrefix(trial.prefix());
          store->Delete(trial.status());
        } catch (const KvUnavailable& e) {
          PDLOG_WARN("auto tuner: cannot remove the keys of {}: {}", trial.job, e.what());
        }
      }
      return result;
    };
  }
  if (!wiring.exchange && several_nodes) {
    throw UsageError(kTunerNeedsAMaster);
  }
  return wiring;
}

int Main(int argc, char** argv) {
  // On every way out: the watchdogs, disarmed, exit at once; reaped here, none is left a zombie
  // for a PID 1 that does not reap (docs/design.md, Parent death).
  struct ReapAtExit {
    ~ReapAtExit() {
      if (const size_t left = ReapWatchdogs(std::chrono::seconds(2)); left > 0) {
        PDLOG_DEBUG("{} watchdog(s) had not exited 2 s after the job", left);
      }
    }
  } reap_at_exit;
  // Descriptors 0-2 exist (on /dev/null where the caller closed them, `launch ... >&-`): a file
  // opened later must not become our stdout or stderr, nor a rank's log its own stdout.
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0 && errno == EBADF) ::open("/dev/null", O_RDWR);
  }
  // The console may go away (a closed pipe); that must not kill the launcher and orphan the job.
  ::signal(SIGPIPE, SIG_IGN);
  // Before any thread exists (Asio's resolver's): every thread inherits the block.
  BlockLauncherSignals();
  // An inherited SIG_IGN would make the kernel reap our children before we see their status.
  ::signal(SIGCHLD, SIG_DFL);
  RaiseOpenFileLimit();
  SetupLogging();
  RunReport& report = TheRunReport();
  report.version = kVersion;
  report.command_line.assign(argv, argv + argc);
  report.host = HostName();
  report.start_time = WallClockNow();
  std::optional<LogDirGuard> log_dir;
  std::optional<std::string> report_path;  // Known once parsed; a usage error writes none.
  std::function<void()> announce;          // Prints the configuration dump, once.
  try {
    CommandLine command_line = ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
    if (command_line.exit_text) {
      fmt::print("{}", *command_line.exit_text);
      return 0;
    }
    LaunchOptions& options = command_line.options;
    internal::TheJobToken();  // Taken out of the environment before anything reads it.
    const EnvMap env = EnvironmentMap();
    const std::vector<std::string> notes = ApplyEnvironmentTwins(options, env);
    // The auto tuner's nodes agree on each trial through its own master, and each trial is an
    // --ips job of the list as Paddle 2 ran it (docs/auto-tuner.md, "Several nodes").
    if (options.auto_tuner_json) options.nodes_meet = false;
    SetLogLevel(options.log_level);
    // Today's interface gets today's console (docs/cli.md, "Console"), usage errors aside.
    const bool todays_console = UsesNewInterface(options);
    if (todays_console) SetLogStyle(LogStyle::kLaunch);
    options.program = argv[0];
    options.command_line.assign(argv + 1, argv + argc);
    JobDecision decision = Decide(options, env);  // Usage errors: one line, nothing else.
    if (options.auto_tuner_json && options.dry_run)
      return PrintAutoTunerPlan(options,
                                [&options] { return internal::ResolveCollectiveDevices(options); });
    if (options.dry_run) return RunDryRun(decision);  // No dump, no log dir, no report.
    if (options.report) {
      // A report that cannot be written is said now, before anything starts: set-up error.
      if (const std::optional<std::string> problem = ReportPathProblem(*options.report)) {
        throw LaunchError(
            fmt::format("cannot write --report file '{}': {}", *options.report, *problem));
      }
    }
    report_path = options.report;
    report.mode = decision.rpc                            ? "rpc"
                  : decision.mode == JobMode::kCollective ? "collective"
                                                          : "ps";
    report.launch_path = PathName(decision);
    log_dir.emplace(decision.options.log_dir);
    // The dump comes first on the console, once the path's usage checks have passed: what the
    // planning logs before it is held and written right after it (logging.h).
    HoldLines();
    for (const std::string& note : notes) PDLOG_INFO("{}", note);
    // By value: the error handlers below may call it after `options` is gone.
    if (todays_console) {
      // Paddle 2.3+ logs its options, then the job, through its logger (docs/cli.md, "Configuration
      // dump").
      std::vector<std::string> first = ConfigurationLogLines(options);
      // An elastic job of the legacy flags in today's console: its --np is its node count.
      const std::string nodes =
          options.nnodes ? *options.nnodes
                         : (decision.elastic.config ? decision.options.np.value_or("") : "");
      first.push_back(FormatJobLine(options.job_id.value_or("default"), report.mode, nodes));
      announce = [first = std::move(first), announced = false]() mutable {
        if (announced) return;
        announced = true;
        ReleaseHeldLines(first);
      };
    } else {
      announce = [dump = FormatConfigurationArguments(options), announced = false]() mutable {
        if (announced) return;
        announced = true;
        fmt::print("{}", dump);
        std::fflush(stdout);
        ReleaseHeldLines();
      };
    }
    const TunerWiring tuner =
        options.auto_tuner_json ? WireTuner(options, decision, env) : TunerWiring{};
    const int code =
        options.auto_tuner_json
            ? RunAutoTuner(
                  options, [&options] { return internal::ResolveCollectiveDevices(options); },
                  [&](LaunchOptions trial, const JobControls& controls) {
                    // With --ips, the --master is the tuner's, not the trial's.
                    if (tuner.ips_search) trial.master.reset();
                    return RunJob(Decide(trial, env), env, announce, controls);
                  },
                  tuner.exchange, announce)
            : RunDecided(std::move(decision), env, announce);
    ReleaseHeldLines();
    // Paddle's finalize line, once a pod was deployed (not after a failed rendezvous).
    // A run ended by a signal ends with "Exit with signal N" instead, as Paddle's.
    if (todays_console && !report.processes.empty() && !report.signal) {
      PDLOG_INFO("Exit code {}", code);
    }
    return Finish(report_path, code, "");
  } catch (const LaunchError& e) {
    // A usage error is alone; a set-up error comes after the dump and what was logged, as the
    // run would have printed them.
    if (e.exit_code() == kExitUsageError) {
      DropHeldLines();
    } else if (announce) {
      announce();
    }
    std::fflush(stdout);
    if (argc == 1) {  // A bare `launch`: the short usage line.
      fmt::print(stderr, "usage: launch [options] training_script [training_script_args ...]\n");
    }
    fmt::print(stderr, "launch: error: {}\n", OneLine(e.what()));
    if (log_dir) log_dir->CleanUp();
    return Finish(e.exit_code() == kExitUsageError ? std::nullopt : report_path, e.exit_code(),
                  e.what());
  } catch (const std::exception& e) {
    if (announce) announce();
    std::fflush(stdout);
    fmt::print(stderr, "launch: error: {}\n", OneLine(e.what()));
    if (log_dir) log_dir->CleanUp();
    return Finish(report_path, kExitSetupError, e.what());
  }
}

}  // namespace pdlaunch
