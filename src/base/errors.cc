#include "pdlaunch/base/errors.h"

#include <fmt/format.h>

#include <system_error>

namespace pdlaunch {

void ThrowSystemError(int err, std::string_view what) {
  throw std::system_error(err, std::generic_category(), std::string(what));
}

void AppendEscapingControl(std::string& out, char c) {
  const auto byte = static_cast<unsigned char>(c);
  if (c == '\n') {
    out += "\\n";
  } else if (c == '\r') {
    out += "\\r";
  } else if (c == '\t') {
    out += "\\t";
  } else if (byte < 0x20 || byte == 0x7f) {
    out += fmt::format("\\x{:02x}", byte);
  } else {
    out += c;
  }
}

std::string OneLine(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  for (const char c : text) AppendEscapingControl(line, c);
  return line;
}

}  // namespace pdlaunch
