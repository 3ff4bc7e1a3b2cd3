#pragma once

#include <string>
#include <string_view>

namespace pdlaunch {

/// The auto tuner's edit of a YAML config file of `run_cmd` (["config.yaml", "Global.mbs"]):
/// sets `dotted_key` to `value_json` (JSON text: 4, true, null, "stage2", an object) by
/// changing only that key's line, so that comments, key order, quoting and spacing stay as the
/// user wrote them (Paddle loads the file with PyYAML and dumps it whole: comments gone, keys
/// sorted). The path goes through block mappings (`Global:` then an indented `mbs: 1`); a
/// missing last key is added at the end of its mapping, as Paddle sets it; a missing mapping on
/// the way is an error, as Paddle's KeyError. Throws LaunchError, one line naming the key, the
/// line number and what this editor does not rewrite: a key that is a mapping, a block scalar
/// (`|`, `>`), an anchor, alias or tag on the way, a flow collection on the way or over several
/// lines, a tab in the indentation, several documents, a top level that is not a mapping.
std::string SetYamlValue(std::string_view text, std::string_view dotted_key,
                         std::string_view value_json);

/// The YAML text of a JSON value: a plain scalar where YAML 1.1 and 1.2 both read it back as
/// the same value (4, true, null, stage2), else the JSON text itself (JSON's strings, arrays and
/// objects are YAML flow scalars and collections).
std::string YamlValue(std::string_view value_json);

}  // namespace pdlaunch
