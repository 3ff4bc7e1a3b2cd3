#include "pdlaunch/logging.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace pdlaunch {
namespace {

/// `%*` in the pattern: Paddle's upper-case level names (INFO, WARNING, ERROR).
class UpperLevelFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    std::string_view name;
    switch (msg.level) {
      case spdlog::level::trace:
        name = "TRACE";
        break;
      case spdlog::level::debug:
        name = "DEBUG";
        break;
      case spdlog::level::info:
        name = "INFO";
        break;
      case spdlog::level::warn:
        name = "WARNING";
        break;
      case spdlog::level::err:
        name = "ERROR";
        break;
      default:
        name = "CRITICAL";
        break;
    }
    dest.append(name.data(), name.data() + name.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<UpperLevelFlag>();
  }
};

}  // namespace

void SetupLogging() {
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_st>();
  auto logger = std::make_shared<spdlog::logger>("launch", std::move(sink));
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<UpperLevelFlag>('*').set_pattern("%* %Y-%m-%d %H:%M:%S,%e %s:%#] %v");
  logger->set_formatter(std::move(formatter));
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

void SetLogLevel(const std::string& level) {
  spdlog::level::level_enum value = spdlog::level::info;
  if (level == "DEBUG" || level == "NOTSET") value = spdlog::level::debug;
  if (level == "WARNING") value = spdlog::level::warn;
  if (level == "ERROR") value = spdlog::level::err;
  if (level == "CRITICAL") value = spdlog::level::critical;
  spdlog::default_logger()->set_level(value);
}

}  // namespace pdlaunch
