#include "cli/flag_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <span>
#include <string>
#include <string_view>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/seconds.h"
#include "pdlaunch/cli/cli.h"
#include "pdlaunch/options/address_syntax.h"
#include "pdlaunch/options/echo_choice.h"

namespace pdlaunch::flags {

namespace {
// `flag` is "--name" for a command-line value and the variable's name for an environment twin.
[[noreturn]] void ThrowInvalid(std::string_view flag, std::string_view type,
                               const std::string& value, std::string_view hint = "") {
  const std::string what =
      flag.starts_with("--") ? fmt::format("argument {}", flag) : fmt::format("{}", flag);
  throw UsageError(fmt::format("{}: invalid {} value: '{}'{}", what, type, value, hint));
}

// Python's int() for decimal text: surrounding whitespace and a leading '+' allowed. Unlike
// strtol with base 0, "010" is ten (not octal) and "0x10" is an error, as in argparse.
int ToInt(std::string_view flag, const std::string& value) {
  std::string_view text = StripSpace(value);
  if (text.size() > 1 && text.front() == '+' && text[1] != '-') text.remove_prefix(1);
  int number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    ThrowInvalid(flag, "int", value);
  }
  return number;
}

int ToPort(std::string_view flag, const std::string& value) {
  const int port = ToInt(flag, value);
  if (port < 1 || port > 65535) ThrowInvalid(flag, "port", value, " (expected 1..65535)");
  return port;
}

double ToPositiveSeconds(std::string_view flag, const std::string& value);

double ToSeconds(std::string_view flag, const std::string& value) {
  const std::optional<double> seconds = ParseSeconds(StripSpace(value));
  if (!seconds) ThrowInvalid(flag, "non-negative float", value);
  return *seconds;
}

// The words of Python's strtobool, which today's launcher uses for its bool flags.
constexpr std::array<std::string_view, 6> kTrueWords = {"y", "yes", "t", "true", "on", "1"};
constexpr std::array<std::string_view, 6> kFalseWords = {"n", "no", "f", "false", "off", "0"};

bool IsWordOf(std::string_view text, const std::array<std::string_view, 6>& words) {
  const std::string lower = AsciiLower(text);
  return std::find(words.begin(), words.end(), lower) != words.end();
}

}  // namespace

bool IsBoolLiteral(std::string_view text) {
  return IsWordOf(text, kTrueWords) || IsWordOf(text, kFalseWords);
}

// Paddle's type=bool made "--force False" true (docs/cli.md, "Differences from Paddle"); this reads
// the word as strtobool does.
bool ToBool(std::string_view flag, const std::string& value) {
  if (!IsBoolLiteral(value)) {
    ThrowInvalid(flag, "bool", value, " (use true/false, yes/no, on/off, 1/0)");
  }
  return IsWordOf(value, kTrueWords);
}

