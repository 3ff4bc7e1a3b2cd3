#include "base/small_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "base/unique_fd.h"

namespace pdlaunch {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      return text;
    }
  }
}

std::optional<std::vector<pid_t>> ReadPidList(const std::string& path) {
  const std::optional<std::string> text = ReadSmallFile(path);
  if (!text) return std::nullopt;
  std::vector<pid_t> pids;
  const char* p = text->c_str();
  for (char* end = nullptr;; p = end) {
    const long pid = std::strtol(p, &end, 10);
    if (end == p) break;
    if (pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  return pids;
}

bool WriteAll(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace pdlaunch
