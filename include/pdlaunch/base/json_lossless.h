#pragma once
// JSON documents that keep every byte of their strings (docs/report.md, "Exact bytes").

#include <nlohmann/json_fwd.hpp>
#include <string>

namespace pdlaunch {

/// `json` as text, indented by `indent` spaces, every string (and object key) byte for byte:
/// valid UTF-8 as it is, and each byte that is not part of valid UTF-8 (an argument or a path
/// in another encoding) as the escape \udcXX, XX its value (80 to ff). That is Python's
/// "surrogateescape": json.loads gives the byte back as the lone surrogate U+DCXX, and
/// os.fsencode() of the string is the original bytes. Where nlohmann's dump would write U+FFFD
/// for each such byte, losing it.
std::string DumpLossless(const nlohmann::ordered_json& json, int indent);

}  // namespace pdlaunch
