#include "pdlaunch/base/seconds.h"

#include <cmath>
#include <cstdlib>
#include <string>

namespace pdlaunch {

std::optional<double> ParseSeconds(std::string_view text) {
  // strtod would also take leading spaces, a '+', hexadecimal, "inf" and "nan": only a sign,
  // digits, a point and an exponent get this far, and the text must start like a number.
  if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string_view::npos ||
      text.front() == '+' || text.front() == 'e' || text.front() == 'E') {
    return std::nullopt;
  }
  const std::string copy(text);  // strtod wants a terminated string.
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size() || !std::isfinite(value) || value < 0) {
    return std::nullopt;
  }
  return value;
}

}  // namespace pdlaunch
