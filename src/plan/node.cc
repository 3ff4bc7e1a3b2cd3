#include "pdlaunch/plan/node.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <set>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"

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

bool IsLoopbackAddress(const std::string& address) {
  return address.starts_with("127.") || address == "::1";
}

}  // namespace pdlaunch
