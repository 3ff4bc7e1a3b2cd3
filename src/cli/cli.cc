#include "pdlaunch/cli/cli.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/seconds.h"
#include "pdlaunch/base/version.h"
#include "pdlaunch/cli/address_syntax.h"
#include "pdlaunch/cli/echo_choice.h"

namespace pdlaunch {

namespace {

enum class Tier {
  kLegacy,  // paddle.distributed.fleet.launch (the legacy contract)
  kNew,     // paddle.distributed.launch since Paddle 2.3 (paddle-new-launch.md §2.1)
  kOwn,     // pdlaunch's additions
};

enum class Kind {
  kValue,         // --opt VALUE, --opt=VALUE
  kFlag,          // --opt
  kOptionalBool,  // --opt, --opt=BOOL, --opt BOOL (BOOL one of true/false/1/0)
  kHelp,
  kVersion,
};

// Converts and stores one value; `flag` is the option's primary name, for messages.
using Store = void (*)(LaunchOptions& options, std::string_view flag, const std::string& value);

struct FlagSpec {
  std::string_view name;  // Long name as typed, "--gpus".
  std::string_view dest;  // argparse destination, shared by aliases.
  Kind kind;
  // Who declared it (the interface a command line uses; a prefix is resolved by ResolveFlag).
  Tier tier;
  Store store;                // nullptr for --help and --version.
  std::string_view group;     // Help section.
  std::string_view help;      // Empty: no help text.
  std::string_view refused;   // Non-empty: not supported yet; the reason in parentheses.
  std::string_view env = {};  // Environment twin (paddle-new-launch.md §2.2); empty: none.
};

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

bool IsBoolLiteral(std::string_view text) {
  return IsWordOf(text, kTrueWords) || IsWordOf(text, kFalseWords);
}

// Paddle's type=bool made "--force False" true (contract §9 bug 6); this reads the word as
// strtobool does.
bool ToBool(std::string_view flag, const std::string& value) {
  if (!IsBoolLiteral(value)) {
    ThrowInvalid(flag, "bool", value, " (use true/false, yes/no, on/off, 1/0)");
  }
  return IsWordOf(value, kTrueWords);
}

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

// Every option: the legacy launcher's in its declaration order (contract §1.2), today's launcher's
// (paddle-new-launch.md §2.1), then pdlaunch's own. The last field is the environment twin.
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
     "([rank 3]: ...; the node's host first in a multi-node job): all, or local ranks such as "
     "0,3,5. Default: local rank 0, unprefixed, as Paddle.",
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

bool IsPrimary(const FlagSpec& flag) { return flag.name.substr(2) == flag.dest; }

const FlagSpec* FindExact(std::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

// Spellings of other launchers (torchrun's dashes, its renamed flags) that mean one of ours.
std::string_view KnownSpelling(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 13> kOthers = {{
      {"max_restarts", "--max_restart"},
      {"node_rank", "--rank"},
      {"master_addr", "--master"},
      {"master_port", "--master"},
      {"rdzv_endpoint", "--master"},
      {"rdzv_id", "--job_id"},
      {"nproc", "--nproc_per_node"},
      {"local_ranks_filter", "--echo"},
      {"module", "-m"},
      {"tee", ""},
      {"redirects", ""},
      {"standalone", ""},
      {"monitor_interval", ""},
  }};
  for (const auto& [other, ours] : kOthers) {
    if (name == other) return ours.empty() ? std::string_view("(none)") : ours;
  }
  return {};
}

const FlagSpec* FindExact(std::string_view name);

// " (did you mean --nproc_per_node?)" for --nproc-per-node or torchrun's --max-restarts.
std::string Hint(std::string_view token) {
  std::string name(token.substr(
      2, token.find('=') == std::string_view::npos ? std::string_view::npos : token.find('=') - 2));
  std::replace(name.begin(), name.end(), '-', '_');
  if (const FlagSpec* flag = FindExact("--" + name)) {
    return fmt::format(" (did you mean {}?)", flag->name);
  }
  const std::string_view ours = KnownSpelling(name);
  if (ours == "(none)") return " (a torchrun flag; pdlaunch writes each rank's output to log/)";
  if (!ours.empty()) return fmt::format(" (did you mean {}?)", ours);
  return "";
}

[[noreturn]] void ThrowUnrecognized(std::string_view token) {
  const std::string hint = token.starts_with("--") && token.size() > 2 ? Hint(token) : "";
  throw UsageError(fmt::format("unrecognized arguments: {}{}", token, hint));
}

// The long options of Paddle's two argparse parsers that this launcher takes, each in its
// parser's declaration order, which is the order argparse names them in an ambiguity error:
// today's (python/paddle/distributed/launch/context/args_envs.py, parse_args; -h/--help first)
// and the legacy one (python/paddle/distributed/fleet/launch.py, _parse_args;
// paddle-legacy-launch.md §1.2).
// Tables, four names a row.
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

const FlagSpec* FindFlag(std::string_view name) {
  for (const FlagSpec& flag : kFlags) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

bool InParser(std::span<const std::string_view> parser, std::string_view name) {
  return std::find(parser.begin(), parser.end(), name) != parser.end();
}

// The one flag of `names` that `prefix` starts, nullptr for none; more than one is argparse's
// error, naming them in `names`' order.
const FlagSpec* UniquePrefixIn(const std::vector<std::string_view>& names,
                               std::string_view prefix) {
  std::vector<std::string_view> matches;
  for (std::string_view name : names) {
    if (name.starts_with(prefix)) matches.push_back(name);
  }
  if (matches.size() > 1) {
    throw UsageError(
        fmt::format("ambiguous option: {} could match {}", prefix, fmt::join(matches, ", ")));
  }
  return matches.empty() ? nullptr : FindFlag(matches.front());
}

// argparse's abbreviation rule, as `python -m paddle.distributed.launch` applies it: an exact
// name wins; else today's parser resolves the prefix (parse_known_args: one match is that flag,
// several are an error there and then), and a prefix it does not know goes, with the whole
// command line, to the legacy parser, which resolves it the same way. What neither parser knows
// is resolved the same way among pdlaunch's own additions. So `--ma` is ambiguous (--master,
// --max_restart), as in Paddle, and `--gr` is --grace.
const FlagSpec& ResolveFlag(std::string_view name, std::string_view token) {
  if (const FlagSpec* exact = FindFlag(name)) return *exact;
  if (name.size() > 2) {
    const std::vector<std::string_view> todays(std::begin(kTodaysParser), std::end(kTodaysParser));
    const std::vector<std::string_view> legacy(std::begin(kLegacyParser), std::end(kLegacyParser));
    std::vector<std::string_view> own;
    for (const FlagSpec& flag : kFlags) {
      if (!InParser(kTodaysParser, flag.name) && !InParser(kLegacyParser, flag.name)) {
        own.push_back(flag.name);
      }
    }
    for (const std::vector<std::string_view>* names :
         std::array<const std::vector<std::string_view>*, 3>{&todays, &legacy, &own}) {
      if (const FlagSpec* flag = UniquePrefixIn(*names, name)) return *flag;
    }
  }
  ThrowUnrecognized(token);
}

// argparse's test for a positional that starts with '-': "-1", "-.5", "-2.5".
bool IsNegativeNumber(std::string_view token) {
  if (token.size() < 2 || token.front() != '-') return false;
  const std::string_view rest = token.substr(1);
  const size_t dot = rest.find('.');
  const auto all_digits = [](std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (dot == std::string_view::npos) return all_digits(rest);
  return all_digits(rest.substr(0, dot)) && dot + 1 < rest.size() &&
         all_digits(rest.substr(dot + 1));
}

bool LooksLikeOption(std::string_view token) {
  return token.size() > 1 && token.front() == '-' && !IsNegativeNumber(token);
}

// The launcher's part of argv after prefix expansion and alias resolution.
struct Scan {
  std::map<std::string_view, std::string> values;  // Destination → the value given last.
  // Values a later one of the same destination replaced, with the flag's name as typed:
  // argparse converts and checks every occurrence, so `--nproc_per_node=abc
  // --nproc_per_node=1` is still an error.
  struct Replaced {
    std::string_view dest;
    std::string name;
    std::string value;
  };
  std::vector<Replaced> replaced;
  std::set<std::string> given;
  std::set<std::string> new_flags;           // Typed flags of Tier::kNew.
  std::map<std::string, std::string> typed;  // Destination → the name typed last.
  std::optional<Kind> exit_request;          // kHelp or kVersion.
  size_t script = 0;                         // Index of the training script in argv.
};

void Record(const FlagSpec& flag, Scan& scan) {
  scan.given.insert(std::string(flag.dest));
  scan.typed[std::string(flag.dest)] = std::string(flag.name);
  if (flag.tier == Tier::kNew) scan.new_flags.insert(std::string(flag.name));
}

// argparse's "store": a later value of the same destination (under any alias) replaces it.
void Emit(const FlagSpec& flag, std::string value, Scan& scan) {
  const auto [it, inserted] = scan.values.try_emplace(flag.dest, value);
  if (!inserted) {
    const auto typed = scan.typed.find(std::string(flag.dest));
    scan.replaced.push_back({flag.dest, typed->second, std::move(it->second)});
    it->second = std::move(value);
  }
  Record(flag, scan);
}

void RequireNoValue(const FlagSpec& flag, const std::optional<std::string>& value) {
  if (!value) return;
  const std::string_view names = flag.kind == Kind::kHelp ? "-h/--help" : flag.name;
  throw UsageError(fmt::format("argument {}: ignored explicit argument '{}'", names, *value));
}

// Returns the value of a kValue option: after '=', or the next token unless it is an option.
std::string TakeValue(const FlagSpec& flag, const std::optional<std::string>& explicit_value,
                      const std::vector<std::string>& args, size_t& index) {
  if (explicit_value) return *explicit_value;
  if (index + 1 >= args.size() || args[index + 1] == "--" || LooksLikeOption(args[index + 1])) {
    throw UsageError(fmt::format("argument {}: expected one argument", flag.name));
  }
  return args[++index];
}

std::string TakeOptionalBool(const std::optional<std::string>& explicit_value,
                             const std::vector<std::string>& args, size_t& index) {
  if (explicit_value) return *explicit_value;
  if (index + 1 < args.size() && IsBoolLiteral(args[index + 1])) return args[++index];
  return "true";
}

// Scans the option at args[index]; returns the index of the next token.
size_t ScanOption(const std::vector<std::string>& args, size_t index, Scan& scan) {
  const std::string& token = args[index];
  if (token == "-h") {
    scan.exit_request = Kind::kHelp;
    return index + 1;
  }
  if (!token.starts_with("--")) ThrowUnrecognized(token);
  const size_t equals = token.find('=');
  std::optional<std::string> explicit_value;
  if (equals != std::string::npos) explicit_value = token.substr(equals + 1);
  const FlagSpec& flag = ResolveFlag(std::string_view(token).substr(0, equals), token);
  switch (flag.kind) {
    case Kind::kHelp:
    case Kind::kVersion:
      RequireNoValue(flag, explicit_value);
      scan.exit_request = flag.kind;
      break;
    case Kind::kFlag:
      RequireNoValue(flag, explicit_value);
      Emit(flag, "", scan);
      break;
    case Kind::kOptionalBool:
      Emit(flag, TakeOptionalBool(explicit_value, args, index), scan);
      break;
    case Kind::kValue:
      Emit(flag, TakeValue(flag, explicit_value, args, index), scan);
      break;
  }
  return index + 1;
}

// Splits argv into launcher options and the training command (contract §1.1).
Scan ScanArguments(const std::vector<std::string>& args) {
  Scan scan;
  size_t index = 0;
  while (index < args.size() && !scan.exit_request) {
    if (args[index] == "--") {
      ++index;
      break;
    }
    // `-m module`, as Python's (and torchrun's): the training command starts here.
    if (!LooksLikeOption(args[index]) || args[index] == "-m") break;
    index = ScanOption(args, index, scan);
  }
  scan.script = index;
  return scan;
}

// Converts and stores the value of each destination given, in the order of kFlags (the first
// invalid one is reported), under the name it was typed as (`typed`: destination → the flag's
// name as resolved, e.g. --gloo_port), else the primary name of its flag.
//
// CLI11 did this until 2026-11: it re-parsed the scanner's canonical "--name=value" list, which
// cost every job 0.1 ms for its option registry and, through <iostream> and the std::locale its
// trim() builds per character, another 0.09 ms of static initialisation (docs/performance.md).
void BindOptions(const std::map<std::string_view, std::string>& values, LaunchOptions& options,
                 const std::map<std::string, std::string>& typed = {}) {
  for (const FlagSpec& flag : kFlags) {
    if (!IsPrimary(flag) || flag.store == nullptr) continue;
    const auto value = values.find(flag.dest);
    if (value == values.end()) continue;
    const auto name = typed.find(std::string(flag.dest));
    flag.store(options, name == typed.end() ? flag.name : std::string_view(name->second),
               value->second);
  }
}

template <size_t N>
bool IsOneOf(std::string_view value, const std::array<std::string_view, N>& choices) {
  return std::find(choices.begin(), choices.end(), value) != choices.end();
}

// Paddle's flags that argparse keeps as strings (type=str) and pdlaunch checks when it binds them.
constexpr std::array<std::string_view, 5> kStringDests = {"log_dir", "job_id", "host", "nnodes",
                                                          "log_level"};

// argparse's `choices` (checked for every occurrence of the flag).
void ValidateRunMode(const LaunchOptions& options) {
  if (options.run_mode && !IsOneOf(*options.run_mode, kRunModes)) {
    throw UsageError(
        fmt::format("argument --run_mode: invalid choice: '{}' (choose from 'collective', 'ps', "
                    "'ps-heter', 'rpc')",
                    *options.run_mode));
  }
}

// --run_mode's choices, then Paddle's own check of the backend (of the value in force only).
void ValidateChoices(const LaunchOptions& options) {
  ValidateRunMode(options);
  if (!IsOneOf(options.backend, kBackends)) {
    throw UsageError(fmt::format(
        "paddle.distributed initialize error, backend argument can only be one of 'nccl', "
        "'gloo', 'bkcl', 'auto', 'heter', 'xccl' but got {}",
        options.backend));
  }
}

// --- Help text, laid out as argparse's HelpFormatter does for an 80-column terminal. ---

constexpr size_t kHelpWidth = 78;   // argparse: terminal columns - 2.
constexpr size_t kHelpColumn = 24;  // argparse: max_help_position.
constexpr std::string_view kUsagePrefix = "usage: launch ";

constexpr std::string_view kDescription =
    "Start a distributed training job: one process per device (or --nproc_per_node), with "
    "Paddle's and PyTorch's environment variables, supervised until every process is done.\n"
    "Flags may also come from their environment twins (PADDLE_NNODES, PADDLE_MASTER, ...; "
    "a flag on the command line wins). Documentation: docs/cli.md in the source tree, "
    "/usr/share/doc/pdlaunch/cli.md where the Debian package is installed.\n"
    "\n"
    "Examples:\n"
    "  launch --gpus 0,1 train.py --lr 0.1\n"
    "                        one node, one process per GPU\n"
    "  launch --ips 10.0.0.1,10.0.0.2 --gpus 0,1 train.py\n"
    "                        the same command on every node of the list\n"
    "  launch --master 10.0.0.1:8090 --nnodes 2 --devices 0,1 train.py\n"
    "                        the same command on each node: they meet at the master\n"
    "  srun -N2 --ntasks-per-node=1 launch train.py\n"
    "                        inside a Slurm allocation: the nodes come from Slurm\n"
    "  launch --dry_run --gpus 0,1 train.py\n"
    "                        what a run would do, as JSON; nothing is started\n";

constexpr std::string_view kScriptHelp =
    "The full path to the single GPU training program/script to be launched in parallel, "
    "followed by all the arguments for the training script";

struct GroupInfo {
  std::string_view name;
  std::string_view description;
};

const std::array<GroupInfo, 7> kGroups = {{
    {kOptionalGroup, ""},
    {kBaseGroup, ""},
    {kLaunchGroup,
     "The flags of today's python -m paddle.distributed.launch. Several hosts without an IP "
     "list: --master ip:port --nnodes N on every node (docs/master.md)."},
    {kCollectiveGroup, ""},
    {kPsGroup, "Parameter-server jobs: servers, workers and heter workers (docs/ps.md)."},
    {kElasticGroup,
     "Elastic and fault-tolerant jobs coordinated through etcd (docs/elastic.md). --host also "
     "selects this node in --ips in collective mode."},
    {kOwnGroup, "Options of pdlaunch that Paddle's launcher does not have."},
}};

// argparse's default metavar: the destination in upper case.
std::string Metavar(const FlagSpec& flag) { return AsciiUpper(flag.dest); }

// "--log_dir LOG_DIR", "-h, --help", "--force [FORCE]".
std::string Invocation(const FlagSpec& flag) {
  switch (flag.kind) {
    case Kind::kHelp:
      return "-h, --help";
    case Kind::kVersion:
    case Kind::kFlag:
      return std::string(flag.name);
    case Kind::kOptionalBool:
      return fmt::format("{} [{}]", flag.name, Metavar(flag));
    case Kind::kValue:
      break;
  }
  return fmt::format("{} {}", flag.name, Metavar(flag));
}

// Greedy word wrap of `text` into lines of at most `width` (longer words stay whole).
std::vector<std::string> Wrap(std::string_view text, size_t width) {
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(' ', start), text.size());
    const std::string_view word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(std::move(line));
      line.clear();
    }
    line += line.empty() ? "" : " ";
    line += word;
  }
  if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

// One entry of a group: invocation at column 2, help from column 24.
std::string HelpEntry(std::string_view invocation, std::string_view help) {
  const std::vector<std::string> lines = Wrap(help, kHelpWidth - kHelpColumn);
  std::string out = fmt::format("  {}", invocation);
  const bool same_line = invocation.size() + 4 <= kHelpColumn && !lines.empty();
  if (same_line) out += std::string(kHelpColumn - 2 - invocation.size(), ' ');
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0 || !same_line) out += "\n" + std::string(kHelpColumn, ' ');
    out += lines[i];
  }
  return out + "\n";
}

std::string HelpGroup(const GroupInfo& group) {
  std::string out = fmt::format("\n{}:\n", group.name);
  for (const std::string& line : Wrap(group.description, kHelpWidth - 2)) {
    out += fmt::format("  {}\n", line);
  }
  if (!group.description.empty()) out += "\n";
  for (const FlagSpec& flag : kFlags) {
    if (flag.group != group.name) continue;
    const std::string help =
        flag.env.empty() ? std::string(flag.help) : fmt::format("{} [env {}]", flag.help, flag.env);
    out += HelpEntry(Invocation(flag), help);
  }
  if (group.name == kBaseGroup) {
    out += HelpEntry("training_script", kScriptHelp);
    out += HelpEntry("training_script_args", "");
  }
  return out;
}

std::vector<std::string> UsageParts() {
  std::vector<std::string> parts;
  for (const FlagSpec& flag : kFlags) {
    const std::string invocation = flag.kind == Kind::kHelp ? std::string("-h") : Invocation(flag);
    parts.push_back(fmt::format("[{}]", invocation));
  }
  parts.emplace_back("training_script");
  parts.emplace_back("...");
  return parts;
}

}  // namespace

