#pragma once
// The launcher's own environment, read (an effect: not for files marked PURE, which are given an
// EnvMap instead).

#include <optional>
#include <string>

namespace pdlaunch {

/// The value of environment variable `name`; nullopt when unset or empty.
std::optional<std::string> GetEnv(const char* name);

}  // namespace pdlaunch
