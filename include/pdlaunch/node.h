#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pdlaunch {

/// Where this node stands in the node list.
struct NodeIdentity {
  std::vector<std::string> node_ips;  ///< --ips, split and stripped, in the user's order.
  int node_index = 0;                 ///< Index of this node in node_ips.
  std::string how;                    ///< "--host", "POD_IP", "local interface", "single entry".
};

/// Inputs for ResolveNode that come from the machine.
struct NodeEnv {
  std::optional<std::string> pod_ip;          ///< Env POD_IP, if set and non-empty.
  std::vector<std::string> local_addresses;   ///< Addresses of this host's interfaces.
};

/// Decides which entry of --ips is this node (issue #3 item 1), never by hostname resolution:
/// one entry → that entry; else `host` if given, else POD_IP, else the local interface addresses
/// that appear in the list (exactly one must). Errors (LaunchError, nothing started): an empty or
/// duplicate entry (UsageError), `host`/POD_IP not in the list, no or several local addresses in
/// the list; the message lists the local addresses and --ips.
NodeIdentity ResolveNode(const std::string& ips, const std::optional<std::string>& host,
                         const NodeEnv& env);

/// IPv4 and IPv6 addresses of this host's interfaces (getifaddrs), loopback included.
std::vector<std::string> LocalInterfaceAddresses();

}  // namespace pdlaunch
