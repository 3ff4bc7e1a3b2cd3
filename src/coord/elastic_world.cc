#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <utility>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/coord/elastic.h"

namespace pdlaunch {

namespace {

bool Contains(const std::vector<std::string>& items, const std::string& item) {
  return std::find(items.begin(), items.end(), item) != items.end();
}

// Puts `candidates` into the empty slots of `slots`, lowest slot first, while both last.
void FillGaps(std::vector<std::string>& slots, const std::vector<std::string>& candidates) {
  auto next = candidates.begin();
  for (std::string& slot : slots) {
    if (next == candidates.end()) return;
    if (slot.empty()) slot = *next++;
  }
}

std::string HostList(const Cluster& cluster) {
  std::vector<std::string> hosts;
  for (const Pod& pod : cluster.pods) hosts.push_back(pod.ip);
  return fmt::format("{}", fmt::join(hosts, ","));
}

}  // namespace

std::optional<std::vector<std::string>> FormWorld(const std::vector<std::string>& previous,
                                                  const std::vector<std::string>& live, int np_min,
                                                  int np_max, bool waited) {
  const auto count = static_cast<int>(live.size());
  if (count == 0 || count < np_min || (count < np_max && !waited)) return std::nullopt;
  const auto size = static_cast<size_t>(std::min(count, np_max));
  std::vector<std::string> slots(size);
  std::vector<std::string> displaced;  // Live members whose position is beyond the new size.
  for (size_t position = 0; position < previous.size(); ++position) {
    if (!Contains(live, previous[position])) continue;
    if (position < size) {
      slots[position] = previous[position];
    } else {
      displaced.push_back(previous[position]);
    }
  }
  std::vector<std::string> newcomers;
  for (const std::string& id : live) {
    if (!Contains(previous, id)) newcomers.push_back(id);
  }
  FillGaps(slots, displaced);
  FillGaps(slots, newcomers);
  return slots;
}

Cluster BuildElasticCluster(const WorldRecord& world, const std::string& self,
                            const DevicePlan& devices) {
  const auto member = std::find(world.members.begin(), world.members.end(), self);
  if (member == world.members.end()) {
    throw LaunchError(fmt::format("node {} is not a member of world {}", self, world.generation));
  }
  if (world.nodes.size() != world.members.size()) {
    throw LaunchError(fmt::format("world {} has {} members but {} node records", world.generation,
                                  world.members.size(), world.nodes.size()));
  }
  const size_t per_node = devices.devices_per_proc.size();
  std::vector<std::string> hosts;
  std::vector<std::vector<Endpoint>> endpoints;
  for (const NodeRecord& node : world.nodes) {
    if (node.ports.size() < per_node) {
      throw LaunchError(fmt::format("node {} offers {} ports for {} processes", node.host,
                                    node.ports.size(), per_node));
    }
    hosts.push_back(node.host);
    std::vector<Endpoint>& list = endpoints.emplace_back();
    for (size_t i = 0; i < per_node; ++i) list.push_back(Endpoint{node.host, node.ports[i]});
  }
  const Endpoint master{world.nodes.front().host, world.nodes.front().master_port};
  const auto local = static_cast<int>(member - world.members.begin());
  return BuildClusterFromEndpoints(hosts, local, endpoints, devices, master);
}

EnvList ElasticVariables(const WorldRecord& world, const Cluster& cluster,
                         const std::string& job_id) {
  return {
      {"PADDLE_TRAINERS", HostList(cluster)},
      {"DISTRIBUTED_TRAINER_ENDPOINTS", JoinEndpoints(cluster.world_endpoints())},
      {"PADDLE_ELASTIC_JOB_ID", job_id},
      {"PADDLE_ELASTIC_GENERATION", std::to_string(world.generation)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(world.restarts)},
  };
}

std::string FormatEndpointsValue(const Cluster& cluster) {
  return JoinEndpoints(cluster.world_endpoints()) + "|" + HostList(cluster);
}

}  // namespace pdlaunch
