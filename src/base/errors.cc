#include "pdlaunch/base/errors.h"

#include <fmt/format.h>

#include <cstdint>
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

namespace {

// The length of the valid UTF-8 sequence at text[i] (2 to 4), or 0: a stray continuation byte,
// an overlong form, a surrogate, a code point past U+10FFFF, or a sequence cut short.
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  size_t length = 0;
  uint32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3, cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4, cp = lead & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if ((length == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
      (length == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
    return 0;
  }
  return length;
}

}  // namespace

std::string OneLine(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      AppendEscapingControl(line, text[i++]);
      continue;
    }
    const size_t length = Utf8SequenceLength(text, i);
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
