#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/topology.h"

namespace pdlaunch {

/// First port of a PaddleCloud job when no fixed start port is given (docs/multi-node.md,
/// "PaddleCloud").
inline constexpr int kDefaultCloudStartPort = 6170;

/// The PaddleCloud / Kubernetes variables of docs/multi-node.md, as found: raw strings, parsed only
/// by the functions that use them (Paddle reads most of them only on the cloud-cluster path).
struct CloudEnv {
  std::string trainers;           ///< PADDLE_TRAINERS: the node IPs joined with ','.
  std::string pod_ip;             ///< POD_IP: this node's IP.
  std::string trainer_id;         ///< PADDLE_TRAINER_ID: this node's index in PADDLE_TRAINERS.
  std::string trainer_ports_num;  ///< TRAINER_PORTS_NUM: how many ports the cloud gave a node.
  std::optional<std::string> trainers_num;       ///< PADDLE_TRAINERS_NUM: the number of nodes.
  std::optional<std::string> trainer_endpoints;  ///< DISTRIBUTED_TRAINER_ENDPOINTS.
  std::optional<std::string> paddle_port;        ///< PADDLE_PORT: the cloud's first port.
};

/// PaddleCloud detection (docs/multi-node.md): all four of PADDLE_TRAINERS, POD_IP,
/// PADDLE_TRAINER_ID and TRAINER_PORTS_NUM are present (any value, empty included); nullopt
/// otherwise. The optional fields are filled when present; an empty PADDLE_PORT counts as absent.
/// Pure.
std::optional<CloudEnv> DetectCloud(const EnvMap& env);

/// The address variables of Kubernetes and PaddleCloud, checked as --host and --ips are and
/// named as the variable: POD_IP (when --host is not given), and under PaddleCloud (DetectCloud)
/// PADDLE_TRAINERS and DISTRIBUTED_TRAINER_ENDPOINTS (host:port each). Empty values
/// are unset. Throws the first UsageError.
void CheckAddressVariables(const LaunchOptions& options, const EnvMap& env);

/// Whether the cluster comes from the cloud variables: PADDLE_TRAINERS_NUM (default 1) != 1.
/// Otherwise the cluster comes from the arguments with fixed ports. Integers are read as Python's
/// int() does (surrounding whitespace allowed). Throws UsageError
/// "PADDLE_TRAINERS_NUM: 'two' is not an integer".
bool UsesCloudCluster(const CloudEnv& cloud);

/// A cloud cluster and the warnings it produced, for the caller to log in this order.
struct CloudCluster {
  Cluster cluster;
  std::vector<std::string> warnings;
};

/// The cluster of docs/multi-node.md for P = devices.devices_per_proc.size() trainers per node:
/// - nodes = PADDLE_TRAINERS split on ','; this node = pod PADDLE_TRAINER_ID (0 ≤ id < nodes);
///   POD_IP must be an entry of PADDLE_TRAINERS (LaunchError otherwise); when it is not the
///   entry at PADDLE_TRAINER_ID, a warning says which node's trainers run here.
/// - `ips` (--ips) other than "127.0.0.1" and different from PADDLE_TRAINERS → the warning
///   "Please NOTE: When using paddlecloud, cluster_node_ips is automatically got from
///   PADDLE_TRAINERS(multi nodes) or POD_IP(single node).Your input cluster_node_ips: {ips}
///   doesn't equals to IPs: {['a', 'b']} from paddlecloud environment."
/// - DISTRIBUTED_TRAINER_ENDPOINTS unset: ports start, start+1, … on every node, where start is
///   `start_port`, or PADDLE_PORT when there are several nodes, TRAINER_PORTS_NUM ≥ P and it
///   differs from `start_port` (warning "Use Cloud specified port:{port}."); a PADDLE_PORT that
///   is not a port number is ignored with a warning.
/// - DISTRIBUTED_TRAINER_ENDPOINTS set: nodes × TRAINER_PORTS_NUM endpoints, node-major; node k
///   takes items [k×N, (k+1)×N) and its trainers use the first P of them.
/// - master (MASTER_ADDR:MASTER_PORT): item P of node 0's endpoints when the cloud gave it more
///   than P (TRAINER_PORTS_NUM > P), else the port after node 0's last trainer endpoint; without
///   DISTRIBUTED_TRAINER_ENDPOINTS both give PADDLE_TRAINERS[0]:start+P.
/// Bad values (not integers, an id out of range, a wrong number of endpoints, a malformed
/// endpoint, an empty node entry, too few ports, ports above 65535) are UsageErrors naming the
/// variable.
CloudCluster BuildCloudCluster(const CloudEnv& cloud, const std::string& ips,
                               const DevicePlan& devices, int start_port);

}  // namespace pdlaunch
