#include "pdlaunch/process/console_echo.h"

#include <errno.h>
#include <unistd.h>

#include <utility>

namespace pdlaunch {

std::string LineAssembler::Feed(std::string_view bytes) {
  const size_t last_newline = bytes.rfind('\n');
  if (last_newline == std::string_view::npos) {
    partial_.append(bytes);
    return {};
  }
  std::string lines = std::move(partial_);
  lines.append(bytes.substr(0, last_newline + 1));
  partial_.assign(bytes.substr(last_newline + 1));
  return lines;
}

std::string LineAssembler::Finish() { return std::exchange(partial_, {}); }

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
