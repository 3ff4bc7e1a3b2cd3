#include "pdlaunch/process/console_echo.h"

#include <errno.h>
#include <unistd.h>

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

}  // namespace pdlaunch
