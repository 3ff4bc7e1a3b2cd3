#pragma once
// What the HTTP master's server (http_master.cc) and client (http_client.cc) share on the wire:
// the Server and User-Agent value, pdlaunch's own headers, Paddle 3's --ips handshake. Private to
// src/coord/.

#include <fmt/format.h>

#include <string>
#include <string_view>

#include "pdlaunch/base/version.h"

namespace pdlaunch::http_wire {

/// "pdlaunch/<version>": the server's Server header and the client's User-Agent.
inline const std::string& ServerName() {
  static const std::string name = fmt::format("pdlaunch/{}", kVersion);
  return name;
}

inline constexpr char kRevisionHeader[] = "X-Pdlaunch-Revision";
inline constexpr std::string_view kHandshakeRequest = "connect master";
inline constexpr std::string_view kHandshakeAnswer = "connect success";
inline constexpr char kJobHeader[] = "X-Pdlaunch-Job";
// "required" on every answer of a master that takes a job token: a node that has one refuses a
// master that does not check it (docs/master.md, "Exposure").
inline constexpr char kTokenHeader[] = "X-Pdlaunch-Token";

}  // namespace pdlaunch::http_wire