namespace {

template <auto Field>
void StoreText(LaunchOptions& options, std::string_view, const std::string& value) {
  options.*Field = value;
}

template <auto Field>
void StoreInt(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.*Field = ToInt(flag, value);
}

void StoreLogDir(LaunchOptions& options, std::string_view flag, const std::string& value) {
  if (value.empty()) {
    ThrowInvalid(flag, "directory", value, " (use --log_dir . for the current directory)");
  }
  options.log_dir = value;
}

// The job id names files (<job_id>.<pod>.log in the log directory) and is the first component
// of the master's and etcd's keys (/<job_id>/...), sent unescaped in HTTP request targets: a
// '/' or a dot-only id would put them elsewhere, '?', '#', '%' or a space would cut or break
// the request, an empty one would hide the file. Kubernetes job names fit.
void StoreJobId(LaunchOptions& options, std::string_view flag, const std::string& value) {
  if (value.empty() || value == "." || value == ".." ||
      !std::all_of(value.begin(), value.end(), IsHostNameChar)) {
    ThrowInvalid(flag, "job id", value,
                 " (a name: letters, digits, '-', '_' and '.', not '.' or '..')");
  }
  // <job_id>.<pod>.log must fit in a file name (255 bytes): 11 of them are ".<pod>.log".
  if (value.size() > 244) {
    throw UsageError(
        fmt::format("argument {}: the job id is {} characters long; at most 244 fit "
                    "in the pod log's file name",
                    flag, value.size()));
  }
  options.job_id = value;
}

// A port, whatever the mode: --http_port is used by parameter-server jobs only, but a value no
// job could use is refused in every one.
template <auto Field>
void StorePort(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.*Field = ToPort(flag, value);
}

void StoreHost(LaunchOptions& options, std::string_view flag, const std::string& value) {
  if (StripSpace(value).empty()) {
    ThrowInvalid(flag, "host", value, " (leave --host out to find this node's address)");
  }
  options.host = value;
}

void StoreStartPort(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.start_port = ToPort(flag, value);
}

void StoreEcho(LaunchOptions& options, std::string_view, const std::string& value) {
  ParseEchoChoice(value);  // A usage error now, not when the processes start.
  options.echo = value;
}

void StoreReport(LaunchOptions& options, std::string_view flag, const std::string& value) {
  if (StripSpace(value).empty()) {
    throw UsageError(fmt::format("argument {}: expected a file name", flag));
  }
  options.report = value;
}

void StoreDryRun(LaunchOptions& options, std::string_view, const std::string&) {
  options.dry_run = true;
}

void StoreNumaBinding(LaunchOptions& options, std::string_view flag, const std::string& value) {
  // plan/numa.h's ParseNumaBinding reads the same four words.
  if (value != "none" && value != "node" && value != "socket" && value != "exclusive") {
    throw UsageError(fmt::format(
        "argument {}: invalid choice: '{}' (choose from 'none', 'node', 'socket', 'exclusive')",
        flag, OneLine(value)));
  }
  options.numa_binding = value;
}

void StoreGrace(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.grace = ToSeconds(flag, value);
}

template <auto Field>
void StoreBool(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.*Field = ToBool(flag, value);
}

// A bool passed on to the ranks as the word given (PADDLE_AUTO_CLUSTER).
template <auto Field>
void StoreBoolWord(LaunchOptions& options, std::string_view flag, const std::string& value) {
  ToBool(flag, value);
  options.*Field = value;
}

template <auto Field>
void StorePositiveSeconds(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.*Field = ToPositiveSeconds(flag, value);
}

void StoreNnodes(LaunchOptions& options, std::string_view flag, const std::string& value) {
  const std::string_view text = StripSpace(value);
  const size_t colon = text.find(':');
  const auto count = [&](std::string_view part) {
    int n = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), n);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || n < 1) {
      ThrowInvalid(flag, "node count", value, " (expected N or MIN:MAX, N >= 1)");
    }
    return n;
  };
  if (colon == std::string_view::npos) {
    count(text);
  } else if (count(text.substr(0, colon)) > count(text.substr(colon + 1))) {
    ThrowInvalid(flag, "node count", value, " (MIN:MAX needs MIN <= MAX)");
  }
  options.nnodes = std::string(text);
}

void StoreRank(LaunchOptions& options, std::string_view flag, const std::string& value) {
  options.rank = ToInt(flag, value);
  if (options.rank < -1) ThrowInvalid(flag, "rank", value, " (expected -1 or a node rank >= 0)");
}

void StoreLogLevel(LaunchOptions& options, std::string_view flag, const std::string& value) {
  std::string upper = AsciiUpper(StripSpace(value));
  if (upper == "WARN") upper = "WARNING";
  if (std::find(kLogLevels.begin(), kLogLevels.end(), upper) == kLogLevels.end() &&
      upper != "NOTSET") {
    ThrowInvalid(flag, "log level", value, " (choose from DEBUG, INFO, WARNING, ERROR, CRITICAL)");
  }
  options.log_level = upper;
}

double ToPositiveSeconds(std::string_view flag, const std::string& value) {
  const double seconds = ToSeconds(flag, value);
  if (seconds <= 0) ThrowInvalid(flag, "positive float", value);
  return seconds;
}

constexpr std::string_view kOptionalGroup = "optional arguments";
constexpr std::string_view kBaseGroup = "Base Parameters";
constexpr std::string_view kLaunchGroup = "Launch Parameters (paddle.distributed.launch)";
constexpr std::string_view kCollectiveGroup = "Collective Parameters";
constexpr std::string_view kPsGroup = "Parameter-Server Parameters";
constexpr std::string_view kElasticGroup = "Elastic Parameters";
constexpr std::string_view kOwnGroup = "pdlaunch Parameters";

using LO = LaunchOptions;
constexpr Tier L = Tier::kLegacy;
constexpr Tier N = Tier::kNew;
constexpr Tier O = Tier::kOwn;

