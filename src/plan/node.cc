#include "pdlaunch/plan/node.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <set>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"

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
  for (const std::string& node : nodes) {
    if (node.empty()) throw UsageError(fmt::format("--ips={}: empty entry", ips));
  }
  if (const std::optional<std::string> repeated = FirstRepeatedHost(nodes)) {
    throw UsageError(fmt::format("--ips={}: '{}' is listed twice", ips, *repeated));
  }
  return nodes;
}

std::vector<int> IndicesOf(const std::vector<std::string>& nodes,
                           const std::vector<std::string>& addresses, const NodeEnv& env) {
  std::vector<int> indices;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (std::any_of(addresses.begin(), addresses.end(), [&](const std::string& address) {
          return NodeEntryNames(nodes[i], address, env);
        })) {
      indices.push_back(static_cast<int>(i));
    }
  }
  return indices;
}

// "local addresses are [...]", plus what the host names of --ips resolved to, in list order.
std::string LocalAddressesText(const std::vector<std::string>& nodes, const NodeEnv& env) {
  std::string text = fmt::format("local addresses are [{}]", fmt::join(env.local_addresses, ", "));
  std::vector<std::string> names;
  for (const std::string& node : nodes) {
    const auto resolved = env.resolved.find(node);
    if (resolved != env.resolved.end()) {
      names.push_back(fmt::format("{}=[{}]", node, fmt::join(resolved->second, ", ")));
    }
  }
  if (!names.empty()) text += fmt::format("; host names resolve to {}", fmt::join(names, ", "));
  return text;
}

NodeIdentity FindNamed(std::vector<std::string> nodes, const std::string& ips,
                       const std::string& address, const std::string& how, const NodeEnv& env) {
  const std::vector<int> found = IndicesOf(nodes, {address}, env);
  if (found.empty()) {
    const std::string named = how == "--host" ? "--host " + address : how + "=" + address;
    throw LaunchError(
        fmt::format("{} is not in --ips={}: {}", named, ips, LocalAddressesText(nodes, env)));
  }
  return {std::move(nodes), found.front(), how};
}

NodeIdentity FindLocal(std::vector<std::string> nodes, const std::string& ips, const NodeEnv& env) {
  const std::vector<int> found = IndicesOf(nodes, env.local_addresses, env);
  if (found.empty()) {
    throw LaunchError(fmt::format("this node is not in --ips={}: {}; pass --host or set POD_IP",
                                  ips, LocalAddressesText(nodes, env)));
  }
  if (found.size() > 1) {
    std::vector<std::string> matches;
    for (int index : found) matches.push_back(nodes[static_cast<size_t>(index)]);
    throw LaunchError(fmt::format(
        "several entries of --ips={} are addresses of this node: [{}] ({}); pass --host or set "
        "POD_IP",
        ips, fmt::join(matches, ", "), LocalAddressesText(nodes, env)));
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

bool NodeEntryNames(const std::string& node, const std::string& address, const NodeEnv& env) {
  const std::string wanted = Canonical(address);
  if (Canonical(node) == wanted) return true;
  const auto resolved = env.resolved.find(node);
  if (resolved == env.resolved.end()) return false;
  return std::any_of(resolved->second.begin(), resolved->second.end(),
                     [&](const std::string& ip) { return Canonical(ip) == wanted; });
}

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

std::vector<std::string> HostNamesToResolve(const std::string& ips,
                                            const std::optional<std::string>& host,
                                            const std::optional<std::string>& pod_ip) {
  const std::vector<std::string> nodes = CheckedNodeList(ips);
  if (nodes.size() == 1) return {};
  std::optional<std::string> deciding = host;
  if (!deciding && pod_ip && !pod_ip->empty()) deciding = pod_ip;
  if (deciding && !IndicesOf(nodes, {*deciding}, NodeEnv{}).empty()) return {};
  std::vector<std::string> names;
  std::copy_if(nodes.begin(), nodes.end(), std::back_inserter(names),
               [](const std::string& node) { return !IsIpLiteral(node); });
  return names;
}

std::optional<std::string> FirstRepeatedHost(const std::vector<std::string>& hosts) {
  // One canonical form per entry and a set of those seen: O(n log n) for thousands of nodes.
  std::set<std::string> seen;
  for (const std::string& host : hosts) {
    if (!seen.insert(Canonical(host)).second) return host;
  }
  return std::nullopt;
}

bool IsIpLiteral(const std::string& text) {
  unsigned char bytes[sizeof(in6_addr)];
  return inet_pton(AF_INET, text.c_str(), bytes) == 1 ||
         inet_pton(AF_INET6, text.c_str(), bytes) == 1;
}

std::vector<std::string> ResolveHostName(const std::string& name, std::string_view source) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int status = getaddrinfo(name.c_str(), nullptr, &hints, &list);
  if (status != 0) {
    const std::string reason = status == EAI_SYSTEM ? std::strerror(errno) : gai_strerror(status);
    throw LaunchError(fmt::format("cannot resolve host name '{}' of {}: {}", name, source, reason));
  }
  std::vector<std::string> addresses;
  for (int family : {AF_INET, AF_INET6}) {
    for (const addrinfo* entry = list; entry != nullptr; entry = entry->ai_next) {
      if (entry->ai_family != family) continue;
      std::string text = NumericHost(entry->ai_addr);
      if (!text.empty() && std::find(addresses.begin(), addresses.end(), text) == addresses.end()) {
        addresses.push_back(std::move(text));
      }
    }
  }
  freeaddrinfo(list);
  return addresses;
}

std::optional<std::string> SourceAddressFor(const std::string& address) {
  sockaddr_storage target{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&target);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&target);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(9);
    length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(9);
    length = sizeof(sockaddr_in6);
  } else {
    return std::nullopt;
  }
  const int fd = ::socket(target.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> source;
  sockaddr_storage own{};
  socklen_t own_length = sizeof own;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&target), length) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&own), &own_length) == 0) {
    source = NumericHost(reinterpret_cast<sockaddr*>(&own));
  }
  ::close(fd);
  return source;
}

bool IsLoopbackAddress(const std::string& address) {
  return address.starts_with("127.") || address == "::1";
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
