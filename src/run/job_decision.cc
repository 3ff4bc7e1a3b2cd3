// The decision (job_decision.h): every usage check of a command line, the launch path, the mode,
// the elastic decision, what each rank runs; nothing is printed or started here but warnings
// held for after the configuration dump.
#include "run/job_decision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "base/small_file.h"
#include "pdlaunch/base/environment.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/options/address_syntax.h"
#include "pdlaunch/plan/address_lookup.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/ports.h"
#include "pdlaunch/process/device_probe.h"
#include "run/auto_parallel.h"
#include "run/collective_plan.h"
#include "run/node_inputs.h"

namespace pdlaunch {
namespace fs = std::filesystem;

namespace {

using internal::GivenStartPort;

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

}  // namespace

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

void PlaceThisNode(const LaunchOptions& options, MasterSettings& settings, bool say) {
  const NodeIdentity node =
      internal::ResolveThisNode(fmt::format("{}", fmt::join(settings.ips, ",")), options.host, say);
  settings.rank = node.node_index;
  settings.host = node.node_ips.at(static_cast<size_t>(node.node_index));
  settings.hosting = static_cast<size_t>(node.node_index) == settings.master_index;
}

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

void LogElasticDecision(const JobDecision& decision) {
  if (!decision.elastic.info.empty() && !UsesNewInterface(decision.options)) {
    PDLOG_INFO("{}", decision.elastic.info);
  }
  if (decision.elastic.config && decision.options.WasGiven("ips")) {
    PDLOG_WARN("--ips is ignored in elastic mode: the nodes come from etcd");
  }
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

}  // namespace pdlaunch
