#include "pdlaunch/base/logging.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "support/test_util.h"

namespace pdlaunch {
namespace {

using testutil::ReadFile;
using testutil::ScopedTempDir;

/// Runs `log` with the process's stderr (fd 2, where the launcher's log goes) sent to a file;
/// returns what was written.
template <typename Log>
std::string CaptureStderr(const ScopedTempDir& dir, Log log) {
  const std::string path = dir.File("stderr");
  std::fflush(stderr);
  const int saved = ::dup(STDERR_FILENO);
  const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ::dup2(file, STDERR_FILENO);
  ::close(file);
  log();
  std::fflush(stderr);
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  return ReadFile(path);
}

TEST(LoggingTest, HeldLinesComeAfterTheFirstLinesWithTimesThatNeverGoBack) {
  // Lines logged while planning are held until the configuration dump is out; the dump then
  // stands for the start, and the console's times stay in order.
  ScopedTempDir dir;
  SetLogStyle(LogStyle::kLaunch);
  const std::string text = CaptureStderr(dir, [] {
    HoldLines();
    PDLOG_WARN("held while planning");
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    ReleaseHeldLines({"--- configuration ---"});
  });
  SetLogStyle(LogStyle::kLegacy);
  const std::regex shape(R"(LAUNCH (\w+) (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (.*))");
  std::vector<std::string> times;
  std::vector<std::string> messages;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    std::smatch match;
    const std::string line = text.substr(start, end - start);
    ASSERT_TRUE(std::regex_match(line, match, shape)) << line;
    times.push_back(match[2]);
    messages.push_back(match[3]);
  }
  ASSERT_EQ(messages, (std::vector<std::string>{"--- configuration ---", "held while planning"}));
  EXPECT_LE(times[0], times[1]);  // YYYY-MM-DD HH:MM:SS,mmm: text order is time order.
}

}  // namespace
}  // namespace pdlaunch
