#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// A TCP endpoint as Paddle writes it: "host:port" (IPv4 address or host name), and
/// "[addr]:port" for an IPv6 address, so that every consumer can split it at its last colon.
struct Endpoint {
  std::string host;  ///< Without brackets.
  int port = 0;

  std::string ToString() const {
    const std::string h = host.find(':') == std::string::npos ? host : "[" + host + "]";
    return h + ":" + std::to_string(port);
  }
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

/// Parses "host:port" or "[ipv6]:port" (the host is kept without brackets). Throws UsageError
/// naming `text` when the colon, host or port is missing or the port is not an integer in
/// 1..65535.
Endpoint ParseEndpoint(std::string_view text);

/// Joins endpoints as "a:1,b:2" (the format of PADDLE_TRAINER_ENDPOINTS).
std::string JoinEndpoints(const std::vector<Endpoint>& endpoints, std::string_view separator = ",");

/// Each endpoint's "host:port" (ToString), in order.
std::vector<std::string> EndpointStrings(const std::vector<Endpoint>& endpoints);

/// Splits `text` on `separator`, stripping ASCII whitespace from each item. An empty `text` gives
/// an empty list; empty items are kept (callers decide whether they are errors).
std::vector<std::string> SplitAndStrip(std::string_view text, char separator);

/// `text` without its leading and trailing ASCII whitespace.
std::string_view StripSpace(std::string_view text);

/// `text` with its ASCII letters in lower case (other bytes kept).
std::string AsciiLower(std::string_view text);

/// `text` with its ASCII letters in upper case (other bytes kept).
std::string AsciiUpper(std::string_view text);

/// Parses a decimal integer in [min, max]; throws UsageError "<what>: '<text>' ..." otherwise.
int ParseInt(std::string_view text, std::string_view what, int min, int max);

/// ParseInt of decimal text as Python's int() reads it: surrounding whitespace and one leading
/// '+' allowed.
int ParsePythonInt(std::string_view text, std::string_view what, int min, int max);

/// A count of processes on one host (--nproc_per_node, the parameter-server counts): at least
/// `min` (UsageError "<flag>: '<value>' must be at least <min><note>"), and at most 65535, since
/// each gets a port of its own ("... is more than 65535, the ports a host has for its
/// processes"; more would also make the launcher reserve memory for them first).
void CheckProcessCount(std::string_view flag, int value, int min, std::string_view note = "");

}  // namespace pdlaunch
