#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// Which local processes --echo shows on the console (docs/cli.md, Console). Without --echo:
/// local rank 0, unprefixed, as Paddle does.
struct EchoChoice {
  bool all = false;         ///< "all"
  std::vector<int> locals;  ///< Else these local ranks (indices of the node's processes), sorted.
};

/// Parses an --echo value: "all", or local ranks such as "0,3,5" (spaces around entries
/// allowed). Throws UsageError naming the token for anything else, an empty list or a rank
/// listed twice. Pure.
EchoChoice ParseEchoChoice(std::string_view value);

/// The prefix of an echoed line: "[rank 3]: ", "[worker 1]: " for other roles, and the node's
/// host first in a job of several nodes: "[10.0.0.2 rank 3]: ". Pure.
std::string EchoPrefix(std::string_view role, int rank, std::string_view host);

}  // namespace pdlaunch
