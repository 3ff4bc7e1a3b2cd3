#pragma once

// What this node gives a run (internal to run/): its environment, the job token, its devices,
// its ports and a pod name.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pdlaunch/base/environment.h"
#include "pdlaunch/coord/job_token.h"
#include "pdlaunch/options/options.h"
#include "pdlaunch/plan/device_family.h"
#include "pdlaunch/plan/devices.h"
#include "pdlaunch/plan/node.h"
#include "pdlaunch/plan/ports.h"

namespace pdlaunch::internal {

/// The job token (docs/master.md, "Exposure"): read from PDLAUNCH_JOB_TOKEN and removed from
/// this process's environment, so that no child (a rank, a probe, a hook) inherits it; nullopt
/// without one. Main calls it once, before anything starts, and hands the token to the job
/// (JobDecision::token). Throws UsageError for a malformed one.
std::optional<JobToken> TakeJobToken();

/// The environment as a map, variables set to "" included (PaddleCloud detection counts them).
EnvMap EnvironmentMap();

/// A pod name as Paddle makes them: six random lowercase letters.
std::string NewPodName();

/// The launcher's environment as "NAME=value" entries.
std::vector<std::string> ParentEnvironment();

/// The fixed start port: --start_port, FLAGS_START_PORT, PADDLE_START_PORT, in that order.
std::optional<int> GivenStartPort(const LaunchOptions& options);

/// POD_IP, the local interface addresses (only when `ips` lists several nodes) and the
/// addresses of the host names in `ips` that need resolving (forward only).
NodeEnv GatherNodeEnv(const std::string& ips, const std::optional<std::string>& host,
                      std::string_view source = "--ips");

/// The ports of a node's local trainers, plus MASTER_PORT.
struct LocalPorts {
  std::vector<int> ports;  ///< One per local trainer.
  int master_port = 0;
  std::unique_ptr<PortReservation> reservation;  ///< Held for the whole job when free ports.
};

/// `start`, start+1, ... and MASTER_PORT after them when `start` is given; otherwise
/// `num_local` + 1 free locked ports, the last one MASTER_PORT.
LocalPorts PlanLocalPorts(std::optional<int> start, int num_local);

/// ResolveDevices' environment input: the visible-devices variables, and the names the device
/// list and the process count were given under (LaunchOptions::FlagName), for its messages.
/// UsageError when both --gpus (or an alias) and --xpus are given.
DeviceEnv DeviceEnvOf(const LaunchOptions& options, const VisibleDevices& visible);

/// The device list: --xpus (or --selected_xpus) when given, else --devices and its aliases.
std::optional<std::string> DeviceList(const LaunchOptions& options);

/// The visible-devices variables of this process's environment.
VisibleDevices VisibleDevicesOfEnvironment();

/// The collective device plan: the device list, --nproc_per_node, --backend, the visible-devices
/// variables and the system's devices (process/device_probe.h).
DevicePlan ResolveCollectiveDevices(const LaunchOptions& options);

}  // namespace pdlaunch::internal
