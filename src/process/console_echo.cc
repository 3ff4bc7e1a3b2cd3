#include "pdlaunch/process/console_echo.h"

#include <errno.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <utility>

#include "base/small_file.h"

namespace pdlaunch {

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
