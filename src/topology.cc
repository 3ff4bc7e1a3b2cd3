#include "pdlaunch/topology.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pdlaunch/errors.h"

namespace pdlaunch {

int Cluster::world_size() const {
  int size = 0;
  for (const Pod& pod : pods) size += static_cast<int>(pod.trainers.size());
  return size;
}

std::vector<Endpoint> Cluster::world_endpoints() const {
  std::vector<Endpoint> endpoints;
  for (const Pod& pod : pods) {
    for (const Trainer& trainer : pod.trainers) endpoints.push_back(trainer.endpoint);
  }
  return endpoints;
}

std::string Cluster::world_device_ids() const {
  std::vector<std::string> per_trainer;
  for (const Pod& pod : pods) {
    for (const Trainer& trainer : pod.trainers) {
      per_trainer.push_back(fmt::format("{}", fmt::join(trainer.devices, ":")));
    }
  }
  return fmt::format("{}", fmt::join(per_trainer, ","));
}

Cluster BuildCollectiveCluster(const NodeIdentity& node, const DevicePlan& devices,
                               const std::vector<int>& ports, int master_port) {
  const size_t per_node = devices.devices_per_proc.size();
  if (ports.size() < per_node) {
    throw LaunchError(fmt::format("{} trainers per node need {} ports, got {}", per_node, per_node,
                                  ports.size()));
  }
  if (node.node_index < 0 || static_cast<size_t>(node.node_index) >= node.node_ips.size()) {
    throw LaunchError(fmt::format("node index {} is not an entry of --ips={}", node.node_index,
                                  fmt::join(node.node_ips, ",")));
  }
  Cluster cluster;
  cluster.local_index = node.node_index;
  cluster.mode = devices.mode;
  cluster.backend = devices.backend;
  cluster.master = Endpoint{node.node_ips.front(), master_port};
  for (size_t n = 0; n < node.node_ips.size(); ++n) {
    Pod pod{node.node_ips[n], static_cast<int>(n), {}};
    for (size_t i = 0; i < per_node; ++i) {
      Trainer trainer;
      trainer.global_rank = static_cast<int>(n * per_node + i);
      trainer.local_rank = static_cast<int>(i);
      trainer.endpoint = Endpoint{pod.ip, ports[i]};
      if (devices.mode == DeviceMode::kGpu) trainer.devices = devices.devices_per_proc[i];
      pod.trainers.push_back(std::move(trainer));
    }
    cluster.pods.push_back(std::move(pod));
  }
  return cluster;
}

}  // namespace pdlaunch
