#include "pdlaunch/options/address_syntax.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <string>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"

namespace pdlaunch {
namespace {

bool IsIpv4(std::string_view text) {
  in_addr address{};
  return inet_pton(AF_INET, std::string(text).c_str(), &address) == 1;
}

bool IsIpv6(std::string_view text) {
  // A link-local address may carry its zone (fe80::1%eth0), which getaddrinfo understands.
  if (const size_t zone = text.find('%');
      zone != std::string_view::npos && zone + 1 < text.size()) {
    text = text.substr(0, zone);
  }
  in6_addr address{};
  return inet_pton(AF_INET6, std::string(text).c_str(), &address) == 1;
}

bool IsHostName(std::string_view text) {
  if (text.empty() || text.size() > 253 || !std::all_of(text.begin(), text.end(), IsHostNameChar)) {
    return false;
  }
  // Labels are not empty: no leading dot, no "..". One trailing dot (a rooted name) is fine.
  if (text.back() == '.') text.remove_suffix(1);
  return !text.empty() && text.front() != '.' && text.find("..") == std::string_view::npos;
}

}  // namespace

bool IsHostNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

void CheckHostToken(std::string_view token, std::string_view flag) {
  if (token.empty()) return;
  if (std::all_of(token.begin(), token.end(),
                  [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    if (!IsIpv4(token)) {
      throw UsageError(fmt::format("{}: '{}' is not an IPv4 address (four numbers 0-255, a.b.c.d)",
                                   flag, token));
    }
    return;
  }
  if (token.find(':') != std::string_view::npos) {
    if (IsIpv6(token)) return;
    const size_t colon = token.rfind(':');
    const bool looks_like_endpoint =
        token.find(':') == colon &&
        (IsIpv4(token.substr(0, colon)) || IsHostName(token.substr(0, colon)));
    throw UsageError(fmt::format(
        "{}: '{}' is not {}", flag, token,
        looks_like_endpoint
            ? fmt::format("a host: {} takes addresses or host names, without ports", flag)
            : "an IPv6 address"));
  }
  if (!IsHostName(token)) {
    throw UsageError(
        fmt::format("{}: '{}' is not a host name or an address (letters, digits, '-', '_' and '.')",
                    flag, token));
  }
}

void CheckEndpointToken(std::string_view token, std::string_view flag, bool port_required) {
  if (token.empty()) return;
  std::string_view host = token;
  std::string_view port;
  if (token.front() == '[') {
    const size_t close = token.find(']');
    if (close == std::string_view::npos || !IsIpv6(token.substr(1, close - 1))) {
      throw UsageError(fmt::format("{}: '{}' is not [IPv6 address]:port", flag, token));
    }
    const std::string_view rest = token.substr(close + 1);
    if (rest.empty() && !port_required) return;
    if (!rest.starts_with(':') || rest.size() == 1) {
      throw UsageError(fmt::format("{}: '{}' is not [IPv6 address]:port", flag, token));
    }
    ParseInt(rest.substr(1), fmt::format("{}: port of endpoint '{}'", flag, token), 1, 65535);
    return;
  }
  const size_t colon = token.find(':');
  if (colon != token.rfind(':')) {
    throw UsageError(fmt::format(
        "{}: '{}' is not host:port (an IPv6 address is written [address]:port)", flag, token));
  }
  if (colon == std::string_view::npos) {
    if (port_required) {
      throw UsageError(fmt::format("{}: '{}' is not host:port (the port is missing)", flag, token));
    }
  } else {
    host = token.substr(0, colon);
    port = token.substr(colon + 1);
    if (host.empty()) {
      throw UsageError(fmt::format("{}: '{}' is not host:port (the host is missing)", flag, token));
    }
    ParseInt(port, fmt::format("{}: port of endpoint '{}'", flag, token), 1, 65535);
  }
  CheckHostToken(host, flag);
}

void CheckAddressList(std::string_view list, char separator, std::string_view flag, bool endpoints,
                      bool port_required) {
  for (const std::string& entry : SplitAndStrip(list, separator)) {
    if (entry.empty()) continue;  // Empty entries have their own messages where they matter.
    if (endpoints) {
      CheckEndpointToken(entry, flag, port_required);
    } else {
      CheckHostToken(entry, flag);
    }
  }
}

void CheckAddressArguments(const LaunchOptions& options) {
  if (options.WasGiven("ips")) CheckAddressList(options.ips, ',', "--ips", false, false);
  if (options.host) CheckHostToken(*options.host, "--host");
  CheckAddressList(options.servers, ',', "--servers", true, false);
  CheckAddressList(options.workers, ',', "--workers", true, false);
  for (const std::string& stage : SplitAndStrip(options.heter_workers, ';')) {
    CheckAddressList(stage, ',', "--heter_workers", true, false);
  }
  if (options.master && !options.master->empty()) {
    std::string_view master = *options.master;
    for (std::string_view scheme : {"etcd://", "http://"}) {
      if (master.starts_with(scheme)) master.remove_prefix(scheme.size());
    }
    // Paddle 3's forms: ip:port, :PORT (the host is the first node of --ips) and a bare host
    // (its port from PADDLE_PORT or the --ips handshake); SelectLaunchPath says what each needs.
    if (master.starts_with(':') && master.find(':', 1) == std::string_view::npos) {
      ParseInt(master.substr(1), fmt::format("--master: port of '{}'", master), 1, 65535);
    } else if (master.find(':') != std::string_view::npos && !IsIpv6(master)) {
      CheckEndpointToken(master, "--master", true);
    } else {
      CheckHostToken(master, "--master");
    }
  }
  if (options.elastic_server) {
    std::string_view server = *options.elastic_server;
    if (server.starts_with("http://")) server.remove_prefix(7);
    if (server.ends_with('/')) server.remove_suffix(1);
    CheckEndpointToken(server, "--elastic_server", true);
  }
}

}  // namespace pdlaunch
