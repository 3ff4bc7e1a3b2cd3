#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace pdlaunch {

/// Exit codes of the launcher itself (docs/exit-codes.md). A failing rank's own code, or
/// 128+signal, is passed through instead where the job ran.
inline constexpr int kExitSetupError = 1;
inline constexpr int kExitUsageError = 2;

/// Something stops the launcher before or while the job runs. Carries the exit code `Main` returns.
/// `what()` is one line meant for the user, naming the offending token.
class LaunchError : public std::runtime_error {
 public:
  LaunchError(const std::string& message, int exit_code = kExitSetupError)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const noexcept { return exit_code_; }

 private:
  int exit_code_;
};

/// A bad command line or bad value of a flag or an environment variable: exit code 2.
class UsageError : public LaunchError {
 public:
  explicit UsageError(const std::string& message) : LaunchError(message, kExitUsageError) {}
};

/// Throws std::system_error for `err` (an errno value) with `what` naming the call and its object,
/// e.g. ThrowSystemError(errno, "cannot open log/workerlog.0").
[[noreturn]] void ThrowSystemError(int err, std::string_view what);

/// `text` as one printable line: a control character a token brought in (a newline in a file
/// name, a tab, an escape sequence) is written as \n, \r, \t or \xNN, and a backslash as
/// itself, so that an error stays one line on the terminal and in a log. C1 controls (U+0080 to
/// U+009F) and every byte of invalid UTF-8 are written as \xNN too; valid UTF-8 stays as it
/// is. The one escaper of whatever reaches the console from outside: tokens of a command line,
/// and every string that came from the network (peer records, failure causes, store keys,
/// answers of a master or of etcd).
std::string OneLine(std::string_view text);

/// Appends `c` to `out`, a control character as OneLine writes it (\n, \r, \t, \xNN); shared
/// with Python's repr() of a str (options.h), which writes them the same way.
void AppendEscapingControl(std::string& out, char c);

}  // namespace pdlaunch
