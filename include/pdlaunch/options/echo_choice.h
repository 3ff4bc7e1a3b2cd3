#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pdlaunch {

/// Which local processes --echo shows on the console (docs/cli.md, Console). Without --echo:
/// local rank 0, unprefixed, as Paddle does.
struct EchoChoice {
  bool all = false;         ///< "all"
  std::vector<int> locals;  ///< Else these local ranks (indices of the node's processes), sorted;
                            ///< none ("none"): no process's output, the logs only.
};

/// Parses an --echo value: "all", "none", or local ranks such as "0,3,5" (spaces around entries
/// allowed). Throws UsageError naming the token for anything else, an empty list or a rank
/// listed twice. Pure.
EchoChoice ParseEchoChoice(std::string_view value);

/// The warning for the local ranks `choice` names that a node of `processes` processes does not
/// have ("--echo: this node runs 2 processes (local ranks 0..1); nothing to echo for local rank
/// 5"), nullopt when it has them all. The run and --dry_run say it alike. Pure.
std::optional<std::string> EchoAbsentWarning(const EchoChoice& choice, size_t processes);

/// The prefix of an echoed line: "[rank 3]: ", "[worker 1]: " for other roles, and the node's
/// host first in a job of several nodes: "[10.0.0.2 rank 3]: ". Pure.
std::string EchoPrefix(std::string_view role, int rank, std::string_view host);

}  // namespace pdlaunch
