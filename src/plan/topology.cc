#include "pdlaunch/plan/topology.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pdlaunch/base/errors.h"

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

namespace {

void CheckEndpointLists(const std::vector<std::string>& node_ips, int local_index,
                        const std::vector<std::vector<Endpoint>>& endpoints, size_t per_node) {
  if (endpoints.size() != node_ips.size()) {
    throw LaunchError(fmt::format("{} nodes need {} endpoint lists, got {}", node_ips.size(),
                                  node_ips.size(), endpoints.size()));
  }
  for (size_t n = 0; n < endpoints.size(); ++n) {
    if (endpoints[n].size() < per_node) {
      throw LaunchError(fmt::format("node {} ({}) has {} endpoints for {} trainers per node", n,
                                    node_ips[n], endpoints[n].size(), per_node));
    }
  }
  if (local_index < 0 || static_cast<size_t>(local_index) >= node_ips.size()) {
    throw LaunchError(fmt::format("node index {} is not an entry of [{}]", local_index,
                                  fmt::join(node_ips, ", ")));
  }
}

}  // namespace

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
  std::vector<std::vector<Endpoint>> endpoints;
  for (const std::string& ip : node.node_ips) {
    std::vector<Endpoint>& list = endpoints.emplace_back();
    for (size_t i = 0; i < per_node; ++i) list.push_back(Endpoint{ip, ports[i]});
  }
  return BuildClusterFromEndpoints(node.node_ips, node.node_index, endpoints, devices,
                                   Endpoint{node.node_ips.front(), master_port});
}

Cluster BuildClusterFromEndpoints(const std::vector<std::string>& node_ips, int local_index,
                                  const std::vector<std::vector<Endpoint>>& endpoints,
                                  const DevicePlan& devices, const Endpoint& master) {
  const size_t per_node = devices.devices_per_proc.size();
  CheckEndpointLists(node_ips, local_index, endpoints, per_node);
  Cluster cluster;
  cluster.local_index = local_index;
  cluster.family = devices.family;
  cluster.mode = devices.mode;
  cluster.backend = devices.backend;
  cluster.master = master;
  for (size_t n = 0; n < node_ips.size(); ++n) {
    Pod pod{node_ips[n], static_cast<int>(n), {}};
    for (size_t i = 0; i < per_node; ++i) {
      Trainer trainer;
      trainer.global_rank = static_cast<int>(n * per_node + i);
      trainer.local_rank = static_cast<int>(i);
      trainer.endpoint = endpoints[n][i];
      if (devices.mode != DeviceMode::kCpu) trainer.devices = devices.devices_per_proc[i];
      pod.trainers.push_back(std::move(trainer));
    }
    cluster.pods.push_back(std::move(pod));
  }
  return cluster;
}

}  // namespace pdlaunch
