#include "pdlaunch/base/json_lossless.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "pdlaunch/base/utf8.h"

namespace pdlaunch {
namespace {

// A byte that is not UTF-8 travels through nlohmann's dump as two code points: kMark, then
// kByteBase + the byte; a kMark of the text itself as two kMarks. Both are noncharacters or in
// plane 16's private use area, which the dump writes as they are (no \u escape), so that
// Restore finds them in its output.
constexpr uint32_t kMark = 0x10FFFE;
constexpr uint32_t kByteBase = 0x10FE00;  // Below kMark even + 0xFF (0x10FF00 + 0xFE was kMark).

void AppendUtf8(std::string& out, uint32_t cp) {  // cp >= 0x10000.
  out += static_cast<char>(0xF0 | (cp >> 18));
  out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out += static_cast<char>(0x80 | (cp & 0x3F));
}

std::string Mark(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const Utf8Char c = DecodeUtf8(text, i);
    if (c.length == 0) {
      AppendUtf8(out, kMark);
      AppendUtf8(out, kByteBase + static_cast<unsigned char>(text[i]));
      ++i;
      continue;
    }
    if (c.code_point == kMark) AppendUtf8(out, kMark);
    out.append(text.substr(i, c.length));
    i += c.length;
  }
  return out;
}

nlohmann::ordered_json Marked(const nlohmann::ordered_json& json) {
  if (json.is_string()) return Mark(json.get_ref<const std::string&>());
  if (json.is_array()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const auto& item : json) out.push_back(Marked(item));
    return out;
  }
  if (json.is_object()) {
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    for (const auto& [key, value] : json.items()) out[Mark(key)] = Marked(value);
    return out;
  }
  return json;
}

// The dump with each kMark pair turned back: kMark kMark is one kMark, kMark (kByteBase + b)
// the escape \udcXX.
std::string Restore(std::string_view dumped) {
  std::string mark;
  AppendUtf8(mark, kMark);
  std::string out;
  out.reserve(dumped.size());
  for (size_t i = 0; i < dumped.size();) {
    const size_t at = dumped.find(mark, i);
    if (at == std::string_view::npos) {
      out.append(dumped.substr(i));
      break;
    }
    out.append(dumped.substr(i, at - i));
    const Utf8Char next = DecodeUtf8(dumped, at + mark.size());  // Always there: Mark wrote it.
    if (next.code_point == kMark) {
      out.append(mark);
    } else {
      out += fmt::format("\\udc{:02x}", next.code_point - kByteBase);
    }
    i = at + mark.size() + next.length;
  }
  return out;
}

}  // namespace

std::string DumpLossless(const nlohmann::ordered_json& json, int indent) {
  return Restore(
      Marked(json).dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

}  // namespace pdlaunch
