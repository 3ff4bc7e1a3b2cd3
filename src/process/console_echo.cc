#include "pdlaunch/process/console_echo.h"

#include <errno.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <utility>

namespace pdlaunch {

bool WriteAll(int fd, std::string_view data) noexcept {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

namespace {
std::atomic<bool> console_line_open{false};
}  // namespace

void NoteConsoleLineOpen(bool open) noexcept { console_line_open = open; }

void EndOpenConsoleLine() noexcept {
  if (!console_line_open.exchange(false)) return;
  std::fflush(stdout);
  WriteAll(STDOUT_FILENO, "\n");
}

}  // namespace pdlaunch
