#include "pdlaunch/errors.h"

#include <fmt/format.h>

#include <system_error>

namespace pdlaunch {

void ThrowSystemError(int err, std::string_view what) {
  throw std::system_error(err, std::generic_category(), std::string(what));
}

std::string OneLine(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      line += "\\n";
    } else if (c == '\r') {
      line += "\\r";
    } else if (c == '\t') {
      line += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      line += fmt::format("\\x{:02x}", byte);
    } else {
      line += c;
    }
  }
  return line;
}

}  // namespace pdlaunch
