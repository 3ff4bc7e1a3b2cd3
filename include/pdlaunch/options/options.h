#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// The environment as name → value; a variable set to "" is present with an empty value.
using EnvMap = std::map<std::string, std::string>;

/// Every flag of the launcher as plain data, with Paddle's defaults (docs/cli.md). No CLI11
/// types: src/cli/cli.cc binds these fields (ParseCommandLine in cli.h); everything downstream
/// takes `const LaunchOptions&`. Field names are argparse destination names, as in the
/// "Configuration Arguments" dump.
struct LaunchOptions {
  // Base parameters.
  std::string log_dir = "log";
  std::string backend = "auto";
  std::optional<int> nproc_per_node;
  std::optional<std::string> run_mode;
  std::optional<std::string> gpus;  ///< --gpus or its alias --selected_gpus, last one wins.
  std::optional<std::string> xpus;  ///< --xpus or --selected_xpus (accepted, refused: no XPU yet).

  // Collective parameters.
  std::string ips = "127.0.0.1";

  // Parameter-server parameters.
  std::string servers;
  std::string workers;
  std::string heter_workers;
  std::string heter_devices;
  std::optional<int> worker_num;
  std::optional<int> server_num;
  std::optional<std::string> heter_worker_num;
  std::optional<int> http_port;

  // Elastic parameters.
  std::optional<std::string> elastic_server;
  std::optional<std::string> job_id;
  std::optional<std::string> np;  ///< "N" or "N:M".
  int scale = 0;
  std::optional<std::string> host;
  bool force = false;
  std::optional<std::string> elastic_pre_hook;
  std::optional<int> max_restart;

  // Today's launcher (docs/cli.md, "Today's launcher (paddle.distributed.launch since Paddle
  // 2.3)"). --devices/--npus share `gpus`, --trainer_num `worker_num`, --trainers `workers`,
  // --gloo_port `http_port`.
  std::optional<std::string> master;  ///< "ip:port", "host:port" or "etcd://host:port".
  std::optional<std::string> nnodes;  ///< "N" or "MIN:MAX".
  int rank = -1;                      ///< Node rank; -1: assigned by the master.
  std::string log_level = "INFO";
  bool legacy = false;
  bool sort_ip = false;
  std::optional<std::string> with_gloo;  ///< PADDLE_WITH_GLOO for the ranks.
  std::optional<int> elastic_level;
  std::optional<int> elastic_timeout;
  bool enable_gpu_log = true;
  std::optional<std::string> auto_cluster_config;  ///< PADDLE_AUTO_CLUSTER for the ranks.
  /// --auto_parallel_config: the static auto-parallel engine's file (run/auto_parallel.h).
  std::optional<std::string> auto_parallel_config;
  std::optional<std::string> auto_tuner_json;  ///< The auto tuner's file (docs/auto-tuner.md).

  // pdlaunch's own additions.
  std::optional<int> start_port;  ///< First fixed port; beats FLAGS_START_PORT, PADDLE_START_PORT.
  bool log_overwrite = false;     ///< Truncate log files instead of appending.
  /// --nodes_meet: the nodes of a multi-node --ips meet at a master before any rank starts and fail
  /// as one (docs/multi-node.md); false: they never talk, as Paddle 2's launcher.
  bool nodes_meet = true;
  double grace = 5.0;                 ///< Seconds between SIGTERM and SIGKILL at teardown.
  std::string numa_binding = "none";  ///< --numa_binding: none, node, socket, exclusive.
  /// --echo: "all" or local ranks "0,3,5" shown on the console, prefixed; unset: local rank 0
  /// unprefixed (Paddle's).
  std::optional<std::string> echo;
  /// --report FILE: a JSON report of the run written when the launcher exits (docs/report.md).
  std::optional<std::string> report;
  /// --dry_run: print the plan as JSON and start nothing (docs/cli.md, "Dry run"). Not in the
  /// configuration dump: a dry run prints none.
  bool dry_run = false;
  double rendezvous_timeout = 600;  ///< Master mode: seconds to wait for every node.
  double heartbeat_timeout = 10;    ///< Master mode: a node silent this long is lost.

  /// How the launcher was invoked (argv[0]) and its arguments, for the "Copy the following
  /// command to other nodes" block. Not options: set by Main.
  std::string program = "launch";
  std::vector<std::string> command_line;

  std::string training_script;
  std::vector<std::string> training_script_args;  ///< Verbatim, options included.

  /// Destination names of the options that appeared on the command line (e.g. "gpus" for
  /// --selected_gpus). Mode selection looks here, never at argv as a string.
  std::set<std::string> given;
  /// Of `given`, the destinations whose value came from an environment twin (docs/cli.md,
  /// "Syntax").
  std::set<std::string> from_env;
  /// Flags typed that only today's launcher has (--devices, --master, --nnodes, ...): with any
  /// of them, or PADDLE_MASTER/PADDLE_NNODES, the command is a "new interface" one (docs/cli.md).
  std::set<std::string> new_flags;
  /// Destination → the name typed for it (--selected_xpus for xpus), or the environment variable
  /// it came from (PADDLE_NPROC_PER_NODE), for messages.
  std::map<std::string, std::string> typed;

  bool WasGiven(const std::string& dest) const { return given.count(dest) != 0; }
  /// How a message names the source of `dest`'s value: the flag as typed, the environment
  /// variable it came from, or "--dest".
  std::string FlagName(const std::string& dest) const {
    const auto it = typed.find(dest);
    return it != typed.end() ? it->second : "--" + dest;
  }
};

/// The "Configuration Arguments" block the launcher prints first (docs/cli.md): header of
/// 48 characters, one `name: value` line per option sorted by destination name (pdlaunch's own
/// options and xpus included), values rendered as Python's str() would (None, True/False, 5.0,
/// ['a', 'b'], an empty string as nothing after ": "), footer of 48 dashes. Ends with '\n'.
std::string FormatConfigurationArguments(const LaunchOptions& options);

/// The header and footer of today's launcher's configuration block (docs/cli.md, "Configuration
/// dump").
inline constexpr std::string_view kConfigurationHeader =
    "-----------  Configuration  ----------------------";
inline constexpr std::string_view kConfigurationFooter =
    "--------------------------------------------------";

/// Today's launcher's configuration (docs/cli.md, "Configuration dump"), logged at INFO one line
/// each: kConfigurationHeader, the same sorted `name: value` lines (with `devices`, the value of
/// --devices/--gpus), kConfigurationFooter.
std::vector<std::string> ConfigurationLogLines(const LaunchOptions& options);

/// Renders `items` as a Python list repr: ['--lr', '0.1']. Each item is quoted as Python's repr()
/// does: single quotes, or double quotes when the item holds a ' and no "; backslash, the quote,
/// \n, \r, \t and other control bytes escaped (\x1b); bytes >= 0x80 kept as they are.
std::string PythonListRepr(const std::vector<std::string>& items);

/// One item of PythonListRepr: Python's repr() of a str.
std::string PythonStrRepr(const std::string& text);

/// Whether the command uses today's launcher's interface (a flag only it has, --job_id typed
/// without --elastic_server, or PADDLE_MASTER / PADDLE_NNODES from the environment) and not
/// --legacy: then the log directory gets the pod log
/// <job_id>.<pod>.log instead of the legacy endpoints.log (docs/cli.md, "Files").
bool UsesNewInterface(const LaunchOptions& options);

}  // namespace pdlaunch
