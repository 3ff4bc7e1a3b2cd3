#pragma once

#include <fmt/format.h>

#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// The launcher's log, written through spdlog by src/base/logging.cc alone: spdlog is header-only
// here (its implementation is compiled into every file that includes spdlog.h, 5 s of -O2 per
// file on this machine), so this header keeps it out of the files that log.

namespace pdlaunch {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

/// Whether a line of `level` is written at the current --log_level (the arguments of a line
/// that is not are never formatted).
bool LogEnabled(LogLevel level);

/// Whose console the lines follow (docs/cli.md, "Console"): the legacy launcher's
/// `LEVEL YYYY-MM-DD HH:MM:SS,mmm file.cc:line] message` (docs/cli.md), or today's launcher's
/// logger named LAUNCH, `LAUNCH LEVEL YYYY-MM-DD HH:MM:SS,mmm message` (Paddle 2.3+).
enum class LogStyle { kLegacy, kLaunch };

/// Chooses the shape of every line written from now on (held lines included); Main does, once
/// it knows which interface the command uses. The default is kLegacy.
void SetLogStyle(LogStyle style);

/// Writes one line to stderr in the chosen style, flushed. `file` is the source path (the
/// legacy style shows its last component).
void LogLine(LogLevel level, const char* file, int line, std::string_view message);

/// LogLine of the formatted message; never throws (a formatter that throws gives a line saying
/// so, as spdlog's own macros did).
template <typename... Args>
void LogFormat(LogLevel level, const char* file, int line, fmt::format_string<Args...> format,
               Args&&... args) noexcept {
  try {
    LogLine(level, file, line, fmt::vformat(format, fmt::make_format_args(args...)));
  } catch (const std::exception& e) {
    LogLine(LogLevel::kError, file, line, std::string("[*** LOG ERROR ***] ") + e.what());
  }
}

/// Holds the lines logged from now on instead of writing them, until ReleaseHeldLines (written
/// then, with their own times) or DropHeldLines: Main holds what the job's planning logs until
/// the configuration dump is out, so that the dump stays first and a usage error stays alone.
void HoldLines();
/// Writes `first_info_lines` at INFO (today's launcher logs its configuration so), then the held
/// lines.
void ReleaseHeldLines(const std::vector<std::string>& first_info_lines = {});
void DropHeldLines();
/// Stops holding and returns the held lines, level and message, unwritten: --dry_run puts what
/// the planning logged into its JSON (the same code as the run's, so the same words).
std::vector<std::pair<LogLevel, std::string>> TakeHeldLines();

/// Makes the logger now (Main does, first thing). It is made outside spdlog's registry: the
/// registry's own default logger (a colour sink that probes the terminal, a compiled pattern)
/// and a pattern of ours cost every job 28 us before its first rank (docs/performance.md).
void SetupLogging();

/// Sets the level of the launcher's own messages from --log_level's word (DEBUG, INFO, WARNING,
/// ERROR, CRITICAL; NOTSET means DEBUG). The lines Paddle prints at every level (the ABORT line)
/// are logged at ERROR, so they stay at every level but CRITICAL.
void SetLogLevel(const std::string& level);

/// While it lives, the launcher's log lines, and the bytes given to WriteLogBytes, go to the file
/// `path` (created 0644, or appended to) instead of stderr: the console of a job run as one step
/// of another (an auto-tuner trial) kept in that job's directory. Where the file cannot be
/// opened, they stay on stderr, after one warning naming it. Not nested.
class ScopedLogToFile {
 public:
  explicit ScopedLogToFile(const std::string& path);
  ~ScopedLogToFile();
  ScopedLogToFile(const ScopedLogToFile&) = delete;
  ScopedLogToFile& operator=(const ScopedLogToFile&) = delete;

 private:
  int fd_ = -1;
};

/// Writes `bytes` as they are where log lines go now (stderr, or a ScopedLogToFile's file): a
/// failed process's log tail, after the lines that introduce it. Errors are ignored (a closed
/// terminal must not stop a teardown).
void WriteLogBytes(std::string_view bytes);

}  // namespace pdlaunch

/// A line at a level chosen at run time (a master node that serves the auto tuner's exchange
/// says at DEBUG what a job's says at INFO); PDLOG_INFO and the others name theirs.
#define PDLOG_AT(level, ...)                                         \
  do {                                                               \
    if (::pdlaunch::LogEnabled(level)) {                             \
      ::pdlaunch::LogFormat(level, __FILE__, __LINE__, __VA_ARGS__); \
    }                                                                \
  } while (false)
#define PDLOG_INFO(...) PDLOG_AT(::pdlaunch::LogLevel::kInfo, __VA_ARGS__)
#define PDLOG_WARN(...) PDLOG_AT(::pdlaunch::LogLevel::kWarn, __VA_ARGS__)
#define PDLOG_ERROR(...) PDLOG_AT(::pdlaunch::LogLevel::kError, __VA_ARGS__)
#define PDLOG_DEBUG(...) PDLOG_AT(::pdlaunch::LogLevel::kDebug, __VA_ARGS__)