CommandLine ParseArguments(const std::vector<std::string>& args) {
  Scan scan = ScanArguments(args);
  CommandLine command_line;
  if (scan.exit_request) {
    command_line.exit_text =
        *scan.exit_request == Kind::kHelp
            ? HelpText()
            : fmt::format("launch (pdlaunch) {}\ncommit {}\n", kVersion, BuildCommit());
    return command_line;
  }
  for (const Scan::Replaced& earlier_value : scan.replaced) {
    // Only what argparse itself checks (a type, a choice): a value it keeps as a string and
    // pdlaunch checks later (an empty --log_dir, a --job_id, a --nnodes range) is Paddle's to
    // replace silently.
    if (IsOneOf(earlier_value.dest, kStringDests)) continue;
    LaunchOptions earlier;
    BindOptions({{earlier_value.dest, earlier_value.value}}, earlier,
                {{std::string(earlier_value.dest), earlier_value.name}});
    ValidateRunMode(earlier);
  }
  LaunchOptions& options = command_line.options;
  BindOptions(scan.values, options, scan.typed);
  if (scan.script >= args.size()) {
    throw UsageError(std::string(kMissingScript));
  }
  options.given = std::move(scan.given);
  options.new_flags = std::move(scan.new_flags);
  options.typed = std::move(scan.typed);
  options.training_script = args[scan.script];
  options.training_script_args.assign(args.begin() + static_cast<std::ptrdiff_t>(scan.script) + 1,
                                      args.end());
  if (options.training_script == kRunCheck) {
    // Paddle 3's test plugin (plugins/__init__.py, test_mode): today's launcher, at least two
    // nodes, so that `launch run_check` on each node is a barrier until they meet.
    options.new_flags.insert(std::string(kRunCheck));
    const std::string nnodes = options.nnodes.value_or("1");
    int count = 0;
    const auto [end, ec] = std::from_chars(nnodes.data(), nnodes.data() + nnodes.size(), count);
    if (nnodes.find(':') == std::string::npos && (ec != std::errc() || count < 2)) {
      options.nnodes = "2";
      options.given.insert("nnodes");
    }
  }
  if (options.training_script == "-m" && options.training_script_args.empty()) {
    throw UsageError(
        "argument -m: expected a module name (launch [options] -m package.module "
        "[args ...])");
  }
  ValidateChoices(options);
  return command_line;
}