// Every option: the legacy launcher's in its declaration order (fleet/launch.py), today's
// launcher's (launch/context/args_envs.py), then pdlaunch's own. The last field is the environment
// twin.
const auto kFlags = std::to_array<FlagSpec>({
    {"--help", "help", Kind::kHelp, L, nullptr, kOptionalGroup, "show this help message and exit",
     ""},
    {"--version", "version", Kind::kVersion, O, nullptr, kOptionalGroup,
     "show program's version number and exit", ""},
    {"--log_dir", "log_dir", Kind::kValue, L, &StoreLogDir, kBaseGroup,
     "Directory of the log files (workerlog.N, ...). Default: log", "", "PADDLE_LOG_DIR"},
    {"--backend", "backend", Kind::kValue, L, &StoreText<&LO::backend>, kBaseGroup,
     "Collective backend: auto (the devices' own: nccl on GPUs, bkcl on XPUs, xccl on "
     "PADDLE_XCCL_BACKEND's cards, else gloo), nccl, bkcl, xccl, heter (parameter server) or "
     "gloo (CPU). Default: auto",
     ""},
    {"--nproc_per_node", "nproc_per_node", Kind::kValue, L, &StoreInt<&LO::nproc_per_node>,
     kBaseGroup,
     "Processes on this node. Default: one per device (--devices, the visible-devices variable "
     "or the devices found), else 1. With devices, each process gets an equal share of them.",
     "", "PADDLE_NPROC_PER_NODE"},
    {"--run_mode", "run_mode", Kind::kValue, L, &StoreText<&LO::run_mode>, kBaseGroup,
     "collective (default), ps, ps-heter or rpc (rpc needs --master)", "", "PADDLE_RUN_MODE"},
    {"--gpus", "gpus", Kind::kValue, L, &StoreText<&LO::gpus>, kBaseGroup,
     "Devices to use, e.g. 0,1,2,3: one process each (relative to CUDA_VISIBLE_DEVICES).", ""},
    {"--selected_gpus", "gpus", Kind::kValue, L, &StoreText<&LO::gpus>, kBaseGroup,
     "Deprecated alias of --gpus.", ""},
    {"--xpus", "xpus", Kind::kValue, L, &StoreText<&LO::xpus>, kBaseGroup,
     "Kunlun XPUs to use, e.g. 0,1: one process each (labels of XPU_VISIBLE_DEVICES); picks the "
     "XPU family (bkcl).",
     ""},
    {"--selected_xpus", "xpus", Kind::kValue, L, &StoreText<&LO::xpus>, kBaseGroup,
     "Deprecated alias of --xpus.", ""},
    {"--ips", "ips", Kind::kValue, L, &StoreText<&LO::ips>, kCollectiveGroup,
     "Comma list of the nodes' addresses or host names, or a file of one per line (its first "
     "token), the same on every node; each node runs the same command and finds itself in it, "
     "and the nodes meet at the first before any rank starts. Default: 127.0.0.1",
     "", "PADDLE_IPS"},
    {"--servers", "servers", Kind::kValue, L, &StoreText<&LO::servers>, kPsGroup,
     "Parameter servers, ip:port,...", "", "PADDLE_SERVERS_ENDPOINTS"},
    {"--workers", "workers", Kind::kValue, L, &StoreText<&LO::workers>, kPsGroup,
     "Workers (trainers), ip:port,... or ip,...", "", "PADDLE_TRAINERS_ENDPOINTS"},
    {"--heter_workers", "heter_workers", Kind::kValue, L, &StoreText<&LO::heter_workers>, kPsGroup,
     "Heter workers of each stage, ip1:port1;ip2:port2", ""},
    {"--heter_devices", "heter_devices", Kind::kValue, L, &StoreText<&LO::heter_devices>, kPsGroup,
     "Device of each heter stage, cpu;gpu;cpu", ""},
    {"--worker_num", "worker_num", Kind::kValue, L, &StoreInt<&LO::worker_num>, kPsGroup,
     "Workers on this host (1 with --master and no --workers)", "", "PADDLE_TRAINER_NUM"},
    {"--server_num", "server_num", Kind::kValue, L, &StoreInt<&LO::server_num>, kPsGroup,
     "Servers on this host (1 with --master and no --servers)", "", "PADDLE_SERVER_NUM"},
    {"--heter_worker_num", "heter_worker_num", Kind::kValue, L, &StoreText<&LO::heter_worker_num>,
     kPsGroup, "Heter workers of each stage, 1;2;3", ""},
    {"--http_port", "http_port", Kind::kValue, L, &StorePort<&LO::http_port>, kPsGroup,
     "Gloo HTTP port", "", "PADDLE_GLOO_PORT"},
    {"--elastic_server", "elastic_server", Kind::kValue, L, &StoreText<&LO::elastic_server>,
     kElasticGroup, "etcd server host:port", ""},
    {"--job_id", "job_id", Kind::kValue, L, &StoreJobId, kElasticGroup,
     "Job id: the key namespace at the master or etcd, and the pod log's name. Default: default",
     "", "PADDLE_JOB_ID"},
    {"--np", "np", Kind::kValue, L, &StoreText<&LO::np>, kElasticGroup,
     "Nodes of an elastic job: N, or N:M for a range", ""},
    {"--scale", "scale", Kind::kValue, L, &StoreInt<&LO::scale>, kElasticGroup,
     "Scale np by this many nodes (elastic). Default: 0", ""},
    {"--host", "host", Kind::kValue, L, &StoreHost, kElasticGroup,
     "This node's address (default: env POD_IP, else detected)", ""},
    {"--force", "force", Kind::kOptionalBool, L, &StoreBool<&LO::force>, kElasticGroup,
     "Replace the np recorded in etcd", ""},
    {"--elastic_pre_hook", "elastic_pre_hook", Kind::kValue, L, &StoreText<&LO::elastic_pre_hook>,
     kElasticGroup, "Shell command run before every launch", ""},
    {"--max_restart", "max_restart", Kind::kValue, L, &StoreInt<&LO::max_restart>, kElasticGroup,
     "Restart budget of an elastic job. Default: 3", ""},
    {"--master", "master", Kind::kValue, N, &StoreText<&LO::master>, kLaunchGroup,
     "Rendezvous: ip:port of the HTTP master (the node with that address hosts it), :PORT (on "
     "the first node of --ips), or etcd://host:port. Absent with --nnodes >= 2: this node hosts "
     "it and prints the command for the others.",
     "", "PADDLE_MASTER"},
    {"--nnodes", "nnodes", Kind::kValue, N, &StoreNnodes, kLaunchGroup,
     "Number of nodes, N (or MIN:MAX with an etcd master). Default: 1", "", "PADDLE_NNODES"},
    {"--rank", "rank", Kind::kValue, N, &StoreRank, kLaunchGroup,
     "This node's rank, 0..nnodes-1. Default: -1, assigned by the master (its host is 0)", "",
     "PADDLE_RANK"},
    {"--devices", "gpus", Kind::kValue, N, &StoreText<&LO::gpus>, kLaunchGroup,
     "Devices to use, e.g. 0,1: labels of the visible-devices variable of the device family "
     "found (CUDA_VISIBLE_DEVICES, XPU_VISIBLE_DEVICES, <TYPE>_VISIBLE_DEVICES with "
     "PADDLE_XCCL_BACKEND=<type>); aliases --gpus, --npus",
     "", "PADDLE_DEVICES"},
    {"--npus", "gpus", Kind::kValue, N, &StoreText<&LO::gpus>, kLaunchGroup, "Alias of --devices.",
     ""},
    {"--log_level", "log_level", Kind::kValue, N, &StoreLogLevel, kLaunchGroup,
     "Level of the launcher's own messages: DEBUG, INFO, WARNING, ERROR, CRITICAL. Default: INFO",
     "", "PADDLE_LOG_LEVEL"},
    {"--legacy", "legacy", Kind::kOptionalBool, N, &StoreBool<&LO::legacy>, kLaunchGroup,
     "Behave as the legacy launcher (endpoints.log instead of the pod log)", ""},
    {"--sort_ip", "sort_ip", Kind::kOptionalBool, N, &StoreBool<&LO::sort_ip>, kLaunchGroup,
     "Order the nodes by IPv4 address instead of the master's order", "", "PADDLE_SORT_IP"},
    {"--trainer_num", "worker_num", Kind::kValue, N, &StoreInt<&LO::worker_num>, kLaunchGroup,
     "Parameter server: trainers on this node (alias of --worker_num)", ""},
    {"--trainers", "workers", Kind::kValue, N, &StoreText<&LO::workers>, kLaunchGroup,
     "Parameter server: trainer endpoints (alias of --workers)", ""},
    {"--gloo_port", "http_port", Kind::kValue, N, &StorePort<&LO::http_port>, kLaunchGroup,
     "Parameter server: gloo HTTP port (alias of --http_port)", ""},
    {"--with_gloo", "with_gloo", Kind::kValue, N, &StoreText<&LO::with_gloo>, kLaunchGroup,
     "PADDLE_WITH_GLOO of a parameter-server job's processes (collective ranks get the "
     "environment's)",
     "", "PADDLE_WITH_GLOO"},
    {"--elastic_level", "elastic_level", Kind::kValue, N, &StoreInt<&LO::elastic_level>,
     kLaunchGroup, "Elastic level of an etcd job (-1: none)", "", "PADDLE_ELASTIC_LEVEL"},
    {"--elastic_timeout", "elastic_timeout", Kind::kValue, N, &StoreInt<&LO::elastic_timeout>,
     kLaunchGroup, "Seconds an etcd job waits for its nodes", ""},
    {"--enable_gpu_log", "enable_gpu_log", Kind::kOptionalBool, N, &StoreBool<&LO::enable_gpu_log>,
     kLaunchGroup,
     "Write <log_dir>/<job_id>.gpu.log on GPUs: nvidia-smi samples every "
     "PDLAUNCH_GPU_LOG_PERIOD seconds (30). Default: true",
     ""},
    {"--auto_cluster_config", "auto_cluster_config", Kind::kOptionalBool, N,
     &StoreBoolWord<&LO::auto_cluster_config>, kLaunchGroup,
     "Passed to the processes as PADDLE_AUTO_CLUSTER", "", "PADDLE_AUTO_CLUSTER"},
    {"--auto_parallel_config", "auto_parallel_config", Kind::kValue, N,
     &StoreText<&LO::auto_parallel_config>, kLaunchGroup,
     "A JSON file for Paddle's static auto-parallel engine: the script runs once as its tuner "
     "stage (tuner.log) before the ranks, per its tuner_run_mode",
     "", "PADDLE_AUTO_PARALLEL_CONFIG"},
    {"--auto_tuner_json", "auto_tuner_json", Kind::kValue, N, &StoreText<&LO::auto_tuner_json>,
     kLaunchGroup,
     "Search the fastest parallel layout (dp, mp, pp, sharding, micro batch, recompute) with "
     "short trials of the script, then run the best (docs/auto-tuner.md)",
     ""},
    {"--start_port", "start_port", Kind::kValue, O, &StoreStartPort, kOwnGroup,
     "First port of the trainers' fixed ports; takes precedence over env FLAGS_START_PORT, "
     "which takes precedence over env PADDLE_START_PORT.",
     ""},
    {"--log_overwrite", "log_overwrite", Kind::kOptionalBool, O, &StoreBool<&LO::log_overwrite>,
     kOwnGroup,
     "Truncate the log files instead of appending to them: --log_overwrite, or with a value "
     "(True, 1, false, ...). Default: false",
     "", "PADDLE_LOG_OVERWRITE"},
    {"--nodes_meet", "nodes_meet", Kind::kOptionalBool, O, &StoreBool<&LO::nodes_meet>, kOwnGroup,
     "The nodes of a multi-node --ips meet at a master on the first before any rank starts, "
     "check that they agree, and fail as one (docs/multi-node.md). false: they never talk, as "
     "Paddle 2's. Default: true",
     "", "PDLAUNCH_NODES_MEET"},
    {"--echo", "echo", Kind::kValue, O, &StoreEcho, kOwnGroup,
     "Show these local processes' output on the console, each line prefixed with its rank "
     "([rank 3]: ...; the node's host first in a multi-node job): all, none, or local ranks "
     "such as 0,3,5. Default: local rank 0, unprefixed, as Paddle.",
     "", "PADDLE_ECHO"},
    {"--dry_run", "dry_run", Kind::kFlag, O, &StoreDryRun, kOwnGroup,
     "Print what a run would do (mode, devices, cluster, ports, each process's command and "
     "variables) as JSON on stdout; start nothing, write no file",
     ""},
    {"--report", "report", Kind::kValue, O, &StoreReport, kOwnGroup,
     "Write a JSON report of the run to FILE when the launcher exits: every process, its exit, "
     "the root cause (docs/report.md)",
     "", "PADDLE_REPORT"},
    {"--numa_binding", "numa_binding", Kind::kValue, O, &StoreNumaBinding, kOwnGroup,
     "Bind each rank to the NUMA node of its GPU before it starts (torchrun's --numa-binding): "
     "node (its CPUs, memory preferred from it), socket (the CPUs of its socket), exclusive "
     "(the node's CPUs split among its ranks) or none. Default: none",
     "", "PDLAUNCH_NUMA_BINDING"},
    {"--grace", "grace", Kind::kValue, O, &StoreGrace, kOwnGroup,
     "Seconds between SIGTERM and SIGKILL when the trainers are stopped. Default 5.", ""},
    {"--rendezvous_timeout", "rendezvous_timeout", Kind::kValue, O,
     &StorePositiveSeconds<&LO::rendezvous_timeout>, kOwnGroup,
     "Master mode: seconds to wait for every node to join. Default 600.", "",
     "PADDLE_RENDEZVOUS_TIMEOUT"},
    {"--heartbeat_timeout", "heartbeat_timeout", Kind::kValue, O,
     &StorePositiveSeconds<&LO::heartbeat_timeout>, kOwnGroup,
     "Master mode: a node (or the master) not heard from for this many seconds is lost and the "
     "job stops. Default 10.",
     "", "PADDLE_HEARTBEAT_TIMEOUT"},
});

}  // namespace

