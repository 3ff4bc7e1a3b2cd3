// The host's own view of addresses: name resolution, the interfaces, the route to a peer. The
// effects that plan/node.cc's pure resolution takes as input (NodeEnv).
#include "pdlaunch/plan/address_lookup.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "pdlaunch/base/errors.h"
#include "pdlaunch/base/logging.h"

namespace pdlaunch {
namespace {

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