std::vector<std::string> WithoutOptions(const std::vector<std::string>& args,
                                        std::initializer_list<std::string_view> dests) {
  std::vector<std::string> kept;
  size_t index = 0;
  while (index < args.size() && args[index] != "--" && LooksLikeOption(args[index])) {
    Scan one;
    const size_t next = ScanOption(args, index, one);
    const bool drop = std::any_of(dests.begin(), dests.end(), [&](std::string_view dest) {
      return one.given.count(std::string(dest)) != 0;
    });
    if (!drop) kept.insert(kept.end(), args.begin() + index, args.begin() + next);
    index = next;
  }
  kept.insert(kept.end(), args.begin() + index, args.end());
  return kept;
}

CommandLine ParseCommandLine(const std::vector<std::string>& args) {
  CommandLine command_line = ParseArguments(args);
  if (!command_line.exit_text) RejectUnsupportedOptions(command_line.options);
  return command_line;
}

void RejectUnsupportedOptions(const LaunchOptions& options) {
  for (const FlagSpec& flag : kFlags) {
    if (IsPrimary(flag) && !flag.refused.empty() && options.WasGiven(std::string(flag.dest))) {
      throw UsageError(fmt::format("{} is not supported yet ({})",
                                   options.FlagName(std::string(flag.dest)), flag.refused));
    }
  }
  // Paddle's launcher turns the script name "ipu" into a poprun command line (its IPU
  // controller); running a program of that name instead would be a different job.
  if (options.training_script == "ipu") {
    throw UsageError(
        "ipu: Graphcore IPU jobs (Paddle's poprun controller) are not supported: run poprun "
        "directly");
  }
}