std::span<const FlagSpec> All() { return kFlags; }

const FlagSpec* Find(std::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

bool IsPrimary(const FlagSpec& flag) { return flag.name.substr(2) == flag.dest; }

// Today's parser: python/paddle/distributed/launch/context/args_envs.py, parse_args (-h/--help
// first); the legacy one: python/paddle/distributed/fleet/launch.py, _parse_args
//. Four names a row.
// clang-format off
constexpr std::string_view kTodaysParser[] = {
    "--help",          "--master",          "--legacy",          "--rank",
    "--log_level",     "--log_overwrite",   "--sort_ip",         "--enable_gpu_log",
    "--nnodes",        "--nproc_per_node",  "--log_dir",         "--run_mode",
    "--job_id",        "--devices",         "--gpus",            "--npus",
    "--xpus",          "--host",            "--ips",             "--start_port",
    "--auto_parallel_config", "--auto_cluster_config", "--auto_tuner_json", "--servers",
    "--trainers",      "--trainer_num",     "--server_num",      "--gloo_port",
    "--with_gloo",     "--max_restart",     "--elastic_level",   "--elastic_timeout"};
constexpr std::string_view kLegacyParser[] = {
    "--help",          "--log_dir",         "--backend",         "--nproc_per_node",
    "--run_mode",      "--gpus",            "--selected_gpus",   "--xpus",
    "--selected_xpus", "--ips",             "--servers",         "--workers",
    "--heter_workers", "--heter_devices",   "--worker_num",      "--server_num",
    "--heter_worker_num", "--http_port",    "--elastic_server",  "--job_id",
    "--np",            "--scale",           "--host",            "--force",
    "--elastic_pre_hook"};
// clang-format on

std::span<const std::string_view> TodaysParser() { return kTodaysParser; }
std::span<const std::string_view> LegacyParser() { return kLegacyParser; }

std::span<const Group> Groups() {
  // In the order a newcomer needs them: one node (the script, --nproc_per_node, --log_dir),
  // several nodes (today's --master/--nnodes, then --ips), pdlaunch's tools (--dry_run, --echo,
  // --report), then the modes fewer jobs use (parameter server, elastic).
  static constexpr std::array<Group, 7> kGroups = {{
      {kOptionalGroup, ""},
      {kBaseGroup, ""},
      {kLaunchGroup,
       "The flags of today's python -m paddle.distributed.launch. Several hosts without an IP "
       "list: --master ip:port --nnodes N on every node (docs/master.md)."},
      {kCollectiveGroup, ""},
      {kOwnGroup, "Options of pdlaunch that Paddle's launcher does not have."},
      {kPsGroup, "Parameter-server jobs: servers, workers and heter workers (docs/ps.md)."},
      {kElasticGroup,
       "Elastic and fault-tolerant jobs coordinated through etcd (docs/elastic.md). --host also "
       "selects this node in --ips in collective mode."},
  }};
  return kGroups;
}

bool IsStringDest(std::string_view dest) {
  return dest == "log_dir" || dest == "job_id" || dest == "host" || dest == "nnodes" ||
         dest == "log_level";
}

}  // namespace pdlaunch::flags
