#pragma once

#include <spdlog/spdlog.h>  // The SPDLOG_LOGGER_* macros.

#include <string>

namespace pdlaunch {

/// The launcher's logger: stderr, INFO, Paddle's line shape
/// `LEVEL YYYY-MM-DD HH:MM:SS,mmm file.cc:line] message` (contract §0.4), flushed on every line.
/// Made on first use, outside spdlog's registry: the registry's own default logger (a colour
/// sink that probes the terminal, a compiled pattern) and a pattern of ours cost every job
/// 28 us before its first rank (docs/performance.md). Never destroyed.
spdlog::logger& Logger();

/// Makes the logger now (Main does, first thing).
void SetupLogging();

/// Sets the level of the launcher's own messages from --log_level's word (DEBUG, INFO, WARNING,
/// ERROR, CRITICAL; NOTSET means DEBUG). The lines Paddle prints at every level (the ABORT line)
/// are logged at ERROR, so they stay at every level but CRITICAL.
void SetLogLevel(const std::string& level);

}  // namespace pdlaunch

#define PDLOG_INFO(...) SPDLOG_LOGGER_INFO(&::pdlaunch::Logger(), __VA_ARGS__)
#define PDLOG_WARN(...) SPDLOG_LOGGER_WARN(&::pdlaunch::Logger(), __VA_ARGS__)
#define PDLOG_ERROR(...) SPDLOG_LOGGER_ERROR(&::pdlaunch::Logger(), __VA_ARGS__)
#define PDLOG_DEBUG(...) SPDLOG_LOGGER_DEBUG(&::pdlaunch::Logger(), __VA_ARGS__)
