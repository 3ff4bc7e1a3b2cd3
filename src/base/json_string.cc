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

bool ReadPlainJsonString(std::string_view text, size_t& i, std::string& out) {
  if (i >= text.size() || text[i] != '"') return false;
  out.clear();
  size_t run = ++i;  // Start of the bytes not yet copied.
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      out.append(text.substr(run, i - run));
      ++i;
      return true;
    }
    if (c < 0x20 || c > 0x7E) return false;  // A control byte, or UTF-8: the full parser's.
    if (c != '\\') {
      ++i;
      continue;
    }
    out.append(text.substr(run, i - run));
    if (++i == text.size()) return false;
    switch (text[i]) {
      case '"':
      case '\\':
      case '/':
        out += text[i];
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      default:
        return false;  // \u, or not JSON.
    }
    run = ++i;
  }
  return false;
}

}  // namespace pdlaunch
