#include "pdlaunch/base/json_string.h"

#include <cstdint>

#include "pdlaunch/base/utf8.h"

namespace pdlaunch {
namespace {

// The code point at `text[i]`, advancing `i` past it; U+FFFD, advancing one byte, for invalid
// UTF-8 (json.dumps of bytes decoded with errors="replace").
uint32_t NextCodePoint(std::string_view text, size_t& i) {
  const Utf8Char c = DecodeUtf8(text, i);
  i += c.length == 0 ? 1 : c.length;
  return c.length == 0 ? 0xFFFD : c.code_point;
}

// "\\u" and four lower-case hex digits, as json.dumps writes them.
void AppendUnicodeEscape(std::string& out, uint32_t unit) {
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 0xF];
}

}  // namespace

bool AppendJsonString(std::string& out, std::string_view text, size_t max_size) {
  out += '"';
  size_t i = 0;
  while (i < text.size()) {
    if (out.size() > max_size) return false;
    const uint32_t cp = NextCodePoint(text, i);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp >= 0x20 && cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      AppendUnicodeEscape(out, cp);
    } else {
      const uint32_t v = cp - 0x10000;
      AppendUnicodeEscape(out, 0xD800 + (v >> 10));
      AppendUnicodeEscape(out, 0xDC00 + (v & 0x3FF));
    }
  }
  out += '"';
  return out.size() <= max_size;
}

std::string EncodeJsonString(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

}  // namespace pdlaunch
