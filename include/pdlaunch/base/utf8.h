#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace pdlaunch {

/// One character of UTF-8 text.
struct Utf8Char {
  size_t length = 0;  ///< 1 to 4 bytes; 0: no valid character starts here.
  uint32_t code_point = 0;
};

/// The character at text[i] (i < text.size()). Invalid (length 0): a stray continuation byte, a
/// lead byte that starts no sequence, a sequence cut short or broken, an overlong form, a
/// surrogate (U+D800..U+DFFF) or a code point past U+10FFFF. Shared by the escaper of console
/// lines (OneLine) and the JSON writer (EncodeJsonString).
inline Utf8Char DecodeUtf8(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return {1, lead};
  size_t length = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, min = 0x10000;
  } else {
    return {};
  }
  if (i + length > text.size()) return {};
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
  return {length, cp};
}

}  // namespace pdlaunch
