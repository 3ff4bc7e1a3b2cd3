#pragma once

#include <string>
#include <string_view>

namespace pdlaunch {

/// A JSON string literal as Python's json.dumps writes it: quotes, backslash and the usual short
/// escapes (\n, \r, \t, \b, \f), every other byte outside printable ASCII as \uXXXX (a
/// surrogate pair above U+FFFF), invalid UTF-8 as U+FFFD. Shared by the HTTP master's wire format
/// and the parameter-server peer records.
std::string EncodeJsonString(std::string_view text);

}  // namespace pdlaunch
