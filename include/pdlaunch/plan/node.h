#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
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
  std::optional<std::string> pod_ip;         ///< Env POD_IP, if set and non-empty.
  std::vector<std::string> local_addresses;  ///< Addresses of this host's interfaces.
  /// Addresses of the host names of --ips (entries that are not IP literals), as given by
  /// ResolveHostName; filled by launch.cc for the names of HostNamesToResolve only.
  std::map<std::string, std::vector<std::string>> resolved;
};

/// Decides which entry of --ips is this node (issue #3 item 1), never by this machine's own
/// hostname: one entry → that entry; else `host` if given, else POD_IP, else the local interface
/// addresses that appear in the list (exactly one must). An entry matches an address if it is
/// that IP literal (compared in canonical form), the same string, or a host name whose
/// `env.resolved` addresses include it. Errors (LaunchError, nothing started): an empty or
/// duplicate entry (UsageError), `host`/POD_IP not in the list, no or several local addresses in
/// the list; the message lists the local addresses and --ips (and the resolved names, if any).
NodeIdentity ResolveNode(const std::string& ips, const std::optional<std::string>& host,
                         const NodeEnv& env);

/// The entries of --ips that ResolveNode needs resolved: none for a single entry or when the
/// deciding address (`host`, else a non-empty `pod_ip`) is literally an entry; otherwise every
/// entry that is not an IP literal, in list order. Throws UsageError for an empty or duplicate
/// entry, as ResolveNode does. Pure.
std::vector<std::string> HostNamesToResolve(const std::string& ips,
                                            const std::optional<std::string>& host,
                                            const std::optional<std::string>& pod_ip);

/// True for an IPv4 dotted quad or an IPv6 literal (inet_pton), false for anything else.
bool IsIpLiteral(const std::string& text);

/// The first entry of `hosts` that an earlier one already names (IP literals compared in their
/// canonical form: "0:0::1" is "::1"), or nullopt. Shared by --ips and PADDLE_TRAINERS.
std::optional<std::string> FirstRepeatedHost(const std::vector<std::string>& hosts);

/// True if entry `node` of a node list names `address`: the same IP literal in canonical form
/// ("0:0::1" is "::1"), the same string, or a host name that resolved (env.resolved) to it.
bool NodeEntryNames(const std::string& node, const std::string& address, const NodeEnv& env);

/// True for a loopback address (127.0.0.0/8, ::1).
bool IsLoopbackAddress(const std::string& address);

}  // namespace pdlaunch
