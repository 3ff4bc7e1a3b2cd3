#include "pdlaunch/plan/cloud.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <set>
#include <string_view>
#include <utility>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/options/address_syntax.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/node.h"

namespace pdlaunch {

namespace {

constexpr int kMaxPort = 65535;

std::optional<std::string> Find(const EnvMap& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

// An integer as Python's int() reads a variable: surrounding whitespace allowed.
int EnvInt(std::string_view text, std::string_view name, int min, int max) {
  return ParseInt(StripSpace(text), name, min, max);
}

// What the cloud variables say about the nodes, parsed and checked.
struct CloudNodes {
  std::vector<std::string> ips;
  int index = 0;
  int ports_num = 0;
};

CloudNodes ParseNodes(const CloudEnv& cloud, std::vector<std::string>& warnings) {
  CloudNodes nodes;
  nodes.ips = SplitAndStrip(cloud.trainers, ',');
  if (nodes.ips.empty() || std::find(nodes.ips.begin(), nodes.ips.end(), "") != nodes.ips.end()) {
    throw UsageError(fmt::format("PADDLE_TRAINERS={}: empty entry", cloud.trainers));
  }
  const int last = static_cast<int>(nodes.ips.size()) - 1;
  nodes.index = EnvInt(cloud.trainer_id, "PADDLE_TRAINER_ID", 0, last);
  nodes.ports_num = EnvInt(cloud.trainer_ports_num, "TRAINER_PORTS_NUM", 0, kMaxPort);
  if (std::find(nodes.ips.begin(), nodes.ips.end(), cloud.pod_ip) == nodes.ips.end()) {
    throw LaunchError(
        fmt::format("POD_IP={} is not in PADDLE_TRAINERS={}", cloud.pod_ip, cloud.trainers));
  }
  const std::string& mine = nodes.ips[static_cast<size_t>(nodes.index)];
  if (mine != cloud.pod_ip) {
    warnings.push_back(fmt::format(
        "POD_IP={} is not entry {} of PADDLE_TRAINERS={} (PADDLE_TRAINER_ID={}): this node runs "
        "the trainers of node {} ({})",
        cloud.pod_ip, nodes.index, cloud.trainers, cloud.trainer_id, nodes.index, mine));
  }
  return nodes;
}

// The first port of every node without DISTRIBUTED_TRAINER_ENDPOINTS (docs/multi-node.md).
int CloudStartPort(const CloudEnv& cloud, const CloudNodes& nodes, int per_node, int start_port,
                   std::vector<std::string>& warnings) {
  if (nodes.ips.size() < 2 || !cloud.paddle_port) return start_port;
  int port = 0;
  try {
    port = EnvInt(*cloud.paddle_port, "PADDLE_PORT", 1, kMaxPort);
  } catch (const UsageError& error) {
    warnings.push_back(fmt::format("{}; ignored, the start port is {}", error.what(), start_port));
    return start_port;
  }
  if (nodes.ports_num < per_node || port == start_port) return start_port;
  warnings.push_back(fmt::format("Use Cloud specified port:{}.", port));
  return port;
}

std::vector<std::vector<Endpoint>> PortRangeEndpoints(const CloudNodes& nodes, int start,
                                                      int count) {
  if (start + count - 1 > kMaxPort) {
    throw UsageError(
        fmt::format("{} ports from the start port {} go beyond {}", count, start, kMaxPort));
  }
  std::vector<std::vector<Endpoint>> endpoints;
  for (const std::string& ip : nodes.ips) {
    std::vector<Endpoint>& list = endpoints.emplace_back();
    for (int i = 0; i < count; ++i) list.push_back(Endpoint{ip, start + i});
  }
  return endpoints;
}

std::vector<std::vector<Endpoint>> SlicedEndpoints(const std::string& text, const CloudNodes& nodes,
                                                   size_t per_node) {
  const std::vector<std::string> items = SplitAndStrip(text, ',');
  const size_t num = static_cast<size_t>(nodes.ports_num);
  if (items.size() != nodes.ips.size() * num) {
    throw UsageError(
        fmt::format("DISTRIBUTED_TRAINER_ENDPOINTS has {} endpoints, expected {} ({} nodes in "
                    "PADDLE_TRAINERS × TRAINER_PORTS_NUM={})",
                    items.size(), nodes.ips.size() * num, nodes.ips.size(), num));
  }
  if (num < per_node) {
    throw UsageError(fmt::format(
        "TRAINER_PORTS_NUM={} gives each node fewer endpoints of DISTRIBUTED_TRAINER_ENDPOINTS "
        "than its {} trainers",
        num, per_node));
  }
  std::vector<std::vector<Endpoint>> endpoints(nodes.ips.size());
  std::set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    Endpoint endpoint;
    try {
      endpoint = ParseEndpoint(items[i]);
    } catch (const UsageError& e) {
      throw UsageError(fmt::format("DISTRIBUTED_TRAINER_ENDPOINTS: {}", e.what()));
    }
    if (!seen.insert(endpoint.ToString()).second) {
      throw UsageError(
          fmt::format("DISTRIBUTED_TRAINER_ENDPOINTS: '{}' is listed twice", items[i]));
    }
    endpoints[i / num].push_back(endpoint);
  }
  return endpoints;
}

// Item P of node 0's endpoints if the cloud gave it one, else the port after its last trainer's.
Endpoint CloudMaster(const std::vector<Endpoint>& node0, size_t per_node) {
  if (node0.size() > per_node) return node0[per_node];
  const Endpoint& last = node0.at(per_node - 1);
  if (last.port >= kMaxPort) {
    throw UsageError(fmt::format("no port left for MASTER_PORT after {}", last.ToString()));
  }
  return Endpoint{last.host, last.port + 1};
}

}  // namespace

std::optional<CloudEnv> DetectCloud(const EnvMap& env) {
  const auto trainers = Find(env, "PADDLE_TRAINERS");
  const auto pod_ip = Find(env, "POD_IP");
  const auto trainer_id = Find(env, "PADDLE_TRAINER_ID");
  const auto ports_num = Find(env, "TRAINER_PORTS_NUM");
  if (!trainers || !pod_ip || !trainer_id || !ports_num) return std::nullopt;
  CloudEnv cloud{*trainers,
                 *pod_ip,
                 *trainer_id,
                 *ports_num,
                 Find(env, "PADDLE_TRAINERS_NUM"),
                 Find(env, "DISTRIBUTED_TRAINER_ENDPOINTS"),
                 Find(env, "PADDLE_PORT")};
  if (cloud.paddle_port && cloud.paddle_port->empty()) cloud.paddle_port.reset();
  return cloud;
}

bool UsesCloudCluster(const CloudEnv& cloud) {
  if (!cloud.trainers_num) return false;
  return EnvInt(*cloud.trainers_num, "PADDLE_TRAINERS_NUM", INT_MIN, INT_MAX) != 1;
}

CloudCluster BuildCloudCluster(const CloudEnv& cloud, const std::string& ips,
                               const DevicePlan& devices, int start_port) {
  CloudCluster result;
  const CloudNodes nodes = ParseNodes(cloud, result.warnings);
  if (ips != "127.0.0.1" && ips != cloud.trainers) {
    result.warnings.push_back(fmt::format(
        "Please NOTE: When using paddlecloud, cluster_node_ips is automatically got from "
        "PADDLE_TRAINERS(multi nodes) or POD_IP(single node).Your input cluster_node_ips: {} "
        "doesn't equals to IPs: {} from paddlecloud environment.",
        ips, PythonListRepr(nodes.ips)));
  }
  const size_t per_node = devices.devices_per_proc.size();
  if (per_node == 0) throw LaunchError("no trainers to start on this node");
  std::vector<std::vector<Endpoint>> endpoints;
  if (cloud.trainer_endpoints) {
    endpoints = SlicedEndpoints(*cloud.trainer_endpoints, nodes, per_node);
  } else {
    // The same start port on every node: one host listed twice would give two nodes the
    // same endpoints (DISTRIBUTED_TRAINER_ENDPOINTS can place them apart).
    if (const std::optional<std::string> repeated = FirstRepeatedHost(nodes.ips)) {
      throw UsageError(fmt::format(
          "PADDLE_TRAINERS={}: '{}' is listed twice, and without DISTRIBUTED_TRAINER_ENDPOINTS "
          "both would get the same ports",
          cloud.trainers, *repeated));
    }
    const int per_node_int = static_cast<int>(per_node);
    const int start = CloudStartPort(cloud, nodes, per_node_int, start_port, result.warnings);
    // One port more than the trainers need: the master's, as the cloud's next port.
    endpoints = PortRangeEndpoints(nodes, start, per_node_int + 1);
  }
  const Endpoint master = CloudMaster(endpoints.front(), per_node);
  result.cluster = BuildClusterFromEndpoints(nodes.ips, nodes.index, endpoints, devices, master);
  return result;
}

void CheckAddressVariables(const LaunchOptions& options, const EnvMap& env) {
  const auto set = [&](const char* name) -> std::optional<std::string_view> {
    const auto it = env.find(name);
    if (it == env.end() || StripSpace(it->second).empty()) return std::nullopt;
    return StripSpace(it->second);
  };
  if (const auto pod_ip = set("POD_IP"); pod_ip && !options.host) {
    CheckHostToken(*pod_ip, "POD_IP");
  }
  if (!DetectCloud(env)) return;  // PaddleCloud's variables are read only under PaddleCloud.
  if (const auto trainers = set("PADDLE_TRAINERS")) {
    CheckAddressList(*trainers, ',', "PADDLE_TRAINERS", false, false);
  }
  if (const auto endpoints = set("DISTRIBUTED_TRAINER_ENDPOINTS")) {
    CheckAddressList(*endpoints, ',', "DISTRIBUTED_TRAINER_ENDPOINTS", true, true);
  }
}

}  // namespace pdlaunch