std::vector<std::string> ApplyEnvironmentTwins(LaunchOptions& options, const EnvMap& env) {
  std::vector<std::string> notes;
  const bool nested = env.count(std::string(kNestedMarker)) != 0;
  for (const FlagSpec& flag : kFlags) {
    if (flag.env.empty() || options.WasGiven(std::string(flag.dest))) continue;
    const auto it = env.find(std::string(flag.env));
    if (it == env.end() || StripSpace(it->second).empty()) continue;
    if (nested && IsSetForRanks(flag.env)) {
      notes.push_back(
          fmt::format("{} is inherited from the job that started this launcher: "
                      "ignored (pass --{} to set it)",
                      flag.env, flag.dest));
      continue;
    }
    if (flag.kind == Kind::kFlag) {
      if (ToBool(flag.env, it->second)) flag.store(options, flag.env, it->second);
    } else {
      flag.store(options, flag.env, it->second);
    }
    options.given.insert(std::string(flag.dest));
    options.from_env.insert(std::string(flag.dest));
    options.typed[std::string(flag.dest)] = std::string(flag.env);  // Checks name the variable.
  }
  // Not a twin, but read for the node's rank (docs/master.md): ignored too, and said.
  if (const auto it = env.find("PADDLE_TRAINER_ID");
      nested && it != env.end() && !StripSpace(it->second).empty()) {
    notes.push_back(
        "PADDLE_TRAINER_ID is inherited from the job that started this launcher: ignored (pass "
        "--rank to set this node's rank)");
  }
  return notes;
}

