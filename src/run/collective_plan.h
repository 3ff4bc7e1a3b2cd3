#pragma once

// The plan of a collective job whose world needs no rendezvous (one node, a static --ips list,
// PaddleCloud's variables) or whose world the legacy --ips list decides once its nodes have met
// (ips_job.cc): the devices, this node in the list, the ports and the cluster. Internal to src/.

#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/topology.h"
#include "run/node_inputs.h"

namespace pdlaunch::internal {

/// Everything needed to start the local trainers, decided before anything starts.
struct CollectivePlan {
  Cluster cluster;
  LocalPorts ports;
  DevicePlan devices;
};

/// Which entry of `ips` (a comma list) is this node; host names are resolved (forward) only if
/// needed. Logs which entry it took when the list has several and `say`.
NodeIdentity ResolveThisNode(const std::string& ips, const std::optional<std::string>& host,
                             bool say = true);

/// The devices, then the cluster from PaddleCloud's variables or from --ips; fixed ports are
/// checked free on the node that uses them.
CollectivePlan PlanCollective(const LaunchOptions& options, const EnvMap& env);

/// The plan's warnings and notes; the legacy console (`todays_console` false) adds its mode
/// lines, which today's launcher does not print (the mode line on stdout only when
/// `print_mode_line`: not in a dry run, whose stdout is JSON).
void LogDevicePlan(const DevicePlan& plan, bool todays_console, bool print_mode_line = true);

}  // namespace pdlaunch::internal
