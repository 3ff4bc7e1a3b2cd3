#pragma once

#include <optional>
#include <string>

namespace pdlaunch {

/// How a process ended: its exit code, or the signal that killed it.
struct ExitStatus {
  bool signaled = false;
  int value = 0;  ///< Exit code, or signal number when `signaled`.

  static ExitStatus Exited(int code) { return {false, code}; }
  static ExitStatus Killed(int signal) { return {true, signal}; }

  bool success() const { return !signaled && value == 0; }
  /// Shell convention: the exit code, or 128 + signal.
  int ShellCode() const { return signaled ? 128 + value : value; }
  /// "exit code 3" or "signal 11 (SIGSEGV)".
  std::string Describe() const;

  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;
};

/// Decodes a status from waitpid(2).
ExitStatus FromWaitStatus(int wait_status);

/// Decodes waitid(2)'s si_code and si_status (CLD_EXITED, CLD_KILLED, CLD_DUMPED).
ExitStatus FromSigInfo(int child_code, int child_status);

/// The signal of a shell exit code that says one (128 + n, n in 1..64), as ShellCode() makes it.
std::optional<int> SignalOfShellCode(int code);

/// "SIGSEGV" for 11, "SIG42" for unnamed numbers.
std::string SignalName(int signal);

}  // namespace pdlaunch
