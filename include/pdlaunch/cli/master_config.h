#pragma once

// Which launch path today's launcher's flags select, and the settings of the master rendezvous
// (docs/master.md, paddle-new-launch.md §2.3–2.5, §6). Pure: options and environment in.

#include <optional>
#include <string>

#include "pdlaunch/cli/options.h"

namespace pdlaunch {

/// The settings of one node of a master-rendezvous job.
struct MasterSettings {
  bool master_given = false;  ///< false: this node hosts the master on a free port.
  std::string master_host;    ///< As given (address or host name); empty when not given.
  int master_port = 0;
  int nnodes = 2;
  int rank = -1;  ///< -1: assigned by the master.
  std::string job_id = "default";
  bool sort_ip = false;
  std::optional<std::string> host;  ///< --host / POD_IP: this node's address.
  double rendezvous_timeout = 600;
  double heartbeat_timeout = 10;
  /// One of a sequence of jobs on this master address (the auto tuner's trials and exchanges):
  /// a master found serving another job is the previous one ending; it is waited for.
  bool sequential = false;
};

/// The path a command takes.
struct LaunchPath {
  enum class Kind { kDefault, kMaster, kEtcd };
  Kind kind = Kind::kDefault;
  /// kMaster; also kDefault without --ips (a one-node job of today's interface: PS, RPC).
  std::optional<MasterSettings> master;
  std::string etcd_server;               ///< kEtcd: host:port (the etcd:// scheme dropped).
  std::string etcd_np;                   ///< kEtcd: --nnodes as the elastic np ("N" or "N:M").
};

/// Decides the path (docs/master.md, "Which path"):
/// * `--master etcd://host:port` → the elastic controller with np = --nnodes (default 1);
/// * `--master host:port`, or `--nnodes` ≥ 2 without a multi-node `--ips`, → the master
///   rendezvous (nnodes 1 with a master: a one-node job that contacts no master, as Paddle);
/// * anything else → the default path (single node, `--ips`, PaddleCloud, PS, legacy elastic).
/// Throws UsageError naming the token: `--nnodes MIN:MAX` without an etcd master, a --master that
/// is not host:port, `--rank` not below --nnodes, --nnodes disagreeing with --ips.
/// PADDLE_TRAINER_ID >= 0 in `env` sets the rank (Paddle's rule) unless the launch is nested.
LaunchPath SelectLaunchPath(const LaunchOptions& options, const EnvMap& env);

/// Whether the command uses today's launcher's interface (a flag only it has, --job_id typed
/// without --elastic_server, or PADDLE_MASTER / PADDLE_NNODES from the environment) and not
/// --legacy: then the log directory gets the pod log
/// <job_id>.<pod>.log instead of the legacy endpoints.log (docs/cli.md, "Files").
bool UsesNewInterface(const LaunchOptions& options);

}  // namespace pdlaunch
