#pragma once
// The host's own view of addresses (effects): what plan/node.h's pure resolution is given.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// Forward resolution of `name` (getaddrinfo, no reverse lookup): its distinct numeric addresses,
/// IPv4 ones first, each family in resolver order. Throws LaunchError
/// "cannot resolve host name 'node-b' of --ips: <gai_strerror>" when it fails, `source` naming
/// where the name came from (--ips, --servers/--workers, --master).
std::vector<std::string> ResolveHostName(const std::string& name,
                                         std::string_view source = "--ips");

/// The local address this host would send from to reach `address` (a connected UDP socket's
/// own address: a route lookup, no packet is sent); nullopt when there is no route.
std::optional<std::string> SourceAddressFor(const std::string& address);

/// IPv4 and IPv6 addresses of this host's interfaces (getifaddrs), loopback included.
std::vector<std::string> LocalInterfaceAddresses();

}  // namespace pdlaunch
