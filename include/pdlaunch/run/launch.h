#pragma once

#include <string>
#include <vector>

#include "pdlaunch/options/options.h"

namespace pdlaunch {

/// Runs a job described by `options` to completion; returns the launcher's exit code.
/// Throws LaunchError/UsageError/std::system_error before anything started.
int Run(const LaunchOptions& options);

/// The whole program: parse, Run, catch once, map to an exit code.
int Main(int argc, char** argv);

}  // namespace pdlaunch
