#include "pdlaunch/node.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "pdlaunch/endpoint.h"
#include "pdlaunch/errors.h"
#include "pdlaunch/logging.h"

namespace pdlaunch {

namespace {

// The canonical text of an IP literal ("0:0::1" → "::1"); anything else unchanged.
std::string Canonical(const std::string& address) {
  unsigned char bytes[sizeof(in6_addr)];
  char text[INET6_ADDRSTRLEN];
  for (int family : {AF_INET, AF_INET6}) {
    if (inet_pton(family, address.c_str(), bytes) == 1 &&
        inet_ntop(family, bytes, text, sizeof text) != nullptr) {
      return text;
    }
  }
  return address;
}

std::vector<std::string> CheckedNodeList(const std::string& ips) {
  std::vector<std::string> nodes = SplitAndStrip(ips, ',');
  if (nodes.empty()) nodes.emplace_back();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].empty()) throw UsageError(fmt::format("--ips={}: empty entry", ips));
    for (size_t j = 0; j < i; ++j) {
      if (Canonical(nodes[j]) == Canonical(nodes[i])) {
        throw UsageError(fmt::format("--ips={}: '{}' is listed twice", ips, nodes[i]));
      }
    }
  }
  return nodes;
}

std::vector<int> IndicesOf(const std::vector<std::string>& nodes,
                           const std::vector<std::string>& addresses) {
  std::vector<std::string> wanted;
  for (const std::string& address : addresses) wanted.push_back(Canonical(address));
  std::vector<int> indices;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (std::find(wanted.begin(), wanted.end(), Canonical(nodes[i])) != wanted.end()) {
      indices.push_back(static_cast<int>(i));
    }
  }
  return indices;
}

std::string LocalAddressesText(const NodeEnv& env) {
  return fmt::format("local addresses are [{}]", fmt::join(env.local_addresses, ", "));
}

NodeIdentity FindNamed(std::vector<std::string> nodes, const std::string& ips,
                       const std::string& address, const std::string& how, const NodeEnv& env) {
  const std::vector<int> found = IndicesOf(nodes, {address});
  if (found.empty()) {
    const std::string named = how == "--host" ? "--host " + address : how + "=" + address;
    throw LaunchError(
        fmt::format("{} is not in --ips={}: {}", named, ips, LocalAddressesText(env)));
  }
  return {std::move(nodes), found.front(), how};
}

NodeIdentity FindLocal(std::vector<std::string> nodes, const std::string& ips, const NodeEnv& env) {
  const std::vector<int> found = IndicesOf(nodes, env.local_addresses);
  if (found.empty()) {
    throw LaunchError(fmt::format("this node is not in --ips={}: {}; pass --host or set POD_IP",
                                  ips, LocalAddressesText(env)));
  }
  if (found.size() > 1) {
    std::vector<std::string> matches;
    for (int index : found) matches.push_back(nodes[static_cast<size_t>(index)]);
    throw LaunchError(fmt::format(
        "several entries of --ips={} are addresses of this node: [{}] ({}); pass --host or set "
        "POD_IP",
        ips, fmt::join(matches, ", "), LocalAddressesText(env)));
  }
  return {std::move(nodes), found.front(), "local interface"};
}

// getnameinfo writes link-local IPv6 addresses as "fe80::1%eth0"; --ips never carries the scope.
std::string NumericHost(const sockaddr* address) {
  const socklen_t length =
      address->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
  char host[NI_MAXHOST];
  if (getnameinfo(address, length, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0) return "";
  std::string text = host;
  return text.substr(0, text.find('%'));
}

}  // namespace

NodeIdentity ResolveNode(const std::string& ips, const std::optional<std::string>& host,
                         const NodeEnv& env) {
  std::vector<std::string> nodes = CheckedNodeList(ips);
  if (nodes.size() == 1) return {std::move(nodes), 0, "single entry"};
  if (host) return FindNamed(std::move(nodes), ips, *host, "--host", env);
  if (env.pod_ip && !env.pod_ip->empty()) {
    return FindNamed(std::move(nodes), ips, *env.pod_ip, "POD_IP", env);
  }
  return FindLocal(std::move(nodes), ips, env);
}

std::vector<std::string> LocalInterfaceAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    PDLOG_WARN("cannot list the network interfaces (getifaddrs): {}", std::strerror(errno));
    return {};
  }
  std::vector<std::string> addresses;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    const sockaddr* address = entry->ifa_addr;
    if (address == nullptr || (address->sa_family != AF_INET && address->sa_family != AF_INET6)) {
      continue;
    }
    std::string text = NumericHost(address);
    if (!text.empty() && std::find(addresses.begin(), addresses.end(), text) == addresses.end()) {
      addresses.push_back(std::move(text));
    }
  }
  freeifaddrs(list);
  return addresses;
}

}  // namespace pdlaunch
