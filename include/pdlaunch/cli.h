#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pdlaunch/options.h"

namespace pdlaunch {

/// The outcome of parsing argv: either options to run with, or text to print before exiting 0
/// (`-h/--help`, `--version`).
struct CommandLine {
  LaunchOptions options;
  std::optional<std::string> exit_text;  ///< Set for --help and --version; print to stdout, exit 0.
};

/// Parses the launcher's arguments (argv without the program name) with argparse semantics
/// (contract §1.1): launcher options before the training script, `--opt value` and `--opt=value`,
/// unique prefixes of long options, everything after the script passed through verbatim.
/// Throws UsageError (exit 2) naming the bad token for: an unknown option, a missing or bad value,
/// an ambiguous prefix, a missing training script, and any flag of a mode not implemented yet
/// (parameter server, elastic, XPU): "<flag> is not supported yet".
CommandLine ParseCommandLine(const std::vector<std::string>& args);

/// The text of --help.
std::string HelpText();

}  // namespace pdlaunch
