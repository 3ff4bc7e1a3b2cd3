#pragma once

#include <spdlog/spdlog.h>

#include <memory>

namespace pdlaunch {

/// Installs the launcher's logger as spdlog's default: stderr, INFO, Paddle's line shape
/// `LEVEL YYYY-MM-DD HH:MM:SS,mmm file.cc:line] message` (contract §0.4), flushed on every line.
void SetupLogging();

}  // namespace pdlaunch

#define PDLOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define PDLOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define PDLOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)
#define PDLOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
