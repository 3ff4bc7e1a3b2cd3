#pragma once

// Which launch path today's launcher's flags select, and the settings of the master rendezvous
// (docs/master.md, "Which path a command takes"; docs/multi-node.md, "The nodes meet"). Pure:
// options and environment in.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/options/options.h"

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

  /// A job of several `--ips` nodes that meet at a master (docs/multi-node.md, "The nodes
  /// meet"): the nodes in order. The run finds this node in the list; its position is its rank.
  std::vector<std::string> ips;
  size_t master_index = 0;  ///< The entry of `ips` whose node hosts the master.
  /// No port was given: the nodes find it by Paddle 3's handshake on kHandshakePorts of
  /// ips[master_index] (master_port is 0 until then).
  bool handshake = false;
  /// The legacy interface's --ips job: its world, variables and files are the legacy ones; the
  /// master only makes the nodes meet, check each other and fail as one.
  bool legacy_ips = false;
  /// Set by the run for an --ips job once this node is found in the list: whether it hosts the
  /// master (only the node at ips[master_index] does, even when every address is local).
  std::optional<bool> hosting;
};

/// Paddle 3's "magic ports" (context/__init__.py, update_by_ips): the first that the master's
/// node can bind, 6768 to 6778.
inline constexpr int kHandshakeFirstPort = 6768;
inline constexpr int kHandshakeLastPort = 6778;

/// The nodes of an `--ips` value that Paddle 3 reads from a file (a hostfile): the first
/// blank-separated token of each line; blank lines are skipped (Paddle would keep an empty
/// entry). Pure: the caller reads the file.
std::vector<std::string> ParseHostfile(std::string_view text);

/// Paddle 3's cut of --ips to --nnodes (today's interface): `nnodes` smaller than the list keeps
/// its first entries and sets `*warning` to Paddle's line; larger is a UsageError.
std::vector<std::string> CutIpsToNnodes(std::vector<std::string> ips, int nnodes,
                                        std::string* warning);

/// The master of a multi-node --ips job (both interfaces): Paddle 3's update_by_ips rules, with
/// its evident intent where its code differs (docs/multi-node.md, "The nodes meet"): --master
/// ip:port with the ip in the list is kept; another ip is replaced by ips[0] (port kept, with
/// Paddle's warning into `warnings`); :PORT and PADDLE_PORT put it on ips[0] at that port; a
/// bare --master IP, or nothing, takes PADDLE_PORT, else the handshake. UsageError on a bad
/// PADDLE_PORT.
MasterSettings IpsMasterSettings(const LaunchOptions& options, const EnvMap& env,
                                 std::vector<std::string>* warnings);

/// The path a command takes.
struct LaunchPath {
  enum class Kind { kDefault, kMaster, kEtcd };
  Kind kind = Kind::kDefault;
  /// kMaster; also kDefault without --ips (a one-node job of today's interface: PS, RPC).
  std::optional<MasterSettings> master;
  std::string etcd_server;  ///< kEtcd: host:port (the etcd:// scheme dropped).
  std::string etcd_np;      ///< kEtcd: --nnodes as the elastic np ("N" or "N:M").
  /// Said once the run starts (and in --dry_run's warnings): Paddle's master reset line.
  std::vector<std::string> warnings;
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

}  // namespace pdlaunch
