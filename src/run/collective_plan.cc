#include "run/collective_plan.h"

#include <fmt/format.h>

#include "pdlaunch/base/logging.h"
#include "pdlaunch/plan/cloud.h"
#include "pdlaunch/plan/ports.h"

namespace pdlaunch::internal {
namespace {

/// Paddle's default start port for multi-node jobs (docs/env.md).
constexpr int kDefaultMultiNodeStartPort = 6070;

/// Fixed ports for several nodes or under PaddleCloud (docs/env.md), else free locked ports.
LocalPorts PlanPorts(const LaunchOptions& options, const NodeIdentity& node, int num_local,
                     bool cloud) {
  std::optional<int> start = GivenStartPort(options);
  if (!start && (node.node_ips.size() > 1 || cloud)) start = kDefaultMultiNodeStartPort;
  return PlanLocalPorts(start, num_local);
}

/// Fixed ports are checked on the node that uses them: its trainers' ports, and MASTER_PORT on
/// node 0 (where the rendezvous store listens).
void CheckLocalPortsFree(const Cluster& cluster) {
  std::vector<int> ports;
  for (const Trainer& trainer : cluster.local_pod().trainers)
    ports.push_back(trainer.endpoint.port);
  if (cluster.local_index == 0) ports.push_back(cluster.master.port);
  CheckPortsFree(ports);
}

/// The cluster from the PaddleCloud variables (docs/multi-node.md).
Cluster PlanCloudCluster(const LaunchOptions& options, const CloudEnv& cloud,
                         const DevicePlan& devices) {
  const int start = GivenStartPort(options).value_or(kDefaultCloudStartPort);
  CloudCluster result = BuildCloudCluster(cloud, options.ips, devices, start);
  for (const std::string& warning : result.warnings) PDLOG_WARN("{}", warning);
  const Cluster& cluster = result.cluster;
  PDLOG_INFO("PaddleCloud job: this node is {}, node {} of {} in PADDLE_TRAINERS",
             cluster.local_pod().ip, cluster.local_index, cluster.pods.size());
  return std::move(result.cluster);
}

}  // namespace

NodeIdentity ResolveThisNode(const std::string& ips, const std::optional<std::string>& host,
                             bool say) {
  const NodeEnv env = GatherNodeEnv(ips, host);
  NodeIdentity node = ResolveNode(ips, host, env);
  if (say && node.node_ips.size() > 1) {
    PDLOG_INFO("This node is {}, node {} of {} in --ips (found by {})",
               node.node_ips[static_cast<size_t>(node.node_index)], node.node_index,
               node.node_ips.size(), node.how);
  }
  return node;
}

void LogDevicePlan(const DevicePlan& plan, bool todays_console, bool print_mode_line) {
  for (const std::string& line : plan.warnings) PDLOG_WARN("{}", line);
  for (const std::string& line : plan.info) PDLOG_INFO("{}", line);
  if (todays_console) return;
  if (plan.backend == "gloo") PDLOG_WARN("launch start with CPUONLY mode");
  if (print_mode_line) fmt::print("{}\n", plan.mode_line);
}

CollectivePlan PlanCollective(const LaunchOptions& options, const EnvMap& env) {
  CollectivePlan plan;
  plan.devices = ResolveCollectiveDevices(options);
  const std::optional<CloudEnv> cloud = DetectCloud(env);
  if (cloud && UsesCloudCluster(*cloud)) {
    plan.cluster = PlanCloudCluster(options, *cloud, plan.devices);
  } else {
    const NodeIdentity node = ResolveThisNode(options.ips, options.host);
    const int num_local = static_cast<int>(plan.devices.devices_per_proc.size());
    plan.ports = PlanPorts(options, node, num_local, cloud.has_value());
    plan.cluster =
        BuildCollectiveCluster(node, plan.devices, plan.ports.ports, plan.ports.master_port);
  }
  if (!plan.ports.reservation) CheckLocalPortsFree(plan.cluster);
  return plan;
}

}  // namespace pdlaunch::internal
