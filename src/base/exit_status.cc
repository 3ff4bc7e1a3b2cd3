#include "pdlaunch/base/exit_status.h"

#include <fmt/format.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

namespace pdlaunch {

std::string ExitStatus::Describe() const {
  if (signaled) return fmt::format("signal {} ({})", value, SignalName(value));
  return fmt::format("exit code {}", value);
}

ExitStatus FromWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) return ExitStatus::Killed(WTERMSIG(wait_status));
  return ExitStatus::Exited(WEXITSTATUS(wait_status));
}

ExitStatus FromSigInfo(int child_code, int child_status) {
  if (child_code == CLD_KILLED || child_code == CLD_DUMPED) return ExitStatus::Killed(child_status);
  return ExitStatus::Exited(child_status);
}

std::optional<int> SignalOfShellCode(int code) {
  if (code > 128 && code <= 128 + 64) return code - 128;
  return std::nullopt;
}

std::string SignalName(int signal) {
  // sigabbrev_np is glibc >= 2.32; Debian 12 has 2.36.
  const char* abbrev = ::sigabbrev_np(signal);
  if (abbrev == nullptr) return fmt::format("SIG{}", signal);
  return fmt::format("SIG{}", abbrev);
}

}  // namespace pdlaunch
