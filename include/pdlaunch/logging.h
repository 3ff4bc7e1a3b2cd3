#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace pdlaunch {

/// Installs the launcher's logger as spdlog's default: stderr, INFO, Paddle's line shape
/// `LEVEL YYYY-MM-DD HH:MM:SS,mmm file.cc:line] message` (contract §0.4), flushed on every line.
void SetupLogging();

/// Sets the level of the launcher's own messages from --log_level's word (DEBUG, INFO, WARNING,
/// ERROR, CRITICAL; NOTSET means DEBUG). The lines Paddle prints at every level (the ABORT line)
/// are logged at ERROR, so they stay at every level but CRITICAL.
void SetLogLevel(const std::string& level);

}  // namespace pdlaunch

#define PDLOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define PDLOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define PDLOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
#define PDLOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