std::string NestedMarkerEntry() {
  return std::string(kNestedMarker) + "=" + std::to_string(::getpid());
}

bool IsSetForRanks(std::string_view name) {
  return name == "PADDLE_MASTER" || name == "PADDLE_NNODES" || name == "PADDLE_LOG_DIR" ||
         name == "PADDLE_RANK" || name == "PADDLE_TRAINER_ID" || name == "PADDLE_JOB_ID" ||
         name == "PADDLE_AUTO_PARALLEL_CONFIG";
}

std::string UsageText() {
  const std::string indent(kUsagePrefix.size(), ' ');
  std::string out(kUsagePrefix);
  size_t column = out.size();
  bool first = true;
  for (const std::string& part : UsageParts()) {
    if (!first && column + 1 + part.size() > kHelpWidth) {
      out += "\n" + indent;
      column = indent.size();
    } else if (!first) {
      out += ' ';
      ++column;
    }
    out += part;
    column += part.size();
    first = false;
  }
  return out + "\n";
}

constexpr std::string_view kEpilog = R"(
Environment (besides the flags' twins above):
  CUDA_VISIBLE_DEVICES      the GPUs --devices/--gpus labels refer to
  XPU_VISIBLE_DEVICES       the Kunlun XPUs (--xpus, --devices) labels refer to
  PADDLE_XCCL_BACKEND=TYPE  a custom device (npu, mlu, gcu, ...), labels of
                            TYPE_VISIBLE_DEVICES (docs/cli.md, "Devices")
  POD_IP                    this node's address (as --host)
  FLAGS_START_PORT, PADDLE_START_PORT
                            fixed first port (after --start_port)
  PADDLE_TRAINERS, PADDLE_TRAINER_ID, ...
                            PaddleCloud's cluster description (docs/multi-node.md)
  PADDLE_LAUNCH_PYTHON      the interpreter of a .py script (default: python3 on PATH)

Exit codes:
  0        every process exited 0 (on every node, with --master)
  N        a process exited with N (128+S: killed by signal S); with --master, every
           node exits with the failing process's code
  2        a usage error: one line names the bad token; nothing was started
  1        set-up error (script not found, busy port, ...), a lost node or master,
           or a rendezvous that timed out
  130/143  the launcher got SIGINT/SIGTERM (a second one kills at once)
  101, 3   an elastic job failed for good (--np N, --np N:M)

Documentation (docs/ in the source tree; /usr/share/doc/pdlaunch/ where the Debian package is
installed, with README.md and examples/): cli.md (every flag), master.md (several hosts, no IP
list), multi-node.md (--ips), ps.md, elastic.md, exit-codes.md.
)";

