#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace pdlaunch {

/// A JSON string literal as Python's json.dumps writes it: quotes, backslash and the usual short
/// escapes (\n, \r, \t, \b, \f), every other byte outside printable ASCII as \uXXXX (a
/// surrogate pair above U+FFFF), invalid UTF-8 as U+FFFD. Shared by the HTTP master's wire format
/// and the parameter-server peer records.
std::string EncodeJsonString(std::string_view text);

/// Appends EncodeJsonString(text) to `out` while `out` stays within `max_size` bytes; false when
/// it would not (then `out` holds a cut, useless prefix). The check runs per character, so a
/// value that escapes to six times its size costs no more than `max_size` to refuse.
bool AppendJsonString(std::string& out, std::string_view text,
                      size_t max_size = std::numeric_limits<size_t>::max());

/// Reads the JSON string literal that starts at text[i] (its opening quote) into `out`, moving `i`
/// past its closing quote: the fast path of the readers of the master's answers and peer records,
/// for printable ASCII and the short escapes (\" \\ \/ \b \f \n \r \t), which is all
/// json.dumps writes for them. False for anything else (a \u escape, a byte outside printable
/// ASCII, an unterminated literal), with `out` and `i` unspecified: the caller then parses the
/// whole text with a full JSON parser, which decides.
bool ReadPlainJsonString(std::string_view text, size_t& i, std::string& out);

}  // namespace pdlaunch
