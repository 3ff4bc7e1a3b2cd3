#pragma once

#include <string>
#include <vector>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/node.h"

namespace pdlaunch {

/// One collective process of the job.
struct Trainer {
  int global_rank = 0;
  int local_rank = 0;  ///< Index of spawn on its node.
  Endpoint endpoint;
  std::vector<int> devices;  ///< Logical device ids (of the family's visible list); empty on CPU.
};

/// The trainers of one node.
struct Pod {
  std::string ip;
  int node_index = 0;
  std::vector<Trainer> trainers;
};

/// The whole collective job as every node computes it (docs/env.md). Pure data.
struct Cluster {
  std::vector<Pod> pods;               ///< In node order.
  int local_index = 0;                 ///< Index of this node's pod.
  DeviceFamily family;                 ///< Selected key and variables (docs/cli.md, "Devices").
  DeviceMode mode = DeviceMode::kCpu;  ///< family.mode.
  std::string backend;                 ///< family.backend: nccl, bkcl, xccl, or gloo.
  Endpoint master;  ///< MASTER_ADDR:MASTER_PORT for torch env:// (node 0's host).

  const Pod& local_pod() const { return pods.at(static_cast<size_t>(local_index)); }
  /// Number of trainers of all nodes.
  int world_size() const;
  /// Endpoints of all trainers in global-rank order (node-major).
  std::vector<Endpoint> world_endpoints() const;
  /// PADDLE_WORLD_DEVICE_IDS: per trainer ids joined with ':', trainers joined with ','.
  std::string world_device_ids() const;
};

/// Builds the cluster from arguments (docs/env.md): for each node of `node` in order, one
/// trainer per entry of `devices.devices_per_proc`, rank = node_index × P + local_index, trainer i
/// of every node on `ports[i]` (the same port list on every node). `master_port` is the port of
/// MASTER_PORT on node 0. Throws LaunchError if `ports` has fewer than P entries.
Cluster BuildCollectiveCluster(const NodeIdentity& node, const DevicePlan& devices,
                               const std::vector<int>& ports, int master_port);

/// Builds the cluster from explicit per-node endpoint lists (PaddleCloud, docs/multi-node.md; ports
/// may differ between nodes): pod k has address `node_ips[k]` and one trainer per entry of
/// `devices.devices_per_proc`, trainer i on `endpoints[k][i]` (entries beyond P are unused);
/// rank = k × P + i. `local_index` is this node's pod. Throws LaunchError when `endpoints` does not
/// have one list per node, a node has fewer than P endpoints, or `local_index` is out of range.
Cluster BuildClusterFromEndpoints(const std::vector<std::string>& node_ips, int local_index,
                                  const std::vector<std::vector<Endpoint>>& endpoints,
                                  const DevicePlan& devices, const Endpoint& master);

}  // namespace pdlaunch
