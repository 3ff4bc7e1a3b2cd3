#pragma once

#include <optional>
#include <string>

#include "pdlaunch/process/run_report.h"

namespace pdlaunch {

/// Seconds since the epoch, now.
double WallClockNow();

/// Writes `report` to `path` atomically: a temporary file in the same directory, then rename(),
/// so a reader never sees half a report. Returns the error text on failure. Never throws.
std::optional<std::string> WriteRunReport(const std::string& path, const RunReport& report);

/// Why WriteRunReport(`path`) could not succeed, told before the job starts rather than when it
/// ends (hours later): its directory is missing, not a directory or not writable, or `path`
/// is a directory. nullopt: nothing in the way now. Never throws.
std::optional<std::string> ReportPathProblem(const std::string& path);

}  // namespace pdlaunch
