#include "pdlaunch/base/logging.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "base/small_file.h"

namespace pdlaunch {
namespace {

std::string_view LevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
      return "TRACE";
    case spdlog::level::debug:
      return "DEBUG";
    case spdlog::level::info:
      return "INFO";
    case spdlog::level::warn:
      return "WARNING";
    case spdlog::level::err:
      return "ERROR";
    default:
      return "CRITICAL";
  }
}

/// `LEVEL YYYY-MM-DD HH:MM:SS,mmm file.cc:line] message`, Python logging's shape as the legacy
/// launcher sets it up, or `LAUNCH LEVEL YYYY-MM-DD HH:MM:SS,mmm message`, today's launcher's,
/// written directly (spdlog's pattern_formatter would be compiled from a pattern string at
/// start-up, with a custom flag for Python's level names).
class PaddleLineFormatter final : public spdlog::formatter {
 public:
  explicit PaddleLineFormatter(LogStyle style) : style_(style) {}
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    const auto since_epoch = msg.time.time_since_epoch();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    const auto millis =
        std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
    const std::time_t time = seconds.count();
    std::tm local{};
    ::localtime_r(&time, &local);
    if (style_ == LogStyle::kLaunch) {
      fmt::format_to(std::back_inserter(dest),
                     "LAUNCH {} {:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03} ", LevelName(msg.level),
                     local.tm_year + 1900, local.tm_mon + 1, local.tm_mday, local.tm_hour,
                     local.tm_min, local.tm_sec, millis);
    } else {
      std::string_view file = msg.source.filename != nullptr ? msg.source.filename : "";
      file.remove_prefix(std::min(file.size(), file.rfind('/') + 1));
      fmt::format_to(std::back_inserter(dest),
                     "{} {:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03} {}:{}] ", LevelName(msg.level),
                     local.tm_year + 1900, local.tm_mon + 1, local.tm_mday, local.tm_hour,
                     local.tm_min, local.tm_sec, millis, file, msg.source.line);
    }
    dest.append(msg.payload.begin(), msg.payload.end());
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<PaddleLineFormatter>(style_);
  }

 private:
  LogStyle style_;
};

spdlog::logger* MakeLogger() {
  auto* logger = new spdlog::logger("launch", std::make_shared<spdlog::sinks::stderr_sink_st>());
  logger->set_formatter(std::make_unique<PaddleLineFormatter>(LogStyle::kLegacy));
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  return logger;
}

/// spdlog's extension point for a destination of our own: each formatted line written to a
/// descriptor with one write(2) (spdlog's file sinks own their file; ScopedLogToFile's
/// descriptor also takes WriteLogBytes's raw bytes, in order with the lines).
class FdSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit FdSink(int fd) : fd_(fd) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t line;
    formatter_->format(msg, line);
    WriteAll(fd_, std::string_view(line.data(), line.size()));
  }
  void flush_() override {}

 private:
  int fd_;
};

// Where log lines go now: stderr, or ScopedLogToFile's file.
int g_log_fd = STDERR_FILENO;
// The console's sink while ScopedLogToFile has put its own in its place.
spdlog::sink_ptr g_console_sink;
// The line shape SetLogStyle chose last.
LogStyle g_log_style = LogStyle::kLegacy;

// Made on first use, never destroyed (a line may be logged from a static's destructor).
spdlog::logger& Logger() {
  static spdlog::logger* const logger = MakeLogger();
  return *logger;
}

spdlog::level::level_enum SpdlogLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      break;
  }
  return spdlog::level::err;
}

struct HeldLine {
  spdlog::log_clock::time_point time;
  const char* file;
  int line;
  LogLevel level;
  std::string message;
};

struct Held {
  bool holding = false;
  std::vector<HeldLine> lines;
};

Held& TheHeld() {
  static Held* const held = new Held;  // Never destroyed, as the logger.
  return *held;
}

}  // namespace

bool LogEnabled(LogLevel level) { return Logger().should_log(SpdlogLevel(level)); }

void LogLine(LogLevel level, const char* file, int line, std::string_view message) {
  Held& held = TheHeld();
  if (held.holding) {
    held.lines.push_back({spdlog::log_clock::now(), file, line, level, std::string(message)});
    return;
  }
  Logger().log(spdlog::source_loc{file, line, ""}, SpdlogLevel(level), message);
}

void HoldLines() { TheHeld().holding = true; }

void ReleaseHeldLines(const std::vector<std::string>& first_info_lines) {
  Held& held = TheHeld();
  held.holding = false;
  // The first lines stand for what came before what was held (the configuration dump): they get
  // the first held line's time, so that the times on the console never go back.
  const spdlog::log_clock::time_point first =
      held.lines.empty() ? spdlog::log_clock::now() : held.lines.front().time;
  for (const std::string& line : first_info_lines) {
    Logger().log(first, spdlog::source_loc{__FILE__, __LINE__, ""}, spdlog::level::info, line);
  }
  for (const HeldLine& l : held.lines) {
    Logger().log(l.time, spdlog::source_loc{l.file, l.line, ""}, SpdlogLevel(l.level), l.message);
  }
  held.lines.clear();
}

void DropHeldLines() {
  Held& held = TheHeld();
  held.holding = false;
  held.lines.clear();
}

std::vector<std::pair<LogLevel, std::string>> TakeHeldLines() {
  Held& held = TheHeld();
  held.holding = false;
  std::vector<std::pair<LogLevel, std::string>> lines;
  lines.reserve(held.lines.size());
  for (HeldLine& l : held.lines) lines.emplace_back(l.level, std::move(l.message));
  held.lines.clear();
  return lines;
}

void SetupLogging() { Logger(); }

void SetLogStyle(LogStyle style) {
  g_log_style = style;
  Logger().set_formatter(std::make_unique<PaddleLineFormatter>(style));
}

ScopedLogToFile::ScopedLogToFile(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    PDLOG_WARN("cannot open '{}' for the launcher's lines ({}); they stay on the console", path,
               std::strerror(errno));
    return;
  }
  std::fflush(stderr);
  auto sink = std::make_shared<FdSink>(fd_);
  sink->set_formatter(std::make_unique<PaddleLineFormatter>(g_log_style));
  g_console_sink = std::exchange(Logger().sinks().front(), std::move(sink));
  g_log_fd = fd_;
}

ScopedLogToFile::~ScopedLogToFile() {
  if (fd_ < 0) return;
  Logger().sinks().front() = std::move(g_console_sink);
  g_log_fd = STDERR_FILENO;
  ::close(fd_);
}

void WriteLogBytes(std::string_view bytes) {
  if (g_log_fd == STDERR_FILENO) std::fflush(stderr);
  WriteAll(g_log_fd, bytes);
}

void SetLogLevel(const std::string& level) {
  spdlog::level::level_enum value = spdlog::level::info;
  if (level == "DEBUG" || level == "NOTSET") value = spdlog::level::debug;
  if (level == "WARNING") value = spdlog::level::warn;
  if (level == "ERROR") value = spdlog::level::err;
  if (level == "CRITICAL") value = spdlog::level::critical;
  Logger().set_level(value);
}

}  // namespace pdlaunch
