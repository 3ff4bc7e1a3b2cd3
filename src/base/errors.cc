#include "pdlaunch/base/errors.h"

#include <fmt/format.h>

#include <system_error>

#include "pdlaunch/base/utf8.h"

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
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      AppendEscapingControl(line, text[i++]);
      continue;
    }
    const size_t length = DecodeUtf8(text, i).length;
    // C1 controls (U+0080..U+009F, two bytes C2 80..C2 9F: CSI, OSC, ...) act on a terminal as
    // ESC [ and ESC ] do; they and every byte of invalid UTF-8 are written as \xNN.
    const bool c1 = length == 2 && byte == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0;
    if (length == 0 || c1) {
      const size_t count = length == 0 ? 1 : length;
      for (size_t k = 0; k < count; ++k) {
        line += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + k]));
      }
      i += count;
      continue;
    }
    line.append(text.substr(i, length));
    i += length;
  }
  return line;
}

}  // namespace pdlaunch
