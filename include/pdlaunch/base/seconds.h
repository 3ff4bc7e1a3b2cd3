#pragma once
// Durations given as text (flags such as --elastic_timeout, the master's JSON fields) and as
// timers take them.

#include <chrono>
#include <optional>
#include <string_view>

namespace pdlaunch {

/// A finite, non-negative number of seconds in decimal ("10", "0.5", ".5", "1e3", "-0"), the
/// whole text; nullopt for anything else ("", " 1", "+1", "0x10", "inf", "nan", "1s", "-1").
/// This is what std::from_chars accepts for a double, less the infinities, NaNs and negative
/// values; parsed with strtod so that the launcher needs no libm (docs/performance.md).
std::optional<double> ParseSeconds(std::string_view text);

/// `seconds` as the steady clock's duration, as timers take it.
inline std::chrono::steady_clock::duration SteadyDuration(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

}  // namespace pdlaunch
