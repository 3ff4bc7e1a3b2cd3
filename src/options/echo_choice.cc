#include "pdlaunch/options/echo_choice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "pdlaunch/base/endpoint.h"
#include "pdlaunch/base/errors.h"

namespace pdlaunch {

EchoChoice ParseEchoChoice(std::string_view value) {
  EchoChoice choice;
  if (StripSpace(value) == "all") {
    choice.all = true;
    return choice;
  }
  if (StripSpace(value) == "none") return choice;  // No process: the logs only.
  for (const std::string& entry : SplitAndStrip(value, ',')) {
    if (entry.empty()) {
      throw UsageError(
          fmt::format("--echo: '{}' has an empty entry (expected all, none, or local "
                      "ranks such as 0,3,5)",
                      value));
    }
    int local = 0;
    try {
      local = ParseInt(entry, "local rank", 0, 1 << 20);
    } catch (const UsageError&) {
      throw UsageError(fmt::format(
          "--echo: '{}' is not a local rank (expected all, none, or local ranks such as 0,3,5)",
          entry));
    }
    if (std::find(choice.locals.begin(), choice.locals.end(), local) != choice.locals.end()) {
      throw UsageError(fmt::format("--echo: local rank {} is listed twice in '{}'", local, value));
    }
    choice.locals.push_back(local);
  }
  if (choice.locals.empty()) {
    throw UsageError(fmt::format(
        "--echo: '{}' names no process (expected all, none, or local ranks such as 0,3,5)", value));
  }
  std::sort(choice.locals.begin(), choice.locals.end());
  return choice;
}

std::optional<std::string> EchoAbsentWarning(const EchoChoice& choice, size_t processes) {
  if (choice.all) return std::nullopt;
  std::vector<int> absent;  // One line for all of them, however many were listed.
  for (int local : choice.locals) {
    if (local >= static_cast<int>(processes)) absent.push_back(local);
  }
  if (absent.empty()) return std::nullopt;
  constexpr size_t kShown = 8;
  const bool plural = absent.size() > 1;
  const std::string more =
      absent.size() > kShown ? fmt::format(" and {} more", absent.size() - kShown) : "";
  absent.resize(std::min(absent.size(), kShown));
  return fmt::format(
      "--echo: this node runs {} processes (local ranks 0..{}); nothing to echo for local "
      "rank{} {}{}",
      processes, processes - 1, plural ? "s" : "", fmt::join(absent, ","), more);
}

std::string EchoPrefix(std::string_view role, int rank, std::string_view host) {
  const std::string_view name = role == "trainer" ? "rank" : role;
  if (host.empty()) return fmt::format("[{} {}]: ", name, rank);
  return fmt::format("[{} {} {}]: ", host, name, rank);
}

}  // namespace pdlaunch