std::string ResolveOptionName(std::string_view prefix) {
  return std::string(ResolveFlag(prefix, prefix).name);
}

std::vector<FlagInfo> ListFlags() {
  std::vector<FlagInfo> flags;
  for (const GroupInfo& group : kGroups) {
    for (const FlagSpec& spec : kFlags) {
      if (spec.group != group.name) continue;
      FlagInfo& flag = flags.emplace_back();
      flag.name = spec.name;
      flag.dest = spec.dest;
      flag.help = spec.help;
      flag.env = spec.env;
      flag.supported = spec.refused.empty();
      switch (spec.kind) {
        case Kind::kValue:
          flag.value = FlagInfo::Value::kRequired;
          break;
        case Kind::kOptionalBool:
          flag.value = FlagInfo::Value::kOptionalBool;
          flag.choices = {"true", "false"};
          break;
        case Kind::kFlag:
        case Kind::kHelp:
        case Kind::kVersion:
          break;
      }
      if (spec.dest == "run_mode") flag.choices.assign(kRunModes.begin(), kRunModes.end());
      if (spec.dest == "backend") flag.choices.assign(kBackends.begin(), kBackends.end());
      if (spec.dest == "log_level") flag.choices.assign(kLogLevels.begin(), kLogLevels.end());
    }
  }
  return flags;
}

std::string HelpText() {
  std::string out = UsageText();
  out += fmt::format("\n{}", kDescription);
  for (const GroupInfo& group : kGroups) out += HelpGroup(group);
  out += kEpilog;
  return out;
}

}  // namespace pdlaunch
